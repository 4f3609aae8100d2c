//! The library reads its node's role (`INFO replication`) at a process's first call and then
//! only before it could issue what a promotion it has not seen would repeat. Tried where that
//! matters: a primary demoted to the replica promoted in its place, cut off from it, and
//! promoted again, while the other primary's writes never reached it.

use std::collections::HashSet;

use idgen_tests::library::{install, plain_server, set_node, snowflakes};
use idgen_tests::{cmd, Server};

/// `a`, primary of `b`, demoted: `b` promoted, `a` its replica, then cut off from it (its
/// primary now a port where nothing listens). Returns once `a` no longer hears `b`.
fn demote_and_cut_off(a: &Server, b: &Server) {
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut b.connection())
        .unwrap();
    a.replicate(b);
    let _: () = cmd(&["REPLICAOF", "127.0.0.1", "1"])
        .query(&mut a.connection())
        .unwrap();
}

fn promote(a: &Server) {
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut a.connection())
        .unwrap();
}

/// A pair of servers, `b` a replica of `a` with the library (replicated from `a`).
fn pair() -> (Server, Server) {
    let a = plain_server();
    let b = plain_server();
    install(&mut a.connection());
    b.replicate(&a);
    (a, b)
}

/// Adds `values` to `issued`, each for the first time.
fn fresh_in(issued: &mut HashSet<u64>, values: Vec<u64>, who: &str) {
    for v in values {
        assert!(issued.insert(v), "{who}: {v} handed out twice");
    }
}

fn range(con: &mut dyn redis::ConnectionLike, key: &str, count: u64) -> Vec<u64> {
    let r: Vec<u64> = cmd(&[
        "FCALL",
        "dateseq_next",
        "1",
        key,
        "COUNT",
        &count.to_string(),
    ])
    .query(con)
    .unwrap();
    (r[0]..=r[1]).collect()
}

/// The other primary's 500 values of a sequence never reach `a`; `a` promoted again goes on
/// from where it stood, and reads its role again 1,000 values on (ROLE_CHUNK), before it could
/// reach the other's (which started a gap of 10,000 above). Without that reading it would go
/// on to repeat them.
#[test]
fn a_date_sequence_on_a_node_promoted_again_repeats_nothing() {
    let (a, b) = pair();
    let mut issued = HashSet::new();
    let mut fresh = |values: Vec<u64>, who: &str| fresh_in(&mut issued, values, who);
    let mut con = a.connection();
    for _ in 0..5 {
        fresh(range(&mut con, "seq", 100), "the first primary");
    }
    b.wait_caught_up(&a);
    demote_and_cut_off(&a, &b);
    fresh(
        range(&mut b.connection(), "seq", 500),
        "the promoted replica",
    );
    promote(&a);
    let mut con = a.connection();
    for _ in 0..120 {
        fresh(
            range(&mut con, "seq", 100),
            "the first primary promoted again",
        );
    }
}

/// The same for Snowflake IDs: the other primary's IDs (its fence the clock plus the drift
/// limit, 1 s, at its first call) never reach `a`; `a` promoted again reads its role before
/// its IDs reach the clock at its last reading plus the drift limit.
#[test]
fn snowflake_ids_on_a_node_promoted_again_repeat_nothing() {
    let (a, b) = pair();
    let mut con = a.connection();
    set_node(&mut con, "sf", 1, 7);
    let mut issued = HashSet::new();
    let mut fresh = |ids: Vec<u64>, who: &str| fresh_in(&mut issued, ids, who);
    fresh(snowflakes(&mut con, "sf", 1_000), "the first primary");
    b.wait_caught_up(&a);
    demote_and_cut_off(&a, &b);
    fresh(
        snowflakes(&mut b.connection(), "sf", 20_000),
        "the promoted replica",
    );
    promote(&a);
    let mut con = a.connection();
    // Past the other's fence: its IDs are at most 1 s ahead of its clock.
    let until = idgen_tests::now_ms() + 2_500;
    while idgen_tests::now_ms() < until {
        fresh(
            snowflakes(&mut con, "sf", 500),
            "the first primary promoted again",
        );
    }
}
