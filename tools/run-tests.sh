#!/usr/bin/env bash
# Builds latchkey and runs its test suite with ctest.
#
#   tools/run-tests.sh                 # deps, build/ (warnings are errors), all tests
#   tools/run-tests.sh -L lock         # only one primitive's tests (a ctest label)
#   tools/run-tests.sh -L fault        # the fault suite and the nemesis
#   tools/run-tests.sh --sanitize      # build-asan/ with ASan + UBSan
#   tools/run-tests.sh --valgrind      # build-valgrind/: a representative subset
#                                      # under valgrind memcheck (-R overrides it)
#   tools/run-tests.sh --tsan          # build-tsan/: the thread checks under TSan
#   tools/run-tests.sh --valkey        # the same tests against valkey-server
#                                      # (standalone and cluster), in the same
#                                      # build dir; combines with the others
#   tools/run-tests.sh -L cluster      # the Redis Cluster tests (3+3 nodes each)
#   tools/run-tests.sh -R client -V    # anything else is passed to ctest
#
# Environment: LATCHKEY_SKIP_DEPS=1 skips tools/install-deps.sh;
# LATCHKEY_BUILD_DIR overrides the build directory; LATCHKEY_JOBS (default 2)
# sets build and ctest parallelism; LK_TEST_TIMING scales the tests' liveness
# bounds (3 by default under --sanitize); LK_REDIS_SERVER names the server
# binary the tests start (--valkey sets valkey-server).
# The ctest output is also written to <build dir>/ctest.log (ctest-valkey.log
# with --valkey).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() {
  sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

sanitize=0
valgrind=0
tsan=0
valkey=0
ctest_args=()
select_given=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    --valgrind) valgrind=1 ;;
    --tsan) tsan=1 ;;
    --valkey) valkey=1 ;;
    -R | -L | -E | -I) select_given=1; ctest_args+=("$arg") ;;
    -h | --help) usage; exit 0 ;;
    *) ctest_args+=("$arg") ;;
  esac
done

jobs=${LATCHKEY_JOBS:-2}

if [ "${LATCHKEY_SKIP_DEPS:-0}" != 1 ]; then
  "$ROOT/tools/install-deps.sh"
fi

log_name=ctest.log
if [ "$valkey" -eq 1 ]; then
  export LK_REDIS_SERVER=valkey-server
  unset LK_REDIS_CLI # valkey-cli, from the server's name
  if ! command -v valkey-server >/dev/null 2>&1 || ! command -v valkey-cli >/dev/null 2>&1; then
    echo "run-tests: --valkey needs valkey-server and valkey-cli (tools/install-deps.sh installs them on Debian 12, from bookworm-backports)" >&2
    exit 1
  fi
  log_name=ctest-valkey.log
fi

cmake_args=(
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DLATCHKEY_WERROR=ON
  -DLATCHKEY_BUILD_TESTS=ON
  -DLATCHKEY_BUILD_EXAMPLES=ON
)
if [ "$sanitize" -eq 1 ]; then
  build_dir=${LATCHKEY_BUILD_DIR:-build-asan}
  cmake_args+=(-DLATCHKEY_ASAN=ON -DLATCHKEY_UBSAN=ON)
  # Later options win, so the caller's own settings override these.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  export LK_TEST_TIMING=${LK_TEST_TIMING:-3}
elif [ "$valgrind" -eq 1 ]; then
  # Memcheck over a representative subset (reliability.md T39: T01-lite, T13,
  # T16, T23, plus hygiene, cancel and close paths, and the TLS layer: a
  # session, failed verifications, a record cut mid-way, a forked child, the host-loop
  # adapters' detach paths, and the blocking API's close under blocked
  # threads and lost lease): every definite leak or
  # memory error fails the test. Forked workers run under valgrind too.
  build_dir=${LATCHKEY_BUILD_DIR:-build-valgrind}
  cmake_args+=(-DLATCHKEY_ASAN=OFF -DLATCHKEY_UBSAN=OFF -DLATCHKEY_TSAN=OFF
    -DLATCHKEY_BUILD_EXAMPLES=OFF -DLATCHKEY_BUILD_BENCH=OFF
    "-DLATCHKEY_TEST_LAUNCHER=valgrind;--quiet;--error-exitcode=99;--leak-check=full;--errors-for-leak-kinds=definite;--show-leak-kinds=definite;--track-origins=no")
  export LK_TEST_TIMING=${LK_TEST_TIMING:-10}
  if [ "$select_given" -eq 0 ]; then
    ctest_args+=(-R '^(lock\.(reentrancy_counts|second_owner_excluded_then_admitted|pubsub_killed_while_waiting|cancel_in_flight_gives_back_late_grant|lost_release_reply_is_applied_once)|watchdog\.(held_for_many_leases|deleted_key_fires_lost_within_a_period|paused_server_loses_lease_by_deadline)|core\.(close_lock_while_acquire_waits|reply_timeout_suspends_and_reconnects)|fault\.(t13_proxy_reset_while_holding_reconnects_and_keeps_lease|t16_lost_acquire_reply_resend_counts_once|t16_lost_acquire_reply_try_once_gives_back|t15_grant_arriving_after_its_lease_is_refused_and_given_back|t39_faulted_session_leaves_nothing_behind|wrong_type_reply_to_acquire_is_unknown_and_given_back|garbage_reply_drops_connection_and_acquire_counts_once)|tls\.(ca_file_lock_and_pubsub_wake_over_tls|bad_tls_files_fail_client_new|forked_child_frees_a_tls_client_without_io|wrong_ca_is_etls|mutual_tls_without_a_client_certificate_is_etls|record_cut_in_a_renewal_reply_keeps_the_hold)|blocking\.(close_with_threads_blocked|lost_lease_seen_three_ways))$')
  fi
elif [ "$tsan" -eq 1 ]; then
  # The thread checks under ThreadSanitizer: calls from a foreign thread
  # (LK_EWRONGTHREAD), the blocking API and its C++ layer (labels blocking
  # and cpp: callers on many threads, one loop thread), and the harness's
  # proxy thread driven from tests.
  build_dir=${LATCHKEY_BUILD_DIR:-build-tsan}
  cmake_args+=(-DLATCHKEY_ASAN=OFF -DLATCHKEY_UBSAN=OFF -DLATCHKEY_TSAN=ON
    -DLATCHKEY_BUILD_EXAMPLES=OFF -DLATCHKEY_BUILD_BENCH=OFF)
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
  export LK_TEST_TIMING=${LK_TEST_TIMING:-3}
  if [ "$select_given" -eq 0 ]; then
    ctest_args+=(-R '(wrong_thread|blocking\.|cpp\.|proxy_|fault\.t13_|fault\.t24_|lock\.tcp_reset_produces_callbacks)')
  fi
else
  build_dir=${LATCHKEY_BUILD_DIR:-build}
  cmake_args+=(-DLATCHKEY_ASAN=OFF -DLATCHKEY_UBSAN=OFF)
fi
if [ "$valgrind" -eq 0 ]; then
  cmake_args+=(-DLATCHKEY_TEST_LAUNCHER=)
fi
if [ "$tsan" -eq 0 ]; then
  cmake_args+=(-DLATCHKEY_TSAN=OFF)
fi

echo "==> configure $build_dir (sanitize=$sanitize)"
cmake -S "$ROOT" -B "$build_dir" "${cmake_args[@]}"

echo "==> build $build_dir"
cmake --build "$build_dir" --parallel "$jobs"

echo "==> ctest in $build_dir ${ctest_args[*]:-}"
if [ -n "${LK_REDIS_SERVER:-}" ]; then
  echo "    LK_REDIS_SERVER=$LK_REDIS_SERVER ($("$LK_REDIS_SERVER" --version 2>/dev/null | cut -d' ' -f1-3))"
fi
if [ "$sanitize" -eq 1 ]; then
  echo "    ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS LK_TEST_TIMING=$LK_TEST_TIMING"
elif [ "$valgrind" -eq 1 ] || [ "$tsan" -eq 1 ]; then
  echo "    LK_TEST_TIMING=$LK_TEST_TIMING ${TSAN_OPTIONS:+TSAN_OPTIONS=$TSAN_OPTIONS}"
fi
cd "$build_dir"
# --timeout is the default for tests that set none; --no-tests=error makes
# an empty selection a failure rather than a silent pass.
ctest --output-on-failure --parallel "$jobs" --timeout 180 --no-tests=error \
  "${ctest_args[@]}" 2>&1 | tee "$log_name"
