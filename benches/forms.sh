#!/usr/bin/env bash
# Every form of the module's and the ticket server's commands against its plain form, in
# instructions per call inside the server (callgrind; one server start each, N calls a form,
# one client, unpipelined): the ratio that issue 51 bounds at 1.5. COUNT forms are per ID.
# Writes target/bench/forms.md. The forms are listed here by hand; tests/tests/forms_listed.rs
# checks that every command of the module's COMMANDS table has a row, or a "not measured" line
# below saying why.
#
# not measured: WORKERID.ACQUIRE: a namespace runs out of worker IDs within a few calls
# not measured: WORKERID.RENEW: its token changes with every call
# not measured: WORKERID.RELEASE: its token changes with every call
# not measured: WORKERID.LIST: a read of the namespace hash, no form of another command
# not measured: IDGEN.CLAIM: sent by a primary to its replicas, not by clients
# not measured: UUID7.UNSEAL: its input is a UUID sealed under the run's own key
#
# Usage: benches/forms.sh [N]     (default 2000)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
command -v valgrind >/dev/null || { echo "forms.sh: apt-get install valgrind" >&2; exit 1; }
N=${1:-2000}
OUT=$ROOT/target/bench
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
openssl rand -hex 32 >"$work/seal.key" 2>/dev/null || head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/seal.key"

# count PID PORT PER WORDS...: instructions per call (per ID when PER > 1) of WORDS.
count() {
  local pid=$1 port=$2 per=$3
  shift 3
  callgrind_per_call "$pid" "$port" "$per" "$work" "$N" "$@"
}
wait_up() { wait_for_pong "$1" || exit 1; }

# The forms: PLAIN | FORM | IDS PER CALL. Each row is measured against its plain form's count.
MODULE_FORMS=(
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT COUNT 10|10"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT SQIDS|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT SEALED|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT STRING|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.FROMTIME 1795000000000|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.DECODE 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.ENCODE 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.SEAL 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.UNSEAL 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.DECODE KskwlM2PTtkZ|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench DIGITS 8|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench COUNT 10|10"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench SQIDS|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench SEALED|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench STRING|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench PERIOD month|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench PERIOD year|1"
  "DATESEQ.NEXT bench|DATESEQ.CURRENT bench|1"
  "UUID7.NEXT|UUID7.NEXT|1"
  "UUID7.NEXT|UUID7.NEXT COUNT 10|10"
  "UUID7.NEXT|UUID7.NEXT SEALED|1"
  "UUID7.NEXT|ULID.NEXT|1"
  "UUID7.NEXT|UUID7.DECODE 019ac8e6-1c2a-7f3e-8a4b-0123456789ab|1"
  "UUID7.NEXT|ULID.DECODE 01KB4ECR3EAAAAAAAAAAAAAAAA|1"
  "UUID7.NEXT|UUID7.FROMTIME 1795000000000|1"
  "UUID7.NEXT|ULID.FROMTIME 1795000000000|1"
)
TICKET_FORMS=(
  "TICKET.NEXT|TICKET.NEXT|1"
  "TICKET.NEXT|TICKET.NEXT default COUNT 10|10"
  "TICKET.NEXT|TICKET.NEXT default SQIDS|1"
  "TICKET.NEXT|TICKET.NEXT default SEALED|1"
)

# table PID PORT FORMS...: the rows of one server.
table() {
  local pid=$1 port=$2 row plain form per base got
  shift 2
  declare -A plains=()
  for row in "$@"; do
    IFS='|' read -r plain form per <<<"$row"
    # shellcheck disable=SC2086
    [ -n "${plains[$plain]:-}" ] || plains[$plain]=$(count "$pid" "$port" 1 $plain)
    base=${plains[$plain]}
    # shellcheck disable=SC2086
    got=$(count "$pid" "$port" "$per" $form)
    printf '| `%s` | `%s` | %s | %s | %s |\n' "$form" "$plain" "$got" "$base" \
      "$(awk -v a="$got" -v b="$base" 'BEGIN {printf "%.2f", a / b}')"
  done
}

{
  echo "| form | plain form | instructions (per ID) | plain | ratio |"
  echo "|---|---|---:|---:|---:|"
  port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$work/out.%p" redis-server --port "$port" \
    --bind 127.0.0.1 --save '' --appendonly yes --dir "$work" --loadmodule "$MODULE" \
    dateseq-digits 10 seal-key-file "$work/seal.key" >"$work/redis.log" 2>&1 &
  pids+=($!)
  wait_up "$port"
  table "${pids[-1]}" "$port" "${MODULE_FORMS[@]}"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$work/out.%p" "$ROOT/target/release/ticket-server" serve \
    --listen "127.0.0.1:$port" --offset 1 --increment 2 --data-dir "$work/tickets" --init \
    --seal-key-file "$work/seal.key" >"$work/ticket.log" 2>&1 &
  pids+=($!)
  wait_up "$port"
  table "${pids[-1]}" "$port" "${TICKET_FORMS[@]}"
} | tee "$OUT/forms.md"
