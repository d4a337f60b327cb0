#!/usr/bin/env bash
# The main job, end to end on this machine:
#   1. start the fixture upstream (a loopback stand-in for GitHub, llmgw's
#      release server and the Hugging Face Hub),
#   2. `llmgw bundle create`: llmgw's signed release, llama.cpp b6123,
#      model acme/tiny and dataset acme/data, every byte checked,
#   3. `llmgw bundle trust add` + `llmgw bundle import` into a mirror store,
#   4. `llmgw mirror serve`,
#   5. download from the mirror with `hf download` (huggingface_hub 2.4.0)
#      and curl, and check every byte with sha256sum against the manifest.
# Background processes are stopped and temp files removed on exit; with
# KEEP=1 the bundle, the store and the running mirror are kept for a look
# afterwards (the last lines say where, and how to stop the mirror).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh demo
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
LLMGW=$TARGET/debug/llmgw
FIXTURE=$TARGET/debug/llmgw-fixture
HF=$PWD/.venv/bin/hf

if [ ! -x "$LLMGW" ] || [ ! -x "$FIXTURE" ]; then
  echo "demo: building llmgw and the fixture with cargo (debug build into $TARGET);"
  echo "      the first build takes about 10-20 minutes on 2 cores, later ones seconds"
else
  echo "demo: bringing the llmgw build up to date (cargo build)"
fi
if [ -t 2 ]; then
  cargo build --locked -p llmgw -p llmgw-fixture # progress bar on a terminal
else
  cargo build --locked --quiet -p llmgw -p llmgw-fixture
fi

WORK=$(mktemp -d /tmp/llmgw-demo.XXXXXX)
PIDS=()
SERVE_PID=
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then
    for p in "${PIDS[@]}"; do [ "$p" = "$SERVE_PID" ] || kill "$p" 2>/dev/null || true; done
    echo
    echo "KEEP=1: kept $WORK: the bundle site.tar.zst (and site.tar.zst.sha256), the store store/,"
    if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
      echo "        and the mirror still serving it on ${MIRROR:-?} (log: $WORK/serve.log)."
      echo "        When done: kill $SERVE_PID; rm -rf $WORK"
    else
      echo "        When done: rm -rf $WORK"
    fi
    return
  fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
step() { printf '\n== %s\n' "$*"; }

step "1. the fixture upstream"
mkfifo "$WORK/fixture.out"
"$FIXTURE" >"$WORK/fixture.out" 2>"$WORK/fixture.log" &
PIDS+=("$!")
read -r FX <"$WORK/fixture.out"
fx() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$FX" "$1"; }
echo "GitHub API  $(fx github_api)"
echo "llmgw API   $(fx llmgw_api)"
echo "HF Hub      $(fx hf_endpoint)"

step "2. llmgw bundle create"
env -u HF_TOKEN -u HF_ENDPOINT "$LLMGW" bundle create \
  --arch amd64 \
  --github-api "$(fx github_api)" --hf-endpoint "$(fx hf_endpoint)" \
  --llmgw v0.5.0 --llmgw-api "$(fx llmgw_api)" --trust "$(fx trust_key)" \
  --engine llamacpp=b6123 --model acme/tiny@main --dataset acme/data \
  --cache "$WORK/cache" --out "$WORK/site.tar.zst" --rehearse | tee "$WORK/create.out"
SHA=$(cut -d' ' -f1 "$WORK/site.tar.zst.sha256")
echo "bundle $WORK/site.tar.zst, manifest sha256 $SHA (carry this apart from the bundle)"

step "3. llmgw bundle trust add + llmgw bundle import"
STORE=$WORK/store
"$LLMGW" bundle trust add "$(fx trust_key)" --store "$STORE"
"$LLMGW" bundle import "$WORK/site.tar.zst" --sha256 "$SHA" --store "$STORE"
"$LLMGW" mirror list --store "$STORE"

step "4. llmgw mirror serve"
mkfifo "$WORK/serve.out"
"$LLMGW" mirror serve --store "$STORE" --listen 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.log" &
SERVE_PID=$!
PIDS+=("$SERVE_PID")
read -r LINE <"$WORK/serve.out"
echo "$LINE"
MIRROR=${LINE##* }
for _ in $(seq 100); do curl -sf "$MIRROR/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "$MIRROR/healthz"

# What the manifest says each file must hash to: "<sha256> <what>" lines.
MANIFEST=$STORE/bundles/$SHA.json
expected() {
  python3 - "$MANIFEST" "$1" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
for r in m["repos"]:
    if sys.argv[2] == "hf" and r["id"] == "acme/tiny":
        for f in r["files"]:
            print(f["sha256"], r["commit"], f["path"])
for r in m["releases"]:
    if sys.argv[2] == "gh" and r["repo"] == "ggml-org/llama.cpp":
        for a in r["assets"]:
            print(a["sha256"], r["tag"], a["name"])
EOF
}

step "5a. hf download acme/tiny from the mirror (huggingface_hub 2.4.0), then hf cache verify"
export HF_ENDPOINT=$MIRROR HF_HOME=$WORK/hf-home HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_UPDATE_CHECK=1
unset HF_TOKEN
# hf colours its output whatever it writes to; https://no-color.org/ turns that off.
[ -t 1 ] || export NO_COLOR=1
SNAP=$("$HF" download acme/tiny --cache-dir "$WORK/hf-cache" --quiet)
"$HF" cache verify acme/tiny --cache-dir "$WORK/hf-cache"
n=0
while read -r sha commit path; do
  case "$SNAP" in */"$commit") ;; *) echo "demo: snapshot $SNAP is not commit $commit" >&2; exit 1 ;; esac
  echo "$sha  $SNAP/$path" >> "$WORK/hf.sums"
  n=$((n + 1))
done < <(expected hf)
sha256sum -c "$WORK/hf.sums" | sed "s|$SNAP/||"
echo "hf download: $n files, every sha256 as the manifest says"

step "5b. curl the llama.cpp release from the mirror's GitHub routes"
curl -sf -H 'Accept: application/vnd.github+json' \
  "$MIRROR/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6123" |
  python3 -c 'import json,sys; [print(a["digest"], a["browser_download_url"]) for a in json.load(sys.stdin)["assets"]]'
mkdir -p "$WORK/gh"
n=0
while read -r sha tag name; do
  curl -sSf -o "$WORK/gh/$name" "$MIRROR/ggml-org/llama.cpp/releases/download/$tag/$name"
  echo "$sha  $WORK/gh/$name" >> "$WORK/gh.sums"
  n=$((n + 1))
done < <(expected gh)
sha256sum -c "$WORK/gh.sums" | sed "s|$WORK/gh/||"
echo "curl: $n assets, every sha256 as the manifest says"

step "5c. a Range request and the metrics"
# No `head` on a writer under pipefail: a reader that stops early gives the
# writer SIGPIPE (Python: BrokenPipeError) and fails the whole pipeline.
mapfile -t gh_lines < <(expected gh)
name=${gh_lines[0]##* }
curl -sSf -r 0-99 -o /dev/null -w 'Range 0-99: HTTP %{http_code}, %{size_download} bytes\n' \
  "$MIRROR/ggml-org/llama.cpp/releases/download/b6123/$name"
curl -sf -o "$WORK/metrics" "$MIRROR/metrics"
grep -m 8 -E '^llmgw_mirror_(bundles|blobs|http_requests_total)' "$WORK/metrics"

step "done: created, imported, served and downloaded; every byte checked"
