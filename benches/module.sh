#!/usr/bin/env bash
# SNOWFLAKE.NEXT and DATESEQ.NEXT against INCR, on one redis-server in one run, with
# redis-benchmark. Each comparison is repeated in alternating rounds; the median ratio counts.
# Writes target/bench/module.md. Usage: benches/module.sh [rounds]
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

ROUNDS=${1:-3}
OUT=$ROOT/target/bench
DIR=$(mktemp -d /tmp/idgen-bench.XXXXXX)
PORT=$(free_port)
mkdir -p "$OUT"
trap 'stop_redis "$DIR" "$PORT"; rm -rf "$DIR"' EXIT
start_redis "$DIR" "$PORT"
cli() { redis-cli -p "$PORT" "$@"; }

# rps CLIENTS PIPELINE REQUESTS COMMAND...: requests per second.
rps() {
  local c=$1 p=$2 n=$3
  shift 3
  redis-benchmark -p "$PORT" -c "$c" -P "$p" -n "$n" -q "$@" 2>/dev/null | tr '\r' '\n' \
    | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# compare NAME AOF CLIENTS PIPELINE REQUESTS -- COMMAND...: median ratio COMMAND / INCR.
rows=()
compare() {
  local name=$1 aof=$2 c=$3 p=$4 n=$5
  shift 6
  cli config set appendonly "$aof" >/dev/null
  sleep 0.5
  local ratios=() a b
  for r in $(seq "$ROUNDS"); do
    a=$(rps "$c" "$p" "$n" INCR "bench:incr:$r")
    b=$(rps "$c" "$p" "$n" "$@")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')")
    printf '  %-44s round %s: INCR %10.0f/s  %s %10.0f/s  ratio %s\n' "$name" "$r" "$a" "$1" "$b" "${ratios[-1]}" >&2
  done
  local m
  m=$(printf '%s\n' "${ratios[@]}" | median)
  rows+=("| $name | $* | appendonly $aof, -c $c -P $p | $m |")
}

echo "redis-benchmark on 127.0.0.1:$PORT, $ROUNDS rounds each" >&2
compare "SNOWFLAKE.NEXT vs INCR, unpipelined" no 50 1 200000 -- SNOWFLAKE.NEXT
compare "SNOWFLAKE.NEXT vs INCR, pipelined" no 50 64 2000000 -- SNOWFLAKE.NEXT
compare "DATESEQ.NEXT vs INCR, unpipelined, AOF" yes 50 1 200000 -- DATESEQ.NEXT bench:ds DIGITS 10
compare "DATESEQ.NEXT vs INCR, pipelined, AOF" yes 50 64 2000000 -- DATESEQ.NEXT bench:ds DIGITS 10
compare "DATESEQ.NEXT vs INCR, pipelined, no AOF" no 50 64 2000000 -- DATESEQ.NEXT bench:ds DIGITS 10

# Batches: how close SNOWFLAKE.NEXT COUNT gets to the layout's limit (4096 IDs per ms).
cli config set appendonly no >/dev/null
field() { cli info idgen | tr -d '\r' | sed -n "s/^idgen_$1://p"; }
issued0=$(field ids_issued)
refused0=$(field ids_refused)
t0=$(date +%s%N)
redis-benchmark -p "$PORT" -c 4 -P 1 -n 20000 -q SNOWFLAKE.NEXT COUNT 4096 >/dev/null 2>&1
t1=$(date +%s%N)
issued=$(($(field ids_issued) - issued0))
refused=$(($(field ids_refused) - refused0))
rate=$(awk -v n="$issued" -v t=$((t1 - t0)) 'BEGIN {printf "%.0f", n / (t / 1e9)}')
share=$(awk -v r="$rate" 'BEGIN {printf "%.3f", r / 4096000}')
drift=$(field drift_borrowed_max_ms)
echo "  COUNT 4096 x 20000 calls: $issued IDs in $(((t1 - t0) / 1000000)) ms = $rate IDs/s ($share of 4,096,000/s), $refused calls refused, max drift $drift ms" >&2

{
  echo "# Redis module vs INCR ($(date -u +%Y-%m-%d), redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $(nproc) cores)"
  echo
  echo "Ratio of throughput to INCR on the same server, median of $ROUNDS alternating rounds."
  echo
  echo "| comparison | command | setting | ratio to INCR |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "SNOWFLAKE.NEXT COUNT 4096 from 4 clients: $rate IDs/s = $share of the Twitter layout's limit"
  echo "(4,096,000/s); $refused calls refused at the drift limit; furthest ahead of the clock: $drift ms."
  echo "No call waits for the clock: a call the clock cannot cover is refused at once."
} | tee "$OUT/module.md"
