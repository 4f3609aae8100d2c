#!/usr/bin/env bash
# make dist: a release in target/dist/:
#   the module (libredis_idgen.so), the ticket-server and idgen-lease-worker binaries, linked
#   against glibc 2.17 (scripts/portable-build.sh, checked by scripts/check-glibc.sh), their
#   Debian packages (scripts/deb.sh), the Python wheel (manylinux2014) and sdist, every
#   publishable crate's package, the two images
#   (docker save, gzipped), and SHA256SUMS over them all. docs/operations.md says how to install
#   each. The sdist is built into a wheel once here, as a user's pip would, to show it builds.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(cargo pkgid -p redis-idgen | sed 's/.*[#@]//')
dist=target/dist
rm -rf "$dist"
mkdir -p "$dist"
arch=$(uname -m)

portable=$(scripts/portable-build.sh)
scripts/check-glibc.sh "$portable/libredis_idgen.so" "$portable/ticket-server" \
  "$portable/idgen-lease-worker" >&2
cp "$portable/libredis_idgen.so" "$dist/redis-idgen-$version-linux-$arch.so"
for bin in ticket-server idgen-lease-worker; do
  cp "$portable/$bin" "$dist/$bin-$version-linux-$arch"
done
for deb in $(scripts/deb.sh); do
  cp "$deb" "$dist/"
done

wheel=$(scripts/wheel.sh)
cp "$wheel" "$dist/"
target/venv/bin/maturin sdist -m python/Cargo.toml --out "$dist" >&2
sdist=$(ls "$dist"/idgen_redis-*.tar.gz)
# The sdist, built as pip would build it on a machine with only a Rust toolchain.
rm -rf target/sdist-check
PATH="$PWD/target/venv/bin:$PATH" pip wheel --quiet --no-deps --no-build-isolation \
  --wheel-dir target/sdist-check "$sdist"
ls target/sdist-check/idgen_redis-*.whl >/dev/null

scripts/package-crates.sh >/dev/null
cp target/package-check/package/*.crate "$dist/"

docker/build-images.sh --skip-build >/dev/null
for image in redis-idgen ticket-server; do
  docker save "idgen/$image:local" | gzip -1 >"$dist/$image-$version-image.tar.gz"
done

(cd "$dist" && sha256sum -- * >SHA256SUMS && sha256sum --quiet -c SHA256SUMS)
ls -l "$dist"
