#!/usr/bin/env bash
# make test's body, once the binaries are built (make test-build; TEST_FLAGS as there), all of
# it side by side from the start:
#  - every suite on Redis 7.0 (Debian 12's redis-server), through cargo test;
#  - the module's suites again on Valkey 8.0 (valkey-server, from Debian 12's backports), and
#    on Redis 8.0 and Valkey 8.1 once scripts/debian-server.sh has built them from Debian 13's
#    source packages (cached outside the checkout); the Functions library's suites on Redis 6.0
#    (Debian 11's; as scripts, EVALSHA) once built;
#  - the Python package's tests, idgen-core's long tests (#[ignore]d in cargo test), the
#    crates' packaging (scripts/package-crates.sh) and the release where it will run
#    (scripts/release-test.sh: the glibc 2.17 build and its symbol versions, the module, a
#    ticket pair and the .deb packages in a Debian 11 root).
# The suites mostly wait on their servers, so side by side they take little longer than one:
# a fresh machine's make test went from 26 min 50 s (the lanes after the Redis 7.0 suites) to
# 24 min 44 s (README.md). Each lane but cargo test's writes a log of its own under
# target/test-logs, shown when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a flags <<<"${TEST_FLAGS:---workspace --no-default-features}"
logs=target/test-logs
rm -rf "$logs"
mkdir -p "$logs"

# The module's and the library's suites: one test binary (tests/tests/suites.rs), every suite
# file but the ticket server's, the operations tools', the Python clients' and the docs' shell
# examples (those name redis-server), and the containers'.
suites=(suites)

# Test binaries, run without cargo: two cargo processes on one target directory wait for each
# other, even only to run tests. executables ARGS...: those `cargo test ARGS --no-run` builds.
executables() {
  cargo test "${flags[@]}" "$@" --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])'
}
# One call for both: the module's suites, and idgen-core's unit tests (among the crates' --lib).
selection=(--lib)
for suite in "${suites[@]}"; do selection+=(--test "$suite"); done
binaries=() core_tests=
while read -r name binary; do
  if [ "$name" = idgen_core ]; then core_tests=$binary; fi
  if [[ " ${suites[*]} " == *" $name "* ]]; then binaries+=("$binary"); fi
done < <(executables "${selection[@]}")

# suites_on NAME SERVER: the module's suites on SERVER, as cargo runs them (from tests/).
suites_on() {
  local name=$1 server=$2 failed=0 binary
  echo "the module's suites on $("$server" --version | cut -d' ' -f1-3) ($server)"
  for binary in "${binaries[@]}"; do
    (cd tests && IDGEN_SERVER=$server "$binary") || failed=1
  done
  return "$failed"
}

# library_suites_on NAME SERVER: the Functions library's suites with the servers they start
# without the module on SERVER (IDGEN_LIBRARY_SERVER; on a Redis without FUNCTION the tests'
# FCALLs go as EVALSHA of the library's scripts, tests/src/connection.rs): every library*
# suite whole and fault_matrix_state_key (the library's state keys), and the library's half
# of the others: the tests whose names say library.
library_suites_on() {
  local name=$1 server=$2 failed=0 binary
  echo "the library's suites on $("$server" --version | cut -d' ' -f1-3) ($server)"
  for binary in "${binaries[@]}"; do
    (cd tests && IDGEN_LIBRARY_SERVER=$server "$binary" library fault_matrix_state_key::) ||
      failed=1
  done
  return "$failed"
}

# built_then NAME RUN PACKAGE [SUITE]: builds PACKAGE's server from Debian's source
# (scripts/debian-server.sh, its log in NAME-build.log), then runs RUN (suites_on or
# library_suites_on) on it; a failed build fails the lane, its log shown.
built_then() {
  local name=$1 run=$2 server
  shift 2
  if ! server=$(scripts/debian-server.sh "$@" 2>"$logs/$name-build.log") || [ -z "$server" ]; then
    echo "*** $name could not be built:"
    cat "$logs/$name-build.log"
    return 1
  fi
  "$run" "$name" "$server"
}

# Every lane starts now, beside the suites on Redis 7.0 below (they mostly wait on servers).
jobs=()
scripts/package-crates.sh >"$logs/packaging.log" 2>&1 &
jobs+=("packaging:$!")
scripts/release-test.sh >"$logs/release.log" 2>&1 &
jobs+=("release:$!")
scripts/python-tests.sh >"$logs/python.log" 2>&1 &
jobs+=("python:$!")
# idgen-core's long tests (FF1 against the general implementation on a million inputs a width).
(cd crates/idgen-core && "$core_tests" --ignored) >"$logs/core-long.log" 2>&1 &
jobs+=("core-long:$!")
status=0
if command -v valkey-server >/dev/null; then
  suites_on valkey80 valkey-server >"$logs/valkey80.log" 2>&1 &
  jobs+=("valkey80:$!")
else
  echo "*** valkey-server is not installed (scripts/deps.sh --optional valkey-server): no suites on Valkey 8.0 ***"
  status=1
fi
# Redis 6.0 (Debian 11's), where the library runs as scripts (library_scripts.rs and the
# Python tests build it themselves if this has not finished: the build is locked, the second
# waits); Redis 8.0 and Valkey 8.1 (Debian 13's).
built_then redis6 library_suites_on redis bullseye >"$logs/redis6.log" 2>&1 &
jobs+=("redis6:$!")
built_then redis8 suites_on redis >"$logs/redis8.log" 2>&1 &
jobs+=("redis8:$!")
built_then valkey81 suites_on valkey >"$logs/valkey81.log" 2>&1 &
jobs+=("valkey81:$!")

# --no-fail-fast: a failing suite must not hide the results of the suites after it.
cargo test "${flags[@]}" --no-fail-fast || status=1

for job in "${jobs[@]}"; do
  name=${job%%:*}
  if wait "${job#*:}"; then result=passed; else result=FAILED; status=1; fi
  echo "=== $name: $result (target/test-logs/$name.log)"
  if [ "$result" = FAILED ] || [ "$name" = python ] || [ "$name" = release ]; then
    cat "$logs/$name.log"
  elif [ "$name" = packaging ]; then
    grep '\.crate$' "$logs/$name.log"
  else
    awk '/^test result: ok/ {runs++; tests += $4} END {print runs " test binaries, " tests " tests passed"}' "$logs/$name.log"
  fi
done
exit "$status"
