#!/usr/bin/env bash
# Profile: the instructions `llmgw mirror serve` spends on one cached JSON
# answer (the revision JSON bench/serve.sh measures), counted by valgrind's
# callgrind, which does not depend on the machine's load. The mirror runs
# under callgrind; WARM requests are sent, then callgrind's counters are
# zeroed and exactly N more are sent (one keep-alive connection); the
# instructions of those N, divided by N, is the figure, with the functions
# that spent the most of them (inclusive).
#
#   bench/json-profile.sh             # N=2000
#   LLMGW=target/release/llmgw N=5000 bench/json-profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
WARM=${WARM:-200}
for tool in valgrind callgrind_control callgrind_annotate curl python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
done
if [ -z "${LLMGW:-}" ]; then
  cargo build --release --locked -q -p llmgw
  LLMGW=${CARGO_TARGET_DIR:-$PWD/target}/release/llmgw
fi
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start json-profile
STORE=$WORK/store
mkdir -p "$STORE"/{blobs/sha256,bundles,trust,tmp}
python3 - "$STORE" <<'EOF'
import hashlib, json, os, sys
store = sys.argv[1]
def git_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
files = []
for name, data in [("config.json", b'{"model_type": "llama"}\n'), ("big.gguf", b"x" * 4096)]:
    sha = hashlib.sha256(data).hexdigest()
    d = os.path.join(store, "blobs", "sha256", sha[:2]); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, sha), "wb").write(data)
    files.append({"path": name, "size": len(data), "sha256": sha, "git_oid": git_oid(data), "lfs": False,
                  "publisher_digests": [{"source": "git-blob-sha1", "value": git_oid(data)}]})
m = {"format_version": 1, "created": "2026-12-01T00:00:00Z", "tool": "bench", "arches": ["amd64"],
     "releases": [], "repos": [{"type": "model", "id": "bench/big", "revision": "main",
     "commit": "0123456789abcdef0123456789abcdef01234567", "files": files}], "gaps": []}
data = (json.dumps(m, indent=2) + "\n").encode()
open(os.path.join(store, "bundles", hashlib.sha256(data).hexdigest() + ".json"), "wb").write(data)
EOF
PORT=$(free_port)
OUT=$WORK/callgrind.out
valgrind --tool=callgrind --callgrind-out-file="$OUT" --dump-instr=no \
  "$LLMGW" mirror serve --store "$STORE" --listen "127.0.0.1:$PORT" \
  >"$WORK/mirror.out" 2>"$WORK/mirror.log" &
VPID=$!
PIDS+=("$VPID")
URL=http://127.0.0.1:$PORT/api/models/bench/big/revision/main
for _ in $(seq 600); do curl -sf "$URL" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "$URL" >/dev/null
# Exactly COUNT requests on one keep-alive connection.
ask() {
  python3 -c '
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for _ in range(int(sys.argv[2])):
    c.request("GET", "/api/models/bench/big/revision/main")
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
' "$PORT" "$1"
}
ask "$WARM"
callgrind_control -z "$VPID" >/dev/null
ask "$N"
callgrind_control -d "$VPID" >/dev/null
sleep 1
# The dump taken after the N requests: what was counted since the zeroing.
DUMP=$(ls -t "$OUT".* 2>/dev/null | sed -n 1p)
[ -n "${KEEP:-}" ] && cp "$DUMP" "$KEEP"  # KEEP=FILE: the dump, for callgrind_annotate
kill -INT "$VPID" 2>/dev/null || true
wait "$VPID" 2>/dev/null || true
TOTAL=$(callgrind_annotate "$DUMP" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
SENT=$N
echo "requests counted: $SENT (asked $N); instructions: $TOTAL; per request: $((TOTAL / SENT))"
callgrind_annotate --inclusive=yes "$DUMP" 2>/dev/null | sed -n '1,60p' | grep -v '^$' | tail -40
