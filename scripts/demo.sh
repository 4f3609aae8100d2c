#!/usr/bin/env bash
# The module end to end: a redis-server with it on a free loopback port, IDs of each kind made
# and decoded with redis-cli, then the server stopped.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DIR=$(mktemp -d /tmp/idgen-demo.XXXXXX)
PORT=$(free_port)
trap 'stop_redis "$DIR" "$PORT"; rm -rf "$DIR"' EXIT
start_redis "$DIR" "$PORT" worker-id 3 datacenter-id 1

run() {
  printf '\n$ redis-cli %s\n' "$*"
  redis-cli -p "$PORT" "$@"
}

echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$PORT with $MODULE"
echo "  loaded as: --loadmodule libredis_idgen.so worker-id 3 datacenter-id 1"
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
echo "demo done; the server is stopped."
