#!/usr/bin/env bash
# cargo-tool.sh NAME VERSION: a cargo subcommand the release needs (cargo-zigbuild, cargo-deb),
# installed once at that pinned version with `cargo install --locked` into
# $(idgen_cache)/tools/NAME-VERSION (scripts/lib.sh), outside the checkout; prints its bin
# directory, for PATH.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
name=${1:?usage: cargo-tool.sh NAME VERSION}
version=${2:?usage: cargo-tool.sh NAME VERSION}
dir="$(idgen_cache)/tools/$name-$version"
if [ ! -x "$dir/bin/$name" ]; then
  echo "installing $name $version into $dir (once)" >&2
  # Locked to the tool's own Cargo.lock; installed under a lock, as make test may ask twice.
  exec 8>"${TMPDIR:-/tmp}/idgen-tool-$name.lock"
  flock 8
  [ -x "$dir/bin/$name" ] ||
    cargo install --quiet --locked "$name@$version" --root "$dir" >&2
fi
echo "$dir/bin"
