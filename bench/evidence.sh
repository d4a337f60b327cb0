#!/usr/bin/env bash
# What publishers' signatures (#49) add to `bundle create` and `bundle import`: the demo's
# request (llmgw's signed release, model acme/tiny, dataset acme/data) with llama.cpp
# b6300, whose x64 CPU archive is the subject of a real GitHub Actions attestation
# (testdata/sigstore), each BENCH_RUNS times from a cold cache, two ways against the same
# bytes:
#   with     the fixture's GitHub lists the attestation and `--identity` admits its signer:
#            create fetches it, verifies it offline and carries it (format 7); import
#            verifies it again;
#   without  the fixture's GitHub lists none (its API answers 404, as for a release made
#            before attestations): create asks, finds none, and carries nothing.
# The reference is the `without` run in the same script; the figures are the `with` run's
# times as a ratio of it (goal: <= 1.1x for create and for import). The median of
# BENCH_RUNS runs; the load average is printed before and after.
#
#   bench/evidence.sh                 # 5 runs each, the debug build the tests use
#   BENCH_PROFILE=release bench/evidence.sh
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
bench_start evidence

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
signer=$(grep -m1 -o 'https://github.com/prefix-dev/[^"]*' fixture/src/catalog/attested.rs)
now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A create_s import_s
for way in with without; do
  fixture_flag=--attested
  [ "$way" = without ] && fixture_flag=--attested-unlisted
  mkfifo "$WORK/fixture-$way.out"
  "$target/llmgw-fixture" "$fixture_flag" >"$WORK/fixture-$way.out" 2>"$WORK/fixture-$way.log" &
  PIDS+=("$!")
  read -r FX <"$WORK/fixture-$way.out"
  fx() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$FX" "$1"; }
  identity=()
  [ "$way" = with ] && identity=(--identity "github:ggml-org/llama.cpp=https://token.actions.githubusercontent.com,$signer")
  creates=() imports=()
  for run in $(seq "$runs"); do
    rm -rf "$WORK/cache" "$WORK/site.tar.zst" "$WORK/site.tar.zst.sha256" "$WORK/store"
    t0=$(now)
    env -u HF_TOKEN -u HF_ENDPOINT RUST_LOG=warn "$target/llmgw" bundle create --arch amd64 \
      --github-api "$(fx github_api)" --hf-endpoint "$(fx hf_endpoint)" \
      --llmgw v0.5.0 --llmgw-api "$(fx llmgw_api)" --trust "$(fx trust_key)" \
      --engine llamacpp=b6300 --allow-missing --model acme/tiny@main --dataset acme/data \
      "${identity[@]}" --cache "$WORK/cache" --out "$WORK/site.tar.zst" >/dev/null 2>"$WORK/create.err" \
      || { cat "$WORK/create.err" >&2; exit 1; }
    t1=$(now)
    "$target/llmgw" bundle trust add "$(fx trust_key)" --store "$WORK/store" >/dev/null
    "$target/llmgw" bundle import "$WORK/site.tar.zst" --sha256 "$WORK/site.tar.zst.sha256" \
      --store "$WORK/store" >"$WORK/import.out" 2>"$WORK/import.err" \
      || { cat "$WORK/import.out" "$WORK/import.err" >&2; exit 1; }
    t2=$(now)
    creates+=("$(echo "$t1 - $t0" | bc)")
    imports+=("$(echo "$t2 - $t1" | bc)")
    said=$(grep -o "[0-9]* publisher[^;]*verified again[^;]*" "$WORK/import.out" || echo "no publisher signature")
    echo "$way run $run: create ${creates[-1]} s, import ${imports[-1]} s ($said)"
  done
  create_s[$way]=$(median "${creates[@]}")
  import_s[$way]=$(median "${imports[@]}")
  echo "$way median: create ${create_s[$way]} s, import ${import_s[$way]} s ($profile build)"
done
echo "with / without: create $(echo "scale=3; ${create_s[with]} / ${create_s[without]}" | bc)x, import $(echo "scale=3; ${import_s[with]} / ${import_s[without]}" | bc)x (goal <= 1.1x each)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
