#!/usr/bin/env bash
# Installs the dependencies, builds latchkey (Release) and runs the flash-sale
# demo, passing it every argument.
#
#   tools/run-demo.sh                          # a local server (see the demo's --help)
#   tools/run-demo.sh --redis 127.0.0.1:6379   # or LATCHKEY_REDIS=host:port
#   tools/run-demo.sh --help                   # the demo's own options
#
# Environment: LATCHKEY_SKIP_DEPS=1 skips tools/install-deps.sh;
# LATCHKEY_BUILD_DIR overrides the build directory (default build);
# LATCHKEY_JOBS (default 2) sets build parallelism.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

build_dir=${LATCHKEY_BUILD_DIR:-build}
jobs=${LATCHKEY_JOBS:-2}
demo="$build_dir/examples/flash_sale/flash_sale"

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

echo "==> $demo $*" >&2
exec "$demo" "$@"
