#!/usr/bin/env bash
# A Debian 11 root (glibc 2.31) for the release's own test (scripts/release-test.sh): the root
# the Python test uses (scripts/old-glibc-root.sh), copied, with systemd (systemd-analyze),
# adduser and a C compiler added, and a Redis 7 built there from Debian 12's source package
# (scripts/debian-server.sh). Made once and kept outside the checkout, under
# $(idgen_cache)/debian11-release-root (scripts/lib.sh); prints its path. Needs root.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")
root="$(idgen_cache)/debian11-release-root"
if [ -f "$root/.complete" ]; then
  echo "$root"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "release-root.sh: chroot needs root" >&2; exit 1; }
base=$("$here/old-glibc-root.sh")
echo "making the release test's Debian 11 root in $root (once; a few minutes)" >&2
rm -rf "$root.partial"
cp -a "$base" "$root.partial"
rm -f "$root.partial/.complete"
cp /etc/resolv.conf "$root.partial/etc/resolv.conf"
mount -t proc proc "$root.partial/proc"
trap 'umount "$root.partial/proc" 2>/dev/null || true' EXIT
chroot "$root.partial" apt-get update -qq >&2
chroot "$root.partial" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  systemd adduser gcc make libc6-dev >&2
chroot "$root.partial" apt-get clean
umount "$root.partial/proc"
trap - EXIT
"$here/debian-server.sh" redis bookworm "$root.partial" >/dev/null
touch "$root.partial/.complete"
rm -rf "$root"
mv "$root.partial" "$root"
echo "$root"
