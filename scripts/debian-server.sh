#!/usr/bin/env bash
# debian-server.sh redis|valkey: the server of Debian 13's source package of that name (redis
# 8.0.x, valkey 8.1.x), built once from its upstream tarball and kept outside the checkout in
# $(idgen_cache)/servers/<package>-<version>/ (scripts/lib.sh); prints the server's path. The
# tarball comes from this system's own Debian mirror, checked against the SHA-256 in Debian's
# signed source index. A second run finds the build and only prints its path.
# Needs root the first time (an apt source for trixie's source packages); `make` and a C compiler.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
package=${1:?usage: debian-server.sh redis|valkey}
case "$package" in redis|valkey) ;; *) echo "debian-server.sh: redis or valkey, not $package" >&2; exit 2 ;; esac
cache="$(idgen_cache)/servers"
found=$(compgen -G "$cache/$package-*/bin/$package-server" | sort -V | tail -1 || true)
if [ -n "$found" ] && [ -z "${IDGEN_REBUILD:-}" ]; then
  echo "$found"
  exit 0
fi

mirror=$(debian_mirror)
[ -n "$mirror" ] || { echo "debian-server.sh: no Debian mirror in this system's apt sources" >&2; exit 1; }
sources=/etc/apt/sources.list.d/idgen-trixie-src.sources
# The redis and valkey builds start side by side: one adds the source list, the other waits.
apt_lock
if [ ! -f "$sources" ]; then
  [ "$(id -u)" = 0 ] || { echo "debian-server.sh: as root once, to add $sources" >&2; exit 1; }
  printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" >"$sources"
  # Kept only once its index is in: a failed update is retried by the next run.
  apt-get update -qq >&2 || { rm -f "$sources"; exit 1; }
fi
# The source package's record: its directory in the pool, version and upstream tarball.
record=$(apt-cache showsrc "$package" | awk -v RS= '/(^|\n)Package: '"$package"'\n/ {print; exit}')
apt_unlock
version=$(awk '/^Version:/ {print $2; exit}' <<<"$record")
directory=$(awk '/^Directory:/ {print $2; exit}' <<<"$record")
read -r sha256 _ tarball < <(awk '/^Checksums-Sha256:/ {on=1; next} /^[^ ]/ {on=0} on && $3 ~ /\.orig\.tar\./ {print $1, $2, $3; exit}' <<<"$record")
[ -n "$version" ] && [ -n "$tarball" ] || { echo "debian-server.sh: no source package $package in trixie" >&2; exit 1; }
upstream=${version#*:}
upstream=${upstream%%-*}
upstream=${upstream%%+*}
dest="$cache/$package-$upstream"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building $package $upstream (Debian $version) into $dest (once; a few minutes)" >&2
curl -fsS -o "$work/$tarball" "$mirror/$directory/$tarball"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet
tar -xf "$work/$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
# TLS as Debian builds it (the ticket and lease clients' rediss:// tests); the bundled
# jemalloc, Lua and hiredis, so nothing but a C compiler and libssl-dev is needed.
make -C "$src" -j"$(nproc)" BUILD_TLS=yes >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest/bin"
cp "$src/src/$package-server" "$src/src/$package-cli" "$dest/bin/"
echo "$dest/bin/$package-server"
