"""The wheel on an older Linux than this one: installed with pip into a Debian 11 root (glibc
2.31, CPython 3.9; scripts/old-glibc-root.sh), it makes leased IDs against the module here.

scripts/python-tests.sh gives the wheel (IDGEN_WHEEL) and the root (IDGEN_OLD_GLIBC_ROOT).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import idgen

from conftest import RedisServer

SCRIPT = """
import json, sys
import idgen
with idgen.LeasedSnowflake(sys.argv[1], "old-glibc", ttl_ms=1_500) as ids:
    print(json.dumps({"ids": ids.next_many(1000), "worker": ids.worker_id}))
"""


def in_root(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["chroot", str(root), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return done.stdout


def test_the_wheel_installs_and_leases_ids_on_glibc_2_31(coordinator: RedisServer) -> None:
    wheel = Path(os.environ["IDGEN_WHEEL"])
    root = Path(os.environ["IDGEN_OLD_GLIBC_ROOT"])
    glibc = in_root(root, "ldd", "--version").splitlines()[0]
    assert glibc.endswith(" 2.31"), glibc  # below this machine's, and below manylinux_2_34
    shutil.rmtree(root / "opt/idgen", ignore_errors=True)
    (root / "opt/idgen").mkdir(parents=True)
    shutil.copy(wheel, root / "opt/idgen" / wheel.name)
    # pip decides from the wheel's tags whether this glibc may run it.
    in_root(root, "python3", "-m", "pip", "install", "-q", "--no-index",
            "--target", "/opt/idgen/site", f"/opt/idgen/{wheel.name}")
    out = in_root(root, "env", "PYTHONPATH=/opt/idgen/site", "python3", "-c", SCRIPT,
                  coordinator.url)
    got = json.loads(out)
    ids = got["ids"]
    assert len(ids) == 1000 and ids == sorted(set(ids)), ids[:5]
    # Made under the worker ID it leased (the lease is released when the block ends).
    fields = {(idgen.decode(i).datacenter << 5) | idgen.decode(i).worker for i in ids}
    assert fields == {got["worker"]}, (fields, got["worker"])
