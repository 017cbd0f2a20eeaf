#!/usr/bin/env bash
# Runs latchkey's lock benchmarks against a private redis-server (bench/README.md).
#
#   tools/bench.sh                      # 5 interleaved rounds, pinned, JSON + summary
#   tools/bench.sh --rounds 3 --no-pin  # fewer rounds, no CPU pinning
#
# Options:
#   --rounds R       interleaved rounds, medians reported (default 5)
#   --no-pin         do not pin redis-server to CPU 0 and the clients to CPU 1
#   --pairs N        measured pairs per sequential run (default 20000)
#   --pipe-pairs N   measured pairs per pipelined run (default 200000)
#   --depth K        lanes (pairs in flight) in the pipelined runs (default 64)
#   --no-build       use the existing build directory as it is
# Environment: LATCHKEY_BENCH_BUILD_DIR (default build-bench), LATCHKEY_JOBS
# (default 2). Installs nothing: needs cmake, a C compiler, hiredis and libuv
# (tools/install-deps.sh), redis-server, redis-benchmark, redis-cli, taskset.
#
# stdout: one JSON object per line (DESIGN.md §6), then a markdown summary.
# stderr: progress, placement and per-round figures, each line starting "#".
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
note() { echo "# $*" >&2; }
die() { echo "bench.sh: $*" >&2; exit 1; }

rounds=5
pin=1
seq_pairs=20000
pipe_pairs=200000
depth=64
build=1
rb_seq_n=50000
server_cpu=0
client_cpu=1

posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]] || die "$2 needs a positive integer, got '$1'"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) posint "${2:-}" "$1"; rounds=$2; shift ;;
    --no-pin) pin=0 ;;
    --pairs) posint "${2:-}" "$1"; seq_pairs=$2; shift ;;
    --pipe-pairs) posint "${2:-}" "$1"; pipe_pairs=$2; shift ;;
    --depth) posint "${2:-}" "$1"; depth=$2; shift ;;
    --no-build) build=0 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
  shift
done
rb_pipe_n=$((depth * 4000))

# --- prerequisites (checked, never installed) ---
for cmd in redis-server redis-benchmark redis-cli cmake awk; do
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

# --- build ---
build_dir=${LATCHKEY_BENCH_BUILD_DIR:-build-bench}
bin="$build_dir/bench"
if [ "$build" -eq 1 ]; then
  note "build: $build_dir (Release, LATCHKEY_BUILD_BENCH=ON, warnings are errors)"
  mkdir -p "$build_dir"
  if ! { cmake -S "$ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLATCHKEY_BUILD_BENCH=ON \
           -DLATCHKEY_BUILD_TESTS=OFF -DLATCHKEY_BUILD_EXAMPLES=OFF -DLATCHKEY_WERROR=ON \
           -DLATCHKEY_ASAN=OFF -DLATCHKEY_UBSAN=OFF &&
         cmake --build "$build_dir" -j "${LATCHKEY_JOBS:-2}" --target lock_seq raw_seq; } \
       >"$build_dir/bench-build.log" 2>&1; then
    cat "$build_dir/bench-build.log" >&2
    die "build failed"
  fi
fi
[ -x "$bin/lock_seq" ] && [ -x "$bin/raw_seq" ] || die "$bin/lock_seq or raw_seq missing (build first)"

# --- private redis-server on a free loopback port ---
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-bench.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_in_use() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

port=""
for _ in $(seq 1 20); do
  p=$((20000 + RANDOM % 30000))
  port_in_use "$p" && continue
  "${srv_pin[@]}" redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$tmp" --logfile "$tmp/redis-$p.log" &
  server_pid=$!
  for _ in $(seq 1 50); do
    if redis-cli -h 127.0.0.1 -p "$p" PING 2>/dev/null | grep -q PONG; then
      port=$p
      break
    fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] && break
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
done
[ -n "$port" ] || die "could not start redis-server on a free port (logs: $tmp)"

srv_version=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
if [ "$pin" -eq 1 ]; then
  srv_aff=$(taskset -pc "$server_pid" | sed 's/.*: //')
  placement="pinned: redis-server (pid $server_pid) on CPU $srv_aff, clients on CPU $client_cpu"
else
  placement="unpinned: redis-server (pid $server_pid) and clients wherever the scheduler puts them"
fi
note "redis-server $srv_version on 127.0.0.1:$port, --save \"\" --appendonly no"
note "placement: $placement"
note "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
note "rounds: $rounds interleaved; sequential $seq_pairs pairs, pipelined $pipe_pairs pairs at depth $depth"

# --- one round ---
client() { "${cli_pin[@]}" "$@" || die "failed: $*"; }

# Appends one line {"value":ops/s,"p50_us":..,"p99_us":..} from redis-benchmark --csv.
redis_bench() { # out pipeline n
  local out=$1 pipeline=$2 n=$3 line
  line=$(client redis-benchmark -h 127.0.0.1 -p "$port" -c 1 -n "$n" -P "$pipeline" -r 1000000 \
           --csv SET 'bench:k:__rand_int__' v NX PX 30000 | tail -n 1)
  echo "$line" | awk -F',' '{ gsub(/"/, ""); $0 = $0
      printf "{\"value\":%s,\"p50_us\":%.1f,\"p99_us\":%.1f}\n", $2, $5 * 1000, $7 * 1000 }' >>"$out"
}

# Prints the value of a numeric "key" in a one-line JSON object.
jget() { # key
  awk -v k="\"$1\":" '{ i = index($0, k); if (i == 0) { print "nan"; next }
    s = substr($0, i + length(k)); sub(/[,}].*/, "", s); print s }'
}

last() { tail -n 1 "$1" | jget "$2"; }

for r in $(seq 1 "$rounds"); do
  redis-cli -h 127.0.0.1 -p "$port" FLUSHALL >/dev/null
  client "$bin/raw_seq" --port "$port" --pairs "$seq_pairs" >>"$tmp/raw_seq.jsonl"
  client "$bin/lock_seq" --port "$port" --pairs "$seq_pairs" >>"$tmp/lk_seq.jsonl"
  redis_bench "$tmp/rb_seq.jsonl" 1 "$rb_seq_n"
  client "$bin/raw_seq" --port "$port" --pipelined "$depth" --pairs "$pipe_pairs" >>"$tmp/raw_pipe.jsonl"
  client "$bin/lock_seq" --port "$port" --pipelined "$depth" --pairs "$pipe_pairs" >>"$tmp/lk_pipe.jsonl"
  redis_bench "$tmp/rb_pipe.jsonl" "$depth" "$rb_pipe_n"
  note "round $r/$rounds: seq raw $(last "$tmp/raw_seq.jsonl" pairs_per_s)" \
       "latchkey $(last "$tmp/lk_seq.jsonl" pairs_per_s) pairs/s," \
       "SET NX PX $(last "$tmp/rb_seq.jsonl" value) ops/s;" \
       "pipelined raw $(last "$tmp/raw_pipe.jsonl" pairs_per_s)" \
       "latchkey $(last "$tmp/lk_pipe.jsonl" pairs_per_s) pairs/s," \
       "SET NX PX -P $depth $(last "$tmp/rb_pipe.jsonl" value) ops/s"
done
note "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- medians over rounds ---
agg() { # file key what(median|min|max)
  jget "$2" <"$1" | sort -g | awk -v w="$3" '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (w == "min") print v[1]; else if (w == "max") print v[NR];
    else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
med() { agg "$1" "$2" median; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

for k in raw_seq lk_seq raw_pipe lk_pipe; do
  printf -v "${k}_pairs_per_s" '%s' "$(med "$tmp/$k.jsonl" pairs_per_s)"
  for f in p50_us p99_us acq_p50_us rel_p50_us; do
    printf -v "${k}_${f}" '%.1f' "$(med "$tmp/$k.jsonl" "$f")"
  done
  printf -v "${k}_min" '%s' "$(agg "$tmp/$k.jsonl" pairs_per_s min)"
  printf -v "${k}_max" '%s' "$(agg "$tmp/$k.jsonl" pairs_per_s max)"
done
printf -v lk_seq_cpp '%.3f' "$(med "$tmp/lk_seq.jsonl" commands_per_pair)"
printf -v lk_pipe_cpp '%.3f' "$(med "$tmp/lk_pipe.jsonl" commands_per_pair)"
for k in rb_seq rb_pipe; do
  printf -v "${k}_value" '%s' "$(med "$tmp/$k.jsonl" value)"
  for f in p50_us p99_us; do
    printf -v "${k}_${f}" '%.1f' "$(med "$tmp/$k.jsonl" "$f")"
  done
  printf -v "${k}_min" '%s' "$(agg "$tmp/$k.jsonl" value min)"
  printf -v "${k}_max" '%s' "$(agg "$tmp/$k.jsonl" value max)"
done
# A minimal pair is two round trips (SET NX PX, then a compare-DEL script),
# so half the SET NX PX rate is the pair ceiling at that pipeline depth.
ceil_seq=$(calc '%.1f' "$rb_seq_value / 2")
ceil_pipe=$(calc '%.1f' "$rb_pipe_value / 2")

pinned=$([ "$pin" -eq 1 ] && echo true || echo false)

# --- JSON lines ---
lk_line() { # bench impl value limit ceiling p50 p99 acq rel min max inflight cpp
  printf '{"bench":"%s","impl":"%s","metric":"pairs_per_s","value":%.0f,"unit":"pairs/s",' "$1" "$2" "$3"
  printf '"limit":%.0f,"ratio":%s,"ceiling":%.0f,"ceiling_ratio":%s,' "$4" "$(calc '%.3f' "$3 / $4")" \
    "$5" "$(calc '%.3f' "$3 / $5")"
  printf '"p50_us":%s,"p99_us":%s,"acq_p50_us":%s,"rel_p50_us":%s,"min":%.0f,"max":%.0f,' \
    "$6" "$7" "$8" "$9" "${10}" "${11}"
  printf '"inflight":%s,"connections":1,"commands_per_pair":%s,"rounds":%s,"pinned":%s}\n' \
    "${12}" "${13}" "$rounds" "$pinned"
}
raw_line() { # bench value ceiling p50 p99 acq rel min max inflight
  printf '{"bench":"%s","impl":"raw","metric":"pairs_per_s","value":%.0f,"unit":"pairs/s",' "$1" "$2"
  printf '"ceiling":%.0f,"ceiling_ratio":%s,"p50_us":%s,"p99_us":%s,"acq_p50_us":%s,"rel_p50_us":%s,' \
    "$3" "$(calc '%.3f' "$2 / $3")" "$4" "$5" "$6" "$7"
  printf '"min":%.0f,"max":%.0f,"inflight":%s,"connections":1,"rounds":%s,"pinned":%s}\n' \
    "$8" "$9" "${10}" "$rounds" "$pinned"
}
rb_line() { # value p50 p99 min max pipeline ceiling n
  printf '{"bench":"set_nx_px","impl":"redis-benchmark","metric":"ops_per_s","value":%.0f,"unit":"ops/s",' "$1"
  printf '"pair_ceiling":%.0f,"p50_us":%s,"p99_us":%s,"min":%.0f,"max":%.0f,' "$7" "$2" "$3" "$4" "$5"
  printf '"clients":1,"pipeline":%s,"requests":%s,"rounds":%s,"pinned":%s}\n' "$6" "$8" "$rounds" "$pinned"
}

lk_line lock_seq_pairs latchkey "$lk_seq_pairs_per_s" "$raw_seq_pairs_per_s" "$ceil_seq" \
  "$lk_seq_p50_us" "$lk_seq_p99_us" "$lk_seq_acq_p50_us" "$lk_seq_rel_p50_us" \
  "$lk_seq_min" "$lk_seq_max" 1 "$lk_seq_cpp"
raw_line lock_seq_pairs "$raw_seq_pairs_per_s" "$ceil_seq" "$raw_seq_p50_us" "$raw_seq_p99_us" \
  "$raw_seq_acq_p50_us" "$raw_seq_rel_p50_us" "$raw_seq_min" "$raw_seq_max" 1
rb_line "$rb_seq_value" "$rb_seq_p50_us" "$rb_seq_p99_us" "$rb_seq_min" "$rb_seq_max" 1 "$ceil_seq" "$rb_seq_n"
lk_line lock_pipelined_pairs latchkey "$lk_pipe_pairs_per_s" "$raw_pipe_pairs_per_s" "$ceil_pipe" \
  "$lk_pipe_p50_us" "$lk_pipe_p99_us" "$lk_pipe_acq_p50_us" "$lk_pipe_rel_p50_us" \
  "$lk_pipe_min" "$lk_pipe_max" "$depth" "$lk_pipe_cpp"
raw_line lock_pipelined_pairs "$raw_pipe_pairs_per_s" "$ceil_pipe" "$raw_pipe_p50_us" "$raw_pipe_p99_us" \
  "$raw_pipe_acq_p50_us" "$raw_pipe_rel_p50_us" "$raw_pipe_min" "$raw_pipe_max" "$depth"
rb_line "$rb_pipe_value" "$rb_pipe_p50_us" "$rb_pipe_p99_us" "$rb_pipe_min" "$rb_pipe_max" "$depth" "$ceil_pipe" "$rb_pipe_n"

# --- markdown summary ---
fmt() { calc '%.0f' "$1"; }
cat <<EOF

## latchkey lock benchmarks: medians of $rounds interleaved rounds

redis-server $srv_version, one connection, $placement.

| mode | latchkey pairs/s | raw loop (limit) | ratio | SET NX PX ceiling | latchkey / ceiling | latchkey p50 / p99 µs | raw p50 / p99 µs |
|---|---|---|---|---|---|---|---|
| sequential | $(fmt "$lk_seq_pairs_per_s") ($(fmt "$lk_seq_min")–$(fmt "$lk_seq_max")) | $(fmt "$raw_seq_pairs_per_s") ($(fmt "$raw_seq_min")–$(fmt "$raw_seq_max")) | $(calc '%.2f' "$lk_seq_pairs_per_s / $raw_seq_pairs_per_s") | $(fmt "$ceil_seq") | $(calc '%.2f' "$lk_seq_pairs_per_s / $ceil_seq") | $lk_seq_p50_us / $lk_seq_p99_us | $raw_seq_p50_us / $raw_seq_p99_us |
| pipelined, $depth in flight | $(fmt "$lk_pipe_pairs_per_s") ($(fmt "$lk_pipe_min")–$(fmt "$lk_pipe_max")) | $(fmt "$raw_pipe_pairs_per_s") ($(fmt "$raw_pipe_min")–$(fmt "$raw_pipe_max")) | $(calc '%.2f' "$lk_pipe_pairs_per_s / $raw_pipe_pairs_per_s") | $(fmt "$ceil_pipe") | $(calc '%.2f' "$lk_pipe_pairs_per_s / $ceil_pipe") | $lk_pipe_p50_us / $lk_pipe_p99_us | $raw_pipe_p50_us / $raw_pipe_p99_us |

- raw loop: the same EVALSHA acquire + release scripts, same connection count and depth, no library logic (bench/raw_seq.c).
- SET NX PX ceiling: redis-benchmark \`-c 1 -P 1\` ($(fmt "$rb_seq_value") ops/s, range $(fmt "$rb_seq_min")–$(fmt "$rb_seq_max")) and \`-c 1 -P $depth\` ($(fmt "$rb_pipe_value") ops/s, range $(fmt "$rb_pipe_min")–$(fmt "$rb_pipe_max")), halved: a minimal pair is two round trips.
- Ranges are min–max over the rounds. latchkey commands per pair: $lk_seq_cpp sequential, $lk_pipe_cpp pipelined.
EOF
