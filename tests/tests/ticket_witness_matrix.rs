//! The ticket store's files against every way they can be lost between runs: the tickets after
//! repeat nothing, or the server refuses to start naming the file; a whole directory put back
//! older is the Guarantees row, and `--start-above` recovers.
//! (The matrix of DATESEQ counters is `witness_matrix.rs`: the three outcomes and the inventory
//! are described there.)

use std::collections::HashSet;

use idgen_tests::cmd;
use idgen_tests::file_losses::{file_losses, End};
use idgen_tests::redis::{self};

/// A ticket store's file to lose, after a set of one server (offset 1 of increment 1) handed
/// out tickets from `default` and `orders`.
#[derive(Clone, Copy, Debug)]
enum StoreFile {
    Marker,
    Sequence,
    Lock,
}

impl StoreFile {
    fn name(self) -> &'static str {
        match self {
            StoreFile::Marker => "STORE",
            StoreFile::Sequence => "orders.seq",
            StoreFile::Lock => "LOCK",
        }
    }
}

#[test]
fn ticket_store_files_lost_every_way_repeat_nothing_or_are_refused_naming_them() {
    use idgen_tests::ticket::{run_cli, TicketServer};
    let mut cases = 0;
    let mut refused = 0;
    for file in [StoreFile::Marker, StoreFile::Sequence, StoreFile::Lock] {
        for loss in file_losses() {
            for end in [End::Kill9, End::Clean] {
                cases += 1;
                let case = format!("{} {} / {end:?}", file.name(), loss.name);
                let dir = idgen_tests::data_dir(&format!("matrix-ticket-{cases}"));
                let path = dir.join(file.name());
                let mut server = TicketServer::start(1, 1, &dir, &["--block", "10"]);
                let mut con = server.connection();
                let mut seen = HashSet::new();
                let mut take = |con: &mut dyn redis::ConnectionLike, seq: &str, n: usize| {
                    for _ in 0..n {
                        let t: u64 = cmd(&["TICKET.NEXT", seq]).query(con).unwrap();
                        assert!(seen.insert((seq.to_string(), t)), "{case}: {seq} {t} twice");
                    }
                };
                take(&mut con, "default", 3);
                take(&mut con, "orders", 3);
                let older = std::fs::read_to_string(&path).unwrap_or_default();
                take(&mut con, "default", 25);
                take(&mut con, "orders", 25);
                drop(con);
                match end {
                    End::Kill9 => server.kill9(),
                    End::Clean => {
                        let pid = server.pid().to_string();
                        let _ = std::process::Command::new("kill")
                            .args(["-TERM", &pid])
                            .status();
                        server
                            .wait_exit(std::time::Duration::from_secs(10))
                            .expect("stopped");
                    }
                }
                (loss.lose)(&path, &older);
                let d = dir.display().to_string();
                let restarted = match TicketServer::try_start_existing(1, 1, &dir) {
                    Ok(restarted) => restarted,
                    Err(err) => {
                        refused += 1;
                        // Refused: the message names the state, and `highest` refuses it too.
                        assert!(
                            err.contains(&path.display().to_string()) || err.contains(&d),
                            "{case}: {err}"
                        );
                        if !matches!(file, StoreFile::Lock) {
                            let (ok, _, herr) = run_cli(&["highest", "--data-dir", &d]);
                            assert!(!ok, "{case}: highest read it: {herr}");
                        }
                        continue;
                    }
                };
                let mut con = restarted.connection();
                take(&mut con, "default", 5);
                take(&mut con, "orders", 5);
            }
        }
    }
    eprintln!(
        "{cases} ticket cases: the marker, a sequence file and the lock lost every way; \
         {refused} refused naming the file, the rest repeated nothing"
    );
    assert_eq!(cases, 54);
}

/// Where no witness survives, the Guarantees row names the assumption, and the documented
/// recovery works: a ticket server's whole directory put back from an older copy (marker and
/// sequence files together) would hand tickets out again ("Tickets of one server": a lost disk
/// restarts with `--start-above N`).
#[test]
fn a_whole_ticket_directory_put_back_older_is_the_guarantees_row_and_start_above_recovers() {
    use idgen_tests::ticket::TicketServer;
    let root = idgen_tests::data_dir("matrix-ticket-restore");
    let (dir, backup) = (root.join("data"), root.join("backup"));
    let mut server = TicketServer::start(1, 1, &dir, &["--block", "10"]);
    let mut con = server.connection();
    let take = |con: &mut dyn redis::ConnectionLike, n| -> Vec<u64> {
        (0..n)
            .map(|_| cmd(&["TICKET.NEXT"]).query(con).unwrap())
            .collect()
    };
    take(&mut con, 3);
    server.kill9();
    let copy = |from: &std::path::Path, to: &std::path::Path| {
        let _ = std::fs::remove_dir_all(to);
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    };
    copy(&dir, &backup);
    let mut server = TicketServer::start_existing(1, 1, &dir, &[]);
    let mut con = server.connection();
    let handed: Vec<u64> = take(&mut con, 40);
    server.kill9();
    copy(&backup, &dir);
    let highest = *handed.iter().max().unwrap();
    // The hazard the row states: nothing on the disk knows of the tickets handed out since.
    let mut stale = TicketServer::start_existing(1, 1, &dir, &[]);
    let again = take(&mut stale.connection(), 1)[0];
    assert!(again <= highest, "{again}: the hazard was not set up");
    stale.kill9();
    copy(&backup, &dir);
    // The documented recovery: above the highest ticket handed out (from the database that
    // holds the tickets, or the clients' logs).
    let server = TicketServer::start(1, 1, &dir, &["--start-above", &highest.to_string()]);
    let after = take(&mut server.connection(), 5);
    assert!(
        after.iter().all(|t| *t > highest),
        "{after:?} after {highest}"
    );
}
