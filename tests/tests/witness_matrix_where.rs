//! The witness matrix's "where" dimension: a DATESEQ counter lost on each node its state can
//! reach (the node that issued it, a replica promoted in its place, the node it was migrated to,
//! and the node it came back to after another issued from it), every way `witness_matrix.rs`
//! loses it while running, plus kill -9 with and without persistence. Each case issues on the
//! first node, moves the counter, loses it where it is now, issues there again, and asserts no
//! value repeats (or the refusal that names the state). A case is two fresh servers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idgen_core::dateseq::{counter_key, Calendar, Period};
use idgen_tests::losses::{assert_carried_on, dateseq_ways, run, Outcome, Way};
use idgen_tests::redis;
use idgen_tests::{cmd, error_of, now_ms, wait_for, Options, Server};

/// Where the counter is when it is lost.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// The node that issued it.
    Issuer,
    /// Its replica, promoted.
    PromotedReplica,
    /// The node it was migrated to.
    MigratedTo,
    /// The node that issued it, after it was migrated away, issued from there, and migrated back.
    MovedBack,
}

/// How it is lost.
enum Loss {
    /// One of the ways a running server loses it.
    Running(Way),
    /// kill -9 of the node holding it and a restart, with an AOF (`appendfsync everysec`) or
    /// with no persistence at all.
    Kill9 { aof: bool },
}

const PREFIX: &str = "where";

fn key() -> String {
    let date = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), Period::Day)
        .date;
    let mut out = Vec::new();
    counter_key(PREFIX.as_bytes(), date, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn next(server: &Server, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| {
            cmd(&["DATESEQ.NEXT", PREFIX])
                .query::<i64>(&mut server.connection())
                .unwrap() as u64
        })
        .collect()
}

/// A server of a case; for the kill cases, with an AOF (`aof`) or no persistence, in `dir` so
/// that it can start again where it was.
fn options(kill: Option<(bool, &std::path::Path)>) -> Options {
    let mut options = Options {
        // No failover gap: a promoted replica's counters carry on exactly where they reached it.
        module_args: vec!["dateseq-failover-gap".into(), "0".into()],
        ..Options::default()
    }
    .server(&["--enable-debug-command", "yes", "--databases", "4"]);
    if let Some((aof, dir)) = kill {
        options.dir = Some(dir.to_path_buf());
        if aof {
            options = options.server(&["--appendonly", "yes", "--appendfsync", "everysec"]);
        }
    }
    options
}

/// SAVE, once the fork of a replica's full sync (which SAVE waits for no more than it) is done.
fn save(server: &Server) {
    let saved = wait_for(Duration::from_secs(10), || {
        cmd(&["SAVE"]).query::<()>(&mut server.connection()).is_ok()
    });
    assert!(saved, "SAVE was refused for 10 s");
}

fn migrate(from: &Server, to: &Server, key: &str) {
    let port = to.port.to_string();
    run(
        &mut from.connection(),
        &["MIGRATE", "127.0.0.1", &port, key, "0", "5000"],
    );
}

/// One case: the values handed out, every one checked unique; panics naming the case. False
/// when the case cannot run here: state moved by MIGRATE on a server that does not witness it
/// on arrival (Valkey 8.1 and later: docs/module.md, and docs/guarantees.md).
fn case(place: Place, loss: &Loss) -> bool {
    let dirs = [
        idgen_tests::data_dir("where-a"),
        idgen_tests::data_dir("where-b"),
    ];
    let kill = |i: usize| match loss {
        Loss::Kill9 { aof } => Some((*aof, &*dirs[i])),
        Loss::Running(_) => None,
    };
    let name = match loss {
        Loss::Running(way) => way.name.to_string(),
        Loss::Kill9 { aof: true } => "kill -9, AOF everysec".into(),
        Loss::Kill9 { aof: false } => "kill -9, no persistence".into(),
    };
    let case = format!("{place:?} / {name}");
    let key = key();
    let a = Server::start_with(options(kill(0)));
    let b = Server::start_with(options(kill(1)));
    let migrated = matches!(place, Place::MigratedTo | Place::MovedBack);
    if migrated && a.info_field("arrivals_witnessed") == "0" {
        return false;
    }
    if let Place::PromotedReplica = place {
        b.replicate(&a);
    }
    let mut seen = next(&a, 1);
    let older: Vec<u8> = redis::cmd("DUMP")
        .arg(&key)
        .query(&mut a.connection())
        .unwrap();
    // The RDB of the node that will hold the counter, older than what follows.
    save(&a);
    save(&b);
    seen.extend(next(&a, 2));
    let mut holder = match place {
        Place::Issuer => a,
        Place::PromotedReplica => {
            // Promoted once it holds every value: what never reached it is the failover gap's.
            let held = |server: &Server| {
                cmd(&["GET", &key])
                    .query::<Option<u64>>(&mut server.connection())
                    .unwrap()
            };
            let reached = wait_for(Duration::from_secs(10), || held(&b) == held(&a));
            assert!(reached, "{case}: the replica never received the counter");
            run(&mut b.connection(), &["REPLICAOF", "NO", "ONE"]);
            b
        }
        Place::MigratedTo => {
            migrate(&a, &b, &key);
            b
        }
        Place::MovedBack => {
            migrate(&a, &b, &key);
            seen.extend(next(&b, 2));
            migrate(&b, &a, &key);
            a
        }
    };
    let mut con = holder.connection();
    let _: () = redis::cmd("RESTORE")
        .arg(format!("backup:{key}"))
        .arg(0)
        .arg(&older)
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    let before: u64 = holder
        .info_field("dateseq_witness_lowered")
        .parse()
        .unwrap();
    match loss {
        Loss::Running(way) => {
            (way.lose)(&mut con, &key, &older);
            if let Outcome::Refused(says) = way.outcome {
                let err = error_of(&mut con, &cmd(&["DATESEQ.NEXT", PREFIX]));
                assert!(err.contains(says), "{case}: {err}");
                run(&mut con, &["DEL", &key]);
            }
        }
        Loss::Kill9 { .. } => {
            drop(con);
            holder.kill9();
            let i = usize::from(holder.dir != *dirs[0]);
            holder = Server::start_with(Options {
                port: Some(holder.port),
                ..options(kill(i))
            });
        }
    }
    assert_carried_on(&case, &mut seen, next(&holder, 3));
    if let Loss::Running(_) = loss {
        let lowered: u64 = holder
            .info_field("dateseq_witness_lowered")
            .parse()
            .unwrap();
        assert!(
            lowered > before,
            "{case}: the witness did not count the loss"
        );
    }
    true
}

static CASES: AtomicUsize = AtomicUsize::new(0);

fn every_loss_at(place: Place) {
    let mut losses: Vec<Loss> = dateseq_ways().into_iter().map(Loss::Running).collect();
    losses.push(Loss::Kill9 { aof: true });
    losses.push(Loss::Kill9 { aof: false });
    let ran = losses.iter().filter(|loss| case(place, loss)).count();
    if ran == 0 {
        eprintln!("{place:?}: this server does not witness moved state on arrival");
        return;
    }
    assert_eq!(ran, losses.len());
    let all = CASES.fetch_add(losses.len(), Ordering::Relaxed) + losses.len();
    eprintln!(
        "{} DATESEQ cases at {place:?} ({all} of the where-matrix's so far)",
        losses.len()
    );
    assert!(losses.len() >= 24);
}

#[test]
fn lost_on_the_node_that_issued_it() {
    every_loss_at(Place::Issuer);
}

#[test]
fn lost_on_a_replica_promoted_in_its_place() {
    every_loss_at(Place::PromotedReplica);
}

#[test]
fn lost_on_the_node_it_was_migrated_to() {
    every_loss_at(Place::MigratedTo);
}

#[test]
fn lost_on_the_node_it_came_back_to() {
    every_loss_at(Place::MovedBack);
}
