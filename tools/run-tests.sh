#!/usr/bin/env bash
# Builds latchkey and runs its test suite with ctest.
#
#   tools/run-tests.sh                 # deps, build/ (warnings are errors), all tests
#   tools/run-tests.sh -L lock         # only one primitive's tests (a ctest label)
#   tools/run-tests.sh --sanitize      # build-asan/ with ASan + UBSan
#   tools/run-tests.sh -R client -V    # anything else is passed to ctest
#
# Environment: LATCHKEY_SKIP_DEPS=1 skips tools/install-deps.sh;
# LATCHKEY_BUILD_DIR overrides the build directory; LATCHKEY_JOBS (default 2)
# sets build and ctest parallelism; LK_TEST_TIMING scales the tests' liveness
# bounds (3 by default under --sanitize).
# The ctest output is also written to <build dir>/ctest.log.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() {
  sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

sanitize=0
ctest_args=()
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    -h | --help) usage; exit 0 ;;
    *) ctest_args+=("$arg") ;;
  esac
done

jobs=${LATCHKEY_JOBS:-2}

if [ "${LATCHKEY_SKIP_DEPS:-0}" != 1 ]; then
  "$ROOT/tools/install-deps.sh"
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
else
  build_dir=${LATCHKEY_BUILD_DIR:-build}
  cmake_args+=(-DLATCHKEY_ASAN=OFF -DLATCHKEY_UBSAN=OFF)
fi

echo "==> configure $build_dir (sanitize=$sanitize)"
cmake -S "$ROOT" -B "$build_dir" "${cmake_args[@]}"

echo "==> build $build_dir"
cmake --build "$build_dir" --parallel "$jobs"

echo "==> ctest in $build_dir ${ctest_args[*]:-}"
if [ "$sanitize" -eq 1 ]; then
  echo "    ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS LK_TEST_TIMING=$LK_TEST_TIMING"
fi
cd "$build_dir"
# --timeout is the default for tests that set none; --no-tests=error makes
# an empty selection a failure rather than a silent pass.
ctest --output-on-failure --parallel "$jobs" --timeout 180 --no-tests=error \
  "${ctest_args[@]}" 2>&1 | tee ctest.log
