#!/usr/bin/env bash
# The store at scale (issue 35): what the mirror costs as the store grows, measured on
#   many: $REPOS repositories (default 1) of $FILES small files each (default 100 000), one
#         bundle each (issue 35's shape: REPOS=10 REVS=1000, 10^6 files and 1 000 bundles);
#   revs: $REVS bundles (default 200), each one commit of a 200-file model, 10 % of its
#         files new at each commit (revisions sharing 90 % of their files).
# For each store: the time from start to ready (the index build), RSS once settled (the
# models' tar layers hashed, issue 31, and no index build for 5 s) against an empty store's, in bytes per file held at a commit and per distinct file, the first page of
# the recursive tree listing; and the import of one small bundle (1 file of 1 MiB) into the
# store against into an empty store (time and peak RSS: the claims check's cost); and the
# latency (p50, p99, max) of the revision JSON and of the first tree page under 16 clients
# (wrk, $LAT_SECS s each, default 10), idle and while small bundles are imported one after
# another into the store being served (each import makes the server build its index again),
# beside nginx serving the same bytes as static files under the same imports (the
# reference: what 16 clients of an answer that size cost on this machine).
# And the peak RSS while the server builds its index again after one small import (the
# old and new index both held: issue 35's "no doubling during a rebuild"), read as VmHWM
# after the peak is reset through /proc/PID/clear_refs.
# Uses the dev build (its dependencies optimized, as the workspace profile says), or
# LLMGW=PATH (another build, for a before/after table); ONLY=rebuild runs the stores'
# setup and the rebuild table only.
#
#   bench/store-scale.sh            FILES=100000 REVS=200 REPOS=1 LAT_SECS=10
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
FILES=${FILES:-100000}
REVS=${REVS:-200}
REPOS=${REPOS:-1}
LAT_SECS=${LAT_SECS:-10}
ONLY=${ONLY:-}
if [ -n "${LLMGW:-}" ]; then
  BIN=$LLMGW
else
  cargo build --locked -q --bin llmgw
  BIN=$PWD/${CARGO_TARGET_DIR:-target}/debug/llmgw
fi
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

# settle URL PID REPO REV: waits until the models' tar layers are hashed (the image is
# served, or the commit has too many files for one), and then no index build for 5 s: the
# layer thread rebuilds the index after each batch it hashes, so RSS read during a build
# counts two indexes and the manifests parsed.
settle() {
  local url=$1 repo=$3 rev=$4 last=-1 n
  for _ in $(seq 600); do
    curl -sf "$url/v2/models/$repo/manifests/$rev" -o /dev/null && break
    grep -q 'too many files for a manifest' "$WORK"/serve-*.log && break
    sleep 0.5
  done
  for _ in $(seq 120); do
    n=$(grep -c 'store read' "$WORK/serve-${url##*:}.log" || true)
    [ "$n" = "$last" ] && break
    last=$n
    sleep 5
  done
}

# rebuild_peak STORE REPO REV: "settled-kib peak-kib after-kib build-seconds" of a server
# of STORE settled, the peak while it builds its index again after one small bundle's
# import (VmHWM, reset just before), and its RSS settled after.
rebuild_peak() {
  local secs rss url pid n0 n start end
  # The store's first import records every held bundle's names (import_small says why):
  # done before, so the time is the server's rebuild, not that one-off read.
  "$BIN" bundle import "$WORK/small/bundle.tar" --sha256 "$SMALL_SHA" --store "$1" >/dev/null 2>&1
  "$BIN" mirror remove --store "$1" "$SMALL_SHA" >/dev/null 2>&1
  "$BIN" mirror gc --store "$1" >/dev/null 2>&1
  read -r secs rss url pid < <(ready "$1")
  settle "$url" "$pid" "$2" "$3"
  rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
  n0=$(grep -c 'store read' "$WORK/serve-${url##*:}.log" || true)
  echo 5 > "/proc/$pid/clear_refs"
  start=$(date +%s.%N)
  "$BIN" bundle import "$WORK/small/bundle.tar" --sha256 "$SMALL_SHA" --store "$1" >/dev/null 2>&1
  for _ in $(seq 600); do
    n=$(grep -c 'store read' "$WORK/serve-${url##*:}.log" || true)
    [ "$n" -gt "$n0" ] && break
    sleep 0.05
  done
  end=$(date +%s.%N)
  settle "$url" "$pid" "$2" "$3"
  echo "$rss $(awk '/VmHWM/{print $2}' "/proc/$pid/status") $(awk '/VmRSS/{print $2}' "/proc/$pid/status") $(echo "$end - $start" | bc)"
  kill "$pid"
  "$BIN" mirror remove --store "$1" "$SMALL_SHA" >/dev/null 2>&1
  "$BIN" mirror gc --store "$1" >/dev/null 2>&1
}

mkdir -p "$WORK/small"
SMALL_SHA=$(python3 bench/make_bundle.py "$WORK/small" 1 1)
python3 bench/make_model_store.py "$WORK/empty" files 1 >/dev/null
if [ "$REPOS" -gt 1 ]; then
  python3 bench/make_model_store.py "$WORK/many" files "$FILES" "$REPOS" >/dev/null
  MANY_REPO=bench/many-0
else
  python3 bench/make_model_store.py "$WORK/many" files "$FILES" >/dev/null
  MANY_REPO=bench/many
fi
python3 bench/make_model_store.py "$WORK/revs" revisions "$REVS" >/dev/null

read -r _ base_rss _ base_pid < <(ready "$WORK/empty")
kill "$base_pid"

printf '| store | RSS settled | peak RSS during the rebuild after one small import | RSS settled after | import to new index served (s) |\n|---|---|---|---|---|\n'
for s in many revs; do
  if [ "$s" = many ]; then repo=$MANY_REPO; rev=main; else repo=bench/revs; rev=r$((REVS - 1)); fi
  read -r before peak after secs < <(rebuild_peak "$WORK/$s" "$repo" "$rev")
  printf '| %s | %d MiB | %d MiB | %d MiB | %.2f |\n' "$s" $((before / 1024)) $((peak / 1024)) $((after / 1024)) "$secs"
done
echo
[ "$ONLY" = rebuild ] && { echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"; exit 0; }
printf '| store | files at commits | distinct files | ready (s) | RSS settled | bytes / file at a commit | bytes / distinct file | first tree page |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for s in many revs; do
  read -r secs rss url pid < <(ready "$WORK/$s")
  if [ "$s" = many ]; then at=$((FILES * REPOS)); distinct=$at; repo=$MANY_REPO; rev=main
  else at=$((REVS * 200)); distinct=$((200 + (REVS - 1) * 20)); repo=bench/revs; rev=r$((REVS - 1)); fi
  settle "$url" "$pid" "$repo" "$rev"
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

# wrk_lat URL: "p50 p99 max" in milliseconds of 16 connections for $LAT_SECS s; every
# answer must be a 200.
wrk_lat() {
  wrk -t2 -c16 -d"${LAT_SECS}s" --latency "$1" > "$WORK/wrk.out"
  python3 - "$WORK/wrk.out" "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
if "Non-2xx" in text or "Socket errors" in text:
    sys.exit(f"bench: {sys.argv[2]}: not every answer was a 200:\n{text}")
def ms(v):
    n, unit = re.match(r"([0-9.]+)(us|ms|s|m)$", v).groups()
    return float(n) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]
p50 = ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
p99 = ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
top = ms(re.search(r"^\s+Latency\s+\S+\s+\S+\s+(\S+)", text, re.M).group(1))
print(f"{p50:.2f} {p99:.2f} {top:.2f}")
PY
}

# importing STORE: imports the distinct small bundles one after another until stopped.
importing() {
  local i=0
  while :; do
    "$BIN" bundle import "$WORK/busy-$i/bundle.tar" --sha256 "$(cat "$WORK/busy-$i/sha")" \
      --store "$1" >/dev/null 2>&1 || true
    i=$(((i + 1) % 8))
  done
}

for i in $(seq 0 7); do
  mkdir -p "$WORK/busy-$i"
  python3 bench/make_bundle.py "$WORK/busy-$i" 1 1 > "$WORK/busy-$i/sha"
done
# lat_pair URL: "idle-p50 idle-p99 idle-max busy-p50 busy-p99 busy-max" of URL, idle and
# while small bundles are imported into $STORE.
lat_pair() {
  local imp
  read -r i50 i99 imax < <(wrk_lat "$1")
  importing "$STORE" &
  imp=$!
  read -r b50 b99 bmax < <(wrk_lat "$1")
  kill "$imp"; wait "$imp" 2>/dev/null || true
  echo "$i50 $i99 $imax $b50 $b99 $bmax"
}

# The reference: nginx serving each answer's bytes as a static file, on the same machine,
# idle and while the same imports run (with no mirror running): what 16 clients of an
# answer that size cost here whatever serves it.
echo
printf '| store | answer (bytes) | server | idle p50 / p99 / max (ms) | while importing p50 / p99 / max (ms) | p99 ratio | goal: p99 <= 2x idle, max <= 50 ms |\n|---|---|---|---|---|---|---|\n'
mkdir -p "$WORK/nginx-root"
for s in many revs; do
  if [ "$s" = many ]; then repo=$MANY_REPO; rev=main; else repo=bench/revs; rev=r$((REVS - 1)); fi
  STORE=$WORK/$s
  read -r _ _ url pid < <(ready "$STORE")
  settle "$url" "$pid" "$repo" "$rev"
  for what in "revision JSON|/api/models/$repo/revision/$rev" "first tree page|/api/models/$repo/tree/$rev?recursive=true"; do
    label=${what%%|*}; path=${what#*|}
    curl -sf "$url$path" -o "$WORK/nginx-root/$s-${label// /-}.json"
    bytes=$(stat -c %s "$WORK/nginx-root/$s-${label// /-}.json")
    read -r i50 i99 imax b50 b99 bmax < <(lat_pair "$url$path")
    verdict=$(awk -v a="$i99" -v b="$b99" -v m="$bmax" 'BEGIN { print (b <= 2 * a && m <= 50) ? "met" : "MISSED" }')
    printf '| %s | %s (%d) | mirror | %s / %s / %s | %s / %s / %s | %.2f | %s |\n' \
      "$s" "$label" "$bytes" "$i50" "$i99" "$imax" "$b50" "$b99" "$bmax" "$(echo "$b99 / $i99" | bc -l)" "$verdict"
    echo "$s|$label|$bytes|$path" >> "$WORK/answers"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  start_nginx "$WORK/nginx-root"
  while IFS='|' read -r as label bytes _; do
    [ "$as" = "$s" ] || continue
    read -r i50 i99 imax b50 b99 bmax < <(lat_pair "$NGINX/$s-${label// /-}.json")
    verdict=$(awk -v a="$i99" -v b="$b99" -v m="$bmax" 'BEGIN { print (b <= 2 * a && m <= 50) ? "met" : "MISSED" }')
    printf '| %s | %s (%d) | nginx (reference) | %s / %s / %s | %s / %s / %s | %.2f | %s |\n' \
      "$s" "$label" "$bytes" "$i50" "$i99" "$imax" "$b50" "$b99" "$bmax" "$(echo "$b99 / $i99" | bc -l)" "$verdict"
  done < "$WORK/answers"
  kill "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
