#!/usr/bin/env bash
# Every publishable crate packaged as `cargo publish` would upload it (target/package/*.crate),
# and each built from its package alone (cargo package's verification: the workspace's other
# crates by their versions, as the registry would serve them). In a target directory of its
# own, so that it can run beside the tests. The test harness and the benches are not published.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/package-check}
# The verification builds each crate against the others' packages through a local registry,
# unpacked under $CARGO_HOME/registry/src, where cargo reuses an unpacked crate of the same
# name and version, and compiled in this target directory, where cargo takes a registry crate
# of the same version to be unchanged: a second run would build against the first run's
# sources (it did, once a crate gained a module). Ours go first, unpacked and compiled.
version=$(cargo pkgid -p idgen-core | sed 's/.*[#@]//')
for crate in idgen-core idgen-durable idgen-openmetrics idgen-functions idgen-client idgen-lease-worker ticket-client ticket-server redis-idgen idgen-python; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$crate-$version"
  rm -rf "$CARGO_TARGET_DIR"/debug/.fingerprint/"$crate"-* \
    "$CARGO_TARGET_DIR"/debug/deps/lib"${crate//-/_}"-* "$CARGO_TARGET_DIR"/debug/deps/"${crate//-/_}"-*
done
# --allow-dirty: what is checked is the packaging, not whether the work is committed.
cargo package --workspace --exclude idgen-tests --exclude idgen-benches --allow-dirty "$@"
ls "$CARGO_TARGET_DIR"/package/*.crate
