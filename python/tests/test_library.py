"""The package on a Redis that cannot load the module, under a user as a managed service gives
one (denied MODULE, CONFIG, DEBUG and SHUTDOWN): install_library puts idgen's Functions library
there, and LeasedSnowflake leases from it as it does from the module."""

import contextlib

import pytest
import redis

import idgen
from conftest import HORIZON_MS, RedisServer, redis6


@contextlib.contextmanager
def two_holders(url: str):
    """Two LeasedSnowflakes leasing from the library at `url`: one that finds it by itself, one
    told to use it; each a worker ID of its own."""
    with idgen.LeasedSnowflake(url, "svc", ttl_ms=HORIZON_MS) as a, idgen.LeasedSnowflake(
        url, "svc", ttl_ms=HORIZON_MS, backend="library"
    ) as b:
        assert a.worker_id != b.worker_id
        yield a, b


def take(ids, n: int, batch: int) -> list:
    """`n` IDs from a leased generator, `batch` at a time, retried while it waits for its lease
    or its clock."""
    got = []
    while len(got) < n:
        try:
            got += ids.next_many(batch)
        except (idgen.LeaseLost, idgen.ClockBehind, idgen.AheadOfLease):
            pass
    return got


def test_install_library_installs_reloads_and_refuses_a_downgrade(library_coordinator):
    url = library_coordinator.managed_url()
    address = f"127.0.0.1:{library_coordinator.port}"
    assert idgen.install_library(url, horizon_ms=HORIZON_MS) == [(address, "installed")]
    assert idgen.install_library(url, horizon_ms=HORIZON_MS) == [(address, "reloaded")]
    client = redis.Redis.from_url(url)
    assert client.fcall_ro("idgen_version", 0).decode() == idgen.library_version()
    newer = client.function_dump()
    source = (
        "#!lua name=idgen\nredis.register_function{function_name='idgen_version', "
        "callback=function() return '99.0.0' end, flags={'no-writes'}}"
    )
    client.function_load(source, replace=True)
    with pytest.raises(idgen.LibraryRefused, match="99.0.0, newer than this one"):
        idgen.install_library(url)
    client.function_restore(newer, "REPLACE")
    with pytest.raises(ValueError, match="horizon_ms 50 must be between"):
        idgen.install_library(url, horizon_ms=50)
    with pytest.raises(idgen.LibraryRefused):
        idgen.install_library(f"redis://app:wrong@127.0.0.1:{library_coordinator.port}/")


def test_a_million_ids_under_library_leases_repeat_nothing(library_coordinator):
    url = library_coordinator.managed_url()
    idgen.install_library(url, horizon_ms=HORIZON_MS)
    library_coordinator.wait_past_library_fence()
    got = []
    with two_holders(url) as (a, b):
        assert sorted(w for w, *_ in library_coordinator.leases("svc")) == sorted(
            [a.worker_id, b.worker_id]
        )
        for ids in (a, b):
            got += take(ids, 500_000, 50_000)
    assert len(got) == 1_000_000 and len(set(got)) == len(got)
    assert library_coordinator.leases("svc") == [], "leaving the with block releases the leases"


def test_on_redis_6_the_library_is_installed_and_leased_as_scripts(tmp_dir):
    """No FUNCTION on Redis 6: install_library puts the scripts there and says so, and
    LeasedSnowflake finds them by itself (EVALSHA)."""
    server = RedisServer(tmp_dir, module=False, program=redis6())
    try:
        url = server.url
        [(address, what)] = idgen.install_library(url, horizon_ms=HORIZON_MS)
        assert address == f"127.0.0.1:{server.port}"
        assert what.startswith("installed as 8 scripts (EVALSHA"), what
        assert server.client().exists("idgen:library")
        server.wait_past_library_fence()
        got = []
        with two_holders(url) as (a, b):
            for ids in (a, b):
                got += take(ids, 100_000, 10_000)
        assert len(got) == 200_000 and len(set(got)) == len(got)
    finally:
        server.kill()


def test_the_module_is_refused_where_there_is_none_and_a_missing_library_is_named(
    library_coordinator,
):
    url = library_coordinator.managed_url()
    with pytest.raises(idgen.LeaseUnavailable, match="neither the idgen module nor a library"):
        idgen.LeasedSnowflake(url, "svc", ttl_ms=HORIZON_MS, start_within_ms=200)
    with pytest.raises(idgen.LeaseUnavailable, match="no idgen library"):
        idgen.LeasedSnowflake(url, "svc", ttl_ms=HORIZON_MS, backend="library")
    with pytest.raises(idgen.LeaseUnavailable):
        idgen.LeasedSnowflake(url, "svc", ttl_ms=HORIZON_MS, backend="module",
                              start_within_ms=200)
    with pytest.raises(ValueError, match="backend 'lua' must be auto, module or library"):
        idgen.LeasedSnowflake(url, "svc", backend="lua")


def test_tickets_come_as_segments_from_two_plain_redis_servers(tmp_dir):
    for name in ("a", "b"):
        (tmp_dir / name).mkdir()
    servers = [RedisServer(tmp_dir / name, module=False) for name in ("a", "b")]
    try:
        urls = [s.managed_url() for s in servers]
        tickets = idgen.TicketClient(urls, "orders", block=1_000, plain_redis=True)
        got = tickets.next_many(20_000)
        again = idgen.TicketClient(urls, "orders", block=1_000, plain_redis=True).next_many(5_000)
        assert len(set(got + again)) == 25_000
        assert {t % 2 for t in got} == {0, 1}, "odd from the first server, even from the second"
        with pytest.raises(idgen.TicketsUnavailable, match="changed order or size"):
            idgen.TicketClient(urls[::-1], "orders", plain_redis=True).next()
    finally:
        for s in servers:
            s.kill()
