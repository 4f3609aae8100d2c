//! The lease witness file (`idgen.workerid-witness-file`): a clean coordinator restart grants
//! usable leases at once; a namespace the file never saw is fenced; a promotion's fence
//! outlives a restart; acknowledgements wait for the file; and a foreign, shared or full file
//! is refused naming it. Restarts from every kind of older data are crossed in
//! `witness_matrix_leases.rs`.

use std::time::Duration;

use idgen_client::{Grant, LeaseOptions, LeasedGenerator};
use idgen_tests::lease::{coordinator_past_its_first_fence, renew, renew_for};
use idgen_tests::redis::{self, Value};
use idgen_tests::tmpfs::Tmpfs;
use idgen_tests::{cmd, now_ms, wait_for, Options, Server};

const FILE: &str = "idgen-workerid.witness";

/// The default horizon: what a fenced grant waits for.
const HORIZON_MS: i64 = 30_000;

fn in_dir(dir: &std::path::Path) -> Options {
    Options {
        dir: Some(dir.to_path_buf()),
        ..Options::default()
    }
}

/// `[worker_id, token, expires_at_ms, start_above_ms]`.
fn acquire(con: &mut dyn redis::ConnectionLike, ns: &str) -> [i64; 4] {
    let v: Vec<i64> = cmd(&["WORKERID.ACQUIRE", ns, "TTL", "2000", "MAX", "1024"])
        .query(con)
        .unwrap();
    v.try_into().unwrap()
}

/// A coordinator with an AOF, past its first start's fence, given a live holder in `fleet`
/// (a 10 s lease), and stopped cleanly. Returns the
/// options to start it again with, and the holder's grant.
fn coordinator_with_a_holder(dir: &std::path::Path, witness: &str) -> (Options, [i64; 4]) {
    let options = Options {
        config_lines: vec![format!("idgen.workerid-witness-file \"{witness}\"")],
        ..in_dir(dir).server(&["--appendonly", "yes"])
    };
    let mut first = coordinator_past_its_first_fence(options.clone());
    let mut con = first.connection();
    let v: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "10000", "MAX", "1024"])
        .query(&mut con)
        .unwrap();
    let held: [i64; 4] = v.try_into().unwrap();
    renew_for(&mut con, "fleet", &held, 10_000).unwrap();
    drop(con);
    first.shutdown();
    (options, held)
}

/// Starts the coordinator, and an in-process client (idgen-client, as a service would) leasing
/// in `fleet`: the time from the start to the client's first ID, and the client's lease.
fn first_leased_id_after(options: Options) -> (Server, i64, Grant) {
    let started = now_ms();
    let server = Server::start_with(options);
    let lease = LeaseOptions::new(&server.url(), "fleet").ttl(Duration::from_secs(10));
    let ids = LeasedGenerator::start(lease).expect("a lease");
    let mut issued = None;
    wait_for(Duration::from_secs(45), || {
        issued = ids.next_id_leased().ok();
        issued.is_some()
    });
    let took_ms = now_ms() - started;
    let (_, grant) = issued.expect("no ID in 45 s");
    ids.shutdown();
    (server, took_ms, grant)
}

#[test]
fn a_leased_id_within_a_second_of_a_clean_coordinator_restart() {
    let dir = idgen_tests::data_dir("lease-witness-restart");
    let (options, held) = coordinator_with_a_holder(&dir, FILE);
    let (server, took_ms, grant) = first_leased_id_after(options);
    eprintln!("a clean restart with the witness file: first leased ID {took_ms} ms after start");
    assert!(took_ms < 1_000, "{took_ms} ms: {grant:?}");
    assert_ne!(
        i64::from(grant.worker_id),
        held[0],
        "the live holder's worker ID"
    );
    let mut con = server.connection();
    renew(&mut con, "fleet", &held).expect("the holder renews across the restart");
    assert_eq!(server.info_field("workerid_namespaces_fenced"), "0");
}

/// The break check of the witness file, and the figure before it: without the file every
/// start fences every grant for the horizon.
#[test]
fn without_the_witness_file_a_clean_restart_fences_grants_for_the_horizon() {
    let dir = idgen_tests::data_dir("lease-witness-off");
    let (options, held) = coordinator_with_a_holder(&dir, "");
    let (_server, took_ms, grant) = first_leased_id_after(options);
    eprintln!("a clean restart without the witness file: first leased ID {took_ms} ms after start");
    // The client borrows up to its drift limit (1 s) ahead of the clock.
    assert!(took_ms >= HORIZON_MS - 1_000, "{took_ms} ms");
    assert_ne!(
        i64::from(grant.worker_id),
        held[0],
        "the live holder's worker ID"
    );
}

#[test]
fn a_namespace_the_witness_never_saw_is_fenced_for_a_horizon() {
    let dir = idgen_tests::data_dir("lease-witness-unknown");
    let (options, _) = coordinator_with_a_holder(&dir, FILE);
    let server = Server::start_with(options);
    // Another coordinator's namespace, with a live holder, restored here from its DUMP.
    let other = Server::start_with(Options::module(&["workerid-horizon-ms", "2000"]));
    other.wait_past_lease_fence();
    let mut theirs = other.connection();
    let held = acquire(&mut theirs, "moved");
    let dump: Vec<u8> = cmd(&["DUMP", "moved"]).query(&mut theirs).unwrap();
    let mut con = server.connection();
    let _: () = redis::cmd("RESTORE")
        .arg("moved")
        .arg(0)
        .arg(dump)
        .query(&mut con)
        .unwrap();
    // A read does not make it known.
    let live: Vec<Value> = cmd(&["WORKERID.LIST", "moved"]).query(&mut con).unwrap();
    assert_eq!(live.len(), 1);
    let restored_at = now_ms();
    let grant = acquire(&mut con, "moved");
    assert_ne!(grant[0], held[0]);
    assert!(
        grant[3] >= restored_at + HORIZON_MS,
        "a grant in a namespace no witness saw starts above {}, within the horizon",
        grant[3]
    );
    assert_eq!(server.info_field("workerid_namespaces_fenced"), "1");
    assert!(server.log().contains("never saw"));
    // Its holder was not voided: nothing says its record is behind.
    renew(&mut con, "moved", &held).expect("the moved holder renews");
    // Known from then on: the next grant keeps the same fence, no second one.
    let again = acquire(&mut con, "moved");
    assert_eq!(again[3], grant[3]);
    assert_eq!(server.info_field("workerid_namespaces_fenced"), "1");
}

#[test]
fn a_promotions_fence_is_kept_across_a_clean_restart() {
    let dir = idgen_tests::data_dir("lease-witness-promotion");
    let primary = Server::start(&[]);
    // No AOF: a replica writing its first AOF after a sync refuses SHUTDOWN (Redis's rule).
    let options = in_dir(&dir);
    let mut replica = Server::start_with(options.clone());
    replica.replicate(&primary);
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut replica.connection())
        .unwrap();
    let promoted_at = now_ms();
    let fence: i64 = replica.info_field("workerid_fence_ms").parse().unwrap();
    assert!(fence >= promoted_at + HORIZON_MS - 1_000, "{fence}");
    let text = std::fs::read_to_string(dir.join(FILE)).unwrap();
    assert!(
        text.contains(&format!("fence {fence}")),
        "the promotion's fence is not in the file:\n{text}"
    );
    replica.shutdown();
    let restarted = Server::start_with(Options {
        port: Some(replica.port),
        ..options
    });
    assert_eq!(restarted.info_field("workerid_fence_ms"), fence.to_string());
    let grant = acquire(&mut restarted.connection(), "fresh");
    assert!(
        grant[3] >= fence,
        "{grant:?} below the promotion's fence {fence}"
    );
}

#[test]
fn grants_and_renewals_are_acknowledged_once_the_file_holds_them() {
    let dir = idgen_tests::data_dir("lease-witness-waits");
    let (options, held) = coordinator_with_a_holder(&dir, FILE);
    let server = Server::start_with(options);
    let mut con = server.connection();
    let grant = acquire(&mut con, "fleet");
    renew(&mut con, "fleet", &grant).unwrap();
    let waits: u64 = server
        .info_field("workerid_witness_file_waits")
        .parse()
        .unwrap();
    assert!(waits >= 2, "{waits}");
    // Inside MULTI and a script (no client to block), the call waits for the write itself.
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("WORKERID.ACQUIRE")
        .arg("multi")
        .arg("TTL")
        .arg(2000);
    let (in_multi,): (Vec<i64>,) = pipe.query(&mut con).unwrap();
    let from_lua: Vec<i64> = redis::cmd("EVAL")
        .arg("return redis.call('WORKERID.ACQUIRE', 'lua', 'TTL', 2000)")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!((in_multi.len(), from_lua.len()), (4, 4));
    let text = std::fs::read_to_string(dir.join(FILE)).unwrap();
    for (ns, token) in [
        ("fleet", grant[1]),
        ("multi", in_multi[1]),
        ("lua", from_lua[1]),
    ] {
        let witnessed = text
            .lines()
            .filter(|l| l.ends_with(&format!(" {ns}")))
            .map(|l| l.split(' ').nth(1).unwrap().parse::<i64>().unwrap())
            .max();
        assert!(
            witnessed >= Some(token),
            "{ns}: token {token} acknowledged before the file held it:\n{text}"
        );
    }
    renew(&mut con, "fleet", &held).unwrap();
}

#[test]
fn a_foreign_or_shared_witness_file_refuses_the_module_naming_it() {
    idgen_tests::witness_file::refuses_foreign_or_shared(
        "lease-witness-foreign",
        "workerid-witness-file",
        FILE,
        "3 9000 fleet",
        "4 90",
    );
}

#[test]
fn a_full_disk_refuses_grants_and_renewals_then_resumes() {
    if idgen_tests::needs::root_missing("a_full_disk_refuses_grants_and_renewals_then_resumes") {
        return;
    }
    let disk = Tmpfs::mount("lease-witness-full", "1m");
    // No AOF on the full disk: Redis would refuse every write itself.
    let server = coordinator_past_its_first_fence(in_dir(&disk));
    let mut con = server.connection();
    let held = acquire(&mut con, "fleet");
    let filler = disk.fill();
    let refused = (0..200).find_map(|i| {
        cmd(&["WORKERID.ACQUIRE", &format!("fleet-{i}"), "TTL", "2000"])
            .query::<Vec<i64>>(&mut con)
            .err()
    });
    let err = idgen_tests::error_text(&refused.expect("grants went on with a full disk"));
    assert!(
        err.contains("cannot write the lease witness file") && err.contains("not acknowledged"),
        "{err}"
    );
    // A renewal's line may still fit where the refused one was cut off; not many more.
    let renewal = (0..200).find_map(|_| renew(&mut con, "fleet", &held).err());
    let err = idgen_tests::error_text(&renewal.expect("renewals went on with a full disk"));
    assert!(err.contains("cannot write the lease witness file"), "{err}");
    assert!(server
        .info_field("workerid_witness_file_error")
        .contains("No space left"));
    std::fs::remove_file(filler).unwrap();
    assert!(wait_for(Duration::from_secs(5), || renew(
        &mut con, "fleet", &held
    )
    .is_ok()));
    assert_eq!(server.info_field("workerid_witness_file_error"), "");
    let _: Value = cmd(&["PING"]).query(&mut con).unwrap();
}

/// A whole disk put back from an older backup, the witness file with the data: no witness is
/// left to tell (docs/guarantees.md's row "lease namespaces"). The hazard, then the
/// documented recovery: the witness file deleted before the start, so every grant is fenced for
/// a horizon.
#[test]
fn a_disk_restored_older_with_its_witness_is_the_guarantees_row_and_deleting_the_file_recovers() {
    let dir = idgen_tests::data_dir("lease-witness-restored");
    let (options, _) = coordinator_with_a_holder(&dir, FILE);
    let backup = dir.join("backup");
    copy_state(&dir, &backup);
    let mut server = Server::start_with(options.clone());
    let mut con = server.connection();
    // A holder the backup never saw, told it may issue up to 1.5 s ahead.
    let missed = acquire(&mut con, "fleet");
    let told = renew_for(&mut con, "fleet", &missed, 10_000).unwrap()[1];
    drop(con);
    server.shutdown();
    copy_state(&backup, &dir);
    let mut stale = Server::start_with(options.clone());
    let again = acquire(&mut stale.connection(), "fleet");
    assert!(
        again[0] == missed[0] && again[3] < told,
        "the hazard was not set up: {again:?} after {missed:?} told {told}"
    );
    stale.kill9();
    copy_state(&backup, &dir);
    std::fs::remove_file(dir.join(FILE)).unwrap();
    let started = now_ms();
    let server = Server::start_with(options);
    let grant = acquire(&mut server.connection(), "fleet");
    assert!(grant[3] >= started + HORIZON_MS, "{grant:?}");
    assert!(grant[3] > told);
}

/// Copies a coordinator's AOF directory and lease witness file from `from` to `to`, replacing
/// what was there.
fn copy_state(from: &std::path::Path, to: &std::path::Path) {
    let aof = to.join("appendonlydir");
    let _ = std::fs::remove_dir_all(&aof);
    std::fs::create_dir_all(&aof).unwrap();
    for entry in std::fs::read_dir(from.join("appendonlydir")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), aof.join(entry.file_name())).unwrap();
    }
    std::fs::copy(from.join(FILE), to.join(FILE)).unwrap();
}
