#!/usr/bin/env bash
# What TLS costs per pair (docs/tls.md, bench/README.md "TLS"): B1
# (sequential) and B2 (64 and 256 in flight) with bench/lock_seq over
# plaintext and over TLS, against one redis-server listening on both a
# plaintext and a TLS port (certificates made here with the openssl tool,
# EC P-256, TLS 1.3 as negotiated by default), interleaved round by round in
# the same run, so both meet the same machine. Run through
# `tools/bench.sh --tls [--rounds R]` (which builds build-bench/ and passes
# its pinning), or directly:
#
#   bench/tls.sh --bin build-bench/bench [--rounds R] [--no-pin] [--pairs N] [--pipe-pairs N]
#
# The server runs on CPU 0, the client on CPU 1; the server is stopped by its
# PID at exit. stdout: one JSON line per run, then the medians and the TLS /
# plaintext ratios as a markdown table; everything stays in
# <bin>/../bench-results/tls-<UTC time>/.
set -euo pipefail

note() { echo "# $*" >&2; }
die() { echo "tls.sh: $*" >&2; exit 1; }

bin=""
rounds=5
pin=1
seq_pairs=10000
pipe_pairs=100000
posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]] || die "$2 needs a positive integer, got '$1'"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:-}; shift ;;
    --rounds) posint "${2:-}" "$1"; rounds=$2; shift ;;
    --no-pin) pin=0 ;;
    --pairs) posint "${2:-}" "$1"; seq_pairs=$2; shift ;;
    --pipe-pairs) posint "${2:-}" "$1"; pipe_pairs=$2; shift ;;
    -h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (--help)" ;;
  esac
  shift
done
[ -n "$bin" ] || die "--bin DIR (the bench build's bench/ directory) is required"
[ "$rounds" -le 20 ] || die "--rounds: at most 20"
[ -x "$bin/lock_seq" ] || die "$bin/lock_seq missing (cmake --build <dir> --target lock_seq)"
for cmd in redis-server redis-cli openssl timeout awk; do
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd not found"
done
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

results="$bin/../bench-results/tls-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$results/logs"
all="$results/runs.jsonl"
: >"$all"
failures="$results/failures.txt"
: >"$failures"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/latchkey-tlsbench.XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- certificates: a CA and a server certificate for 127.0.0.1 ---
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
(
  cd "$tmp"
  openssl req -x509 -new -nodes "${ec[@]}" -keyout ca.key -out ca.crt -days 30 \
    -subj "/CN=latchkey bench CA"
  openssl req -new -nodes "${ec[@]}" -keyout server.key -out server.csr -subj /CN=localhost
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
    -sha256 -extfile server.ext -out server.crt
) >"$results/logs/openssl.log" 2>&1 || die "making certificates failed ($results/logs/openssl.log)"

# --- one server, both ports ---
port_in_use() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port="" tls_port=""
for _ in $(seq 1 20); do
  p=$((20000 + RANDOM % 30000))
  t=$((20000 + RANDOM % 30000))
  [ "$p" != "$t" ] || continue
  port_in_use "$p" && continue
  port_in_use "$t" && continue
  "${srv_pin[@]}" redis-server --port "$p" --tls-port "$t" --bind 127.0.0.1 --save "" \
    --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" \
    --tls-cert-file "$tmp/server.crt" --tls-key-file "$tmp/server.key" \
    --tls-ca-cert-file "$tmp/ca.crt" --tls-auth-clients no &
  pid=$!
  ok=0
  for _ in $(seq 1 50); do
    if redis-cli -p "$p" PING 2>/dev/null | grep -q PONG; then ok=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ "$ok" -eq 1 ]; then port=$p; tls_port=$t; break; fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
done
[ -n "$port" ] || die "could not start redis-server with a TLS port (log: $tmp/redis.log)"
srv_version=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
machine="$(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
note "redis-server $srv_version on 127.0.0.1: plaintext $port, TLS $tls_port ($(openssl version))"
note "placement: $([ "$pin" -eq 1 ] && echo "server on CPU 0 (pid $pid), client on CPU 1" || echo unpinned)"
note "machine: $machine; load average $load0"

server_cpu() {
  redis-cli -p "$port" INFO cpu | awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.6f", s }'
}

# One lock_seq run; its JSON line gets the round and the server's CPU per
# pair (warm-up pairs included, as bench.sh counts them).
run() { # label round transport args...
  local label=$1 r=$2 tr=$3 rc=0 out err c0 c1 line pairs warm
  shift 3
  out="$results/logs/$label-$tr.r$r.out"
  err="$results/logs/$label-$tr.r$r.err"
  c0=$(server_cpu)
  if [ "$tr" = tls ]; then
    timeout -k 5 40 "${cli_pin[@]}" "$bin/lock_seq" --host 127.0.0.1 --port "$tls_port" \
      --tls-ca "$tmp/ca.crt" --seconds 15 "$@" >"$out" 2>"$err" || rc=$?
  else
    timeout -k 5 40 "${cli_pin[@]}" "$bin/lock_seq" --host 127.0.0.1 --port "$port" \
      --seconds 15 "$@" >"$out" 2>"$err" || rc=$?
  fi
  c1=$(server_cpu)
  if [ "$rc" -ne 0 ]; then
    note "FAILED (exit $rc): $label $tr round $r: $(tail -n 2 "$err" | tr '\n' ' ')"
    echo "$label $tr round $r: exit $rc" >>"$failures"
    return 0
  fi
  line=$(grep '^{' "$out" | tail -n 1 || true)
  [ -n "$line" ] || { echo "$label $tr round $r: no result" >>"$failures"; return 0; }
  pairs=$(echo "$line" | sed -n 's/.*"pairs":\([0-9]*\).*/\1/p')
  warm=$((${pairs:-0} / 10))
  echo "$line" | awk -v r="$r" -v c="$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" \
    -v n="$((${pairs:-0} + warm))" '{ sub(/}[[:space:]]*$/, "");
      printf "%s,\"server_cpu_us_per_pair\":%.3f,\"round\":%s}\n", $0, (n > 0 ? c * 1e6 / n : 0), r }' >>"$all"
  echo "$line" | sed -n 's/.*"value":\([0-9.]*\).*/\1/p'
}

for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="plain tls"; else order="tls plain"; fi
  msg="round $r:"
  for tr in $order; do
    v=$(run B1 "$r" "$tr" --pairs "$seq_pairs")
    msg="$msg B1 $tr $v"
  done
  for k in 64 256; do
    for tr in $order; do
      v=$(run "B2-$k" "$r" "$tr" --pipelined "$k" --pairs "$pipe_pairs")
      msg="$msg; B2-$k $tr $v"
    done
  done
  note "$msg pairs/s"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

cat "$all"
# Medians per bench + variant + transport, and TLS over plaintext: the ratio
# of the medians and the median of the per-round ratios.
awk -v machine="$machine" -v srv="$srv_version" -v ossl="$(openssl version)" -v rounds="$rounds" \
    -v load0="$load0" -v load1="$load1" -v date="$(date -u +%Y-%m-%d)" '
  function num(s, k,    i) { i = index(s, "\"" k "\":"); if (i == 0) return ""; s = substr(s, i + length(k) + 3); sub(/[,}].*/, "", s); return s }
  function str(s, k,    i) { i = index(s, "\"" k "\":\""); if (i == 0) return ""; s = substr(s, i + length(k) + 4); sub(/".*/, "", s); return s }
  function median(arr, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j + 1] = arr[j]; arr[j + 1] = t }
    return n == 0 ? 0 : (n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2)
  }
  /^\{/ {
    g = str($0, "bench") " " str($0, "variant"); tr = (str($0, "impl") == "latchkey-tls") ? "tls" : "plain"
    if (!(g in seen)) { seen[g] = 1; groups[++ng] = g }
    n = ++cnt[g, tr]
    val[g, tr, n] = num($0, "value"); p50[g, tr, n] = num($0, "p50_us"); p99[g, tr, n] = num($0, "p99_us")
    cpu[g, tr, n] = num($0, "cpu_us_per_pair"); scpu[g, tr, n] = num($0, "server_cpu_us_per_pair")
    byround[g, tr, num($0, "round")] = num($0, "value")
  }
  function med(a, g, tr,    i, x, n) { n = cnt[g, tr]; for (i = 1; i <= n; i++) x[i] = a[g, tr, i]; return median(x, n) }
  END {
    printf "\n## TLS cost per pair (%s)\n\n", date
    printf "Machine: %s. redis-server %s, %s. %d interleaved rounds (load %s before, %s after).\n\n", machine, srv, ossl, rounds, load0, load1
    print "| bench | plaintext pairs/s | TLS pairs/s | TLS / plaintext | paired | p50 µs plain / TLS | p99 µs plain / TLS | client CPU µs/pair plain / TLS | server CPU µs/pair plain / TLS |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= ng; i++) {
      g = groups[i]
      vp = med(val, g, "plain"); vt = med(val, g, "tls")
      m = 0
      for (r = 1; r <= rounds; r++)
        if (byround[g, "plain", r] > 0 && byround[g, "tls", r] > 0) pr[++m] = byround[g, "tls", r] / byround[g, "plain", r]
      printf "| %s | %.0f | %.0f | %.3f | %.3f | %.1f / %.1f | %.1f / %.1f | %.2f / %.2f | %.2f / %.2f |\n", g, vp, vt, (vp > 0 ? vt / vp : 0), median(pr, m),
        med(p50, g, "plain"), med(p50, g, "tls"), med(p99, g, "plain"), med(p99, g, "tls"),
        med(cpu, g, "plain"), med(cpu, g, "tls"), med(scpu, g, "plain"), med(scpu, g, "tls")
      delete pr
    }
  }' "$all" | tee "$results/summary.md"
if [ -s "$failures" ]; then
  note "failed runs:"
  sed 's/^/#   /' "$failures" >&2
fi
note "results: $results"
