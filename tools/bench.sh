#!/usr/bin/env bash
# Runs latchkey's whole benchmark suite against private redis-servers
# (bench/README.md). Not part of CI.
#
#   tools/bench.sh                 # build, 5 interleaved rounds, pinned: JSON lines + summary
#   tools/bench.sh --rounds 3      # fewer rounds
#   tools/bench.sh --no-pin        # let the scheduler place servers and clients
#   tools/bench.sh --cluster       # the cluster benchmarks instead (bench/cluster.sh)
#   tools/bench.sh --tls           # B1 and B2 over TLS against plaintext instead (bench/tls.sh)
#   bench/peers.sh                 # the npm peers (redis-semaphore, node-redlock) in the same run (bench/README.md "Peers")
#
# Options:
#   --rounds R          interleaved rounds of L, B1, B2 (default 5); registered
#                       programs run in at most R of them (their REPS, default 3)
#   --no-pin            no taskset: servers and clients go where the scheduler puts them
#   --no-build          use build-bench/ as it is
#   --no-registered     only L, B1 and B2 (skip B3, B5, B6 and every registered program)
#   --only REGEX        of the registered programs, run only those whose target matches
#   --budget S          seconds the registered programs may take in all (default 180);
#                       their repetitions shrink to fit
#   --time-limit S      the whole run's target (default 360): no round starts past it once
#                       3 rounds are done, and no extra repetition of a registered program
#   --pairs N           measured pairs per sequential run (default 10000)
#   --pipe-pairs N      measured pairs per pipelined run (default 100000)
#   --cluster           B1, B2, B3 and the watchdog on a private 3-master cluster and on one
#                       standalone master, interleaved (bench/cluster.sh; --rounds, --no-pin,
#                       --pairs, --pipe-pairs and --no-build apply)
#   --tls               B1 and B2 (64, 256) with lock_seq over plaintext and over TLS against
#                       one server with both ports, interleaved (bench/tls.sh; --rounds,
#                       --no-pin, --pairs, --pipe-pairs and --no-build apply; needs openssl)
# Environment: LATCHKEY_BENCH_BUILD_DIR (default build-bench), LATCHKEY_JOBS (default 2).
# Installs nothing: needs cmake, a C compiler, hiredis and libuv (tools/install-deps.sh),
# redis-server, redis-benchmark, redis-cli, timeout and (unless --no-pin) taskset.
#
# stdout: one JSON object per line (medians over the rounds), then a markdown summary.
# stderr: progress, placement and per-run figures, each line starting "#".
# Every run's own lines, the logs and the summary stay in build-bench/bench-results/<time>/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,37p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
note() { echo "# $*" >&2; }
die() { echo "bench.sh: $*" >&2; exit 1; }

rounds=5
pin=1
build=1
registered=1
only=""
budget=180
time_limit=360
min_rounds=3
seq_pairs=10000
pipe_pairs=100000
server_cpu=0
client_cpu=1
cluster=0
tls=0

posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]] || die "$2 needs a positive integer, got '$1'"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) posint "${2:-}" "$1"; rounds=$2; shift ;;
    --no-pin) pin=0 ;;
    --no-build) build=0 ;;
    --no-registered) registered=0 ;;
    --only) [ -n "${2:-}" ] || die "--only needs a pattern"; only=$2; shift ;;
    --budget) posint "${2:-}" "$1"; budget=$2; shift ;;
    --time-limit) posint "${2:-}" "$1"; time_limit=$2; shift ;;
    --pairs) posint "${2:-}" "$1"; seq_pairs=$2; shift ;;
    --pipe-pairs) posint "${2:-}" "$1"; pipe_pairs=$2; shift ;;
    --cluster) cluster=1 ;;
    --tls) tls=1 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
  shift
done
[ "$rounds" -le 20 ] || die "--rounds: at most 20"
t_begin=$(date +%s)

# --- prerequisites (checked, never installed) ---
for cmd in redis-server redis-benchmark redis-cli cmake awk timeout; do
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd not found (tools/install-deps.sh installs the build deps; redis-server/redis-benchmark come with the redis package)"
done
if [ "$pin" -eq 1 ]; then
  command -v taskset >/dev/null 2>&1 || die "taskset not found (util-linux); or run with --no-pin"
  if [ "$(nproc)" -lt 2 ]; then
    note "only $(nproc) CPU: pinning turned off"
    pin=0
  fi
fi
if [ "$pin" -eq 1 ]; then
  srv_pin=(taskset -c "$server_cpu")
  cli_pin=(taskset -c "$client_cpu")
else
  srv_pin=()
  cli_pin=()
fi
# What the programs read (bench/README.md, "Adding a benchmark").
export LK_BENCH_PIN=$pin LK_BENCH_SERVER_CPUS=$server_cpu LK_BENCH_CLIENT_CPUS=$client_cpu
export LK_BENCH_WORKER_CPUS="$server_cpu,$client_cpu"

# --- build ---
build_dir=${LATCHKEY_BENCH_BUILD_DIR:-build-bench}
bin="$build_dir/bench"
core_targets=(lock_seq raw raw_seq)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
results="$build_dir/bench-results/$stamp"
mkdir -p "$results/logs"
failures="$results/failures.txt"
: >"$failures"
if [ "$build" -eq 1 ]; then
  note "build: $build_dir (Release, LATCHKEY_BUILD_BENCH=ON, warnings are errors)"
  if ! cmake -S "$ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLATCHKEY_BUILD_BENCH=ON \
         -DLATCHKEY_BUILD_TESTS=OFF -DLATCHKEY_BUILD_EXAMPLES=OFF -DLATCHKEY_WERROR=ON \
         -DLATCHKEY_ASAN=OFF -DLATCHKEY_UBSAN=OFF >"$results/logs/configure.log" 2>&1; then
    cat "$results/logs/configure.log" >&2
    die "configure failed"
  fi
  if ! cmake --build "$build_dir" -j "${LATCHKEY_JOBS:-2}" --target "${core_targets[@]}" \
         >"$results/logs/build-core.log" 2>&1; then
    grep -E 'error|Error' "$results/logs/build-core.log" | head -n 20 >&2 || true
    die "build of ${core_targets[*]} failed (log: $results/logs/build-core.log)"
  fi
fi
for t in "${core_targets[@]}"; do
  [ -x "$bin/$t" ] || die "$bin/$t missing (build first)"
done
# --cluster: the cluster benchmarks run on their own servers (bench/cluster.sh).
if [ "$cluster" -eq 1 ]; then
  if [ "$build" -eq 1 ] && ! cmake --build "$build_dir" -j "${LATCHKEY_JOBS:-2}" --target cluster_bench \
         >"$results/logs/build-cluster.log" 2>&1; then
    die "build of cluster_bench failed (log: $results/logs/build-cluster.log)"
  fi
  exec "$ROOT/bench/cluster.sh" --bin "$bin" --rounds "$rounds" --pairs "$seq_pairs" \
    --pipe-pairs "$pipe_pairs" $([ "$pin" -eq 1 ] || echo --no-pin)
fi

# --tls: plaintext against TLS on one server (bench/tls.sh); lock_seq is built.
if [ "$tls" -eq 1 ]; then
  exec "$ROOT/bench/tls.sh" --bin "$bin" --rounds "$rounds" --pairs "$seq_pairs" \
    --pipe-pairs "$pipe_pairs" $([ "$pin" -eq 1 ] || echo --no-pin)
fi

# The registered programs: build-bench/bench/suite.manifest, written by
# lk_bench_suite() in bench/lists/*.cmake. Each builds on its own, so one
# area's broken work in progress costs only its own figures.
declare -a reg_target=() reg_servers=() reg_seconds=() reg_reps=() reg_args=()
manifest="$bin/suite.manifest"
if [ "$registered" -eq 1 ]; then
  [ -f "$manifest" ] || die "$manifest missing (configure first)"
  while IFS=$'\t' read -r t s secs reps args; do
    case "$t" in '#'* | '') continue ;; esac
    if [ -n "$only" ] && ! [[ "$t" =~ $only ]]; then
      continue
    fi
    if [ "$build" -eq 1 ] &&
       ! cmake --build "$build_dir" -j "${LATCHKEY_JOBS:-2}" --target "$t" >"$results/logs/build-$t.log" 2>&1; then
      note "build of $t failed: skipped (log: $results/logs/build-$t.log)"
      echo "$t: build failed ($(grep -m1 -E 'error' "$results/logs/build-$t.log" || echo 'see log'))" >>"$failures"
      continue
    fi
    if [ ! -x "$bin/$t" ]; then
      echo "$t: not built" >>"$failures"
      continue
    fi
    reg_target+=("$t")
    reg_servers+=("$s")
    reg_seconds+=("$secs")
    reg_reps+=("$reps")
    reg_args+=("$args")
  done <"$manifest"
fi
# Repetitions: each program's REPS, at most the rounds; over the budget, the
# program costing most loses a repetition first (never below one).
declare -a reg_n=()
total=0
for i in "${!reg_target[@]}"; do
  n=${reg_reps[$i]}
  [ "$n" -le "$rounds" ] || n=$rounds
  [ "$n" -ge 1 ] || n=1
  reg_n+=("$n")
  total=$((total + n * reg_seconds[i]))
done
if [ "$total" -gt "$budget" ]; then
  note "registered programs would take ~${total} s, budget ${budget} s: fewer repetitions"
  for _ in $(seq 1 200); do
    [ "$total" -gt "$budget" ] || break
    worst=-1
    for i in "${!reg_target[@]}"; do
      [ "${reg_n[$i]}" -gt 1 ] || continue
      if [ "$worst" -lt 0 ] || [ $((reg_n[i] * reg_seconds[i])) -gt $((reg_n[worst] * reg_seconds[worst])) ]; then
        worst=$i
      fi
    done
    [ "$worst" -ge 0 ] || break
    reg_n[$worst]=$((reg_n[worst] - 1))
    total=$((total - reg_seconds[worst]))
  done
fi
max_servers=1
for s in "${reg_servers[@]}"; do
  [ "$s" -le "$max_servers" ] || max_servers=$s
done

# --- private redis-servers on free loopback ports, stopped by PID ---
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-bench.XXXXXX")
declare -a server_pids=() server_ports=()
cleanup() {
  local p
  for p in "${server_pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=bench/servers.sh
. "$ROOT/bench/servers.sh"

start_server "$tmp"
port=${server_ports[0]}
# RedLock-style programs get their own set of masters (all on the server CPU).
declare -a multi_ports=()
if [ "$max_servers" -gt 1 ]; then
  for _ in $(seq 1 "$max_servers"); do
    start_server "$tmp"
    multi_ports+=("${server_ports[${#server_ports[@]}-1]}")
  done
fi
rcli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }

srv_version=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
if [ "$pin" -eq 1 ]; then
  placement="pinned: redis-server(s) on CPU $server_cpu (pids ${server_pids[*]}), clients on CPU $client_cpu, B3 workers alternately on CPUs $server_cpu and $client_cpu"
else
  placement="unpinned: servers and clients wherever the scheduler puts them"
fi
load0=$(cut -d' ' -f1-3 /proc/loadavg)
note "redis-server $srv_version on 127.0.0.1:$port${multi_ports[*]:+; masters ${multi_ports[*]}}"
note "placement: $placement"
note "machine: $(nproc) CPUs, load average $load0"
note "rounds: $rounds; sequential $seq_pairs pairs, pipelined $pipe_pairs pairs at 64 and 256 in flight"
for i in "${!reg_target[@]}"; do
  note "registered: ${reg_target[$i]} (servers ${reg_servers[$i]}, ~${reg_seconds[$i]} s, ${reg_n[$i]} repetition(s)) ${reg_args[$i]}"
done
note "results: $results"

all="$results/rounds.jsonl"
: >"$all"

# Runs one client program, bounded; keeps its JSON lines with the round.
run() { # label round limit_s cmd...
  local label=$1 r=$2 lim=$3 rc=0 out err
  shift 3
  out="$results/logs/$label.r$r.out"
  err="$results/logs/$label.r$r.err"
  timeout -k 5 "$lim" "$@" >"$out" 2>"$err" || rc=$?
  grep '^{' "$out" | sed "s/}[[:space:]]*\$/,\"round\":$r}/" >>"$all" || true
  if [ "$rc" -ne 0 ]; then
    note "FAILED (exit $rc$([ "$rc" -eq 124 ] && echo ', timed out')): $label round $r: $(tail -n 3 "$err" | tr '\n' ' ')"
    echo "$label round $r: exit $rc$([ "$rc" -eq 124 ] && echo ' (timed out)')" >>"$failures"
  fi
  return 0
}

last() { # file key: a numeric field of the last line
  tail -n 1 "$1" 2>/dev/null | awk -v k="\"$2\":" '{ i = index($0, k); if (i == 0) { print "-"; next }
    s = substr($0, i + length(k)); sub(/[,}].*/, "", s); print s }'
}

# --- L: redis-benchmark, the minimal-work ceiling ---
# SET NX PX on fresh random keys; compare-DEL as a script (EVALSHA) on keys
# prefilled with the token by one server-side loop, so nearly every call
# deletes (the hit rate is reported).
cdel_sha=$(rcli SCRIPT LOAD "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end")
prefill_n=500000
rb() { # round variant clients pipeline n keyspace_prefill cmd...
  local r=$1 variant=$2 c=$3 p=$4 n=$5 pre=$6 line before=0 after=0 hit="" ks=1000000
  shift 6
  [ "$pre" -eq 0 ] || ks=$pre
  if [ "$pre" -gt 0 ]; then
    rcli EVAL "for i=0,tonumber(ARGV[1])-1 do redis.call('set', string.format('lkbench:L:d:%012d', i), 'tok') end return 1" 0 "$pre" >/dev/null
    before=$(rcli DBSIZE)
  fi
  line=$(timeout -k 5 60 "${cli_pin[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$c" -P "$p" -n "$n" \
           -r "$ks" --csv "$@" 2>>"$results/logs/redis-benchmark.err" | tail -n 1) || true
  if [ "$pre" -gt 0 ]; then
    after=$(rcli DBSIZE)
    hit=$(awk -v b="$before" -v a="$after" -v n="$n" 'BEGIN { printf "%.1f", 100 * (b - a) / n }')
    rcli FLUSHALL >/dev/null
  fi
  if [ -z "$line" ]; then
    echo "redis-benchmark $variant round $r: no result" >>"$failures"
    return 0
  fi
  echo "$line" | awk -F',' -v v="$variant" -v c="$c" -v p="$p" -v n="$n" -v hit="$hit" -v r="$r" '{
      gsub(/"/, ""); printf "{\"bench\":\"L\",\"impl\":\"redis-benchmark\",\"variant\":\"%s\",\"metric\":\"ops_per_s\",\"value\":%s,\"unit\":\"ops/s\",\"p50_us\":%.1f,\"p99_us\":%.1f,\"clients\":%s,\"pipeline\":%s,\"requests\":%s", v, $2, $5 * 1000, $7 * 1000, c, p, n
      if (hit != "") printf ",\"hit_pct\":%s", hit
      printf ",\"round\":%s}\n", r }' >>"$all"
}

round_L() { # round
  local r=$1
  rcli FLUSHALL >/dev/null
  rb "$r" "PING -c 1 -P 1" 1 1 20000 0 PING
  rb "$r" "SET NX PX -c 1 -P 1" 1 1 20000 0 SET 'lkbench:L:s:__rand_int__' v NX PX 30000
  rb "$r" "compare-DEL -c 1 -P 1" 1 1 20000 "$prefill_n" EVALSHA "$cdel_sha" 1 'lkbench:L:d:__rand_int__' tok
  rb "$r" "SET NX PX -c 50 -P 16" 50 16 200000 0 SET 'lkbench:L:s:__rand_int__' v NX PX 30000
  rb "$r" "compare-DEL -c 50 -P 16" 50 16 200000 "$prefill_n" EVALSHA "$cdel_sha" 1 'lkbench:L:d:__rand_int__' tok
  rcli FLUSHALL >/dev/null
  # The minimal pair: one SET NX PX, then one compare-DEL.
  awk -v r="$r" '
    index($0, "\"bench\":\"L\"") && index($0, "\"round\":" r "}") {
      v = $0; sub(/.*"value":/, "", v); sub(/,.*/, "", v)
      if (index($0, "SET NX PX -c 1 -P 1")) s1 = v
      if (index($0, "compare-DEL -c 1 -P 1")) d1 = v
      if (index($0, "SET NX PX -c 50 -P 16")) s50 = v
      if (index($0, "compare-DEL -c 50 -P 16")) d50 = v
    }
    END {
      if (s1 > 0 && d1 > 0) printf "{\"bench\":\"L\",\"impl\":\"minimal\",\"variant\":\"-c 1 -P 1\",\"metric\":\"pairs_per_s\",\"value\":%.1f,\"unit\":\"pairs/s\",\"round\":%s}\n", 1 / (1 / s1 + 1 / d1), r
      if (s50 > 0 && d50 > 0) printf "{\"bench\":\"L\",\"impl\":\"minimal\",\"variant\":\"-c 50 -P 16\",\"metric\":\"pairs_per_s\",\"value\":%.1f,\"unit\":\"pairs/s\",\"round\":%s}\n", 1 / (1 / s50 + 1 / d50), r
    }' "$all" >>"$all.tmp" && cat "$all.tmp" >>"$all" && rm -f "$all.tmp"
}

server_cpu() { # the server's CPU seconds (user + sys), from INFO cpu
  rcli INFO cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'
}

# A pair program's run, with the server's CPU per pair added to its line:
# immune to the machine's load, unlike the rates.
run_pair() { # label round warmup cmd...
  local label=$1 r=$2 warm=$3 c0 c1 n0
  shift 3
  n0=$(wc -l <"$all")
  c0=$(server_cpu)
  run "$label" "$r" 40 "$@"
  c1=$(server_cpu)
  if [ "$(wc -l <"$all")" -gt "$n0" ]; then
    awk -v n0="$n0" -v c="$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" -v w="$warm" '
      NR > n0 && /"pairs":/ {
        p = $0; sub(/.*"pairs":/, "", p); sub(/[,}].*/, "", p)
        if (p + w > 0) sub(/,"round":/, sprintf(",\"server_cpu_us_per_pair\":%.3f,\"round\":", c * 1e6 / (p + w)))
      }
      { print }' "$all" >"$all.tmp" && mv "$all.tmp" "$all"
  fi
}

# B1/B2: the raw loop and latchkey alternate which goes first.
round_pairs() { # round
  local r=$1 k order
  # raw-minimal: bench/raw --minimal, SET NX PX + compare-DEL on the same layer.
  if [ $((r % 2)) -eq 1 ]; then order="raw lock_seq raw-minimal raw_seq"; else order="raw_seq raw-minimal lock_seq raw"; fi
  for p in $order; do
    run_pair "B1-$p" "$r" $((seq_pairs / 10)) "${cli_pin[@]}" "$bin/${p%-minimal}" \
      $([ "$p" = raw-minimal ] && echo --minimal) --host 127.0.0.1 --port "$port" \
      --pairs "$seq_pairs" --seconds 15
  done
  for k in 64 256; do
    if [ $((r % 2)) -eq 1 ]; then order="raw lock_seq raw-minimal"; else order="raw-minimal lock_seq raw"; fi
    for p in $order; do
      run_pair "B2-$k-$p" "$r" $((pipe_pairs / 10)) "${cli_pin[@]}" "$bin/${p%-minimal}" \
        $([ "$p" = raw-minimal ] && echo --minimal) --host 127.0.0.1 --port "$port" \
        --pipelined "$k" --pairs "$pipe_pairs" --seconds 15
    done
  done
  # The lean lock layout (docs/lock.md, "Lean layout") at 64 in flight.
  run_pair "B2-64-lock_seq-lean" "$r" $((pipe_pairs / 10)) "${cli_pin[@]}" "$bin/lock_seq" --lean \
    --host 127.0.0.1 --port "$port" --pipelined 64 --pairs "$pipe_pairs" --seconds 15
  note "round $r: B1 raw $(last "$results/logs/B1-raw.r$r.out" value) latchkey $(last "$results/logs/B1-lock_seq.r$r.out" value)" \
       "raw-hiredis $(last "$results/logs/B1-raw_seq.r$r.out" value) raw-minimal $(last "$results/logs/B1-raw-minimal.r$r.out" value);" \
       "B2 64: raw $(last "$results/logs/B2-64-raw.r$r.out" value) latchkey $(last "$results/logs/B2-64-lock_seq.r$r.out" value);" \
       "256: raw $(last "$results/logs/B2-256-raw.r$r.out" value) latchkey $(last "$results/logs/B2-256-lock_seq.r$r.out" value) pairs/s"
}

round_registered() { # round
  local r=$1 i t ports args
  for i in "${!reg_target[@]}"; do
    [ "$r" -le "${reg_n[$i]}" ] || continue
    t=${reg_target[$i]}
    if [ "$r" -gt 1 ] && [ $(($(date +%s) + reg_seconds[i])) -gt "$deadline" ]; then
      note "time limit: no repetition $r of $t"
      echo "$t: repetition $r skipped (time limit)" >>"$failures"
      continue
    fi
    read -r -a args <<<"${reg_args[$i]}"
    if [ "${reg_servers[$i]}" -gt 1 ]; then
      ports=$(IFS=,; echo "${multi_ports[*]:0:${reg_servers[$i]}}")
      run "$t" "$r" $((reg_seconds[i] + 15)) "${cli_pin[@]}" "$bin/$t" --host 127.0.0.1 \
        --port "${multi_ports[0]}" --ports "$ports" "${args[@]}"
    else
      run "$t" "$r" $((reg_seconds[i] + 15)) "${cli_pin[@]}" "$bin/$t" --host 127.0.0.1 --port "$port" "${args[@]}"
    fi
    note "round $r: $t: $(grep -c '^{' "$results/logs/$t.r$r.out" || true) JSON lines"
  done
}

deadline=$((t_begin + time_limit))
done_rounds=0
round_secs=0
for r in $(seq 1 "$rounds"); do
  t_round=$(date +%s)
  if [ "$r" -gt "$min_rounds" ] && [ $((t_round + round_secs)) -gt "$deadline" ]; then
    note "time limit (${time_limit} s): stopping after $done_rounds rounds"
    echo "rounds $r-$rounds skipped (time limit ${time_limit} s)" >>"$failures"
    break
  fi
  round_L "$r"
  note "round $r: L PING $(grep "\"PING -c 1 -P 1\"" "$all" | tail -n 1 | awk -F'"value":' '{ split($2, a, ","); print a[1] }') ops/s," \
       "minimal pair -c 1 -P 1 $(grep '"impl":"minimal","variant":"-c 1 -P 1"' "$all" | tail -n 1 | awk -F'"value":' '{ split($2, a, ","); print a[1] }') pairs/s"
  round_pairs "$r"
  round_secs=$(($(date +%s) - t_round))
  round_registered "$r"
  done_rounds=$r
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
note "load average after: $load1"

# --- medians, goals, summary ---
awk -f "$ROOT/bench/report.awk" -v meta_server="$srv_version" -v meta_placement="$placement" \
  -v meta_rounds="$done_rounds" -v meta_load0="$load0" -v meta_load1="$load1" \
  -v meta_secs="$(($(date +%s) - t_begin))" -v failures="$failures" "$all" | tee "$results/summary.md"
note "all lines: $all; summary: $results/summary.md"
