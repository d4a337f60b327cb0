#!/usr/bin/env bash
# Benchmark of `llmgw bundle create` against curl and `hf download`, on the same
# loopback upstream.
#
# The fixture upstream (llmgw-fixture) serves model acme/big: BENCH_FILES LFS files of
# BENCH_MIB MiB of random bytes each (plus a small config.json), behind the Hub's
# resolve route, which answers 302 to a storage origin, as the real Hub does. Each run
# gets every file of the repository, from a cold start (empty output and cache), in
# turn with:
#
#   curl          curl -Z (parallel, as many at once as --jobs): the bytes, nothing else
#   hf download   `hf download acme/big --local-dir DIR` (huggingface_hub 2.4.0 from
#                 .venv, its default 8 workers): the Hub client everyone has
#   llmgw KIND    `llmgw bundle create --model acme/big --out OUT` for each KIND in
#                 BENCH_OUT (tar, tar.zst, dir): resolve the revision, list the tree,
#                 fetch, hash every byte while it streams, write the bundle and OUT.sha256;
#                 no --cache (the default cache, in the work folder, emptied each run)
#
# The contenders alternate within each run, so a change in the machine's load hits them
# alike; the median of BENCH_RUNS runs is taken. Ratios are against curl (goal <= 1.10)
# and against hf download (goal <= 1.00); peak RSS is each process's maximum resident
# set (GNU time's %M), and CPU is its user + system seconds (GNU time's %U + %S): on a
# machine whose cores are all busy (the upstream, the client and the hashing share
# them), wall time cannot drop below the CPU seconds of everything running divided by
# the cores, so the CPU column says what each contender costs apart from the load. The
# load average is printed before and after.
#
#   bench/create.sh                                   # 3 x 256 MiB, 3 runs, all kinds
#   BENCH_OUT="tar.zst" BENCH_RUNS=5 bench/create.sh
#   BENCH_FILES=4 BENCH_MIB=512 BENCH_ZSTD_LEVEL=1 bench/create.sh
# With BENCH_RESULTS=FILE, one tab-separated line per figure is appended to FILE
# (bench/all.sh reads them).
set -euo pipefail
cd "$(dirname "$0")/.."

files=${BENCH_FILES:-3}
mib=${BENCH_MIB:-256}
runs=${BENCH_RUNS:-3}
jobs=${BENCH_JOBS:-4}
kinds=${BENCH_OUT:-tar tar.zst dir}
level=${BENCH_ZSTD_LEVEL:-3}
hf_bin=$PWD/.venv/bin/hf
[ -x "$hf_bin" ] || { echo "bench: $hf_bin is missing: run scripts/setup.sh" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time (GNU time) is missing" >&2; exit 1; }

cargo build --release --locked --quiet --bin llmgw -p llmgw
cargo build --release --locked --quiet --bin llmgw-fixture -p llmgw-fixture
target=${CARGO_TARGET_DIR:-$PWD/target}
llmgw=$target/release/llmgw
fixture=$target/release/llmgw-fixture

work=$(mktemp -d "${TMPDIR:-/var/tmp}/llmgw-bench-create.XXXXXX")
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
commit=$(curl -sSf "$hf/api/models/acme/big/revision/main" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sha"])')
# Every file of the repository, as the bundler takes them (the fixture pages the tree).
paths=$(python3 - "$hf" "$commit" <<'PY'
import json, sys, urllib.request
hf, commit = sys.argv[1], sys.argv[2]
def next_link(headers):
    for part in (headers.get("Link") or "").split(","):
        if 'rel="next"' in part:
            return part.split(";")[0].strip().strip("<>")
    return None
req = urllib.request.urlopen(f"{hf}/api/models/acme/big/tree/{commit}?recursive=true&expand=false")
entries = json.load(req)
url = next_link(req.headers)
while url:
    req = urllib.request.urlopen(url if url.startswith("http") else hf + url)
    entries += json.load(req)
    url = next_link(req.headers)
for e in entries:
    if e["type"] == "file":
        print(e["path"])
PY
)
curl_args=()
for p in $paths; do
  curl_args+=(-o "$p" "$hf/acme/big/resolve/$commit/$p")
done

load() { cut -d' ' -f1-3 /proc/loadavg; }
median() { python3 -c 'import sys,statistics; print("%.3f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
clean() { rm -rf "$work/o" "$work/xdg"; mkdir -p "$work/o"; sync; }
# The upstream's CPU time so far, in clock ticks (user + system, fields 14 and 15 of
# /proc/PID/stat). The upstream runs on the same cores as the client, so what it spends
# serving a run is part of that run's floor.
ticks=$(getconf CLK_TCK)
upstream_cpu() { awk '{ print $14 + $15 }' "/proc/$fx_pid/stat"; }
# timed NAME CMD...: runs CMD in $work/o, appends its seconds, peak RSS (KiB), CPU
# seconds (user + system) and the upstream's CPU seconds for it to $work/NAME.t,
# $work/NAME.rss, $work/NAME.cpu and $work/NAME.up.
timed() {
  local name=$1; shift
  clean
  local s e u0
  u0=$(upstream_cpu)
  s=$(date +%s.%N)
  (cd "$work/o" && /usr/bin/time -f '%M %U %S' -o "$work/rss" "$@" >/dev/null 2>"$work/err") \
    || { echo "bench: $name failed:" >&2; cat "$work/err" >&2; exit 1; }
  e=$(date +%s.%N)
  python3 -c "print($e - $s)" >> "$work/$name.t"
  tail -1 "$work/rss" | cut -d' ' -f1 >> "$work/$name.rss"
  tail -1 "$work/rss" | awk '{ print $2 + $3 }' >> "$work/$name.cpu"
  echo "$u0 $(upstream_cpu) $ticks" | awk '{ print ($2 - $1) / $3 }' >> "$work/$name.up"
}

load_before=$(load)
names=(curl hf)
for k in $kinds; do names+=("llmgw-$k"); done
for i in $(seq 1 "$runs"); do
  timed curl curl -sSfL --no-progress-meter -Z --parallel-max "$jobs" "${curl_args[@]}"
  total_bytes=$(du -sb "$work/o" | cut -f1)
  timed hf env HF_ENDPOINT="$hf" HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_PROGRESS_BARS=1 \
    HF_HOME="$work/o/.hf-home" "$hf_bin" download acme/big --revision "$commit" --local-dir hf
  for k in $kinds; do
    case $k in
      tar) out=b.tar ;; tar.zst) out=b.tar.zst ;; dir) out=b ;;
      *) echo "BENCH_OUT: $k is not one of tar, tar.zst, dir" >&2; exit 2 ;;
    esac
    timed "llmgw-$k" env XDG_CACHE_HOME="$work/xdg" "$llmgw" bundle create --out "$out" \
      --arch amd64 --model acme/big --hf-endpoint "$hf" --jobs "$jobs" --zstd-level "$level"
  done
  line="run $i:"
  for n in "${names[@]}"; do line+=" $n $(tail -1 "$work/$n.t" | cut -c1-5)s"; done
  echo "$line (load $(load))" >&2
done
load_after=$(load)

results=()
for n in "${names[@]}"; do
  # shellcheck disable=SC2046
  results+=("$n" "$(median $(cat "$work/$n.t"))" "$(sort -n "$work/$n.rss" | tail -1)" \
    "$(median $(cat "$work/$n.cpu"))" "$(median $(cat "$work/$n.up"))")
done
python3 - "$total_bytes" "$files" "$mib" "$jobs" "$runs" "$level" "$load_before" "$load_after" \
  "${BENCH_RESULTS:-}" "$(nproc)" "${results[@]}" <<'PY'
import sys
total, files, mib, jobs, runs, level = int(sys.argv[1]), *sys.argv[2:7]
load_before, load_after, results_file = sys.argv[7], sys.argv[8], sys.argv[9]
cores = int(sys.argv[10])
rest = sys.argv[11:]
rows = [(rest[i], float(rest[i + 1]), int(rest[i + 2]), float(rest[i + 3]), float(rest[i + 4]))
        for i in range(0, len(rest), 5)]
t = {n: s for n, s, _, _, _ in rows}
c = {n: cpu for n, _, _, cpu, _ in rows}
print(f"files: {files} x {mib} MiB of random bytes (+ config.json), {total} bytes; --jobs {jobs}; "
      f"--zstd-level {level}; median of {runs} runs; load average {load_before} before, {load_after} after")
# The floor: client and upstream share these cores, so no run can take less than their
# CPU seconds together divided by the cores (whatever the client does with its time).
print(f"{'':18}{'seconds':>9}{'GiB/s':>8}{'vs curl':>9}{'vs hf':>8}{'peak RSS MiB':>14}{'CPU s':>8}"
      f"{'upstream CPU s':>16}{'floor s':>9}")
lines = []
for n, s, rss, cpu, up in rows:
    vc, vh = s / t["curl"], s / t["hf"]
    floor = (cpu + up) / cores
    print(f"{n:18}{s:9.3f}{total / s / (1 << 30):8.2f}{vc:9.2f}{vh:8.2f}{rss / 1024:14.1f}{cpu:8.2f}"
          f"{up:16.2f}{floor:9.3f}")
    if n.startswith("llmgw"):
        load = f"{load_before} / {load_after}"
        for ref, r, goal in [("curl", vc, 1.10), ("hf download", vh, 1.00)]:
            ok = "met" if r <= goal else "MISSED"
            lines.append(f"create\t{n[6:]} vs {ref}\t{s:.3f} s (CPU {cpu:.2f} s)\t"
                         f"{t[ref.split()[0]]:.3f} s (CPU {c[ref.split()[0]]:.2f} s)\t"
                         f"{r:.2f}\t"
                         f"<= {goal:.2f}\t{rss / 1024:.1f}\t{ok}\t{load}")
print("goal: llmgw <= 1.10 x curl and <= 1.00 x hf download, for every kind")
print(f"floor: (client CPU s + upstream CPU s) / {cores} cores; the curl goal is {1.10 * t['curl']:.3f} s")
if results_file:
    with open(results_file, "a") as f:
        f.write("\n".join(lines) + "\n")
PY
