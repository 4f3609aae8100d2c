//! WORKERID.* on a real redis-server, against the module and against the Functions library
//! (`FCALL workerid_*` on a server without the module): grants, exhaustion, renewals, tokens,
//! expiry, recycling, bad input, replication as plain HSETs, AOF restarts and a promoted
//! replica.

use std::time::Duration;

use idgen_tests::backend::Backend;
use idgen_tests::{cmd, error_of, now_ms, Options, Server};

/// A horizon of a minute, so these tests may lease for one.
const HORIZON_MS: u64 = 60_000;

idgen_tests::both!(
    grants_distinct_ids_until_exhausted_and_recycles_above_the_last_record,
    a_release_with_until_lets_the_next_holder_start_at_once,
    an_expired_lease_returns_to_the_pool_and_cannot_be_renewed,
    bad_input_gets_an_error_and_changes_nothing,
    leases_survive_a_kill_9_restart_with_the_aof,
    replicas_get_plain_writes_refuse_the_commands_and_a_promoted_one_keeps_the_leases,
);

/// A coordinator with a 2 s horizon, once past the fence it starts lease grants above (its
/// start plus the horizon): its grants then start above what earlier holders recorded, nothing
/// more.
fn past_the_fence(b: Backend) -> Server {
    let server = b.start(2_000, Options::default());
    b.wait_past_lease_fence(&server, 2_000);
    server
}

/// `[worker_id, token, expires_at_ms, start_above_ms]`.
fn acquire(
    b: Backend,
    con: &mut dyn redis::ConnectionLike,
    ns: &str,
    ttl: u64,
    max: u32,
) -> [i64; 4] {
    let v: Vec<i64> = b
        .cmd(&[
            "WORKERID.ACQUIRE",
            ns,
            "TTL",
            &ttl.to_string(),
            "MAX",
            &max.to_string(),
        ])
        .query(con)
        .unwrap();
    v.try_into().unwrap()
}

fn grants_distinct_ids_until_exhausted_and_recycles_above_the_last_record(b: Backend) {
    let server = past_the_fence(b);
    let mut con = server.connection();
    let before = now_ms();
    let grants: Vec<[i64; 4]> = (0..4)
        .map(|_| acquire(b, &mut con, "fleet", 2_000, 4))
        .collect();
    let ids: Vec<i64> = grants.iter().map(|g| g[0]).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    // Tokens rise, from the clock (ms * 1000) up.
    let tokens: Vec<i64> = grants.iter().map(|g| g[1]).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    assert!(tokens[0] >= before * 1_000, "{tokens:?}");
    let err = error_of(
        &mut con,
        &b.cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "2000", "MAX", "4"]),
    );
    assert_eq!(err, "ERR all 4 worker IDs of this namespace are leased");

    // Worker 2's holder records how far it may issue, then releases: the ID is free at once and
    // its next holder starts above that record, under a new token.
    let until = now_ms() + 1_500;
    let token2 = tokens[2].to_string();
    let renewed: Vec<i64> = b
        .cmd(&[
            "WORKERID.RENEW",
            "fleet",
            "2",
            &token2,
            "TTL",
            "2000",
            "UNTIL",
            &until.to_string(),
        ])
        .query(&mut con)
        .unwrap();
    assert_eq!(renewed[1], until);
    let _: () = b
        .cmd(&["WORKERID.RELEASE", "fleet", "2", &token2])
        .query(&mut con)
        .unwrap();
    let again = acquire(b, &mut con, "fleet", 2_000, 4);
    assert_eq!((again[0], again[3]), (2, until));
    assert!(again[1] > tokens[3]);

    // The old token is fenced off.
    let err = error_of(
        &mut con,
        &b.cmd(&["WORKERID.RENEW", "fleet", "2", &token2, "TTL", "1000"]),
    );
    assert!(
        err.contains(&format!(
            "token {token2} is not the holder's of worker ID 2"
        )),
        "{err}"
    );
    let err = error_of(
        &mut con,
        &b.cmd(&["WORKERID.RELEASE", "fleet", "2", &token2]),
    );
    assert!(err.contains("not the holder's"), "{err}");

    let live: Vec<Vec<i64>> = b.cmd(&["WORKERID.LIST", "fleet"]).query(&mut con).unwrap();
    assert_eq!(live.iter().map(|l| l[0]).collect::<Vec<_>>(), [0, 1, 2, 3]);
}

fn a_release_with_until_lets_the_next_holder_start_at_once(b: Backend) {
    let server = past_the_fence(b);
    let mut con = server.connection();
    let a = acquire(b, &mut con, "one", 2_000, 1);
    let now = now_ms();
    let recorded = (now + 1_500).to_string();
    let _: Vec<i64> = b
        .cmd(&[
            "WORKERID.RENEW",
            "one",
            "0",
            &a[1].to_string(),
            "TTL",
            "2000",
            "UNTIL",
            &recorded,
        ])
        .query(&mut con)
        .unwrap();
    // The holder used times up to `now` only: the next holder starts above that, not above the
    // 1.5 s it had recorded; and never below where the first holder started.
    let _: () = b
        .cmd(&[
            "WORKERID.RELEASE",
            "one",
            "0",
            &a[1].to_string(),
            "UNTIL",
            &now.to_string(),
        ])
        .query(&mut con)
        .unwrap();
    let second = acquire(b, &mut con, "one", 2_000, 1);
    assert_eq!((second[0], second[3]), (0, now));
    let _: () = b
        .cmd(&[
            "WORKERID.RELEASE",
            "one",
            "0",
            &second[1].to_string(),
            "UNTIL",
            "5",
        ])
        .query(&mut con)
        .unwrap();
    assert_eq!(acquire(b, &mut con, "one", 2_000, 1)[3], now);
}

fn an_expired_lease_returns_to_the_pool_and_cannot_be_renewed(b: Backend) {
    let server = b.start(30_000, Options::default());
    let mut con = server.connection();
    let first = acquire(b, &mut con, "short", 200, 1);
    let token = first[1].to_string();
    assert_eq!(first[0], 0);
    let err = error_of(
        &mut con,
        &b.cmd(&["WORKERID.ACQUIRE", "short", "TTL", "200", "MAX", "1"]),
    );
    assert!(err.contains("leased"), "{err}");
    std::thread::sleep(Duration::from_millis(300));
    let err = error_of(
        &mut con,
        &b.cmd(&["WORKERID.RENEW", "short", "0", &token, "TTL", "200"]),
    );
    assert!(err.contains("has expired"), "{err}");
    let list: Vec<Vec<i64>> = b.cmd(&["WORKERID.LIST", "short"]).query(&mut con).unwrap();
    assert!(list.is_empty());
    let second = acquire(b, &mut con, "short", 200, 1);
    assert_eq!(second[0], 0);
    assert!(second[1] > first[1]);
}

fn bad_input_gets_an_error_and_changes_nothing(b: Backend) {
    let server = b.start(HORIZON_MS, Options::default());
    let mut con = server.connection();
    acquire(b, &mut con, "ns", 60_000, 8);
    let before: Vec<String> = cmd(&["HGETALL", "ns"]).query(&mut con).unwrap();
    let far = (now_ms() + 10_000_000).to_string();
    for (words, expect) in [
        (vec!["WORKERID.ACQUIRE", "ns"], "ERR wrong number"),
        (vec!["WORKERID.ACQUIRE", "ns", "TTL"], "ERR wrong number"),
        (vec!["WORKERID.ACQUIRE", "ns", "MAX", "8"], "ERR syntax"),
        (
            vec!["WORKERID.ACQUIRE", "ns", "TTL", "abc"],
            "ERR value is not an integer",
        ),
        (vec!["WORKERID.ACQUIRE", "ns", "TTL", "99"], "ERR TTL 99"),
        (
            vec!["WORKERID.ACQUIRE", "ns", "TTL", "1000", "MAX", "9"],
            "ERR MAX 9",
        ),
        (
            vec!["WORKERID.ACQUIRE", "other", "TTL", "1000", "MAX", "0"],
            "ERR MAX 0",
        ),
        (
            vec!["WORKERID.ACQUIRE", "other", "TTL", "1000", "MAX", "65537"],
            "ERR MAX 65537",
        ),
        (
            vec!["WORKERID.ACQUIRE", "ns", "TTL", "1000", "BOGUS", "1"],
            "ERR syntax",
        ),
        (vec!["WORKERID.RENEW", "ns", "0", "1"], "ERR wrong number"),
        (
            vec!["WORKERID.RENEW", "ns", "-1", "1", "TTL", "1000"],
            "ERR worker ID -1 is not in this namespace: it must be between 0 and 7",
        ),
        (
            vec!["WORKERID.RENEW", "ns", "8", "1", "TTL", "1000"],
            "ERR worker ID 8 is not",
        ),
        (
            vec![
                "WORKERID.RENEW",
                "ns",
                "0",
                "1",
                "TTL",
                "1000",
                "UNTIL",
                &far,
            ],
            "ERR UNTIL",
        ),
        (vec!["WORKERID.RELEASE", "ns", "0"], "ERR wrong number"),
        (
            vec!["WORKERID.RELEASE", "ns", "0", "x"],
            "ERR value is not an integer",
        ),
        (vec!["WORKERID.LIST"], "ERR wrong number"),
    ] {
        let err = error_of(&mut con, &b.cmd(&words));
        assert!(err.starts_with(expect), "{words:?}: {err}");
    }
    let after: Vec<String> = cmd(&["HGETALL", "ns"]).query(&mut con).unwrap();
    assert_eq!(before, after);

    let _: () = cmd(&["SET", "plain", "1"]).query(&mut con).unwrap();
    let err = error_of(
        &mut con,
        &b.cmd(&["WORKERID.ACQUIRE", "plain", "TTL", "1000"]),
    );
    assert!(err.starts_with("WRONGTYPE"), "{err}");
    let _: () = cmd(&["HSET", "junk", "7", "not a lease"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &b.cmd(&["WORKERID.LIST", "junk"]));
    assert!(err.contains("idgen did not write"), "{err}");
}

fn leases_survive_a_kill_9_restart_with_the_aof(b: Backend) {
    let dir = idgen_tests::data_dir("workerid-aof");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    }
    .server(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut server = b.start(HORIZON_MS, options.clone());
    let granted: Vec<[i64; 4]> = (0..3)
        .map(|_| acquire(b, &mut server.connection(), "fleet", 60_000, 16))
        .collect();
    server.kill9();
    // The library comes back with the data (FUNCTION LOAD is in the AOF).
    let server = match b {
        Backend::Module => b.start(HORIZON_MS, options),
        Backend::Library => Server::start_with(Options {
            no_module: true,
            ..options
        }),
    };
    let mut con = server.connection();
    let next = acquire(b, &mut con, "fleet", 60_000, 16);
    assert_eq!(next[0], 3, "after {granted:?}");
    assert!(
        next[1] > granted[2][1],
        "tokens carry on: {next:?} after {granted:?}"
    );
    let live: Vec<Vec<i64>> = b.cmd(&["WORKERID.LIST", "fleet"]).query(&mut con).unwrap();
    assert_eq!(live.len(), 4);
    drop(server);
}

fn replicas_get_plain_writes_refuse_the_commands_and_a_promoted_one_keeps_the_leases(b: Backend) {
    let mut primary = b.start(HORIZON_MS, Options::default());
    let replica = b.start(HORIZON_MS, Options::default());
    let mut r = replica.connection();
    replica.replicate(&primary);
    let mut p = primary.connection();
    let grants: Vec<[i64; 4]> = (0..3)
        .map(|_| acquire(b, &mut p, "fleet", 60_000, 8))
        .collect();
    let held: Vec<i64> = grants.iter().map(|g| g[0]).collect();
    let acked: i64 = cmd(&["WAIT", "1", "5000"]).query(&mut p).unwrap();
    assert_eq!(acked, 1);
    let on_primary: Vec<String> = cmd(&["HGETALL", "fleet"]).query(&mut p).unwrap();
    let on_replica: Vec<String> = cmd(&["HGETALL", "fleet"]).query(&mut r).unwrap();
    assert_eq!(
        on_primary, on_replica,
        "the same absolute values, not recomputed"
    );
    for words in [
        vec!["WORKERID.ACQUIRE", "fleet", "TTL", "1000"],
        vec!["WORKERID.LIST", "fleet"],
    ] {
        let err = error_of(&mut r, &b.cmd(&words));
        assert!(
            err.starts_with("READONLY") || err.contains("refused on a replica"),
            "{err}"
        );
    }

    // The primary dies after WAIT confirmed the grants: the promoted replica hands out none of
    // the IDs still held.
    primary.kill9();
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    let next = acquire(b, &mut r, "fleet", 60_000, 8);
    assert!(!held.contains(&next[0]), "{held:?} vs {}", next[0]);
    assert!(next[1] > grants[2][1], "tokens carry on");
    // The promoted replica's grants start above its promotion plus the horizon: a holder whose
    // last renewals it never received may issue up to a horizon past them.
    assert!(next[3] >= now_ms() + 55_000, "{next:?}");
}
