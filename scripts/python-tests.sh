#!/usr/bin/env bash
# The idgen Python package's tests: builds the wheel from this checkout (scripts/wheel.sh),
# checks that it installs into a fresh venv and imports there, installs it into the tests'
# venv, and runs pytest against real servers (this checkout's release build: make build).
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(scripts/wheel.sh)
fresh=target/wheel-check
rm -rf "$fresh"
python3 -m venv "$fresh"
"$fresh/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
"$fresh/bin/python" -c 'import idgen; assert idgen.decode(idgen.from_time(1795000000000)).unix_ms == 1795000000000'
echo "the wheel installs into a fresh venv: $wheel"
target/venv/bin/pip install -q --disable-pip-version-check --no-index --force-reinstall "$wheel"
cd python/tests
exec ../../target/venv/bin/python -m pytest -q -p no:cacheprovider "$@"
