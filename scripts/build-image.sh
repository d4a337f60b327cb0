#!/usr/bin/env bash
# Builds the mirror's container image as an OCI image layout in OUT, with no
# Docker engine and no base image (#36):
#
#   scripts/build-image.sh OUT
#
# The layout (oci-layout, index.json, blobs/sha256/…) holds an image index
# over one linux/amd64 image, tagged with the binary's version
# (org.opencontainers.image.ref.name), which `llmgw bundle create --image
# llmgw/llmgw:VERSION=oci-layout:OUT` carries and skopeo, umoci or
# `ctr images import` read. Its one layer is a minimal root filesystem:
#
#   /usr/local/bin/llmgw       the binary, its debug sections stripped (a debug
#                              build is 300 MB of them; symbols stay for backtraces)
#   /lib…, /lib64/ld-linux…    the shared libraries it links (ldd), from this Debian:
#                              the binary was linked against exactly these, and the
#                              host has no musl target for a static build
#   /bin/busybox, /bin/sh …    Debian's busybox-static, so the helper pods of
#                              docs/kubernetes.md (sh, tar for kubectl cp, sleep) run
#   /etc/ssl/certs/ca-certificates.crt, /etc/passwd, /etc/group (uid/gid 10001
#   llmgw, as the chart's securityContext), /etc/nsswitch.conf, /etc/hosts,
#   /tmp (1777), /store (10001:10001)
#
# and its config says what the Dockerfile says: user, entrypoint, command,
# port, environment, volume and labels (tests/it/oci/image.rs checks that the two
# agree, so they cannot drift).
#
# Byte-reproducible: every entry sorted, mtime SOURCE_DATE_EPOCH, uid/gid
# numeric, no gzip name or time, canonical JSON; two builds of one binary
# give one digest.
#
# Environment:
#   LLMGW_BINARY        the binary (default: $CARGO_TARGET_DIR/release/llmgw, else
#                       target/release/llmgw)
#   SOURCE_DATE_EPOCH   every time the image records (default: the last commit's time)
#   REVISION            org.opencontainers.image.revision (default: git rev-parse HEAD)
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "build-image.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: scripts/build-image.sh OUT (a folder to create: the OCI image layout)"
out=$1
[ ! -e "$out" ] || die "$out already exists; remove it or name another folder"

binary=${LLMGW_BINARY:-${CARGO_TARGET_DIR:-target}/release/llmgw}
[ -x "$binary" ] || die "no binary at $binary: run 'cargo build --release --locked -p llmgw', or set LLMGW_BINARY to an llmgw binary"
for tool in ldd strip python3; do
  command -v "$tool" >/dev/null || die "$tool is not installed (scripts/setup.sh installs it)"
done
busybox=/bin/busybox
[ -x "$busybox" ] || die "$busybox is missing: apt-get install -y busybox-static (scripts/setup.sh does)"
certs=/etc/ssl/certs/ca-certificates.crt
[ -f "$certs" ] || die "$certs is missing: apt-get install -y ca-certificates (scripts/setup.sh does)"

machine=$(od -An -tx1 -j18 -N2 "$binary" | tr -d ' \n')
[ "$machine" = "3e00" ] || die "$binary is not an x86-64 ELF binary (e_machine $machine); this script builds linux/amd64 from the host's libraries only"

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || true)}
[[ "$epoch" =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH ${epoch:-(unset, and no git commit to take it from)} is not a number of seconds"
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}

version_line=$("$binary" --version) || die "$binary --version failed"
version=${version_line#llmgw }
[[ "$version" =~ ^[0-9A-Za-z_][0-9A-Za-z._-]{0,127}$ ]] || die "$binary --version printed '$version_line'; expected 'llmgw VERSION'"

work=$(mktemp -d "${TMPDIR:-/tmp}/llmgw-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The binary without its debug sections (deterministic: an ELF has no times).
strip --strip-debug -o "$work/llmgw" "$binary"

# What the dynamic loader needs: each library ldd resolves, at the path the
# binary asks for it (the interpreter at its PT_INTERP path).
libs="$work/libs"
: >"$libs"
while read -r line; do
  case "$line" in
    *"=> not found"*) die "$binary needs a library this host lacks: $line" ;;
    *"=> /"*) path=${line#*=> }; path=${path%% (*} ;;
    /*) path=${line%% (*} ;;
    *) continue ;;
  esac
  echo "$path" >>"$libs"
done < <(ldd "$binary")

mkdir -p "$(dirname "$out")"
staging="$out.tmp.$$"
trap 'rm -rf "$work" "$staging"' EXIT
python3 scripts/image-layout.py \
  --out "$staging" --binary "$work/llmgw" --libs "$libs" --busybox "$busybox" \
  --certs "$certs" --epoch "$epoch" --version "$version" --revision "$revision"
mv "$staging" "$out"
echo "$out: llmgw $version, linux/amd64, index $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$out/index.json")"
