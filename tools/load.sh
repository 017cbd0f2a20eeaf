#!/usr/bin/env bash
# Loads this machine the way a busy shared CI box does, to rehearse the test
# suite under starvation (docs/reliability.md, "Tests on a loaded machine").
#
#   tools/load.sh start     # starts the load in the background, returns
#   tools/load.sh status    # what is running
#   tools/load.sh stop      # kills everything start started, by process group
#
# The load (each part in its own process group, ids in $LOAD_DIR/pids):
#   compile  an ASan+UBSan build of the project from scratch, in a loop
#   suite    a second copy of the suite (-L "$LOAD_LABELS", ASan+UBSan,
#            LATCHKEY_JOBS=2) in a loop: its own redis-servers, clusters and
#            fault campaigns
#   memory   python3 holding LOAD_MEMORY_MB and touching every page of it
#   spin     LOAD_SPINNERS shell busy loops, each in its own session: with
#            the kernel's autogroup scheduling (sched_autogroup_enabled=1,
#            Debian's default) CPU time is shared between sessions first, so
#            the test session's share (its test processes and all their
#            redis-servers together) is about 2 cores / (sessions + 1)
#   stall    every LOAD_STALL_EVERY_S seconds, one SCHED_FIFO busy loop per
#            core for LOAD_STALL_MS (chrt; needs root or CAP_SYS_NICE, else
#            skipped): the whole machine stops, as when a hypervisor or a
#            reclaim storm stalls a CI box; LOAD_STALL_MS=0 turns it off.
#            The kernel's RT throttling (sched_rt_runtime_us) bounds it too
#   watchdog runs "stop" after LOAD_SECONDS, so a forgotten load ends
#
# Environment: LOAD_DIR (default /tmp/latchkey-load-<uid>: build dirs, logs,
# pids), LOAD_SECONDS (default 3600), LOAD_MEMORY_MB (default 2048),
# LOAD_SPINNERS (default 4), LOAD_LABELS (default fault|cluster|multilock),
# LOAD_STALL_MS (default 500), LOAD_STALL_EVERY_S (default 3).
# Only tools already installed are used (bash, cmake, the compiler, python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOAD_DIR=${LOAD_DIR:-/tmp/latchkey-load-$(id -u)}
PIDS=$LOAD_DIR/pids
SECONDS_MAX=${LOAD_SECONDS:-3600}
MEMORY_MB=${LOAD_MEMORY_MB:-2048}
SPINNERS=${LOAD_SPINNERS:-4}
LABELS=${LOAD_LABELS:-fault|cluster|multilock}
STALL_MS=${LOAD_STALL_MS:-500}
STALL_EVERY_S=${LOAD_STALL_EVERY_S:-3}

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

# Starts "$@" as the leader of a new process group and records it. setsid
# execs in place here (a background job is not a group leader), so $! is both
# the pid and the group id.
launch() {
  local name=$1
  shift
  setsid "$@" >"$LOAD_DIR/$name.log" 2>&1 </dev/null &
  echo "$name $!" >>"$PIDS"
  echo "load: started $name (process group $!)"
}

group_alive() { kill -0 -- "-$1" 2>/dev/null; }

start() {
  mkdir -p "$LOAD_DIR"
  if [ -s "$PIDS" ]; then
    while read -r name pg; do
      if group_alive "$pg"; then
        echo "load: already running ($name, group $pg); run: $0 stop" >&2
        exit 1
      fi
    done <"$PIDS"
  fi
  : >"$PIDS"
  local deadline=$(($(date +%s) + SECONDS_MAX))
  # Every loop also ends by itself at the deadline.
  launch compile bash -c '
    while [ "$(date +%s)" -lt '"$deadline"' ]; do
      rm -rf "$1/compile"
      cmake -S "$2" -B "$1/compile" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DLATCHKEY_BUILD_TESTS=ON -DLATCHKEY_ASAN=ON -DLATCHKEY_UBSAN=ON \
        -DLATCHKEY_TSAN=OFF -DLATCHKEY_TEST_LAUNCHER= >/dev/null
      cmake --build "$1/compile" --parallel 2 >/dev/null || sleep 5
    done' compile "$LOAD_DIR" "$ROOT"
  # A build dir left by a load started from another checkout is refused by
  # cmake ("does not match the source"), every pass, and the suite copy then
  # never runs: it starts afresh. A pass that ends without a test summary is
  # said in suite.log, so a load that lost this part shows it.
  launch suite bash -c '
    if ! grep -qsx "CMAKE_HOME_DIRECTORY:INTERNAL=$2" "$1/suite/CMakeCache.txt"; then
      rm -rf "$1/suite"
    fi
    while [ "$(date +%s)" -lt '"$deadline"' ]; do
      LATCHKEY_SKIP_DEPS=1 LATCHKEY_JOBS=2 LATCHKEY_BUILD_DIR="$1/suite" \
        "$2/tools/run-tests.sh" --sanitize -L "$3" >"$1/suite-last.log" 2>&1 || true
      grep -E "tests passed|tests failed" "$1/suite-last.log" ||
        { echo "load: suite pass ended without a summary:"; tail -3 "$1/suite-last.log"; sleep 5; }
    done' suite "$LOAD_DIR" "$ROOT" "$LABELS"
  launch memory python3 -c '
import mmap, sys, time
size = int(sys.argv[1]) << 20
deadline = time.monotonic() + int(sys.argv[2])
buf = mmap.mmap(-1, size)
page, v = 4096, 0
while time.monotonic() < deadline:  # touch every page, over and over
    v = (v + 1) & 0xff
    for off in range(0, size, page):
        buf[off] = v
' "$MEMORY_MB" "$SECONDS_MAX"
  for i in $(seq 1 "$SPINNERS"); do
    launch "spin$i" bash -c 'end=$1; n=0
      while :; do n=$((n + 1)); if [ $((n % 100000)) -eq 0 ] && [ "$(date +%s)" -ge "$end" ]; then exit 0; fi; done' \
      spin "$deadline"
  done
  if [ "$STALL_MS" -gt 0 ] && chrt -f 1 true 2>/dev/null; then
    # timeout runs at a higher RT priority than the loops it bounds, so it
    # always gets the CPU to end them; -s KILL: they run no handler.
    launch stall bash -c 'end=$1; secs=$(printf "%d.%03d" $(($2 / 1000)) $(($2 % 1000)))
      while [ "$(date +%s)" -lt "$end" ]; do
        for _ in $(seq 1 "$(nproc)"); do
          chrt -f 2 timeout -s KILL "$secs" chrt -f 1 sh -c "while :; do :; done" &
        done
        wait
        sleep "$3"
      done' stall "$deadline" "$STALL_MS" "$STALL_EVERY_S"
  elif [ "$STALL_MS" -gt 0 ]; then
    echo "load: no SCHED_FIFO here (chrt failed): the stall part is skipped" >&2
  fi
  launch watchdog bash -c 'sleep "$1"; "$2" stop' watchdog "$SECONDS_MAX" "$ROOT/tools/load.sh"
  echo "load: running for at most $SECONDS_MAX s; logs in $LOAD_DIR; stop with: $0 stop"
}

stop() {
  [ -f "$PIDS" ] || { echo "load: nothing started (no $PIDS)"; return 0; }
  local me
  me=$(ps -o pgid= -p $$ | tr -d ' ')
  # The watchdog last: it may be the one running this stop.
  for pass in work watchdog; do
    while read -r name pg; do
      if { [ "$pass" = work ] && [ "$name" = watchdog ]; } ||
        { [ "$pass" = watchdog ] && [ "$name" != watchdog ]; }; then
        continue
      fi
      [ "$pg" = "$me" ] && continue
      if group_alive "$pg"; then
        kill -TERM -- "-$pg" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do group_alive "$pg" || break; sleep 0.2; done
        group_alive "$pg" && kill -KILL -- "-$pg" 2>/dev/null || true
        echo "load: stopped $name (process group $pg)"
      fi
    done <"$PIDS"
  done
  rm -f "$PIDS"
}

status() {
  [ -f "$PIDS" ] || { echo "load: not running"; return 0; }
  while read -r name pg; do
    if group_alive "$pg"; then echo "$name: running (group $pg)"; else echo "$name: ended"; fi
  done <"$PIDS"
  uptime
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage; exit 2 ;;
esac
