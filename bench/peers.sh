#!/usr/bin/env bash
# latchkey against the peers issue 17 compares it with, in the same run on
# this machine (bench/README.md, "Peers"). Not part of CI, not needed by the
# build: it needs node >= 18 and npm, and installs bench/peers/'s pinned
# packages (package-lock.json) with `npm ci` when bench/peers/node_modules is
# missing (never when CI is set).
#
#   bench/peers.sh [--rounds R] [--seconds S] [--pairs N] [--only b1|b2|b3|b4] [--no-pin]
#                  [--commit REV | --no-build]
#
#   B1: sequential pairs from Node on one name (an uncontended acquire, its
#       release, back to back on one client): latchkey for Node
#       (bindings/node, docs/node.md; built there with npm ci when missing)
#       against redis-semaphore's Mutex and node-redlock v5 over one master
#       (bench/peers/pairs_node.js), N pairs each, on B3's redis-server.
#   B2: 64 promises in flight from one Node client, each loop on a name of
#       its own (bench/peers/inflight_node.js): latchkey for Node against
#       redis-semaphore's Mutex and node-redlock v5 over one master, N x 25
#       pairs each after N x 5 warm-up pairs (shorter runs leave the Node
#       peers' code cold: redis-semaphore gave 44 thousand pairs/s over
#       10,000 pairs, 59-65 thousand over 50,000), on B3's redis-server.
#   B1 and B2 also run two C programs on the same server and CPU, the floor
#       the Node rows stand on: bench/lock_seq (impl latchkey-c: the C
#       library's lock, defaults) and bench/raw --minimal (impl raw-minimal:
#       SET NX PX and a compare-DEL script, the least work a pair can be, on
#       latchkey's connection layer); sequential for B1, --pipelined 64 for B2.
#   B3: 8 processes on one name (acquire, wait up to 10 s; hold 0-200 us;
#       release; again): latchkey's bench/contend (and bench/contend_poll, the
#       C poll loop, when the build has it), latchkey for Node in 8 node
#       processes, and redis-semaphore's Mutex with its defaults (both
#       bench/peers/contend_redis_semaphore.js, --impl), S seconds each
#       (default 4), on one redis-server.
#   B4: RedLock over 5 masters, pairs back to back: bench/multilock_redlock
#       (latchkey, latchkey-single = master 1 alone, raw, raw-lean) against
#       node-redlock v5 over the same 5 and over master 1 alone, and latchkey
#       for Node's RedLock over the same 5 in the same node process
#       (bench/peers/redlock_node.js --latchkey-node), N pairs each (default 2000).
#   Each of R rounds (default 3) runs B1, B2, B3 then B4, latchkey and the peers
#   in alternating order. Servers: 1 + 5 redis-servers on free loopback ports,
#   pinned to CPU 0, stopped by their PIDs at exit; clients on CPU 1 (B3's
#   workers alternately on CPUs 0 and 1, as bench/contend.h places them).
#
# Options:
#   --rounds R     interleaved rounds (default 3)
#   --seconds S    B3's measured window per run (default 4)
#   --pairs N      B1's and B4's measured pairs per implementation and run (default 2000;
#                  B2 runs 25 N after 5 N warm-up pairs, spread over its 64 loops)
#   --only b1|b2|b3|b4  one of the four
#   --no-pin       no taskset
#   --commit REV   build latchkey as committed at REV (`git archive` into <build>-src),
#                  not the work tree (which other work in progress may leave unbuildable)
#   --no-build     use the build directory as it is
# Environment: LATCHKEY_PEERS_BUILD_DIR (default build-bench-peers; configured
# with -DLATCHKEY_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release), LATCHKEY_JOBS (2).
#
# stdout: every run's JSON lines (with "round"), the medians as JSON lines,
# then markdown tables with the latchkey / peer ratios. stderr: progress
# ("#" lines). Everything stays in <build>/bench-results/peers-<UTC time>/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

note() { echo "# $*" >&2; }
die() { echo "peers.sh: $*" >&2; exit 1; }
posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]] || die "$2 needs a positive integer, got '$1'"; }

rounds=3
seconds=4
pairs=2000
only=""
pin=1
build=1
commit=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) posint "${2:-}" "$1"; rounds=$2; shift ;;
    --seconds) posint "${2:-}" "$1"; seconds=$2; shift ;;
    --pairs) posint "${2:-}" "$1"; pairs=$2; shift ;;
    --only) [[ "${2:-}" =~ ^(b1|b2|b3|b4)$ ]] || die "--only takes b1, b2, b3 or b4"; only=$2; shift ;;
    --no-pin) pin=0 ;;
    --no-build) build=0 ;;
    --commit) [ -n "${2:-}" ] || die "--commit needs a revision"; commit=$2; shift ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown option $1 (--help)" ;;
  esac
  shift
done
[ "$rounds" -le 20 ] || die "--rounds: at most 20"
[ "$seconds" -le 60 ] || die "--seconds: at most 60"
[ "$pairs" -le 1000000 ] || die "--pairs: at most 1000000"
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

for cmd in redis-server redis-cli cmake timeout node npm; do
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd not found"
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || die "node >= 18 needed, found $(node --version)"
if [ "$pin" -eq 1 ] && { ! command -v taskset >/dev/null 2>&1 || [ "$(nproc)" -lt 2 ]; }; then
  note "no taskset or one CPU: pinning off"
  pin=0
fi
if [ "$pin" -eq 1 ]; then
  srv_pin=(taskset -c 0)
  cli_pin=(taskset -c 1)
else
  srv_pin=()
  cli_pin=()
fi
export LK_BENCH_PIN=$pin LK_BENCH_WORKER_CPUS=0,1

# --- the peers' packages: pinned by package-lock.json, never installed in CI ---
peers="$ROOT/bench/peers"
if [ ! -d "$peers/node_modules" ]; then
  [ -z "${CI:-}" ] || die "CI is set: the peer benchmarks install npm packages and do not run in CI"
  note "npm ci in bench/peers (package-lock.json)"
  (cd "$peers" && npm ci --no-audit --no-fund --loglevel=error >&2) ||
    die "npm ci in bench/peers failed (registry unreachable? see the npm output above)"
fi

# --- latchkey for Node (every bench has its rows): the addon, built in
# bindings/node from the work tree (also with --commit, which applies to the
# C programs) ---
# An addon older than the sources it is compiled from is rebuilt (npm run
# build): a stale one would measure code the work tree no longer has.
addon="$ROOT/bindings/node/build/Release/latchkey.node"
if [ ! -f "$addon" ]; then
  [ -z "${CI:-}" ] || die "CI is set: the peer benchmarks install npm packages and do not run in CI"
  note "npm ci in bindings/node (builds the addon)"
  (cd "$ROOT/bindings/node" && npm ci --no-audit --no-fund --loglevel=error >&2) ||
    die "npm ci in bindings/node failed (docs/node.md)"
fi
addon_stale() {
  [ -n "$(find "$ROOT/src" "$ROOT/include" "$ROOT/scripts" "$ROOT/cmake" "$ROOT/bindings/node/src" \
    "$ROOT/bindings/node/CMakeLists.txt" -type f -newer "$addon" -print -quit 2>/dev/null)" ]
}
if addon_stale; then
  if [ "$build" -eq 1 ]; then
    note "bindings/node's addon is older than its sources: npm run build"
    (cd "$ROOT/bindings/node" && npm run build --silent >&2) || die "npm run build in bindings/node failed"
  else
    note "warning: --no-build, and bindings/node's addon is older than its sources (measured as it is)"
  fi
fi

# --- latchkey's programs ---
bdir=${LATCHKEY_PEERS_BUILD_DIR:-build-bench-peers}
case "$bdir" in /*) ;; *) bdir="$ROOT/$bdir" ;; esac
src="$ROOT"
src_desc="work tree at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  src_desc="$src_desc with uncommitted changes"
fi
if [ -n "$commit" ]; then
  [ "$build" -eq 1 ] || die "--commit builds: drop --no-build"
  rev=$(git -C "$ROOT" rev-parse --short --verify "$commit^{commit}" 2>/dev/null) ||
    die "--commit $commit: not a commit"
  src="$bdir-src"
  rm -rf "$src"
  mkdir -p "$src"
  git -C "$ROOT" archive "$rev" | tar -x -C "$src"
  src_desc="commit $rev (git archive in $src)"
elif [ "$build" -eq 0 ]; then
  src_desc="as built in $bdir"
fi
if [ "$build" -eq 1 ]; then
  home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$bdir/CMakeCache.txt" 2>/dev/null || true)
  [ -z "$home" ] || [ "$home" -ef "$src" ] ||
    die "$bdir was configured from $home, not $src: use another LATCHKEY_PEERS_BUILD_DIR"
  note "building contend, multilock_redlock, lock_seq, raw (and contend_poll if present) from $src_desc in $bdir"
  cmake -S "$src" -B "$bdir" -DLATCHKEY_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release >/dev/null ||
    die "cmake configure failed"
  targets=(contend multilock_redlock lock_seq raw)
  [ -f "$src/bench/contend_poll.c" ] && targets+=(contend_poll)
  for t in "${targets[@]}"; do
    cmake --build "$bdir" -j"${LATCHKEY_JOBS:-2}" --target "$t" >/dev/null ||
      note "$t did not build: its runs are skipped"
  done
fi
bin="$bdir/bench"
if want b3; then [ -x "$bin/contend" ] || die "$bin/contend missing (build it, or drop --no-build)"; fi
if want b4; then [ -x "$bin/multilock_redlock" ] || die "$bin/multilock_redlock missing"; fi

results="$bdir/bench-results/peers-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$results/logs"
all="$results/rounds.jsonl"
: >"$all"

# --- private redis-servers on free loopback ports, stopped by PID ---
declare -a server_pids=() server_ports=()
cleanup() {
  local p
  for p in "${server_pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# shellcheck source=bench/servers.sh
. "$ROOT/bench/servers.sh"
start_server "$results/logs"
b3_port=${server_ports[0]}
for _ in 1 2 3 4 5; do start_server "$results/logs"; done
masters=$(IFS=,; echo "${server_ports[*]:1:5}")

{
  echo "latchkey peers run $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "latchkey: $src_desc"
  echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'): B3 on $b3_port, B4 masters $masters"
  echo "latchkey-node: addon built $(date -u -r "$addon" +%Y-%m-%dT%H:%MZ)$(addon_stale && echo ', older than its sources')"
  echo "node $(node --version); $(cd "$peers" && node -p "const l=require('./package-lock.json').packages; ['redis-semaphore','redlock','ioredis'].map(n=>n+' '+l['node_modules/'+n].version).join(', ')")"
  if [ "$pin" -eq 1 ]; then
    echo "placement: servers on CPU 0 (pids ${server_pids[*]}), clients on CPU 1, B3 workers alternately on CPUs 0 and 1"
  else
    echo "placement: unpinned"
  fi
  echo "machine: $(nproc) CPUs; before: $(uptime | sed 's/^ *//')"
} >"$results/header.txt"
sed 's/^/# /' "$results/header.txt" >&2

failed=()
# run LABEL ROUND TIMEOUT CMD...: the command's JSON lines, tagged with the
# round, go to rounds.jsonl; its stderr to logs/.
run() {
  local label=$1 round=$2 limit=$3 rc=0
  shift 3
  note "round $round: $label"
  timeout -k 5 "$limit" "$@" >"$results/logs/$label-$round.out" 2>"$results/logs/$label-$round.err" || rc=$?
  grep '^{' "$results/logs/$label-$round.out" | sed "s/}\$/,\"round\":$round}/" >>"$all" || true
  if [ "$rc" -ne 0 ]; then
    failed+=("$label round $round (exit $rc; $results/logs/$label-$round.err)")
    note "  $label failed (exit $rc)"
  fi
}

# c_pairs LABEL ROUND PROGRAM ARGS...: a C pair program (bench_common.h's one
# line per run) when it was built; skipped, with a note, when it was not.
c_pairs() {
  local label=$1 round=$2 prog=$3
  shift 3
  if [ -x "$bin/$prog" ]; then
    run "$label" "$round" 300 "${cli_pin[@]}" "$bin/$prog" --port "$b3_port" "$@"
  else
    note "round $round: $label skipped ($bin/$prog not built)"
  fi
}

for r in $(seq 1 "$rounds"); do
  if want b1; then
    b1=(latchkey-node redis-semaphore node-redlock-single latchkey-c raw-minimal)
    [ $((r % 2)) -eq 0 ] && b1=($(printf '%s\n' "${b1[@]}" | tac))
    for w in "${b1[@]}"; do
      case $w in
        latchkey-c) c_pairs "pairs-$w" "$r" lock_seq --pairs "$pairs" ;;
        raw-minimal) c_pairs "pairs-$w" "$r" raw --minimal --pairs "$pairs" ;;
        *) run "pairs-$w" "$r" 300 "${cli_pin[@]}" node "$peers/pairs_node.js" --impl "$w" --port "$b3_port" --pairs "$pairs" ;;
      esac
    done
  fi
  if want b2; then
    b2=(latchkey-node redis-semaphore node-redlock-single latchkey-c raw-minimal)
    [ $((r % 2)) -eq 0 ] && b2=($(printf '%s\n' "${b2[@]}" | tac))
    for w in "${b2[@]}"; do
      case $w in
        latchkey-c) c_pairs "inflight-$w" "$r" lock_seq --pipelined 64 --pairs $((pairs * 25)) --warmup $((pairs * 5)) ;;
        raw-minimal) c_pairs "inflight-$w" "$r" raw --minimal --pipelined 64 --pairs $((pairs * 25)) --warmup $((pairs * 5)) ;;
        *) run "inflight-$w" "$r" 300 "${cli_pin[@]}" node "$peers/inflight_node.js" --impl "$w" --port "$b3_port" \
          --inflight 64 --pairs $((pairs * 25)) --warmup $((pairs * 5)) ;;
      esac
    done
  fi
  if want b3; then
    b3=(latchkey latchkey-node semaphore)
    [ -x "$bin/contend_poll" ] && b3+=(poll)
    [ $((r % 2)) -eq 0 ] && b3=($(printf '%s\n' "${b3[@]}" | tac))
    for w in "${b3[@]}"; do
      case $w in
        latchkey) run contend "$r" $((seconds + 40)) "${cli_pin[@]}" "$bin/contend" --port "$b3_port" --seconds "$seconds" ;;
        poll) run contend_poll "$r" $((seconds + 40)) "${cli_pin[@]}" "$bin/contend_poll" --port "$b3_port" --seconds "$seconds" ;;
        semaphore) run redis-semaphore "$r" $((seconds + 60)) "${cli_pin[@]}" node "$peers/contend_redis_semaphore.js" --port "$b3_port" --seconds "$seconds" ;;
        latchkey-node) run contend-latchkey-node "$r" $((seconds + 60)) "${cli_pin[@]}" node "$peers/contend_redis_semaphore.js" --impl latchkey-node --port "$b3_port" --seconds "$seconds" ;;
      esac
    done
  fi
  if want b4; then
    b4=(latchkey node)
    [ $((r % 2)) -eq 0 ] && b4=(node latchkey)
    for w in "${b4[@]}"; do
      case $w in
        latchkey) run multilock_redlock "$r" 300 "${cli_pin[@]}" "$bin/multilock_redlock" --ports "$masters" --pairs "$pairs" --rounds 1 ;;
        node) run node-redlock "$r" 300 "${cli_pin[@]}" node "$peers/redlock_node.js" --ports "$masters" --pairs "$pairs" --rounds 1 --latchkey-node ;;
      esac
    done
  fi
done
echo "after: $(uptime | sed 's/^ *//')" >>"$results/header.txt"
note "after: $(uptime | sed 's/^ *//')"

cat "$all"
{
  echo
  sed 's/^/    /' "$results/header.txt"
  node "$peers/report.js" "$all" | grep -v '^{'
  if [ ${#failed[@]} -gt 0 ]; then
    echo
    echo "Failed or killed runs:"
    printf -- '- %s\n' "${failed[@]}"
  fi
} >"$results/summary.md"
node "$peers/report.js" "$all" | grep '^{' >"$results/medians.jsonl"
cat "$results/medians.jsonl" "$results/summary.md"
note "results in $results"
[ ${#failed[@]} -eq 0 ]
