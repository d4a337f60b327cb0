#!/usr/bin/env bash
# Installing a Python environment from the mirror, against the same files served by
# nginx as a static PEP 503 tree, with the real uv (pinned, .venv-py) in one run.
#
# The fixture's PyPI stand-in resolves `vllm==0.20.1` for x86_64 to about 95 real (small)
# wheels; `llmgw bundle create --python-env bench=vllm==0.20.1` carries them with their
# .metadata files, `bundle import` puts them in a store, and `mirror serve` serves the
# environment at /pypi/bench-amd64/simple/ (PEP 691 JSON to uv). nginx serves the same
# blobs (hard links) under a PEP 503 HTML tree with #sha256= and data-core-metadata, so
# both answer uv the same questions. Each timed run is a cold `uv pip install --no-cache`
# into a fresh venv (made before the timer starts). Goal: the mirror's speed >= 0.9x
# nginx's (the ratio printed is nginx's time over the mirror's).
#
#   RUNS=10 bench/pyinstall.sh
# With BENCH_RESULTS=FILE, one tab-separated line is appended to FILE (bench/all.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10}
UV=${UV:-$PWD/.venv-py/bin/uv}
for tool in nginx hyperfine curl python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done
[ -x "$UV" ] || { echo "bench: no uv at $UV: run scripts/setup.sh (or set UV)" >&2; exit 1; }

echo "bench: building llmgw and the fixture (release)" >&2
cargo build --release --locked -q -p llmgw -p llmgw-fixture
BIN=${CARGO_TARGET_DIR:-$PWD/target}/release
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start py

# The upstream stand-in; its first stdout line is a JSON object of its URLs.
"$BIN/llmgw-fixture" >"$WORK/fixture.json" 2>"$WORK/fixture.log" &
PIDS+=("$!")
for _ in $(seq 100); do [ -s "$WORK/fixture.json" ] && break; sleep 0.1; done
fx() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())[sys.argv[2]])' "$WORK/fixture.json" "$1"; }

echo "bench: bundle create --python-env bench=vllm==0.20.1 (real uv against the fixture)" >&2
UV_CACHE_DIR=$WORK/uv-create-cache "$BIN/llmgw" bundle create --arch amd64 \
  --engine uv=0.12.20 --python-env bench=vllm==0.20.1 \
  --github-api "$(fx github_api)" --github-raw "$(fx raw_github)" --pypi "$(fx pypi_simple)" \
  --uv "$UV" --cache "$WORK/cache" --out "$WORK/bundle.tar" --json >"$WORK/create.json" 2>"$WORK/create.log" \
  || { cat "$WORK/create.log" >&2; exit 1; }
SHA=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifest_sha256"])' "$WORK/create.json")
"$BIN/llmgw" bundle import "$WORK/bundle.tar" --sha256 "$SHA" --store "$WORK/store" >/dev/null 2>"$WORK/import.log" \
  || { cat "$WORK/import.log" >&2; exit 1; }
find "$WORK/store" -type d -exec chmod 755 {} +
find "$WORK/store/blobs" -type f -exec chmod 644 {} +

# The same files as a static PEP 503 tree.
ROOT=$WORK/nginx-root
FILES=$(python3 - "$WORK/store" "$SHA" "$ROOT" <<'EOF'
import html, json, os, sys, urllib.parse
store, sha, root = sys.argv[1:4]
m = json.load(open(os.path.join(store, "bundles", sha + ".json")))
env = next(e for e in m["python_envs"] if e["name"] == "bench-amd64")
blob = lambda s: os.path.join(store, "blobs", "sha256", s[:2], s)
os.makedirs(os.path.join(root, "files"))
projects = {}
for f in env["files"]:
    projects.setdefault(f["project"], []).append(f)
    os.link(blob(f["sha256"]), os.path.join(root, "files", f["filename"]))
    if f.get("metadata"):
        os.link(blob(f["metadata"]["sha256"]), os.path.join(root, "files", f["filename"] + ".metadata"))
links = []
for p, fs in sorted(projects.items()):
    os.makedirs(os.path.join(root, "simple", p))
    rows = []
    for f in fs:
        a = f'<a href="/files/{urllib.parse.quote(f["filename"])}#sha256={f["sha256"]}"'
        if f.get("requires_python"):
            a += f' data-requires-python="{html.escape(f["requires_python"])}"'
        if f.get("metadata"):
            a += f' data-core-metadata="sha256={f["metadata"]["sha256"]}"'
        rows.append(a + f'>{html.escape(f["filename"])}</a><br/>')
    open(os.path.join(root, "simple", p, "index.html"), "w").write(
        "<!DOCTYPE html><html><body>\n" + "\n".join(rows) + "\n</body></html>\n")
    links.append(f'<a href="/simple/{p}/">{p}</a><br/>')
open(os.path.join(root, "simple", "index.html"), "w").write(
    "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
print(len(env["files"]))
EOF
)
[ "$FILES" -ge 50 ] || { echo "bench: only $FILES files in the environment; the goal needs at least 50" >&2; exit 1; }

MPORT=$(free_port)
"$BIN/llmgw" mirror serve --store "$WORK/store" --listen "127.0.0.1:$MPORT" >"$WORK/mirror.out" 2>"$WORK/mirror.log" &
PIDS+=("$!")
start_nginx "$ROOT"
MIRROR=http://127.0.0.1:$MPORT/pypi/bench-amd64/simple
NGINX=$NGINX/simple
for _ in $(seq 100); do
  curl -sf "$MIRROR/" >/dev/null && curl -sf "$NGINX/" >/dev/null && break
  sleep 0.1
done

# The environment is for Python 3.12: the carried interpreter, installed once through the
# mirror's uv download list, makes the venvs.
env -i PATH=/usr/bin:/bin HOME="$WORK" UV_NO_CONFIG=1 UV_PYTHON_INSTALL_DIR="$WORK/pythons" \
  UV_PYTHON_DOWNLOADS_JSON_URL="http://127.0.0.1:$MPORT/uv/python-downloads.json" \
  "$UV" python install -q 3.12 2>"$WORK/python.log" || { cat "$WORK/python.log" >&2; exit 1; }
PY=$(env -i PATH=/usr/bin:/bin HOME="$WORK" UV_NO_CONFIG=1 UV_PYTHON_INSTALL_DIR="$WORK/pythons" \
  "$UV" python find --managed-python 3.12)

# One timed install: cold uv (no cache), a fresh venv made in --prepare.
cat > "$WORK/install.sh" <<EOF
#!/bin/sh
exec env -i PATH=/usr/bin:/bin HOME=$WORK UV_NO_CONFIG=1 UV_NO_BUILD=1 \\
  "$UV" pip install -q --no-cache --python "$WORK/venv/bin/python" --index-url "\$1" vllm==0.20.1
EOF
chmod +x "$WORK/install.sh"
printf '#!/bin/sh\nrm -rf "%s/venv" && exec "%s" -m venv --without-pip "%s/venv"\n' "$WORK" "$PY" "$WORK" > "$WORK/prepare.sh"
chmod +x "$WORK/prepare.sh"
PREPARE=$WORK/prepare.sh
for url in "$MIRROR" "$NGINX"; do   # both must install the whole set
  "$PREPARE" && "$WORK/install.sh" "$url"
  n=$("$WORK/venv/bin/python" -c 'import importlib.metadata as m; print(len(list(m.distributions())))')
  [ "$n" -ge 50 ] || { echo "bench: only $n distributions installed from $url" >&2; exit 1; }
done

echo "bench: $RUNS cold installs of $FILES wheels from each (load before: $LOAD_BEFORE)" >&2
hyperfine -N --runs "$RUNS" --prepare "$PREPARE" --export-json "$WORK/times.json" \
  -n mirror "$WORK/install.sh $MIRROR" -n nginx "$WORK/install.sh $NGINX" >&2
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$WORK/times.json" "$FILES" "$LOAD_BEFORE" "$LOAD_AFTER" "${BENCH_RESULTS:-}" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
m, n = r["mirror"]["median"], r["nginx"]["median"]
ratio = n / m
verdict = "met" if ratio >= 0.9 else "MISSED"
print(f"| uv pip install, {sys.argv[2]} wheels, cold | mirror {m:.3f} s | nginx {n:.3f} s | "
      f"speed {ratio:.2f}x nginx | goal >= 0.9 | {verdict} | load {sys.argv[3]} -> {sys.argv[4]} |")
if sys.argv[5]:
    with open(sys.argv[5], "a") as out:
        out.write(f"pyinstall\tuv pip install, {sys.argv[2]} wheels, cold, vs nginx (speed)\t{m:.3f} s\t"
                  f"{n:.3f} s\t{ratio:.2f}\t>= 0.90\t\t{verdict}\t{sys.argv[3]} / {sys.argv[4]}\n")
EOF
