//! A real Redis Cluster on loopback (3 primaries + 3 replicas, the module on every node with its
//! own worker-id): DATESEQ through a cluster client, SNOWFLAKE IDs unique across the nodes,
//! manual and forced failover repeating nothing, and two primaries with one worker-id refusing.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use idgen_tests::cluster::{is_primary, Cluster};
use idgen_tests::partition::Partition;
use idgen_tests::{cmd, error_of, wait_for, Server};
use redis::cluster::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::Value;

/// Worker-id `i + 1` on node `i`.
fn own_worker_ids(i: usize) -> Vec<String> {
    vec!["worker-id".into(), (i + 1).to_string()]
}

/// SNOWFLAKE.NEXT on any primary, as docs/module.md shows: the command has no key to route by.
fn snowflake(con: &mut ClusterConnection) -> i64 {
    let any_primary = RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary);
    match con
        .route_command(&redis::cmd("SNOWFLAKE.NEXT"), any_primary)
        .unwrap()
    {
        Value::Int(id) => id,
        other => panic!("SNOWFLAKE.NEXT replied {other:?}"),
    }
}

/// `n` SNOWFLAKE IDs from every node that is a primary now.
fn ids_from_every_primary(cluster: &Cluster, n: usize) -> Vec<(u16, i64)> {
    let mut ids = Vec::new();
    for node in cluster.nodes.iter().filter(|n| is_primary(n)) {
        let got: Vec<i64> = cmd(&["SNOWFLAKE.NEXT", "COUNT", &n.to_string()])
            .query(&mut node.connection())
            .unwrap();
        ids.extend(got.into_iter().map(|id| (node.port, id)));
    }
    ids
}

fn assert_unique(ids: &[i64], what: &str) {
    let distinct: HashSet<i64> = ids.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        ids.len(),
        "{what}: {} repeated",
        ids.len() - distinct.len()
    );
}

#[test]
fn dateseq_through_a_cluster_client_and_snowflake_ids_unique_across_nodes() {
    let cluster = Cluster::start(3, 1, own_worker_ids);
    let mut con = cluster.client();
    // Prefixes spread over the slots, some sharing a hash tag (one slot, separate counters).
    let prefixes: Vec<String> = (0..60)
        .map(|p| match p % 3 {
            0 => format!("{{tenant{}}}:order", p % 4),
            1 => format!("{{tenant{}}}:invoice{p}", p % 4),
            _ => format!("p{p}"),
        })
        .collect();
    for prefix in &prefixes {
        let values: Vec<i64> = (0..20)
            .map(|_| {
                redis::cmd("DATESEQ.NEXT")
                    .arg(prefix)
                    .query(&mut con)
                    .unwrap()
            })
            .collect();
        assert!(
            values.windows(2).all(|w| w[1] == w[0] + 1),
            "{prefix}: {values:?}"
        );
        let current: i64 = redis::cmd("DATESEQ.CURRENT")
            .arg(prefix)
            .query(&mut con)
            .unwrap();
        assert_eq!(current, *values.last().unwrap(), "{prefix}");
    }
    // The counter keys live where their prefixes route: on each primary, every key is one the
    // node serves (a key in another node's slot would answer MOVED to this GET).
    for node in cluster.nodes.iter().filter(|n| is_primary(n)) {
        let mut c = node.connection();
        let keys: Vec<String> = cmd(&["KEYS", "*"]).query(&mut c).unwrap();
        for key in keys {
            let _: String = cmd(&["GET", &key])
                .query(&mut c)
                .unwrap_or_else(|e| panic!("{key} on :{}: {e}", node.port));
        }
    }

    let mut ids: Vec<i64> = Vec::new();
    let mut workers = HashMap::new();
    for _ in 0..5 {
        for (port, id) in ids_from_every_primary(&cluster, 1000) {
            workers.insert(port, (id >> 12) & 31);
            ids.push(id);
        }
    }
    ids.extend((0..300).map(|_| snowflake(&mut con)));
    assert_unique(&ids, "SNOWFLAKE IDs across the primaries");
    let mut seen: Vec<i64> = workers.values().copied().collect();
    seen.sort();
    assert_eq!(seen.len(), 3, "one worker-id per primary: {workers:?}");
    seen.dedup();
    assert_eq!(
        seen.len(),
        3,
        "the primaries share a worker-id: {workers:?}"
    );
}

#[test]
fn manual_and_forced_failover_repeat_nothing() {
    if idgen_tests::needs::root_missing("manual_and_forced_failover_repeat_nothing") {
        return;
    }
    let mut cluster = Cluster::start(3, 1, own_worker_ids);
    let mut con = cluster.client();
    let prefixes = ["order", "{eu}:invoice", "refund"];
    let mut values: HashMap<&str, Vec<i64>> = HashMap::new();
    let mut ids: Vec<i64> = Vec::new();
    let issue = |con: &mut ClusterConnection, values: &mut HashMap<&str, Vec<i64>>, n: usize| {
        for _ in 0..n {
            for prefix in prefixes {
                let v: i64 = redis::cmd("DATESEQ.NEXT").arg(prefix).query(con).unwrap();
                values.entry(prefix).or_default().push(v);
            }
        }
    };
    issue(&mut con, &mut values, 200);
    ids.extend(
        ids_from_every_primary(&cluster, 2000)
            .into_iter()
            .map(|(_, id)| id),
    );

    // Manual failover of the shard holding "order": its replica takes over without losing writes.
    let seed = cluster.nodes[0].port;
    let shard = cluster.shard_of("{order}:x", seed);
    let (old_primary, replica) = (shard.ports[0], shard.ports[1]);
    cluster.failover_to(replica);
    issue(&mut con, &mut values, 200);
    ids.extend(
        ids_from_every_primary(&cluster, 2000)
            .into_iter()
            .map(|(_, id)| id),
    );

    // Forced failover of the same shard, now led by `replica`: its replica (the old primary) is
    // cut off from it first, so the values issued meanwhile never reach it; then the primary dies.
    let (primary, standby) = (replica, old_primary);
    let partition =
        Partition::replication_link(cluster.node(primary)).unwrap_or_else(|e| panic!("{e}"));
    issue(&mut con, &mut values, 100);
    cluster.node(primary).kill9();
    assert!(
        wait_for(Duration::from_secs(60), || is_primary(
            cluster.node(standby)
        )),
        "the replica was not promoted after its primary died"
    );
    drop(partition);
    cluster.nodes.retain(|n| n.port != primary);
    // A new client maps the slots from whichever node answers first: wait until every node has
    // marked the dead primary failed (not only suspected) and has given its slots to the
    // promoted replica, or the client may still route them there (seen on Valkey, and on Redis
    // when only the failure had spread: connection refused). A CLUSTER NODES line lists the
    // node's slot ranges after its 8 fixed fields.
    let dead = format!(":{primary}@");
    assert!(
        wait_for(Duration::from_secs(60), || cluster.nodes.iter().all(|n| {
            let nodes: String = cmd(&["CLUSTER", "NODES"])
                .query(&mut n.connection())
                .unwrap_or_default();
            !nodes.is_empty()
                && nodes.lines().filter(|l| l.contains(&dead)).all(|l| {
                    l.contains("fail") && !l.contains("fail?") && l.split_whitespace().count() == 8
                })
        })),
        "the surviving nodes never marked the dead primary failed and moved its slots"
    );
    let mut con = cluster.client();
    issue(&mut con, &mut values, 200);
    ids.extend(
        ids_from_every_primary(&cluster, 2000)
            .into_iter()
            .map(|(_, id)| id),
    );
    ids.extend((0..300).map(|_| snowflake(&mut con)));

    // Each prefix is its own sequence: a value must not repeat within one prefix.
    for (prefix, v) in &values {
        assert_unique(v, &format!("DATESEQ {prefix} across both failovers"));
        assert!(v.windows(2).all(|w| w[0] < w[1]), "{prefix} went backwards");
    }
    assert_unique(&ids, "SNOWFLAKE IDs across both failovers");
    let promoted = cluster.node(standby);
    assert_eq!(promoted.info_field("dateseq_promotions"), "1");
}

#[test]
fn two_primaries_with_one_worker_id_both_refuse_within_two_seconds() {
    // Nodes 0 and 1 share datacenter 0, worker 7; node 2 is worker 9.
    let started = Instant::now();
    let mut cluster = Cluster::start(3, 0, |i| {
        vec!["worker-id".into(), if i < 2 { "7" } else { "9" }.into()]
    });
    let joined = started.elapsed();
    let refuses = |node: &Server| {
        let err = error_of(&mut node.connection(), &cmd(&["SNOWFLAKE.NEXT"]));
        err.starts_with("ERR worker-id conflict")
    };
    let ok_at = Instant::now();
    let ok = wait_for(Duration::from_secs(2), || {
        refuses(&cluster.nodes[0]) && refuses(&cluster.nodes[1])
    });
    assert!(
        ok,
        "both primaries must refuse within 2 s of the cluster being ok"
    );
    eprintln!(
        "both refused {:?} after the cluster was ok",
        ok_at.elapsed()
    );
    let err = error_of(
        &mut cluster.nodes[0].connection(),
        &cmd(&["SNOWFLAKE.NEXT"]),
    );
    assert!(err.contains("worker 7"), "{err}");
    let id: i64 = cmd(&["SNOWFLAKE.NEXT"])
        .query(&mut cluster.nodes[2].connection())
        .unwrap();
    assert_eq!((id >> 12) & 31, 9, "the third primary is not affected");
    for node in &cluster.nodes[..2] {
        assert!(node.info_field("worker_id_conflict").contains("worker 7"));
        assert!(node.log().contains("worker-id conflict"), "not logged");
    }
    assert_eq!(cluster.nodes[2].info_field("worker_id_conflict"), "");
    // Announcements go out every 500 ms: the third node hears both others soon.
    assert!(wait_for(Duration::from_secs(2), || cluster.nodes[2]
        .info_field("cluster_nodes_heard")
        == "2"));

    // Once node 1 is gone and its claim has expired, node 0 issues again.
    cluster.nodes[1].kill9();
    let back = wait_for(Duration::from_secs(10), || {
        redis::cmd("SNOWFLAKE.NEXT")
            .query::<i64>(&mut cluster.nodes[0].connection())
            .is_ok()
    });
    assert!(back, "node 0 still refuses after its rival died");
    assert!(cluster.nodes[0].log().contains("conflict over"));
    eprintln!("cluster joined in {joined:?}");
}
