"""The Python section of the comparison: calls per second in one process, side by side.

Usage: python benches/python_speed.py REDIS_URL TTL_MS
(a redis-server with the idgen module; TTL_MS at most its idgen.workerid-horizon-ms)

Prints a Markdown table. LeasedSnowflake runs with a drift allowance large enough that the
layout's cap (4,096 IDs per ms for one worker ID) does not bind over a measurement, so the
figures are the binding's own cost; the cap is reported as the cap.
"""

import sys
import time
import uuid

import idgen

CAP = 4_096_000


def rate(call, n: int, per_call: int = 1, rounds: int = 3) -> float:
    """The best of `rounds` of `n` calls, in items per second."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(n):
            call()
        best = min(best, time.perf_counter_ns() - start)
    return n * per_call / (best / 1e9)


def main() -> None:
    url, ttl_ms = sys.argv[1], int(sys.argv[2])
    rows = []
    with idgen.LeasedSnowflake(url, "bench-python", ttl_ms=ttl_ms, max_drift_ms=15_000) as ids:
        rows.append(("idgen LeasedSnowflake.next()", rate(ids.next, 300_000), "int"))
        many = rate(lambda: ids.next_many(1_000), 1_000, per_call=1_000)
        rows.append(("idgen LeasedSnowflake.next_many(1000), per ID", many, "list of int"))
    rows.append(("idgen.uuid7()", rate(idgen.uuid7, 200_000), "uuid.UUID"))
    rows.append(("idgen.ulid()", rate(idgen.ulid, 200_000), "str"))
    try:
        import uuid_utils
        import uuid_utils.compat

        rows.append(("uuid_utils.uuid7()", rate(uuid_utils.uuid7, 200_000), "its own UUID"))
        compat = rate(uuid_utils.compat.uuid7, 200_000)
        rows.append(("uuid_utils.compat.uuid7()", compat, "uuid.UUID"))
    except ImportError:
        rows.append(("uuid_utils.uuid7()", None, "not installed"))
    rows.append(("uuid.uuid4()", rate(uuid.uuid4, 200_000), "uuid.UUID"))
    if hasattr(uuid, "uuid7"):
        rows.append(("uuid.uuid7()", rate(uuid.uuid7, 200_000), "uuid.UUID"))
    else:
        rows.append(("uuid.uuid7()", None, f"not in CPython {sys.version.split()[0]}"))
    try:
        from snowflake import SnowflakeGenerator

        generator = SnowflakeGenerator(1)
        rows.append(("snowflake-id SnowflakeGenerator", rate(lambda: next(generator), 100_000), "int"))
    except ImportError:
        rows.append(("snowflake-id SnowflakeGenerator", None, "not installed"))
    try:
        from ulid import ULID

        rows.append(("python-ulid ULID()", rate(ULID, 100_000), "ULID object"))
        rows.append(("python-ulid str(ULID())", rate(lambda: str(ULID()), 100_000), "str"))
    except ImportError:
        rows.append(("python-ulid ULID()", None, "not installed"))

    print(f"CPython {sys.version.split()[0]}, one process, one thread; the best of 3 rounds.\n")
    print("| call | calls/s | ns per call | returns |")
    print("|---|---:|---:|---|")
    for name, r, note in rows:
        if r is None:
            print(f"| {name} | - | - | {note} |")
        else:
            print(f"| {name} | {r:,.0f} | {1e9 / r:,.0f} | {note} |")
    print(
        f"\nThe cap: one leased worker ID issues at most {CAP:,} IDs/s (4,096 per ms); the rates "
        "above ran ahead of the clock within max_drift_ms, which a sustained load cannot."
    )
    by = {name: r for name, r, _ in rows}
    nxt, uu, sf = (
        by["idgen LeasedSnowflake.next()"],
        by.get("uuid_utils.uuid7()"),
        by.get("snowflake-id SnowflakeGenerator"),
    )
    goals = []
    if uu:
        goals.append(f"next() {'is' if nxt >= uu else 'is NOT'} at least as fast as uuid_utils.uuid7() ({nxt / uu:.2f}×)")
    if sf:
        goals.append(f"next() runs {nxt / sf:.1f}× snowflake-id (goal: 10×)")
    goals.append(f"next_many(1000) gives {many / 1e6:.1f} M IDs/s (goal: 20 M)")
    # Against the nearest peer that returns the same type.
    for ours, peer in [
        ("idgen.uuid7()", "uuid_utils.compat.uuid7()"),
        ("idgen.ulid()", "python-ulid str(ULID())"),
    ]:
        if by.get(peer):
            verdict = "is" if by[ours] >= by[peer] else "is NOT"
            goals.append(f"{ours} {verdict} at least as fast as {peer} ({by[ours] / by[peer]:.2f}×)")
    print("\nGoals: " + "; ".join(goals) + ".")


if __name__ == "__main__":
    main()
