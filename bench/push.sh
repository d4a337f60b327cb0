#!/usr/bin/env bash
# Benchmark (#50): `llmgw mirror push` of a held image into a site's registry (Debian's
# docker-registry, distribution 2.8) vs `skopeo copy --all` of the same image from
# `llmgw mirror serve` into the same registry (goal: push <= 1.0x skopeo's time). Both
# send every byte: each run starts a fresh, empty registry (so nothing is skipped and
# skopeo's blob-info cache has no repository to mount from). The image: one linux/amd64
# manifest with SIZE_MIB of random data in LAYERS gzip'd tar layers, carried by `bundle
# create --image` and imported. Each figure is the best of RUNS runs; the store's blobs
# are in the page cache first.
#
#   bench/push.sh                     # SIZE_MIB=2048 LAYERS=4 RUNS=3
#   SIZE_MIB=512 RUNS=1 bench/push.sh
#
# Needs about 5x SIZE_MIB of free disk under /tmp. With BENCH_RESULTS=FILE, one
# tab-separated line is appended to FILE (bench/all.sh reads it).
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MIB=${SIZE_MIB:-2048}
LAYERS=${LAYERS:-4}
RUNS=${RUNS:-3}
REGISTRY_BIN=/usr/bin/docker-registry
for tool in skopeo curl python3 gzip "$REGISTRY_BIN"; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done

echo "bench: building llmgw (release)" >&2
cargo build --release --locked -q -p llmgw
LLMGW=${CARGO_TARGET_DIR:-$PWD/target}/release/llmgw
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start push

# --- the image, as an OCI layout: LAYERS random gzip'd tar layers.
echo "bench: making a ${SIZE_MIB} MiB image in ${LAYERS} layers" >&2
python3 - "$WORK/layout" "$SIZE_MIB" "$LAYERS" <<'PY'
import hashlib, json, os, subprocess, sys
layout, size_mib, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
blobs = os.path.join(layout, "blobs", "sha256")
os.makedirs(blobs)
def put(data):
    sha = hashlib.sha256(data).hexdigest()
    open(os.path.join(blobs, sha), "wb").write(data)
    return sha, len(data)
diff_ids, descs = [], []
per = size_mib * (1 << 20) // layers
for i in range(layers):
    part = os.path.join(layout, f"part{i}")
    tar_path = os.path.join(layout, f"layer{i}.tar")
    subprocess.run(["head", "-c", str(per), "/dev/urandom"], stdout=open(part, "wb"), check=True)
    subprocess.run(["tar", "-C", layout, "--mtime=@0", "--owner=0", "--group=0", "-cf", tar_path,
                    f"part{i}"], check=True)
    os.remove(part)
    h = hashlib.sha256()
    with open(tar_path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    diff_ids.append("sha256:" + h.hexdigest())
    subprocess.run(["gzip", "-1", "-n", tar_path], check=True)
    h = hashlib.sha256()
    with open(tar_path + ".gz", "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    size = os.path.getsize(tar_path + ".gz")
    os.rename(tar_path + ".gz", os.path.join(blobs, h.hexdigest()))
    descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                  "digest": "sha256:" + h.hexdigest(), "size": size})
config = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                     "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
csha, csize = put(config)
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                  "digest": "sha256:" + csha, "size": csize},
                       "layers": descs}).encode()
msha, msize = put(manifest)
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
           "digest": "sha256:" + msha, "size": msize,
           "annotations": {"org.opencontainers.image.ref.name": "v1"}}]},
          open(os.path.join(layout, "index.json"), "w"))
open(os.path.join(layout, "oci-layout"), "w").write('{"imageLayoutVersion":"1.0.0"}')
PY

# A fresh, empty docker-registry on loopback: sets REGISTRY and REGISTRY_PID.
start_registry() {
  local port dir
  port=$(free_port)
  dir=$(mktemp -d "$WORK/registry.XXXXXX")
  cat > "$dir.yml" <<YML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir
http:
  addr: 127.0.0.1:$port
YML
  "$REGISTRY_BIN" serve "$dir.yml" >"$dir.log" 2>&1 &
  REGISTRY_PID=$!
  PIDS+=("$REGISTRY_PID")
  REGISTRY=127.0.0.1:$port
  REGISTRY_DIR=$dir
  wait_for "http://$REGISTRY/v2/"
}
stop_registry() { kill "$REGISTRY_PID" 2>/dev/null || true; wait "$REGISTRY_PID" 2>/dev/null || true; rm -rf "$REGISTRY_DIR"; }

# --- carried and held: pushed to a registry by skopeo, carried by create, imported.
start_registry
skopeo copy --quiet --dest-tls-verify=false "oci:$WORK/layout:v1" "docker://$REGISTRY/bench/big:v1"
rm -rf "$WORK/layout"
"$LLMGW" bundle create --image "$REGISTRY/bench/big:v1" --insecure-registry "$REGISTRY" \
  --arch amd64 --cache "$WORK/cache" --out "$WORK/bundle" >/dev/null 2>>"$WORK/runs.log"
stop_registry
rm -rf "$WORK/cache"
"$LLMGW" bundle import "$WORK/bundle" --sha256 "$(cut -d' ' -f1 "$WORK/bundle.sha256")" \
  --store "$WORK/store" >/dev/null 2>>"$WORK/runs.log"
rm -rf "$WORK/bundle"
MPORT=$(free_port)
"$LLMGW" mirror serve --store "$WORK/store" --listen "127.0.0.1:$MPORT" >"$WORK/mirror.out" 2>"$WORK/mirror.log" &
PIDS+=("$!")
MIRROR=127.0.0.1:$MPORT
wait_for "http://$MIRROR/readyz"
find "$WORK/store/blobs" -type f -exec cat {} + >/dev/null

best() { sort -n | awk 'NR == 1'; }
seconds() { # command...: wall seconds of one run
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >>"$WORK/runs.out" 2>>"$WORK/runs.log" || { echo "bench: failed: $*" >&2; tail -5 "$WORK/runs.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
# One run into a fresh registry, then the registry's copy checked whole.
one() { # push|skopeo
  start_registry
  if [ "$1" = push ]; then
    seconds "$LLMGW" mirror push --store "$WORK/store" --to "$REGISTRY/site" --insecure-registry --image bench/big
  else
    seconds skopeo copy --all --quiet --src-tls-verify=false --dest-tls-verify=false \
      "docker://$MIRROR/bench/big:v1" "docker://$REGISTRY/site/bench/big:v1"
  fi
  [ "$(skopeo inspect --raw --tls-verify=false "docker://$REGISTRY/site/bench/big:v1" | sha256sum)" = \
    "$(skopeo inspect --raw --tls-verify=false "docker://$MIRROR/bench/big:v1" | sha256sum)" ] \
    || { echo "bench: $1 left another manifest" >&2; exit 1; }
  [ "$(du -sm "$REGISTRY_DIR" | cut -f1)" -ge "$SIZE_MIB" ] || { echo "bench: $1 sent less than the image" >&2; exit 1; }
  stop_registry
}

declare -A T
for who in push skopeo; do
  for _ in $(seq "$RUNS"); do one "$who"; echo; done | best > "$WORK/t.$who"
  T[$who]=$(cat "$WORK/t.$who")
  echo "bench: $who: ${T[$who]} s" >&2
done

mbps() { awk -v t="$1" -v m="$SIZE_MIB" 'BEGIN { printf "%.0f", m * 1.048576 / t }'; }
ratio=$(awk -v a="${T[push]}" -v b="${T[skopeo]}" 'BEGIN { printf "%.2f", a/b }')
met=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.0) ? "met" : "MISSED" }')
cat <<EOF

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, one ${SIZE_MIB} MiB image in ${LAYERS} random gzip'd layers, best of ${RUNS}, skopeo $(skopeo --version | awk '{print $3}'), docker-registry $("$REGISTRY_BIN" --version 2>/dev/null | awk '{print $3}')

| measure | llmgw mirror push | skopeo copy from the mirror | ratio (time) | goal | |
|---|--:|--:|--:|---|---|
| a held image into an empty docker-registry (s, MB/s) | ${T[push]} s, $(mbps "${T[push]}") MB/s | ${T[skopeo]} s, $(mbps "${T[skopeo]}") MB/s | $ratio | <= 1.0 | $met |
EOF
echo "load average: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg) (before / after)"
if [ -n "${BENCH_RESULTS:-}" ]; then
  printf 'push\tmirror push of a held image vs skopeo copy from the mirror, %s MiB\t%s s\t%s s\t%s\t<= 1.00\t\t%s\t%s\n' \
    "$SIZE_MIB" "${T[push]}" "${T[skopeo]}" "$ratio" "$met" "$LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)" >> "$BENCH_RESULTS"
fi
