#!/usr/bin/env bash
# Installs what the build and the tests need and are missing: redis-server, redis-tools
# (redis-cli, redis-benchmark), libclang-dev (bindgen, for redis-module), a C linker, curl,
# prometheus and prometheus-redis-exporter (the operations tests), and the
# docker CLI and docker-compose for the container tests (not with IDGEN_SKIP_DOCKER=1). The
# Docker engine itself must be running; the container tests fail saying so when it is not.
# With apt-get as root it installs them; otherwise it says what to install and fails.
#
# `deps.sh --optional PACKAGE`: tries to install mariadb-server (the Flickr row of the comparison),
# postgresql (the Instagram row), valgrind (instruction counts in benches/module.sh) or
# valkey-server (the module's tests run on Valkey too) and carries on without it: the reports
# and `make test` then say what is missing.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Debian 12 has valkey-server only in bookworm-backports: add that suite, from the same mirror
# as the system's own sources, when no candidate is known (Debian 13 has it in main).
enable_backports_for() {
  apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]' && return 0
  local codename uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 0
  uri=$(debian_mirror)
  [ -n "$uri" ] || return 0
  printf 'Types: deb\nURIs: %s\nSuites: %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" "$codename" >"/etc/apt/sources.list.d/$codename-backports.sources"
  apt-get update -qq
  # Backports are pinned below the release: name the suite when installing from it.
  BACKPORTS="-t $codename-backports"
}

if [ "${1:-}" = --optional ]; then
  shift
  case "$1" in
    mariadb-server) { command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ]; } && exit 0 ;;
    postgresql) compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null && exit 0 ;;
    valkey-server) command -v valkey-server >/dev/null && exit 0 ;;
    *) command -v "${1%-server}" >/dev/null && exit 0 ;;
  esac
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing (optional): $*"
    export DEBIAN_FRONTEND=noninteractive
    BACKPORTS=
    [ "$1" = valkey-server ] && { enable_backports_for valkey-server >/dev/null 2>&1 || true; }
    # shellcheck disable=SC2086 # BACKPORTS is empty or two words
    { apt-get install -y -qq $BACKPORTS "$@" || { apt-get update -qq && apt-get install -y -qq $BACKPORTS "$@"; }; } >/dev/null 2>&1 \
      || echo "could not install $*: the reports and make test will say so"
  else
    echo "optional: $* (not root: install it yourself for its row of the comparison)"
  fi
  exit 0
fi

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null || missing+=(redis-tools)
command -v cc >/dev/null || missing+=(gcc)
[ -x /usr/bin/kill ] || [ -x /bin/kill ] || missing+=(procps) # the tests send SIGTERM
# The tests that drive servers with Python clients make a venv (scripts/venv.sh).
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
# The failover tests cut a replication link with an iptables rule on loopback (as root).
command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || missing+=(iptables)
# The operations tests read metrics with curl, scrape them with prometheus, check the alert
# rules with promtool (in Debian's prometheus) and map INFO idgen with redis_exporter.
command -v curl >/dev/null || missing+=(curl)
# The clock-step tests give a copy of the module the clock shim as a needed library (patchelf).
command -v patchelf >/dev/null || missing+=(patchelf)
# The TLS tests make their certificates with openssl.
command -v openssl >/dev/null || missing+=(openssl)
command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
command -v prometheus-redis-exporter >/dev/null || missing+=(prometheus-redis-exporter)
# The docs test runs each shell example in namespaces of its own: unshare (util-linux), and
# ip and ss (iproute2) for its loopback and to see its servers listen.
command -v unshare >/dev/null || missing+=(util-linux)
command -v ip >/dev/null && command -v ss >/dev/null || missing+=(iproute2)
# The module's suites run on Redis 8.0 and Valkey 8.1 too, built from Debian 13's source
# packages (scripts/debian-server.sh): make, and OpenSSL's headers for their TLS.
command -v make >/dev/null || missing+=(make)
[ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
# bindgen loads libclang.so itself; libclang-cpp (installed with other LLVM tools) is not it.
compgen -G '/usr/lib/llvm-*/lib/libclang.so' >/dev/null || missing+=(libclang-dev)
# The container tests drive the docker CLI and compose; IDGEN_SKIP_DOCKER=1 skips them.
if [ "${IDGEN_SKIP_DOCKER:-0}" = 0 ]; then
  command -v docker >/dev/null || missing+=(docker.io)
  docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null || missing+=(docker-compose)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing: ${missing[*]}" >&2
    echo "install them first, e.g.: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if ! command -v cargo >/dev/null; then
  echo "cargo is missing: install a Rust toolchain (rustup, stable >= 1.89) and re-run" >&2
  exit 1
fi
