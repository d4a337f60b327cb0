#!/usr/bin/env bash
# One client's download of a large file from `llmgw mirror serve`, with the page faults the
# server took while sending it: each build named in LLMGWS, in turn, against the same store.
# A fault count in the hundreds of thousands a GiB means every chunk's buffer is a fresh
# `mmap` (what the fixed mmap threshold did to 256 KiB chunks, see bench/RESULTS.md).
#
#   LLMGWS="/tmp/llmgw-old target/release/llmgw" bench/file-faults.sh
#   SIZE=1073741824 RUNS=2 (defaults)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
SIZE=${SIZE:-1073741824}
RUNS=${RUNS:-2}
LLMGWS=${LLMGWS:-${CARGO_TARGET_DIR:-$PWD/target}/release/llmgw}
bench_start file-faults
python3 bench/make_model_store.py "$WORK/store" sparse "$SIZE" >/dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| build | run | minor faults | GB/s |"
echo "|---|---:|---:|---:|"
for run in $(seq "$RUNS"); do
  for bin in $LLMGWS; do
    port=$(free_port)
    url="http://127.0.0.1:$port"
    "$bin" mirror serve --store "$WORK/store" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_for "$url/readyz"
    file=$(curl -sf "$url/api/models/bench/big" | python3 -c 'import json,sys; print(json.load(sys.stdin)["siblings"][0]["rfilename"])')
    curl -sf -o /dev/null "$url/bench/big/resolve/main/$file"   # the page cache warm
    before=$(awk '{print $10}' "/proc/$pid/stat")
    speed=$(curl -sf -o /dev/null -w '%{speed_download}' "$url/bench/big/resolve/main/$file")
    after=$(awk '{print $10}' "/proc/$pid/stat")
    awk -v b="$bin" -v r="$run" -v f="$((after - before))" -v s="$speed" \
      'BEGIN { printf "| %s | %d | %d | %.2f |\n", b, r, f, s/1e9 }'
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
