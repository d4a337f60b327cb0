#!/usr/bin/env bash
# Every benchmark in one command, one table: bundle create (.tar, .tar.zst and a
# directory, against curl and `hf download` of the same repository from the same
# upstream), bundle import (against tar -xf, with and without sha256sum), import of
# volumes (against the same content as one .tar), mirror serve (against nginx), a 2 GiB
# container image (skopeo from the mirror against docker-registry, and create against
# skopeo copy from the same upstream; mirror push against skopeo copy into a registry), a Python
# environment installed by uv (against nginx) and a 64-client soak, each with its peak
# RSS and the load average before / after.
#
#   bench/all.sh                          # the defaults of each script
#   BENCH_RUNS=5 RUNS=5 DURATION=10 bench/all.sh
#
# Each script's own output goes to stderr as it runs; the table goes to stdout, in
# Markdown, ready for bench/RESULTS.md. The ratios compare runs made in the same
# script minutes apart; on a shared machine, read them with the load beside them.
set -euo pipefail
cd "$(dirname "$0")/.."

results=$(mktemp "${TMPDIR:-/tmp}/llmgw-bench-all.XXXXXX")
trap 'rm -f "$results"' EXIT
export BENCH_RESULTS=$results

echo "== bench/create.sh" >&2
bench/create.sh >&2
echo "== bench/import.sh" >&2
bench/import.sh >&2
echo "== bench/volumes.sh" >&2
bench/volumes.sh >&2
echo "== bench/serve.sh" >&2
bench/serve.sh >&2
echo "== bench/oci.sh" >&2
bench/oci.sh >&2
echo "== bench/push.sh" >&2
bench/push.sh >&2
echo "== bench/pyinstall.sh" >&2
bench/pyinstall.sh >&2
echo "== bench/models-oci.sh" >&2
bench/models-oci.sh >&2
echo "== bench/soak.sh" >&2
bench/soak.sh >&2 || true   # its line says MISSED; the table is still printed

echo
echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), $(nproc) cores"
echo
echo "| bench | measure | llmgw | reference | ratio | goal | peak RSS (MiB) | | load average (before / after) |"
echo "|---|---|--:|--:|--:|---|--:|---|---|"
# awk, not `read`: a tab is white space to `read`, which folds an empty field (a figure
# with no RSS) into the next and shifts the row.
awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$results"
