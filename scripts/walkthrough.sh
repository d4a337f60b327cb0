#!/usr/bin/env bash
# Runs README.md's five-minute walkthrough exactly as written: the lines of
# the fenced block marked ```sh walkthrough, in bash with -euo pipefail, on
# a free port. Fails if the block is missing, if any of its commands fails,
# or if it does not run to its end; whatever it left running is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."

script=$(mktemp /tmp/llmgw-walkthrough.XXXXXX)
trap 'rm -f "$script"' EXIT
{
  # If a step fails, stop what the walkthrough started and remove its folder
  # (single quotes: this line is for the walkthrough's shell to expand).
  # shellcheck disable=SC2016
  echo 'trap '\''kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -z "${W:-}" ] || rm -rf "$W"'\'' EXIT'
  awk '/^```sh walkthrough$/ { inside = 1; found = 1; next }
       inside && /^```$/ { inside = 0; next }
       inside { print }
       END { if (!found) exit 1 }' README.md
  echo 'echo "walkthrough: every step ran"'
} >"$script" || { echo "walkthrough.sh: README.md has no \`\`\`sh walkthrough block" >&2; exit 1; }
steps=$(grep -c '^llmgw \|^ *llmgw ' "$script" || true)
if [ "$steps" -lt 5 ]; then
  echo "walkthrough.sh: the README's walkthrough has only $steps llmgw commands; expected create, trust, import, serve..." >&2
  exit 1
fi

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export PORT
out=$(mktemp /tmp/llmgw-walkthrough-out.XXXXXX)
trap 'rm -f "$script" "$out"' EXIT
if ! bash -euo pipefail "$script" >"$out" 2>&1; then
  cat "$out"
  echo "walkthrough.sh: README.md's walkthrough failed (output above)" >&2
  exit 1
fi
if [ "$(tail -n 1 "$out")" != "walkthrough: every step ran" ]; then
  cat "$out"
  echo "walkthrough.sh: README.md's walkthrough stopped before its end" >&2
  exit 1
fi
echo "walkthrough: README.md's $steps llmgw commands ran, every one succeeded"
