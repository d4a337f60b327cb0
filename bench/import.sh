#!/usr/bin/env bash
# Benchmark: `llmgw bundle import` of a bundle holding N files of MIB MiB
# (default 3 x 256 MiB of random bytes, as a plain .tar) against
#   A) `tar -xf` followed by `sha256sum` of every file (two passes), and
#   B) `tar -xf` alone (one pass, no checking at all).
# Goals (issue 6): import <= 0.6x A and <= 1.2x B.
# And C) the same import of a bundle whose files are plain git files instead of LFS
# files (same sizes, random bytes): import checks and stores them alike but makes no Xet
# record for them, so import / C is what the Xet pass costs (goal, issue 48: <= 1.25x).
#
# Every command reads the same tar from the page cache and writes to the same
# filesystem. Import also fsyncs every file and directory (tar does not), so B
# is also shown followed by `sync`, for reference. Each timing is the median
# of RUNS runs; dirty pages are flushed (outside the timing) before each.
#
#   bench/import.sh                 # defaults
#   N=3 MIB=512 RUNS=5 bench/import.sh
#   BENCH_DIR=/var/tmp bench/import.sh   # where the data goes (needs ~4x N*MIB free)
#   LLMGW=/path/to/llmgw bench/import.sh  # measure that binary (another commit's build)
# Import's peak RSS (GNU time's %M) is printed too; with BENCH_RESULTS=FILE, one
# tab-separated line per figure is appended to FILE (bench/all.sh reads them).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-3}
MIB=${MIB:-256}
RUNS=${RUNS:-3}

if [ -z "${LLMGW:-}" ]; then  # LLMGW=PATH: measure that binary instead
  cargo build --release --locked -q -p llmgw
  LLMGW=${CARGO_TARGET_DIR:-$PWD/target}/release/llmgw
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

work=$(mktemp -d "${BENCH_DIR:-/tmp}/llmgw-import-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "making a bundle of $N files of $MIB MiB in $work"
manifest_sha=$(python3 bench/make_bundle.py "$work" "$N" "$MIB")
mkdir -p "$work/git"
git_sha=$(python3 bench/make_bundle.py "$work/git" "$N" "$MIB" git)
bytes=$((N * MIB * 1024 * 1024))

# time_it NAME PREPARE COMMAND: median wall seconds of RUNS runs of COMMAND,
# each after PREPARE (untimed) and a sync.
declare -A result
time_it() {
  local name=$1 prepare=$2 cmd=$3 t=()
  for _ in $(seq 1 "$RUNS"); do
    bash -c "$prepare"
    sync
    cat "$work/bundle.tar" > /dev/null   # the bundle in the page cache, as for every contender
    local start end
    start=$(date +%s.%N)
    bash -c "$cmd" > /dev/null
    end=$(date +%s.%N)
    t+=("$(python3 -c "print(f'{$end - $start:.3f}')")")
  done
  result[$name]=$(printf '%s\n' "${t[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
  printf '%-34s %8.3f s  (runs: %s)\n' "$name" "${result[$name]}" "${t[*]}"
}

out=$work/out
store=$work/store
time_it "llmgw bundle import" "rm -rf '$store'" \
  "/usr/bin/time -f '%M' -o '$work/rss' '$LLMGW' bundle import '$work/bundle.tar' --sha256 $manifest_sha --store '$store' 2>'$work/import.log'"
time_it "import, no Xet records (C)" "rm -rf '$store'; cat '$work/git/bundle.tar' > /dev/null" \
  "'$LLMGW' bundle import '$work/git/bundle.tar' --sha256 $git_sha --store '$store' 2>'$work/import-git.log'"
time_it "tar -xf + sha256sum (A)" "rm -rf '$out'; mkdir -p '$out'" \
  "tar -xf '$work/bundle.tar' -C '$out' && sha256sum '$out'/blobs/sha256/*"
time_it "tar -xf (B)" "rm -rf '$out'; mkdir -p '$out'" \
  "tar -xf '$work/bundle.tar' -C '$out'"
time_it "tar -xf + sync (reference)" "rm -rf '$out'; mkdir -p '$out'" \
  "tar -xf '$work/bundle.tar' -C '$out' && sync"

python3 - "${result[llmgw bundle import]}" "${result[tar -xf + sha256sum (A)]}" \
  "${result[tar -xf (B)]}" "${result[tar -xf + sync (reference)]}" "$bytes" "$(tail -1 "$work/rss")" \
  "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "${BENCH_RESULTS:-}" \
  "${result[import, no Xet records (C)]}" <<'PY'
import sys
imp, a, b, bs, n, rss = map(float, sys.argv[1:7])
load_before, load_after, results_file = sys.argv[7:10]
c = float(sys.argv[10])
print(f"bundle: {int(n) >> 20} MiB; import {n / imp / 2**20:.0f} MiB/s; import peak RSS "
      f"{rss / 1024:.1f} MiB; load average {load_before} before, {load_after} after")
if results_file:
    load = f"{load_before} / {load_after}"
    ok = lambda r, g: "met" if r <= g else "MISSED"
    with open(results_file, "a") as f:
        f.write(f"import\tvs tar -xf + sha256sum\t{imp:.3f} s\t{a:.3f} s\t{imp / a:.2f}\t<= 0.60\t{rss / 1024:.1f}\t{ok(imp / a, 0.6)}\t{load}\n")
        f.write(f"import\tvs tar -xf\t{imp:.3f} s\t{b:.3f} s\t{imp / b:.2f}\t<= 1.20\t{rss / 1024:.1f}\t{ok(imp / b, 1.2)}\t{load}\n")
        f.write(f"import\tvs without the Xet pass\t{imp:.3f} s\t{c:.3f} s\t{imp / c:.2f}\t<= 1.25\t{rss / 1024:.1f}\t{ok(imp / c, 1.25)}\t{load}\n")
print(f"import / (tar -xf + sha256sum) = {imp / a:.2f}x  (goal <= 0.60x) {'MET' if imp / a <= 0.6 else 'MISSED'}")
print(f"import / tar -xf                = {imp / b:.2f}x  (goal <= 1.20x) {'MET' if imp / b <= 1.2 else 'MISSED'}")
print(f"import / (tar -xf + sync)       = {imp / bs:.2f}x  (reference: tar with the durability import has)")
print(f"import / import without Xet     = {imp / c:.2f}x  (goal <= 1.25x) {'MET' if imp / c <= 1.25 else 'MISSED'}")
PY
