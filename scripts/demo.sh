#!/usr/bin/env bash
# End to end: a redis-server with the module on a free loopback port, IDs of each kind made and
# decoded with redis-cli; then an odd/even pair of ticket servers and tickets from both through
# the round-robin client; then a plain redis-server with idgen's Functions library, as a managed
# service's user would use it. Everything started is stopped at the end.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DIR=$(mktemp -d /tmp/idgen-demo.XXXXXX)
PORT=$(free_port)
PLAIN=$(free_port)
PLAIN2=$(free_port)
TICKET_PIDS=()
cleanup() {
  stop_redis "$DIR" "$PORT"
  stop_redis "$DIR/plain" "$PLAIN"
  stop_redis "$DIR/plain2" "$PLAIN2"
  for pid in "${TICKET_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
start_redis "$DIR" "$PORT" worker-id 3 datacenter-id 1 workerid-horizon-ms 2000

run() {
  printf '\n$ redis-cli %s\n' "$*"
  redis-cli -p "$PORT" "$@"
}

echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$PORT with $MODULE"
echo "  loaded as: --loadmodule libredis_idgen.so worker-id 3 datacenter-id 1 workerid-horizon-ms 2000"
run SNOWFLAKE.NEXT
id=$(redis-cli -p "$PORT" SNOWFLAKE.NEXT)
run SNOWFLAKE.DECODE "$id"
run SNOWFLAKE.NEXT COUNT 5
run DATESEQ.NEXT order
run DATESEQ.NEXT order
run DATESEQ.NEXT order DIGITS 10
run DATESEQ.CURRENT order
key=$(redis-cli -p "$PORT" --scan --pattern '{order}:*' | head -1)
run GET "$key"
run PTTL "$key"
run CONFIG GET 'idgen.*'
run INFO idgen
echo
echo "Errors are replies, never crashes:"
run SNOWFLAKE.NEXT COUNT 0
run CONFIG SET idgen.worker-id 4
run DATESEQ.NEXT order DIGITS 11

echo
echo "== Worker-ID leases: three processes make IDs in process, each under its own leased worker ID"
echo "(a coordinator grants leases above its start plus idgen.workerid-horizon-ms, 2 s here: the"
echo " namespaces it loaded may lack renewals; see docs/leases.md)"
fence=$(redis-cli -p "$PORT" INFO idgen | sed -n 's/^idgen_workerid_fence_ms:\([0-9]*\).*/\1/p')
while [ "$(date +%s%3N)" -lt "$fence" ]; do sleep 0.1; done
WORKER="$ROOT/target/release/idgen-lease-worker"
for k in 1 2 3; do
  "$WORKER" --url "redis://127.0.0.1:$PORT/" --namespace demo --ttl-ms 2000 --run-ms 600 >"$DIR/worker-$k.out" &
done
wait_workers() { for pid in $(jobs -p); do case " ${TICKET_PIDS[*]} " in *" $pid "*) ;; *) wait "$pid" ;; esac; done; }
sleep 0.3
echo "The leases while they are held (worker ID, token, lease ends at, IDs recorded up to; Unix ms):"
run WORKERID.LIST demo
wait_workers
for k in 1 2 3; do
  read -r _ token worker < <(grep -m1 '^L ' "$DIR/worker-$k.out")
  ids=$(grep -c '^I ' "$DIR/worker-$k.out")
  echo "  process $k: worker ID $worker (token $token), $ids IDs, e.g. $(grep -m1 '^I ' "$DIR/worker-$k.out" | cut -d' ' -f2)"
done
echo "  all distinct: $(cat "$DIR"/worker-*.out | grep -c '^I ') IDs, $(cat "$DIR"/worker-*.out | grep '^I ' | cut -d' ' -f2 | sort -u | wc -l) unique"
echo "Each released its lease on exit; a fourth process gets a recycled worker ID, under a new token,"
echo "and starts above the time its last holder recorded:"
"$WORKER" --url "redis://127.0.0.1:$PORT/" --namespace demo --ttl-ms 2000 --run-ms 100 >"$DIR/worker-4.out"
read -r _ token worker < <(grep -m1 '^L ' "$DIR/worker-4.out" || echo "L none none")
echo "  process 4: worker ID $worker (token $token), $(grep -c '^I ' "$DIR/worker-4.out" || true) IDs"

echo
echo "== Flickr-style ticket servers: odd (offset 1 of 2) and even (offset 2 of 2)"
ODD=$(free_port)
EVEN=$(free_port)
for k in 1 2; do
  port=$([ "$k" = 1 ] && echo "$ODD" || echo "$EVEN")
  "$ROOT/target/release/ticket-server" serve --listen "127.0.0.1:$port" --offset "$k" --increment 2 --init \
    --data-dir "$DIR/tickets-$k" 2>>"$DIR/tickets.log" &
  TICKET_PIDS+=($!)
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
    sleep 0.05
  done
done
printf '\n$ redis-cli -p %s TICKET.NEXT   # odd\n' "$ODD"
redis-cli -p "$ODD" TICKET.NEXT
printf '\n$ redis-cli -p %s TICKET.NEXT COUNT 3   # even\n' "$EVEN"
redis-cli -p "$EVEN" TICKET.NEXT COUNT 3
printf '\n$ ticket-server next --servers 127.0.0.1:%s,127.0.0.1:%s --count 6\n' "$ODD" "$EVEN"
"$ROOT/target/release/ticket-server" next --servers "127.0.0.1:$ODD,127.0.0.1:$EVEN" --count 6

echo
echo "== Without the module: a plain redis-server and idgen's Functions library (docs/library.md),"
echo "   used as a managed service's user, denied MODULE, CONFIG, DEBUG and SHUTDOWN"
start_plain_redis "$DIR/plain" "$PLAIN"
redis-cli -p "$PLAIN" ACL SETUSER app on '>app-secret' '~*' '&*' +@all -module -config -debug \
  -shutdown >/dev/null
printf '\n$ idgen-lease-worker install-library --url redis://app:app-secret@127.0.0.1:%s/\n' "$PLAIN"
"$ROOT/target/release/idgen-lease-worker" install-library --url "redis://app:app-secret@127.0.0.1:$PLAIN/"
plain() {
  printf '\n$ redis-cli --user app %s\n' "$*"
  redis-cli -p "$PLAIN" --user app --pass app-secret --no-auth-warning "$@"
}
plain HSET idgen:snowflake datacenter 1 worker 7
plain FCALL snowflake_next 1 idgen:snowflake
plain FCALL snowflake_next 1 idgen:snowflake COUNT 3
plain FCALL dateseq_next 1 order
plain FCALL dateseq_next 1 order
plain FCALL_RO dateseq_current 1 order
plain CONFIG GET maxmemory
# Leases: the library fences grants for one horizon after the server's start (no witness
# file); the demo's 2 s horizon (set at install) keeps that wait short.
"$ROOT/target/release/idgen-lease-worker" install-library --horizon-ms 2000 \
  --url "redis://app:app-secret@127.0.0.1:$PLAIN/" >/dev/null
sleep 3
printf '\n$ idgen-lease-worker --url redis://app:app-secret@127.0.0.1:%s/ --namespace web --ttl-ms 2000 --run-ms 300 | tail -2   # a worker ID leased from the library\n' "$PLAIN"
"$ROOT/target/release/idgen-lease-worker" --url "redis://app:app-secret@127.0.0.1:$PLAIN/" \
  --namespace web --ttl-ms 2000 --run-ms 300 | tail -2
start_plain_redis "$DIR/plain2" "$PLAIN2"
printf '\n$ ticket-server next --plain-redis --servers 127.0.0.1:%s,127.0.0.1:%s --count 4   # segments from two plain redis-servers (INCRBY)\n' "$PLAIN" "$PLAIN2"
"$ROOT/target/release/ticket-server" next --plain-redis --servers "redis://app:app-secret@127.0.0.1:$PLAIN/,127.0.0.1:$PLAIN2" --count 4

echo
echo "== A first comparison: each way of making IDs beside INCR, with redis-benchmark"
# The full comparison (MariaDB, PostgreSQL, other Snowflake libraries, in-process generators,
# instructions under callgrind, Python) builds a harness of some 300 crates: make bench.
rps() {  # rps PORT PIPELINE REQUESTS COMMAND...: requests per second, 16 connections
  local port=$1 p=$2 n=$3
  shift 3
  redis-benchmark -p "$port" -c 16 -P "$p" -n "$n" -q "$@" 2>/dev/null \
    | tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
TABLE="$ROOT/target/compare/first.md"
mkdir -p "$(dirname "$TABLE")"
{
  echo "| command | server | unpipelined, req/s | x INCR | 16 in flight, req/s | x INCR |"
  echo "|---|---|---:|---:|---:|---:|"
  row() {  # row LABEL SERVER PORT COMMAND...: the command's rates, INCR's measured just before
    local label=$1 server=$2 port=$3 incr1 incr16 r1 r16
    shift 3
    incr1=$(rps "$PORT" 1 100000 INCR demo:incr)
    incr16=$(rps "$PORT" 16 400000 INCR demo:incr)
    # A run that fails prints no rate: shown as 0 rather than ending the demo.
    r1=$(rps "$port" 1 100000 "$@") r16=$(rps "$port" 16 400000 "$@")
    r1=${r1:-0} r16=${r16:-0}
    printf '| `%s` | %s | %.0f | %s | %.0f | %s |\n' "$label" "$server" "$r1" "$(ratio "$r1" "$incr1")" \
      "$r16" "$(ratio "$r16" "$incr16")"
  }
  row INCR "redis-server" "$PORT" INCR demo:incr
  row SNOWFLAKE.NEXT "redis-server + module" "$PORT" SNOWFLAKE.NEXT
  row "DATESEQ.NEXT order" "redis-server + module" "$PORT" DATESEQ.NEXT order
  row UUID7.NEXT "redis-server + module" "$PORT" UUID7.NEXT
  row TICKET.NEXT "ticket-server (odd)" "$ODD" TICKET.NEXT
  row "FCALL snowflake_next" "redis-server, library" "$PLAIN" FCALL snowflake_next 1 idgen:snowflake
  row "FCALL dateseq_next" "redis-server, library" "$PLAIN" FCALL dateseq_next 1 order
} >"$TABLE"
cat "$TABLE"
echo "(16 connections, this machine, one run: INCR measured on the module's server just before each"
echo " row; written to ${TABLE#"$ROOT"/}. make bench runs the full comparison: target/compare/report.md)"

echo
echo "demo done; every server is stopped."
