#!/usr/bin/env bash
# Installs what the build and the tests need and are missing: redis-server, redis-tools
# (redis-cli, redis-benchmark), libclang-dev (bindgen, for redis-module) and a C linker.
# With apt-get as root it installs them; otherwise it says what to install and fails.
set -euo pipefail

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null || missing+=(redis-tools)
command -v cc >/dev/null || missing+=(gcc)
ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/*/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)

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
  echo "cargo is missing: install a Rust toolchain (rustup, stable >= 1.80) and re-run" >&2
  exit 1
fi
