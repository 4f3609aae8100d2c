#!/usr/bin/env bash
# The idgen Python package's tests: builds the wheel from this checkout (scripts/wheel.sh),
# checks that it installs into a fresh venv and imports there, installs it into the tests'
# venv, and runs pytest against real servers (this checkout's release build: make build), one
# of them from a Debian 11 root (glibc 2.31) that the wheel is installed into.
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(scripts/wheel.sh)
case "$wheel" in *manylinux2014*|*manylinux_2_17*) ;; *) echo "not a manylinux2014 wheel: $wheel" >&2; exit 1 ;; esac
# The old-glibc test installs it into a Debian 11 root (tests/test_old_glibc.py).
IDGEN_OLD_GLIBC_ROOT=$(scripts/old-glibc-root.sh)
export IDGEN_WHEEL="$PWD/$wheel" IDGEN_OLD_GLIBC_ROOT
fresh=target/wheel-check
rm -rf "$fresh"
python3 -m venv "$fresh"
"$fresh/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
"$fresh/bin/python" -c 'import idgen; assert idgen.decode(idgen.from_time(1795000000000)).unix_ms == 1795000000000'
echo "the wheel installs into a fresh venv: $wheel"
target/venv/bin/pip install -q --disable-pip-version-check --no-index --force-reinstall "$wheel"
cd python/tests
exec ../../target/venv/bin/python -m pytest -q -p no:cacheprovider "$@"
