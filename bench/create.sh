#!/usr/bin/env bash
# Benchmark of `llmgw bundle create` against curl, on the same loopback upstream.
#
# The fixture upstream (llmgw-fixture) serves model acme/big: BENCH_FILES LFS files of
# BENCH_MIB MiB each, behind the Hub's resolve route, which answers 302 to a storage
# origin, as the real Hub does. Three ways of getting them, each from a cold start
# (empty cache and output), BENCH_RUNS times, median taken:
#
#   curl          curl -Z (parallel, as many at once as --jobs) fetching every file
#   curl+sha256   the same, then sha256sum of every file (what checking by hand costs)
#   llmgw         llmgw bundle create --model acme/big --out OUT: fetch, hash while
#                 streaming, cache, write the bundle (fsynced), OUT.sha256
#
# Ratios are printed against curl alone; the goal for llmgw is 1.10 or less.
#
#   bench/create.sh                       # 3 x 256 MiB, 3 runs, .tar output
#   BENCH_OUT=dir bench/create.sh         # directory output (also: tar.zst)
#   BENCH_FILES=4 BENCH_MIB=512 BENCH_RUNS=5 bench/create.sh
set -euo pipefail
cd "$(dirname "$0")/.."

files=${BENCH_FILES:-3}
mib=${BENCH_MIB:-256}
runs=${BENCH_RUNS:-3}
jobs=${BENCH_JOBS:-4}
out_kind=${BENCH_OUT:-tar}

cargo build --release --quiet --bin llmgw -p llmgw
cargo build --release --quiet --bin llmgw-fixture -p llmgw-fixture
llmgw=$PWD/target/release/llmgw
fixture=$PWD/target/release/llmgw-fixture

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
# Every file of the repository (the big LFS files and a small config.json), as the bundler takes them.
paths=$(python3 - "$hf" "$commit" <<'EOF'
import json, sys, urllib.request
hf, commit = sys.argv[1], sys.argv[2]
# Follow the fixture's small pages the same way the bundler does.
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
EOF
)
total_bytes=0
curl_args=()
for p in $paths; do
  curl_args+=(-o "$p" "$hf/acme/big/resolve/$commit/$p")
done

now() { date +%s.%N; }
median() { python3 -c 'import sys,statistics; print("%.3f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
drop_output() { rm -rf "$work/curl" "$work/cache" "$work/out" "$work"/out.* "$work"/.out*; sync; }

case $out_kind in
  tar) out="$work/out.tar" ;;
  tar.zst) out="$work/out.tar.zst" ;;
  dir) out="$work/out" ;;
  *) echo "BENCH_OUT must be tar, tar.zst or dir" >&2; exit 2 ;;
esac

t_curl=() t_sum=() t_llmgw=()
for i in $(seq 1 "$runs"); do
  drop_output
  mkdir -p "$work/curl"
  s=$(now)
  (cd "$work/curl" && curl -sSfL --no-progress-meter -Z --parallel-max "$jobs" "${curl_args[@]}")
  m=$(now)
  (cd "$work/curl" && find . -type f -print0 | xargs -0 sha256sum >/dev/null)
  e=$(now)
  t_curl+=("$(python3 -c "print($m-$s)")")
  t_sum+=("$(python3 -c "print($e-$s)")")
  total_bytes=$(du -sb "$work/curl" | cut -f1)

  drop_output
  s=$(now)
  "$llmgw" bundle create --out "$out" --arch amd64 --model acme/big --hf-endpoint "$hf" \
    --cache "$work/cache" --jobs "$jobs" >/dev/null 2>"$work/llmgw.err" || { cat "$work/llmgw.err"; exit 1; }
  e=$(now)
  t_llmgw+=("$(python3 -c "print($e-$s)")")
  echo "run $i: curl ${t_curl[-1]}s, curl+sha256sum ${t_sum[-1]}s, llmgw ${t_llmgw[-1]}s" >&2
done

c=$(median "${t_curl[@]}")
cs=$(median "${t_sum[@]}")
l=$(median "${t_llmgw[@]}")
python3 - "$c" "$cs" "$l" "$total_bytes" "$files" "$mib" "$out_kind" "$jobs" "$runs" <<'EOF'
import sys
c, cs, l = map(float, sys.argv[1:4])
total, files, mib, kind, jobs, runs = int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9]
gib = total / (1 << 30)
print(f"files: {files} x {mib} MiB (+ config.json), {total} bytes; --jobs {jobs}; output {kind}; median of {runs}")
print(f"{'':16}{'seconds':>9}{'GiB/s':>8}{'vs curl':>9}")
for name, t in [("curl", c), ("curl+sha256sum", cs), ("llmgw create", l)]:
    print(f"{name:16}{t:9.3f}{gib / t:8.2f}{t / c:9.2f}")
print(f"llmgw / curl = {l / c:.2f} (goal <= 1.10); llmgw / (curl+sha256sum) = {l / cs:.2f}")
EOF
