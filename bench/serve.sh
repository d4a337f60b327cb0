#!/usr/bin/env bash
# Benchmark: `llmgw mirror serve` against nginx (sendfile on) serving the
# same bytes, measured with wrk in one run, so the ratios compare like with
# like on whatever machine this is:
#   - a 1 GiB file at 1 and 16 concurrent clients (GB/s)
#   - a small revision-API JSON at 64 clients (req/s; nginx serves the same
#     JSON as a static file)
#   - the mirror's peak RSS during 64 concurrent 1 GiB downloads
# Goals: >= 0.9x nginx on the large file, >= 0.8x nginx req/s, RSS <= 64 MiB.
#
#   bench/serve.sh            # DURATION=10 seconds per run by default
#   DURATION=20 bench/serve.sh
#   ONLY=json bench/serve.sh  # the JSON runs only (a 2 MiB blob, no file runs)
#
# Both servers log every request to a file (nginx's access_log, the mirror's
# one line per request). Everything lives in a temp folder removed on exit.
# With BENCH_RESULTS=FILE, one tab-separated line per figure is appended to FILE
# (bench/all.sh reads them).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
ONLY=${ONLY:-}
SIZE_MIB=${SIZE_MIB:-$([ "$ONLY" = json ] && echo 2 || echo 1024)}
for tool in wrk nginx curl python3 sha256sum; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done

if [ -z "${LLMGW:-}" ]; then  # LLMGW=PATH: measure that binary instead
  echo "bench: building llmgw (release)" >&2
  cargo build --release --locked -q -p llmgw
  LLMGW=${CARGO_TARGET_DIR:-$PWD/target}/release/llmgw
fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start serve

# --- the store: one model repo with a 1 GiB LFS file and a config.json, laid
# out exactly as `llmgw bundle import` leaves it.
STORE=$WORK/store
mkdir -p "$STORE"/{blobs/sha256,bundles,trust,tmp}
echo "bench: writing a ${SIZE_MIB} MiB blob" >&2
head -c "$((SIZE_MIB * 1024 * 1024))" /dev/urandom > "$WORK/big"
python3 - "$WORK/big" "$STORE" <<'EOF'
import hashlib, json, os, sys
big, store = sys.argv[1], sys.argv[2]
def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
def git_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
size = os.path.getsize(big)
sha = sha256_file(big)
pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {size}\n".encode()
cfg = b'{"model_type": "llama"}\n'
cfg_sha = hashlib.sha256(cfg).hexdigest()
def put(sha, src=None, data=None):
    d = os.path.join(store, "blobs", "sha256", sha[:2]); os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, sha)
    if src: os.rename(src, dst)
    else: open(dst, "wb").write(data)
    os.chmod(dst, 0o644)
put(sha, src=big)
put(cfg_sha, data=cfg)
files = [
    {"path": "big.gguf", "size": size, "sha256": sha, "git_oid": git_oid(pointer), "lfs": True,
     "publisher_digests": [{"source": "hf-lfs-sha256", "value": sha}]},
    {"path": "config.json", "size": len(cfg), "sha256": cfg_sha, "git_oid": git_oid(cfg), "lfs": False,
     "publisher_digests": [{"source": "git-blob-sha1", "value": git_oid(cfg)}]},
]
m = {"format_version": 1, "created": "2026-12-01T00:00:00Z", "tool": "bench", "arches": ["amd64"],
     "releases": [], "repos": [{"type": "model", "id": "bench/big", "revision": "main",
     "commit": "0123456789abcdef0123456789abcdef01234567", "files": files}], "gaps": []}
data = (json.dumps(m, indent=2) + "\n").encode()
open(os.path.join(store, "bundles", hashlib.sha256(data).hexdigest() + ".json"), "wb").write(data)
print(sha)
EOF
BIG_SHA=$(find "$STORE/blobs" -size +1M -type f -printf '%f\n')
BLOB=$STORE/blobs/sha256/${BIG_SHA:0:2}/$BIG_SHA
find "$STORE" -type d -exec chmod 755 {} +

# --- the mirror
MPORT=$(free_port)
"$LLMGW" mirror serve --store "$STORE" --listen "127.0.0.1:$MPORT" >"$WORK/mirror.out" 2>"$WORK/mirror.log" &
MPID=$!
PIDS+=("$MPID")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$MPORT/readyz" >/dev/null && break; sleep 0.1; done
MIRROR=http://127.0.0.1:$MPORT
BIG_PATH=/bench/big/resolve/main/big.gguf
JSON_PATH=/api/models/bench/big/revision/main
curl -sf "$MIRROR$JSON_PATH" -o "$WORK/revision.json" || { echo "bench: the mirror does not serve the bench repo:" >&2; cat "$WORK/mirror.log" >&2; exit 1; }
[ "$(curl -sfI "$MIRROR$BIG_PATH" | tr -d '\r' | awk 'tolower($1)=="content-length:"{print $2}')" = "$((SIZE_MIB * 1024 * 1024))" ]

# --- nginx: same blob (a hard link: same inode, same page cache), same JSON.
ROOT=$WORK/nginx-root
mkdir -p "$ROOT"
ln "$BLOB" "$ROOT/big.gguf"
cp "$WORK/revision.json" "$ROOT/revision.json"
start_nginx "$ROOT"
for _ in $(seq 100); do curl -sf "$NGINX/revision.json" >/dev/null && break; sleep 0.1; done
cmp <(curl -sf "$NGINX/revision.json") "$WORK/revision.json"

echo "bench: warming the page cache" >&2
cat "$BLOB" > /dev/null

rps() { awk '/^Requests\/sec/ { printf "%.0f", $2 }'; }
run() { # threads conns url
  wrk -t"$1" -c"$2" -d"${DURATION}s" --timeout 120s "$3"
}

declare -A R
for who in mirror nginx; do
  if [ $who = mirror ]; then big=$MIRROR$BIG_PATH; json=$MIRROR$JSON_PATH; else big=$NGINX/big.gguf; json=$NGINX/revision.json; fi
  if [ "$ONLY" != json ]; then
    echo "bench: $who: 1 GiB file, 1 client" >&2
    R[$who.big1]=$(run 1 1 "$big" | gbps)
    echo "bench: $who: 1 GiB file, 16 clients" >&2
    R[$who.big16]=$(run 2 16 "$big" | gbps)
  fi
  echo "bench: $who: revision JSON, 64 clients" >&2
  R[$who.json]=$(run 2 64 "$json" | rps)
done
if [ "$ONLY" = json ]; then
  rj=$(awk -v a="${R[mirror.json]}" -v b="${R[nginx.json]}" 'BEGIN { printf "%.2f", a/b }')
  echo "revision JSON, 64 clients (req/s): mirror ${R[mirror.json]}, nginx ${R[nginx.json]}, ratio $rj"
  echo "load average: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg) (before / after)"
  exit 0
fi

echo "bench: mirror RSS during 64 concurrent 1 GiB downloads" >&2
echo 5 > "/proc/$MPID/clear_refs"   # resets the peak (VmHWM) to the current RSS
run 2 64 "$MIRROR$BIG_PATH" >/dev/null
RSS_KB=$(awk '/^VmHWM/ {print $2}' "/proc/$MPID/status")
RSS_MIB=$(awk -v k="$RSS_KB" 'BEGIN { printf "%.1f", k/1024 }')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r >= g) ? "met" : "MISSED" }'; }
r1=$(ratio "${R[mirror.big1]}" "${R[nginx.big1]}")
r16=$(ratio "${R[mirror.big16]}" "${R[nginx.big16]}")
rj=$(ratio "${R[mirror.json]}" "${R[nginx.json]}")
rss_ok=$(awk -v r="$RSS_MIB" 'BEGIN { print (r <= 64) ? "met" : "MISSED" }')

cat <<EOF

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, ${DURATION}s per run, wrk $(wrk -v 2>&1 | awk 'NR == 1 {print $2}'), nginx $(nginx -v 2>&1 | sed 's|.*/||')

| measure                         | llmgw mirror | nginx (sendfile) | ratio | goal   |        |
|---------------------------------|-------------:|-----------------:|------:|--------|--------|
| 1 GiB file, 1 client (GB/s)     | ${R[mirror.big1]} | ${R[nginx.big1]} | $r1 | >= 0.9 | $(verdict "$r1" 0.9) |
| 1 GiB file, 16 clients (GB/s)   | ${R[mirror.big16]} | ${R[nginx.big16]} | $r16 | >= 0.9 | $(verdict "$r16" 0.9) |
| revision JSON, 64 clients (req/s) | ${R[mirror.json]} | ${R[nginx.json]} | $rj | >= 0.8 | $(verdict "$rj" 0.8) |
| mirror peak RSS, 64 x 1 GiB downloads (MiB) | $RSS_MIB | | | <= 64 | $rss_ok |
EOF
LOAD="$LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load average: $LOAD (before / after)"
if [ -n "${BENCH_RESULTS:-}" ]; then
  {
    printf 'serve\t1 GiB file, 1 client vs nginx\t%s GB/s\t%s GB/s\t%s\t>= 0.90\t\t%s\t%s\n' "${R[mirror.big1]}" "${R[nginx.big1]}" "$r1" "$(verdict "$r1" 0.9)" "$LOAD"
    printf 'serve\t1 GiB file, 16 clients vs nginx\t%s GB/s\t%s GB/s\t%s\t>= 0.90\t%s\t%s\t%s\n' "${R[mirror.big16]}" "${R[nginx.big16]}" "$r16" "$RSS_MIB" "$(verdict "$r16" 0.9)" "$LOAD"
    printf 'serve\trevision JSON, 64 clients vs nginx\t%s req/s\t%s req/s\t%s\t>= 0.80\t\t%s\t%s\n' "${R[mirror.json]}" "${R[nginx.json]}" "$rj" "$(verdict "$rj" 0.8)" "$LOAD"
  } >> "$BENCH_RESULTS"
fi
