#!/usr/bin/env bash
# Builds the images with no registry, always: FROM-scratch bases are made from this host's
# redis-server and redis-cli and the libraries `ldd` lists for them, the module and
# ticket-server; the project's Dockerfiles then build on them through their BASE argument.
# (Where a registry is reachable, `docker build` of those Dockerfiles with their default BASE,
# the official redis:7 and debian:12-slim, works too; this script does not try it.)
#
# Usage: docker/build-images.sh [--skip-build]   (from anywhere)
#   Builds the release artifacts first, unless --skip-build (the container tests pass it: they
#   run inside `cargo test`, which holds cargo's build lock, after `make test` built them).
# Makes: idgen/redis-idgen:local, idgen/ticket-server:local
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ "${1:-}" != --skip-build ]; then
  # make build's package set: another set unifies features differently and rebuilds.
  cargo build --release -q -p redis-idgen -p ticket-server -p idgen-lease-worker
fi
for artifact in target/release/libredis_idgen.so target/release/ticket-server; do
  [ -f "$artifact" ] || { echo "$artifact is missing: run make build" >&2; exit 1; }
done

# make_base TAG [NAME=PROGRAM | FILE]...: a scratch image holding each PROGRAM as
# /usr/local/bin/NAME, and every library the PROGRAMs and FILEs load (the FILEs themselves are
# the Dockerfiles' to copy).
make_base() {
  local tag=$1
  shift
  local ctx
  ctx=$(mktemp -d)
  mkdir -p "$ctx/rootfs/tmp" "$ctx/rootfs/data" "$ctx/rootfs/etc" "$ctx/rootfs/usr/local/bin"
  echo "root:x:0:0:root:/:/bin/false" >"$ctx/rootfs/etc/passwd"
  local arg file lib
  for arg in "$@"; do
    file=${arg#*=}
    if [ "$file" != "$arg" ]; then
      cp -L "$file" "$ctx/rootfs/usr/local/bin/${arg%%=*}"
    fi
    for lib in $(ldd "$file" | grep -o '/[^ ]*' | sort -u); do
      mkdir -p "$ctx/rootfs$(dirname "$lib")"
      cp -L "$lib" "$ctx/rootfs$lib"
    done
  done
  printf 'FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin\n' >"$ctx/Dockerfile"
  docker build -q -t "$tag" "$ctx" >/dev/null
  rm -rf "$ctx"
}

# redis-server is copied dereferenced under its own name: Debian's is a symlink to
# redis-check-rdb, and Redis picks its mode from argv[0]. redis-cli comes along so that
# `docker compose exec redis redis-cli` works, and the ticket image has it too (for
# `redis-cli -p 7001 TICKET.NEXT` inside the container).
CLI=$(command -v redis-cli)
make_base idgen/redis-base:local redis-server="$(command -v redis-server)" redis-cli="$CLI" \
  target/release/libredis_idgen.so
make_base idgen/ticket-base:local redis-cli="$CLI" target/release/ticket-server

docker build -q --build-arg BASE=idgen/redis-base:local -f docker/redis.Dockerfile -t idgen/redis-idgen:local . >/dev/null
docker build -q --build-arg BASE=idgen/ticket-base:local -f docker/ticket-server.Dockerfile -t idgen/ticket-server:local . >/dev/null
echo "built idgen/redis-idgen:local and idgen/ticket-server:local"
