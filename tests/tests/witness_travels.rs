//! A witness belongs to the state, not to the node: a DATESEQ counter or a lease namespace that
//! reaches a node from another (replication and promotion, MIGRATE, DUMP/RESTORE, COPY) is
//! witnessed there as it arrives, so that losing it on the node that received it repeats
//! nothing the first node handed out.

use std::time::Duration;

use idgen_tests::lease::coordinator_past_its_first_fence;
use idgen_tests::redis;
use idgen_tests::{cmd, wait_for, Options, Server};

/// No failover gap: a promoted replica's counters carry on exactly where they reached it, so
/// only its witness can keep a lost counter from starting again.
const NO_GAP: [&str; 2] = ["dateseq-failover-gap", "0"];

fn next(server: &Server, prefix: &str) -> i64 {
    cmd(&["DATESEQ.NEXT", prefix])
        .query(&mut server.connection())
        .unwrap()
}

/// The counter key of `prefix` today, as the server named it.
fn counter_key(server: &Server, prefix: &str) -> String {
    let keys: Vec<String> = cmd(&["KEYS", &format!("{{{prefix}}}:*")])
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    keys[0].clone()
}

/// Whether `server` witnesses state moved to it (not on Valkey 8.1 and later: docs/module.md);
/// says so when it does not.
fn witnesses_arrivals(server: &Server) -> bool {
    let witnessed = server.info_field("arrivals_witnessed") == "1";
    if !witnessed {
        eprintln!("this server does not witness moved state on arrival (docs/guarantees.md)");
    }
    witnessed
}

fn del(server: &Server, key: &str) {
    let _: i64 = cmd(&["DEL", key]).query(&mut server.connection()).unwrap();
}

#[test]
fn a_promoted_replica_carries_on_above_what_reached_it_though_its_counter_is_lost() {
    let primary = Server::start(&["worker-id", "1"]);
    let replica = Server::start(&["worker-id", "2", NO_GAP[0], NO_GAP[1]]);
    // Values before the replica attaches reach it in the full sync's RDB; those after, one by
    // one.
    let before: Vec<i64> = (0..20).map(|_| next(&primary, "synced")).collect();
    replica.replicate(&primary);
    let after: Vec<i64> = (0..30).map(|_| next(&primary, "streamed")).collect();
    let key = counter_key(&primary, "streamed");
    let reached = wait_for(Duration::from_secs(10), || {
        cmd(&["GET", &key])
            .query::<Option<i64>>(&mut replica.connection())
            .unwrap()
            == Some(30)
    });
    assert!(reached, "the replica never received the counter");
    let _: () = cmd(&["REPLICAOF", "NO", "ONE"])
        .query(&mut replica.connection())
        .unwrap();
    for (prefix, issued) in [("synced", &before), ("streamed", &after)] {
        del(&replica, &counter_key(&replica, prefix));
        let value = next(&replica, prefix);
        let last = *issued.last().unwrap();
        assert!(
            value > last,
            "{prefix}: the promoted replica lost its counter and handed out {value} again \
             (its primary went up to {last})"
        );
    }
    assert_eq!(replica.info_field("dateseq_witness_lowered"), "2");
}

/// `key` of `from`, put on `to` as `as_key` by DUMP and RESTORE.
fn dump_and_restore(from: &Server, key: &str, to: &Server, as_key: &str) {
    let payload: Vec<u8> = cmd(&["DUMP", key]).query(&mut from.connection()).unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg(as_key)
        .arg(0)
        .arg(payload)
        .query(&mut to.connection())
        .unwrap();
}

#[test]
fn a_counter_moved_to_another_node_carries_on_above_what_it_brought() {
    let source = Server::start(&["worker-id", "1"]);
    let migrated_to = Server::start(&["worker-id", "2"]);
    let restored_to = Server::start(&["worker-id", "3"]);
    if !witnesses_arrivals(&migrated_to) {
        return;
    }
    for prefix in ["migrated", "dumped", "copied"] {
        for _ in 0..10 {
            next(&source, prefix);
        }
    }
    // MIGRATE.
    let key = counter_key(&source, "migrated");
    let port = migrated_to.port.to_string();
    let _: () = cmd(&["MIGRATE", "127.0.0.1", &port, &key, "0", "5000"])
        .query(&mut source.connection())
        .unwrap();
    // DUMP and RESTORE, as a backup tool moves a key.
    let dumped = counter_key(&source, "dumped");
    dump_and_restore(&source, &dumped, &restored_to, &dumped);
    // COPY on the node that received it: the copy is a counter of its own.
    let copied = counter_key(&source, "copied");
    let staged = "staging";
    dump_and_restore(&source, &copied, &restored_to, staged);
    let _: i64 = cmd(&["COPY", staged, &copied])
        .query(&mut restored_to.connection())
        .unwrap();
    for (node, prefix, key) in [
        (&migrated_to, "migrated", key),
        (&restored_to, "dumped", dumped),
        (&restored_to, "copied", copied),
    ] {
        del(node, &key);
        let value = next(node, prefix);
        assert!(
            value % 1_000_000 > 10,
            "{prefix}: the node it moved to lost it and handed out {value} again"
        );
    }
}

#[test]
fn a_namespace_moved_in_and_lost_grants_no_worker_id_over_a_live_holder() {
    let source = coordinator_past_its_first_fence(Options::default());
    let target = coordinator_past_its_first_fence(Options::default());
    if !witnesses_arrivals(&target) {
        return;
    }
    let held: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "30000", "MAX", "1"])
        .query(&mut source.connection())
        .unwrap();
    let port = target.port.to_string();
    let _: () = cmd(&["MIGRATE", "127.0.0.1", &port, "fleet", "0", "5000"])
        .query(&mut source.connection())
        .unwrap();
    // Lost on the node it moved to before anything was written there.
    del(&target, "fleet");
    let grant: Vec<i64> = cmd(&["WORKERID.ACQUIRE", "fleet", "TTL", "2000", "MAX", "1"])
        .query(&mut target.connection())
        .unwrap();
    assert_eq!(grant[0], held[0], "a pool of one worker ID");
    assert!(
        grant[3] >= held[2],
        "worker ID {} granted to start above {} while its holder's lease runs to {}",
        grant[0],
        grant[3],
        held[2]
    );
}
