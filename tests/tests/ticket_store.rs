//! A ticket server's state on disk, read wrong or lost: a floor that would wrap, `highest` on a
//! blank, wrong or foreign directory, initialisation as a deliberate first step, state files
//! holding values idgen never writes, and `ticket-server next` against a server with a password.
//! And its bound file on a disk that fills, turns read-only, or fails a write halfway.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use idgen_tests::ext4::Ext4;
use idgen_tests::ticket::{run_cli, run_cli_env, serve_once, TicketServer};
use idgen_tests::tmpfs::Tmpfs;
use idgen_tests::writefault::{Fault, WriteFaults};
use idgen_tests::{cmd, data_dir, error_of};
use ticket_client::{RoundRobin, RETRY_AFTER};

/// The marker of a store of offset 1 of increment 2 that has handed out nothing.
const SOUND_MARKER: &str = "ticket-store v1 offset=1 increment=2 floor=0\n";

/// The last ticket: tickets are signed 64-bit integers.
const LAST: u64 = i64::MAX as u64;

fn serve(dir: &Path, extra: &[&str]) -> (bool, String) {
    serve_once("1", "2", dir, extra)
}

fn init(dir: &Path, extra: &[&str]) -> (bool, String, String) {
    let d = dir.display().to_string();
    let mut args = vec![
        "init",
        "--offset",
        "1",
        "--increment",
        "2",
        "--data-dir",
        &d,
    ];
    args.extend(extra);
    run_cli(&args)
}

fn highest(dirs: &[&Path]) -> (bool, String, String) {
    let mut args = vec!["highest".to_string()];
    for d in dirs {
        args.push("--data-dir".into());
        args.push(d.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_cli(&args)
}

#[test]
fn a_floor_at_the_end_of_the_range_is_exhausted_never_wrapped() {
    for n in [u64::MAX, u64::MAX - 1, LAST, LAST + 1] {
        let dir = data_dir("ticket-wrap");
        let (ok, err) = serve(&dir, &["--start-above", &n.to_string()]);
        assert!(
            !ok && err.contains(&format!("--start-above {n} leaves no ticket")),
            "--start-above {n}: {err}"
        );
        let (ok, _, err) = init(&dir, &["--start-above", &n.to_string()]);
        assert!(!ok && err.contains("leaves no ticket"), "init {n}: {err}");
    }
    // Just below: the last tickets are handed out, then every call is refused.
    let dir = data_dir("ticket-near-end");
    let server = TicketServer::start(1, 2, &dir, &["--start-above", &(LAST - 4).to_string()]);
    let mut con = server.connection();
    let t: u64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(t, LAST - 2);
    let t: u64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert_eq!(t, LAST);
    for _ in 0..3 {
        let err = error_of(&mut con, &cmd(&["TICKET.NEXT"]));
        assert!(err.contains("exhausted"), "{err}");
    }
    drop(server);
}

#[test]
fn highest_refuses_a_blank_wrong_or_foreign_directory() {
    let root = data_dir("ticket-highest");
    let blank = root.join("blank");
    std::fs::create_dir_all(&blank).unwrap();
    let foreign = root.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("ibdata1"), "not ours").unwrap();
    let missing = root.join("missing");
    let (odd, even) = (root.join("odd"), root.join("even"));
    for (offset, dir) in [(1, &odd), (2, &even)] {
        let server = TicketServer::start(offset, 2, dir, &[]);
        for _ in 0..5 {
            let _: u64 = cmd(&["TICKET.NEXT"])
                .query(&mut server.connection())
                .unwrap();
        }
    }
    for (name, dir, says) in [
        ("blank", &blank, "holds no ticket store"),
        ("foreign", &foreign, "holds no ticket store"),
        ("missing", &missing, "is not a directory"),
    ] {
        let (ok, out, err) = highest(&[&odd, &even, dir]);
        assert!(
            !ok && out.is_empty() && err.contains(says),
            "{name}: {out} {err}"
        );
    }
    let (ok, out, err) = highest(&[&odd, &even]);
    assert!(ok, "{err}");
    assert!(out.trim().parse::<u64>().unwrap() >= 10);
}

#[test]
fn highest_reads_only_one_whole_stopped_set() {
    let root = data_dir("ticket-highest-set");
    let dirs: Vec<_> = (1..=3).map(|k| root.join(format!("s{k}"))).collect();
    let other = root.join("other-increment");
    for (k, dir) in dirs.iter().enumerate() {
        let (ok, _, err) = run_cli(&[
            "init",
            "--offset",
            &(k + 1).to_string(),
            "--increment",
            "3",
            "--data-dir",
            &dir.display().to_string(),
        ]);
        assert!(ok, "{err}");
    }
    assert!(init(&other, &[]).0);
    let (d1, d2, d3) = (&dirs[0], &dirs[1], &dirs[2]);
    let running = TicketServer::start_existing(3, 3, d3, &[]);
    for (name, set, says) in [
        (
            "a server left out",
            vec![d1, d2],
            "offsets 3 of increment 3 are not given",
        ),
        (
            "a server twice",
            vec![d1, d2, d1],
            "are both offset 1 of increment 3",
        ),
        ("two increments", vec![d1, d2, &other], "of increment 2"),
        (
            "a running server",
            vec![d1, d2, d3],
            "held by a running ticket server",
        ),
    ] {
        let set: Vec<&Path> = set.iter().map(|d| d.as_path()).collect();
        let (ok, out, err) = highest(&set);
        assert!(!ok && out.is_empty() && err.contains(says), "{name}: {err}");
    }
    drop(running);
    let (ok, out, err) = highest(&[d1, d2, d3]);
    assert!(ok && out.trim() == "0", "{out} {err}");
}

#[test]
fn a_sequence_file_lost_under_a_kept_marker_is_refused_by_serve_and_highest() {
    let root = data_dir("ticket-lost-seq");
    let (odd, even) = (root.join("odd"), root.join("even"));
    let mut seen = 0;
    for (offset, dir) in [(1, &odd), (2, &even)] {
        let server = TicketServer::start(offset, 2, dir, &[]);
        for _ in 0..5 {
            let t: u64 = cmd(&["TICKET.NEXT", "orders"])
                .query(&mut server.connection())
                .unwrap();
            seen = seen.max(t);
        }
    }
    std::fs::remove_file(odd.join("orders.seq")).unwrap();
    let path = odd.join("orders.seq").display().to_string();
    let (ok, err) = serve(&odd, &[]);
    assert!(
        !ok && err.contains(&path) && err.contains("--start-above"),
        "{err}"
    );
    let (ok, _, err) = highest(&[&odd, &even]);
    assert!(
        !ok && err.contains(&path) && err.contains("is missing"),
        "{err}"
    );
    // The way out the message gives: above the highest ticket, the sequence continues.
    let server = TicketServer::start(1, 2, &odd, &["--start-above", &seen.to_string()]);
    let t: u64 = cmd(&["TICKET.NEXT", "orders"])
        .query(&mut server.connection())
        .unwrap();
    assert!(t > seen, "{t} repeats a ticket at most {seen}");
}

#[test]
fn initialisation_is_a_deliberate_first_step() {
    let root = data_dir("ticket-init");
    let dir = root.join("t1");
    // A blank directory is refused, saying how to start and how to recover.
    let (ok, err) = serve(&dir, &[]);
    assert!(
        !ok && err.contains("holds no ticket store")
            && err.contains("ticket-server init")
            && err.contains("--start-above N"),
        "{err}"
    );
    let (ok, out, err) = init(&dir, &[]);
    assert!(ok, "{err}");
    assert!(out.contains("offset 1 of increment 2"), "{out}");
    let server = TicketServer::start_existing(1, 2, &dir, &[]);
    let t: u64 = cmd(&["TICKET.NEXT"])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(t % 2, 1);
    drop(server);
    // init again leaves the store as it is.
    let (ok, _, err) = init(&dir, &[]);
    assert!(ok, "{err}");
    let (ok, _, err) = init(&dir, &["--increment", "3"]);
    assert!(!ok, "{err}");
    // A directory holding someone else's files is not made a store.
    let foreign = root.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "x").unwrap();
    let (ok, _, err) = init(&foreign, &[]);
    assert!(
        !ok && err.contains("\"notes.txt\", which is not a ticket store's"),
        "{err}"
    );
    let (ok, err) = serve(&foreign, &["--init"]);
    assert!(!ok && err.contains("notes.txt"), "{err}");
}

#[test]
fn state_files_with_values_idgen_never_writes_are_refused_with_the_file_and_field() {
    let cases = [
        (
            "STORE",
            "ticket-store v1 offset=1 increment=2 floor=-5\n",
            "floor=-5",
        ),
        (
            "STORE",
            "ticket-store v1 offset=3 increment=2 floor=0\n",
            "offset=3",
        ),
        (
            "STORE",
            "ticket-store v1 offset=1 increment=0 floor=0\n",
            "increment=0",
        ),
        (
            "STORE",
            "ticket-store v1 offset=1 increment=2 floor=9223372036854775808\n",
            "floor=9223372036854775808",
        ),
        (
            "STORE",
            "ticket-store v1 offset=1 increment=2\n",
            "no floor= field",
        ),
        ("STORE", "mysql data\n", "is not a ticket store marker"),
        (
            "default.seq",
            "ticket-sequence v1 offset=1 increment=2 bound=-1\n",
            "bound=-1",
        ),
        (
            "default.seq",
            "ticket-sequence v1 offset=0 increment=2 bound=7\n",
            "offset=0",
        ),
        (
            "default.seq",
            "ticket-sequence v1 offset=1 increment=2 bound=x\n",
            "bound=x",
        ),
        (
            "default.seq",
            "offset=1 increment=2 bound=7\n",
            "is not a ticket sequence file",
        ),
    ];
    for (file, text, field) in cases {
        let dir = data_dir("ticket-bad-state");
        if file.ends_with(".seq") {
            // A sound marker, so the sequence file is what is read wrong.
            std::fs::write(dir.join("STORE"), SOUND_MARKER).unwrap();
        }
        std::fs::write(dir.join(file), text).unwrap();
        let (ok, err) = serve(&dir, &[]);
        let path = dir.join(file).display().to_string();
        assert!(
            !ok && err.contains(&path) && err.contains(field),
            "{text}: {err}"
        );
        let (ok, _, err) = highest(&[&dir]);
        assert!(!ok && err.contains(field), "highest, {text}: {err}");
    }
}

#[test]
fn next_reaches_a_server_with_a_password_from_a_file_or_the_environment() {
    let root = data_dir("ticket-next-auth");
    let file = root.join("password");
    std::fs::write(&file, "s3cret\n").unwrap();
    let f = file.display().to_string();
    let server = TicketServer::start(1, 1, &root.join("data"), &["--requirepass-file", &f]);
    let addr = server.addr();
    let (ok, _, err) = run_cli(&["next", "--servers", &addr]);
    assert!(!ok && err.contains("NOAUTH"), "{err}");
    let (ok, out, err) = run_cli(&["next", "--servers", &addr, "--requirepass-file", &f]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "1");
    let (ok, out, err) = run_cli_env(
        &["next", "--servers", &addr, "--count", "2"],
        &[("TICKET_SERVER_REQUIREPASS", "s3cret")],
    );
    assert!(ok, "{err}");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["2", "3"]);
    drop(server);
    // An empty password is refused, as an empty password file is.
    for command in [
        vec!["next", "--servers", &addr],
        vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            "/nonexistent",
            "--init",
        ],
    ] {
        let (ok, _, err) = run_cli_env(&command, &[("TICKET_SERVER_REQUIREPASS", "")]);
        assert!(
            !ok && err.contains("the password is empty"),
            "{command:?}: {err}"
        );
    }
}

/// A real full disk (a 1 MiB tmpfs, root only): the server keeps answering, refuses past the
/// bound on disk with an error, and once space returns issues again by itself, above every
/// ticket handed out before.
#[test]
fn a_full_disk_pauses_issuing_and_space_coming_back_resumes_it() {
    if idgen_tests::needs::root_missing(
        "a_full_disk_pauses_issuing_and_space_coming_back_resumes_it",
    ) {
        return;
    }
    let mount = Tmpfs::mount("ticket-full-disk", "1m");
    let server = TicketServer::start(1, 1, &mount.join("data"), &["--block", "100"]);
    let mut con = server.connection();
    let mut issued: Vec<i64> = (0..50)
        .map(|_| cmd(&["TICKET.NEXT"]).query(&mut con).unwrap())
        .collect();
    let filler = mount.fill();
    let mut refused = None;
    for _ in 0..1_000 {
        match cmd(&["TICKET.NEXT"]).query::<i64>(&mut con) {
            Ok(t) => issued.push(t),
            Err(e) => {
                refused = Some(e.to_string());
                break;
            }
        }
    }
    let refused = refused.expect("a full disk must stop issuing past the bound");
    assert!(
        refused.contains("cannot write the ticket bound"),
        "{refused}"
    );
    // Space returns: issuing resumes without a restart.
    std::fs::remove_file(&filler).unwrap();
    let resumed = idgen_tests::wait_for(Duration::from_secs(5), || {
        cmd(&["TICKET.NEXT"]).query::<i64>(&mut con).is_ok()
    });
    assert!(resumed, "still refusing after space came back");
    let after: i64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    assert!(issued.iter().all(|&t| t < after));
    let distinct: HashSet<i64> = issued.iter().copied().collect();
    assert_eq!(distinct.len(), issued.len());
}

/// One server of a pair loses its data directory mid-load. Coming back on the blank directory it
/// refuses to start (it would hand out every ticket again); restarted with `--start-above` the
/// highest ticket seen, it continues, and no ticket is handed out twice.
#[test]
fn a_server_that_lost_its_disk_refuses_a_blank_start_and_repeats_nothing() {
    let dir = data_dir("ticket-lost-disk");
    let (odd, mut even) = TicketServer::odd_and_even(&dir, &["--block", "100"]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = RoundRobin::new(&[odd.addr(), even.addr()]).unwrap();
    let mut seen = Vec::new();
    for _ in 0..3_000 {
        seen.push(runtime.block_on(client.next("default")).unwrap());
    }
    even.kill9();
    dir.lose("even");
    // Load goes on against the odd server alone meanwhile.
    for _ in 0..500 {
        seen.push(runtime.block_on(client.next("default")).unwrap());
    }
    let (ok, _, err) = run_cli(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--offset",
        "2",
        "--increment",
        "2",
        "--data-dir",
        &dir.join("even").display().to_string(),
    ]);
    assert!(!ok && err.contains("holds no ticket store"), "{err}");
    let highest = *seen.iter().max().unwrap();
    even.restart_without_init(&["--start-above", &highest.to_string()]);
    std::thread::sleep(RETRY_AFTER + Duration::from_millis(100));
    for _ in 0..3_000 {
        seen.push(runtime.block_on(client.next("default")).unwrap());
    }
    let distinct: HashSet<u64> = seen.iter().copied().collect();
    assert_eq!(distinct.len(), seen.len(), "a ticket was handed out twice");
    let even_after: Vec<u64> = seen[3_500..]
        .iter()
        .copied()
        .filter(|t| t % 2 == 0)
        .collect();
    assert!(!even_after.is_empty(), "the even server did not come back");
    assert!(even_after.iter().all(|&t| t > highest));
}

/// Takes tickets from `server` until one is refused for its bound file (at most 1,000 after
/// what the bound on disk covers): the tickets acknowledged, and the refusal.
fn until_refused(server: &TicketServer, told: &mut Vec<i64>) -> String {
    let mut con = server.connection();
    for _ in 0..1_000 {
        match cmd(&["TICKET.NEXT"]).query::<i64>(&mut con) {
            Ok(ticket) => told.push(ticket),
            Err(e) => {
                let refusal = idgen_tests::error_text(&e);
                // Every call after is refused too, until the bound can be written.
                for _ in 0..3 {
                    let again = cmd(&["TICKET.NEXT"]).query::<i64>(&mut con);
                    assert!(again.is_err(), "acknowledged past the bound on disk");
                }
                return refusal;
            }
        }
    }
    panic!("1,000 tickets past a bound that could not be written")
}

/// After a kill -9 while the bound could not be written, and the fault cleared: the server
/// starts, and its first tickets are above every ticket it acknowledged.
fn restarted_above(server: &mut TicketServer, told: &[i64], case: &str) {
    server.restart();
    let mut con = server.connection();
    let next: i64 = cmd(&["TICKET.NEXT"]).query(&mut con).unwrap();
    let highest = told.iter().max().unwrap();
    assert!(
        next > *highest,
        "{case}: {next} came again (up to {highest} were told)"
    );
    let distinct: HashSet<i64> = told.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        told.len(),
        "{case}: a ticket was acknowledged twice"
    );
}

/// The ticket bound file under every way a write fails (it stops halfway, EIO, the fsync
/// fails; the LD_PRELOAD shim of tests/writefault/): no ticket acknowledged past the bound on
/// disk, and none again after a kill -9 and a restart.
#[test]
fn the_ticket_bound_file_under_every_write_fault() {
    for fault in [Fault::Halfway, Fault::Eio, Fault::FsyncEio] {
        let case = format!("{fault:?}");
        let dir = data_dir("ticket-write-faults");
        let faults = WriteFaults::new(&dir);
        let mut server = TicketServer::start_with_env(
            1,
            1,
            &dir.join("data"),
            &["--block", "100"],
            // The bound is written whole to `<sequence>.seq.tmp`, then renamed over the file.
            faults.env(".seq.tmp"),
        );
        let mut told: Vec<i64> = Vec::new();
        let mut con = server.connection();
        told.extend((0..50).map(|_| cmd(&["TICKET.NEXT"]).query::<i64>(&mut con).unwrap()));
        faults.set(fault);
        let refusal = until_refused(&server, &mut told);
        assert!(
            refusal.contains("cannot write the ticket bound"),
            "{case}: {refusal}"
        );
        server.kill9();
        faults.set(Fault::None);
        restarted_above(&mut server, &told, &case);
    }
}

/// The data directory on an ext4 that turns read-only (on an error, as `errors=remount-ro`
/// does): refused past the bound naming the error, and nothing again after kill -9, a repair
/// and a restart. (Turned read-only between calls: ext4 may lose a write whose fsync returned
/// while it handled the error, tests/tests/full_disk.rs.)
#[test]
fn a_data_directory_turned_read_only_then_kill_9_repeats_nothing() {
    if idgen_tests::needs::root_missing(
        "a_data_directory_turned_read_only_then_kill_9_repeats_nothing",
    ) {
        return;
    }
    let disk = Ext4::mount("ticket-read-only", 8);
    let mut server = TicketServer::start(1, 1, &disk.join("data"), &["--block", "100"]);
    let mut con = server.connection();
    let mut told: Vec<i64> = (0..50)
        .map(|_| cmd(&["TICKET.NEXT"]).query(&mut con).unwrap())
        .collect();
    disk.turn_read_only();
    let refusal = until_refused(&server, &mut told);
    assert!(
        refusal.contains("cannot write the ticket bound")
            && ["Read-only file system", "Input/output error"]
                .iter()
                .any(|e| refusal.contains(e)),
        "{refusal}"
    );
    server.kill9();
    disk.repair();
    restarted_above(&mut server, &told, "read-only");
}
