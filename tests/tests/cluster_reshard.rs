//! DATESEQ counters, leases and Snowflake IDs while Cluster slots move between nodes: a slot
//! MIGRATING and IMPORTING by hand (the counter on the source, then moved), and
//! `redis-cli --cluster reshard`, then `rebalance` back, under load, with a `CLUSTER FAILOVER`
//! between.

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use idgen_tests::cluster::Cluster;
use idgen_tests::{cmd, error_of, error_text, wait_for, Server};
use redis::cluster::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{ErrorKind, ServerErrorKind, Value};

/// Worker-id `i + 1` on node `i`.
fn own_worker_ids(i: usize) -> Vec<String> {
    vec!["worker-id".into(), (i + 1).to_string()]
}

fn node_id(node: &Server) -> String {
    cmd(&["CLUSTER", "MYID"])
        .query(&mut node.connection())
        .unwrap()
}

fn keyslot(node: &Server, key: &str) -> i64 {
    cmd(&["CLUSTER", "KEYSLOT", key])
        .query(&mut node.connection())
        .unwrap()
}

/// `cmd` on `con` right after `ASKING`, as a client follows `-ASK`.
fn asking(con: &mut dyn redis::ConnectionLike, words: &[&str]) -> redis::RedisResult<Value> {
    let _: () = cmd(&["ASKING"]).query(con)?;
    cmd(words).query(con)
}

#[test]
fn a_counter_whose_slot_moves_is_never_started_again() {
    let cluster = Cluster::start(3, 0, own_worker_ids);
    let mut con = cluster.client();
    let next = |con: &mut ClusterConnection| -> i64 {
        redis::cmd("DATESEQ.NEXT").arg("x").query(con).unwrap()
    };
    let issued: Vec<i64> = (0..3).map(|_| next(&mut con)).collect();
    let seed = cluster.nodes[0].port;
    let source_port = cluster.shard_of("x", seed).ports[0];
    let source = cluster
        .nodes
        .iter()
        .find(|n| n.port == source_port)
        .unwrap();
    let target = cluster
        .nodes
        .iter()
        .find(|n| n.port != source_port)
        .unwrap();
    let slot = keyslot(source, "x").to_string();
    let (source_id, target_id) = (node_id(source), node_id(target));
    let _: () = cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id])
        .query(&mut target.connection())
        .unwrap();
    let _: () = cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id])
        .query(&mut source.connection())
        .unwrap();

    // The source sends the client on (its declared key, the prefix, is not there) and the
    // target, without the counter, does not start it again.
    let err = error_of(&mut source.connection(), &cmd(&["DATESEQ.NEXT", "x"]));
    assert!(err.starts_with(&format!("ASK {slot} ")), "{err}");
    let mut at_target = target.connection();
    for words in [&["DATESEQ.NEXT", "x"][..], &["DATESEQ.CURRENT", "x"]] {
        let err = error_text(&asking(&mut at_target, words).unwrap_err());
        assert!(
            err.starts_with("TRYAGAIN DATESEQ counter '{x}:")
                && err.contains(&format!("slot {slot} is importing here")),
            "{words:?}: {err}"
        );
    }

    // The counter moves whole; the target carries it on.
    let keys: Vec<String> = cmd(&["CLUSTER", "GETKEYSINSLOT", &slot, "10"])
        .query(&mut source.connection())
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let port = target.port.to_string();
    let _: () = cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "",
        "0",
        "5000",
        "KEYS",
        &keys[0],
    ])
    .query(&mut source.connection())
    .unwrap();
    let moved = asking(&mut at_target, &["DATESEQ.NEXT", "x"]).unwrap();
    assert_eq!(moved, Value::Int(issued[2] + 1));

    for node in &cluster.nodes {
        let _: () = cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &target_id])
            .query(&mut node.connection())
            .unwrap();
    }
    let mut con = cluster.client();
    assert_eq!(next(&mut con), issued[2] + 2);
    let err = error_of(&mut source.connection(), &cmd(&["DATESEQ.NEXT", "x"]));
    assert!(err.starts_with(&format!("MOVED {slot} ")), "{err}");
}

/// The load's leases: shorter than the test, so that worker IDs are granted again.
const LEASE_TTL_MS: i64 = 5_000;

/// What the load threads saw.
#[derive(Default)]
struct Seen {
    /// Every DATESEQ value, by prefix.
    dateseq: HashMap<String, Vec<i64>>,
    /// Every Snowflake ID.
    snowflakes: Vec<i64>,
    /// Grants: (namespace, worker ID, token, expires_at_ms, start_above_ms).
    grants: Vec<(String, i64, i64, i64, i64)>,
    /// Replies that were errors other than the Cluster protocol's redirections, which the
    /// client follows and, after its retries, may still hand back (TRYAGAIN, CLUSTERDOWN).
    errors: Vec<String>,
    /// Redirections handed back after the client's own retries.
    retried: usize,
}

/// DATESEQ values seen so far.
fn counted(seen: &Mutex<Seen>) -> usize {
    seen.lock().unwrap().dateseq.values().map(Vec::len).sum()
}

/// Waits until the load has seen more than `values` DATESEQ values. A liveness wait, not a
/// measurement: generous (a failover's new topology reaches the client after its retries, slow
/// on a loaded machine), and on failure it says how far the load got and what it met.
fn keeps_up(seen: &Mutex<Seen>, values: usize, when: &str) {
    if wait_for(Duration::from_secs(90), || counted(seen) > values) {
        return;
    }
    let seen = seen.lock().unwrap();
    let last: Vec<&String> = seen.errors.iter().rev().take(5).collect();
    panic!(
        "the load stalled {when}: {} values of the {values} awaited, {} redirections retried, \
         {} errors (last: {last:?})",
        seen.dateseq.values().map(Vec::len).sum::<usize>(),
        seen.retried,
        seen.errors.len()
    );
}

impl Seen {
    fn failed(&mut self, e: redis::RedisError) {
        let retriable = matches!(
            e.kind(),
            ErrorKind::Server(ServerErrorKind::TryAgain | ServerErrorKind::ClusterDown)
        );
        if retriable {
            self.retried += 1;
        } else {
            self.errors.push(error_text(&e));
        }
    }
}

/// Calls DATESEQ.NEXT over `prefixes`, SNOWFLAKE.NEXT on any primary and WORKERID.ACQUIRE
/// until `stop`.
fn load(cluster: &Cluster, prefixes: Vec<String>, stop: Arc<AtomicBool>, seen: Arc<Mutex<Seen>>) {
    let mut con = cluster.client();
    thread::spawn(move || {
        let any_primary = RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary);
        let mut round = 0usize;
        while !stop.load(Ordering::Relaxed) {
            round += 1;
            for prefix in &prefixes {
                match redis::cmd("DATESEQ.NEXT")
                    .arg(prefix)
                    .query::<i64>(&mut con)
                {
                    Ok(v) => seen
                        .lock()
                        .unwrap()
                        .dateseq
                        .entry(prefix.clone())
                        .or_default()
                        .push(v),
                    Err(e) => seen.lock().unwrap().failed(e),
                }
            }
            let snowflake = redis::cmd("SNOWFLAKE.NEXT").arg("COUNT").arg(50).clone();
            match con.route_command(&snowflake, any_primary.clone()) {
                Ok(Value::Array(ids)) => {
                    seen.lock()
                        .unwrap()
                        .snowflakes
                        .extend(ids.iter().map(|id| match id {
                            Value::Int(id) => *id,
                            other => panic!("SNOWFLAKE.NEXT gave {other:?}"),
                        }))
                }
                Ok(other) => panic!("SNOWFLAKE.NEXT COUNT 50 replied {other:?}"),
                // A primary with a replica's worker-id refuses for a moment after a failover.
                Err(e) if error_text(&e).contains("worker-id") => {}
                // So does the old primary, now a replica, while the client's map still names it
                // (a keyless command has no slot to be redirected by): a refusal, never an ID.
                // Seen once on Valkey 8.0 under make test's load.
                Err(e) if error_text(&e).contains("SNOWFLAKE.NEXT is refused on a replica") => {
                    seen.lock().unwrap().retried += 1
                }
                Err(e) => seen.lock().unwrap().failed(e),
            }
            let ns = format!("fleet{}", round % 7);
            let acquire = redis::cmd("WORKERID.ACQUIRE")
                .arg(&ns)
                .arg("TTL")
                .arg(LEASE_TTL_MS)
                .arg("MAX")
                .arg(4096)
                .clone();
            match acquire.query::<Vec<i64>>(&mut con) {
                Ok(g) => seen
                    .lock()
                    .unwrap()
                    .grants
                    .push((ns, g[0], g[1], g[2], g[3])),
                // A grant waits for a replica to hold it: a failover meanwhile unblocks it
                // (Valkey: UNBLOCKED ... master -> replica), or no replica held it in time
                // (NOREPLICAS). Not acknowledged: a refusal, never a grant given twice.
                Err(e)
                    if error_text(&e).starts_with("UNBLOCKED")
                        || error_text(&e).starts_with("NOREPLICAS") =>
                {
                    seen.lock().unwrap().retried += 1
                }
                Err(e) => seen.lock().unwrap().failed(e),
            }
        }
    });
}

/// `redis-cli --cluster ARGS` against the node at `port`: its exit status and output.
fn cluster_tool(port: u16, args: &[&str]) -> (bool, String) {
    let out = Command::new("redis-cli")
        .arg("--cluster")
        .arg(args[0])
        .arg(format!("127.0.0.1:{port}"))
        .args(&args[1..])
        .output()
        .expect("redis-cli");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// Waits (up to 30 s) until `redis-cli --cluster check` passes: every node agrees on the slots
/// (after a failover the new epoch takes a moment to reach them all), and none is open.
fn wait_until_agreed(port: u16) {
    let mut out = String::new();
    let agreed = wait_for(Duration::from_secs(30), || {
        let (ok, text) = cluster_tool(port, &["check"]);
        out = text;
        ok && !out.contains("[ERR]") && !out.contains("[WARNING]")
    });
    assert!(agreed, "the cluster is not stable:\n{out}");
}

/// Moves `slots` slots from the primary at `from` to the primary at `to` with
/// `redis-cli --cluster reshard`, and asserts the tool succeeded.
fn reshard(cluster: &Cluster, from: u16, to: u16, slots: usize) {
    wait_until_agreed(from);
    let node = |port: u16| cluster.nodes.iter().find(|n| n.port == port).unwrap();
    let (from_id, to_id) = (node_id(node(from)), node_id(node(to)));
    let (ok, out) = cluster_tool(
        from,
        &[
            "reshard",
            "--cluster-from",
            &from_id,
            "--cluster-to",
            &to_id,
            "--cluster-slots",
            &slots.to_string(),
            "--cluster-yes",
        ],
    );
    let tail: Vec<&str> = out.lines().rev().take(15).collect();
    assert!(
        ok,
        "redis-cli --cluster reshard failed:\n{}",
        tail.join("\n")
    );
}

/// The primaries' ports now, as the node at `seed` sees the slots.
fn primaries(cluster: &Cluster, seed: u16) -> Vec<u16> {
    let mut ports: Vec<u16> = cluster.shards(seed).iter().map(|s| s.ports[0]).collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

#[test]
fn reshard_failover_and_rebalance_under_load_repeat_nothing() {
    let mut cluster = Cluster::start(3, 1, own_worker_ids);
    let seed = cluster.nodes[0].port;
    // Prefixes over many slots, so that counters are on the slots that move.
    let first = primaries(&cluster, seed);
    // redis-cli moves a node's lowest slots first: the prefixes are on the slots that move
    // (both ways), each called every few hundred microseconds, so every slot's move meets calls.
    let moving = cluster
        .shards(seed)
        .into_iter()
        .find(|s| s.ports[0] == first[0])
        .unwrap()
        .slots
        .0;
    let prefixes: Vec<String> = (0..)
        .map(|p| format!("order{p}"))
        .filter(|p| (moving..moving + 1_500).contains(&keyslot(&cluster.nodes[0], p)))
        .take(40)
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    for half in prefixes.chunks(20) {
        load(
            &cluster,
            half.to_vec(),
            Arc::clone(&stop),
            Arc::clone(&seen),
        );
    }
    keeps_up(&seen, 2_000, "before the reshard");

    reshard(&cluster, first[0], first[1], 1_500);
    let moved_there = counted(&seen);

    // A manual failover of the shard that took the slots, then the slots back to the first.
    let shard = cluster
        .shards(seed)
        .into_iter()
        .find(|s| s.ports[0] == first[1])
        .unwrap();
    let replica = shard.ports[1];
    cluster.failover_to(replica);
    keeps_up(&seen, moved_there + 2_000, "after the failover");
    // `rebalance` takes the slots back: the shard that took 1,500 has the most.
    wait_until_agreed(seed);
    let (ok, out) = cluster_tool(seed, &["rebalance"]);
    let tail: Vec<&str> = out.lines().rev().take(15).collect();
    assert!(
        ok && out.contains("Moving"),
        "redis-cli --cluster rebalance failed:\n{}",
        tail.join("\n")
    );
    let before_stop = counted(&seen);
    keeps_up(&seen, before_stop + 1_000, "after the rebalance");
    stop.store(true, Ordering::Relaxed);
    thread::sleep(Duration::from_millis(500));

    wait_until_agreed(seed);
    let seen = seen.lock().unwrap();
    assert!(
        seen.errors.is_empty(),
        "errors other than redirections: {:?}",
        &seen.errors[..seen.errors.len().min(10)]
    );
    let mut values = 0;
    for (prefix, v) in &seen.dateseq {
        let distinct: HashSet<&i64> = v.iter().collect();
        assert_eq!(
            distinct.len(),
            v.len(),
            "{prefix} repeated {} values",
            v.len() - distinct.len()
        );
        assert!(v.windows(2).all(|w| w[0] < w[1]), "{prefix} went backwards");
        values += v.len();
    }
    let ids: HashSet<&i64> = seen.snowflakes.iter().collect();
    assert_eq!(ids.len(), seen.snowflakes.len(), "Snowflake IDs repeated");
    // Leases are never renewed or released here: a worker ID is granted again only once the
    // lease before it has ended, and starts above all its holder could use (its start, as it
    // never renewed). By token: two clients may note their grants out of order.
    let mut grants = seen.grants.clone();
    grants.sort_by_key(|(ns, worker, token, ..)| (ns.clone(), *worker, *token));
    for pair in grants.windows(2) {
        let [(ns, worker, token, ended, used), (ns2, worker2, token2, expires, start_above)] = pair
        else {
            unreachable!()
        };
        if (ns, worker) != (ns2, worker2) {
            continue;
        }
        assert!(token2 > token, "{ns}: worker ID {worker}'s token repeated");
        let granted_at = expires - LEASE_TTL_MS;
        assert!(
            granted_at >= *ended && start_above >= used,
            "{ns}: worker ID {worker} granted at {granted_at} to start above {start_above}, over \
             a holder whose lease ended at {ended} and who could use up to {used}"
        );
    }
    eprintln!(
        "{values} DATESEQ values, {} Snowflake IDs, {} grants; {} retries handed back",
        seen.snowflakes.len(),
        seen.grants.len(),
        seen.retried
    );
}
