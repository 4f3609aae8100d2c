//! idgen's Functions library (`server/idgen-functions/idgen.lua`) on a server that cannot load the module,
//! under a user denied `MODULE`, `CONFIG`, `DEBUG` and `SHUTDOWN` as a managed service's is:
//! it installs, its Snowflake IDs are exact to the digit at every edge and decode as the
//! module's do, its date sequences match the module's calendar, and a restart, a reload or a
//! failover repeats nothing.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use idgen_client::{LeaseOptions, LeasedGenerator};
use idgen_core::dateseq::{Calendar, Period};
use idgen_core::layout::{Layout, TWITTER_EPOCH_MS};
use idgen_tests::library::{install, managed_user, plain_server, set_node, snowflakes};
use idgen_tests::partition::Partition;
use idgen_tests::{cmd, error_of, now_ms, Options, Server};

use idgen_tests::backend::LIBRARY_FIRST_USE_GAP as GAP;

#[test]
fn installs_and_answers_under_a_managed_services_user() {
    let server = plain_server();
    let mut con = managed_user(&server);
    let denied = error_of(&mut con, &cmd(&["CONFIG", "GET", "maxmemory"]));
    assert!(
        denied.starts_with("NOPERM"),
        "the user is not restricted: {denied}"
    );
    assert_eq!(install(&mut con), "idgen");
    let version: String = cmd(&["FCALL", "idgen_version", "0"])
        .query(&mut con)
        .unwrap();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    if idgen_tests::library::has_functions(&mut con, "FUNCTION LIST") {
        let listed: redis::Value = cmd(&["FUNCTION", "LIST", "LIBRARYNAME", "idgen"])
            .query(&mut con)
            .unwrap();
        let listed = format!("{listed:?}");
        for function in [
            "snowflake_next",
            "dateseq_next",
            "dateseq_current",
            "idgen_version",
        ] {
            assert!(
                listed.contains(function),
                "{function} not in FUNCTION LIST: {listed}"
            );
        }
    }

    // No worker ID, no IDs: the refusal says how to give one.
    let err = error_of(
        &mut con,
        &cmd(&["FCALL", "snowflake_next", "1", "idgen:snowflake"]),
    );
    assert!(
        err.contains("worker of 'idgen:snowflake' is not set")
            && err.contains("HSET idgen:snowflake worker"),
        "{err}"
    );
    set_node(&mut con, "idgen:snowflake", 2, 7);
    let before = now_ms();
    let mut all: Vec<u64> = Vec::new();
    for _ in 0..10 {
        all.extend(snowflakes(&mut con, "idgen:snowflake", 10_000));
    }
    let single: String = idgen_tests::when_caught_up(
        &mut con,
        &cmd(&["FCALL", "snowflake_next", "1", "idgen:snowflake"]),
    );
    all.push(single.parse().unwrap());
    assert!(
        all.windows(2).all(|w| w[0] < w[1]),
        "not strictly increasing"
    );
    let layout = Layout::twitter();
    for id in [all[0], all[all.len() / 2], *all.last().unwrap()] {
        let d = layout.decode(id);
        assert_eq!((d.datacenter, d.worker), (2, 7), "{id}");
        let at = d.ticks as i64 + TWITTER_EPOCH_MS;
        // A fresh process starts at its clock plus the drift limit (1 s), then follows.
        assert!(at >= before && at <= now_ms() + 1_000, "{id} is at {at}");
    }

    // The date sequence of today, as the module's calendar has it (UTC).
    let label = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), Period::Day)
        .date as u64;
    let first: u64 = cmd(&["FCALL", "dateseq_next", "1", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        first,
        label * 1_000_000 + GAP + 1,
        "first value of a new process"
    );
    let next: u64 = cmd(&["FCALL", "dateseq_next", "1", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(next, first + 1);
    let current: u64 = cmd(&["FCALL_RO", "dateseq_current", "1", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(current, next);
}

/// Exact to the digit: an ID is built as decimal text from doubles, so every edge is checked
/// against idgen_core's decoding (and, on a server with the module, SNOWFLAKE.DECODE's).
#[test]
fn snowflake_ids_are_exact_at_every_edge() {
    let server = plain_server();
    let mut con = server.connection();
    install(&mut con);
    let layout = Layout::twitter();
    let time_max = (1u64 << 41) - 1;

    // The last ms of the time field, every field at its maximum: the last ID is 2^63 - 1. A
    // new process starts at its clock plus the drift limit, here 20 s, so the end 30 ms past
    // that is reached long before the clock gets there, however slow the calls. Batches halve
    // when one would cross the end, down to single IDs.
    let end = now_ms() + 20_000 + 30;
    let epoch = end - time_max as i64;
    let _: () = cmd(&[
        "HSET",
        "edge",
        "datacenter",
        "31",
        "worker",
        "31",
        "max_drift_ms",
        "20000",
        "epoch",
        &epoch.to_string(),
    ])
    .query(&mut con)
    .unwrap();
    let mut ids: Vec<u64> = Vec::new();
    let spent = |e: &str| e.contains("the Snowflake time field holds");
    let mut batch = 4096;
    let deadline = Instant::now() + Duration::from_secs(20);
    let drained = loop {
        if Instant::now() > deadline {
            break false;
        }
        let call = cmd(&[
            "FCALL",
            "snowflake_next",
            "1",
            "edge",
            "COUNT",
            &batch.to_string(),
        ]);
        match call.query::<Vec<String>>(&mut con) {
            Ok(texts) => ids.extend(texts.iter().map(|t| t.parse::<u64>().unwrap())),
            Err(e) if spent(&e.to_string()) && batch > 1 => batch /= 2,
            Err(e) if spent(&e.to_string()) => break true,
            Err(e) => panic!("{e}"),
        }
    };
    assert!(drained, "the time field was never spent");
    assert_eq!(
        *ids.last().unwrap(),
        i64::MAX as u64,
        "the last ID of the range"
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    for id in &ids {
        let d = layout.decode(*id);
        assert_eq!((d.datacenter, d.worker), (31, 31), "{id}");
        assert!(d.ticks <= time_max);
    }
    // Every sequence of the last ms, 0 to 4095, in order.
    let last_ms: Vec<u64> = ids
        .iter()
        .map(|id| layout.decode(*id))
        .filter(|d| d.ticks == time_max)
        .map(|d| d.sequence)
        .collect();
    assert_eq!(last_ms, (0..4096).collect::<Vec<_>>());

    // The first ms of the range, zero fields: IDs below 10^7, where the text has no high part.
    let start = now_ms() + 1_000;
    let _: () = cmd(&[
        "HSET",
        "low",
        "datacenter",
        "0",
        "worker",
        "0",
        "epoch",
        &start.to_string(),
    ])
    .query(&mut con)
    .unwrap();
    let low = snowflakes(&mut con, "low", 5);
    for id in &low {
        let d = layout.decode(*id);
        assert_eq!((d.datacenter, d.worker), (0, 0));
        assert!(d.ticks < 1_000, "{id}: {d:?}");
    }

    // The same IDs, decoded by the module.
    let module = Server::start(&[]);
    let mut m = module.connection();
    set_node(&mut con, "twitter", 17, 29);
    for id in snowflakes(&mut con, "twitter", 3) {
        let by_module = idgen_tests::decode(&mut m, id as i64);
        let by_core = layout.decode(id);
        assert_eq!(by_module.datacenter as u64, by_core.datacenter);
        assert_eq!(by_module.worker as u64, by_core.worker);
        assert_eq!(by_module.sequence as u64, by_core.sequence);
        assert_eq!(by_module.time_ms, by_core.ticks as i64 + TWITTER_EPOCH_MS);
        assert_eq!((by_core.datacenter, by_core.worker), (17, 29));
    }
}
#[test]
fn two_state_keys_with_one_pair_or_a_changed_epoch_are_refused() {
    let server = plain_server();
    let mut con = server.connection();
    install(&mut con);
    set_node(&mut con, "a", 1, 1);
    set_node(&mut con, "b", 1, 1);
    snowflakes(&mut con, "a", 1);
    let err = error_of(&mut con, &cmd(&["FCALL", "snowflake_next", "1", "b"]));
    assert!(
        err.contains("'a' and 'b' both give datacenter 1 worker 1 on this server"),
        "{err}"
    );
    // Another epoch under a key that issued: the same time field would be another time.
    let _: () = cmd(&["HSET", "a", "epoch", "0"]).query(&mut con).unwrap();
    let err = error_of(&mut con, &cmd(&["FCALL", "snowflake_next", "1", "a"]));
    assert!(
        err.contains("epoch of 'a' is 0, but its IDs were issued under 1288834974657"),
        "{err}"
    );
}

/// A restart (the data kept by an AOF), a reload of the library and a promoted replica: each
/// is another process, or a process that forgot, and repeats nothing.
#[test]
fn a_restart_a_reload_and_a_failover_repeat_nothing() {
    if idgen_tests::needs::root_missing("a_restart_a_reload_and_a_failover_repeat_nothing") {
        return;
    }
    let dir = idgen_tests::data_dir("library-restart");
    let options = Options {
        no_module: true,
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    }
    .server(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut server = Server::start_with(options.clone());
    let mut con = server.connection();
    install(&mut con);
    set_node(&mut con, "sf", 3, 4);
    let mut ids: Vec<u64> = snowflakes(&mut con, "sf", 50_000);
    let first: u64 = cmd(&["FCALL", "dateseq_next", "1", "order"])
        .query(&mut con)
        .unwrap();

    // A reload forgets what this process issued: its reservation covers it.
    install(&mut con);
    ids.extend(snowflakes(&mut con, "sf", 50_000));
    let same: u64 = cmd(&["FCALL", "dateseq_next", "1", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        same,
        first + 1,
        "a reload in the same process skips nothing"
    );

    // A restart: the library comes back with the data; another process, so a fence and a gap.
    drop(con);
    server.shutdown();
    let server = Server::start_with(Options {
        port: Some(server.port),
        ..options
    });
    let mut con = server.connection();
    ids.extend(snowflakes(&mut con, "sf", 50_000));
    let after: u64 = cmd(&["FCALL", "dateseq_next", "1", "order"])
        .query(&mut con)
        .unwrap();
    assert_eq!(after, same + GAP + 1, "a restart skips the gap");

    // A replica refuses (a write function). Cut off from its primary, which then runs to the
    // drift limit ahead of its clock and dies, the promoted replica holds none of it (not
    // even the reservation): its own clock plus the drift limit, and the gap, cover it.
    let replica = plain_server();
    replica.replicate(&server);
    let err = error_of(
        &mut replica.connection(),
        &cmd(&["FCALL", "snowflake_next", "1", "sf"]),
    );
    assert!(err.starts_with("READONLY"), "{err}");
    let partition = Partition::replication_link(&server)
        .unwrap_or_else(|e| panic!("the failover test cuts a link with iptables: {e}"));
    // A reload fences: the primary's IDs now run a second ahead of its clock, and the
    // reservation that says so does not reach the replica.
    install(&mut con);
    ids.extend(snowflakes(&mut con, "sf", 50_000));
    let mut last_value = 0;
    for _ in 0..100 {
        last_value = cmd(&["FCALL", "dateseq_next", "1", "order"])
            .query(&mut con)
            .unwrap();
    }
    let mut server = server;
    server.kill9();
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut replica.connection())
        .unwrap();
    // Only now: the dead primary's kernel would still deliver what it had sent.
    drop(partition);
    let mut r = replica.connection();
    ids.extend(snowflakes(&mut r, "sf", 50_000));
    let promoted: u64 = cmd(&["FCALL", "dateseq_next", "1", "order"])
        .query(&mut r)
        .unwrap();
    assert!(promoted > last_value, "{promoted} after {last_value}");

    let distinct: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "an ID repeated");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "IDs went back");
}

/// A state key that takes another pair frees its old one for another key on the server, and
/// the IDs made under the old pair by both keys never meet.
#[test]
fn a_pair_given_up_by_one_state_key_may_be_taken_by_another() {
    let server = plain_server();
    let mut con = server.connection();
    install(&mut con);
    set_node(&mut con, "k1", 1, 1);
    let mut ids = snowflakes(&mut con, "k1", 2_000);
    set_node(&mut con, "k1", 1, 2);
    ids.extend(snowflakes(&mut con, "k1", 2_000));
    set_node(&mut con, "k2", 1, 1);
    ids.extend(snowflakes(&mut con, "k2", 2_000));
    let distinct: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "an ID repeated");
    // The pair k1 holds now is still refused to another key.
    set_node(&mut con, "k3", 1, 2);
    let err = error_of(&mut con, &cmd(&["FCALL", "snowflake_next", "1", "k3"]));
    assert!(err.contains("both give datacenter 1 worker 2"), "{err}");
}

/// Under a maxmemory-policy that can evict any key (a parameter group's `allkeys-lru`), the
/// lease functions refuse, and so does a date sequence's first use in this process, naming the
/// policy; under `volatile-lru` (the library's keys keep no expiry) and `noeviction` they serve.
#[test]
fn an_evicting_policy_is_refused_naming_it() {
    let server = plain_server();
    let mut con = server.connection();
    install(&mut con);
    let acquire = cmd(&["FCALL", "workerid_acquire", "1", "fleet", "TTL", "1000"]);
    let dateseq = |key: &str| cmd(&["FCALL", "dateseq_next", "1", key]);
    for (policy, refused) in [
        ("allkeys-lru", true),
        ("volatile-lru", false),
        ("noeviction", false),
    ] {
        let _: () = cmd(&["CONFIG", "SET", "maxmemory-policy", policy])
            .query(&mut con)
            .unwrap();
        let key = format!("seq-{policy}");
        for call in [&acquire, &dateseq(&key)] {
            let reply: redis::RedisResult<redis::Value> = call.query(&mut con);
            match (reply, refused) {
                (Err(e), true) => assert!(
                    e.to_string()
                        .contains(&format!("maxmemory-policy is {policy}, which can evict")),
                    "{e}"
                ),
                (Ok(_), false) => {}
                (other, _) => panic!("{policy}: {other:?}"),
            }
        }
    }
}

/// A client that finds its backend on connect, under a user denied `COMMAND` too: it takes
/// the library (and a server with neither is refused naming the library it lacks).
#[test]
fn a_user_denied_command_still_finds_the_library() {
    let server = plain_server();
    let mut admin = server.connection();
    idgen_tests::library::managed_user_denied(&server, &["-command"]);
    let url = idgen_tests::library::managed_url(&server);
    let options = LeaseOptions::new(&url, "svc").ttl(Duration::from_millis(2_000));
    let e = LeasedGenerator::start(options.clone())
        .err()
        .expect("no library yet");
    assert!(e.to_string().contains("no idgen library"), "{e}");
    install(&mut admin);
    let ids = LeasedGenerator::start(options).expect("a lease from the library");
    assert!(ids.lease().is_some());
}
