#!/usr/bin/env bash
# Regenerates docs/front-page.png, the picture of the mirror's front page in
# README.md: runs the demo with KEEP=1 (a real bundle created, imported and
# served), then has Debian's headless Chromium take a screenshot of the
# mirror's `GET /`, then stops the mirror and removes the demo's folder.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "screenshot: needs Debian's chromium (scripts/setup.sh installs it)" >&2; exit 1; }
out=$(mktemp /tmp/llmgw-shot.XXXXXX)
KEEP=1 scripts/demo.sh >"$out" 2>&1 || { cat "$out"; exit 1; }
line=$(grep 'the mirror still serving it on' "$out")
mirror=$(sed -E 's/.*serving it on ([^ ]+) .*/\1/' <<<"$line")
stop=$(grep -E '^ +When done: kill' "$out" | sed -E 's/.*When done: //')
profile=$(mktemp -d /tmp/llmgw-chromium.XXXXXX)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size=1200,1500 \
  --screenshot="$PWD/docs/front-page.png" "$mirror/" 2>/dev/null
rm -rf "$profile" "$out"
eval "$stop"
echo "screenshot: docs/front-page.png of $mirror/"
