#!/usr/bin/env bash
# Benchmark (#30): container images, against Debian's docker-registry (distribution
# 2.8) serving the same image from the same disk, measured in one run:
#   (a) `skopeo copy docker://MIRROR/bench/big:v1 oci:DIR` from `llmgw mirror serve`
#       vs the same copy from docker-registry (goal: >= 0.9x its throughput);
#   (b) `llmgw bundle create --image REGISTRY/bench/big:v1` (a directory bundle, cold
#       cache) vs `skopeo copy docker://REGISTRY/bench/big:v1 oci:DIR` from the same
#       upstream (goal: <= 1.0x its time).
# The image: one linux/amd64 manifest with SIZE_MIB of random (incompressible) data in
# LAYERS gzip'd tar layers, made here and pushed by skopeo. Each figure is the best of
# RUNS runs; page caches are warmed first, and every copy is written to the same disk.
#
#   bench/oci.sh                      # SIZE_MIB=2048 LAYERS=4 RUNS=3
#   SIZE_MIB=512 RUNS=1 bench/oci.sh
#
# Needs about 6x SIZE_MIB of free disk under /tmp. With BENCH_RESULTS=FILE, one
# tab-separated line per figure is appended to FILE (bench/all.sh reads them).
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
bench_start oci

# --- the image, as an OCI layout: LAYERS random gzip'd tar layers.
echo "bench: making a ${SIZE_MIB} MiB image in ${LAYERS} layers" >&2
python3 - "$WORK/layout" "$SIZE_MIB" "$LAYERS" <<'EOF'
import hashlib, json, os, subprocess, sys
layout, size_mib, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
blobs = os.path.join(layout, "blobs", "sha256")
os.makedirs(blobs)
def put(data=None, path=None):
    h = hashlib.sha256()
    if path:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        size = os.path.getsize(path)
        os.rename(path, os.path.join(blobs, h.hexdigest()))
    else:
        h.update(data)
        size = len(data)
        open(os.path.join(blobs, h.hexdigest()), "wb").write(data)
    return h.hexdigest(), size
diff_ids, descs = [], []
per = size_mib * (1 << 20) // layers
for i in range(layers):
    tar_path = os.path.join(layout, f"layer{i}.tar")
    part = os.path.join(layout, f"part{i}")
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
    sha, size = put(path=tar_path + ".gz")
    descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                  "digest": "sha256:" + sha, "size": size})
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
EOF

# --- docker-registry on loopback, the image pushed by skopeo.
RPORT=$(free_port)
mkdir -p "$WORK/registry"
cat > "$WORK/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $WORK/registry
http:
  addr: 127.0.0.1:$RPORT
EOF
"$REGISTRY_BIN" serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
PIDS+=("$!")
REGISTRY=127.0.0.1:$RPORT
wait_for "http://$REGISTRY/v2/"
skopeo copy --quiet --dest-tls-verify=false "oci:$WORK/layout:v1" "docker://$REGISTRY/bench/big:v1"
rm -rf "$WORK/layout"

best() { sort -n | awk 'NR == 1'; }
seconds() { # command...: wall seconds of one run
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>>"$WORK/runs.log" || { echo "bench: failed: $*" >&2; tail -5 "$WORK/runs.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
warm() { find "$@" -type f -exec cat {} + >/dev/null; }
skopeo_pull() { # source reference
  rm -rf "$WORK/pulled"
  seconds skopeo copy --quiet --src-tls-verify=false "docker://$1" "oci:$WORK/pulled:v1"
}
create() {
  rm -rf "$WORK/cache" "$WORK/bundle"
  seconds "$LLMGW" bundle create --image "$REGISTRY/bench/big:v1" --insecure-registry "$REGISTRY" \
    --arch amd64 --cache "$WORK/cache" --out "$WORK/bundle"
}

# --- (b) create vs skopeo from the same upstream, both cold (no cache).
warm "$WORK/registry"
declare -A T
for who in create skopeo; do
  for _ in $(seq "$RUNS"); do
    if [ $who = create ]; then create; else skopeo_pull "$REGISTRY/bench/big:v1"; fi
    echo
  done | best > "$WORK/t.$who"
  T[$who]=$(cat "$WORK/t.$who")
  echo "bench: (b) $who: ${T[$who]} s" >&2
done
rm -rf "$WORK/pulled"
# The bundle holds the whole image (a run that carried less would be quick).
[ "$(du -sm "$WORK/bundle/blobs" | cut -f1)" -ge "$SIZE_MIB" ] || { echo "bench: the bundle is short" >&2; exit 1; }

# --- the mirror: the bundle imported, served.
SHA=$(cut -d' ' -f1 "$WORK/bundle.sha256")
"$LLMGW" bundle import "$WORK/bundle" --sha256 "$SHA" --store "$WORK/store" >/dev/null 2>>"$WORK/runs.log"
rm -rf "$WORK/bundle" "$WORK/cache"
MPORT=$(free_port)
"$LLMGW" mirror serve --store "$WORK/store" --listen "127.0.0.1:$MPORT" >"$WORK/mirror.out" 2>"$WORK/mirror.log" &
MPID=$!
PIDS+=("$MPID")
MIRROR=127.0.0.1:$MPORT
wait_for "http://$MIRROR/readyz"
[ "$(skopeo inspect --raw --tls-verify=false "docker://$MIRROR/bench/big:v1" | sha256sum)" = \
  "$(skopeo inspect --raw --tls-verify=false "docker://$REGISTRY/bench/big:v1" | sha256sum)" ]

# --- (a) skopeo copy from the mirror vs from docker-registry, caches warm.
warm "$WORK/registry" "$WORK/store/blobs"
for who in mirror registry; do
  if [ $who = mirror ]; then src=$MIRROR; else src=$REGISTRY; fi
  for _ in $(seq "$RUNS"); do skopeo_pull "$src/bench/big:v1"; echo; done | best > "$WORK/t.$who"
  T[$who]=$(cat "$WORK/t.$who")
  echo "bench: (a) skopeo from $who: ${T[$who]} s" >&2
done
RSS_MIB=$(awk '/^VmHWM/ { printf "%.1f", $2/1024 }' "/proc/$MPID/status")

mbps() { awk -v t="$1" -v m="$SIZE_MIB" 'BEGIN { printf "%.0f", m * 1.048576 / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a/b; else print "n/a" }'; }
pull_ratio=$(ratio "${T[registry]}" "${T[mirror]}")     # throughput: mirror / registry
create_ratio=$(ratio "${T[create]}" "${T[skopeo]}")     # time: create / skopeo
met_pull=$(awk -v r="$pull_ratio" 'BEGIN { print (r >= 0.9) ? "met" : "MISSED" }')
met_create=$(awk -v r="$create_ratio" 'BEGIN { print (r <= 1.0) ? "met" : "MISSED" }')
LOAD="$LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)"

cat <<EOF

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, one ${SIZE_MIB} MiB image in ${LAYERS} random gzip'd layers, best of ${RUNS}, skopeo $(skopeo --version | awk '{print $3}'), docker-registry $("$REGISTRY_BIN" --version 2>/dev/null | awk '{print $3}')

| measure | llmgw | docker-registry / skopeo | ratio | goal | |
|---|--:|--:|--:|---|---|
| (a) skopeo copy docker://… oci:DIR, from the mirror vs from docker-registry (s, MB/s) | ${T[mirror]} s, $(mbps "${T[mirror]}") MB/s | ${T[registry]} s, $(mbps "${T[registry]}") MB/s | $pull_ratio (throughput) | >= 0.9 | $met_pull |
| (b) bundle create --image vs skopeo copy from the same upstream (s) | ${T[create]} s | ${T[skopeo]} s | $create_ratio (time) | <= 1.0 | $met_create |
| mirror peak RSS over (a) (MiB) | $RSS_MIB | | | | |
EOF
echo "load average: $LOAD (before / after)"
if [ -n "${BENCH_RESULTS:-}" ]; then
  {
    printf 'oci\tskopeo copy from the mirror vs docker-registry, %s MiB\t%s MB/s\t%s MB/s\t%s\t>= 0.90\t%s\t%s\t%s\n' "$SIZE_MIB" "$(mbps "${T[mirror]}")" "$(mbps "${T[registry]}")" "$pull_ratio" "$RSS_MIB" "$met_pull" "$LOAD"
    printf 'oci\tbundle create --image vs skopeo copy, %s MiB\t%s s\t%s s\t%s\t<= 1.00\t\t%s\t%s\n' "$SIZE_MIB" "${T[create]}" "${T[skopeo]}" "$create_ratio" "$met_create" "$LOAD"
  } >> "$BENCH_RESULTS"
fi
