#!/usr/bin/env bash
# A Debian 11 root (glibc 2.31, CPython 3.9: what RHEL 8/9, Ubuntu 20.04/22.04 and Debian 11
# servers are no newer than) for the test that installs the wheel on an older glibc. Made once
# with debootstrap from this system's own Debian mirror and kept outside the checkout, under
# $(idgen_cache)/debian11-root (scripts/lib.sh); prints its path. Needs root (debootstrap,
# chroot); installs debootstrap with apt-get when it is missing.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
root="$(idgen_cache)/debian11-root"
# The Python test and the release test may both ask at once: one makes it, the other waits.
mkdir -p "$(dirname "$root")"
exec 7>"$root.lock"
flock 7
if [ -f "$root/.complete" ]; then
  echo "$root"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "old-glibc-root.sh: debootstrap and chroot need root" >&2; exit 1; }
command -v debootstrap >/dev/null || {
  apt_lock
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  apt_unlock
}
mirror=$(debian_mirror)
[ -n "$mirror" ] || { echo "old-glibc-root.sh: no Debian mirror in this system's apt sources" >&2; exit 1; }
echo "making a Debian 11 root in $root (once; a few minutes)" >&2
rm -rf "$root.partial"
mkdir -p "$(dirname "$root")"
debootstrap --variant=minbase --include=python3,python3-pip bullseye "$root.partial" "$mirror" >&2 ||
  { tail -20 "$root.partial/debootstrap/debootstrap.log" >&2 2>/dev/null; exit 1; }
touch "$root.partial/.complete"
rm -rf "$root"
mv "$root.partial" "$root"
echo "$root"
