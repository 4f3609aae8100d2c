#!/usr/bin/env bash
# make check: what runs on any Debian/Ubuntu machine with redis-server, as any user, without
# root or Docker: the release build, every crate's unit tests, and the integration suites that
# need only a redis-server and loopback ports (IDGEN_CHECK=1: a test that needs root, for a
# mount or a firewall rule, skips itself saying so; tests/src/needs.rs), with the tests' Python
# venv (scripts/venv.sh) and Redis 6.0 built from Debian's source (library_scripts.rs builds it
# into ~/.cache/idgen; a C compiler and libssl-dev). Left to make test: the container tests
# (Docker), the operations suites (Prometheus), the docs' shell examples (namespaces), the
# Python package's own tests, the runs on other servers, the release's checks.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then
  IDGEN_SKIP_DOCKER=1 scripts/deps.sh
else
  missing=()
  for tool in redis-server:redis-server redis-cli:redis-tools cc:gcc make:make curl:curl \
    python3:python3-venv cargo:cargo; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
  done
  [ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
  compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null ||
    compgen -G '/usr/lib/*-linux-gnu/libclang*.so*' >/dev/null || missing+=(libclang-dev)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "make check needs: ${missing[*]} (as root: apt-get install ${missing[*]}; cargo from rustup)" >&2
    exit 1
  fi
fi
cargo build --release -p redis-idgen -p ticket-server -p idgen-lease-worker
# Other people's clients and decoders (redis-py, Python's uuid, the Sqids reference) run in the
# tests' venv, from PyPI: no root needed.
scripts/venv.sh
# The module's and the library's suites, and the ticket server's (tests/Cargo.toml names the
# test binaries).
IDGEN_CHECK=1 IDGEN_SKIP_DOCKER=1 cargo test --workspace --no-default-features --lib --bins \
  --test suites --test ticket --no-fail-fast
