"""Writes a mirror store of N bundles as `llmgw bundle import` leaves it, for the
front-page benchmark: each bundle a format 2 manifest of one release (`bench/rel`, tag
`vI`, one small asset), signed-series fields filled in as a courier's weekly bundles
would have them (channel, sequence, expiry), and its blob at blobs/sha256/<2>/<64>.

    python3 bench/make_store.py STORE N
"""

import hashlib
import json
import os
import sys

store, n = sys.argv[1], int(sys.argv[2])
os.makedirs(os.path.join(store, "bundles"), exist_ok=True)
os.makedirs(os.path.join(store, "tmp"), exist_ok=True)
for i in range(n):
    body = f"asset of bundle {i}\n".encode() * 64
    sha = hashlib.sha256(body).hexdigest()
    d = os.path.join(store, "blobs", "sha256", sha[:2])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, sha), "wb") as f:
        f.write(body)
    m = {
        "format_version": 2, "created": "2026-01-01T00:00:00Z", "tool": "bench",
        "arches": ["amd64"], "channel": "weekly", "sequence": i + 1,
        "expires": "2027-06-01T00:00:00Z",
        "releases": [{"repo": "bench/rel", "tag": f"v{i}", "engine": "bench", "version": f"{i}",
                      "assets": [{"name": "asset.bin", "size": len(body), "sha256": sha,
                                  "publisher_digests": [{"source": "github-asset-digest", "value": sha}]}]}],
        "repos": [], "gaps": [],
    }
    data = (json.dumps(m, indent=2) + "\n").encode()
    mid = hashlib.sha256(data).hexdigest()
    with open(os.path.join(store, "bundles", f"{mid}.json"), "wb") as f:
        f.write(data)
print(n)
