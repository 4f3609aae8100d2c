# Shared helpers for the project's shell scripts: free ports, a redis-server with the module.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODULE=${IDGEN_MODULE:-$ROOT/target/release/libredis_idgen.so}

# A TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 12000))  # under the kernel's ephemeral range (32768-)
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# start_redis DIR PORT [redis-server args...]: starts redis-server with the module, waits for PING.
start_redis() {
  local dir=$1 port=$2
  shift 2
  [ -f "$MODULE" ] || { echo "module not built: $MODULE (run: cargo build --release -p redis-idgen)" >&2; return 1; }
  launch_redis "$dir" "$port" --loadmodule "$MODULE" "$@"
}

# start_plain_redis DIR PORT: the same without the module (a server like a managed service's).
start_plain_redis() {
  launch_redis "$1" "$2"
}

# launch_redis DIR PORT ARGS...: redis-server with ARGS, daemonized; waits for its PONG.
launch_redis() {
  local dir=$1 port=$2
  shift 2
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@" || return 1
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.05
  done
  echo "redis-server did not start; its log:" >&2
  cat "$dir/redis.log" >&2
  return 1
}

# stop_redis DIR PORT
stop_redis() {
  redis-cli -p "$2" shutdown nosave >/dev/null 2>&1 || true
  [ -f "$1/redis.pid" ] && kill "$(cat "$1/redis.pid")" 2>/dev/null || true
}

# apt_lock / apt_unlock: hold this project's apt lock (on fd 9) around apt-get. make test builds
# two servers and a Debian root side by side; apt's own lock fails a second apt-get at once
# rather than waiting, and a source list must not be read while another run updates it. The
# lock is the user's own, beside the apt state it guards: one in /tmp made by root refused every
# other user (make check as a user found it so).
apt_lock() {
  mkdir -p "$(idgen_cache)"
  exec 9>"$(idgen_cache)/apt.lock"
  flock 9
}
apt_unlock() { flock -u 9; }

# The Debian mirror this system's own apt sources use (deb822 or one-line form), or nothing:
# the project's downloads from Debian come from where the system already gets its packages.
debian_mirror() {
  local uri
  uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  echo "$uri"
}

# Where builds and roots made outside the checkout are kept (IDGEN_CACHE, else ~/.cache/idgen).
idgen_cache() {
  echo "${IDGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/idgen}"
}

# callgrind_per_call PID PORT DIVISOR OUTDIR N WORDS...: instructions per call of WORDS (divided
# by DIVISOR: per ID for COUNT forms) in the server PID, run under callgrind writing to
# OUTDIR/out.*, over N calls from one client, unpipelined. For scripts/callgrind-compare.sh and
# benches/forms.sh.
callgrind_per_call() {
  local pid=$1 port=$2 divisor=$3 dir=$4 n=$5 out
  shift 5
  # An error reply would stop redis-benchmark after one call: refused here, saying why.
  out=$(redis-cli -p "$port" "$@" 2>&1 | head -1)
  if [[ $out =~ ^[A-Z]+\  ]]; then
    echo "callgrind_per_call: $*: $out" >&2
    return 1
  fi
  callgrind_control -z "$pid" >/dev/null 2>&1
  redis-benchmark -p "$port" -c 1 -P 1 -n "$n" -q "$@" >/dev/null 2>&1
  callgrind_control -d "$pid" >/dev/null 2>&1
  out=$(ls -t "$dir"/out.* | head -1)
  echo $(( $(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$out" | head -1) / n / divisor ))
  rm -f "$dir"/out.*
}

# wait_for_pong PORT: until the server on PORT answers PING (30 s at most).
wait_for_pong() {
  for _ in $(seq 300); do
    redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "nothing answers on $1" >&2
  return 1
}
