#!/usr/bin/env bash
# Checks that the workspace's rust-version is at least every dependency's (those built on
# Linux). Our own code is held to it by clippy's incompatible_msrv lint, which reads the field.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo metadata --format-version 1 --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" |
  python3 -c '
import json, sys
meta = json.load(sys.stdin)
built = {node["id"] for node in meta["resolve"]["nodes"]}
def version(v): return tuple(int(x) for x in (v.split(".") + ["0", "0"])[:3])
ours = next(p["rust_version"] for p in meta["packages"] if p["name"] == "idgen-core")
need = max((p for p in meta["packages"] if p["id"] in built and p.get("source") and p.get("rust_version")),
           key=lambda p: version(p["rust_version"]))
if version(need["rust_version"]) > version(ours):
    sys.exit(f"rust-version {ours} is below {need['"'"'name'"'"']} {need['"'"'version'"'"']}, which needs {need['"'"'rust_version'"'"']}")
print(f"rust-version {ours}: every dependency builds with it (the highest: {need['"'"'name'"'"']} needs {need['"'"'rust_version'"'"']})")
'
