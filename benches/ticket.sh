#!/usr/bin/env bash
# Ticket servers against INCR, with the same redis-benchmark flags, in one run: TICKET.NEXT on
# one ticket-server versus INCR on a plain redis-server, unpipelined and pipelined, in
# alternating rounds (median of the per-round ratios); then the odd/even pair through the
# round-robin client. Each server is pinned to the first core and the load to the second when
# there are two, so both servers get one core. Writes target/bench/ticket.md.
#
# Usage: benches/ticket.sh [ROUNDS]     (default 7; about 2 minutes)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

ROUNDS=${1:-7}
OUT=$ROOT/target/bench
TICKET_SERVER=$ROOT/target/release/ticket-server
TICKET_RATE=$ROOT/target/release/ticket-rate
cargo build --release -q -p ticket-server -p idgen-benches
DIR=$(mktemp -d /tmp/ticket-bench.XXXXXX)
REDIS_PORT=$(free_port) ODD_PORT=$(free_port) EVEN_PORT=$(free_port)
SERVER_CPU=() CLIENT_CPU=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  SERVER_CPU=(taskset -c 0) CLIENT_CPU=(taskset -c 1)
fi
pids=()
cleanup() {
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
mkdir -p "$OUT"
"${SERVER_CPU[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$DIR" --daemonize yes --logfile "$DIR/redis.log"
for k in 1 2; do
  port=$([ "$k" = 1 ] && echo "$ODD_PORT" || echo "$EVEN_PORT")
  "${SERVER_CPU[@]}" "$TICKET_SERVER" serve --listen "127.0.0.1:$port" --offset "$k" --increment 2 --init \
    --data-dir "$DIR/tickets-$k" 2>"$DIR/ticket-$k.log" &
  pids+=($!)
done
for port in "$REDIS_PORT" "$ODD_PORT" "$EVEN_PORT"; do
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
    sleep 0.05
  done
done

rps() {
  local port=$1 p=$2 n=$3
  shift 3
  "${CLIENT_CPU[@]}" redis-benchmark -p "$port" -c 50 -P "$p" -n "$n" -q "$@" 2>/dev/null \
    | tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

rows=()
compare() {
  local p=$1 n=$2 ratios=() incr=() tickets=() a b
  for r in $(seq "$ROUNDS"); do
    a=$(rps "$REDIS_PORT" "$p" "$n" INCR "tickets:$r")
    b=$(rps "$ODD_PORT" "$p" "$n" TICKET.NEXT)
    incr+=("$a") tickets+=("$b")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')")
    printf '  -P %-3s round %d/%d: INCR %9.0f/s  TICKET.NEXT %9.0f/s  ratio %s\n' "$p" "$r" "$ROUNDS" "$a" "$b" "${ratios[-1]}" >&2
  done
  local m
  m=$(printf '%s\n' "${ratios[@]}" | median)
  rows+=("| -c 50 -P $p | $(printf '%s\n' "${incr[@]}" | median | cut -d. -f1) | $(printf '%s\n' "${tickets[@]}" | median | cut -d. -f1) | **$m** | $(awk -v m="$m" 'BEGIN {print (m >= 1.0) ? "yes" : "NO"}') |")
}

echo "redis-server :$REDIS_PORT, ticket-server :$ODD_PORT (odd) and :$EVEN_PORT (even); $ROUNDS rounds" >&2
compare 1 300000
compare 64 1000000

single=$("${CLIENT_CPU[@]}" "$TICKET_RATE" --servers "127.0.0.1:$ODD_PORT" --seconds 5)
pair=$("${CLIENT_CPU[@]}" "$TICKET_RATE" --servers "127.0.0.1:$ODD_PORT,127.0.0.1:$EVEN_PORT" --seconds 5)
echo "  round-robin client, one server: $single" >&2
echo "  round-robin client, odd/even pair: $pair" >&2
rate() { sed -n 's/.*tickets_per_s=\([0-9]*\).*/\1/p' <<<"$1"; }
# The prefetching client: blocks of 1,000,000 by TICKET.RANGE, 4 threads handing out 50 M each.
prefetch=$("${CLIENT_CPU[@]}" "$ROOT/target/release/prefetch-rate" --servers "127.0.0.1:$ODD_PORT,127.0.0.1:$EVEN_PORT")
echo "  prefetching client, odd/even pair: $prefetch" >&2

{
  echo "# Ticket servers against INCR"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(nproc) cores,"
  echo "${SERVER_CPU[*]:-no pinning} for the servers, ${CLIENT_CPU[*]:-} for the load. Median of $ROUNDS alternating rounds;"
  echo "\`TICKET.NEXT\` on one ticket-server (durable bound on disk, block 100000) against \`INCR\` on redis-server"
  echo "(no persistence), same redis-benchmark flags."
  echo
  echo "| redis-benchmark | INCR/s | TICKET.NEXT/s | ratio | at least INCR |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Through the round-robin client (50 callers, one call in flight each, 5 s, both servers on one"
  echo "core): one server $(rate "$single") tickets/s; the odd/even pair $(rate "$pair") tickets/s."
  echo
  echo "Prefetching client (blocks of 1,000,000 taken with TICKET.RANGE from the pair, refilled in the"
  echo "background, 4 threads in one process handing out 50,000,000 each): **$(rate "$prefetch") tickets/s**"
  echo "(goal 20,000,000/s)."
} | tee "$OUT/ticket.md"
