#!/usr/bin/env bash
# Builds the images with no registry: a FROM-scratch base is made from this host's redis-server
# (copied dereferenced as redis-server: Debian's is a symlink and Redis picks its mode from
# argv[0]) and the libraries `ldd` lists for it, the module and ticket-server; the project's
# Dockerfiles then build on it through their BASE argument. Where a registry is reachable,
# `docker build` with the default BASE works as well.
#
# Usage: docker/build-images.sh [--skip-build]   (from anywhere)
#   Builds the release artifacts first, unless --skip-build (the container tests pass it: they
#   run inside `cargo test`, which holds cargo's build lock, after `make test` built them).
# Makes: idgen/redis-idgen:local, idgen/ticket-server:local
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ "${1:-}" != --skip-build ]; then
  cargo build --release -q -p redis-idgen -p ticket-server
fi
for artifact in target/release/libredis_idgen.so target/release/ticket-server; do
  [ -f "$artifact" ] || { echo "$artifact is missing: run make build" >&2; exit 1; }
done

# make_base TAG FILE...: a scratch image holding FILEs and every library they load.
make_base() {
  local tag=$1
  shift
  local ctx
  ctx=$(mktemp -d)
  mkdir -p "$ctx/rootfs/tmp" "$ctx/rootfs/data" "$ctx/rootfs/etc"
  echo "root:x:0:0:root:/:/bin/false" >"$ctx/rootfs/etc/passwd"
  local file lib
  for file in "$@"; do
    for lib in $(ldd "$file" | grep -o '/[^ ]*' | sort -u); do
      mkdir -p "$ctx/rootfs$(dirname "$lib")"
      cp -L "$lib" "$ctx/rootfs$lib"
    done
  done
  printf 'FROM scratch\nCOPY rootfs/ /\n' >"$ctx/Dockerfile"
  docker build -q -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
}

REDIS=$(readlink -f "$(command -v redis-server)")
make_base idgen/redis-base:local "$REDIS" target/release/libredis_idgen.so
# The base must hold redis-server itself, under that name.
ctx=$(mktemp -d)
cp -L "$REDIS" "$ctx/redis-server"
printf 'FROM idgen/redis-base:local\nCOPY redis-server /usr/local/bin/redis-server\nENV PATH=/usr/local/bin\n' >"$ctx/Dockerfile"
docker build -q -t idgen/redis-base:local "$ctx" >/dev/null
rm -rf "$ctx"
make_base idgen/ticket-base:local target/release/ticket-server

docker build -q --build-arg BASE=idgen/redis-base:local -f docker/redis.Dockerfile -t idgen/redis-idgen:local . >/dev/null
docker build -q --build-arg BASE=idgen/ticket-base:local -f docker/ticket-server.Dockerfile -t idgen/ticket-server:local . >/dev/null
echo "built idgen/redis-idgen:local and idgen/ticket-server:local"
