#!/usr/bin/env bash
# Runs every test: the Rust unit and end-to-end tests (which drive the real
# huggingface_hub clients, minisign, tar and zstd), the deployment checks,
# the man pages, README.md's walkthrough, and the demo twice (it must never
# flake).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

# A reader that stops early (head, grep -q, grep -m) on a pipe kills its
# writer with SIGPIPE whenever the writer is not done yet, and under
# pipefail that fails the script at random. Read files, or whole streams.
if grep -nE '\|\s*(head|grep\s+-[a-zA-Z]*[qm])' scripts/*.sh bench/*.sh deploy/*.sh; then
  echo "test.sh: the pipes above end in a reader that may stop early; see the comment here" >&2
  exit 1
fi

# The demo's setup builds no S3 server (#34): a newcomer's first run is the
# demo, and the S3 servers cost 20 minutes on 2 cores. Dry runs of a copy of
# setup.sh in an empty tree say what each mode would do on a fresh machine.
fresh=$(mktemp -d /tmp/llmgw-setup.XXXXXX)
mkdir "$fresh/scripts" && cp scripts/setup.sh "$fresh/scripts/"
demo_plan=$(LLMGW_TOOLS_DIR="$fresh/tools" "$fresh/scripts/setup.sh" demo --dry-run)
tests_plan=$(LLMGW_TOOLS_DIR="$fresh/tools" "$fresh/scripts/setup.sh" tests --dry-run)
rm -rf "$fresh"
if grep -E 'garage|s3s-fs' <<<"$demo_plan" || ! grep -q '\.venv ' <<<"$demo_plan"; then
  echo "test.sh: 'setup.sh demo' must make .venv and build no S3 server; it would:" >&2
  echo "$demo_plan" >&2
  exit 1
fi
grep -q 'build garage' <<<"$tests_plan" || { echo "test.sh: 'setup.sh tests' no longer builds Garage" >&2; exit 1; }
echo "setup: the demo's setup builds no S3 server"

# The rules of docs/ARCHITECTURE.md no compiler checks: no import cycle of any
# length (files, rooms), no error message repeating its source, no file or
# function over its line limit but the tables and the listed ones; the check's
# own tests first, on small crates made for each rule.
python3 scripts/structure_test.py
python3 scripts/structure.py

export LLMGW_VENV="$PWD/.venv" LLMGW_VENV_HF036="$PWD/.venv-hf036" LLMGW_VENV_PY="$PWD/.venv-py" LLMGW_OCI_VENV="$PWD/.venv-oci" LLMGW_SBOM_VENV="$PWD/.venv-sbom" LLMGW_PICKLE_VENV="$PWD/.venv-pickle" LLMGW_SIGSTORE_VENV="$PWD/.venv-sigstore" LLMGW_KERNELS_VENV="$PWD/.venv-kernels"
tools=${LLMGW_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/llmgw/tools}
export LLMGW_S3S_FS="$tools/s3s-fs-0.14.1/bin/s3s-fs" LLMGW_GARAGE="$tools/garage-2.5.0/bin/garage"
# --no-fail-fast: one failing binary does not hide what the others would say.
cargo test --workspace --locked --no-fail-fast
if [ -x deploy/check.sh ]; then
  deploy/check.sh
fi

# The man pages, built from the same definitions as --help: one page per
# command, each rendered by man (or groff) without a warning.
LLMGW=${CARGO_TARGET_DIR:-$PWD/target}/debug/llmgw
man_dir=$(mktemp -d /tmp/llmgw-man.XXXXXX)
"$LLMGW" manpage --dir "$man_dir" >"$man_dir/list"
for page in llmgw llmgw-recipe-candidates llmgw-bundle-create llmgw-bundle-import \
            llmgw-bundle-trust-add llmgw-mirror-serve llmgw-completions llmgw-manpage; do
  grep -qx "$man_dir/$page.1" "$man_dir/list" || { echo "test.sh: no man page $page.1" >&2; exit 1; }
done
for f in "$man_dir"/*.1; do
  if command -v groff >/dev/null; then
    warnings=$(groff -k -man -Tutf8 -ww -z "$f" 2>&1)
    [ -z "$warnings" ] || { echo "test.sh: $f: $warnings" >&2; exit 1; }
  fi
  if command -v man >/dev/null; then
    MANWIDTH=100 man -l "$f" >/dev/null
  fi
done
echo "man pages: $(grep -c . "$man_dir/list") built and rendered"
rm -rf "$man_dir"

# README.md's five-minute walkthrough, exactly as written.
scripts/walkthrough.sh

log=$(mktemp /tmp/llmgw-demo-log.XXXXXX)
trap 'rm -f "$log"' EXIT
for run in 1 2; do
  if ! scripts/demo.sh >"$log" 2>&1; then
    cat "$log"
    echo "test.sh: scripts/demo.sh failed on run $run" >&2
    exit 1
  fi
  echo "demo run $run: passed ($(grep -c '^== ' "$log") steps)"
done
echo "all tests passed"
