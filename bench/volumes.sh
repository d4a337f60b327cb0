#!/usr/bin/env bash
# Benchmark: `llmgw bundle import` of a bundle written as 3 volumes
# (--volume-size, chunks cut across volumes) against the same content as one
# plain .tar. Goal (issue 13): volumes <= 1.1x the single tar.
#
# The fixture upstream serves model acme/big: FILES LFS files of MIB MiB of random
# bytes. `bundle create` makes both the .tar and the volume set from it (same
# manifest content, same blobs); each import goes into a fresh store, reading its
# input from the page cache. Each timing is the median of RUNS runs, with dirty
# pages flushed (untimed) before each.
#
#   bench/volumes.sh                    # 3 x 256 MiB
#   FILES=3 MIB=512 RUNS=5 bench/volumes.sh
#   TMPDIR=/var/tmp bench/volumes.sh    # where the data goes (needs ~6x FILES*MIB free)
# With BENCH_RESULTS=FILE, one tab-separated line is appended to FILE (bench/all.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
files=${FILES:-3}
mib=${MIB:-256}
RUNS=${RUNS:-3}

cargo build --release --locked --quiet --bin llmgw -p llmgw
cargo build --release --locked --quiet --bin llmgw-fixture -p llmgw-fixture
target=${CARGO_TARGET_DIR:-$PWD/target}
llmgw=$target/release/llmgw
fixture=$target/release/llmgw-fixture
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

work=$(mktemp -d "${TMPDIR:-/var/tmp}/llmgw-bench-volumes.XXXXXX")
fx_pid=""
cleanup() {
  if [ -n "$fx_pid" ]; then kill "$fx_pid" 2>/dev/null || true; wait "$fx_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$fixture" --data-dir "$work/data" --big-files "$files" --big-mib "$mib" >"$work/fx.json" 2>"$work/fx.err" &
fx_pid=$!
for _ in $(seq 1 600); do
  [ -s "$work/fx.json" ] && break
  kill -0 "$fx_pid" 2>/dev/null || { cat "$work/fx.err"; exit 1; }
  sleep 0.5
done
hf=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hf_endpoint"])' "$work/fx.json")

# Three volumes of a third of the content each (plus room for the manifest and
# headers), with chunks of a quarter file, so every file is cut across volumes.
bytes=$((files * mib * 1024 * 1024))
vsize=$((bytes / 3 + 4 * 1024 * 1024))
chunk=$((mib * 1024 * 1024 / 4))
make() { # OUT [FLAGS]
  local out=$1
  shift
  SOURCE_DATE_EPOCH=1700000000 "$llmgw" bundle create --out "$out" --arch amd64 \
    --model acme/big --hf-endpoint "$hf" --cache "$work/cache" "$@" >/dev/null 2>"$work/create.log" \
    || { cat "$work/create.log"; exit 1; }
}
echo "making acme/big ($files x $mib MiB) as one .tar and as volumes of $vsize bytes in $work"
mkdir -p "$work/one" "$work/vol"
make "$work/one/site.tar"
make "$work/vol/site.tar" --volume-size "$vsize" --chunk-size "$chunk"
rm -rf "$work/cache" "$work/data"
kill "$fx_pid" 2>/dev/null || true
wait "$fx_pid" 2>/dev/null || true
fx_pid=""
nvol=$(find "$work/vol" -name "site.v*.tar" | wc -l)
[ "$nvol" -eq 3 ] || { echo "bench: expected 3 volumes, got $nvol" >&2; ls -l "$work/vol" >&2; exit 1; }

declare -A result
time_it() { # NAME INPUTS COMMAND
  local name=$1 inputs=$2 cmd=$3 t=()
  for _ in $(seq 1 "$RUNS"); do
    rm -rf "$work/store"
    sync
    # shellcheck disable=SC2086 # a glob of volumes, meant to split
    cat $inputs > /dev/null
    local start end
    start=$(date +%s.%N)
    bash -c "$cmd" > /dev/null
    end=$(date +%s.%N)
    t+=("$(python3 -c "print(f'{$end - $start:.3f}')")")
  done
  result[$name]=$(printf '%s\n' "${t[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
  printf '%-32s %8.3f s  (runs: %s)\n' "$name" "${result[$name]}" "${t[*]}"
}

time_it "import one .tar" "$work/one/site.tar" \
  "'$llmgw' bundle import '$work/one/site.tar' --sha256 '$work/one/site.tar.sha256' --store '$work/store' 2>'$work/import.log'"
time_it "import 3 volumes" "$work/vol/site.v*.tar" \
  "/usr/bin/time -f '%M' -o '$work/rss' '$llmgw' bundle import $work/vol/site.v*.tar --sha256 '$work/vol/site.sha256' --store '$work/store' 2>'$work/import.log'"

python3 - "${result[import 3 volumes]}" "${result[import one .tar]}" "$bytes" "$(tail -1 "$work/rss")" \
  "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "${BENCH_RESULTS:-}" <<'PY'
import sys
vol, one, n, rss = map(float, sys.argv[1:5])
load_before, load_after, results_file = sys.argv[5:8]
r = vol / one
print(f"content: {int(n) >> 20} MiB; volumes {n / vol / 2**20:.0f} MiB/s, one tar {n / one / 2**20:.0f} MiB/s; "
      f"volume import peak RSS {rss / 1024:.1f} MiB; load average {load_before} before, {load_after} after")
if results_file:
    with open(results_file, "a") as f:
        f.write(f"volumes\timport 3 volumes vs one .tar\t{vol:.3f} s\t{one:.3f} s\t{r:.2f}\t<= 1.10\t"
                f"{rss / 1024:.1f}\t{'met' if r <= 1.1 else 'MISSED'}\t{load_before} / {load_after}\n")
print(f"import of 3 volumes / import of one .tar = {r:.2f}x  (goal <= 1.10x) {'MET' if r <= 1.1 else 'MISSED'}")
PY
