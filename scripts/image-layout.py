#!/usr/bin/env python3
"""Writes the mirror's image as an OCI image layout; scripts/build-image.sh
gathers the files and calls this.

Invariant: the output is a function of the input files and the arguments
only: tar entries sorted, each with mtime EPOCH, numeric uid/gid and fixed
modes; gzip with no name and no time; JSON with sorted keys and no spaces.
So two builds of one binary at one SOURCE_DATE_EPOCH give one digest.

The config says what the Dockerfile says (USER, ENTRYPOINT, CMD, EXPOSE,
ENV, VOLUME, LABEL); tests/it/oci/image.rs reads the Dockerfile and checks it.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import tarfile

UID = GID = 10001
USER = f"{UID}:{GID}"
PORT = "8080/tcp"
ENTRYPOINT = ["llmgw"]
CMD = ["mirror", "serve", "--store", "/store", "--listen", "0.0.0.0:8080"]
ENV = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LLMGW_STORE=/store",
]
BUSYBOX_APPLETS = ["cat", "cp", "date", "df", "du", "env", "ls", "mkdir", "mv", "rm", "sh",
                   "sleep", "tar"]
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

PASSWD = "root:x:0:0:root:/root:/sbin/nologin\nllmgw:x:10001:10001:llmgw:/nonexistent:/sbin/nologin\n"
GROUP = "root:x:0:\nllmgw:x:10001:\n"
NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n"
HOSTS = "127.0.0.1 localhost\n::1 localhost\n"


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class Layer:
    """The root filesystem's entries, by path (no leading /)."""

    def __init__(self, epoch):
        self.epoch = epoch
        self.entries = {}

    def _dirs(self, path):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            self.entries.setdefault(d, ("dir", 0o755, 0, 0, None))

    def dir(self, path, mode, uid=0, gid=0):
        self._dirs(path)
        self.entries[path] = ("dir", mode, uid, gid, None)

    def file(self, path, data, mode):
        self._dirs(path)
        self.entries[path] = ("file", mode, 0, 0, data)

    def link(self, path, target):
        self._dirs(path)
        self.entries[path] = ("symlink", 0o777, 0, 0, target)

    def tar(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
            for path in sorted(self.entries):
                kind, mode, uid, gid, data = self.entries[path]
                info = tarfile.TarInfo(path)
                info.mode, info.uid, info.gid = mode, uid, gid
                info.uname = info.gname = ""
                info.mtime = self.epoch
                if kind == "dir":
                    info.type = tarfile.DIRTYPE
                    t.addfile(info)
                elif kind == "symlink":
                    info.type = tarfile.SYMTYPE
                    info.linkname = data
                    t.addfile(info)
                else:
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        return buf.getvalue()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def rootfs(args):
    layer = Layer(args.epoch)
    layer.file("usr/local/bin/llmgw", read(args.binary), 0o755)
    with open(args.libs) as f:
        for lib in sorted({line.strip() for line in f if line.strip()}):
            # The real bytes at the path the binary names (symlinks followed).
            layer.file(lib.lstrip("/"), read(os.path.realpath(lib)), 0o755)
    layer.file("bin/busybox", read(args.busybox), 0o755)
    for applet in BUSYBOX_APPLETS:
        layer.link(f"bin/{applet}", "busybox")
    layer.file("etc/ssl/certs/ca-certificates.crt", read(args.certs), 0o644)
    for name, text in [("passwd", PASSWD), ("group", GROUP), ("nsswitch.conf", NSSWITCH),
                       ("hosts", HOSTS)]:
        layer.file(f"etc/{name}", text.encode(), 0o644)
    layer.dir("tmp", 0o1777)
    layer.dir("store", 0o755, UID, GID)
    return layer.tar()


def gzipped(data):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as g:
        g.write(data)
    return buf.getvalue()


def main():
    p = argparse.ArgumentParser()
    for name in ["out", "binary", "libs", "busybox", "certs", "version", "revision"]:
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--epoch", type=int, required=True)
    args = p.parse_args()

    blobs = {}

    def blob(media_type, data, **extra):
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return dict(mediaType=media_type, digest=f"sha256:{digest}", size=len(data), **extra)

    created = datetime.datetime.fromtimestamp(args.epoch, datetime.timezone.utc)
    created = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    tar = rootfs(args)
    layer = blob(LAYER, gzipped(tar))
    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "User": USER,
            "ExposedPorts": {PORT: {}},
            "Env": ENV,
            "Entrypoint": ENTRYPOINT,
            "Cmd": CMD,
            "Volumes": {"/store": {}},
            "WorkingDir": "/",
            "Labels": {
                "org.opencontainers.image.title": "llmgw",
                "org.opencontainers.image.description": "llmgw offline mirror: serves verified "
                "bundles to GPU nodes over GitHub-release and Hugging Face Hub compatible HTTP",
                "org.opencontainers.image.licenses": "Apache-2.0",
                "org.opencontainers.image.version": args.version,
                "org.opencontainers.image.revision": args.revision,
                "org.opencontainers.image.created": created,
                # No base image: the root filesystem is built from files alone.
                "org.opencontainers.image.base.name": "scratch",
            },
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(tar).hexdigest()}"]},
        "history": [{"created": created, "created_by": "scripts/build-image.sh"}],
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": blob(CONFIG, canonical(config)),
        "layers": [layer],
    }
    platform = {"architecture": "amd64", "os": "linux"}
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX,
        "manifests": [blob(MANIFEST, canonical(manifest), platform=platform)],
    }
    top = blob(INDEX, canonical(index),
               annotations={"org.opencontainers.image.ref.name": args.version})

    os.makedirs(os.path.join(args.out, "blobs", "sha256"))
    for digest, data in sorted(blobs.items()):
        with open(os.path.join(args.out, "blobs", "sha256", digest), "wb") as f:
            f.write(data)
    with open(os.path.join(args.out, "oci-layout"), "wb") as f:
        f.write(canonical({"imageLayoutVersion": "1.0.0"}))
    with open(os.path.join(args.out, "index.json"), "wb") as f:
        f.write(canonical({"schemaVersion": 2, "mediaType": INDEX, "manifests": [top]}))


if __name__ == "__main__":
    main()
