#!/usr/bin/env bash
# Benchmark: the mirror's front page (`GET /`) of a store of 1 000 bundles (#34),
# against nginx serving the same HTML as a static file from the same disk.
#   - latency of one GET / (curl, 200 sequential requests: p50, p99, max), mirror and
#     nginx, and the ratio;
#   - req/s at 8 clients (wrk), mirror and nginx, and the ratio.
# Goal: the mirror renders the page in under 200 ms. Every list on it is cut at 20
# rows with a link to its own paginated page, so its size does not grow with the store.
#
#   bench/front-page.sh [BUNDLES]        (default 1000; needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-1000}
for tool in wrk nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "bench: needs $tool (scripts/setup.sh installs it)" >&2; exit 1; }
done
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
cargo build --locked --release --quiet -p llmgw
bench_start front
python3 bench/make_store.py "$WORK/store" "$N" >/dev/null

PORT=$(free_port)
"$BIN/llmgw" mirror serve --store "$WORK/store" --listen "127.0.0.1:$PORT" >/dev/null 2>"$WORK/serve.log" &
PIDS+=("$!")
MIRROR=http://127.0.0.1:$PORT
for _ in $(seq 600); do
  [ "$(curl -sf "$MIRROR/readyz" || true)" = "ready: $N bundles" ] && break
  sleep 0.1
done
curl -sf "$MIRROR/" -o "$WORK/front.html"
grep -q "Bundles ($N)" "$WORK/front.html" || { echo "bench: the page does not list $N bundles" >&2; exit 1; }

mkdir -p "$WORK/nginx-root" "$WORK/nginx-tmp"
cp "$WORK/front.html" "$WORK/nginx-root/index.html"
NPORT=$(free_port)
cat > "$WORK/nginx.conf" <<CONF
worker_processes auto;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
$( [ "$(id -u)" -eq 0 ] && echo "user root;" )
events { worker_connections 1024; }
http {
  access_log $WORK/nginx-access.log;
  types { text/html html; }
  client_body_temp_path $WORK/nginx-tmp/body;
  proxy_temp_path $WORK/nginx-tmp/proxy;
  fastcgi_temp_path $WORK/nginx-tmp/fastcgi;
  uwsgi_temp_path $WORK/nginx-tmp/uwsgi;
  scgi_temp_path $WORK/nginx-tmp/scgi;
  server { listen 127.0.0.1:$NPORT; root $WORK/nginx-root; }
}
CONF
nginx -p "$WORK" -c "$WORK/nginx.conf" &
PIDS+=("$!")
NGINX=http://127.0.0.1:$NPORT
wait_for "$NGINX/index.html"

# latency URL: p50, p99 and max of 200 sequential requests, in ms.
latency() {
  for _ in $(seq 200); do curl -s -o /dev/null -w '%{time_total}\n' "$1"; done |
    sort -n | awk '{ t[NR] = $1 * 1000 } END { printf "%.2f %.2f %.2f", t[int(NR*0.5)], t[int(NR*0.99)], t[NR] }'
}
rps() { wrk -t2 -c8 -d5s "$1" | awk '/^Requests\/sec/ { printf "%.0f", $2 }'; }
read -r m50 m99 mmax <<<"$(latency "$MIRROR/")"
read -r n50 n99 nmax <<<"$(latency "$NGINX/index.html")"
mrps=$(rps "$MIRROR/")
nrps=$(rps "$NGINX/index.html")
echo "front page of $N bundles: $(wc -c <"$WORK/front.html") bytes; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %8s %8s %8s %8s\n' server p50_ms p99_ms max_ms req/s
printf '%-8s %8s %8s %8s %8s\n' mirror "$m50" "$m99" "$mmax" "$mrps"
printf '%-8s %8s %8s %8s %8s\n' nginx "$n50" "$n99" "$nmax" "$nrps"
awk -v m="$mrps" -v n="$nrps" -v p="$m99" 'BEGIN { printf "mirror/nginx req/s: %.2fx; p99 %s ms against the 200 ms goal: %s\n", m/n, p, (p < 200 ? "met" : "MISSED") }'
