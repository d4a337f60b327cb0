# Shared by the benchmarks that run servers (sourced, not run):
#   bench_start NAME   WORK (a fresh folder under /tmp), PIDS (servers to stop), and a trap
#                      that stops them and removes WORK however the script ends;
#   free_port          a loopback port free right now;
#   wait_for URL       until URL answers (30 s at most, then exit 1 naming it);
#   gbps               wrk's Transfer/sec on stdin, in GB/s (10^9 bytes);
#   start_nginx ROOT   nginx (sendfile on, every request logged to a file) serving ROOT
#                      on a free loopback port: sets NGINX (its URL) and NGINX_PID.
# shellcheck shell=bash

bench_start() {
  WORK=$(mktemp -d "/tmp/llmgw-bench-$1.XXXXXX")
  chmod 755 "$WORK"
  PIDS=()
  trap bench_cleanup EXIT INT TERM
}

bench_cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_for() {
  for _ in $(seq 300); do curl -sf "$1" >/dev/null && return; sleep 0.1; done
  echo "bench: $1 never answered" >&2
  exit 1
}

gbps() {
  awk '/^Transfer\/sec/ { v=$2; u=v; gsub(/[0-9.]/,"",u); sub(/[A-Za-z]+$/,"",v);
    m = (u=="GB") ? 1073741824 : (u=="MB") ? 1048576 : (u=="KB") ? 1024 : 1; printf "%.3f", v*m/1e9 }'
}

start_nginx() {
  local port
  port=$(free_port)
  mkdir -p "$WORK/nginx-tmp"
  cat > "$WORK/nginx-$port.conf" <<EOF
worker_processes auto;
daemon off;
pid $WORK/nginx-$port.pid;
error_log $WORK/nginx-error.log warn;
$( [ "$(id -u)" -eq 0 ] && echo "user root;" )
events { worker_connections 4096; }
http {
  access_log $WORK/nginx-access.log;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  types { application/json json; text/html html; application/octet-stream gguf whl metadata; }
  client_body_temp_path $WORK/nginx-tmp/body;
  proxy_temp_path $WORK/nginx-tmp/proxy;
  fastcgi_temp_path $WORK/nginx-tmp/fastcgi;
  uwsgi_temp_path $WORK/nginx-tmp/uwsgi;
  scgi_temp_path $WORK/nginx-tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    root $1;
    index index.html;
  }
}
EOF
  nginx -p "$WORK" -c "$WORK/nginx-$port.conf" &
  NGINX_PID=$!
  PIDS+=("$NGINX_PID")
  NGINX=http://127.0.0.1:$port
  for _ in $(seq 100); do curl -s -o /dev/null "$NGINX/" && return; sleep 0.1; done
  echo "bench: nginx never answered on $NGINX" >&2
  exit 1
}
