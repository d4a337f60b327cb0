#!/usr/bin/env bash
# What `bundle create --rehearse` adds to `bundle create`, for two bundles made from the
# fixture upstream, each BENCH_RUNS times from a cold cache and followed by
# `llmgw bundle rehearse` of what it wrote (a throwaway store, the import, the mirror on a
# private loopback, every request a node makes):
#   demo  llmgw's signed release, llama.cpp b6123, model acme/tiny, dataset acme/data;
#   vllm  vLLM's cu13 environment (the nodes' own CPython 3.12, the runtime extras left
#         out), whose rehearsal makes a venv and runs `uv pip install --dry-run` from the
#         index and from the lock (uv and CPython 3.12 from this machine).
# The reference is create's own time in the same run; the figure is the rehearsal's time as
# a share of it (goal for the demo bundle: <= 20%). The median of BENCH_RUNS runs; the
# load average is printed before and after.
#
#   bench/rehearse.sh                 # 5 runs each, the debug build the tests use
#   BENCH_PROFILE=release bench/rehearse.sh
#   BENCH_CASES=demo bench/rehearse.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

runs=${BENCH_RUNS:-5}
profile=${BENCH_PROFILE:-debug}
cases=${BENCH_CASES:-demo vllm}
flag=()
[ "$profile" = release ] && flag=(--release)
cargo build "${flag[@]}" --locked --quiet -p llmgw -p llmgw-fixture
target=${CARGO_TARGET_DIR:-$PWD/target}/$profile
venv_py=${LLMGW_VENV_PY:-$PWD/.venv-py}
uv_dir="$venv_py/bin"
# CPython 3.12 for the nodes' own interpreter: pyenv's when there is one (its shim answers
# only for the version selected), else python3.12 on PATH.
py312_exe=$(PYENV_VERSION=3.12 python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null ||
  python3.12 -c 'import sys; print(sys.executable)') ||
  { echo "bench/rehearse.sh: the vllm case needs CPython 3.12 (python3.12)" >&2; exit 1; }
py312=$(dirname "$py312_exe")
bench_start rehearse

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
mkfifo "$WORK/fixture.out"
"$target/llmgw-fixture" >"$WORK/fixture.out" 2>"$WORK/fixture.log" &
PIDS+=("$!")
read -r FX <"$WORK/fixture.out"
fx() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$FX" "$1"; }
vllm=$(grep -o 'pub const VLLM_VERSION: &str = "[^"]*"' fixture/src/packages/mod.rs | cut -d'"' -f2)

# The request of each case, after `bundle create --arch amd64`.
request() {
  case $1 in
    demo) echo --github-api "$(fx github_api)" --hf-endpoint "$(fx hf_endpoint)" \
      --llmgw v0.5.0 --llmgw-api "$(fx llmgw_api)" --trust "$(fx trust_key)" \
      --engine llamacpp=b6123 --model acme/tiny@main --dataset acme/data ;;
    vllm) echo --github-api "$(fx github_api)" --github-raw "$(fx raw_github)" \
      --pypi "$(fx pypi_simple)" --uv "$uv_dir/uv" --engine "vllm=$vllm:cu13" \
      --python-interpreter none --no-extras ;;
  esac
}

now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for case in $cases; do
  creates=() rehearsals=()
  read -ra req <<<"$(request "$case")"
  trust=()
  [ "$case" = demo ] && trust=(--trust "$(fx trust_key)")
  for run in $(seq "$runs"); do
    rm -rf "$WORK/cache" "$WORK/site.tar.zst" "$WORK/site.tar.zst.sha256"
    t0=$(now)
    env -u HF_TOKEN -u HF_ENDPOINT RUST_LOG=warn "$target/llmgw" bundle create --arch amd64 \
      "${req[@]}" --cache "$WORK/cache" --out "$WORK/site.tar.zst" >/dev/null 2>"$WORK/create.err" \
      || { cat "$WORK/create.err" >&2; exit 1; }
    t1=$(now)
    PATH="$uv_dir:$py312:$PATH" "$target/llmgw" bundle rehearse "$WORK/site.tar.zst" \
      --sha256 "$WORK/site.tar.zst.sha256" "${trust[@]}" >"$WORK/rehearse.out" 2>"$WORK/rehearse.err" \
      || { cat "$WORK/rehearse.out" "$WORK/rehearse.err" >&2; exit 1; }
    t2=$(now)
    creates+=("$(echo "$t1 - $t0" | bc)")
    rehearsals+=("$(echo "$t2 - $t1" | bc)")
    echo "$case run $run: create ${creates[-1]} s, rehearse ${rehearsals[-1]} s ($(tail -n1 "$WORK/rehearse.out"))"
  done
  c=$(median "${creates[@]}")
  r=$(median "${rehearsals[@]}")
  echo "$case: bundle size $(stat -c %s "$WORK/site.tar.zst") bytes ($profile build)"
  echo "$case median: create $c s, rehearse $r s; the rehearsal adds $(echo "scale=1; 100 * $r / $c" | bc)% of create's time"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
