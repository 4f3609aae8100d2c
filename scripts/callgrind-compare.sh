#!/usr/bin/env bash
# Instructions per call of SNOWFLAKE.NEXT, DATESEQ.NEXT, WORKERID.RENEW and TICKET.NEXT inside
# the server, under callgrind: the median of three server starts, for each of two builds. What a
# refactor shows before it lands (the team's rule: "a refactor shows instruction counts before
# and after").
#
# Usage: scripts/callgrind-compare.sh BEFORE_DIR AFTER_DIR [CALLS]
#   each DIR holds libredis_idgen.so and ticket-server (copies of target/release's); CALLS per
#   command and start (default 20000). The two builds' starts alternate, so that whatever else
#   the machine does falls on both alike: run it on a quiet machine all the same (a busy one
#   adds event-loop turns to each call, a few percent).
# Prints one line per command: before, after and the change in percent.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

before=${1:?usage: callgrind-compare.sh BEFORE_DIR AFTER_DIR}
after=${2:?usage: callgrind-compare.sh BEFORE_DIR AFTER_DIR}
command -v valgrind >/dev/null || { echo "callgrind-compare.sh: apt-get install valgrind" >&2; exit 1; }
N=${3:-20000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# count PID PORT WORDS...: instructions per call of WORDS, one client, unpipelined.
count() {
  local pid=$1 port=$2
  shift 2
  callgrind_per_call "$pid" "$port" 1 "$work" "$N" "$@"
}
wait_up() { wait_for_pong "$1" || exit 1; }

# module DIR: SNOWFLAKE.NEXT, DATESEQ.NEXT and WORKERID.RENEW per call, one start.
module() {
  local port pid data=$work/data
  rm -rf "$data" && mkdir -p "$data"
  port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$work/out.%p" redis-server --port "$port" \
    --bind 127.0.0.1 --save '' --appendonly yes --dir "$data" --loadmodule "$1/libredis_idgen.so" \
    dateseq-digits 10 >"$work/valgrind.log" 2>&1 &
  pid=$!
  wait_up "$port"
  # A lease held by one holder, renewed at every call (each renewal waits for the lease
  # witness file's fsync, as a holder's does).
  local grant
  mapfile -t grant < <(redis-cli -p "$port" WORKERID.ACQUIRE bench TTL 20000 MAX 1)
  echo "$(count "$pid" "$port" SNOWFLAKE.NEXT) $(count "$pid" "$port" DATESEQ.NEXT bench)" \
    "$(count "$pid" "$port" WORKERID.RENEW bench "${grant[0]}" "${grant[1]}" TTL 20000)"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$pid"
  wait "$pid" 2>/dev/null || true
}

# ticket DIR: TICKET.NEXT per call, one start.
ticket() {
  local port pid data=$work/tickets
  rm -rf "$data" && mkdir -p "$data"
  port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$work/out.%p" "$1/ticket-server" serve \
    --listen "127.0.0.1:$port" --offset 1 --increment 2 --data-dir "$data" --init \
    >"$work/ticket.log" 2>&1 &
  pid=$!
  wait_up "$port"
  count "$pid" "$port" TICKET.NEXT
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

median() { sort -n | sed -n 2p; }

for _ in 1 2 3; do
  for build in before after; do
    dir=${!build}
    read -r sf ds wr < <(module "$dir")
    echo "$sf" >>"$work/$build.sf" && echo "$ds" >>"$work/$build.ds" && echo "$wr" >>"$work/$build.wr"
    ticket "$dir" >>"$work/$build.tk"
  done
done
for what in sf:SNOWFLAKE.NEXT ds:DATESEQ.NEXT wr:WORKERID.RENEW tk:TICKET.NEXT; do
  b=$(median <"$work/before.${what%%:*}") a=$(median <"$work/after.${what%%:*}")
  awk -v n="${what#*:}" -v b="$b" -v a="$a" \
    'BEGIN {printf "%-15s before %6d  after %6d  %+.2f%%\n", n, b, a, (a - b) * 100 / b}'
done
