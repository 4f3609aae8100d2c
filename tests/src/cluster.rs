//! A real Redis Cluster on loopback: redis-server nodes with the module, joined by
//! `redis-cli --cluster create`, each with its own free client and bus ports.

use std::process::Command;
use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterConnection};
use redis::Value;

use crate::server::program_major;
use crate::{cmd, free_port, wait_for, Options, Server};

/// The nodes of one cluster; all killed on drop.
pub struct Cluster {
    /// Every node, in the order given to `redis-cli --cluster create` (primaries first).
    pub nodes: Vec<Server>,
}

/// One slot range and the ports serving it, primary first.
#[derive(Clone, Debug)]
pub struct Shard {
    /// First and last slot.
    pub slots: (i64, i64),
    /// Port of the primary, then of its replicas.
    pub ports: Vec<u16>,
}

impl Cluster {
    /// Starts `primaries * (1 + replicas)` nodes, node `i` with the module arguments
    /// `module_args(i)`, joins them, and waits until every node sees the cluster as ok.
    pub fn start(
        primaries: usize,
        replicas: usize,
        module_args: impl Fn(usize) -> Vec<String>,
    ) -> Cluster {
        Cluster::start_with(primaries, replicas, |i| Options {
            module_args: module_args(i),
            ..Options::default()
        })
    }

    /// [`Cluster::start`] with node `i` started as `options(i)` says (e.g. without the module).
    pub fn start_with(
        primaries: usize,
        replicas: usize,
        options: impl Fn(usize) -> Options,
    ) -> Cluster {
        let nodes: Vec<Server> = (0..primaries * (1 + replicas))
            .map(|i| {
                let options = options(i).server(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                ]);
                // Redis 6 has no --cluster-port: its bus is the port plus 10,000.
                match program_major(&options.program()) >= 7 {
                    true => Server::start_with(
                        options.server(&["--cluster-port", &free_port().to_string()]),
                    ),
                    false => Server::start_with(options),
                }
            })
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create (apt-get install redis-tools)");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let cluster = Cluster { nodes };
        cluster.wait_until_ok();
        let seed = cluster.nodes[0].port;
        let attached = wait_for(Duration::from_secs(60), || {
            let shards = cluster.shards(seed);
            shards.len() == primaries && shards.iter().all(|s| s.ports.len() == 1 + replicas)
        });
        assert!(attached, "the replicas did not attach within 60 s");
        cluster
    }

    /// Waits (up to 60 s) until every live node reports `cluster_state:ok` and knows them all.
    pub fn wait_until_ok(&self) {
        let all = self.nodes.len().to_string();
        let ok = wait_for(Duration::from_secs(60), || {
            self.nodes.iter().all(|n| {
                let Ok(mut con) = redis::Client::open(n.url()).and_then(|c| c.get_connection())
                else {
                    return true; // a node killed on purpose
                };
                let info: String = cmd(&["CLUSTER", "INFO"])
                    .query(&mut con)
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{all}"))
            })
        });
        assert!(ok, "the cluster did not become ok within 60 s");
    }

    /// `CLUSTER FAILOVER` on the replica at `port`: waits until it is a primary and every node
    /// sees the cluster as ok. A manual failover gives up after 5 s when the replica does not
    /// catch up with its paused primary (a loaded machine): then it is asked again, as an
    /// operator would, up to three times.
    pub fn failover_to(&mut self, port: u16) {
        let promoted = (0..3).any(|_| {
            // Refused only once it is a primary already.
            let _ = cmd(&["CLUSTER", "FAILOVER"]).query::<()>(&mut self.node(port).connection());
            wait_for(Duration::from_secs(10), || is_primary(self.node(port)))
        });
        assert!(
            promoted,
            "the replica on {port} was not promoted by three manual failovers; its log:\n{}",
            self.node(port).log()
        );
        self.wait_until_ok();
    }

    /// A cluster client seeded with every node.
    pub fn client(&self) -> ClusterConnection {
        ClusterClient::new(self.nodes.iter().map(|n| n.url()).collect::<Vec<_>>())
            .and_then(|c| c.get_connection())
            .expect("cluster client")
    }

    /// The node listening on `port`.
    pub fn node(&mut self, port: u16) -> &mut Server {
        self.nodes
            .iter_mut()
            .find(|n| n.port == port)
            .expect("a node on that port")
    }

    /// The slot ranges and who serves them, as `CLUSTER SLOTS` on the node at `port` says.
    pub fn shards(&self, port: u16) -> Vec<Shard> {
        let node = self.nodes.iter().find(|n| n.port == port).expect("node");
        let slots: Value = cmd(&["CLUSTER", "SLOTS"])
            .query(&mut node.connection())
            .unwrap();
        let Value::Array(ranges) = slots else {
            panic!("CLUSTER SLOTS: {slots:?}")
        };
        ranges
            .into_iter()
            .map(|range| {
                let Value::Array(parts) = range else {
                    panic!("range: {range:?}")
                };
                let int = |v: &Value| match v {
                    Value::Int(n) => *n,
                    other => panic!("not an integer: {other:?}"),
                };
                let ports = parts[2..]
                    .iter()
                    .map(|node| match node {
                        Value::Array(fields) => int(&fields[1]) as u16,
                        other => panic!("node: {other:?}"),
                    })
                    .collect();
                Shard {
                    slots: (int(&parts[0]), int(&parts[1])),
                    ports,
                }
            })
            .collect()
    }

    /// The shard serving `key`'s slot.
    pub fn shard_of(&self, key: &str, port: u16) -> Shard {
        let node = self.nodes.iter().find(|n| n.port == port).expect("node");
        let slot: i64 = cmd(&["CLUSTER", "KEYSLOT", key])
            .query(&mut node.connection())
            .unwrap();
        self.shards(port)
            .into_iter()
            .find(|s| (s.slots.0..=s.slots.1).contains(&slot))
            .expect("a shard for every slot")
    }
}

/// Whether the server at `port` is a primary now (`ROLE`).
pub fn is_primary(server: &Server) -> bool {
    let role: Value = cmd(&["ROLE"]).query(&mut server.connection()).unwrap();
    matches!(&role, Value::Array(parts) if matches!(parts.first(), Some(Value::BulkString(b)) if b == b"master"))
}
