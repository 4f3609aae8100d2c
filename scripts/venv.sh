#!/usr/bin/env bash
# The one Python venv of the tests that drive the project with other people's clients
# (redis-py, valkey-glide): target/venv, from the pinned tests/python/requirements.txt, remade
# when that file changes.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/venv
REQS=tests/python/requirements.txt
STAMP=$VENV/.requirements
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && cmp -s "$REQS" "$STAMP"; then
  exit 0
fi
echo "creating $VENV from $REQS" >&2
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQS"
cp "$REQS" "$STAMP"
