//! Leases across a split brain: a primary cut off from its replica (and its Sentinel) while its
//! clients still reach it, and the replica promoted. The module acknowledges a grant or renewal
//! only once a replica holds it (`idgen.workerid-ack-replicas`, auto by default), so the old
//! primary stops extending leases at the cut and no worker ID has two live holders
//! (docs/leases.md, "Coordinator failover", quotes the windows measured here).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idgen_tests::lease::coordinator_past_its_first_fence;
use idgen_tests::partition::Partition;
use idgen_tests::sentinel::Sentinel;
use idgen_tests::{cmd, error_text, now_ms, wait_for, Options, Server};

/// The form, by hand: the replica leaves (`REPLICAOF NO ONE`) while the primary's
/// holder renews every 300 ms; 3.3 s later the promoted replica grants the worker ID again,
/// above every UNTIL the primary acknowledged meanwhile (it acknowledged none: its replica
/// was gone).
#[test]
fn a_primary_whose_replica_left_extends_no_lease_the_promoted_replica_does_not_know() {
    let horizon = ["workerid-horizon-ms", "3000"];
    let primary = Server::start(&["worker-id", "1", horizon[0], horizon[1]]);
    let replica = Server::start(&["worker-id", "2", horizon[0], horizon[1]]);
    primary.wait_past_lease_fence();
    replica.replicate(&primary);
    let mut p = primary.connection();
    let grant: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "ns", "TTL", "1500", "MAX", "1"])
        .query(&mut p)
        .unwrap();
    let (worker, token) = (grant[0].to_string(), grant[1].to_string());
    let mut acknowledged_until = grant[2];
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut replica.connection())
        .unwrap();
    let promoted_at = Instant::now();
    let mut refusals = Vec::new();
    while promoted_at.elapsed() < Duration::from_millis(3_300) {
        let until = (now_ms() + 1_500).to_string();
        let renewal = [
            "WORKERID.RENEW",
            "ns",
            &worker,
            &token,
            "TTL",
            "1500",
            "UNTIL",
            &until,
        ];
        match cmd(&renewal).query::<Vec<i64>>(&mut p) {
            Ok(renewed) => acknowledged_until = acknowledged_until.max(renewed[1]),
            Err(e) => refusals.push(error_text(&e)),
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        !refusals.is_empty() && refusals.iter().all(|r| r.starts_with("NOREPLICAS")),
        "renewals after the replica left: {refusals:?}"
    );
    let regrant: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "ns", "TTL", "1500", "MAX", "1"])
        .query(&mut replica.connection())
        .unwrap();
    eprintln!(
        "the replica left: {} renewals refused on the old primary; the promoted replica's grant \
         starts {} ms above the last UNTIL the old primary acknowledged",
        refusals.len(),
        regrant[3] - acknowledged_until
    );
    assert!(
        regrant[3] >= acknowledged_until,
        "worker ID {} granted above {}, below the UNTIL {acknowledged_until} its old holder was told",
        regrant[0],
        regrant[3]
    );
}

/// Inside MULTI no client can wait for a replica: refused before anything is written.
#[test]
fn a_lease_write_that_cannot_wait_for_a_replica_is_refused_unwritten() {
    let primary = coordinator_past_its_first_fence(Options::module(&["worker-id", "1"]));
    let replica = Server::start(&["worker-id", "2"]);
    replica.replicate(&primary);
    let mut p = primary.connection();
    let _: () = cmd(&["MULTI"]).query(&mut p).unwrap();
    let _: () = cmd(&["WORKERID.ACQUIRE", "ns", "TTL", "1500"])
        .query(&mut p)
        .unwrap();
    let text = match cmd(&["EXEC"]).query::<redis::Value>(&mut p) {
        Ok(replies) => format!("{replies:?}"),
        Err(e) => error_text(&e),
    };
    assert!(
        text.contains("cannot wait for a replica inside MULTI"),
        "{text}"
    );
    let exists: i64 = cmd(&["EXISTS", "ns"]).query(&mut p).unwrap();
    assert_eq!(exists, 0, "the refused grant was written");
    // Told to go without (an operator's choice), the same grant is acknowledged.
    let _: () = cmd(&["CONFIG", "SET", "idgen.workerid-ack-replicas", "0"])
        .query(&mut p)
        .unwrap();
    let _: () = cmd(&["MULTI"]).query(&mut p).unwrap();
    let _: () = cmd(&["WORKERID.ACQUIRE", "ns", "TTL", "1500"])
        .query(&mut p)
        .unwrap();
    let replies: Vec<Vec<i64>> = cmd(&["EXEC"]).query(&mut p).unwrap();
    assert_eq!(replies[0][0], 0);
}

/// A lease as its holder saw it: the worker ID, where its IDs' times start (above), and the
/// last time any acknowledged renewal let it use (its UNTIL, within its expiry).
#[derive(Clone, Debug)]
struct Held {
    worker: i64,
    above: i64,
    until: Option<i64>,
    on_promoted: bool,
}

/// The split brain with Sentinel: holders on the old primary renew through the cut, others (and
/// the same, once refused) follow Sentinel and take leases from the promoted replica; the
/// leases each holder used, and how long after the cut the old primary acknowledged a
/// renewal. `server` adds the documented settings (or none).
fn split_brain(server: &[&str]) -> (Vec<Held>, Duration) {
    let primary =
        coordinator_past_its_first_fence(Options::module(&["worker-id", "1"]).server(server));
    let replica = coordinator_past_its_first_fence(Options::module(&["worker-id", "2"]));
    // A short horizon, so that the promoted replica's fence passes while the split lasts: the
    // old primary's holders and the promoted replica's then both hold worker IDs.
    for node in [&primary, &replica] {
        let _: () = cmd(&["CONFIG", "SET", "idgen.workerid-horizon-ms", "3000"])
            .query(&mut node.connection())
            .unwrap();
    }
    replica.replicate(&primary);
    let sentinel = Sentinel::watch(&primary, 1_000);
    sentinel.wait_to_know(&replica);
    let (sentinel_port, old_port, promoted_port) = (sentinel.port, primary.port, replica.port);

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let held: Arc<Mutex<Vec<Held>>> = Arc::default();
    // When the old primary last acknowledged anything, since `started`.
    let last_old_ack: Arc<Mutex<Duration>> = Arc::default();
    // Twice as many holders as worker IDs: half wait, and take the IDs the promoted replica
    // grants while the old primary's holders may still renew.
    let holders: Vec<_> = (0..8)
        .map(|_| {
            let (stop, held, last_old_ack) = (stop.clone(), held.clone(), last_old_ack.clone());
            std::thread::spawn(move || {
                let mut port = old_port;
                let mut con = named(port);
                while !stop.load(Ordering::Relaxed) {
                    let grant = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "1500", "MAX", "4"])
                        .query::<Vec<i64>>(&mut con);
                    let Ok(grant) = grant else {
                        std::thread::sleep(Duration::from_millis(100));
                        if let Some(now) = Sentinel::master_port_at(sentinel_port) {
                            if now != port {
                                port = now;
                                con = named(port);
                            }
                        }
                        continue;
                    };
                    let index = {
                        let mut held = held.lock().unwrap();
                        held.push(Held {
                            worker: grant[0],
                            above: grant[3],
                            until: None,
                            on_promoted: port == promoted_port,
                        });
                        held.len() - 1
                    };
                    // Renew every 300 ms until refused or the lease lapses.
                    let (w, t) = (grant[0].to_string(), grant[1].to_string());
                    let mut expires = grant[2];
                    while !stop.load(Ordering::Relaxed) && now_ms() < expires {
                        let until = now_ms() + 1_500;
                        let u = until.to_string();
                        let renewal = [
                            "WORKERID.RENEW",
                            "fleet",
                            &w,
                            &t,
                            "TTL",
                            "1500",
                            "UNTIL",
                            &u,
                        ];
                        if let Ok(renewed) = cmd(&renewal).query::<Vec<i64>>(&mut con) {
                            expires = renewed[0];
                            let usable = renewed[1].min(renewed[0]);
                            let mut held = held.lock().unwrap();
                            let h = &mut held[index];
                            h.until = Some(h.until.map_or(usable, |u| u.max(usable)));
                            if port == old_port {
                                *last_old_ack.lock().unwrap() = started.elapsed();
                            }
                        }
                        std::thread::sleep(Duration::from_millis(300));
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2_000));
    let partition = Partition::isolate(&primary, "holder")
        .unwrap_or_else(|e| panic!("the split-brain test cuts links with iptables: {e}"));
    let cut_at = started.elapsed();
    let promoted = wait_for(Duration::from_secs(30), || {
        held.lock()
            .unwrap()
            .iter()
            .filter(|h| h.on_promoted && h.until.is_some())
            .count()
            >= 4
    });
    // Long enough for the old primary's holders to try again and again.
    std::thread::sleep(Duration::from_millis(3_000));
    stop.store(true, Ordering::Relaxed);
    for holder in holders {
        holder.join().unwrap();
    }
    drop(partition);
    assert!(
        promoted,
        "the holders never moved to the promoted replica:\n{}",
        sentinel.log()
    );
    let window = last_old_ack.lock().unwrap().saturating_sub(cut_at);
    let held = held.lock().unwrap().clone();
    (held, window)
}

/// A client connection named `holder`, which the partition leaves talking to the old primary.
fn named(port: u16) -> redis::Connection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut con = client
        .get_connection_with_timeout(Duration::from_secs(2))
        .unwrap();
    con.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _: () = cmd(&["CLIENT", "SETNAME", "holder"])
        .query(&mut con)
        .unwrap();
    con
}

/// No two leases of one worker ID let their holders use one instant; the margin between the
/// old side's last usable time and the promoted side's first grant of each worker ID.
fn assert_no_two_live_holders(held: &[Held], case: &str) -> i64 {
    let mut margin = i64::MAX;
    for worker in 0..4 {
        let mut used: Vec<&Held> = held
            .iter()
            .filter(|h| h.worker == worker && h.until.is_some())
            .collect();
        used.sort_by_key(|h| h.above);
        for pair in used.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            let gap = after.above - before.until.unwrap();
            assert!(
                gap >= 0,
                "{case}: worker ID {worker} held twice: {before:?} and {after:?} overlap by {} ms",
                -gap
            );
            if !before.on_promoted && after.on_promoted {
                margin = margin.min(gap);
            }
        }
    }
    margin
}

#[test]
fn a_sentinel_split_brain_leaves_no_worker_id_with_two_live_holders() {
    if idgen_tests::needs::root_missing(
        "a_sentinel_split_brain_leaves_no_worker_id_with_two_live_holders",
    ) {
        return;
    }
    for (case, server) in [
        ("default settings", &[][..]),
        (
            "min-replicas-to-write 1, min-replicas-max-lag 2",
            &[
                "--min-replicas-to-write",
                "1",
                "--min-replicas-max-lag",
                "2",
            ][..],
        ),
    ] {
        let (held, window) = split_brain(server);
        let margin = assert_no_two_live_holders(&held, case);
        let old = held.iter().filter(|h| !h.on_promoted).count();
        eprintln!(
            "{case}: the old primary acknowledged renewals for {} ms after the cut; {} leases \
             ({old} on the old primary); the promoted replica's first grants start at least \
             {margin} ms above the old holders' last usable time",
            window.as_millis(),
            held.len()
        );
    }
}
