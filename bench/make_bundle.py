"""Writes a plain-tar bundle of N model files of MIB MiB of random bytes, for the
benchmarks: WORK/bundle.tar, one model repository `bench/big` holding the files as LFS
files (as the Hub would), manifest format 1. Prints the manifest's sha256.

    python3 bench/make_bundle.py WORK N MIB
"""

import hashlib
import json
import os
import subprocess
import sys

work, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
src = os.path.join(work, "src")
os.makedirs(os.path.join(src, "blobs", "sha256"), exist_ok=True)
files, names = [], []
for i in range(n):
    h, path = hashlib.sha256(), os.path.join(work, f"f{i}")
    with open(path, "wb") as f:
        for _ in range(mib):
            chunk = os.urandom(1 << 20)
            h.update(chunk)
            f.write(chunk)
    sha = h.hexdigest()
    os.rename(path, os.path.join(src, "blobs", "sha256", sha))
    names.append(f"blobs/sha256/{sha}")
    size = mib << 20
    ptr = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {size}\n".encode()
    oid = hashlib.sha1(b"blob %d\0" % len(ptr) + ptr).hexdigest()
    files.append({"path": f"model-{i:02d}.safetensors", "size": size, "sha256": sha,
                  "git_oid": oid, "lfs": True,
                  "publisher_digests": [{"source": "hf-lfs-sha256", "value": sha}]})
m = {"format_version": 1, "created": "2026-01-01T00:00:00Z", "tool": "bench",
     "arches": ["amd64"], "releases": [],
     "repos": [{"type": "model", "id": "bench/big", "revision": "main",
                "commit": "0" * 40, "files": files}], "gaps": []}
data = (json.dumps(m, indent=2) + "\n").encode()
with open(os.path.join(src, "manifest.json"), "wb") as f:
    f.write(data)
subprocess.run(["tar", "-cf", os.path.join(work, "bundle.tar"), "manifest.json", *names], cwd=src, check=True)
subprocess.run(["rm", "-rf", src], check=True)
print(hashlib.sha256(data).hexdigest())
