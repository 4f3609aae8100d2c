//! idgen's Functions library across servers: the install command on a server and on every
//! primary of a Cluster (upgrades, and a downgrade refused), a Rust service leasing worker IDs
//! from it as a managed service's user, and every function on a Cluster's primaries.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use idgen_client::{Backend as ClientBackend, LeaseOptions, LeasedGenerator};
use idgen_core::layout::Layout;
use idgen_tests::backend::Backend;
use idgen_tests::cluster::Cluster;
use idgen_tests::library::{managed_user, plain_server, set_node, snowflakes, source_as};
use idgen_tests::{cmd, error_of, Options};

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
    // The scripts' installer: library_scripts.rs.
    if !idgen_tests::library::has_functions(&mut con, "versions side by side") {
        return;
    }
    let url = idgen_tests::library::managed_url(&server);
    let ours = idgen_functions::version();

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

    let needed = idgen_functions::require(&mut con, "9.1.0").unwrap_err();
    assert_eq!(
        needed.to_string(),
        "the server has idgen library 9.0.0, older than the 9.1.0 this client needs: upgrade \
         it (idgen-lease-worker install-library)"
    );
    let _: () = cmd(&["FUNCTION", "FLUSH"]).query(&mut con).unwrap();
    let missing = idgen_functions::require(&mut con, ours).unwrap_err();
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
    let ours = idgen_functions::version();
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
    idgen_tests::library::remove(&mut server.connection());
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
