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
#
# Valkey 8 (for the cluster tests' second server, LK_REDIS_SERVER=valkey-server)
# comes from Debian's bookworm-backports: this script adds that source, as
# Debian's backports instructions say, in its own file under
# /etc/apt/sources.list.d/, and installs only valkey-server (and what it
# depends on) with -t bookworm-backports. Backports stay at apt's default low
# priority, so no other package is upgraded from there. valkey-server installs
# valkey-server / valkey-cli only; redis-server and redis-cli stay Redis 7.0.
set -euo pipefail

PACKAGES=(
  build-essential
  cmake
  pkg-config
  libhiredis-dev
  libuv1-dev
  libssl-dev
  openssl
  redis-server
  redis-tools
  redis-sentinel
  uthash-dev
  ca-certificates
  procps
  iproute2
  valgrind
  libfaketime
  libevent-dev
  libev-dev
  libglib2.0-dev
)

# The Node lane (bindings/node, docs/node.md) needs node, npm and Node's
# headers (<prefix>/include/node). A node already installed is used as it is
# (nodesource's nodejs carries npm and its headers); without one, Debian's
# nodejs, npm and libnode-dev (the headers) are installed.
node_headers() {
  local n
  n=$(command -v node 2>/dev/null) || return 1
  [ -e "$(dirname "$(readlink -f "$n")")/../include/node/node_api.h" ]
}
if ! command -v node >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm libnode-dev)
else
  node_headers || PACKAGES+=(libnode-dev)
  command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)
fi

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

installed() {
  case "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" in
    *" ok installed") return 0 ;;
    *) return 1 ;;
  esac
}

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

# Valkey: from bookworm-backports on bookworm; on a later release its own
# archive has it (trixie: 8.1); elsewhere it is left to the user (only the
# tests that ask for it through LK_REDIS_SERVER need it).
. /etc/os-release 2>/dev/null || true
codename=${VERSION_CODENAME:-}
BACKPORTS=()
BACKPORTS_SUITE=
case "$codename" in
  bookworm) BACKPORTS_SUITE=bookworm-backports ;;
  "" | bullseye | buster) ;;
  *) PACKAGES+=(valkey-server) ;;
esac
if ! installed valkey-server; then
  if [ -n "$BACKPORTS_SUITE" ]; then
    BACKPORTS+=(valkey-server)
  elif [[ " ${PACKAGES[*]} " == *" valkey-server "* ]]; then
    missing+=(valkey-server)
  else
    log "note: valkey-server not installed (no known source for '${codename:-?}'); only the Valkey runs of the tests need it"
  fi
fi

if [ "${#missing[@]}" -eq 0 ] && [ "${#BACKPORTS[@]}" -eq 0 ]; then
  log "all ${#PACKAGES[@]} packages present$(installed valkey-server && printf ', and valkey-server %s' "$(dpkg-query -W -f='${Version}' valkey-server)")"
  exit 0
fi
log "missing: ${missing[*]} ${BACKPORTS[*]}"

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
if [ "${#missing[@]}" -gt 0 ]; then
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
fi

# Any source line or deb822 stanza that already names the suite counts (a
# user's own backports entry is left as it is).
has_backports_source() {
  grep -qsE "^[^#]*[[:space:]]$BACKPORTS_SUITE([[:space:]]|\$)" /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null ||
    grep -qsE "^Suites:.*[[:space:]]$BACKPORTS_SUITE([[:space:]]|\$)" /etc/apt/sources.list.d/*.sources 2>/dev/null
}

if [ "${#BACKPORTS[@]}" -gt 0 ]; then
  if ! has_backports_source; then
    SOURCE_FILE=/etc/apt/sources.list.d/$BACKPORTS_SUITE.list
    log "adding $SOURCE_FILE"
    printf 'deb http://deb.debian.org/debian %s main\n' "$BACKPORTS_SUITE" |
      "${SUDO[@]}" tee "$SOURCE_FILE" >/dev/null
  fi
  # The suite's lists appear only after an update (a fresh source, or lists
  # removed by a slim image's cleanup).
  if ! compgen -G "/var/lib/apt/lists/*_dists_${BACKPORTS_SUITE}_*Packages*" >/dev/null 2>&1; then
    log "apt-get update ($BACKPORTS_SUITE lists missing)"
    run apt-get update -q
  fi
  if ! run apt-get install "${APT_OPTS[@]}" -t "$BACKPORTS_SUITE" "${BACKPORTS[@]}"; then
    log "install from $BACKPORTS_SUITE failed; apt-get update and retry"
    run apt-get update -q
    run apt-get install "${APT_OPTS[@]}" -t "$BACKPORTS_SUITE" "${BACKPORTS[@]}"
  fi
  log "installed from $BACKPORTS_SUITE: ${BACKPORTS[*]} ($(dpkg-query -W -f='${Version}' valkey-server))"
fi

# valkey-server must not have taken over the Redis names the tests default to.
if installed valkey-server && command -v redis-server >/dev/null 2>&1 &&
  ! redis-server --version 2>/dev/null | grep -q '^Redis server'; then
  log "warning: redis-server is no longer Redis: $(redis-server --version 2>&1 | head -1)"
fi
