#!/usr/bin/env bash
# Benchmark: a newcomer's first run (#34) — the wall time from a fresh
# `git clone` of this checkout to the demo's last line, with an empty cargo
# registry cache (CARGO_HOME in a temp folder), so crates are downloaded and
# everything is built from nothing. Debian packages already installed are
# not downloaded again (a fresh machine would also fetch those).
# Goal: under 15 minutes on 2 cores.
#
#   bench/fresh-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=$(mktemp -d /tmp/llmgw-fresh.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
git clone -q "$PWD" "$WORK/clone"
mkdir "$WORK/cargo"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
(cd "$WORK/clone" && CARGO_HOME="$WORK/cargo" PATH="$HOME/.cargo/bin:$PATH" scripts/demo.sh) \
  >"$WORK/demo.log" 2>&1 || { tail -20 "$WORK/demo.log" >&2; exit 1; }
t1=$(date +%s)
tail -1 "$WORK/demo.log"
echo "fresh clone to the demo's last line: $(( (t1 - t0) / 60 )) min $(( (t1 - t0) % 60 )) s (goal: under 15 min)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
