#!/usr/bin/env bash
# Models as OCI (issue 31): how long `llmgw mirror serve` takes to serve a repository's
# ModelPack artifact and its mountable image from the first start (index build, and each
# file hashed once for its tar layer's digest), and from a restart (digests read back from
# STORE/state/model-layers.json: nothing hashed), with the server's peak RSS, for
#   many: one repository of $FILES small files (default 5000);
#   big:  one repository of one $SIZE-byte file (default 5 GiB), sparse on disk.
# Uses the dev build (its dependencies optimized, as the workspace profile says).
#
#   bench/models-oci.sh            FILES=5000 SIZE=5368709120
#
# With BENCH_RESULTS=FILE, one tab-separated line per figure is appended to FILE
# (bench/all.sh reads them).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
FILES=${FILES:-5000}
SIZE=${SIZE:-5368709120}
cargo build --locked -q --bin llmgw
BIN=${CARGO_TARGET_DIR:-target}/debug/llmgw
bench_start models-oci
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
LINES=()

# run STORE NAME LABEL: starts the server, times until the image's manifest answers, prints
# a table row with the seconds, the bytes hashed and the peak RSS, stops the server.
run() {
  local store=$1 name=$2 label=$3 port start end pid url hashed rss
  port=$(free_port)
  url="http://127.0.0.1:$port"
  start=$(date +%s.%N)
  "$BIN" mirror serve --store "$store" --listen "127.0.0.1:$port" >/dev/null 2>"$WORK/$label.log" &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 6000); do
    curl -sf -o /dev/null "$url/v2/models/$name/manifests/main" && break
    sleep 0.05
  done
  curl -sf -o /dev/null "$url/v2/models/$name/manifests/main" || { echo "bench: $label never served its image" >&2; exit 1; }
  end=$(date +%s.%N)
  curl -sf -o /dev/null "$url/v2/modelpack/$name/manifests/main"
  hashed=$(curl -sf "$url/metrics" | awk '/^llmgw_mirror_model_layer_hashed_bytes_total /{print $2}')
  rss=$(awk '/VmHWM/{printf "%.1f", $2/1024}' "/proc/$pid/status")
  printf '| %-28s | %8.2f | %14s | %8s |\n' "$label" "$(echo "$end - $start" | bc)" "$hashed" "$rss"
  LINES+=("$(printf 'models-oci\t%s: until the image is served (%s bytes hashed)\t%.2f s\t\t\t\t%s\t' "$label" "$hashed" "$(echo "$end - $start" | bc)" "$rss")")
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "| store                        | seconds  | bytes hashed   | RSS MiB  |"
echo "|------------------------------|---------:|---------------:|---------:|"
python3 bench/make_model_store.py "$WORK/many" files "$FILES" >/dev/null
run "$WORK/many" bench/many "$FILES files, first start"
run "$WORK/many" bench/many "$FILES files, restart"
python3 bench/make_model_store.py "$WORK/big" sparse "$SIZE" >/dev/null
run "$WORK/big" bench/big "$SIZE-byte file, first start"
run "$WORK/big" bench/big "$SIZE-byte file, restart"

# Pulling: the image profile of a $PULL_SIZE-byte model (default 2 GiB) with `skopeo copy`
# vs `hf download` of the same repository from the same mirror (goal: skopeo >= 0.9x hf's
# speed). Both write every byte to $WORK; the file is sparse in the store (page cache hot).
PULL_SIZE=${PULL_SIZE:-2147483648}
HF=${LLMGW_VENV:-$PWD/.venv}/bin/hf
[ -x "$HF" ] || { echo "bench: $HF missing: run scripts/setup.sh or set LLMGW_VENV" >&2; exit 1; }
python3 bench/make_model_store.py "$WORK/pull" sparse "$PULL_SIZE" >/dev/null
port=$(free_port)
url="http://127.0.0.1:$port"
"$BIN" mirror serve --store "$WORK/pull" --listen "127.0.0.1:$port" >/dev/null 2>"$WORK/pull.log" &
PIDS+=($!)
for _ in $(seq 6000); do curl -sf -o /dev/null "$url/v2/models/bench/big/manifests/main" && break; sleep 0.05; done
t0=$(date +%s.%N)
skopeo copy -q --src-tls-verify=false --dest-oci-accept-uncompressed-layers \
  "docker://127.0.0.1:$port/models/bench/big:main" "oci:$WORK/oci:main"
t1=$(date +%s.%N)
rm -rf "$WORK/oci"
HF_ENDPOINT=$url HF_HUB_DISABLE_TELEMETRY=1 HF_HOME=$WORK/hf-home "$HF" download bench/big --local-dir "$WORK/hf" >/dev/null 2>&1
t2=$(date +%s.%N)
rm -rf "$WORK/hf" "$WORK/hf-home"
# What the mirror itself sends, to /dev/null: the tar layer (headers, the stored file, the
# padding) and the same file as ModelPack's raw layer.
accept='Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json'
amd64=$(curl -sf -H "$accept" "$url/v2/models/bench/big/manifests/main" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["digest"])')
tar_layer=$(curl -sf -H "$accept" "$url/v2/models/bench/big/manifests/$amd64" | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
raw_layer=$(curl -sf -H "$accept" "$url/v2/modelpack/bench/big/manifests/main" | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
tar_speed=$(curl -sf -o /dev/null -w '%{speed_download}' "$url/v2/models/bench/big/blobs/$tar_layer")
raw_speed=$(curl -sf -o /dev/null -w '%{speed_download}' "$url/v2/modelpack/bench/big/blobs/$raw_layer")
awk -v t="$tar_speed" -v r="$raw_speed" 'BEGIN { printf "\n| curl to /dev/null | GB/s |\n|---|---:|\n| tar layer (models/) | %.3f |\n| raw layer (modelpack/) | %.3f |\n", t/1e9, r/1e9 }'
awk -v s="$(echo "$t1 - $t0" | bc)" -v h="$(echo "$t2 - $t1" | bc)" -v n="$PULL_SIZE" 'BEGIN {
  printf "\n| pull of %s bytes | seconds | GB/s |\n|---|---:|---:|\n", n
  printf "| skopeo copy (image profile) | %.2f | %.3f |\n| hf download | %.2f | %.3f |\n", s, n/s/1e9, h, n/h/1e9
  printf "\nskopeo / hf speed: %.2fx (goal >= 0.9x)\n", h/s }'

if [ -n "${BENCH_RESULTS:-}" ]; then
  LOAD="$LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)"
  s=$(echo "$t1 - $t0" | bc); h=$(echo "$t2 - $t1" | bc)
  ratio=$(awk -v s="$s" -v h="$h" 'BEGIN { printf "%.2f", h/s }')
  verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.9) ? "met" : "MISSED" }')
  {
    for l in "${LINES[@]}"; do printf '%s\t%s\n' "$l" "$LOAD"; done
    printf 'models-oci\tpull %s bytes: skopeo copy of the image vs hf download\t%s GB/s\t%s GB/s\t%s\t>= 0.90\t\t%s\t%s\n' \
      "$PULL_SIZE" "$(awk -v n="$PULL_SIZE" -v s="$s" 'BEGIN { printf "%.3f", n/s/1e9 }')" \
      "$(awk -v n="$PULL_SIZE" -v h="$h" 'BEGIN { printf "%.3f", n/h/1e9 }')" "$ratio" "$verdict" "$LOAD"
  } >> "$BENCH_RESULTS"
fi
