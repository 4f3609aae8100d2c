//! Failover after a partition: values the old primary acknowledged but never replicated must not
//! be handed out again by the replica promoted in its place (`idgen.dateseq-failover-gap`).
//!
//! The replication link is cut with iptables DROP rules on loopback (root), under load from four
//! clients; the old primary is then killed with SIGKILL and the replica promoted.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idgen_tests::partition::Partition;
use idgen_tests::{cmd, wait_for, Server};

/// Prefixes used throughout, and one first used during the partition, which the replica
/// therefore never hears of.
const PREFIXES: [&str; 2] = ["order", "{eu}:invoice"];
const LATE_PREFIX: &str = "refund";
/// Values issued before the partition and during it.
const BEFORE: usize = 2_000;
const DURING: usize = 2_000;

/// Values per prefix: those the old primary acknowledged, and those the promoted replica gave.
struct Outcome {
    old: HashMap<String, Vec<i64>>,
    new: HashMap<String, Vec<i64>>,
    promoted: Server,
}

fn partitioned_failover(gap: &str) -> Outcome {
    let args = ["worker-id", "1", "dateseq-failover-gap", gap];
    let mut primary = Server::start(&args);
    let replica = Server::start(&["worker-id", "2", "dateseq-failover-gap", gap]);
    replica.replicate(&primary);

    // Four clients issue values from the primary until told to stop.
    let issued = Arc::new(AtomicUsize::new(0));
    let partitioned = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let old = Arc::new(Mutex::new(HashMap::<String, Vec<i64>>::new()));
    let clients: Vec<_> = (0..4)
        .map(|t| {
            let (issued, partitioned, stop, old) = (
                issued.clone(),
                partitioned.clone(),
                stop.clone(),
                old.clone(),
            );
            let mut con = primary.connection();
            std::thread::spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let prefix = match (partitioned.load(Ordering::Relaxed), (i + t) % 3) {
                        (true, 2) => LATE_PREFIX,
                        (_, k) => PREFIXES[k % 2],
                    };
                    let v: i64 = cmd(&["DATESEQ.NEXT", prefix]).query(&mut con).unwrap();
                    old.lock()
                        .unwrap()
                        .entry(prefix.into())
                        .or_default()
                        .push(v);
                    issued.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let reached = |n: usize| {
        wait_for(Duration::from_secs(60), || {
            issued.load(Ordering::Relaxed) >= n
        })
    };
    assert!(reached(BEFORE));
    let partition = Partition::replication_link(&primary)
        .unwrap_or_else(|e| panic!("the failover test cuts a link with iptables: {e}"));
    partitioned.store(true, Ordering::Relaxed);
    assert!(reached(BEFORE + DURING));
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    // The partition is real: the replica does not acknowledge the primary's latest write (WAIT
    // waits for the offset of its own connection's last write).
    let mut con = primary.connection();
    let last: i64 = cmd(&["DATESEQ.NEXT", PREFIXES[0]]).query(&mut con).unwrap();
    let mut old = std::mem::take(&mut *old.lock().unwrap());
    old.get_mut(PREFIXES[0]).unwrap().push(last);
    let acked: i64 = cmd(&["WAIT", "1", "300"]).query(&mut con).unwrap();
    assert_eq!(
        acked, 0,
        "the replica still hears its primary: no partition"
    );

    // The primary dies; the replica is promoted before the link could heal (the dead primary's
    // kernel would otherwise still deliver what it had buffered).
    primary.kill9();
    let mut r = replica.connection();
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    let mut new = HashMap::<String, Vec<i64>>::new();
    for _ in 0..200 {
        for prefix in PREFIXES.iter().chain([&LATE_PREFIX]) {
            let v: i64 = cmd(&["DATESEQ.NEXT", prefix]).query(&mut r).unwrap();
            new.entry(prefix.to_string()).or_default().push(v);
        }
    }
    drop(partition);
    Outcome {
        old,
        new,
        promoted: replica,
    }
}

fn repeats(outcome: &Outcome) -> Vec<i64> {
    let old: HashSet<i64> = outcome.old.values().flatten().copied().collect();
    let mut repeated: Vec<i64> = outcome
        .new
        .values()
        .flatten()
        .copied()
        .filter(|v| old.contains(v))
        .collect();
    repeated.sort_unstable();
    repeated
}

#[test]
fn a_promoted_replica_skips_what_its_old_primary_may_have_issued() {
    if idgen_tests::needs::root_missing(
        "a_promoted_replica_skips_what_its_old_primary_may_have_issued",
    ) {
        return;
    }
    let outcome = partitioned_failover("10000");
    let repeated = repeats(&outcome);
    assert!(repeated.is_empty(), "values issued twice: {repeated:?}");
    for (prefix, values) in &outcome.new {
        let old_max = outcome.old[prefix].iter().max().unwrap();
        let new_min = values.iter().min().unwrap();
        assert!(new_min > old_max, "{prefix}: {new_min} not above {old_max}");
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "{prefix} not increasing"
        );
        assert!(
            new_min - old_max <= 10_000,
            "{prefix}: skipped more than the gap"
        );
    }
    let p = &outcome.promoted;
    assert_eq!(p.info_field("dateseq_promotions"), "1");
    assert_eq!(
        p.info_field("dateseq_failover_gaps_taken"),
        "3",
        "once per counter"
    );
    assert_eq!(p.info_field("dateseq_failover_values_skipped"), "30000");
}

/// The same failover with the gap switched off repeats values: the partition above is real and
/// the check above would catch a repeat.
#[test]
fn without_the_gap_the_promoted_replica_repeats_values() {
    if idgen_tests::needs::root_missing("without_the_gap_the_promoted_replica_repeats_values") {
        return;
    }
    let outcome = partitioned_failover("0");
    let repeated = repeats(&outcome);
    assert!(
        !repeated.is_empty(),
        "no repeat without the gap: the partition lost nothing"
    );
    eprintln!(
        "without the gap, {} values were issued twice",
        repeated.len()
    );
    assert_eq!(
        outcome
            .promoted
            .info_field("dateseq_failover_values_skipped"),
        "0"
    );
}
