"""LeasedSnowflake against a real redis-server with the module: fencing, forks, threads."""

import os
import subprocess
import sys
import threading
import time

import pytest

import idgen
from conftest import ROOT

TTL_MS = 1_500  # the coordinator's horizon (conftest.HORIZON_MS)


def ms() -> int:
    return time.time_ns() // 1_000_000


def sample_values(text: str) -> dict:
    """The samples of a Prometheus text page, by name."""
    return {
        name: float(value)
        for name, value in (line.split() for line in text.splitlines() if line[:1] != "#")
    }


def drain(ids: idgen.LeasedSnowflake, until_raises: float) -> tuple:
    """IDs from next() until it raises (or `until_raises` s pass): (ids, exception, when)."""
    got = []
    deadline = time.monotonic() + until_raises
    while time.monotonic() < deadline:
        try:
            got.append(ids.next())
        except idgen.IdgenError as e:
            return got, e, ms()
        time.sleep(0.001)
    return got, None, ms()


def next_after_recovery(ids: idgen.LeasedSnowflake, within: float = 10.0) -> list:
    """IDs once a lease is back: next() retried until it works, then 1,000 more."""
    deadline = time.monotonic() + within
    while True:
        try:
            return [ids.next()] + [ids.next() for _ in range(999)]
        except (idgen.LeaseLost, idgen.ClockBehind, idgen.AheadOfLease):
            assert time.monotonic() < deadline, f"no new lease within {within} s"
            time.sleep(0.01)


def test_ids_increase_under_a_lease_and_carry_its_worker_id(coordinator):
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS) as ids:
        got = [ids.next() for _ in range(10_000)] + ids.next_many(1_000)
        assert got == sorted(got) and len(set(got)) == len(got)
        worker = ids.worker_id
        d = idgen.decode(got[-1])
        assert (d.datacenter << 5) | d.worker == worker
        assert ms() < ids.lease_until <= ms() + TTL_MS
        assert [w for w, *_ in coordinator.leases("svc")] == [worker]
        assert "worker_id=" in repr(ids)
        metrics = sample_values(ids.metrics())
        assert metrics["idgen_lease_live"] == 1
        assert metrics["idgen_lease_worker_id"] == worker
        assert metrics["idgen_lease_token"] == ids.token
    assert coordinator.leases("svc") == [], "leaving the with block releases the lease"
    with pytest.raises(idgen.LeaseLost, match="closed"):
        ids.next()


def test_bad_arguments_are_value_errors(coordinator):
    with pytest.raises(ValueError, match="ttl_ms=5"):
        idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=5)
    with pytest.raises(ValueError, match="sideways"):
        idgen.LeasedSnowflake(coordinator.url, "svc", after_fork="sideways")
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS) as ids:
        with pytest.raises(ValueError, match="at most"):
            ids.next_many(idgen.MAX_BATCH + 1)
    with pytest.raises(idgen.LeaseUnavailable, match="unreachable|refused"):
        idgen.LeasedSnowflake("redis://127.0.0.1:1/", "svc", ttl_ms=TTL_MS, start_within_ms=100)


def test_a_deleted_namespace_stops_next_before_the_lease_ends_and_nothing_repeats(coordinator):
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS) as ids:
        before = [ids.next() for _ in range(1_000)]
        coordinator.client().delete("svc")
        deleted = ms()
        got, error, when = drain(ids, TTL_MS / 1000 + 1)
        assert isinstance(error, idgen.LeaseLost), error
        assert when < deleted + TTL_MS, "next() raised only after the lease could have ended"
        after = next_after_recovery(ids)
        every = before + got + after
        assert len(set(every)) == len(every)


def test_a_killed_coordinator_stops_next_before_the_lease_ends_and_nothing_repeats(coordinator):
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS) as ids:
        before = [ids.next() for _ in range(1_000)]
        coordinator.kill()
        killed = ms()
        got, error, when = drain(ids, TTL_MS / 1000 + 1)
        assert isinstance(error, idgen.LeaseLost), error
        assert when < killed + TTL_MS
        metrics = sample_values(ids.metrics())
        assert metrics["idgen_lease_live"] == 0
        assert metrics["idgen_lease_failures_total"] >= 1, "the failed renewals are counted"
        coordinator.start()  # blank: no persistence, the namespace is gone
        after = next_after_recovery(ids)
        every = before + got + after
        assert len(set(every)) == len(every)
        assert max(before + got) < min(after), "the blank coordinator's new lease starts above"


def test_a_blocked_renewal_stops_next_before_the_lease_ends(coordinator):
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS) as ids:
        before = [ids.next() for _ in range(1_000)]
        coordinator.pause()  # SIGSTOP: renewals hang, then time out
        paused = ms()
        try:
            got, error, when = drain(ids, TTL_MS / 1000 + 1)
        finally:
            coordinator.resume()
        assert isinstance(error, idgen.LeaseLost), error
        assert when < paused + TTL_MS
        after = next_after_recovery(ids)
        every = before + got + after
        assert len(set(every)) == len(every)


WORKER = """
import sys, idgen
ids = idgen.LeasedSnowflake(sys.argv[1], "race", ttl_ms=1500)
print(ids.worker_id, flush=True)
print(*ids.next_many(5000), sep="\\n")
# Held until every process has its lease (stdin closed): one that exited first would release
# its worker ID to a later one.
sys.stdin.read()
# no close(): the lease is released at exit
"""


def test_processes_that_acquire_at_once_get_different_worker_ids(coordinator):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, coordinator.url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _ in range(4)
    ]
    firsts = [p.stdout.readline() for p in procs]
    for p in procs:
        p.stdin.close()
    outs = [(first + p.stdout.read()).split() for first, p in zip(firsts, procs)]
    for p in procs:
        p.wait(timeout=30)
    assert all(p.returncode == 0 for p in procs)
    workers = [int(out[0]) for out in outs]
    assert len(set(workers)) == 4, workers
    ids = [int(x) for out in outs for x in out[1:]]
    assert len(ids) == 20_000 and len(set(ids)) == 20_000
    assert coordinator.leases("race") == [], "each process released its lease at exit"


def in_child(work) -> list:
    """Runs `work()` in a forked child; returns what it returned, or the error's class name."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            out = [str(x) for x in work()]
        except Exception as e:  # noqa: BLE001 (reported to the parent)
            out = ["error", type(e).__name__, str(e)]
        os.write(write, "\n".join(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        out = f.read().split("\n")
    os.waitpid(pid, 0)
    return out


def test_a_forked_child_refuses_its_parent_s_lease(coordinator):
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS) as ids:
        ids.next()
        out = in_child(lambda: [ids.next()])
        assert out[:2] == ["error", "ForkedError"], out
        assert "after_fork" in out[2]
        ids.next()  # the parent goes on
        assert len(coordinator.leases("svc")) == 1, "the child's exit released nothing"


def test_a_forked_child_may_take_its_own_lease(coordinator):
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS, after_fork="renew") as ids:
        parent = [ids.next() for _ in range(2_000)]

        def child_work():
            got = [ids.next() for _ in range(2_000)] + ids.next_many(1_000)
            worker = ids.worker_id
            ids.close()
            try:
                ids.next()
                return ["error", "a closed generator took a new lease"]
            except idgen.LeaseLost:
                pass
            return [worker] + got

        out = in_child(child_work)
        assert out[0] != "error", out
        child_worker, child_ids = int(out[0]), [int(x) for x in out[1:]]
        parent += [ids.next() for _ in range(2_000)]
        assert child_worker != ids.worker_id
        assert not set(parent) & set(child_ids)
        assert [w for w, *_ in coordinator.leases("svc")] == [ids.worker_id]


def test_eight_threads_sharing_one_generator_repeat_nothing(coordinator):
    with idgen.LeasedSnowflake(coordinator.url, "svc", ttl_ms=TTL_MS, max_drift_ms=5_000) as ids:
        results = [[] for _ in range(8)]

        def work(out: list) -> None:
            for i in range(20_000):
                out.extend(ids.next_many(10) if i % 10 == 0 else [ids.next()])

        threads = [threading.Thread(target=work, args=(r,)) for r in results]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every = [x for r in results for x in r]
        assert len(every) == 8 * (18_000 + 2_000 * 10)
        assert len(set(every)) == len(every)
        assert all(r == sorted(r) for r in results), "each thread sees increasing IDs"


CLOCK_STEPPER = """
import sys, time, idgen
ids = idgen.LeasedSnowflake(sys.argv[1], "clock", ttl_ms=1500)
out, errors = [], 0
end = time.monotonic() + 3
while time.monotonic() < end:
    try:
        out.append(ids.next())
    except idgen.IdgenError:  # ClockBehind, AheadOfLease, LeaseLost: refused, retried
        errors += 1
        time.sleep(0.01)
    time.sleep(0.0002)
print(errors)
print(*out, sep="\\n")
"""


def test_clock_steps_back_and_forth_repeat_nothing(coordinator, tmp_dir):
    shim = tmp_dir / "clockshift.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-O2", "-o", shim, ROOT / "tests/clockshift/clockshift.c"],
        check=True,
    )
    offset = tmp_dir / "offset"
    offset.write_bytes((0).to_bytes(8, "little", signed=True))
    env = dict(os.environ, LD_PRELOAD=str(shim), CLOCKSHIFT_FILE=str(offset))
    proc = subprocess.Popen(
        [sys.executable, "-c", CLOCK_STEPPER, coordinator.url], stdout=subprocess.PIPE, env=env
    )
    with open(offset, "r+b") as f:
        for step_ms in (0, -2_000, 0, 5_000, 0):
            time.sleep(0.5)
            f.seek(0)
            f.write(step_ms.to_bytes(8, "little", signed=True))
            f.flush()
    out = proc.communicate(timeout=30)[0].split()
    assert proc.returncode == 0
    ids = [int(x) for x in out[1:]]
    assert len(ids) > 1_000
    assert len(set(ids)) == len(ids), "an ID repeated across a clock step"
    assert ids == sorted(ids), "IDs went backwards with the clock"
