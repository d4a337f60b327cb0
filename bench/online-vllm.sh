#!/usr/bin/env bash
# The one check against the real thing, opt-in and outside CI (#29): vLLM and SGLang
# from the real PyPI, with the fixture standing in for GitHub only (the interpreter's
# list on the raw host and the stand-in python-build-standalone release; this machine
# cannot reach GitHub). For each engine it runs
#   ours:      llmgw bundle create --engine E=V:VARIANT --arch ARCH   (resolve with the real
#              uv, download every wheel, check each against PyPI's sha256 and size, write
#              the bundle as a directory), then llmgw bundle import into a fresh store;
#   reference: uv pip compile of the recipe's requirements for the same Python and
#              platform, then pip download --no-deps of exactly that list;
# and prints both times and their ratio (ours / reference: below 1 is faster). Both
# sides download from the same PyPI with no cache, one after the other.
#
#   LLMGW_ONLINE=1 bench/online-vllm.sh                     # vLLM 0.33.0:cu13 and SGLang 0.5.23:cu13, amd64
#   LLMGW_ONLINE=1 ENGINES="vllm=0.34.0:cu13" OVERRIDE=vllm=flashinfer-python==0.7.4 bench/online-vllm.sh
#   LLMGW_ONLINE=1 MODE=dry ENGINES=vllm=0.34.0 bench/online-vllm.sh   # dry run, both arches, every variant
#   LLMGW=target/debug/llmgw FIXTURE=target/debug/llmgw-fixture ...  # binaries already built
#   UV=/path/to/uv ...                                      # else uv on PATH, else .venv-py's
#
# Disk: about twice the environment's size at a time (the bundle and the store; the
# reference's download is removed before ours starts), all under one temporary folder
# removed at the end. OVERRIDE is passed as --override to ours and as an overrides file
# to uv pip compile (vLLM 0.34.0 pins flashinfer-python 0.7.3, which PyPI never had).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${LLMGW_ONLINE:-}" != 1 ]; then
  echo "online-vllm: skipped (set LLMGW_ONLINE=1: it talks to the real PyPI)"
  exit 0
fi

engines=${ENGINES:-vllm=0.33.0:cu13 sglang=0.5.23:cu13}
arch=${ARCH:-amd64}
mode=${MODE:-create}
override=${OVERRIDE:-}
uv=${UV:-$(command -v uv || echo "$PWD/.venv-py/bin/uv")}
[ -x "$uv" ] || { echo "online-vllm: no uv at $uv (run scripts/setup.sh or set UV)" >&2; exit 1; }

# LLMGW=PATH and FIXTURE=PATH run binaries already built instead of building release ones.
if [ -z "${LLMGW:-}" ] || [ -z "${FIXTURE:-}" ]; then
  cargo build --release --locked --quiet -p llmgw -p llmgw-fixture
fi
target=${CARGO_TARGET_DIR:-$PWD/target}
llmgw=${LLMGW:-$target/release/llmgw}
fixture=${FIXTURE:-$target/release/llmgw-fixture}

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start online-vllm
echo "online-vllm: $engines, $arch, mode $mode, $("$uv" --version), load $(cut -d' ' -f1-3 /proc/loadavg)"

"$fixture" --env-file "$WORK/fx.env" >/dev/null 2>"$WORK/fixture.log" &
PIDS+=("$!")
for _ in $(seq 300); do [ -f "$WORK/fx.env" ] && break; sleep 0.1; done
[ -f "$WORK/fx.env" ] || { echo "online-vllm: the fixture did not start: $(cat "$WORK/fixture.log")" >&2; exit 1; }
# shellcheck disable=SC1091
. "$WORK/fx.env"
# The bundle carries uv's release too (from the fixture's GitHub): the interpreter list
# is read at that uv's tag, as a real bundle's is.
uv_tag=$(curl -sf "$FX_GITHUB_API/repos/astral-sh/uv/releases/latest" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["tag_name"])')
github=(--github-api "$FX_GITHUB_API" --github-raw "$FX_RAW_GITHUB" --engine "uv=$uv_tag")

if [ "$mode" = dry ]; then
  for ask in $engines; do
    flags=(--allow-missing)
    [ -n "$override" ] && flags+=(--override "$override")
    "$llmgw" bundle create --dry-run --engine "$ask" --arch amd64,arm64 "${github[@]}" "${flags[@]}" \
      --uv "$uv" --cache "$WORK/cache" --out "$WORK/b.tar" --json > "$WORK/dry.json"
    python3 bench/online_vllm_report.py dry "$WORK/dry.json"
  done
  exit 0
fi

# secs CMD...: runs CMD, prints its wall time in seconds (to 0.1 s) on stdout.
secs() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$WORK/last.out" 2>"$WORK/last.err" || {
    echo "online-vllm: failed: $*" >&2; cat "$WORK/last.err" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.1f}')"
}

rows=()
for ask in $engines; do
  engine=${ask%%=*}
  rest=${ask#*=}
  version=${rest%%:*}
  variant=${rest#*:}
  [ "$variant" = "$rest" ] && { echo "online-vllm: $ask: give the variant (E=V:VARIANT)" >&2; exit 1; }
  # The recipe's requirements, Python and manylinux for this environment.
  "$llmgw" recipe environments "$engine" "$version" --arch "$arch" --json > "$WORK/envs.json"
  read -r python manylinux < <(python3 bench/online_vllm_report.py env "$WORK/envs.json" "$variant" "$WORK/requirements.in")
  machine=$([ "$arch" = amd64 ] && echo x86_64 || echo aarch64)

  # The reference: uv pip compile, then pip download of exactly that list.
  rm -rf "$WORK/ref" && mkdir "$WORK/ref"
  compile=(--python-version "$python" --python-platform "$machine-manylinux_$manylinux"
           --no-header --no-annotate -o "$WORK/ref/requirements.txt" "$WORK/requirements.in")
  if [ -n "$override" ]; then
    echo "${override#*=}" > "$WORK/overrides.txt"
    compile+=(--override "$WORK/overrides.txt")
  fi
  t_compile=$(secs env UV_NO_CACHE=1 "$uv" pip compile "${compile[@]}")
  # pip takes --platform literally (no older manylinux implied), so name each one.
  platforms=()
  for minor in $(seq "${manylinux#2_}" -1 5); do platforms+=(--platform "manylinux_2_${minor}_$machine"); done
  for legacy in manylinux2014 manylinux2010 manylinux1; do platforms+=(--platform "${legacy}_$machine"); done
  t_download=$(secs env -u PIP_FIND_LINKS python3 -m pip download --no-deps --no-cache-dir \
    --only-binary=:all: --python-version "$python" "${platforms[@]}" \
    -r "$WORK/ref/requirements.txt" -d "$WORK/ref/wheels")
  ref_files=$(find "$WORK/ref/wheels" -type f | wc -l)
  ref_bytes=$(du -sb "$WORK/ref/wheels" | cut -f1)
  rm -rf "$WORK/ref"

  # Ours: create (resolve, download, check, write), then import. The runtime extras (#32)
  # are left out: their publisher is not a package registry, and pip downloads none either.
  flags=(--no-extras)
  [ -n "$override" ] && flags+=(--override "$override")
  rm -rf "$WORK/cache" "$WORK/bundle" "$WORK/bundle.sha256" "$WORK/store"
  t_create=$(secs "$llmgw" bundle create --engine "$ask" --arch "$arch" "${github[@]}" "${flags[@]}" \
    --uv "$uv" --cache "$WORK/cache" --out "$WORK/bundle")
  rm -rf "$WORK/cache"
  t_import=$(secs "$llmgw" bundle import "$WORK/bundle" --sha256 "$WORK/bundle.sha256" --store "$WORK/store")
  our_files=$(find "$WORK/bundle" -type f | wc -l)
  our_bytes=$(du -sb "$WORK/bundle" | cut -f1)
  rm -rf "$WORK/bundle" "$WORK/store"

  rows+=("$ask $arch $ref_files $ref_bytes $t_compile $t_download $our_files $our_bytes $t_create $t_import")
done

printf '%s\n' "${rows[@]}" | python3 bench/online_vllm_report.py table
echo "online-vllm: load after $(cut -d' ' -f1-3 /proc/loadavg)"
