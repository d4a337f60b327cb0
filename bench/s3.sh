#!/usr/bin/env bash
# Benchmark (issue 16): `llmgw mirror serve` over a store in a bucket of Garage (a real
# S3 server, on this machine), 32 clients downloading one MIB MiB model file with wrk:
#   - one replica (32 clients on it), and two replicas over the same bucket (16 clients
#     on each, run at once, summed): the scale-out figure;
#   - the same bucket with --blob-delivery presigned (wrk on the presigned URL the mirror
#     redirects to: Garage serving the client itself) and with a filled --cache-dir;
#   - reference in the same run: nginx serving the same bytes from local disk (sendfile),
#     which is what one mirror on a local volume is measured against in bench/serve.sh.
# Every process (Garage, the replicas, wrk, nginx) shares this machine's cores and one
# loopback, so two replicas can only show what their CPU allows here; on a site they run
# on separate nodes with separate NICs. The table says so with the core count and load.
#
#   bench/s3.sh                       # MIB=512 DURATION=10
#   MIB=1024 DURATION=20 bench/s3.sh
# With BENCH_RESULTS=FILE, one tab-separated line per figure is appended to FILE.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
MIB=${MIB:-512}
for tool in wrk nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done
export LLMGW_GARAGE=${LLMGW_GARAGE:-${LLMGW_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/llmgw/tools}/garage-2.5.0/bin/garage}
[ -x "$LLMGW_GARAGE" ] || { echo "bench: $LLMGW_GARAGE is missing: run scripts/setup.sh" >&2; exit 1; }

# BENCH_PROFILE=debug checks the script itself quickly; figures come from release.
PROFILE=${BENCH_PROFILE:-release}
echo "bench: building llmgw and llmgw-fixture ($PROFILE)" >&2
cargo build --profile "${PROFILE/debug/dev}" --locked -q -p llmgw -p llmgw-fixture
BIN=${CARGO_TARGET_DIR:-$PWD/target}/$PROFILE
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start s3

# --- Garage, and the bundle imported into its bucket
"$BIN/llmgw-fixture" --s3 garage --env-file "$WORK/s3.env" >/dev/null 2>"$WORK/garage.log" &
PIDS+=("$!")
for _ in $(seq 300); do [ -f "$WORK/s3.env" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$WORK/s3.env"
export AWS_ACCESS_KEY_ID=$FX_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$FX_S3_SECRET_KEY \
  AWS_REGION=$FX_S3_REGION AWS_ENDPOINT_URL=$FX_S3_ENDPOINT
STORE=s3://$FX_S3_BUCKET/bench
echo "bench: making a bundle of one $MIB MiB file and importing it into $STORE" >&2
SHA=$(python3 bench/make_bundle.py "$WORK" 1 "$MIB")
"$BIN/llmgw" bundle import "$WORK/bundle.tar" --sha256 "$SHA" --store "$STORE" \
  --work-dir "$WORK/import-work" >/dev/null 2>"$WORK/import.log"
rm -rf "$WORK/import-work"

# --- two replicas over the bucket
URLS=()
for r in 1 2; do
  port=$(free_port)
  "$BIN/llmgw" mirror serve --store "$STORE" --work-dir "$WORK/replica$r" \
    --listen "127.0.0.1:$port" >/dev/null 2>"$WORK/replica$r.log" &
  PIDS+=("$!")
  URLS+=("http://127.0.0.1:$port")
done
# A third replica hands downloads out as presigned URLs (the bytes then flow from Garage
# to the client), and a fourth streams them through a read-through cache of its own.
port=$(free_port)
"$BIN/llmgw" mirror serve --store "$STORE" --work-dir "$WORK/replica3" --listen "127.0.0.1:$port" \
  --blob-delivery presigned --s3-public-endpoint "$FX_S3_ENDPOINT" >/dev/null 2>"$WORK/replica3.log" &
PIDS+=("$!")
PRESIGNING=http://127.0.0.1:$port
port=$(free_port)
"$BIN/llmgw" mirror serve --store "$STORE" --work-dir "$WORK/replica4" --listen "127.0.0.1:$port" \
  --cache-dir "$WORK/cache" >/dev/null 2>"$WORK/replica4.log" &
PIDS+=("$!")
CACHED=http://127.0.0.1:$port
for u in "${URLS[@]}" "$PRESIGNING" "$CACHED"; do wait_for "$u/readyz"; done
BIG_PATH=/bench/big/resolve/main/model-00.safetensors
for u in "${URLS[@]}"; do
  len=$(curl -sfI "$u$BIG_PATH" | tr -d '\r' | awk 'tolower($1)=="content-length:"{print $2}')
  [ "$len" = "$((MIB * 1024 * 1024))" ] || { echo "bench: $u$BIG_PATH: length $len" >&2; cat "$WORK"/replica*.log >&2; exit 1; }
done

# --- nginx: the same bytes from local disk
ROOT=$WORK/nginx-root
mkdir -p "$ROOT" "$WORK/nginx-tmp"
curl -sf "${URLS[0]}$BIG_PATH" -o "$ROOT/big"
NPORT=$(free_port)
cat > "$WORK/nginx.conf" <<NGINX
worker_processes auto;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
$( [ "$(id -u)" -eq 0 ] && echo "user root;" )
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $WORK/nginx-tmp/body;
  proxy_temp_path $WORK/nginx-tmp/proxy;
  fastcgi_temp_path $WORK/nginx-tmp/fastcgi;
  uwsgi_temp_path $WORK/nginx-tmp/uwsgi;
  scgi_temp_path $WORK/nginx-tmp/scgi;
  server { listen 127.0.0.1:$NPORT; root $ROOT; }
}
NGINX
nginx -p "$WORK" -c "$WORK/nginx.conf" &
PIDS+=("$!")
wait_for "http://127.0.0.1:$NPORT/big"
cat "$ROOT/big" >/dev/null

run() { wrk -t"$1" -c"$2" -d"${DURATION}s" --timeout 120s "$3"; }

echo "bench: nginx from disk, 32 clients" >&2
NGINX_GBPS=$(run 2 32 "http://127.0.0.1:$NPORT/big" | gbps)
echo "bench: one replica over S3, 32 clients" >&2
ONE=$(run 2 32 "${URLS[0]}$BIG_PATH" | gbps)
echo "bench: presigned URL straight from Garage, 32 clients" >&2
SIGNED=$(curl -s -o /dev/null -w '%{redirect_url}' "$PRESIGNING$BIG_PATH")
[ -n "$SIGNED" ] || { echo "bench: no redirect from the presigning replica" >&2; cat "$WORK/replica3.log" >&2; exit 1; }
PRESIGNED=$(run 2 32 "$SIGNED" | gbps)
echo "bench: one replica with a read-through cache (filled first), 32 clients" >&2
curl -sf "$CACHED$BIG_PATH" -o /dev/null
for _ in $(seq 100); do [ -n "$(find "$WORK/cache/blobs" -type f 2>/dev/null)" ] && break; sleep 0.1; done
CACHED_GBPS=$(run 2 32 "$CACHED$BIG_PATH" | gbps)
echo "bench: two replicas over S3, 16 clients each, at once" >&2
run 1 16 "${URLS[0]}$BIG_PATH" >"$WORK/wrk1" &
w1=$!
run 1 16 "${URLS[1]}$BIG_PATH" >"$WORK/wrk2"
wait "$w1"
TWO=$(awk -v a="$(gbps <"$WORK/wrk1")" -v b="$(gbps <"$WORK/wrk2")" 'BEGIN { printf "%.3f", a + b }')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }
LOAD="$LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)"
cat <<TABLE

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, ${DURATION}s per run, one $MIB MiB file, 32 clients, Garage $("$LLMGW_GARAGE" --version 2>/dev/null | awk 'NR==1{print $2}'), load $LOAD (before / after)

| served by                                  | GB/s | ratio |
|--------------------------------------------|-----:|------:|
| nginx, local disk (reference)              | $NGINX_GBPS | 1.00 |
| 1 mirror replica, S3 store (proxy)         | $ONE | $(ratio "$ONE" "$NGINX_GBPS") |
| 2 mirror replicas, same S3 store (proxy)   | $TWO | $(ratio "$TWO" "$NGINX_GBPS") |
| presigned: Garage to the client directly   | $PRESIGNED | $(ratio "$PRESIGNED" "$NGINX_GBPS") |
| 1 replica, read-through cache filled       | $CACHED_GBPS | $(ratio "$CACHED_GBPS" "$NGINX_GBPS") |

2 replicas / 1 replica: $(ratio "$TWO" "$ONE")x on $(nproc) shared cores.
TABLE
if [ -n "${BENCH_RESULTS:-}" ]; then
  {
    printf 's3\t1 replica over S3 vs nginx, 32 clients\t%s GB/s\t%s GB/s\t%s\t\t\t\t%s\n' "$ONE" "$NGINX_GBPS" "$(ratio "$ONE" "$NGINX_GBPS")" "$LOAD"
    printf 's3\t2 replicas over S3 vs 1, 32 clients\t%s GB/s\t%s GB/s\t%s\t\t\t\t%s\n' "$TWO" "$ONE" "$(ratio "$TWO" "$ONE")" "$LOAD"
    printf 's3\tpresigned vs proxy, 32 clients\t%s GB/s\t%s GB/s\t%s\t\t\t\t%s\n' "$PRESIGNED" "$ONE" "$(ratio "$PRESIGNED" "$ONE")" "$LOAD"
    printf 's3\tcached proxy vs proxy, 32 clients\t%s GB/s\t%s GB/s\t%s\t\t\t\t%s\n' "$CACHED_GBPS" "$ONE" "$(ratio "$CACHED_GBPS" "$ONE")" "$LOAD"
  } >> "$BENCH_RESULTS"
fi
