#!/usr/bin/env bash
# Profile: what `llmgw mirror serve` spends on one cached JSON answer (the
# revision JSON bench/serve.sh measures) against nginx serving the same bytes
# as a static file, in figures that do not depend on the machine's load:
#
#   - instructions a request (user space), counted by valgrind's callgrind:
#     each server runs under callgrind (nginx as one process: `daemon off;
#     master_process off; worker_processes 1;`), WARM requests are sent, the
#     counters are zeroed and exactly N more are sent on one keep-alive
#     connection; the instructions of those N, divided by N;
#   - system calls a request: `strace -f -c` attached to each server (run
#     natively) over N more requests on one keep-alive connection, by name.
#
# Both servers log every request (nginx's access_log to a file, the mirror's
# access line to stderr in a file), as in bench/serve.sh. It prints both
# servers' figures, the mirror/nginx ratios, and the functions the mirror's
# instructions went to (inclusive).
#
#   bench/json-profile.sh             # N=2000
#   LLMGW=target/release/llmgw N=5000 bench/json-profile.sh
#   KEEP=/tmp/cg.out bench/json-profile.sh   # also keep the mirror's dump
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
WARM=${WARM:-200}
for tool in valgrind callgrind_control callgrind_annotate strace nginx curl python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing" >&2; exit 1; }
done
if [ -z "${LLMGW:-}" ]; then
  cargo build --release --locked -q -p llmgw
  LLMGW=${CARGO_TARGET_DIR:-$PWD/target}/release/llmgw
fi
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_start json-profile
STORE=$WORK/store
mkdir -p "$STORE"/{blobs/sha256,bundles,trust,tmp}
python3 - "$STORE" <<'EOF'
import hashlib, json, os, sys
store = sys.argv[1]
def git_oid(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
files = []
for name, data in [("config.json", b'{"model_type": "llama"}\n'), ("big.gguf", b"x" * 4096)]:
    sha = hashlib.sha256(data).hexdigest()
    d = os.path.join(store, "blobs", "sha256", sha[:2]); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, sha), "wb").write(data)
    files.append({"path": name, "size": len(data), "sha256": sha, "git_oid": git_oid(data), "lfs": False,
                  "publisher_digests": [{"source": "git-blob-sha1", "value": git_oid(data)}]})
m = {"format_version": 1, "created": "2026-12-01T00:00:00Z", "tool": "bench", "arches": ["amd64"],
     "releases": [], "repos": [{"type": "model", "id": "bench/big", "revision": "main",
     "commit": "0123456789abcdef0123456789abcdef01234567", "files": files}], "gaps": []}
data = (json.dumps(m, indent=2) + "\n").encode()
open(os.path.join(store, "bundles", hashlib.sha256(data).hexdigest() + ".json"), "wb").write(data)
EOF
MIRROR_PATH=/api/models/bench/big/revision/main
NGINX_PATH=/revision.json

# Exactly COUNT requests of PATH on one keep-alive connection to PORT.
ask() { # port path count
  python3 -c '
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for _ in range(int(sys.argv[3])):
    c.request("GET", sys.argv[2])
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
' "$1" "$2" "$3"
}

until_up() { # url
  for _ in $(seq 600); do curl -sf "$1" >/dev/null 2>&1 && return; sleep 0.2; done
  echo "bench: $1 never answered" >&2
  exit 1
}

# Starts server WHO (mirror or nginx) on PORT, under the command words
# given before it (valgrind's, or none); sets SPID.
serve() { # who port [wrapper...]
  local who=$1 port=$2
  shift 2
  if [ "$who" = mirror ]; then
    "$@" "$LLMGW" mirror serve --store "$STORE" --listen "127.0.0.1:$port" \
      >"$WORK/mirror-$port.out" 2>"$WORK/mirror-$port.log" &
  else
    sed "s/@PORT@/$port/" "$WORK/nginx.conf.in" >"$WORK/nginx-$port.conf"
    "$@" nginx -p "$WORK" -c "$WORK/nginx-$port.conf" 2>"$WORK/nginx-$port.stderr" &
  fi
  SPID=$!
  PIDS+=("$SPID")
}

stop() { # pid
  kill -INT "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

path_of() { [ "$1" = mirror ] && echo "$MIRROR_PATH" || echo "$NGINX_PATH"; }

# The revision JSON the mirror answers, for nginx to serve as a file.
PORT=$(free_port)
serve mirror "$PORT"
until_up "http://127.0.0.1:$PORT/readyz"
mkdir -p "$WORK/root" "$WORK/nginx-tmp"
curl -sf "http://127.0.0.1:$PORT$MIRROR_PATH" -o "$WORK/root/revision.json"
stop "$SPID"
cat >"$WORK/nginx.conf.in" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $WORK/nginx-@PORT@.pid;
error_log $WORK/nginx-error.log warn;
$( [ "$(id -u)" -eq 0 ] && echo "user root;" )
events { worker_connections 1024; }
http {
  access_log $WORK/nginx-access.log;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  types { application/json json; }
  client_body_temp_path $WORK/nginx-tmp/body;
  proxy_temp_path $WORK/nginx-tmp/proxy;
  fastcgi_temp_path $WORK/nginx-tmp/fastcgi;
  uwsgi_temp_path $WORK/nginx-tmp/uwsgi;
  scgi_temp_path $WORK/nginx-tmp/scgi;
  server {
    listen 127.0.0.1:@PORT@;
    root $WORK/root;
  }
}
EOF

# Instructions a request under callgrind (sets INSTR[who]; the dump in
# $WORK/callgrind-WHO).
declare -A INSTR SYS
count_instructions() { # who
  local who=$1 port out dump total
  port=$(free_port)
  out=$WORK/callgrind.$who
  serve "$who" "$port" valgrind --tool=callgrind --callgrind-out-file="$out" --dump-instr=no
  until_up "http://127.0.0.1:$port$(path_of "$who")"
  ask "$port" "$(path_of "$who")" "$WARM"
  callgrind_control -z "$SPID" >/dev/null
  ask "$port" "$(path_of "$who")" "$N"
  callgrind_control -d "$SPID" >/dev/null
  sleep 1
  # The dump taken after the N requests: what was counted since the zeroing.
  dump=$(ls -t "$out".* 2>/dev/null | sed -n 1p)
  stop "$SPID"
  cp "$dump" "$WORK/callgrind-$who"
  total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
  INSTR[$who]=$((total / N))
}

# System calls a request under `strace -f -c` (sets SYS[who]; the table in
# $WORK/strace-WHO).
count_syscalls() { # who
  local who=$1 port tpid
  port=$(free_port)
  serve "$who" "$port"
  until_up "http://127.0.0.1:$port$(path_of "$who")"
  ask "$port" "$(path_of "$who")" "$WARM"
  strace -f -c -U name,calls -S calls -p "$SPID" -o "$WORK/strace-$who" 2>/dev/null &
  tpid=$!
  sleep 1  # strace attaches to every thread
  ask "$port" "$(path_of "$who")" "$N"
  sleep 0.5
  kill -INT "$tpid"
  wait "$tpid" 2>/dev/null || true
  stop "$SPID"
  SYS[$who]=$(awk '$1 == "total" { print $2 }' "$WORK/strace-$who")
}

for who in mirror nginx; do
  echo "bench: $who: $N requests under callgrind" >&2
  count_instructions "$who"
  echo "bench: $who: $N requests under strace" >&2
  count_syscalls "$who"
done

per() { awk -v a="$1" -v n="$N" 'BEGIN { printf "%.2f", a / n }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "$N requests of the revision JSON ($(wc -c <"$WORK/root/revision.json") bytes), one keep-alive connection"
echo
echo "| a request | mirror | nginx | mirror / nginx |"
echo "|---|---:|---:|---:|"
echo "| instructions (user space, callgrind) | ${INSTR[mirror]} | ${INSTR[nginx]} | $(ratio "${INSTR[mirror]}" "${INSTR[nginx]}") |"
echo "| system calls (strace -f -c) | $(per "${SYS[mirror]}") | $(per "${SYS[nginx]}") | $(ratio "${SYS[mirror]}" "${SYS[nginx]}") |"
for who in mirror nginx; do
  echo
  echo "$who: system calls a request, by name"
  awk -v n="$N" '$2 ~ /^[0-9]+$/ && $1 != "total" { printf "  %-16s %8.2f\n", $1, $2 / n }' "$WORK/strace-$who"
done
[ -n "${KEEP:-}" ] && cp "$WORK/callgrind-mirror" "$KEEP"
echo
echo "mirror: where the instructions go (inclusive)"
callgrind_annotate --inclusive=yes "$WORK/callgrind-mirror" 2>/dev/null | sed -n '1,70p' | grep -v '^$' | tail -50
