#!/usr/bin/env bash
# `make wheel`: the idgen Python package's wheel (abi3: CPython 3.9 and later), built by maturin
# from python/ into target/wheels. maturin comes from the tests' venv (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/venv.sh
rm -f target/wheels/idgen-*.whl
target/venv/bin/maturin build --quiet -m python/Cargo.toml --out target/wheels >&2
ls target/wheels/idgen-*.whl
