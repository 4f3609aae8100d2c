"""TicketClient over a real odd/even pair of ticket servers."""

import pytest

import idgen
from test_leased import in_child, sample_values


def test_tickets_come_from_both_servers_and_survive_one_killed(ticket_pair):
    odd, even = ticket_pair
    client = idgen.TicketClient(
        [odd.address, f"redis://{even.address}/"], "orders", block=500, max_block=5_000
    )
    first = client.next_many(20_000) + [client.next() for _ in range(5_000)]
    assert {t % 2 for t in first} == {0, 1}, "blocks from both servers"
    assert 500 <= client.block_size <= 5_000
    assert client.refills >= 2, "blocks come by TICKET.RANGE, several tickets each"
    # Blocks keep coming in the background: read the counters around the metrics, not after.
    refills, block = client.refills, client.block_size
    metrics = sample_values(client.metrics())
    assert metrics["idgen_prefetch_refills_total"] >= refills
    assert metrics["idgen_prefetch_block_size"] in (block, client.block_size)
    assert metrics["idgen_prefetch_refill_failures_total"] == 0
    odd.kill()
    after = client.next_many(20_000)
    assert all(t % 2 == 0 for t in after[-5_000:]), "only the even server is left"
    every = first + after
    assert len(set(every)) == len(every)


def test_a_forked_child_never_hands_out_its_parent_s_blocks(ticket_pair):
    servers = [s.address for s in ticket_pair]
    refusing = idgen.TicketClient(servers, "a", block=1_000)
    refusing.next()
    out = in_child(lambda: [refusing.next()])
    assert out[:2] == ["error", "ForkedError"], out

    renewing = idgen.TicketClient(servers, "b", block=1_000, after_fork="renew")
    parent = renewing.next_many(100)
    out = in_child(lambda: renewing.next_many(3_000))
    assert out[0] != "error", out
    parent += renewing.next_many(3_000)
    assert not set(parent) & {int(x) for x in out}


def test_no_servers_or_bad_blocks_are_refused():
    with pytest.raises(idgen.TicketsUnavailable, match="no ticket servers"):
        idgen.TicketClient([], "a")
    with pytest.raises(ValueError, match="block=0"):
        idgen.TicketClient(["127.0.0.1:1"], "a", block=0)
    dead = idgen.TicketClient(["127.0.0.1:1"], "a")
    with pytest.raises(idgen.TicketsUnavailable, match="127.0.0.1:1"):
        dead.next()
