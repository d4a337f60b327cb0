"""Writes a mirror store holding one Hugging Face model repository, as `llmgw bundle
import` leaves it, for the models-as-OCI benchmark (issue 31):

    python3 bench/make_model_store.py STORE files N     # bench/many: N small files
    python3 bench/make_model_store.py STORE files N R   # bench/many-0 … many-(R-1): R
                                                        # repositories of N small files each,
                                                        # one bundle each (issue 35: 10^6)
    python3 bench/make_model_store.py STORE sparse SIZE # bench/big: one SIZE-byte file,
                                                        # sparse (all zeros) on disk
    python3 bench/make_model_store.py STORE revisions N # bench/revs: N bundles, each one
                                                        # commit of 200 files, 10 % of them
                                                        # new at each commit (issue 35)

Each file is an LFS file of `main` at one commit, with the git oid of its pointer and its
LFS sha256 as publisher digest; blobs at blobs/sha256/<2>/<64>.
"""

import hashlib
import json
import os
import sys

store, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
repos = int(sys.argv[4]) if len(sys.argv) > 4 else 0
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


def write_bundle(repo, commit, revision, files):
    m = {
        "format_version": 2, "created": "2026-01-01T00:00:00Z", "tool": "bench",
        "arches": ["amd64"], "releases": [],
        "repos": [{"type": "model", "id": repo, "revision": revision, "ref_kind": "branch",
                   "commit": commit, "files": files}],
        "gaps": [],
    }
    data = (json.dumps(m, indent=2) + "\n").encode()
    with open(os.path.join(store, "bundles", hashlib.sha256(data).hexdigest() + ".json"), "wb") as f:
        f.write(data)


def small_file(path, body):
    sha = hashlib.sha256(body).hexdigest()
    with open(blob_path(sha), "wb") as f:
        f.write(body)
    return entry(path, len(body), sha)


if mode == "revisions":
    repo = "bench/revs"
    current = {i: small_file(f"part-{i:03d}.json", f"part {i} at 0\n".encode()) for i in range(200)}
    for r in range(n):
        if r:
            for i in range(r % 10, 200, 10):
                current[i] = small_file(f"part-{i:03d}.json", f"part {i} at {r}\n".encode())
        commit = hashlib.sha1(f"{repo}@{r}".encode()).hexdigest()
        write_bundle(repo, commit, f"r{r}", [current[i] for i in range(200)])
    print(repo)
    sys.exit(0)

if mode == "files" and repos:
    for r in range(repos):
        repo = f"bench/many-{r}"
        files = []
        for i in range(n):
            body = (f"file {i} of {repo}\n" * (1 + i % 97)).encode()
            files.append(small_file(f"shard-{i // 100:03d}/part-{i:05d}.json", body))
        write_bundle(repo, hashlib.sha1(repo.encode()).hexdigest(), "main", files)
        print(repo)
    sys.exit(0)

files = []
if mode == "files":
    repo = "bench/many"
    for i in range(n):
        body = (f"file {i} of bench/many\n" * (1 + i % 97)).encode()
        files.append(small_file(f"shard-{i // 100:03d}/part-{i:05d}.json", body))
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

write_bundle(repo, hashlib.sha1(repo.encode()).hexdigest(), "main", files)
print(repo)
