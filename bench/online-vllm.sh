#!/usr/bin/env bash
# The one check against the real thing, opt-in and outside CI: `llmgw bundle create
# --dry-run` resolves vLLM's environments for amd64 and arm64 with the real uv against
# PyPI itself, checks every file against PyPI's simple JSON API (sha256, size,
# core-metadata), fetches the small .metadata files, and lists files and sizes; no wheel
# is downloaded and no bundle written. What PyPI alone cannot give (the cu129 wheel on
# GitHub, PyTorch's index, python-build-standalone on GitHub) is a gap (--allow-missing)
# where this machine cannot reach it; the dry run fails where the real run would.
#
#   LLMGW_ONLINE=1 bench/online-vllm.sh        # vLLM 0.34.0 (its flashinfer pin overridden)
#   LLMGW_ONLINE=1 VLLM=0.33.0 VARIANT=cu13 bench/online-vllm.sh   # PyPI alone
#   LLMGW_ONLINE=1 ENGINE=sglang VLLM=0.5.23 bench/online-vllm.sh
#   LLMGW_ONLINE=1 MANYLINUX=2_34 INTERPRETER=none OVERRIDE= bench/online-vllm.sh
#   UV=/path/to/uv ...                         # else uv on PATH, else .venv-py's
#
# MANYLINUX unset takes the recipe table's figure for the version (`llmgw recipe
# environments`); OVERRIDE is passed as --override (vLLM 0.34.0 pins flashinfer-python
# 0.7.3, which PyPI never had; empty for none).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${LLMGW_ONLINE:-}" != 1 ]; then
  echo "online-vllm: skipped (set LLMGW_ONLINE=1: it talks to the real PyPI)"
  exit 0
fi

engine=${ENGINE:-vllm}
vllm=${VLLM:-0.34.0}
flags=(--allow-missing --python-interpreter "${INTERPRETER:-carried}")
[ -n "${MANYLINUX:-}" ] && flags+=(--manylinux "$MANYLINUX")
override=${OVERRIDE-vllm=flashinfer-python==0.7.4}
[ "$engine" = vllm ] && [ -n "$override" ] && flags+=(--override "$override")
ask="$engine=$vllm${VARIANT:+:$VARIANT}"
uv=${UV:-$(command -v uv || echo "$PWD/.venv-py/bin/uv")}
[ -x "$uv" ] || { echo "online-vllm: no uv at $uv (run scripts/setup.sh or set UV)" >&2; exit 1; }

# LLMGW=PATH runs a binary already built instead of building the release one.
if [ -z "${LLMGW:-}" ]; then
  cargo build --release --quiet --bin llmgw -p llmgw
fi
llmgw=${LLMGW:-$PWD/target/release/llmgw}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "online-vllm: $ask, manylinux ${MANYLINUX:-from the table}, ${flags[*]}, $("$uv" --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
"$llmgw" bundle create --dry-run --engine "$ask" --arch amd64,arm64 "${flags[@]}" \
  --uv "$uv" --cache "$work/cache" --out "$work/b.tar" --json > "$work/dry.json"
echo "online-vllm: done in $(( $(date +%s) - start )) s"
python3 - "$work/dry.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["environments"]:
    print(f'{e["name"]:28} {e["platform"]:24} {e["files"]:4} files {e["bytes"] / 1e9:6.2f} GB  interpreter: {e["interpreter"]}')
    for f in e["largest"][:3]:
        print(f'    {f["size"] / 1e6:9.1f} MB  {f["filename"]}')
print(f'distinct over all: {d["distinct_files"]} files, {d["distinct_bytes"] / 1e9:.2f} GB')
for g in d["gaps"]:
    print(f'gap: {g["what"]}: {g["reason"][:300]}')
EOF
