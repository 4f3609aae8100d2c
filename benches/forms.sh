#!/usr/bin/env bash
# Every form of the module's and the ticket server's commands against its plain form, in
# instructions per call inside the server (callgrind; N calls a form, one client, unpipelined;
# COUNT forms per ID; the module's server from reading a command to the event loop's sleep),
# the median of five server starts: the ratio that issue 51 bounds at 1.5.
# A decoder's plain form is its floor (benches/floor/decode_floor.c: the same map replied from
# C), and DATESEQ.NEXT is held within 5% of its floor (benches/floor/dateseq_floor.c).
#
# Writes target/bench/forms.md (and the table in docs/benchmarks.md) and fails when a row is over its bar, or when its ratio is more
# than 3% above the figure committed in benches/forms.expected (FORMS_UPDATE=1 rewrites that
# file from this run). The forms are listed here by hand; tests/tests/forms_listed.rs checks
# that every command of the module's COMMANDS table, and every option a command takes, has a
# row, or a "not measured" line below saying why.
#
# not measured: WORKERID.ACQUIRE: a namespace runs out of worker IDs (1,024) within one count
# not measured: WORKERID.RELEASE: a lease is released once, not N times in a count
# not measured: WORKERID.LIST: a read of the namespace hash, no form of another command
# not measured: IDGEN.CLAIM: sent by a primary to its replicas, not by clients
# not measured: TTL: WORKERID.ACQUIRE's (not measured); WORKERID.RENEW's is in its plain form
# not measured: UNTIL: WORKERID.RELEASE's (not measured); WORKERID.RENEW's has a row
# not measured: MAX: of FROMTIME, the same work as its lowest ID; of WORKERID.ACQUIRE, not measured
#
# Usage: benches/forms.sh [N]     (default 2000)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
command -v valgrind >/dev/null || { echo "forms.sh: apt-get install valgrind" >&2; exit 1; }
N=${1:-2000}
RUNS=5
OUT=$ROOT/target/bench
EXPECTED=$ROOT/benches/forms.expected
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
openssl rand -hex 32 >"$work/seal.key" 2>/dev/null || head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/seal.key"
for floor in dateseq decode; do
  cc -shared -fPIC -O2 -o "$work/$floor.so" "$ROOT/benches/floor/${floor}_floor.c"
done

# The rows: PLAIN|FORM|IDS PER CALL[|BAR], each measured against its plain form's count and
# held at BAR (1.5 unless given). A line "!WORDS" runs WORDS on the server, once, before the
# rows after it, which the table then shows with it. A line "?WORDS" runs WORDS and puts the
# lines of its reply where the rows after it say {1}, {2}, ...
MODULE_FORMS=(
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT COUNT 10|10"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT SQIDS|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT SEALED|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT STRING|1"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT COUNT 10 SQIDS|10"
  "SNOWFLAKE.NEXT|SNOWFLAKE.NEXT COUNT 10 SEALED|10"
  "SNOWFLAKE.NEXT|SNOWFLAKE.FROMTIME 1795000000000|1"
  "FLOOR.SNOWFLAKE.DECODE 2126534505580724224|SNOWFLAKE.DECODE 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.ENCODE 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.SEAL 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.UNSEAL 2126534505580724224|1"
  "SNOWFLAKE.NEXT|IDGEN.DECODE KskwlM2PTtkZ|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench|1"
  "FLOOR.DATESEQ bench|DATESEQ.NEXT bench|1|1.05"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench DIGITS 8|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench COUNT 10|10"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench SQIDS|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench SEALED|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench STRING|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench COUNT 10 SQIDS|10"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench PERIOD month|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench PERIOD year|1"
  "DATESEQ.NEXT bench|DATESEQ.CURRENT bench|1"
  "DATESEQ.CURRENT bench|DATESEQ.CURRENT bench DIGITS 8|1"
  "DATESEQ.CURRENT bench|DATESEQ.CURRENT bench STRING|1"
  "DATESEQ.CURRENT bench|DATESEQ.CURRENT bench SQIDS|1"
  "DATESEQ.CURRENT bench|DATESEQ.CURRENT bench PERIOD month|1"
  "UUID7.NEXT|UUID7.NEXT|1"
  "UUID7.NEXT|UUID7.NEXT COUNT 10|10"
  "UUID7.NEXT|UUID7.NEXT SEALED|1"
  "UUID7.NEXT|UUID7.NEXT COUNT 10 SEALED|10"
  "UUID7.NEXT|ULID.NEXT|1"
  "ULID.NEXT|ULID.NEXT COUNT 10|10"
  "FLOOR.UUID7.DECODE 019ac8e6-1c2a-7f3e-8a4b-0123456789ab|UUID7.DECODE 019ac8e6-1c2a-7f3e-8a4b-0123456789ab|1"
  "FLOOR.ULID.DECODE 01KB4ECR3EAAAAAAAAAAAAAAAA|ULID.DECODE 01KB4ECR3EAAAAAAAAAAAAAAAA|1"
  "UUID7.NEXT|UUID7.FROMTIME 1795000000000|1"
  "UUID7.NEXT|UUID7.FROMTIME 2026-11-28T09:15:02.123Z|1"
  "UUID7.NEXT|ULID.FROMTIME 1795000000000|1"
  "?UUID7.NEXT SEALED"
  "UUID7.NEXT|UUID7.UNSEAL {1}|1"
  "?WORKERID.ACQUIRE forms TTL 30000"
  "WORKERID.RENEW forms {1} {2} TTL 30000|WORKERID.RENEW forms {1} {2} TTL 30000|1"
  "WORKERID.RENEW forms {1} {2} TTL 30000|WORKERID.RENEW forms {1} {2} TTL 30000 UNTIL {4}|1"
  "!CONFIG SET idgen.dateseq-timezone Australia/Sydney"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench|1"
  "DATESEQ.NEXT bench|DATESEQ.NEXT bench PERIOD month|1"
)
TICKET_FORMS=(
  "TICKET.NEXT|TICKET.NEXT|1"
  "TICKET.NEXT|TICKET.NEXT default COUNT 10|10"
  "TICKET.NEXT|TICKET.NEXT default SQIDS|1"
  "TICKET.NEXT|TICKET.NEXT default SEALED|1"
  "TICKET.NEXT|TICKET.NEXT default COUNT 10 SQIDS|10"
  "TICKET.NEXT|TICKET.RANGE default COUNT 10|10"
  "TICKET.NEXT|TICKET.CURRENT|1"
)

# table RUN PID PORT FORMS...: one server's rows as "FORM<TAB>COUNT<TAB>PLAIN COUNT<TAB>BAR".
# Each row's plain form is counted just before it, so that both see the server alike.
table() {
  local run=$1 pid=$2 port=$3 row plain form per bar note="" base got i
  local reply=()
  shift 3
  for row in "$@"; do
    if [[ $row == \?* ]]; then
      # shellcheck disable=SC2086
      mapfile -t reply < <(redis-cli -p "$port" ${row#\?})
      continue
    fi
    if [[ $row == !* ]]; then
      # shellcheck disable=SC2086
      [ "$(redis-cli -p "$port" ${row#!})" = OK ] || { echo "forms.sh: ${row#!} failed" >&2; exit 1; }
      note=" after \`${row#!}\`"
      continue
    fi
    IFS='|' read -r plain form per bar <<<"$row"
    local measured=$plain,$form
    for i in "${!reply[@]}"; do measured=${measured//\{$((i + 1))\}/${reply[$i]}}; done
    # shellcheck disable=SC2086
    base=$(callgrind_per_call "$pid" "$port" 1 "$work" "$N" ${measured%%,*})
    # shellcheck disable=SC2086
    got=$(callgrind_per_call "$pid" "$port" "$per" "$work" "$N" ${measured#*,})
    printf '`%s`%s\t%s\t`%s`\t%s\t%s\n' "$form" "$note" "$got" "$plain" "$base" "${bar:-1.5}" >>"$work/run.$run"
  done
}

for run in $(seq "$RUNS"); do
  # Counted: reading and running commands, and the work before the event loop sleeps (the
  # replies written, the AOF flushed); not the server's timers, which run by the clock and
  # made a tenth of the count's noise.
  port=$(free_port)
  mkdir -p "$work/redis.$run"
  valgrind --tool=callgrind --toggle-collect=readQueryFromClient --toggle-collect=beforeSleep \
    --callgrind-out-file="$work/out.%p" redis-server --port "$port" \
    --bind 127.0.0.1 --save '' --appendonly yes --dir "$work/redis.$run" --loadmodule "$MODULE" \
    dateseq-digits 10 seal-key-file "$work/seal.key" \
    --loadmodule "$work/dateseq.so" --loadmodule "$work/decode.so" >"$work/redis.log" 2>&1 &
  pids+=($!)
  wait_for_pong "$port" || { cat "$work/redis.log" >&2; exit 1; }
  table "$run" "${pids[-1]}" "$port" "${MODULE_FORMS[@]}"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$work/out.%p" "$ROOT/target/release/ticket-server" serve \
    --listen "127.0.0.1:$port" --offset 1 --increment 2 --data-dir "$work/tickets.$run" --init \
    --seal-key-file "$work/seal.key" >"$work/ticket.log" 2>&1 &
  pids+=($!)
  wait_for_pong "$port" || { cat "$work/ticket.log" >&2; exit 1; }
  table "$run" "${pids[-1]}" "$port" "${TICKET_FORMS[@]}"
  kill "${pids[-1]}" 2>/dev/null || true
done

# Per row, the run of median ratio; its verdict against the bar and the committed figure.
[ -f "$EXPECTED" ] || : >"$EXPECTED"
paste "$work"/run.* | awk -F'\t' -v runs="$RUNS" -v update="${FORMS_UPDATE:-0}" \
  -v expected_file="$EXPECTED" -v new_expected="$work/expected" '
  BEGIN {
    while ((getline line < expected_file) > 0) {
      if (line ~ /^#/ || line == "") continue
      split(line, f, "\t"); committed[f[2]] = f[1]
    }
    print "| form | plain form | instructions (per ID) | plain | ratio | bar | committed |"
    print "|---|---|---:|---:|---:|---:|---:|"
    print "# the ratio of each form to its plain form, as benches/forms.sh last measured it (FORMS_UPDATE=1)" > new_expected
  }
  {
    n = 0
    for (r = 0; r < runs; r++) { ratio[r] = $(r * 5 + 2) / $(r * 5 + 4); order[r] = r }
    for (i = 0; i < runs; i++) for (j = i + 1; j < runs; j++)
      if (ratio[order[j]] < ratio[order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
    m = order[int(runs / 2)] * 5
    form = $(m + 1); r = $(m + 2) / $(m + 4); bar = $(m + 5)
    key = form " / " $(m + 3)
    printf "%.3f\t%s\n", r, key >> new_expected
    verdict = ""
    if (r > bar) { verdict = " OVER THE BAR"; failed++ }
    if (!update && (key in committed) && r > committed[key] * 1.03) {
      verdict = verdict sprintf(" UP %.1f%% FROM THE COMMITTED %.3f", (r / committed[key] - 1) * 100, committed[key])
      failed++
    }
    if (!update && !(key in committed)) { verdict = verdict " (no committed figure)"; failed++ }
    printf "| %s | %s | %d | %d | %.2f | %.2f | %s%s |\n", form, $(m + 3), $(m + 2), $(m + 4), r, bar,
      (key in committed) ? sprintf("%.2f", committed[key]) : "-", verdict
  }
  END { exit failed > 0 }
' | tee "$OUT/forms.md" && status=0 || status=$?
"$ROOT/scripts/doc-table.sh" "$ROOT/docs/benchmarks.md" "the every-form table" "$OUT/forms.md"
if [ "${FORMS_UPDATE:-0}" = 1 ]; then
  cp "$work/expected" "$EXPECTED"
  echo "forms.sh: wrote $EXPECTED" >&2
elif [ "$status" != 0 ]; then
  echo "forms.sh: a form is over its bar, up more than 3% from benches/forms.expected, or not in it" >&2
  exit 1
fi
