#!/usr/bin/env bash
# deb.sh [REVISION]: the Debian packages of the portable build (scripts/portable-build.sh),
# made by cargo-deb from [package.metadata.deb] of redis-idgen and ticket-server, into
# target/debian/; prints their paths. REVISION (default 1) is the Debian revision: the release
# test builds a second one to upgrade to.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO_DEB_VERSION=3.8.0
revision=${1:-1}
scripts/portable-build.sh >/dev/null
tools=$(scripts/cargo-tool.sh cargo-deb "$CARGO_DEB_VERSION")
mkdir -p target/debian
for package in redis-idgen ticket-server; do
  CARGO_TARGET_DIR=$PWD/target/portable PATH="$tools:$PATH" cargo deb --no-build --quiet --target x86_64-unknown-linux-gnu \
    -p "$package" --deb-revision "$revision" --output target/debian/ >&2
done
version=$(cargo pkgid -p redis-idgen | sed 's/.*[#@]//')
for package in redis-idgen ticket-server; do
  ls "target/debian/${package}_$version-${revision}_amd64.deb"
done
