"""The package on a Redis that cannot load the module, under a user as a managed service gives
one (denied MODULE, CONFIG, DEBUG and SHUTDOWN): install_library puts idgen's Functions library
there, and LeasedSnowflake leases from it as it does from the module."""

import pytest
import redis

import idgen
from conftest import HORIZON_MS, RedisServer


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
    with idgen.LeasedSnowflake(url, "svc", ttl_ms=HORIZON_MS) as a, idgen.LeasedSnowflake(
        url, "svc", ttl_ms=HORIZON_MS, backend="library"
    ) as b:
        assert a.worker_id != b.worker_id
        assert sorted(w for w, *_ in library_coordinator.leases("svc")) == sorted(
            [a.worker_id, b.worker_id]
        )
        for ids in (a, b):
            while len(got) < (500_000 if ids is a else 1_000_000):
                try:
                    got += ids.next_many(50_000)
                except (idgen.LeaseLost, idgen.ClockBehind, idgen.AheadOfLease):
                    pass
    assert len(got) == 1_000_000 and len(set(got)) == len(got)
    assert library_coordinator.leases("svc") == [], "leaving the with block releases the leases"


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
