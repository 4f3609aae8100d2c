#!/usr/bin/env bash
# `make wheel`: the Python package's wheel (idgen-redis; imported as idgen) (abi3: CPython 3.9 and later), built by maturin
# from python/ into target/wheels. maturin comes from the tests' venv (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh
rm -f target/wheels/idgen_redis-*.whl
# manylinux2014 (glibc 2.17 and later: RHEL 8/9, Ubuntu 20.04, Debian 11 and newer), linked
# against that glibc by zig (the venv's ziglang) rather than against this machine's.
PATH="$PWD/target/venv/bin:$PATH" target/venv/bin/maturin build --quiet -m python/Cargo.toml \
  --zig --compatibility manylinux2014 --out target/wheels >&2
ls target/wheels/idgen_redis-*.whl
