"""The codecs give the module's own answers, and refuse bad input with ValueError."""

import datetime
import os
import uuid

import pytest
import sqids

import idgen


def test_decode_gives_the_module_s_fields(coordinator):
    r = coordinator.client()
    for _ in range(100):
        id_ = r.execute_command("SNOWFLAKE.NEXT")
        fields = dict(zip(*[iter(r.execute_command("SNOWFLAKE.DECODE", id_))] * 2))
        d = idgen.decode(id_)
        assert d.unix_ms == fields[b"time_ms"]
        assert (d.datacenter, d.worker, d.sequence) == (
            fields[b"datacenter"], fields[b"worker"], fields[b"sequence"]
        )


def test_from_time_matches_fromtime_and_decodes_back(coordinator):
    r = coordinator.client()
    for t in [1_795_000_000_123, "2026-11-01", "2026-11-01T12:30:00.250+02:00"]:
        for end, word in (("min", None), ("max", "MAX")):
            args = ["SNOWFLAKE.FROMTIME", t] + ([word] if word else [])
            assert idgen.from_time(t, end=end) == r.execute_command(*args)
    t = 1_795_000_000_123
    assert idgen.decode(idgen.from_time(t)).unix_ms == t
    assert idgen.decode(idgen.from_time(t, end="max")).unix_ms == t
    aware = datetime.datetime(2026, 11, 1, 12, tzinfo=datetime.timezone.utc)
    assert idgen.from_time(aware) == idgen.from_time("2026-11-01T12:00:00Z")
    naive = datetime.datetime(2026, 11, 1, 12)
    assert idgen.from_time(naive) == idgen.from_time(aware), "naive datetimes are UTC"


def test_layouts_and_epochs_follow_the_module_s_profiles():
    t = 1_795_000_000_000
    sony = idgen.from_time(t, layout="sonyflake")
    assert idgen.decode(sony, layout="sonyflake").unix_ms == t  # 10 ms ticks, t on one
    assert idgen.from_time(t, epoch_ms=1_700_000_000_000) == (t - 1_700_000_000_000) << 22


def test_bad_input_is_a_value_error_that_quotes_it():
    with pytest.raises(OverflowError):
        idgen.decode(-1)
    with pytest.raises(ValueError, match="9223372036854775808"):
        idgen.decode(2**63)
    with pytest.raises(ValueError, match="nope"):
        idgen.from_time("nope")
    with pytest.raises(ValueError, match="outside what these IDs hold"):
        idgen.from_time(0)
    with pytest.raises(ValueError, match="twister"):
        idgen.decode(1, layout="twister")
    with pytest.raises(ValueError, match="middle"):
        idgen.from_time(1, end="middle")
    with pytest.raises(TypeError, match="float"):
        idgen.from_time(1.5)


def test_uuid7_and_ulid_increase_and_carry_the_time():
    before = datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000
    uuids = [idgen.uuid7() for _ in range(10_000)]
    assert all(isinstance(u, uuid.UUID) and u.version == 7 for u in uuids)
    assert uuids == sorted(uuids) and len(set(uuids)) == len(uuids)
    assert abs((uuids[0].int >> 80) - before) < 5_000
    ulids = [idgen.ulid() for _ in range(10_000)]
    assert all(len(u) == 26 for u in ulids)
    assert ulids == sorted(ulids) and len(set(ulids)) == len(ulids)


def test_uuid7_is_the_uuid_that_uuid_int_makes():
    # uuid7() builds its uuid.UUID without UUID.__init__: the object must be the same in
    # every way a caller can tell.
    import pickle

    u = idgen.uuid7()
    same = uuid.UUID(int=u.int)
    assert type(u) is uuid.UUID and u == same and hash(u) == hash(same)
    assert str(u) == str(same) and repr(u) == repr(same) and u.is_safe == same.is_safe
    assert pickle.loads(pickle.dumps(u)) == u and u.bytes == same.bytes
    with pytest.raises(TypeError, match="immutable"):
        u.int = 5


def test_a_forked_child_draws_other_random_bits_than_its_parent():
    idgen.uuid7()  # the parent's generator exists before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        lows = [idgen.uuid7().int & ((1 << 62) - 1) for _ in range(200)]
        os.write(write, "\n".join(map(str, lows)).encode())
        os._exit(0)
    os.close(write)
    mine = {idgen.uuid7().int & ((1 << 62) - 1) for _ in range(200)}
    with os.fdopen(read) as f:
        theirs = {int(line) for line in f.read().split()}
    os.waitpid(pid, 0)
    assert len(theirs) == 200
    assert not mine & theirs, "the child repeated its parent's random bits"


def test_sqids_round_trip_and_agree_with_the_reference_decoder():
    codec = idgen.Sqids(min_length=10)
    reference = sqids.Sqids(min_length=10)
    for n in [0, 1, 42, 2**53, 2**63 - 1]:
        text = codec.encode([n])
        assert len(text) >= 10
        assert codec.decode(text) == [n] == reference.decode(text)
    with pytest.raises(ValueError):
        idgen.Sqids(alphabet="aab")


def raw_info(r) -> str:
    """INFO idgen as the server wrote it (redis-py would turn digit-only values into ints)."""
    conn = r.connection_pool.get_connection("INFO")
    try:
        conn.send_command("INFO", "idgen")
        return conn.read_response().decode()
    finally:
        r.connection_pool.release(conn)


def test_sealed_ids_round_trip_and_match_the_module(tmp_dir):
    key = "11" * 32
    (tmp_dir / "seal.key").write_text(key + "\n")
    from conftest import RedisServer  # noqa: E402 (a server with the key loaded)

    server = RedisServer(tmp_dir)
    try:
        r = server.client()
        r.execute_command("CONFIG", "SET", "idgen.seal-key-file", str(tmp_dir / "seal.key"))
        sealer = idgen.Sealer(key)
        assert sealer.key_id == idgen.Sealer(bytes.fromhex(key)).key_id
        assert f"idgen_seal_key_id:{sealer.key_id}" in raw_info(r)
        for id_ in [0, 1, 12345, 2**62, 2**63 - 1]:
            sealed = sealer.seal(id_)
            assert sealed == r.execute_command("IDGEN.SEAL", id_)
            assert sealer.unseal(sealed) == id_
        v7 = idgen.uuid7()
        facade = sealer.seal_uuid7(v7)
        assert facade.version == 4 and sealer.unseal_uuid7(facade) == v7
    finally:
        server.kill()
    with pytest.raises(ValueError, match="64 hex"):
        idgen.Sealer("abc")
    with pytest.raises(ValueError):
        sealer.seal(2**63)
