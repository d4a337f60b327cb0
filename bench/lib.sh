# Shared by the benchmarks that run servers (sourced, not run):
#   bench_start NAME   WORK (a fresh folder under /tmp), PIDS (servers to stop), and a trap
#                      that stops them and removes WORK however the script ends;
#   free_port          a loopback port free right now;
#   wait_for URL       until URL answers (30 s at most, then exit 1 naming it);
#   gbps               wrk's Transfer/sec on stdin, in GB/s (10^9 bytes).
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
