//! idgen's Functions library (`modules/idgen-client/library/idgen.lua`) on a server that cannot load the module,
//! under a user denied `MODULE`, `CONFIG`, `DEBUG` and `SHUTDOWN` as a managed service's is:
//! it installs, its Snowflake IDs are exact to the digit at every edge and decode as the
//! module's do, its date sequences match the module's calendar, and a restart, a reload or a
//! failover repeats nothing.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use idgen_client::{Backend as ClientBackend, LeaseOptions, LeasedGenerator};
use idgen_core::dateseq::{Calendar, Period};
use idgen_core::layout::{Layout, TWITTER_EPOCH_MS};
use idgen_tests::backend::Backend;
use idgen_tests::cluster::Cluster;
use idgen_tests::library::{install, managed_user, plain_server, source_as};
use idgen_tests::partition::Partition;
use idgen_tests::{cmd, error_of, now_ms, Options, Server};

/// Values a date sequence skips when another server process wrote it last.
const GAP: u64 = 10_000;

/// `n` IDs from the state key `key`, retried while the library is ahead of its clock by the
/// drift limit (for a moment after a start, a reload or a failover, and under bursts).
fn snowflakes(con: &mut redis::Connection, key: &str, n: usize) -> Vec<u64> {
    let call = cmd(&["FCALL", "snowflake_next", "1", key, "COUNT", &n.to_string()]);
    let texts: Vec<String> = idgen_tests::when_caught_up(con, &call);
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

fn set_node(con: &mut redis::Connection, key: &str, datacenter: u64, worker: u64) {
    let _: () = cmd(&[
        "HSET",
        key,
        "datacenter",
        &datacenter.to_string(),
        "worker",
        &worker.to_string(),
    ])
    .query(con)
    .unwrap();
}

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
fn date_sequence_options_and_errors_follow_the_module() {
    let server = plain_server();
    let mut con = server.connection();
    install(&mut con);
    let now = now_ms();
    let utc = Calendar::new("UTC").unwrap();
    let (day, year) = (
        utc.period_of(now, Period::Day).date as u64,
        utc.period_of(now, Period::Year).date as u64,
    );
    let range: Vec<u64> = cmd(&["FCALL", "dateseq_next", "1", "invoice", "COUNT", "5"])
        .query(&mut con)
        .unwrap();
    assert_eq!(
        range,
        [day * 1_000_000 + GAP + 1, day * 1_000_000 + GAP + 5]
    );
    // DIGITS 10: above 2^53, so text, exact.
    let text: String = cmd(&["FCALL", "dateseq_next", "1", "invoice", "DIGITS", "10"])
        .query(&mut con)
        .unwrap();
    assert_eq!(text, format!("{day}{:010}", GAP + 6));
    let string: String = cmd(&["FCALL", "dateseq_next", "1", "invoice", "STRING"])
        .query(&mut con)
        .unwrap();
    assert_eq!(string, format!("{day}{:06}", GAP + 7));
    let yearly: u64 = cmd(&[
        "FCALL",
        "dateseq_next",
        "1",
        "invoice",
        "PERIOD",
        "year",
        "DIGITS",
        "5",
    ])
    .query(&mut con)
    .unwrap();
    // A new period of a key this process wrote: nothing of it can have been lost, no gap.
    assert_eq!(yearly, year * 100_000 + 1);
    // A new period keeps the two before it (a clock stepped back finds them) and drops older
    // ones; a clock stepped back into a kept one carries on above it.
    let _: () = cmd(&[
        "HSET",
        "kept",
        "day:20200101",
        "5",
        "day:20200102",
        "6",
        "day:20200103",
        "7",
    ])
    .query(&mut con)
    .unwrap();
    let _: u64 = cmd(&["FCALL", "dateseq_next", "1", "kept"])
        .query(&mut con)
        .unwrap();
    let mut fields: Vec<String> = cmd(&["HKEYS", "kept"]).query(&mut con).unwrap();
    fields.sort();
    assert_eq!(
        fields,
        [
            "day:20200102",
            "day:20200103",
            &format!("day:{day}"),
            "owner"
        ]
    );
    let none: Option<u64> = cmd(&["FCALL_RO", "dateseq_current", "1", "never"])
        .query(&mut con)
        .unwrap();
    assert_eq!(none, None);

    let cases: &[(&[&str], &str)] = &[
        (
            &["COUNT", "0"],
            "ERR COUNT 0 must be between 1 and 1000000000",
        ),
        (
            &["DIGITS", "11"],
            "ERR DIGITS must be between 1 and 10, got 11",
        ),
        (
            &["DIGITS", "x"],
            "ERR value is not an integer or out of range: 'x'",
        ),
        (
            &["PERIOD", "week"],
            "ERR PERIOD 'week' must be day, month or year",
        ),
        (
            &["FOO"],
            "ERR syntax error: 'FOO' is not an option of this command",
        ),
        (
            &["COUNT", "1", "COUNT", "2"],
            "ERR syntax error: 'COUNT' is given more than once",
        ),
        (&["COUNT"], "ERR syntax error: 'COUNT' needs a value"),
        // The gap of a new process does not fit in 4 digits.
        (&["DIGITS", "4"], "is spent"),
    ];
    for (options, expected) in cases {
        let mut call = cmd(&["FCALL", "dateseq_next", "1", "spent"]);
        call.arg(*options);
        let err = error_of(&mut con, &call);
        assert!(
            err.starts_with(expected) || err.contains(expected),
            "{options:?}: {err}"
        );
    }
    let before: Vec<String> = cmd(&["HKEYS", "spent"]).query(&mut con).unwrap();
    assert!(before.is_empty(), "a refused call wrote: {before:?}");
    let err = error_of(
        &mut con,
        &cmd(&["FCALL", "snowflake_next", "1", "x", "COUNT", "100001"]),
    );
    assert_eq!(err, "ERR COUNT 100001 must be between 1 and 100000");
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

/// `idgen-lease-worker install-library --url URL`: (success, stdout, stderr).
fn install_library(url: &str) -> (bool, String, String) {
    let out = std::process::Command::new(idgen_tests::lease_worker_binary())
        .args(["install-library", "--url", url])
        .output()
        .expect("run idgen-lease-worker");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The one command installs the library as a managed service's user, upgrades an older one,
/// and leaves a newer one alone, naming both versions; a client needing a later library than
/// the server's refuses, naming both.
#[test]
fn the_install_command_installs_upgrades_and_refuses_a_downgrade() {
    let server = plain_server();
    let mut con = managed_user(&server);
    let url = idgen_tests::library::managed_url(&server);
    let ours = idgen_client::library::version();

    let (ok, out, err) = install_library(&url);
    assert!(ok, "{err}");
    let at = format!("127.0.0.1:{}", server.port);
    assert_eq!(out.trim(), format!("{at}: installed idgen library {ours}"));
    let (ok, out, _) = install_library(&url);
    assert!(ok && out.contains("was there already"), "{out}");

    let _: String = cmd(&["FUNCTION", "LOAD", "REPLACE", &source_as("0.0.1")])
        .query(&mut con)
        .unwrap();
    let (ok, out, err) = install_library(&url);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        format!("{at}: upgraded idgen library 0.0.1 to {ours}")
    );

    let _: String = cmd(&["FUNCTION", "LOAD", "REPLACE", &source_as("9.0.0")])
        .query(&mut con)
        .unwrap();
    let (ok, _, err) = install_library(&url);
    assert!(!ok, "a newer library was replaced");
    assert!(
        err.contains("the server has idgen library 9.0.0, newer than this one (")
            && err.contains(ours),
        "{err}"
    );
    let still: String = cmd(&["FCALL_RO", "idgen_version", "0"])
        .query(&mut con)
        .unwrap();
    assert_eq!(still, "9.0.0");

    let needed = idgen_client::library::require(&mut con, "9.1.0").unwrap_err();
    assert_eq!(
        needed.to_string(),
        "the server has idgen library 9.0.0, older than the 9.1.0 this client needs: upgrade \
         it (idgen-lease-worker install-library)"
    );
    let _: () = cmd(&["FUNCTION", "FLUSH"]).query(&mut con).unwrap();
    let missing = idgen_client::library::require(&mut con, ours).unwrap_err();
    assert!(
        missing.to_string().contains("has no idgen library"),
        "{missing}"
    );
}

/// Given any node of a Cluster, the command installs on every primary; their replicas get it
/// from them.
#[test]
fn the_install_command_installs_on_every_primary_of_a_cluster() {
    let cluster = Cluster::start(3, 1, |i| vec!["worker-id".into(), (i + 1).to_string()]);
    let url = format!("redis://127.0.0.1:{}/", cluster.nodes[0].port);
    let (ok, out, err) = install_library(&url);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
    let ours = idgen_client::library::version();
    for node in &cluster.nodes {
        let version: String = wait_until_ok(|| {
            cmd(&["FCALL_RO", "idgen_version", "0"]).query(&mut node.connection())
        });
        assert_eq!(version, ours, "node {}", node.port);
    }
}

/// `call`'s value once it succeeds (up to 10 s: a replica takes what its primary loaded a
/// moment later).
fn wait_until_ok<T>(mut call: impl FnMut() -> redis::RedisResult<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match call() {
            Ok(value) => return value,
            Err(e) => assert!(Instant::now() < deadline, "{e}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Done when, in Rust: on a stock server as a managed service's user, the library installs with
/// the one command, a Rust service leases worker IDs from it (the backend found on connect) and
/// makes 1,000,000 IDs with two generators, and a lease worker told `--backend library` adds
/// its own: no ID repeats.
#[test]
fn a_rust_service_leases_from_the_library_as_a_managed_user_and_repeats_nothing() {
    const HORIZON_MS: u64 = 2_000;
    let server = plain_server();
    let _con = managed_user(&server);
    let url = idgen_tests::library::managed_url(&server);
    let out = std::process::Command::new(idgen_tests::lease_worker_binary())
        .args(["install-library", "--url", &url])
        .args(["--horizon-ms", &HORIZON_MS.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    Backend::Library.wait_past_lease_fence(&server, HORIZON_MS);

    let options = LeaseOptions::new(&url, "svc").ttl(Duration::from_millis(HORIZON_MS));
    let generators: Vec<LeasedGenerator> = (0..2)
        .map(|_| LeasedGenerator::start(options.clone()).expect("a lease from the library"))
        .collect();
    let workers: HashSet<u32> = generators
        .iter()
        .map(|g| g.lease().expect("held").worker_id)
        .collect();
    assert_eq!(workers.len(), 2, "two holders, two worker IDs");
    let mut all: Vec<u64> = Vec::with_capacity(1_000_000);
    for g in &generators {
        let mut mine = Vec::new();
        while mine.len() < 500_000 {
            if g.next_ids(10_000, &mut mine).is_err() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        all.extend(mine);
    }
    let worker = std::process::Command::new(idgen_tests::lease_worker_binary())
        .args(["--url", &url, "--namespace", "svc", "--backend", "library"])
        .args(["--ttl-ms", &HORIZON_MS.to_string(), "--run-ms", "300"])
        .output()
        .unwrap();
    assert!(worker.status.success(), "{worker:?}");
    let printed: Vec<u64> = String::from_utf8_lossy(&worker.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("I ")?.split(' ').next()?.parse().ok())
        .collect();
    assert!(
        printed.len() > 100,
        "the worker made IDs: {}",
        printed.len()
    );
    let made = all.len() + printed.len();
    all.extend(printed);
    let distinct: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), made, "an ID repeated");
    assert!(made >= 1_000_000);
    let held: Vec<Vec<i64>> = cmd(&["FCALL", "workerid_list", "1", "svc"])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(held.len(), 2, "the worker released its lease: {held:?}");
    drop(generators);
    let held: Vec<Vec<i64>> = cmd(&["FCALL", "workerid_list", "1", "svc"])
        .query(&mut server.connection())
        .unwrap();
    assert!(held.is_empty(), "dropping a generator releases: {held:?}");

    // The module asked for where there is none, and a client that finds neither.
    let mut module = LeaseOptions::new(&url, "svc").ttl(Duration::from_millis(HORIZON_MS));
    module.backend = ClientBackend::Module;
    module.start_within = Duration::from_millis(200);
    assert!(LeasedGenerator::start(module).is_err());
    let _: () = cmd(&["FUNCTION", "FLUSH"])
        .query(&mut server.connection())
        .unwrap();
    let e = LeasedGenerator::start(options).err().expect("refused");
    assert!(
        e.to_string()
            .contains("neither the idgen module nor a library to lease from"),
        "{e}"
    );
}

/// Every function on a Cluster of servers without the module: each key (namespace, date
/// sequence, state key) is served by the primary of its slot (the function declares it, so any
/// other node answers MOVED); leases, date sequences and Snowflake IDs on each primary.
#[test]
fn library_functions_run_on_every_primary_of_a_cluster() {
    let cluster = Cluster::start_with(3, 0, |_| Options {
        no_module: true,
        ..Options::default()
    });
    let seed = cluster.nodes[0].port;
    let url = format!("redis://127.0.0.1:{seed}/");
    let (ok, _, err) = install_library(&url);
    assert!(ok, "{err}");
    let mut owners = HashSet::new();
    for ns in ["{a}fleet", "{b}fleet", "{c}fleet"] {
        let port = cluster.shard_of(ns, seed).ports[0];
        owners.insert(port);
        let node = cluster.nodes.iter().find(|n| n.port == port).unwrap();
        let mut con = node.connection();
        let grant: Vec<i64> = cmd(&["FCALL", "workerid_acquire", "1", ns, "TTL", "5000"])
            .query(&mut con)
            .unwrap();
        assert_eq!(grant[0], 0, "{ns}");
        let renewed: Vec<i64> = cmd(&[
            "FCALL",
            "workerid_renew",
            "1",
            ns,
            "0",
            &grant[1].to_string(),
            "TTL",
            "5000",
        ])
        .query(&mut con)
        .unwrap();
        assert!(renewed[0] >= grant[2]);
        let other = cluster.nodes.iter().find(|n| n.port != port).unwrap();
        let err = error_of(
            &mut other.connection(),
            &cmd(&["FCALL", "workerid_acquire", "1", ns, "TTL", "5000"]),
        );
        assert!(err.starts_with("MOVED"), "{ns} on another node: {err}");
        // A date sequence and a state key in the same slot, on the same primary; each
        // primary its own pair.
        let seq = ns.replace("fleet", "orders");
        let first: u64 = cmd(&["FCALL", "dateseq_next", "1", &seq])
            .query(&mut con)
            .unwrap();
        let second: u64 = cmd(&["FCALL", "dateseq_next", "1", &seq])
            .query(&mut con)
            .unwrap();
        assert_eq!(second, first + 1, "{seq}");
        let state = ns.replace("fleet", "snowflake");
        set_node(&mut con, &state, 0, u64::from(port % 32));
        let ids = snowflakes(&mut con, &state, 100);
        assert_eq!(
            Layout::twitter().decode(ids[0]).worker,
            u64::from(port % 32)
        );
        let err = error_of(
            &mut other.connection(),
            &cmd(&["FCALL", "dateseq_next", "1", &seq]),
        );
        assert!(err.starts_with("MOVED"), "{seq} on another node: {err}");
    }
    assert!(owners.len() >= 2, "the namespaces fell on one primary");
}

/// Every way a date sequence's key can go back or move, while the library is loaded: restored
/// from an older DUMP, deleted, flushed, migrated to another server; and a counter that holds
/// what the library never writes. None repeats a value; the foreign one is refused naming it.
#[test]
fn a_date_sequence_restored_older_deleted_flushed_or_migrated_repeats_nothing() {
    let server = plain_server();
    let other = plain_server();
    let mut con = server.connection();
    install(&mut con);
    install(&mut other.connection());
    let next = |con: &mut redis::Connection| -> u64 {
        cmd(&["FCALL", "dateseq_next", "1", "orders"])
            .query(con)
            .unwrap()
    };
    let mut all: Vec<u64> = (0..5).map(|_| next(&mut con)).collect();
    let old: Vec<u8> = cmd(&["DUMP", "orders"]).query(&mut con).unwrap();
    all.extend((0..5).map(|_| next(&mut con)));
    let steps: [&[&str]; 3] = [
        &["RESTORE", "orders", "0", "<dump>", "REPLACE"],
        &["DEL", "orders"],
        &["FLUSHALL"],
    ];
    for step in steps {
        let mut call = redis::cmd(step[0]);
        for word in &step[1..] {
            match *word {
                "<dump>" => call.arg(&old),
                w => call.arg(w),
            };
        }
        let _: redis::Value = call.query(&mut con).unwrap();
        let after = next(&mut con);
        assert!(
            after > *all.iter().max().unwrap(),
            "after {step:?}: {after} is not above {all:?}"
        );
        all.push(after);
        let current: u64 = cmd(&["FCALL_RO", "dateseq_current", "1", "orders"])
            .query(&mut con)
            .unwrap();
        assert_eq!(current, after, "dateseq_current after {step:?}");
    }
    // Moved to another server: that process did not write it, and skips the gap.
    let _: () = cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &other.port.to_string(),
        "orders",
        "0",
        "5000",
    ])
    .query(&mut con)
    .unwrap();
    let moved = next(&mut other.connection());
    assert!(moved > *all.iter().max().unwrap() + GAP - 1, "{moved}");

    // Data the library never writes, in a counter or a Snowflake reservation: refused.
    let label = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), Period::Day)
        .date;
    let _: () = cmd(&["HSET", "foreign", &format!("day:{label}"), "1e5"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &cmd(&["FCALL", "dateseq_next", "1", "foreign"]));
    assert!(err.contains("holds '1e5', not a count"), "{err}");
    set_node(&mut con, "sf", 1, 1);
    let _: () = cmd(&["HSET", "sf", "reserved", "1e20"])
        .query(&mut con)
        .unwrap();
    let err = error_of(&mut con, &cmd(&["FCALL", "snowflake_next", "1", "sf"]));
    assert!(err.contains("reserved of 'sf' holds '1e20'"), "{err}");
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
