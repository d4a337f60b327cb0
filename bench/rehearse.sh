#!/usr/bin/env bash
# What `bundle create --rehearse` adds to `bundle create`: the demo's bundle (llmgw's
# signed release, llama.cpp b6123, model acme/tiny, dataset acme/data from the fixture
# upstream), made BENCH_RUNS times from a cold cache, each followed by
# `llmgw bundle rehearse` of what it wrote (a throwaway store, the import, the mirror on a
# private loopback, every request a node makes). The reference is create's own time in
# the same run; the figure is the rehearsal's time as a share of it (goal: <= 20%).
# The median of BENCH_RUNS runs; the load average is printed before and after.
#
#   bench/rehearse.sh                 # 5 runs, the debug build the tests use
#   BENCH_PROFILE=release bench/rehearse.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

runs=${BENCH_RUNS:-5}
profile=${BENCH_PROFILE:-debug}
flag=()
[ "$profile" = release ] && flag=(--release)
cargo build "${flag[@]}" --locked --quiet -p llmgw -p llmgw-fixture
target=${CARGO_TARGET_DIR:-$PWD/target}/$profile
bench_start rehearse

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
mkfifo "$WORK/fixture.out"
"$target/llmgw-fixture" >"$WORK/fixture.out" 2>"$WORK/fixture.log" &
PIDS+=("$!")
read -r FX <"$WORK/fixture.out"
fx() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$FX" "$1"; }

now() { date +%s.%N; }
creates=() rehearsals=()
for run in $(seq "$runs"); do
  rm -rf "$WORK/cache" "$WORK/site.tar.zst" "$WORK/site.tar.zst.sha256"
  t0=$(now)
  env -u HF_TOKEN -u HF_ENDPOINT RUST_LOG=warn "$target/llmgw" bundle create \
    --arch amd64 \
    --github-api "$(fx github_api)" --hf-endpoint "$(fx hf_endpoint)" \
    --llmgw v0.5.0 --llmgw-api "$(fx llmgw_api)" --trust "$(fx trust_key)" \
    --engine llamacpp=b6123 --model acme/tiny@main --dataset acme/data \
    --cache "$WORK/cache" --out "$WORK/site.tar.zst" >/dev/null 2>"$WORK/create.err"
  t1=$(now)
  "$target/llmgw" bundle rehearse "$WORK/site.tar.zst" --sha256 "$WORK/site.tar.zst.sha256" \
    --trust "$(fx trust_key)" >"$WORK/rehearse.out" 2>"$WORK/rehearse.err"
  t2=$(now)
  creates+=("$(echo "$t1 - $t0" | bc)")
  rehearsals+=("$(echo "$t2 - $t1" | bc)")
  echo "run $run: create ${creates[-1]} s, rehearse ${rehearsals[-1]} s ($(tail -n1 "$WORK/rehearse.out"))"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
c=$(median "${creates[@]}")
r=$(median "${rehearsals[@]}")
echo "bundle size: $(stat -c %s "$WORK/site.tar.zst") bytes ($profile build)"
echo "median: create $c s, rehearse $r s; the rehearsal adds $(echo "scale=1; 100 * $r / $c" | bc)% of create's time (goal <= 20%)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
