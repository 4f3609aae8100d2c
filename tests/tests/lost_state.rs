//! State that vanishes or goes back under the module: a lease namespace deleted, flushed,
//! expired, evicted or restored from an older copy, a coordinator restarted from an old RDB,
//! and the eviction policies that would reset DATESEQ counters or namespaces. Each case once
//! let two live processes share a worker ID, or reissued date-sequence values.

use std::time::Duration;

use idgen_tests::lease::renew;
use idgen_tests::{cmd, error_of, now_ms, wait_for, Options, Server};

/// The horizon of these tests: leases of at most 2 s, grants 2 s above a loss.
const HORIZON_MS: i64 = 2_000;

fn coordinator(options: Options) -> Server {
    let server = Server::start_with(Options {
        module_args: vec!["workerid-horizon-ms".into(), HORIZON_MS.to_string()],
        ..options
    });
    server.wait_past_lease_fence();
    server
}

/// `[worker_id, token, expires_at_ms, start_above_ms]`.
fn acquire(con: &mut dyn redis::ConnectionLike, ns: &str) -> [i64; 4] {
    let v: Vec<i64> = cmd(&["WORKERID.ACQUIRE", ns, "TTL", "2000", "MAX", "3"])
        .query(con)
        .unwrap();
    v.try_into().unwrap()
}

/// Evicts every key: a tiny maxmemory under allkeys-random, one write to trigger it.
fn evict_everything(con: &mut dyn redis::ConnectionLike) {
    for (name, value) in [
        ("idgen.accept-eviction", "yes"),
        ("maxmemory-policy", "allkeys-random"),
        ("maxmemory", "1"),
    ] {
        let _: () = cmd(&["CONFIG", "SET", name, value]).query(con).unwrap();
    }
    let _: redis::RedisResult<()> = cmd(&["SET", "trigger", "x"]).query(con);
    for (name, value) in [
        ("maxmemory", "0"),
        ("maxmemory-policy", "noeviction"),
        ("idgen.accept-eviction", "no"),
    ] {
        let _: () = cmd(&["CONFIG", "SET", name, value]).query(con).unwrap();
    }
}

/// A way to lose the namespace `fleet`, given an older copy of it (a `DUMP`).
type Lose = fn(&mut dyn redis::ConnectionLike, &[u8]);

#[test]
fn every_loss_of_a_namespace_voids_its_leases_and_grants_above_the_horizon() {
    let server = coordinator(Options::default());
    let mut con = server.connection();
    let losses: &[(&str, Lose)] = &[
        ("DEL", |con, _| {
            let _: () = cmd(&["DEL", "fleet"]).query(con).unwrap();
        }),
        ("FLUSHALL", |con, _| {
            let _: () = cmd(&["FLUSHALL"]).query(con).unwrap();
        }),
        ("an expiry set by hand", |con, _| {
            let _: () = cmd(&["PEXPIRE", "fleet", "1"]).query(con).unwrap();
            assert!(wait_for(Duration::from_secs(2), || {
                cmd(&["EXISTS", "fleet"]).query::<i64>(con).unwrap() == 0
            }));
        }),
        ("eviction", |con, _| evict_everything(con)),
        ("RESTORE of an older copy", |con, dump| {
            let _: () = redis::cmd("RESTORE")
                .arg("fleet")
                .arg(0)
                .arg(dump)
                .arg("REPLACE")
                .query(con)
                .unwrap();
        }),
    ];
    for (loss, lose) in losses {
        let _: () = cmd(&["DEL", "fleet"]).query(&mut con).unwrap();
        let older = acquire(&mut con, "fleet");
        let dump: Vec<u8> = cmd(&["DUMP", "fleet"]).query(&mut con).unwrap();
        let held = acquire(&mut con, "fleet");
        renew(&mut con, "fleet", &held).unwrap();
        let lost_at = now_ms();
        lose(&mut con, &dump);

        // The live holders' next RENEW fails: they stop issuing.
        for grant in [&older, &held] {
            let err = renew(&mut con, "fleet", grant).unwrap_err();
            assert!(
                idgen_tests::error_text(&err).contains("is void"),
                "{loss}: {err:?}"
            );
        }
        // New grants take new tokens and start above what the old holders may still issue.
        for _ in 0..2 {
            let grant = acquire(&mut con, "fleet");
            assert!(grant[1] > held[1], "{loss}: token {} repeats", grant[1]);
            assert!(
                grant[3] >= lost_at + HORIZON_MS,
                "{loss}: a grant starts above {}, below the old holders' horizon {}",
                grant[3],
                lost_at + HORIZON_MS
            );
        }
        let ttl: i64 = cmd(&["PTTL", "fleet"]).query(&mut con).unwrap();
        assert_eq!(ttl, -1, "{loss}: the namespace keeps no expiry");
    }
}

#[test]
fn lease_commands_drop_an_expiry_put_on_the_namespace() {
    let server = coordinator(Options::default());
    let mut con = server.connection();
    let grant = acquire(&mut con, "fleet");
    let _: () = cmd(&["PEXPIRE", "fleet", "60000"]).query(&mut con).unwrap();
    acquire(&mut con, "fleet");
    let ttl: i64 = cmd(&["PTTL", "fleet"]).query(&mut con).unwrap();
    assert_eq!(ttl, -1, "ACQUIRE keeps no expiry");
    let _: () = cmd(&["PEXPIRE", "fleet", "60000"]).query(&mut con).unwrap();
    renew(&mut con, "fleet", &grant).unwrap();
    let ttl: i64 = cmd(&["PTTL", "fleet"]).query(&mut con).unwrap();
    assert_eq!(ttl, -1, "RENEW keeps no expiry");
}

/// A coordinator restarted from an older RDB after a crash: with the lease witness file, the
/// namespace is found behind it and reset (its leases void); without, every grant is fenced
/// for the horizon from the load and the holder the copy lacks is refused as not the holder.
/// Either way no token repeats and grants start a horizon above the load.
#[test]
fn a_coordinator_restarted_from_an_older_copy_repeats_no_token_and_grants_above_its_horizon() {
    for (witness, refusal) in [("idgen-workerid.witness", "void"), ("", "not the holder's")] {
        let dir = idgen_tests::data_dir("lost-state-old-rdb");
        let options = Options {
            dir: Some(dir.to_path_buf()),
            config_lines: vec![format!("idgen.workerid-witness-file \"{witness}\"")],
            ..Options::default()
        };
        let mut server = coordinator(options.clone());
        let mut con = server.connection();
        acquire(&mut con, "fleet");
        let _: () = cmd(&["SAVE"]).query(&mut con).unwrap();
        std::fs::copy(dir.join("dump.rdb"), dir.join("old.rdb")).unwrap();
        let held = acquire(&mut con, "fleet");
        renew(&mut con, "fleet", &held).unwrap();
        server.kill9();
        std::fs::rename(dir.join("old.rdb"), dir.join("dump.rdb")).unwrap();

        let loaded_at = now_ms();
        let server = Server::start_with(Options {
            module_args: vec!["workerid-horizon-ms".into(), HORIZON_MS.to_string()],
            port: Some(server.port),
            ..options
        });
        let mut con = server.connection();
        let err = renew(&mut con, "fleet", &held).unwrap_err();
        assert!(
            idgen_tests::error_text(&err).contains(refusal),
            "witness file {witness:?}: {err:?}"
        );
        let grant = acquire(&mut con, "fleet");
        assert!(grant[1] > held[1], "token {} repeats {}", grant[1], held[1]);
        assert!(
            grant[3] >= loaded_at + HORIZON_MS,
            "witness file {witness:?}: starts above {}, below the load plus the horizon {}",
            grant[3],
            loaded_at + HORIZON_MS
        );
        drop(server);
    }
}

#[test]
fn an_evicting_policy_refuses_dateseq_and_workerid_until_fixed_or_accepted() {
    let server =
        Server::start_with(Options::default().server(&["--maxmemory-policy", "allkeys-lru"]));
    let mut con = server.connection();
    let dateseq = cmd(&["DATESEQ.NEXT", "order"]);
    let acquire = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "1000"]);
    let refused = |con: &mut dyn redis::ConnectionLike, c: &redis::Cmd, policy: &str| {
        let err = error_of(con, c);
        assert!(
            err.starts_with(&format!(
                "ERR maxmemory-policy is {policy}, which can evict"
            )) && err.contains("CONFIG SET maxmemory-policy noeviction")
                && err.contains("idgen.accept-eviction yes"),
            "{err}"
        );
    };
    refused(&mut con, &dateseq, "allkeys-lru");
    refused(&mut con, &acquire, "allkeys-lru");
    assert_eq!(server.info_field("maxmemory_policy"), "allkeys-lru");
    assert_eq!(server.info_field("eviction_can_evict"), "dateseq,workerid");
    assert_eq!(server.info_field("eviction_refusals"), "2");
    // Keys with an expiry only: the counters, not the namespaces (which never keep one).
    let _: () = cmd(&["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"])
        .query(&mut con)
        .unwrap();
    refused(&mut con, &dateseq, "volatile-ttl");
    let _: Vec<i64> = acquire.query(&mut con).unwrap();
    assert_eq!(server.info_field("eviction_can_evict"), "dateseq");
    // The operator accepts the risk.
    let _: () = cmd(&["CONFIG", "SET", "idgen.accept-eviction", "yes"])
        .query(&mut con)
        .unwrap();
    let _: i64 = dateseq.query(&mut con).unwrap();
    assert_eq!(server.info_field("eviction_accepted"), "1");
    // Or fixes the policy.
    for (name, value) in [
        ("idgen.accept-eviction", "no"),
        ("maxmemory-policy", "noeviction"),
    ] {
        let _: () = cmd(&["CONFIG", "SET", name, value])
            .query(&mut con)
            .unwrap();
    }
    let _: i64 = dateseq.query(&mut con).unwrap();
    assert_eq!(server.info_field("eviction_can_evict"), "none");
}

#[test]
fn an_evicted_counter_continues_above_its_witness_while_the_server_runs() {
    // With the risk accepted, eviction takes the counter; the node's witness of it carries the
    // day on. (Eviction stays refused: a restart would lose the witness with the counter.)
    let server = Server::start(&[]);
    let mut con = server.connection();
    let first: Vec<i64> = (0..3)
        .map(|_| cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap())
        .collect();
    evict_everything(&mut con);
    let again: i64 = cmd(&["DATESEQ.NEXT", "order"]).query(&mut con).unwrap();
    assert_eq!(
        again,
        first[2] + 1,
        "an evicted counter went on from its witness"
    );
    assert_eq!(server.info_field("dateseq_witness_lowered"), "1");
}

#[test]
fn reads_of_made_up_namespaces_remember_nothing() {
    let server = coordinator(Options::default());
    let mut con = server.connection();
    acquire(&mut con, "real");
    assert_eq!(server.info_field("workerid_namespaces_known"), "1");
    for n in 0..2_000 {
        let ns = format!("made-up-{n}");
        let _: Vec<redis::Value> = cmd(&["WORKERID.LIST", &ns]).query(&mut con).unwrap();
        let _: redis::RedisResult<()> = cmd(&["WORKERID.RELEASE", &ns, "0", "1"]).query(&mut con);
    }
    assert_eq!(server.info_field("workerid_namespaces_known"), "1");
}
