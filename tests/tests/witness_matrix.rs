//! Every source of IDs against every way its state can be lost, generated: each case issues
//! IDs, loses the state one way, issues again, and asserts one of three outcomes: no value
//! repeated; a refusal that names the state; or the README's Guarantees row that states the
//! assumption this loss breaks (named in the case).
//!
//! The inventory and the witness of each state item are in ARCHITECTURE.md ("State and its
//! witnesses").

use std::collections::HashSet;

use idgen_core::dateseq::{counter_key, Calendar, Period};
use idgen_tests::losses::{assert_carried_on, dateseq_ways, run, Outcome};
use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, now_ms, Options, Server};

/// The forms a case issues in: one value a call, `COUNT 3` (a range), `STRING`.
const FORMS: [&[&str]; 3] = [&[], &["COUNT", "3"], &["STRING"]];

/// The values a DATESEQ.NEXT reply stands for.
fn values(reply: Value, counted: bool) -> Vec<u64> {
    let number = |v: &Value| -> u64 {
        match v {
            Value::Int(i) => *i as u64,
            Value::BulkString(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
            other => panic!("{other:?}"),
        }
    };
    match reply {
        Value::Array(items) if counted => (number(&items[0])..=number(&items[1])).collect(),
        one => vec![number(&one)],
    }
}

fn next(con: &mut redis::Connection, prefix: &str, period: &str, form: &[&str]) -> Vec<u64> {
    let mut words = vec!["DATESEQ.NEXT", prefix, "PERIOD", period];
    words.extend(form);
    let reply: Value = cmd(&words).query(con).unwrap();
    values(reply, form.contains(&"COUNT"))
}

fn counter_name(prefix: &str, period: Period) -> String {
    let date = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), period)
        .date;
    let mut out = Vec::new();
    counter_key(prefix.as_bytes(), date, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn dateseq_counters_lost_every_way_while_running_repeat_nothing() {
    let server = Server::start_with(Options::default().server(&[
        "--enable-debug-command",
        "yes",
        "--databases",
        "4",
    ]));
    let mut con = server.connection();
    let periods = [
        ("day", Period::Day),
        ("month", Period::Month),
        ("year", Period::Year),
    ];
    let mut cases = 0;
    for way in dateseq_ways() {
        for (period_word, period) in periods {
            for form in FORMS {
                cases += 1;
                let case = format!("{} / PERIOD {period_word} / {form:?}", way.name);
                let prefix = format!("w{cases}");
                let key = counter_name(&prefix, period);
                let mut seen: Vec<u64> = next(&mut con, &prefix, period_word, form);
                let older: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut con).unwrap();
                run(
                    &mut con,
                    &["COPY", &key, &format!("backup:{key}"), "REPLACE"],
                );
                run(&mut con, &["SAVE"]);
                for _ in 0..2 {
                    seen.extend(next(&mut con, &prefix, period_word, form));
                }
                let before = server.info_field("dateseq_witness_lowered");
                (way.lose)(&mut con, &key, &older);
                if let Outcome::Refused(says) = way.outcome {
                    let mut words = vec!["DATESEQ.NEXT", &prefix, "PERIOD", period_word];
                    words.extend(form);
                    let err = idgen_tests::error_of(&mut con, &cmd(&words));
                    assert!(err.contains(says), "{case}: {err}");
                    run(&mut con, &["DEL", &key]);
                }
                let mut after = Vec::new();
                for _ in 0..3 {
                    after.extend(next(&mut con, &prefix, period_word, form));
                }
                assert_carried_on(&case, &mut seen, after);
                let lowered: u64 = server
                    .info_field("dateseq_witness_lowered")
                    .parse()
                    .unwrap();
                assert!(
                    lowered > before.parse::<u64>().unwrap(),
                    "{case}: the witness did not count the loss"
                );
            }
        }
    }
    assert!(
        server.log().contains("was found at"),
        "the log says a counter was found below its witness"
    );
    eprintln!("{cases} DATESEQ cases: a counter lost while running, every way, every period");
    assert!(cases >= 150);
}

/// The words of a lease command on namespace `ns`, given the grant `[worker_id, token, ...]`.
type LeaseCall = fn(&str, &[i64; 4]) -> Vec<String>;

/// A hand edit of a live holder's record `"<token> <expires> <until> <floor>"`, as a new value
/// (`None`: the field removed).
type Edit = fn(u64, i64, i64, i64) -> Option<String>;

#[test]
fn a_lease_record_edited_by_hand_is_refused_as_foreign_naming_its_field() {
    let server = Server::start_with(Options::module(&["workerid-horizon-ms", "2000"]));
    server.wait_past_lease_fence();
    let mut con = server.connection();
    let edits: &[(&str, Edit)] = &[
        ("made to look expired", |t, _, u, f| {
            Some(format!("{t} 1 {u} {f}"))
        }),
        ("released", |t, _, u, f| Some(format!("{t} 0 {u} {f}"))),
        ("until lowered", |t, e, _, f| {
            Some(format!("{t} {e} {f} {f}"))
        }),
        ("expiry lowered", |t, e, u, f| {
            Some(format!("{t} {} {u} {f}", e - 500))
        }),
        ("another token", |t, e, u, f| {
            Some(format!("{} {e} {u} {f}", t - 1))
        }),
        ("removed (HDEL)", |_, _, _, _| None),
    ];
    let commands: [(&str, LeaseCall); 3] = [
        ("ACQUIRE", |ns, _| {
            ["WORKERID.ACQUIRE", ns, "TTL", "2000", "MAX", "2"]
                .map(String::from)
                .to_vec()
        }),
        ("RENEW", |ns, g| {
            let (w, t) = (g[0].to_string(), g[1].to_string());
            ["WORKERID.RENEW", ns, &w, &t, "TTL", "2000"]
                .map(String::from)
                .to_vec()
        }),
        ("LIST", |ns, _| {
            ["WORKERID.LIST", ns].map(String::from).to_vec()
        }),
    ];
    let mut cases = 0;
    for (edit_name, edit) in edits {
        for (command_name, command) in &commands {
            cases += 1;
            let case = format!("{edit_name} / {command_name}");
            let ns = format!("fleet{cases}");
            let grant: Vec<i64> = cmd(&["WORKERID.ACQUIRE", &ns, "TTL", "2000", "MAX", "2"])
                .query(&mut con)
                .unwrap();
            let grant: [i64; 4] = grant.try_into().unwrap();
            let (w, t) = (grant[0].to_string(), grant[1].to_string());
            idgen_tests::lease::renew(&mut con, &ns, &grant).unwrap();
            let record: String = cmd(&["HGET", &ns, &w]).query(&mut con).unwrap();
            let parts: Vec<i64> = record.split(' ').map(|p| p.parse().unwrap()).collect();
            match edit(parts[0] as u64, parts[1], parts[2], parts[3]) {
                Some(value) => run(&mut con, &["HSET", &ns, &w, &value]),
                None => run(&mut con, &["HDEL", &ns, &w]),
            }
            let words = command(&ns, &grant);
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let err = idgen_tests::error_of(&mut con, &cmd(&words));
            assert!(
                err.contains(&format!("field \"{w}\"")) && err.contains("changed by hand"),
                "{case}: {err}"
            );
            // Put back, the namespace serves again, and the holder renews as before.
            run(&mut con, &["HSET", &ns, &w, &record]);
            let _: Vec<i64> = cmd(&["WORKERID.RENEW", &ns, &w, &t, "TTL", "2000"])
                .query(&mut con)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
        }
    }
    eprintln!("{cases} lease cases: a live holder's record edited by hand, every command");
    assert_eq!(cases, 18);
}

/// What a state file is turned into between two runs, given its text before the burst (an
/// older copy).
struct FileLoss {
    name: &'static str,
    lose: fn(&std::path::Path, &str),
}

/// The ways a state file is lost between runs, shared by the Snowflake and ticket sections.
fn file_losses() -> Vec<FileLoss> {
    vec![
        FileLoss {
            name: "deleted",
            lose: |f, _| std::fs::remove_file(f).unwrap(),
        },
        FileLoss {
            name: "emptied",
            lose: |f, _| std::fs::write(f, "").unwrap(),
        },
        FileLoss {
            name: "an older copy",
            lose: |f, older| std::fs::write(f, older).unwrap(),
        },
        FileLoss {
            name: "renamed away",
            lose: |f, _| std::fs::rename(f, f.with_extension("moved")).unwrap(),
        },
        FileLoss {
            name: "swapped with another file",
            lose: |f, _| {
                let other = f.with_extension("other");
                std::fs::write(&other, "ticket-sequence v1 offset=1 increment=1 bound=1\n")
                    .unwrap();
                std::fs::rename(&other, f).unwrap();
            },
        },
        FileLoss {
            name: "garbage",
            lose: |f, _| std::fs::write(f, "\u{fffd}not ours\n").unwrap(),
        },
        FileLoss {
            name: "not text",
            lose: |f, _| std::fs::write(f, [0xff, 0xfe, 0x00]).unwrap(),
        },
        FileLoss {
            name: "a directory in its place",
            lose: |f, _| {
                std::fs::remove_file(f).unwrap();
                std::fs::create_dir(f).unwrap();
            },
        },
        FileLoss {
            name: "a dangling link in its place",
            lose: |f, _| {
                std::fs::remove_file(f).unwrap();
                std::os::unix::fs::symlink(f.with_extension("nowhere"), f).unwrap();
            },
        },
    ]
}

/// How a server ends before its state is lost.
#[derive(Clone, Copy, Debug)]
enum End {
    Kill9,
    Clean,
}

#[test]
fn the_snowflake_state_file_lost_every_way_repeats_nothing_or_is_refused() {
    use idgen_tests::burst::{burst, BURST_LAYOUT};
    let mut cases = 0;
    for loss in file_losses() {
        for end in [End::Kill9, End::Clean] {
            cases += 1;
            let case = format!("{} / {end:?}", loss.name);
            let dir = idgen_tests::data_dir(&format!("matrix-snowflake-{cases}"));
            let file = dir.join("idgen-snowflake.state");
            let options = Options {
                dir: Some(dir.to_path_buf()),
                ..Options::module(&["worker-id", "6", "layout", BURST_LAYOUT])
            };
            let mut server = Server::start_with(options.clone());
            let older = std::fs::read_to_string(&file).unwrap();
            let (stream, last_tick) = burst(&server);
            match end {
                End::Kill9 => server.kill9(),
                End::Clean => {
                    drop(stream);
                    server.shutdown();
                }
            }
            (loss.lose)(&file, &older);
            match Server::try_start(options) {
                Ok(restarted) => {
                    let mut con = restarted.connection();
                    let id: i64 = idgen_tests::when_caught_up(&mut con, &cmd(&["SNOWFLAKE.NEXT"]));
                    let first = idgen_tests::decode(&mut con, id).time_ms;
                    assert!(
                        first > last_tick,
                        "{case}: restarted at {first}, issued up to {last_tick}"
                    );
                }
                // Refused: the log names the file and says what was wrong.
                Err(log) => {
                    assert!(log.contains(&file.display().to_string()), "{case}: {log}");
                    assert!(
                        [
                            "garbage",
                            "not text",
                            "a directory",
                            "a dangling link",
                            "swapped"
                        ]
                        .iter()
                        .any(|w| loss.name.starts_with(w)),
                        "{case}: refused, yet this loss is one to carry on from: {log}"
                    );
                }
            }
        }
    }
    eprintln!(
        "{cases} Snowflake cases: the state file lost every way, after a kill -9 or a clean stop"
    );
    assert_eq!(cases, 18);
}

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
                let mut take = |con: &mut redis::Connection, seq: &str, n: usize| {
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
    let take = |con: &mut redis::Connection, n| -> Vec<u64> {
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

/// How a DATESEQ server's data comes back at a restart, given the directory and the copies of
/// its RDB (`older.rdb`) and AOF directory (`older-aof/`) taken after the first values.
struct Comeback {
    name: &'static str,
    /// redis-server arguments for the persistence it runs with.
    persistence: &'static [&'static str],
    put_back: fn(&std::path::Path),
    /// What of the data the restart finds lost.
    loses: Loses,
}

/// What a comeback loses of the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loses {
    /// Nothing.
    Nothing,
    /// What was written after the copies were taken.
    SinceTheCopy,
    /// Every key.
    Everything,
}

/// Waits until the AOF holds every write so far (`aof_buffer_length:0`): under
/// `appendfsync everysec` Redis holds its writes back while a slow fsync runs (a busy disk),
/// and a copy taken then would be older than the case means to put back.
fn aof_written(con: &mut redis::Connection) {
    let written = idgen_tests::wait_for(std::time::Duration::from_secs(10), || {
        let info: String = cmd(&["INFO", "persistence"]).query(con).unwrap();
        info.lines()
            .any(|line| line.trim() == "aof_buffer_length:0")
    });
    assert!(written, "the AOF buffer was not written within 10 s");
}

/// Makes `to` a copy of the flat directory `from` (an AOF directory), replacing what was there.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn comebacks() -> Vec<Comeback> {
    vec![
        Comeback {
            name: "an older RDB",
            persistence: &[],
            put_back: |dir| {
                std::fs::copy(dir.join("older.rdb"), dir.join("dump.rdb")).unwrap();
            },
            loses: Loses::SinceTheCopy,
        },
        Comeback {
            name: "an older AOF (appendfsync everysec)",
            persistence: &["--appendonly", "yes", "--appendfsync", "everysec"],
            put_back: |dir| copy_dir(&dir.join("older-aof"), &dir.join("appendonlydir")),
            loses: Loses::SinceTheCopy,
        },
        Comeback {
            name: "no data at all (no persistence, or the data lost)",
            persistence: &[],
            put_back: |dir| {
                let _ = std::fs::remove_file(dir.join("dump.rdb"));
            },
            loses: Loses::Everything,
        },
        Comeback {
            name: "the data as it was (nothing lost)",
            persistence: &["--appendonly", "yes", "--appendfsync", "always"],
            put_back: |_| {},
            loses: Loses::Nothing,
        },
    ]
}

/// Every way a DATESEQ server's data comes back older at a restart, after a crash or a clean
/// stop, in every period and form: the witness file carries each counter on above every value
/// handed out. After a clean stop nothing is skipped either; after a crash, at most a block.
#[test]
fn dateseq_counters_rolled_back_across_a_restart_repeat_nothing() {
    let periods = [
        ("day", Period::Day),
        ("month", Period::Month),
        ("year", Period::Year),
    ];
    let mut cases = 0;
    for comeback in comebacks() {
        for end in [End::Kill9, End::Clean] {
            let dir = idgen_tests::data_dir("matrix-dateseq-restart");
            let options = Options {
                dir: Some(dir.to_path_buf()),
                ..Options::default().server(comeback.persistence)
            };
            let mut server = Server::start_with(options.clone());
            let mut con = server.connection();
            let mut seen = std::collections::HashMap::new();
            let counters: Vec<(String, &str, &[&str])> = periods
                .iter()
                .flat_map(|(word, _)| FORMS.iter().map(move |form| (*word, *form)))
                .enumerate()
                .map(|(i, (word, form))| (format!("r{i}"), word, form))
                .collect();
            for (prefix, period, form) in &counters {
                seen.insert(prefix.clone(), next(&mut con, prefix, period, form));
            }
            run(&mut con, &["SAVE"]);
            std::fs::copy(dir.join("dump.rdb"), dir.join("older.rdb")).unwrap();
            if dir.join("appendonlydir").exists() {
                aof_written(&mut con);
                copy_dir(&dir.join("appendonlydir"), &dir.join("older-aof"));
            }
            for (prefix, period, form) in &counters {
                for _ in 0..20 {
                    let more = next(&mut con, prefix, period, form);
                    seen.get_mut(prefix).unwrap().extend(more);
                }
            }
            drop(con);
            match end {
                End::Kill9 => server.kill9(),
                End::Clean => server.shutdown(),
            }
            (comeback.put_back)(&dir);
            let server = Server::start_with(options);
            let mut con = server.connection();
            for (prefix, period, form) in &counters {
                cases += 1;
                let case = format!("{} / {end:?} / PERIOD {period} / {form:?}", comeback.name);
                let seen = seen.get_mut(prefix).unwrap();
                let highest = *seen.iter().max().unwrap();
                let after = next(&mut con, prefix, period, form);
                assert!(after[0] > highest, "{case}: {after:?} after {highest}");
                let gap = after[0] - highest - 1;
                match end {
                    End::Clean => assert_eq!(gap, 0, "{case}: a clean stop skips nothing"),
                    End::Kill9 => assert!(gap <= 4096, "{case}: a crash skipped {gap}"),
                }
                seen.extend(after);
                // Lowered again after the restart: the seeded witness holds too.
                let key = counter_name(prefix, periods.iter().find(|p| p.0 == *period).unwrap().1);
                run(&mut con, &["DEL", &key]);
                let again = next(&mut con, prefix, period, form);
                assert!(again[0] > *seen.iter().max().unwrap(), "{case}: {again:?}");
                seen.extend(again);
                let distinct: HashSet<u64> = seen.iter().copied().collect();
                assert_eq!(distinct.len(), seen.len(), "{case}: a value repeated");
            }
        }
    }
    eprintln!("{cases} DATESEQ cases: data rolled back across a restart, every way, every end");
    assert!(cases >= 72);
}

/// Without the witness file (`idgen.dateseq-witness-file ""`), DATESEQ's witness lives in
/// memory only: a restart from an older RDB loses it with the counters (the Guarantees row
/// "DATESEQ.NEXT values of one prefix and day", without a witness file). The documented
/// recovery, `INCRBY` above the highest value the database holds, carries the day on without a
/// repeat. This is also the break check of the witness file: turned off, values repeat.
#[test]
fn dateseq_from_an_older_rdb_without_the_witness_file_is_the_guarantees_row_and_raising_the_counter_recovers(
) {
    let dir = idgen_tests::data_dir("matrix-dateseq-restore");
    let options = Options {
        dir: Some(dir.to_path_buf()),
        config_lines: vec!["idgen.dateseq-witness-file \"\"".into()],
        ..Options::default()
    };
    let mut server = Server::start_with(options.clone());
    let mut con = server.connection();
    let next = |con: &mut redis::Connection| -> u64 {
        cmd(&["DATESEQ.NEXT", "invoice"]).query(con).unwrap()
    };
    next(&mut con);
    run(&mut con, &["SAVE"]);
    let handed: Vec<u64> = (0..5).map(|_| next(&mut con)).collect();
    server.kill9();
    let server = Server::start_with(options);
    let mut con = server.connection();
    let key = counter_name("invoice", Period::Day);
    let held: u64 = cmd(&["GET", &key]).query(&mut con).unwrap();
    let highest_seq = handed.iter().max().unwrap() % 1_000_000;
    assert!(
        held < highest_seq,
        "the older RDB holds {held}: the hazard was not set up"
    );
    let repeated = next(&mut con);
    assert!(
        handed.contains(&repeated),
        "without the witness file the older RDB repeats a value: {repeated} after {handed:?}"
    );
    run(
        &mut con,
        &["INCRBY", &key, &(highest_seq - held).to_string()],
    );
    let after = next(&mut con);
    assert!(after > *handed.iter().max().unwrap());
}

/// What lease holders were told: their grants, and the highest UNTIL of each worker ID.
#[derive(Default)]
struct Told {
    grants: Vec<(String, [i64; 4])>,
    until: std::collections::HashMap<(String, i64), i64>,
}

impl Told {
    fn tell(&mut self, ns: &str, grant: [i64; 4], until: i64) {
        let high = self
            .until
            .entry((ns.to_string(), grant[0]))
            .or_insert(until);
        *high = (*high).max(until);
        self.grants.push((ns.to_string(), grant));
    }

    /// The first grant in `ns`.
    fn holder(&self, ns: &str) -> [i64; 4] {
        self.grants.iter().find(|(n, _)| n == ns).unwrap().1
    }

    fn until(&self, ns: &str, worker_id: i64) -> i64 {
        self.until
            .get(&(ns.to_string(), worker_id))
            .copied()
            .unwrap_or(0)
    }
}

/// `WORKERID.ACQUIRE ns TTL 10000 MAX 4`: `[worker_id, token, expires_at_ms, start_above_ms]`;
/// a lease that outlives a restart.
fn acquire(con: &mut redis::Connection, ns: &str) -> [i64; 4] {
    let v: Vec<i64> = cmd(&["WORKERID.ACQUIRE", ns, "TTL", "10000", "MAX", "4"])
        .query(con)
        .unwrap();
    v.try_into().unwrap()
}

/// Every way a coordinator's data comes back at a restart, after a crash or a clean stop, for
/// a namespace written after the copies were taken and one that was not: with the lease
/// witness file, no grant starts below an UNTIL its worker ID's holder was told of and no token
/// repeats. A namespace that holds everything its holders were told grants usable leases at
/// once and its holders renew; one that lost any of it is reset (its leases void, grants a
/// horizon above the restart).
#[test]
fn lease_namespaces_rolled_back_across_a_restart_hand_out_no_worker_id_twice() {
    const HORIZON_MS: i64 = 30_000;
    let mut cases = 0;
    for comeback in comebacks() {
        for end in [End::Kill9, End::Clean] {
            let dir = idgen_tests::data_dir("matrix-lease-restart");
            let options = Options {
                dir: Some(dir.to_path_buf()),
                ..Options::default().server(comeback.persistence)
            };
            let mut server = idgen_tests::lease::coordinator_past_its_first_fence(options.clone());
            let mut con = server.connection();
            let mut told = Told::default();
            for ns in ["changed", "kept"] {
                let grant = acquire(&mut con, ns);
                told.tell(ns, grant, grant[3]);
            }
            run(&mut con, &["SAVE"]);
            std::fs::copy(dir.join("dump.rdb"), dir.join("older.rdb")).unwrap();
            if dir.join("appendonlydir").exists() {
                aof_written(&mut con);
                copy_dir(&dir.join("appendonlydir"), &dir.join("older-aof"));
            }
            let held = told.holder("changed");
            let renewed =
                idgen_tests::lease::renew_for(&mut con, "changed", &held, 10_000).unwrap();
            told.tell("changed", held, renewed[1]);
            let second = acquire(&mut con, "changed");
            told.tell("changed", second, second[3]);
            drop(con);
            match end {
                End::Kill9 => server.kill9(),
                End::Clean => server.shutdown(),
            }
            (comeback.put_back)(&dir);
            let restarted_at = now_ms();
            let server = Server::start_with(options);
            let mut con = server.connection();
            for ns in ["changed", "kept"] {
                cases += 1;
                let case = format!("{} / {end:?} / namespace {ns}", comeback.name);
                let lost = match comeback.loses {
                    Loses::Nothing => false,
                    Loses::SinceTheCopy => ns == "changed",
                    Loses::Everything => true,
                };
                let holder = told.holder(ns);
                let renewal = idgen_tests::lease::renew_for(&mut con, ns, &holder, 10_000);
                match (&renewal, lost) {
                    (Ok(_), false) => {}
                    (Err(e), true) => {
                        assert!(idgen_tests::error_text(e).contains("void"), "{case}: {e:?}")
                    }
                    _ => panic!("{case}: a holder's RENEW after the restart gave {renewal:?}"),
                }
                if let Ok(r) = &renewal {
                    told.tell(ns, holder, r[1]);
                }
                let top = told.grants.iter().map(|(_, g)| g[1]).max().unwrap();
                let mut granted = Vec::new();
                while let Ok(v) = cmd(&["WORKERID.ACQUIRE", ns, "TTL", "2000", "MAX", "4"])
                    .query::<Vec<i64>>(&mut con)
                {
                    granted.push(<[i64; 4]>::try_from(v).unwrap());
                }
                assert!(!granted.is_empty(), "{case}: nothing granted");
                for grant in &granted {
                    assert!(grant[1] > top, "{case}: token {} repeats", grant[1]);
                    let above = told.until(ns, grant[0]);
                    assert!(
                        grant[3] >= above,
                        "{case}: worker ID {} granted above {}, below the {above} its holder was \
                         told",
                        grant[0],
                        grant[3]
                    );
                    if lost {
                        assert!(grant[3] >= restarted_at + HORIZON_MS, "{case}: {grant:?}");
                    }
                }
                if !lost {
                    // A worker ID never leased: usable at once, no fence.
                    let fresh = granted.iter().map(|g| g[3]).min().unwrap();
                    assert!(
                        fresh < restarted_at + 1_000,
                        "{case}: the first usable lease starts above {fresh}, {} ms after the \
                         restart",
                        fresh - restarted_at
                    );
                }
            }
        }
    }
    eprintln!("{cases} lease cases: a coordinator's data rolled back across a restart");
    assert!(cases >= 16);
}
