#!/usr/bin/env bash
# The one check against the real thing, opt-in and outside CI: `llmgw bundle create
# --dry-run` resolves vLLM's environments for amd64 and arm64 with the real uv against
# PyPI itself, checks every file against PyPI's simple JSON API (sha256, size,
# core-metadata), fetches the small .metadata files, and lists files and sizes; no wheel
# is downloaded and no bundle written. What PyPI alone cannot give (the cu129 wheel on
# GitHub, PyTorch's index, python-build-standalone on GitHub) is reported as not checked
# where this machine cannot reach it.
#
#   LLMGW_ONLINE=1 bench/online-vllm.sh                  # vLLM 0.34.0, manylinux 2_28
#   LLMGW_ONLINE=1 VLLM=0.20.1 MANYLINUX=2_34 bench/online-vllm.sh
#   UV=/path/to/uv ...                                   # else uv on PATH, else .venv-py's
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${LLMGW_ONLINE:-}" != 1 ]; then
  echo "online-vllm: skipped (set LLMGW_ONLINE=1: it talks to the real PyPI)"
  exit 0
fi

vllm=${VLLM:-0.34.0}
manylinux=${MANYLINUX:-2_28}
uv=${UV:-$(command -v uv || echo "$PWD/.venv-py/bin/uv")}
[ -x "$uv" ] || { echo "online-vllm: no uv at $uv (run scripts/setup.sh or set UV)" >&2; exit 1; }

cargo build --release --quiet --bin llmgw -p llmgw
llmgw=${LLMGW:-$PWD/target/release/llmgw}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "online-vllm: vllm $vllm, manylinux_$manylinux, $("$uv" --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
"$llmgw" bundle create --dry-run --engine "vllm=$vllm" --arch amd64,arm64 \
  --manylinux "$manylinux" --uv "$uv" --cache "$work/cache" --out "$work/b.tar" \
  --json > "$work/dry.json"
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
    print(f'not checked: {g["what"]}: {g["reason"][:300]}')
EOF
