#!/usr/bin/env bash
# debian-server.sh redis|valkey [SUITE [ROOT]]: the server of a Debian source package of that
# name (SUITE trixie by default: redis 8.0.x, valkey 8.1.x; bookworm: redis 7.0.x; bullseye:
# redis 6.0.x, which has scripts but no FUNCTION), built once
# from its upstream tarball and kept outside the checkout in
# $(idgen_cache)/servers/<package>-<version>/ (scripts/lib.sh); prints the server's path. With
# ROOT (a Debian root, scripts/release-root.sh), built inside it with its own compiler and
# glibc, into ROOT/opt/<package>-<version>/, and the path printed is the one inside the root.
# The tarball comes from this system's own Debian mirror, checked against the SHA-256 in
# Debian's signed source index. A second run finds the build and only prints its path.
# Needs `make` and a C compiler (in ROOT, when given; and root, for chroot).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
package=${1:?usage: debian-server.sh redis|valkey [SUITE [ROOT]]}
suite=${2:-trixie}
root=${3:-}
case "$package" in redis|valkey) ;; *) echo "debian-server.sh: redis or valkey, not $package" >&2; exit 2 ;; esac
case "$suite" in trixie|bookworm|bullseye) ;; *) echo "debian-server.sh: trixie, bookworm or bullseye, not $suite" >&2; exit 2 ;; esac
if [ -n "$root" ]; then
  cache="$root/opt"
  found=$(compgen -G "$cache/$package-*/bin/$package-server" | sort -V | tail -1 || true)
  [ -n "$found" ] && [ -z "${IDGEN_REBUILD:-}" ] && { echo "${found#"$root"}"; exit 0; }
else
  cache="$(idgen_cache)/servers"
  [ "$suite" = trixie ] || cache="$cache/$suite"
  found=$(compgen -G "$cache/$package-*/bin/$package-server" | sort -V | tail -1 || true)
  [ -n "$found" ] && [ -z "${IDGEN_REBUILD:-}" ] && { echo "$found"; exit 0; }
fi

# One build of a package and suite at a time (make test starts one, a test may ask for it too):
# the second waits, then finds the first's.
mkdir -p "$(dirname "$cache")"
exec 8>"$cache.$package-$suite.lock"
flock 8
found=$(compgen -G "$cache/$package-*/bin/$package-server" | sort -V | tail -1 || true)
[ -n "$found" ] && [ -z "${IDGEN_REBUILD:-}" ] && { echo "${found#"$root"}"; exit 0; }

mirror=$(debian_mirror)
[ -n "$mirror" ] || { echo "debian-server.sh: no Debian mirror in this system's apt sources" >&2; exit 1; }
# The suite's source index in an apt state of its own (the system's sources are left alone):
# fetched once; the redis and valkey builds start side by side, so one fetches, the other waits.
state="$(idgen_cache)/apt-src-$suite"
apt_options=(-o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o APT::Sandbox::User=root)
apt_lock
if [ ! -f "$state/.complete" ]; then
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$state/sources.list"
  apt-get "${apt_options[@]}" update -qq >&2
  touch "$state/.complete"
fi
# The source package's record: its directory in the pool, version and upstream tarball.
record=$(apt-cache "${apt_options[@]}" showsrc "$package" | awk -v RS= '/(^|\n)Package: '"$package"'\n/ {print; exit}')
apt_unlock
version=$(awk '/^Version:/ {print $2; exit}' <<<"$record")
directory=$(awk '/^Directory:/ {print $2; exit}' <<<"$record")
read -r sha256 _ tarball < <(awk '/^Checksums-Sha256:/ {on=1; next} /^[^ ]/ {on=0} on && $3 ~ /\.orig\.tar\./ {print $1, $2, $3; exit}' <<<"$record")
[ -n "$version" ] && [ -n "$tarball" ] || { echo "debian-server.sh: no source package $package in $suite" >&2; exit 1; }
upstream=${version#*:}
upstream=${upstream%%-*}
upstream=${upstream%%+*}
dest="$cache/$package-$upstream"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building $package $upstream (Debian $version) into $dest (once; a few minutes)" >&2
curl -fsS -o "$work/$tarball" "$mirror/$directory/$tarball"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet
if [ -n "$root" ]; then
  # Inside the root: its own gcc and glibc. Without TLS, which would need the root's
  # libssl-dev: the root's tests speak plain RESP.
  build="$root/usr/src/idgen-$package"
  rm -rf "$build"
  mkdir -p "$build"
  tar -xf "$work/$tarball" -C "$build"
  src=$(find "$build" -mindepth 1 -maxdepth 1 -type d | head -1)
  chroot "$root" make -C "${src#"$root"}" -j"$(nproc)" >"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log" >&2; exit 1; }
else
  tar -xf "$work/$tarball" -C "$work"
  src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
  # TLS as Debian builds it (the ticket and lease clients' rediss:// tests); the bundled
  # jemalloc, Lua and hiredis, so nothing but a C compiler and libssl-dev is needed.
  make -C "$src" -j"$(nproc)" BUILD_TLS=yes >"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log" >&2; exit 1; }
fi
rm -rf "$dest"
mkdir -p "$dest/bin"
cp "$src/src/$package-server" "$src/src/$package-cli" "$dest/bin/"
[ -z "$root" ] || rm -rf "$build"
echo "${dest#"$root"}/bin/$package-server"
