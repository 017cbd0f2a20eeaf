#!/usr/bin/env bash
# Installs the dependencies, builds latchkey (Release) and runs the flash-sale
# demo, passing it every argument but the two below.
#
#   tools/run-demo.sh                          # a local server (see the demo's --help)
#   tools/run-demo.sh --redis 127.0.0.1:6379   # or LATCHKEY_REDIS=...: a connection URL
#                                              # (redis://[[user]:password@]host[:port][/db],
#                                              # unix:///path) or host:port; a node of an
#                                              # existing cluster works too
#   tools/run-demo.sh --cluster                # a private 3-master + 3-replica Redis
#                                              # Cluster on free loopback ports
#   tools/run-demo.sh --server valkey-server   # Valkey for the servers the demo starts
#   tools/run-demo.sh --help                   # the demo's own options
#
# --cluster starts six <server> --cluster-enabled yes nodes in a temporary
# directory, forms the cluster with <cli> --cluster create (the cli named
# like the server: valkey-server -> valkey-cli; LATCHKEY_CLI overrides it),
# runs the demo against it, and stops every node by its PID when the script
# ends: normally, on an error, or on Ctrl-C.
#
# Environment: LATCHKEY_SKIP_DEPS=1 skips tools/install-deps.sh;
# LATCHKEY_BUILD_DIR overrides the build directory (default build);
# LATCHKEY_JOBS (default 2) sets build parallelism; LATCHKEY_SERVER is the
# default for --server (redis-server).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

build_dir=${LATCHKEY_BUILD_DIR:-build}
jobs=${LATCHKEY_JOBS:-2}
demo="$build_dir/examples/flash_sale/flash_sale"

cluster=0
server=${LATCHKEY_SERVER:-redis-server}
demo_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cluster) cluster=1 ;;
    --server) [ $# -ge 2 ] || { echo "run-demo: --server needs a name" >&2; exit 2; }
      server=$2; shift ;;
    --server=*) server=${1#--server=} ;;
    *) demo_args+=("$1") ;;
  esac
  shift
done
if [ "$cluster" -eq 1 ]; then
  for a in "${demo_args[@]+"${demo_args[@]}"}"; do
    case "$a" in
      --redis | --redis=*)
        echo "run-demo: --cluster starts its own cluster; for an existing one pass only --redis URL" >&2
        exit 2 ;;
    esac
  done
fi

if [ "${LATCHKEY_SKIP_DEPS:-0}" != 1 ]; then
  "$ROOT/tools/install-deps.sh"
fi

echo "==> configure $build_dir (Release)" >&2
cmake -S "$ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLATCHKEY_BUILD_EXAMPLES=ON \
  -DLATCHKEY_ASAN=OFF -DLATCHKEY_UBSAN=OFF -DLATCHKEY_WERROR=OFF >/dev/null

echo "==> build the demo" >&2
# Build only the demo (and the library) when the target is known.
targets=$(cmake --build "$build_dir" --target help 2>/dev/null || true)
if grep -qw flash_sale <<<"$targets"; then
  cmake --build "$build_dir" --parallel "$jobs" --target flash_sale
else
  cmake --build "$build_dir" --parallel "$jobs"
fi

if [ ! -x "$demo" ]; then
  echo "run-demo: $demo was not built (is examples/flash_sale in the build?)" >&2
  exit 1
fi

if ! command -v "$server" >/dev/null 2>&1; then
  echo "run-demo: $server not found (tools/install-deps.sh installs redis-server and, on Debian 12, valkey-server)" >&2
  exit 1
fi
export LATCHKEY_SERVER=$server # the demo's own private server, when it starts one

if [ "$cluster" -eq 0 ]; then
  echo "==> $demo ${demo_args[*]+"${demo_args[*]}"}" >&2
  exec "$demo" "${demo_args[@]+"${demo_args[@]}"}"
fi

# ---- a private cluster ----------------------------------------------------

cli=${LATCHKEY_CLI:-}
if [ -z "$cli" ]; then
  case "$server" in
    *-server) cli=${server%-server}-cli ;;
    *) cli=redis-cli ;;
  esac
fi
command -v "$cli" >/dev/null 2>&1 || { echo "run-demo: $cli not found (set LATCHKEY_CLI)" >&2; exit 1; }

MASTERS=3
NODES=6 # each master gets one replica
work=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-demo-cluster.XXXXXX")
pids=()
ports=()

stop_cluster() {
  local pid i
  for pid in "${pids[@]+"${pids[@]}"}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]+"${pids[@]}"}"; do
    for i in $(seq 1 50); do # 5 s to shut down, then SIGKILL
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap stop_cluster EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Starts one node on a random free port (its cluster bus is port + 10000);
# a port someone else holds makes the server exit, and another is tried.
# The node counts as up when the process we started answers on the port.
start_node() {
  local dir=$1 attempt i port pid
  mkdir -p "$dir"
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 30000))
    "$server" --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$dir/nodes.conf" --save "" --appendonly no \
      --dir "$dir" --logfile "$dir/server.log" --daemonize no </dev/null >/dev/null 2>&1 &
    pid=$!
    for i in $(seq 1 100); do # 5 s
      kill -0 "$pid" 2>/dev/null || break
      if "$cli" -p "$port" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"; then
        pids+=("$pid")
        ports+=("$port")
        return 0
      fi
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "run-demo: $server did not start (log: $dir/server.log)" >&2
  tail -n 20 "$dir/server.log" >&2 2>/dev/null || true
  return 1
}

echo "==> starting a $MASTERS-master + $((NODES - MASTERS))-replica cluster of $server" >&2
for n in $(seq 1 "$NODES"); do
  start_node "$work/node$n"
done
addrs=()
for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
if ! timeout 60 "$cli" --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
  </dev/null >"$work/create.log" 2>&1; then
  echo "run-demo: $cli --cluster create failed:" >&2
  cat "$work/create.log" >&2
  exit 1
fi
# Every node must see the whole cluster serving before the sale begins.
for i in $(seq 1 300); do # 30 s
  ok=0
  for p in "${ports[@]}"; do
    if "$cli" -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok'; then
      ok=$((ok + 1))
    fi
  done
  [ "$ok" -eq "$NODES" ] && break
  if [ "$i" -eq 300 ]; then
    echo "run-demo: the cluster did not reach cluster_state:ok on every node within 30 s" >&2
    exit 1
  fi
  sleep 0.1
done
echo "cluster: $("$server" --version | head -n 1 | cut -d" " -f1-3)"
echo "         nodes ${addrs[*]} (pids ${pids[*]}; stopped at exit)"

seed=${addrs[0]}
echo "==> $demo --redis $seed ${demo_args[*]+"${demo_args[*]}"}" >&2
rc=0
"$demo" --redis "$seed" "${demo_args[@]+"${demo_args[@]}"}" || rc=$?
exit "$rc"
