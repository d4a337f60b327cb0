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
#   PULL_ONLY=1 bench/models-oci.sh   the pulls alone
#   PROFILE=1 PULL_ONLY=1 bench/models-oci.sh   and where skopeo's and hf's CPU goes
#                                     (`perf record` of one more pull each; bench/hot_loop.py)
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

if [ -z "${PULL_ONLY:-}" ]; then
echo "| store                        | seconds  | bytes hashed   | RSS MiB  |"
echo "|------------------------------|---------:|---------------:|---------:|"
python3 bench/make_model_store.py "$WORK/many" files "$FILES" >/dev/null
run "$WORK/many" bench/many "$FILES files, first start"
run "$WORK/many" bench/many "$FILES files, restart"
python3 bench/make_model_store.py "$WORK/big" sparse "$SIZE" >/dev/null
run "$WORK/big" bench/big "$SIZE-byte file, first start"
run "$WORK/big" bench/big "$SIZE-byte file, restart"
fi

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
# pull NAME CMD…: runs CMD twice and keeps the faster run's wall, user and system seconds
# in $WORK/NAME.time ("wall user sys"): the clients' own CPU is what two shared cores spend
# (for ctr, the ctr process's: it fetches, and its containerd writes what it is sent).
pull() {
  local name=$1 best=""; shift
  for _ in 1 2; do
    if declare -F "fresh_$name" >/dev/null; then "fresh_$name"; fi
    /usr/bin/time -f '%e %U %S' -o "$WORK/$name.try" "$@" >/dev/null 2>"$WORK/$name.err" \
      || { cat "$WORK/$name.err" >&2; echo "bench: $name failed" >&2; exit 1; }
    rm -rf "$WORK/oci" "$WORK/hf" "$WORK/hf-home"
    if [ -z "$best" ] || awk -v a="$(cut -d' ' -f1 "$WORK/$name.try")" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$(cut -d' ' -f1 "$WORK/$name.try"); cp "$WORK/$name.try" "$WORK/$name.time"
    fi
  done
}
accept='Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json'
amd64=$(curl -sf -H "$accept" "$url/v2/models/bench/big/manifests/main" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["digest"])')
tar_layer=$(curl -sf -H "$accept" "$url/v2/models/bench/big/manifests/$amd64" | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
pull skopeo skopeo copy -q --src-tls-verify=false --dest-oci-accept-uncompressed-layers \
  "docker://127.0.0.1:$port/models/bench/big:main" "oci:$WORK/oci:main"
pull hf env HF_ENDPOINT="$url" HF_HUB_DISABLE_TELEMETRY=1 HF_HOME="$WORK/hf-home" \
  "$HF" download bench/big --local-dir "$WORK/hf"
# containerd, the client a node pulls with: `ctr content fetch` downloads every blob into its
# content store, checking each digest (no unpacking, as the others do none), from a
# containerd of the bench's own.
# fresh_ctr: a containerd with an empty content store, so each fetch downloads every byte.
fresh_ctr() {
  if [ -n "${CTD_PID:-}" ]; then kill "$CTD_PID"; wait "$CTD_PID" 2>/dev/null || true; fi
  rm -rf "$WORK/ctd"; mkdir -p "$WORK/ctd"
  printf 'version = 2\nroot = "%s/root"\nstate = "%s/state"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "%s/c.sock"\n[ttrpc]\n  address = "%s/c.sock.ttrpc"\n' \
    "$WORK/ctd" "$WORK/ctd" "$WORK/ctd" "$WORK/ctd" > "$WORK/config.toml"
  containerd --config "$WORK/config.toml" >/dev/null 2>"$WORK/containerd.log" &
  CTD_PID=$!
  PIDS+=("$CTD_PID")
  for _ in $(seq 100); do ctr --address "$WORK/ctd/c.sock" version >/dev/null 2>&1 && return; sleep 0.2; done
  echo "bench: containerd did not start: $(cat "$WORK/containerd.log")" >&2; exit 1
}
if command -v containerd >/dev/null && [ "$(id -u)" = 0 ]; then
  pull ctr ctr --address "$WORK/ctd/c.sock" content fetch --plain-http \
    "127.0.0.1:$port/models/bench/big:main"
  du -sb "$WORK/ctd/root" | awk -v n="$PULL_SIZE" '$1 < n { print "bench: containerd holds only " $1 " bytes" > "/dev/stderr"; exit 1 }'
fi
# PROFILE=1: one more pull of each under `perf record`, and where its samples fall (per
# shared object; for skopeo, whose Go build is stripped, the hottest loop of its own code and
# whether that loop is SHA-256 on the CPU's SHA extensions or in general registers).
if [ -n "${PROFILE:-}" ]; then
  command -v perf >/dev/null || { echo "bench: PROFILE=1 needs perf (apt-get install linux-perf)" >&2; exit 1; }
  echo; echo "skopeo copy, perf samples:"
  perf record -q -F 499 -o "$WORK/skopeo.perf" -- skopeo copy -q --src-tls-verify=false \
    --dest-oci-accept-uncompressed-layers "docker://127.0.0.1:$port/models/bench/big:main" \
    "oci:$WORK/oci:main" >/dev/null 2>&1
  python3 bench/hot_loop.py "$WORK/skopeo.perf" "$(command -v skopeo)"
  echo "hf download, perf samples:"
  perf record -q -F 499 -o "$WORK/hf.perf" -- env HF_ENDPOINT="$url" HF_HUB_DISABLE_TELEMETRY=1 \
    HF_HOME="$WORK/hf-home" "$HF" download bench/big --local-dir "$WORK/hf" >/dev/null 2>&1
  python3 bench/hot_loop.py "$WORK/hf.perf" -
  rm -rf "$WORK/oci" "$WORK/hf" "$WORK/hf-home" "$WORK"/*.perf
fi
# What the mirror itself sends, to /dev/null: the tar layer (headers, the stored file, the
# padding) and the same file as ModelPack's raw layer.
raw_layer=$(curl -sf -H "$accept" "$url/v2/modelpack/bench/big/manifests/main" | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
tar_speed=$(curl -sf -o /dev/null -w '%{speed_download}' "$url/v2/models/bench/big/blobs/$tar_layer")
raw_speed=$(curl -sf -o /dev/null -w '%{speed_download}' "$url/v2/modelpack/bench/big/blobs/$raw_layer")
awk -v t="$tar_speed" -v r="$raw_speed" 'BEGIN { printf "\n| curl to /dev/null | GB/s |\n|---|---:|\n| tar layer (models/) | %.3f |\n| raw layer (modelpack/) | %.3f |\n", t/1e9, r/1e9 }'
# row NAME LABEL: a table row from $WORK/NAME.time.
row() {
  [ -f "$WORK/$1.time" ] || return 0
  read -r w u y < "$WORK/$1.time"
  awk -v w="$w" -v u="$u" -v y="$y" -v n="$PULL_SIZE" -v l="$2" \
    'BEGIN { printf "| %s | %.2f | %.3f | %.2f |\n", l, w, n/w/1e9, u+y }'
}
printf '\n| pull of %s bytes (best of 2) | seconds | GB/s | client CPU s |\n|---|---:|---:|---:|\n' "$PULL_SIZE"
row skopeo "skopeo copy (image profile) to an OCI layout"
row hf "hf download"
row ctr "ctr content fetch (image profile; containerd)"
hf_s=$(cut -d' ' -f1 "$WORK/hf.time")
ratio_of() { awk -v c="$(cut -d' ' -f1 "$WORK/$1.time")" -v h="$hf_s" 'BEGIN { printf "%.2f", h/c }'; }
echo
echo "skopeo / hf speed: $(ratio_of skopeo)x (goal >= 0.9x)"
if [ -f "$WORK/ctr.time" ]; then echo "containerd / hf speed: $(ratio_of ctr)x"; fi

if [ -n "${BENCH_RESULTS:-}" ]; then
  LOAD="$LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)"
  speed() { awk -v n="$PULL_SIZE" -v s="$(cut -d' ' -f1 "$WORK/$1.time")" 'BEGIN { printf "%.3f", n/s/1e9 }'; }
  {
    for l in "${LINES[@]}"; do printf '%s\t%s\n' "$l" "$LOAD"; done
    for c in skopeo ctr; do
      [ -f "$WORK/$c.time" ] || continue
      r=$(ratio_of "$c")
      printf 'models-oci\tpull %s bytes: %s of the image vs hf download\t%s GB/s\t%s GB/s\t%s\t>= 0.90\t\t%s\t%s\n' \
        "$PULL_SIZE" "$c" "$(speed "$c")" "$(speed hf)" "$r" \
        "$(awk -v r="$r" 'BEGIN { print (r >= 0.9) ? "met" : "MISSED" }')" "$LOAD"
    done
  } >> "$BENCH_RESULTS"
fi
