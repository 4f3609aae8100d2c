#!/usr/bin/env bash
# The Python package's calls per second beside the usual Python ID libraries
# (benches/python_speed.py, one process, one thread), with the wheel built from this checkout:
# writes target/bench/python.md and the table in docs/python.md. Fails when idgen.uuid7() or
# idgen.ulid() is slower than the nearest peer that returns the same type.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
OUT=$ROOT/target/bench
mkdir -p "$OUT"
work=$(mktemp -d)
port=$(free_port)
trap 'stop_redis "$work" "$port"; rm -rf "$work"' EXIT
wheel=$("$ROOT/scripts/wheel.sh")
"$ROOT/target/venv/bin/python" -m pip install -q --no-index --force-reinstall "$wheel" >&2
# A short horizon, as the comparison runs it, passed before the first lease: a lease granted
# within the horizon of the server's start starts that far ahead of the clock (its fence).
start_redis "$work" "$port" workerid-horizon-ms 2000
sleep 2.5
"$ROOT/target/venv/bin/python" "$ROOT/benches/python_speed.py" "redis://127.0.0.1:$port" 2000 \
  | tee "$OUT/python-speed.txt"
# The table alone, for the docs.
grep '^|' "$OUT/python-speed.txt" >"$OUT/python.md"
"$ROOT/scripts/doc-table.sh" "$ROOT/docs/python.md" "the speed table" "$OUT/python.md"
if grep -q "is NOT at least as fast as" "$OUT/python-speed.txt"; then
  echo "python.sh: a call is slower than its peer (see above)" >&2
  exit 1
fi
