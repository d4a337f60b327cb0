"""Writes a plain-tar bundle of N model files of MIB MiB of random bytes, for the
benchmarks: WORK/bundle.tar, one model repository `bench/big` holding the files as LFS
files (as the Hub would), manifest format 1. Prints the manifest's sha256.

    python3 bench/make_bundle.py WORK N MIB [lfs|git]

With `git`, the files are recorded as plain git files (no LFS): import then checks and
stores them exactly as LFS files but makes no Xet record for them, which is how
bench/import.sh measures the Xet pass's cost in the same run.
"""

import hashlib
import json
import os
import subprocess
import sys

work, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lfs = (sys.argv[4] if len(sys.argv) > 4 else "lfs") == "lfs"
src = os.path.join(work, "src")
os.makedirs(os.path.join(src, "blobs", "sha256"), exist_ok=True)
files, names = [], []
for i in range(n):
    size = mib << 20
    h, path = hashlib.sha256(), os.path.join(work, f"f{i}")
    git = hashlib.sha1(b"blob %d\0" % size)
    with open(path, "wb") as f:
        for _ in range(mib):
            chunk = os.urandom(1 << 20)
            h.update(chunk)
            git.update(chunk)
            f.write(chunk)
    sha = h.hexdigest()
    os.rename(path, os.path.join(src, "blobs", "sha256", sha))
    names.append(f"blobs/sha256/{sha}")
    if lfs:
        ptr = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {size}\n".encode()
        oid = hashlib.sha1(b"blob %d\0" % len(ptr) + ptr).hexdigest()
        digest = {"source": "hf-lfs-sha256", "value": sha}
    else:
        oid = git.hexdigest()
        digest = {"source": "git-blob-sha1", "value": oid}
    files.append({"path": f"model-{i:02d}.safetensors", "size": size, "sha256": sha,
                  "git_oid": oid, "lfs": lfs, "publisher_digests": [digest]})
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
