#!/usr/bin/env bash
# The Functions library beside INCR and beside the Lua generators a user built (the script
# peers of IDGEN_PEERS, docs/benchmarks.md: Peers), on a stock redis-server without the module:
#  - instructions a call inside the server (callgrind: reading and running the call and the
#    work before the event loop sleeps; N calls from one client, unpipelined; the median of
#    three starts);
#  - calls a second as a ratio of INCR's on the same server in the same round (redis-benchmark,
#    16 connections, each unpipelined and with 16 calls in flight; the median of three rounds).
# Then again on Redis 6.0, where the library runs as scripts (EVALSHA), when one is built
# (IDGEN_REDIS6, or the cache of scripts/debian-server.sh redis bullseye).
# Writes target/bench/library.md, and the same table into docs/library.md.
#
# Usage: benches/library.sh [N]     (default 2000)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
command -v valgrind >/dev/null || { echo "library.sh: apt-get install valgrind" >&2; exit 1; }
N=${1:-2000}
STARTS=3
ROUNDS=3
OUT=$ROOT/target/bench
WORKER=$ROOT/target/release/idgen-lease-worker
[ -x "$WORKER" ] || { echo "library.sh: build $WORKER first (make build)" >&2; exit 1; }
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

# The script peers of IDGEN_PEERS: "name<TAB>script<TAB>EVALSHA arguments after the SHA".
peers() {
  [ -n "${IDGEN_PEERS:-}" ] || return 0
  python3 - "$IDGEN_PEERS" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    peers = tomllib.load(f).get("peer", {})
for name, peer in sorted(peers.items()):
    if "script" in peer:
        print(name, peer["script"], " ".join(peer.get("args", [])), sep="\t")
EOF
}

# setup PORT: installs the library on the server at PORT and its state, loads the peers'
# scripts; writes the rows, "LABEL|WORDS", to $work/rows.
setup() {
  local port=$1 out name script args sha form
  out=$("$WORKER" install-library --url "redis://127.0.0.1:$port/")
  redis-cli -p "$port" HSET sf worker 1 datacenter 1 >/dev/null
  {
    echo "\`INCR\`|INCR counter"
    if [[ $out == *EVALSHA* ]]; then
      form=EVALSHA
      call() { echo "EVALSHA $(awk -v f="$1" '$1 == f {print $2}' <<<"$out")"; }
    else
      form=FCALL
      call() { echo "FCALL $1"; }
    fi
    echo "\`snowflake_next\` ($form)|$(call snowflake_next) 1 sf"
    echo "\`dateseq_next\` ($form)|$(call dateseq_next) 1 order"
    echo "\`dateseq_next\` with a witness key ($form)|$(call dateseq_next) 2 {o} {o}:w"
    while IFS=$'\t' read -r name script args; do
      sha=$(redis-cli -p "$port" -x SCRIPT LOAD <"$script")
      echo "peer $name (EVALSHA)|EVALSHA $sha $args"
    done < <(peers)
    # Last: the garbage of a Sqid's making leaves the collector some 1,500 instructions a
    # call busier for a while after, which the rows above would otherwise carry.
    echo "\`snowflake_next ... SQIDS\` ($form)|$(call snowflake_next) 1 sf SQIDS"
  } >"$work/rows"
}

# speed_server PROGRAM DIR: a server of PROGRAM in DIR (not under callgrind), set up; its port
# in $port.
speed_server() {
  port=$(free_port)
  mkdir -p "$2"
  "$1" --port "$port" --bind 127.0.0.1 --save '' --dir "$2" >"$work/redis.log" 2>&1 &
  pids+=($!)
  wait_for_pong "$port" || { cat "$work/redis.log" >&2; exit 1; }
  setup "$port"
}

# measure NAME PROGRAM: the table's rows for the server PROGRAM, under NAME.
measure() {
  local name=$1 program=$2 start round port pid label words base rps
  for start in $(seq "$STARTS"); do
    port=$(free_port)
    mkdir -p "$work/$name.$start"
    valgrind --tool=callgrind --toggle-collect=readQueryFromClient --toggle-collect=beforeSleep \
      --callgrind-out-file="$work/out.%p" "$program" --port "$port" --bind 127.0.0.1 --save '' \
      --dir "$work/$name.$start" >"$work/redis.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_for_pong "$port" || { cat "$work/redis.log" >&2; exit 1; }
    setup "$port"
    while IFS='|' read -r label words; do
      # shellcheck disable=SC2086
      printf '%s\t%s\n' "$label" "$(callgrind_per_call "$pid" "$port" 1 "$work" "$N" $words)"
    done <"$work/rows" >"$work/$name.count.$start"
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  done
  for round in $(seq "$ROUNDS"); do
    # A server of its own each round, and another after a row that failed: a peer can leave
    # one busy (a script that spins until the clock moves, which it cannot see move).
    speed_server "$program" "$work/$name.data.$round"
    for pipeline in 1 16; do
      while IFS='|' read -r label words; do
        # An error reply stops redis-benchmark: that row is 0, and the table's notes say why.
        # shellcheck disable=SC2086
        rps=$(redis-benchmark -p "$port" -c 16 -P "$pipeline" -n $((20000 * pipeline)) --csv \
          $words 2>"$work/error" | tail -1 | cut -d'"' -f4 || true)
        if ! [[ $rps =~ ^[0-9.]+$ ]]; then
          rps=0
          printf '%s, %s in flight a connection: %s\n' "$label ($name)" "$pipeline" \
            "$(grep -m1 -i error "$work/error" || echo 'no reply')" >>"$work/failed"
          redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
          speed_server "$program" "$work/$name.data.$round.$pipeline.$RANDOM"
        fi
        [ "$label" = '`INCR`' ] && base=$rps
        printf '%s\t%s\n' "$label" "$(awk -v a="$rps" -v b="$base" 'BEGIN {printf "%.2f", (a + 0) / b}')"
      done <"$work/rows" >"$work/$name.speed.$pipeline.$round"
    done
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  done
  # The median of each column, row by row.
  paste "$work/$name.count."* "$work/$name.speed.1."* "$work/$name.speed.16."* |
    awk -F'\t' -v n="$STARTS" -v r="$ROUNDS" -v server="$("$program" --version | cut -d' ' -f3)" '
      function median(first, count, step,   i, j, t, v) {
        for (i = 0; i < count; i++) v[i] = $(first + i * step)
        for (i = 0; i < count; i++) for (j = i + 1; j < count; j++)
          if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return v[int(count / 2)]
      }
      {
        count = median(2, n, 2)
        if (NR == 1) incr = count
        printf "| %s (%s) | %d | %.1f | %.2f | %.2f |\n", $1, server, count, count / incr,
          median(2 * n + 2, r, 2), median(2 * n + 2 * r + 2, r, 2)
      }'
}

{
  echo "| call | instructions a call | × INCR | calls/s × INCR, 16 connections | × INCR, 16 in flight each |"
  echo "|---|---:|---:|---:|---:|"
  measure redis7 redis-server
  redis6=${IDGEN_REDIS6:-$(compgen -G "$(idgen_cache)/servers/bullseye/redis-*/bin/redis-server" | tail -1 || true)}
  if [ -n "$redis6" ]; then
    measure redis6 "$redis6"
  else
    echo "| Redis 6.0 (scripts) | not run: no Redis 6 built (scripts/debian-server.sh redis bullseye) | | | |"
  fi
  [ -n "${IDGEN_PEERS:-}" ] || echo "| Lua peers | not run: IDGEN_PEERS is not set (docs/benchmarks.md: Peers) | | | |"
  if [ -s "$work/failed" ]; then
    echo
    echo "Calls a second of 0 are runs that failed:"
    echo
    sort -u "$work/failed" | sed 's/^/- /'
  fi
} | tee "$OUT/library.md"
"$ROOT/scripts/doc-table.sh" "$ROOT/docs/library.md" "the library's table" "$OUT/library.md"
