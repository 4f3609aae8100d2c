#!/usr/bin/env bash
# The release where operators run it: in a Debian 11 root (glibc 2.31; scripts/release-root.sh)
# with a Redis 7 built there,
#   1. the portable module (scripts/portable-build.sh) loads and answers SNOWFLAKE.NEXT,
#      DATESEQ.NEXT and WORKERID.ACQUIRE;
#   2. the portable ticket-server runs a pair, and its client takes tickets from both;
#   3. the .deb packages (scripts/deb.sh) install with dpkg -i, put every file where the units
#      expect it, `systemd-analyze verify` accepts the units, the installed ticket-server
#      serves tickets when started as its unit starts it, the packaged module loads from its
#      path, an upgrade keeps the store (tickets go on above), and removing and purging keep it.
# Each run works on a copy of the root (an overlay), dropped at the end. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh
. scripts/lib.sh
[ "$(id -u)" = 0 ] || { echo "release-test.sh: chroot needs root" >&2; exit 1; }
# The root (made once: debootstrap, a Redis build) beside the build of what goes into it.
scripts/release-root.sh >"${TMPDIR:-/tmp}/idgen-release-root.$$" 2>&1 &
making_root=$!
portable=$(scripts/portable-build.sh)
scripts/check-glibc.sh "$portable/libredis_idgen.so" "$portable/ticket-server" "$portable/idgen-lease-worker"
mapfile -t debs < <(scripts/deb.sh 1)
mapfile -t upgrades < <(scripts/deb.sh 2)
wait "$making_root" || { cat "${TMPDIR:-/tmp}/idgen-release-root.$$" >&2; exit 1; }
rm -f "${TMPDIR:-/tmp}/idgen-release-root.$$"
base=$(scripts/release-root.sh)
redis_server=$(scripts/debian-server.sh redis bookworm "$base")
redis_cli=${redis_server%-server}-cli

work=$(mktemp -d "${TMPDIR:-/tmp}/idgen-release.XXXXXX")
root=$work/root
mkdir -p "$root" "$work/upper" "$work/scratch"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  umount "$root/proc" 2>/dev/null || true
  umount -R "$root/sys" 2>/dev/null || true
  umount "$root" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if ! mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/scratch" "$root" 2>/dev/null; then
  cp -a "$base/." "$root/"  # no overlayfs here: a copy
fi
mount -t proc proc "$root/proc"
# systemd-analyze needs the cgroup hierarchy.
mount --rbind /sys "$root/sys"
mount --make-rslave "$root/sys"
# Background processes are started with chroot itself, not in_root: their pid is then the
# process that the cleanup kills.
in_root() { chroot "$root" "$@"; }
fail() { echo "release-test: FAILED: $*" >&2; exit 1; }
step() { echo "release-test: $*"; }
cli() { local port=$1; shift; in_root "$redis_cli" -p "$port" "$@"; }
# start_redis PORT ARGS...: the root's Redis 7, in the background; waits for its PONG.
start_root_redis() {
  local port=$1; shift
  chroot "$root" "$redis_server" --port "$port" --bind 127.0.0.1 --save '' --dir /tmp "$@" \
    >"$work/redis-$port.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    [ "$(cli "$port" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.05
  done
  cat "$work/redis-$port.log" >&2
  fail "redis-server in the root did not start"
}
# tickets PORTS COUNT: COUNT tickets from the servers on PORTS (comma-separated), by the
# client of the binary given as $ticket.
tickets() {
  local servers
  servers=$(sed 's/\([0-9]*\)/127.0.0.1:\1/g' <<<"$1")
  in_root "$ticket" next --servers "$servers" --count "$2"
}
wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  fail "nothing listens on $1"
}

step "glibc in the root: $(in_root ldd --version | head -1)"

# 1. The portable module in the root's Redis 7.
mkdir -p "$root/opt/idgen"
cp "$portable/libredis_idgen.so" "$portable/ticket-server" "$root/opt/idgen/"
port=$(free_port)
start_root_redis "$port" --loadmodule /opt/idgen/libredis_idgen.so
id=$(cli "$port" SNOWFLAKE.NEXT)
[[ $id =~ ^[1-9][0-9]{9,18}$ ]] || fail "SNOWFLAKE.NEXT gave '$id'"
value=$(cli "$port" DATESEQ.NEXT order)
[[ $value == "$(date -u +%Y%m%d)"* || $value == "$(date +%Y%m%d)"* ]] || fail "DATESEQ.NEXT gave '$value'"
lease=$(cli "$port" WORKERID.ACQUIRE fleet TTL 5000 | head -1)
[[ $lease =~ ^[0-9]+$ ]] || fail "WORKERID.ACQUIRE gave '$lease'"
step "the portable module in Redis $(cli "$port" INFO server | awk -F: '/^redis_version/ {print $2}' | tr -d '\r'): SNOWFLAKE.NEXT $id, DATESEQ.NEXT $value, worker $lease leased"
cli "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true

# 2. The portable ticket-server: a pair, and its client.
ticket=/opt/idgen/ticket-server
base_port=$(free_port)
while (exec 3<>"/dev/tcp/127.0.0.1/$((base_port + 1))") 2>/dev/null; do base_port=$(free_port); done
chroot "$root" "$ticket" pair --base-port "$base_port" --servers 2 --data-dir /tmp/pair --init \
  >"$work/pair.log" 2>&1 &
pids+=($!)
wait_port "$base_port"
wait_port $((base_port + 1))
mapfile -t got < <(tickets "$base_port,$((base_port + 1))" 10)
[ "${#got[@]}" = 10 ] || fail "the pair gave ${#got[@]} tickets: ${got[*]}"
[ "$(printf '%s\n' "${got[@]}" | sort -u | wc -l)" = 10 ] || fail "the pair repeated a ticket: ${got[*]}"
odd=$(printf '%s\n' "${got[@]}" | awk '$1 % 2 == 1' | wc -l)
[ "$odd" = 5 ] || fail "the client did not take from both servers: ${got[*]}"
step "the portable ticket-server pair: ${got[*]}"

# 3. The packages.
cp "${debs[@]}" "${upgrades[@]}" "$root/tmp/"
names() { for deb in "$@"; do echo "/tmp/$(basename "$deb")"; done; }
mapfile -t first < <(names "${debs[@]}")
mapfile -t second < <(names "${upgrades[@]}")
in_root dpkg -i "${first[@]}" >"$work/dpkg-install.log" 2>&1 || { cat "$work/dpkg-install.log" >&2; fail "dpkg -i"; }
for file in /usr/lib/redis/modules/redis-idgen.so /etc/redis-idgen/idgen.conf \
  /usr/share/doc/redis-idgen/README.Debian /usr/bin/ticket-server /usr/bin/idgen-lease-worker \
  /etc/default/ticket-server /etc/default/idgen-install-library \
  /usr/lib/systemd/system/ticket-server.service /usr/lib/systemd/system/idgen-install-library.service \
  /etc/systemd/system/multi-user.target.wants/ticket-server.service; do
  in_root test -e "$file" || fail "the packages did not install $file"
done
in_root getent passwd ticket-server >/dev/null || fail "no ticket-server user"
[ "$(in_root stat -c %U /var/lib/ticket-server)" = ticket-server ] || fail "/var/lib/ticket-server is not the service's"
[ -n "$(ls -A "$root/var/lib/ticket-server")" ] || fail "ticket-server init made no store"
! in_root test -e /etc/systemd/system/multi-user.target.wants/idgen-install-library.service ||
  fail "idgen-install-library is enabled: it needs a URL first"
step "dpkg -i: every file in place, the ticket-server user and its store made"
verify=$(in_root systemd-analyze verify /usr/lib/systemd/system/ticket-server.service \
  /usr/lib/systemd/system/idgen-install-library.service 2>&1) || { echo "$verify" >&2; fail "systemd-analyze verify"; }
# A setting it ignores is only a warning: none is allowed either.
[ -z "$verify" ] || { echo "$verify" >&2; fail "systemd-analyze verify warned"; }
step "systemd-analyze verify accepts both units, without a warning"

# The packaged module, from its path.
port=$(free_port)
start_root_redis "$port" --loadmodule /usr/lib/redis/modules/redis-idgen.so
[[ $(cli "$port" SNOWFLAKE.NEXT) =~ ^[1-9][0-9]+$ ]] || fail "the packaged module gave no ID"
cli "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
step "the packaged module loads from /usr/lib/redis/modules/redis-idgen.so"

# serve_as_unit: the installed ticket-server, started as ticket-server.service starts it: its
# user and group, its EnvironmentFile, its ExecStart (systemd's ${VAR} and $VAR are the
# shell's here), in the background.
listen_port=$(free_port)
sed -i "s/^LISTEN=.*/LISTEN=127.0.0.1:$listen_port/" "$root/etc/default/ticket-server"
serve_as_unit() {
  local unit=$root/usr/lib/systemd/system/ticket-server.service exec user group envfile
  exec=$(sed -n 's/^ExecStart=//p' "$unit")
  user=$(sed -n 's/^User=//p' "$unit")
  group=$(sed -n 's/^Group=//p' "$unit")
  envfile=$(sed -n 's/^EnvironmentFile=//p' "$unit")
  chroot "$root" setpriv --reuid="$user" --regid="$group" --clear-groups \
    sh -c "set -a; . $envfile; set +a; exec $exec" >>"$work/unit.log" 2>&1 &
  unit_pid=$!
  pids+=("$unit_pid")
  wait_port "$listen_port"
}
ticket=/usr/bin/ticket-server
serve_as_unit
mapfile -t before < <(tickets "$listen_port" 5)
[ "${before[*]}" = "1 2 3 4 5" ] || fail "the installed server gave '${before[*]}', not 1 to 5"
kill "$unit_pid"; wait "$unit_pid" 2>/dev/null || true
step "the installed ticket-server, started as its unit starts it: ${before[*]}"

store=$(cd "$root/var/lib/ticket-server" && find . -type f | sort | xargs sha256sum)
in_root dpkg -i --force-confold "${second[@]}" >"$work/dpkg-upgrade.log" 2>&1 ||
  { cat "$work/dpkg-upgrade.log" >&2; fail "the upgrade"; }
[ "$(in_root dpkg-query -W -f '${Version}' ticket-server)" = "$(basename "${upgrades[1]}" | cut -d_ -f2)" ] ||
  fail "the upgrade did not change the version"
[ "$(cd "$root/var/lib/ticket-server" && find . -type f | sort | xargs sha256sum)" = "$store" ] ||
  fail "the upgrade changed the store"
serve_as_unit
mapfile -t after < <(tickets "$listen_port" 3)
[ "${after[0]}" -gt 5 ] || fail "after the upgrade the server gave '${after[*]}': tickets again"
kill "$unit_pid"; wait "$unit_pid" 2>/dev/null || true
step "the upgrade keeps the store: the server goes on at ${after[*]}"

store=$(cd "$root/var/lib/ticket-server" && find . -type f | sort | xargs sha256sum)
in_root dpkg -r ticket-server redis-idgen >"$work/dpkg-remove.log" 2>&1 ||
  { cat "$work/dpkg-remove.log" >&2; fail "dpkg -r"; }
[ ! -e "$root/usr/bin/ticket-server" ] || fail "dpkg -r left the binary"
[ "$(cd "$root/var/lib/ticket-server" && find . -type f | sort | xargs sha256sum)" = "$store" ] ||
  fail "dpkg -r changed the store"
in_root dpkg -i "${second[@]}" >>"$work/dpkg-remove.log" 2>&1 || fail "the reinstall after dpkg -r"
[ "$(cd "$root/var/lib/ticket-server" && find . -type f | sort | xargs sha256sum)" = "$store" ] ||
  fail "the reinstall after dpkg -r made a new store"
in_root dpkg --purge ticket-server >>"$work/dpkg-remove.log" 2>&1 || fail "dpkg --purge"
[ "$(cd "$root/var/lib/ticket-server" && find . -type f | sort | xargs sha256sum)" = "$store" ] ||
  fail "dpkg --purge deleted the store"
step "dpkg -r, a reinstall and dpkg --purge keep the store"
echo "release-test: ok"
