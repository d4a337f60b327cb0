#!/usr/bin/env bash
# Runs every test: the Rust unit and end-to-end tests (which drive the real
# huggingface_hub clients, minisign, tar and zstd), then the deployment checks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export LLMGW_VENV="$PWD/.venv" LLMGW_VENV_HF036="$PWD/.venv-hf036"
cargo test --workspace --locked
if [ -x deploy/check.sh ]; then
  deploy/check.sh
fi
echo "all tests passed"
