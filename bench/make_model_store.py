"""Writes a mirror store holding one Hugging Face model repository, as `llmgw bundle
import` leaves it, for the models-as-OCI benchmark (issue 31):

    python3 bench/make_model_store.py STORE files N     # bench/many: N small files
    python3 bench/make_model_store.py STORE sparse SIZE # bench/big: one SIZE-byte file,
                                                        # sparse (all zeros) on disk

Each file is an LFS file of `main` at one commit, with the git oid of its pointer and its
LFS sha256 as publisher digest; blobs at blobs/sha256/<2>/<64>.
"""

import hashlib
import json
import os
import sys

store, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(os.path.join(store, "bundles"), exist_ok=True)
os.makedirs(os.path.join(store, "tmp"), exist_ok=True)


def blob_path(sha):
    d = os.path.join(store, "blobs", "sha256", sha[:2])
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, sha)


def entry(path, size, sha):
    pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {size}\n".encode()
    oid = hashlib.sha1(b"blob %d\0" % len(pointer) + pointer).hexdigest()
    return {"path": path, "size": size, "sha256": sha, "git_oid": oid, "lfs": True,
            "publisher_digests": [{"source": "hf-lfs-sha256", "value": sha}]}


files = []
if mode == "files":
    repo = "bench/many"
    for i in range(n):
        body = (f"file {i} of bench/many\n" * (1 + i % 97)).encode()
        sha = hashlib.sha256(body).hexdigest()
        with open(blob_path(sha), "wb") as f:
            f.write(body)
        files.append(entry(f"shard-{i // 100:03d}/part-{i:05d}.json", len(body), sha))
else:
    repo = "bench/big"
    h = hashlib.sha256()
    zeros = bytes(1 << 24)
    left = n
    while left:
        k = min(left, len(zeros))
        h.update(zeros[:k])
        left -= k
    sha = h.hexdigest()
    with open(blob_path(sha), "wb") as f:
        f.truncate(n)
    files.append(entry("model.safetensors", n, sha))

m = {
    "format_version": 2, "created": "2026-01-01T00:00:00Z", "tool": "bench", "arches": ["amd64"],
    "releases": [],
    "repos": [{"type": "model", "id": repo, "revision": "main", "ref_kind": "branch",
               "commit": hashlib.sha1(repo.encode()).hexdigest(), "files": files}],
    "gaps": [],
}
data = (json.dumps(m, indent=2) + "\n").encode()
with open(os.path.join(store, "bundles", hashlib.sha256(data).hexdigest() + ".json"), "wb") as f:
    f.write(data)
print(repo)
