#!/usr/bin/env bash
# The store at scale (issue 35): what the mirror costs as the store grows, measured on
#   many: one repository of $FILES small files (default 100 000) in one bundle;
#   revs: $REVS bundles (default 200), each one commit of a 200-file model, 10 % of its
#         files new at each commit (revisions sharing 90 % of their files).
# For each store: the time from start to ready (the index build), RSS once settled (the
# models' tar layers hashed, issue 31) against an empty store's, in bytes per file held at a commit and per distinct file, the first page of
# the recursive tree listing; and the import of one small bundle (1 file of 1 MiB) into the
# store against into an empty store (time and peak RSS: the claims check's cost).
# Uses the dev build (its dependencies optimized, as the workspace profile says).
#
#   bench/store-scale.sh            FILES=100000 REVS=200
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
FILES=${FILES:-100000}
REVS=${REVS:-200}
cargo build --locked -q --bin llmgw
BIN=$PWD/${CARGO_TARGET_DIR:-target}/debug/llmgw
bench_start store-scale
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# ready STORE: starts the server, prints "seconds-to-ready rss-kib url", leaves it running.
ready() {
  local port start pid
  port=$(free_port)
  start=$(date +%s.%N)
  "$BIN" mirror serve --store "$1" --listen "127.0.0.1:$port" >"$WORK/serve-$port.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 3000); do
    case "$(curl -s "http://127.0.0.1:$port/readyz" || true)" in ready:*) break ;; esac
    sleep 0.05
  done
  local end
  end=$(date +%s.%N)
  sleep 1 # the freed build heap is given back after the swap
  echo "$(echo "$end - $start" | bc) $(awk '/VmRSS/{print $2}' "/proc/$pid/status") http://127.0.0.1:$port $pid"
}

# import_small STORE: prints "seconds peak-rss-kib" of importing the small bundle.
# The stores are written by make_model_store.py, as by an llmgw before the claims names
# files (#35 item 4): the first import reads every held manifest once and records their
# names. So the small bundle is imported, removed and its blob collected first, and the
# second import, as every import after the first, is the one timed.
import_small() {
  local start end
  "$BIN" bundle import "$WORK/small/bundle.tar" --sha256 "$SMALL_SHA" --store "$1" >/dev/null 2>&1
  "$BIN" mirror remove --store "$1" "$SMALL_SHA" >/dev/null 2>&1
  "$BIN" mirror gc --store "$1" >/dev/null 2>&1
  start=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$WORK/rss" "$BIN" bundle import "$WORK/small/bundle.tar" \
    --sha256 "$SMALL_SHA" --store "$1" >/dev/null 2>"$WORK/import.log"
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc) $(cat "$WORK/rss")"
}

mkdir -p "$WORK/small"
SMALL_SHA=$(python3 bench/make_bundle.py "$WORK/small" 1 1)
python3 bench/make_model_store.py "$WORK/empty" files 1 >/dev/null
python3 bench/make_model_store.py "$WORK/many" files "$FILES" >/dev/null
python3 bench/make_model_store.py "$WORK/revs" revisions "$REVS" >/dev/null

read -r _ base_rss _ base_pid < <(ready "$WORK/empty")
kill "$base_pid"
printf '| store | files at commits | distinct files | ready (s) | RSS settled | bytes / file at a commit | bytes / distinct file | first tree page |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for s in many revs; do
  read -r secs rss url pid < <(ready "$WORK/$s")
  if [ "$s" = many ]; then at=$FILES; distinct=$FILES; repo=bench/many; rev=main
  else at=$((REVS * 200)); distinct=$((200 + (REVS - 1) * 20)); repo=bench/revs; rev=r$((REVS - 1)); fi
  # Settled: the models' tar layers hashed (the image is served, or the commit has too many
  # files for one), the last index build done and its heap given back.
  for _ in $(seq 600); do
    curl -sf "$url/v2/models/$repo/manifests/$rev" -o /dev/null && break
    grep -q 'too many files for a manifest' "$WORK"/serve-*.log && break
    sleep 0.5
  done
  sleep 4
  rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
  page=$(curl -s -o /dev/null -w '%{time_total}s (%{size_download} B)' "$url/api/models/$repo/tree/$rev?recursive=true")
  printf '| %s | %d | %d | %.2f | %d MiB (empty: %d MiB) | %d | %d | %s |\n' "$s" "$at" "$distinct" \
    "$secs" $((rss / 1024)) $((base_rss / 1024)) $(((rss - base_rss) * 1024 / at)) \
    $(((rss - base_rss) * 1024 / distinct)) "$page"
  kill "$pid"
done

echo
printf '| import of 1 file of 1 MiB into | seconds | peak RSS | ratio to the empty store |\n|---|---|---|---|\n'
read -r e_secs e_rss < <(import_small "$WORK/empty")
printf '| an empty store | %.2f | %d MiB | 1.00 |\n' "$e_secs" $((e_rss / 1024))
for s in many revs; do
  read -r secs rss < <(import_small "$WORK/$s")
  printf '| %s | %.2f | %d MiB | %.2f |\n' "$s" "$secs" $((rss / 1024)) "$(echo "$secs / $e_secs" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
