#!/usr/bin/env bash
# A bounded soak of `llmgw mirror serve`: CLIENTS connections for DURATION seconds (wrk)
# mixing whole downloads of big files, 1 MiB Range requests, small files and JSON answers
# of the Hub API (and, beside it, curl sending HEADs as the Hub clients do), while, on the same store, one bundle is imported and another removed and
# gc'd. It passes when wrk saw no socket error and no answer other than 2xx/3xx, every
# byte downloaded after the soak is still right, and the mirror's peak RSS stayed within
# RSS_LIMIT_MIB.
#
#   bench/soak.sh                                   # 64 clients x 60 s
#   CLIENTS=64 DURATION=60 BIG_MIB=64 bench/soak.sh
#
# The store: bundle A (model acme/big, BIG_FILES x BIG_MIB MiB, and acme/tiny) is what
# the clients read; bundle C (llama.cpp b6123) is held at the start and removed + gc'd
# during the soak; bundle B (dataset acme/data) is imported during the soak. All three are
# made by `llmgw bundle create` from the fixture upstream.
# With BENCH_RESULTS=FILE, one tab-separated line is appended to FILE (bench/all.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-64}
DURATION=${DURATION:-60}
BIG_FILES=${BIG_FILES:-2}
BIG_MIB=${BIG_MIB:-64}
RSS_LIMIT_MIB=${RSS_LIMIT_MIB:-256}
for tool in wrk curl python3 sha256sum; do
  command -v "$tool" >/dev/null || { echo "soak: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done

echo "soak: building llmgw and the fixture (release)" >&2
cargo build --release --locked -q -p llmgw -p llmgw-fixture
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

WORK=$(mktemp -d /tmp/llmgw-soak.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$BIN/llmgw-fixture" --big-files "$BIG_FILES" --big-mib "$BIG_MIB" >"$WORK/fx.json" 2>"$WORK/fx.log" &
PIDS+=("$!")
for _ in $(seq 300); do [ -s "$WORK/fx.json" ] && break; sleep 0.1; done
fx() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())[sys.argv[2]])' "$WORK/fx.json" "$1"; }

# create NAME ARGS...: a bundle from the fixture; prints its manifest sha256.
create() {
  local name=$1; shift
  "$BIN/llmgw" bundle create --arch amd64 --github-api "$(fx github_api)" --hf-endpoint "$(fx hf_endpoint)" \
    --cache "$WORK/cache" --out "$WORK/$name.tar" --json "$@" >"$WORK/$name.json" 2>"$WORK/$name.log" \
    || { cat "$WORK/$name.log" >&2; exit 1; }
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifest_sha256"])' "$WORK/$name.json"
}
echo "soak: creating three bundles" >&2
A=$(create a --model acme/big --model acme/tiny)
B=$(create b --dataset acme/data)
C=$(create c --engine llamacpp=b6123)
STORE=$WORK/store
"$BIN/llmgw" bundle import "$WORK/a.tar" --sha256 "$A" --store "$STORE" >/dev/null 2>&1
"$BIN/llmgw" bundle import "$WORK/c.tar" --sha256 "$C" --store "$STORE" >/dev/null 2>&1

PORT=$(free_port)
"$BIN/llmgw" mirror serve --store "$STORE" --listen "127.0.0.1:$PORT" >"$WORK/mirror.out" 2>"$WORK/mirror.log" &
MPID=$!
PIDS+=("$MPID")
M=http://127.0.0.1:$PORT
for _ in $(seq 100); do curl -sf "$M/readyz" >/dev/null && break; sleep 0.1; done

# The paths the clients use, from the mirror's own answers.
python3 - "$M" > "$WORK/paths.lua" <<'EOF'
import json, sys, urllib.parse, urllib.request
m = sys.argv[1]
q = urllib.parse.quote
tree = json.load(urllib.request.urlopen(f"{m}/api/models/acme/big/tree/main?recursive=true"))
big = [f"/acme/big/resolve/main/{q(t['path'])}" for t in tree if t["type"] == "file" and t.get("lfs")]
small = [f"/acme/tiny/resolve/main/{q(t['path'])}" for t in
         json.load(urllib.request.urlopen(f"{m}/api/models/acme/tiny/tree/main?recursive=true"))
         if t["type"] == "file"]
json_paths = ["/api/models/acme/big/revision/main", "/api/models/acme/tiny/revision/main",
              "/api/models/acme/big/tree/main?recursive=true", "/v1/index"]
lua = lambda xs: "{" + ",".join(json.dumps(x) for x in xs) + "}"
print(f"big = {lua(big)}\nsmall = {lua(small)}\njsonp = {lua(json_paths)}")
EOF
cat > "$WORK/mix.lua" <<EOF
dofile("$WORK/paths.lua")
local n = 0
request = function()
  n = n + 1
  local k = n % 10
  if k == 0 then   -- a whole big file
    return wrk.format("GET", big[math.random(#big)])
  elseif k <= 3 then   -- a 1 MiB range somewhere in a big file
    local from = math.random(0, $((BIG_MIB - 1))) * 1048576
    return wrk.format("GET", big[math.random(#big)], { Range = "bytes=" .. from .. "-" .. (from + 1048575) })
  elseif k <= 6 then   -- (no HEAD here: wrk would wait for a body HEAD never has)
    return wrk.format("GET", small[math.random(#small)])
  else
    return wrk.format("GET", jsonp[math.random(#jsonp)])
  end
end
EOF

echo "soak: $CLIENTS clients x ${DURATION}s; import, remove and gc meanwhile (load before: $LOAD_BEFORE)" >&2
echo 5 > "/proc/$MPID/clear_refs" 2>/dev/null || true
wrk -t2 -c"$CLIENTS" -d"${DURATION}s" --timeout 30s -s "$WORK/mix.lua" "$M" >"$WORK/wrk.out" 2>&1 &
WRK=$!
# HEADs as the Hub clients send them, from curl (wrk cannot read a HEAD answer).
(
  end=$((SECONDS + DURATION)); n=0; bad=0
  while [ "$SECONDS" -lt "$end" ]; do
    code=$(curl -s -o /dev/null -I -w '%{http_code}' "$M/acme/tiny/resolve/main/config.json" || echo 000)
    n=$((n + 1)); [ "$code" = 200 ] || bad=$((bad + 1))
  done
  echo "$n $bad" > "$WORK/heads"
) &
HEADS=$!
sleep $((DURATION / 6))
"$BIN/llmgw" bundle import "$WORK/b.tar" --sha256 "$B" --store "$STORE" >"$WORK/import.log" 2>&1 || { echo "soak: import failed:" >&2; cat "$WORK/import.log" >&2; exit 1; }
sleep $((DURATION / 6))
"$BIN/llmgw" mirror remove "$C" --store "$STORE" >"$WORK/remove.log" 2>&1 || { echo "soak: remove failed:" >&2; cat "$WORK/remove.log" >&2; exit 1; }
"$BIN/llmgw" mirror gc --store "$STORE" >"$WORK/gc.log" 2>&1 || { echo "soak: gc failed:" >&2; cat "$WORK/gc.log" >&2; exit 1; }
wait "$WRK" "$HEADS"
read -r HEAD_N HEAD_BAD < "$WORK/heads"
RSS_KB=$(awk '/VmHWM/ {print $2}' "/proc/$MPID/status")
cat "$WORK/wrk.out" >&2

# After the soak: the new bundle is served, the removed one is gone, bytes are right.
curl -sf "$M/api/datasets/acme/data/revision/main" >/dev/null || { echo "soak: the imported dataset is not served" >&2; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "$M/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6123")" = 404 ] \
  || { echo "soak: the removed release is still served" >&2; exit 1; }
python3 - "$M" "$WORK/a.json" "$STORE" "$A" <<'EOF'
import hashlib, json, sys, urllib.parse, urllib.request
m, _, store, a = sys.argv[1:5]
man = json.load(open(f"{store}/bundles/{a}.json"))
for repo in man["repos"]:
    for f in repo["files"]:
        h = hashlib.sha256()
        with urllib.request.urlopen(f"{m}/{repo['id']}/resolve/main/{urllib.parse.quote(f['path'])}") as r:
            while chunk := r.read(1 << 20):
                h.update(chunk)
        assert h.hexdigest() == f["sha256"], f"{repo['id']}/{f['path']}: wrong bytes after the soak"
EOF

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
REQS=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
BAD=$(awk '/Non-2xx or 3xx responses/ {print $NF}' "$WORK/wrk.out")
SOCK=$(awk '/Socket errors/ {gsub(",", ""); print $4 + $6 + $8 + $10}' "$WORK/wrk.out")
BAD=$(( ${BAD:-0} + HEAD_BAD )); SOCK=${SOCK:-0}; REQS=$((REQS + HEAD_N))
RSS_MIB=$(python3 -c "print(f'{$RSS_KB / 1024:.1f}')")
verdict=met
if [ "$BAD" != 0 ] || [ "$SOCK" != 0 ] || [ "${RSS_KB}" -gt $((RSS_LIMIT_MIB * 1024)) ]; then verdict=MISSED; fi
echo "| soak, $CLIENTS clients x ${DURATION}s, import + remove + gc meanwhile | $REQS requests | $BAD bad answers | $SOCK socket errors | peak RSS $RSS_MIB MiB (limit $RSS_LIMIT_MIB) | $verdict | load $LOAD_BEFORE -> $LOAD_AFTER |"
if [ -n "${BENCH_RESULTS:-}" ]; then
  printf 'soak\t%s clients x %ss, import+remove+gc\t%s requests, %s bad, %s socket errors\t\t\t0 errors, RSS <= %s MiB\t%s\t%s\t%s / %s\n' \
    "$CLIENTS" "$DURATION" "$REQS" "$BAD" "$SOCK" "$RSS_LIMIT_MIB" "$RSS_MIB" "$verdict" "$LOAD_BEFORE" "$LOAD_AFTER" >> "$BENCH_RESULTS"
fi
if [ "$verdict" != met ]; then
  echo "soak: the mirror's log, the lines that are not plain answers:" >&2
  grep -v 'status=20[06]' "$WORK/mirror.log" >&2 || true
  exit 1
fi
