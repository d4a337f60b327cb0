#!/usr/bin/env bash
# Benchmark: a large Hub file downloaded from the mirror by the real
# huggingface_hub 2.x over Xet (hf_xet, its default when the server
# announces Xet) against the same file from the same mirror over plain HTTP
# (HF_HUB_DISABLE_XET=1) and against curl of its resolve URL, in one run, so
# the ratios compare like with like on whatever machine this is. Each
# download starts from an empty cache (HF_HOME and HF_XET_CACHE fresh).
# (import's cost of making the Xet records is measured by bench/import.sh,
# whose bundles hold LFS files.)
#
#   bench/xet.sh               # SIZE_MIB=1024
#   SIZE_MIB=256 bench/xet.sh
#   LLMGW=/path/to/llmgw bench/xet.sh   # measure that binary
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MIB=${SIZE_MIB:-1024}
PY=${LLMGW_VENV:-$PWD/.venv}/bin/python
for tool in curl python3 "$PY"; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done
"$PY" -c 'import hf_xet' 2>/dev/null || { echo "bench: $PY has no hf_xet: run scripts/setup.sh" >&2; exit 1; }
if [ -z "${LLMGW:-}" ]; then
  echo "bench: building llmgw (release)" >&2
  cargo build --release --locked -q -p llmgw
  LLMGW=${CARGO_TARGET_DIR:-$PWD/target}/release/llmgw
fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start xet

echo "bench: a bundle with one ${SIZE_MIB} MiB LFS file" >&2
SHA=$(python3 bench/make_bundle.py "$WORK" 1 "$SIZE_MIB")
"$LLMGW" bundle import "$WORK/bundle.tar" --sha256 "$SHA" --store "$WORK/store" >/dev/null 2>"$WORK/import.log"
rm -f "$WORK/bundle.tar"
PORT=$(free_port)
RUST_LOG=info "$LLMGW" mirror serve --store "$WORK/store" --listen "127.0.0.1:$PORT" 2>"$WORK/serve.log" &
PIDS+=($!)
URL=http://127.0.0.1:$PORT
wait_for "$URL/readyz"
FILE=model-00.safetensors

# One download by the client from an empty cache, over Xet (`hf_once 0`) or
# plain HTTP (`hf_once 1`); prints its seconds.
hf_once() {
  rm -rf "$WORK/hf" "$WORK/xet-cache"
  HF_HUB_DISABLE_XET=$1 HF_ENDPOINT=$URL HF_HOME=$WORK/hf HF_XET_CACHE=$WORK/xet-cache HF_HUB_DISABLE_TELEMETRY=1 \
    "$PY" - "$FILE" <<'EOF'
import sys, time
from huggingface_hub import hf_hub_download
t = time.perf_counter()
hf_hub_download("bench/big", sys.argv[1])
print(f"{time.perf_counter() - t:.3f}")
EOF
}

xet=$(hf_once 0)
if ! grep -q "route=xet_xorb status=20" "$WORK/serve.log"; then
  echo "bench: the client did not download over Xet; the mirror's log:" >&2
  cat "$WORK/serve.log" >&2
  exit 1
fi
plain=$(hf_once 1)
t0=$(date +%s.%N)
curl -sf -o "$WORK/curl.out" "$URL/bench/big/resolve/main/$FILE"
t1=$(date +%s.%N)
rm -f "$WORK/curl.out"
curl_s=$(python3 -c "print(f'{$t1 - $t0:.3f}')")
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$SIZE_MIB" "$xet" "$plain" "$curl_s" "$LOAD_BEFORE" "$LOAD_AFTER" <<'EOF'
import sys
mib, xet, plain, curl = int(sys.argv[1]), *map(float, sys.argv[2:5])
print(f"file: {mib} MiB; load before {sys.argv[5]}, after {sys.argv[6]}")
for name, s in (("hf over Xet", xet), ("hf over HTTP (HF_HUB_DISABLE_XET=1)", plain), ("curl", curl)):
    print(f"{name:38} {s:7.2f} s  {mib / s:7.0f} MiB/s")
print(f"Xet / HTTP (same client)  = {xet / plain:.2f}x")
print(f"Xet / curl                = {xet / curl:.2f}x")
EOF
