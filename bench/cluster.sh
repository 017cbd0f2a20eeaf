#!/usr/bin/env bash
# The cluster benchmarks (bench/README.md, "Cluster"): the suite's pair and
# contention programs on a private 3-master Redis Cluster and on one
# standalone master, in the same run, interleaved, then the watchdog at
# 100 000 holds on both. Run through `tools/bench.sh --cluster [--rounds R]`
# (which builds build-bench/ and passes its pinning), or directly:
#
#   bench/cluster.sh --bin build-bench/bench [--rounds R] [--no-pin] [--no-watchdog]
#                    [--watchdog-only] [--pairs N] [--pipe-pairs N] [--wd-locks N]
#
# Servers (3 cluster masters, no replicas, and the standalone one) run on
# CPU 0, clients on CPU 1 (contend's workers alternate over both); every
# server is stopped by its PID at exit. stdout: one JSON line per run, then
# the medians and ratios as a markdown summary; everything stays in
# <bin>/../bench-results/cluster-<UTC time>/.
set -euo pipefail

note() { echo "# $*" >&2; }
die() { echo "cluster.sh: $*" >&2; exit 1; }

bin=""
rounds=5
pin=1
watchdog=1
seq_pairs=10000
pipe_pairs=100000
wd_locks=100000
wd_lease=6000
wd_periods=5
posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]] || die "$2 needs a positive integer, got '$1'"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:-}; shift ;;
    --rounds) posint "${2:-}" "$1"; rounds=$2; shift ;;
    --no-pin) pin=0 ;;
    --no-watchdog) watchdog=0 ;;
    --watchdog-only) rounds=0 ;;
    --pairs) posint "${2:-}" "$1"; seq_pairs=$2; shift ;;
    --pipe-pairs) posint "${2:-}" "$1"; pipe_pairs=$2; shift ;;
    --wd-locks) posint "${2:-}" "$1"; wd_locks=$2; shift ;;
    -h | --help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (--help)" ;;
  esac
  shift
done
[ -n "$bin" ] || die "--bin DIR (the bench build's bench/ directory) is required"
[ "$rounds" -le 20 ] || die "--rounds: at most 20"
for t in raw lock_seq contend watchdog_scale; do
  [ -x "$bin/$t" ] || die "$bin/$t missing (cmake --build <dir> --target cluster_bench)"
done
for cmd in redis-server redis-cli timeout awk; do
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd not found"
done
if [ "$watchdog" -eq 1 ] && ! command -v strace >/dev/null 2>&1; then
  note "strace not found: the watchdog's write system calls are not counted"
fi
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
export LK_BENCH_PIN=$pin LK_BENCH_SERVER_CPUS=0 LK_BENCH_CLIENT_CPUS=1 LK_BENCH_WORKER_CPUS=0,1

results="$bin/../bench-results/cluster-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$results/logs"
all="$results/runs.jsonl"
: >"$all"
failures="$results/failures.txt"
: >"$failures"

# --- servers: 3 cluster masters + 1 standalone, on free loopback ports ---
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-cbench.XXXXXX")
declare -a pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_in_use() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started_port=""
start_server() { # extra redis-server args...; sets started_port
  local p pid ok _
  for _ in $(seq 1 20); do
    p=$((20000 + RANDOM % 30000))
    # a cluster node also listens on port + 10000
    port_in_use "$p" && continue
    port_in_use $((p + 10000)) && continue
    mkdir -p "$tmp/$p"
    "${srv_pin[@]}" redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$tmp/$p" --logfile "$tmp/$p/redis.log" "$@" &
    pid=$!
    pids+=("$pid")
    ok=0
    for _ in $(seq 1 50); do
      if redis-cli -p "$p" PING 2>/dev/null | grep -q PONG; then ok=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if [ "$ok" -eq 1 ]; then started_port=$p; return 0; fi
    kill "$pid" 2>/dev/null || true
  done
  die "could not start redis-server (logs: $tmp)"
}

start_server
sa_port=$started_port
declare -a cl_ports=()
for _ in 1 2 3; do
  start_server --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000
  cl_ports+=("$started_port")
done
redis-cli --cluster create "${cl_ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes \
  >"$results/logs/cluster-create.log" 2>&1 || die "redis-cli --cluster create failed ($results/logs/cluster-create.log)"
for _ in $(seq 1 100); do
  ok=1
  for p in "${cl_ports[@]}"; do
    redis-cli -p "$p" CLUSTER INFO | grep -q 'cluster_state:ok' || ok=0
  done
  [ "$ok" -eq 1 ] && break
  sleep 0.1
done
[ "$ok" -eq 1 ] || die "the cluster never reached cluster_state:ok"
srv_version=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
note "redis-server $srv_version: standalone 127.0.0.1:$sa_port; cluster masters ${cl_ports[*]} (no replicas)"
note "placement: $([ "$pin" -eq 1 ] && echo "servers on CPU 0 (pids ${pids[*]}), clients on CPU 1" || echo unpinned)"
load0=$(uptime)
note "load before: $load0"

# --- server-side counters, summed over a deployment's nodes ---
# evalsha: evalsha + eval calls; calls: every command but the client's and
# this script's own administration (INFO, CLUSTER, CLIENT, HELLO, PING, ...);
# pub: cluster-bus publish messages received (classic + shard); spub and
# publish: SPUBLISH / PUBLISH calls; cpu: used_cpu_user + used_cpu_sys.
node_counts() { # port: "evalsha calls spub publish bus_pub cpu"
  { redis-cli -p "$1" INFO all; redis-cli -p "$1" CLUSTER INFO 2>/dev/null || true; } | tr -d '\r' | awk -F'[:=,]' '
    /^cmdstat_/ { n = substr($1, 9)
      if (n ~ /^(info|cluster|client|hello|ping|command|config|auth|select|readonly|asking)/) next
      calls += $3; if (n == "evalsha" || n == "eval") ev += $3
      if (n == "spublish") sp += $3; if (n == "publish") pu += $3 }
    /^cluster_stats_messages_publish(shard)?_received/ { bus += $2 }
    /^used_cpu_(user|sys):/ { cpu += $2 }
    END { printf "%d %d %d %d %d %.6f\n", ev, calls, sp, pu, bus, cpu }'
}
ports_of() { [ "$1" = cluster ] && echo "${cl_ports[*]}" || echo "$sa_port"; }
snapshot() { # deploy: one line per node "port evalsha calls spub publish bus cpu"
  local p
  for p in $(ports_of "$1"); do echo "$p $(node_counts "$p")"; done
}
# The owner of the run's names is the node whose evalsha count grew most;
# every other node is a non-owner (contention on one name).
delta_fields() { # before after units: JSON fields for the run
  awk -v u="$3" 'NR == FNR { b[$1] = $0; next }
    { split(b[$1], o, " "); dev = $2 - o[2]; dc = $3 - o[3]; dsp = $4 - o[4]; dpu = $5 - o[5]
      dbus = $6 - o[6]; dcpu = $7 - o[7]
      ev += dev; calls += dc; sp += dsp; pu += dpu; cpu += dcpu; nodes++
      if (dev > best) { best = dev; owner = $1; obus = dbus }
      tbus += dbus; used += (dev > 0) }
    END { if (u <= 0) u = 1
      printf ",\"srv_evalsha_per_unit\":%.4f,\"srv_calls_per_unit\":%.4f,\"srv_spublish_per_unit\":%.4f,\"srv_publish_per_unit\":%.4f", ev / u, calls / u, sp / u, pu / u
      printf ",\"nonowner_bus_pub_per_unit\":%.4f,\"nonowner_bus_pub\":%d,\"nodes_used\":%d,\"srv_cpu_us_per_unit\":%.3f", (tbus - obus) / u, tbus - obus, used, cpu * 1e6 / u }' "$1" "$2"
}

field() { # line key
  echo "$1" | awk -v k="\"$2\":" '{ i = index($0, k); if (i == 0) { print 0; exit }
    s = substr($0, i + length(k)); sub(/[,}].*/, "", s); print s }'
}

# One program run on one deployment: its JSON lines get deploy, round and
# the servers' counters per unit (pairs incl. warm-up; acquisitions for B3).
run_on() { # label deploy round limit_s units_kind cmd...
  local label=$1 dep=$2 r=$3 lim=$4 kind=$5 rc=0 out err before after units line extra port
  shift 5
  port=$(ports_of "$dep" | cut -d' ' -f1)
  out="$results/logs/$label-$dep.r$r.out"
  err="$results/logs/$label-$dep.r$r.err"
  before="$results/logs/$label-$dep.r$r.before"
  after="$results/logs/$label-$dep.r$r.after"
  snapshot "$dep" >"$before"
  timeout -k 5 "$lim" "${cli_pin[@]}" "$@" --host 127.0.0.1 --port "$port" >"$out" 2>"$err" || rc=$?
  snapshot "$dep" >"$after"
  if [ "$rc" -ne 0 ]; then
    note "FAILED (exit $rc): $label on $dep, round $r: $(tail -n 2 "$err" | tr '\n' ' ')"
    echo "$label $dep round $r: exit $rc" >>"$failures"
  fi
  if [ "$kind" = pairs ]; then
    line=$(grep '"metric":"pairs_per_s"' "$out" | tail -n 1 || true)
    units=$(awk -v p="$(field "$line" pairs)" 'BEGIN { print int(p * 1.1 + 0.5) }') # + warm-up
  else
    line=$(grep '"metric":"acquisitions_per_s"' "$out" | tail -n 1 || true)
    units=$(field "$line" acquisitions)
  fi
  extra=$(delta_fields "$before" "$after" "$units")
  grep '^{' "$out" | sed "s/}[[:space:]]*\$/,\"deploy\":\"$dep\",\"label\":\"$label\"$extra,\"round\":$r}/" >>"$all" || true
}

round() { # r
  local r=$1 order d k p
  if [ $((r % 2)) -eq 1 ]; then order="standalone cluster"; else order="cluster standalone"; fi
  for d in $order; do
    for p in raw lock_seq; do
      run_on "B1-$p" "$d" "$r" 40 pairs "$bin/$p" --pairs "$seq_pairs" --seconds 15
    done
  done
  for k in 64 256; do
    for d in $order; do
      for p in lock_seq raw; do
        run_on "B2-$k-$p" "$d" "$r" 40 pairs "$bin/$p" --pipelined "$k" --pairs "$pipe_pairs" --seconds 15
      done
    done
  done
  for d in $order; do
    run_on "B3" "$d" "$r" 40 acq "$bin/contend" --seconds 4
  done
  note "round $r done ($(cut -d' ' -f1-3 /proc/loadavg))"
}

[ "$rounds" -eq 0 ] || for r in $(seq 1 "$rounds"); do round "$r"; done

# --- the watchdog: 100 000 holds, plain on each deployment (strace counts
# the client's write system calls), and --cluster-compare on the standalone
# server (the grouping by slot against standalone in one process) ---
wd_run() { # deploy label strace(0/1) extra args...
  local dep=$1 label=$2 st=$3 port before after out err rc=0 tr
  shift 3
  port=$(ports_of "$dep" | cut -d' ' -f1)
  out="$results/logs/wd-$label-$dep.out"
  err="$results/logs/wd-$label-$dep.err"
  tr="$results/logs/wd-$label-$dep.strace"
  before="$out.before"; after="$out.after"
  snapshot "$dep" >"$before"
  if [ "$st" -eq 1 ]; then
    # strace from the start slows the 100 000 acquisitions past their reply
    # timeout; it attaches once every hold is taken (keys counted on every
    # node), a period later, for K periods: the steady state only.
    "${cli_pin[@]}" "$bin/watchdog_scale" --host 127.0.0.1 --port "$port" "$@" >"$out" 2>"$err" &
    local wpid=$! keys=0 per_s k0 k1
    per_s=$(awk -v l="$wd_lease" 'BEGIN { print l / 3000 }')
    for _ in $(seq 1 600); do
      keys=0
      for p in $(ports_of "$dep"); do keys=$((keys + $(redis-cli -p "$p" DBSIZE))); done
      [ "$keys" -ge "$wd_locks" ] && break
      kill -0 "$wpid" 2>/dev/null || break
      sleep 0.2
    done
    sleep "$per_s"
    snapshot "$dep" >"$before.hold"
    timeout -s INT "$(awk -v p="$per_s" -v k="$wd_periods" 'BEGIN { print p * k }')" \
      strace -c -f -p "$wpid" -e trace=write,writev,sendmsg,sendto -o "$tr" 2>>"$err" || true
    snapshot "$dep" >"$after.hold"
    wait "$wpid" || rc=$?
    k0=$(awk '{ s += $2 } END { print s }' "$before.hold")
    k1=$(awk '{ s += $2 } END { print s }' "$after.hold")
    awk -v k="$wd_periods" -v dep="$dep" -v lbl="wd-$label" -v scripts=$(( (k1 - k0) )) -v held="$keys" '
      $NF ~ /^(write|writev|sendmsg|sendto)$/ { n += $4 }
      END { printf "{\"bench\":\"watchdog_scale\",\"impl\":\"latchkey\",\"variant\":\"strace (steady state)\",\"metric\":\"write_syscalls_per_period\",\"value\":%.1f,\"unit\":\"syscalls\",\"evalsha_all_nodes_per_period\":%.1f,\"keys_per_script\":%.2f,\"keys_seen\":%d,\"deploy\":\"%s\",\"label\":\"%s\"}\n", n / k, scripts / k, (scripts > 0 ? held * k / scripts : 0), held, dep, lbl }' "$tr" >>"$all"
  else
    timeout -k 5 240 "${cli_pin[@]}" "$bin/watchdog_scale" --host 127.0.0.1 --port "$port" "$@" \
      >"$out" 2>"$err" || rc=$?
  fi
  snapshot "$dep" >"$after"
  [ "$rc" -eq 0 ] || { note "FAILED (exit $rc): watchdog $label on $dep"; echo "watchdog $label $dep: exit $rc" >>"$failures"; }
  grep '^{' "$out" | sed "s/}[[:space:]]*\$/,\"deploy\":\"$dep\",\"label\":\"wd-$label\"}/" >>"$all" || true
}
if [ "$watchdog" -eq 1 ]; then
  wd_args=(--locks "$wd_locks" --lease "$wd_lease" --periods "$wd_periods")
  for d in standalone cluster; do wd_run "$d" plain 0 "${wd_args[@]}"; done
  if command -v strace >/dev/null 2>&1; then
    for d in standalone cluster; do wd_run "$d" strace 1 "${wd_args[@]}"; done
  fi
  wd_run standalone compare 0 "${wd_args[@]}" --cluster-compare
fi
load1=$(uptime)
note "load after: $load1"

cat "$all"
awk -f "$(dirname "${BASH_SOURCE[0]}")/cluster_report.awk" -v meta_server="$srv_version" \
  -v meta_load0="$load0" -v meta_load1="$load1" -v meta_rounds="$rounds" -v failures="$failures" \
  "$all" | tee "$results/summary.md"
note "lines: $all; summary: $results/summary.md"
