//! The windows the docs give for a failover, measured under a real partition (iptables on
//! loopback). The DATESEQ failover gap's sizing: with `min-replicas-to-write 1` and
//! `min-replicas-max-lag s`, a primary cut off from its replica (iptables on loopback) goes on
//! acknowledging values for at most `s + 2` seconds (Redis reads the lag in whole seconds from
//! acknowledgements sent once a second, and checks it once a second). docs/module.md
//! ("Failover") sizes the gap as the peak rate × (s + 2 s) and quotes this test's figures. And
//! the lease's window without `replicas` (docs/leases.md, "Coordinator failover").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idgen_tests::lease::coordinator_past_its_first_fence;
use idgen_tests::partition::Partition;
use idgen_tests::{cmd, error_text, now_ms, wait_for, Options, Server};

/// `min-replicas-max-lag`, in seconds.
const LAG_S: u64 = 2;

#[test]
fn a_primary_cut_off_from_its_replica_acknowledges_for_at_most_the_lag_and_two_seconds() {
    let lag = LAG_S.to_string();
    let primary = Server::start_with(Options::module(&["worker-id", "1"]).server(&[
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        &lag,
    ]));
    let replica = Server::start(&["worker-id", "2"]);
    replica.replicate(&primary);
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    // When each value was acknowledged, since `started`; and the first refusal's text.
    let acked: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let refusal: Arc<Mutex<Option<String>>> = Arc::default();
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (stop, acked, refusal) = (stop.clone(), acked.clone(), refusal.clone());
            let mut con = primary.connection();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match cmd(&["DATESEQ.NEXT", "window"]).query::<i64>(&mut con) {
                        Ok(_) => acked.lock().unwrap().push(started.elapsed()),
                        Err(e) => {
                            refusal.lock().unwrap().get_or_insert(error_text(&e));
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let cut_at = started.elapsed();
    let partition = Partition::replication_link(&primary)
        .unwrap_or_else(|e| panic!("the window test cuts a link with iptables: {e}"));
    let refused = wait_for(Duration::from_secs(LAG_S + 10), || {
        refusal.lock().unwrap().is_some()
    });
    // A little longer: nothing is acknowledged after the first refusal.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    drop(partition);
    assert!(refused, "the primary never stopped writing");
    let refusal = refusal.lock().unwrap().clone().unwrap();
    assert!(refusal.starts_with("NOREPLICAS"), "{refusal}");

    let acked = acked.lock().unwrap();
    let before: Vec<&Duration> = acked.iter().filter(|t| **t < cut_at).collect();
    let after: Vec<&Duration> = acked.iter().filter(|t| **t >= cut_at).collect();
    let rate = before.len() as f64 / cut_at.as_secs_f64();
    let window = after.last().map_or(Duration::ZERO, |last| **last - cut_at);
    let bound = Duration::from_secs(LAG_S + 2);
    eprintln!(
        "min-replicas-max-lag {LAG_S}: acknowledged for {} ms after the cut ({} values at {:.0} \
         values/s; the docs' bound is {} ms, {:.0} values)",
        window.as_millis(),
        after.len(),
        rate,
        bound.as_millis(),
        rate * bound.as_secs_f64()
    );
    assert!(
        window <= bound,
        "acknowledged for {window:?} after the cut, over the lag and two seconds"
    );
    assert!(
        !after.is_empty(),
        "nothing was acknowledged after the cut: no window measured"
    );
}

/// The lease's window of risk without `replicas`: a renewal the old primary acknowledged and
/// never replicated (the holder may use times up to its UNTIL) is lost with it, yet the
/// promoted replica's first grant of that worker ID starts above that UNTIL, because a
/// promotion fences every grant for a horizon (docs/leases.md, "Coordinator failover").
#[test]
fn a_renewal_lost_in_a_failover_is_below_every_grant_of_the_promoted_replica() {
    let primary = coordinator_past_its_first_fence(Options::module(&["worker-id", "1"]));
    // Without the lease witness file, which would fence the namespace it never saw too: the
    // promotion's fence alone.
    let replica = coordinator_past_its_first_fence(Options {
        config_lines: vec!["idgen.workerid-witness-file \"\"".into()],
        ..Options::module(&["worker-id", "2"])
    });
    replica.replicate(&primary);
    let mut p = primary.connection();
    let held: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "2000", "MAX", "1"])
        .query(&mut p)
        .unwrap();
    let (worker, token) = (held[0].to_string(), held[1].to_string());
    let _: i64 = cmd(&["WAIT", "1", "2000"]).query(&mut p).unwrap();
    let partition = Partition::replication_link(&primary)
        .unwrap_or_else(|e| panic!("the window test cuts a link with iptables: {e}"));
    // Acknowledged by the primary alone: the holder may now use times up to `lost_until`.
    let lost_until = now_ms() + 1_900;
    let renewed: Vec<i64> = cmd(&[
        "WORKERID.RENEW",
        "fleet",
        &worker,
        &token,
        "TTL",
        "2000",
        "UNTIL",
        &lost_until.to_string(),
    ])
    .query(&mut p)
    .unwrap();
    assert_eq!(renewed[1], lost_until);
    let acked: i64 = cmd(&["WAIT", "1", "300"]).query(&mut p).unwrap();
    assert_eq!(
        acked, 0,
        "the replica still hears its primary: no partition"
    );
    drop(p);
    let mut primary = primary;
    primary.kill9();
    let mut r = replica.connection();
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"]).query(&mut r).unwrap();
    drop(partition);
    // The worker ID is free on the promoted copy once the replicated lease ends.
    let mut grant: Vec<i64> = Vec::new();
    let freed = wait_for(Duration::from_secs(5), || {
        grant = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "2000", "MAX", "1"])
            .query(&mut r)
            .unwrap_or_default();
        !grant.is_empty()
    });
    assert!(freed, "the worker ID was never granted again");
    let margin = grant[3] - lost_until;
    eprintln!(
        "a renewal lost in the failover let its holder use times up to {lost_until}; the \
         promoted replica's grant of the same worker ID starts {margin} ms above that"
    );
    assert!(
        margin > 0,
        "worker ID {} granted to start above {}, below the lost renewal's UNTIL {lost_until}",
        grant[0],
        grant[3]
    );
}
