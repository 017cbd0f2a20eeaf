#!/usr/bin/env bash
# Installs what latchkey needs to build and test on Debian 12 (bookworm).
# Idempotent: when every package is already installed it does nothing (and
# touches neither the network nor apt's lists).
#
#   tools/install-deps.sh            # as root, or through sudo when available
#   LATCHKEY_SKIP_DEPS=1 ...         # the other tools/ scripts then skip it
#
# The tests start their own redis-server on free loopback ports; Debian's
# redis-server service is not needed (if the package starts one on 6379, it
# does no harm).
set -euo pipefail

PACKAGES=(
  build-essential
  cmake
  pkg-config
  libhiredis-dev
  libuv1-dev
  redis-server
  redis-tools
  uthash-dev
  ca-certificates
  procps
  iproute2
  valgrind
  libfaketime
)

log() { printf 'install-deps: %s\n' "$*" >&2; }

if ! command -v dpkg-query >/dev/null 2>&1; then
  log "not a Debian-like system (no dpkg-query); install by hand:"
  log "  a C11 compiler, cmake >= 3.18, pkg-config, hiredis (dev), libuv >= 1.x (dev),"
  log "  redis-server and redis-cli, uthash headers"
  for tool in cc cmake pkg-config redis-server; do
    command -v "$tool" >/dev/null 2>&1 || { log "missing: $tool"; exit 1; }
  done
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$status" in
    *" ok installed") ;;
    *) missing+=("$p") ;;
  esac
done

if [ "${#missing[@]}" -eq 0 ]; then
  log "all ${#PACKAGES[@]} packages present"
  exit 0
fi
log "missing: ${missing[*]}"

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
    if [ ! -t 0 ] || [ -n "${CI:-}" ]; then
      SUDO=(sudo -n) # never wait for a password nobody can type
    fi
  else
    log "not root and no sudo; as root run:"
    log "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
    exit 1
  fi
fi

run() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive "$@"; }

# In a container without an init system, a package's postinst trying to
# start its service (redis-server) can fail the whole install. Deny service
# starts for this transaction only, when no systemd is running and no
# policy-rc.d is already in place; remove ours afterwards.
POLICY=/usr/sbin/policy-rc.d
made_policy=0
cleanup() {
  if [ "$made_policy" -eq 1 ]; then
    "${SUDO[@]}" rm -f "$POLICY" || true
  fi
}
trap cleanup EXIT
if [ ! -d /run/systemd/system ] && [ ! -e "$POLICY" ]; then
  if printf '#!/bin/sh\n# temporary, from latchkey tools/install-deps.sh\nexit 101\n' |
    "${SUDO[@]}" tee "$POLICY" >/dev/null && "${SUDO[@]}" chmod 0755 "$POLICY"; then
    made_policy=1
  fi
fi

APT_OPTS=(-y --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

# Refresh the lists first when they look absent; otherwise try the install
# as is and refresh only if it fails (stale lists give 404s).
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null 2>&1; then
  log "apt-get update (no package lists yet)"
  run apt-get update -q
  run apt-get install "${APT_OPTS[@]}" "${missing[@]}"
elif ! run apt-get install "${APT_OPTS[@]}" "${missing[@]}"; then
  log "install failed; apt-get update and retry"
  run apt-get update -q
  run apt-get install "${APT_OPTS[@]}" "${missing[@]}"
fi

log "installed: ${missing[*]}"
