#!/usr/bin/env bash
# The release's module and binaries (libredis_idgen.so, ticket-server, idgen-lease-worker)
# linked against glibc 2.17, so that they load on RHEL 8, Ubuntu 20.04, Debian 11, Amazon
# Linux 2 and newer, not only where they were built: cargo-zigbuild with zig as the C compiler
# and linker (the tests' venv's ziglang, as the wheel's maturin --zig uses). Built into
# target/x86_64-unknown-linux-gnu/release/, beside the host build in target/release/; prints
# that directory. scripts/check-glibc.sh checks what the artifacts need.
set -euo pipefail
cd "$(dirname "$0")/.."
ZIGBUILD_VERSION=0.24.1
scripts/venv.sh
tools=$(scripts/cargo-tool.sh cargo-zigbuild "$ZIGBUILD_VERSION")
# The venv's python3 first: cargo-zigbuild finds zig as `python3 -m ziglang`. Run from a
# directory outside the checkout: zig 0.13 names its C headers relative to the working
# directory when they lie under it (the venv is in target/), and redis-module's build script
# hands those names to bindgen, which runs in another directory and then finds no headers.
root=$PWD
away=$(mktemp -d)
trap 'rm -rf "$away"' EXIT
export CARGO_TARGET_DIR=$root/target/portable
(cd "$away" && PATH="$tools:$root/target/venv/bin:$PATH" cargo zigbuild --quiet --release \
  --manifest-path "$root/Cargo.toml" --target x86_64-unknown-linux-gnu.2.17 \
  -p redis-idgen -p ticket-server -p idgen-lease-worker) >&2
echo target/portable/x86_64-unknown-linux-gnu/release
