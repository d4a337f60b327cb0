#!/usr/bin/env bash
# The main job, end to end on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --locked --quiet
target/debug/llmgw recipe builds llamacpp b6123 --arch amd64
