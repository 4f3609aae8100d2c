//! The servers and clients every approach of the comparison uses, and the table of approaches
//! the harness walks: one row each, with its target, its limits and how it fails over.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use idgen_benches::compare::approach::{Approach, Kind, Target, DATESEQ_DIGITS};
use idgen_benches::compare::mariadb::MariaDb;
use idgen_benches::compare::peers::{self, PeerKind, ReplyShape};
use idgen_benches::compare::postgres::Postgres;
use idgen_benches::compare::{generators, peer_crates};
use idgen_client::{Backend, LeaseOptions, LeasedGenerator};
use idgen_functions as library;
use idgen_tests::ticket::TicketServer;
use idgen_tests::{data_dir, Options, Server};
use ticket_client::prefetch::Prefetch;
use ticket_client::sizing::Sizing;
use ticket_client::RoundRobin;

/// What the 12-bit sequence of the Twitter layout allows.
const SNOWFLAKE_CAP: &str = "4,096 per ms per worker";

/// The servers and clients the approaches use, stopped when dropped.
/// The lease coordinator's `idgen.workerid-horizon-ms`, and the TTL of the leases taken from it.
pub const COORDINATOR_HORIZON_MS: u64 = 2_000;

pub struct Setup {
    pub module: Server,
    pub plain: Server,
    pub single: TicketServer,
    pub _odd: TicketServer,
    pub even: TicketServer,
    pub pair: Arc<RoundRobin>,
    pub prefetch: Arc<Prefetch>,
    pub adaptive: Arc<Prefetch>,
    pub leased: Result<Arc<LeasedGenerator>, String>,
    /// The same generator, its worker ID leased from the Functions library on `plain`.
    pub leased_library: Result<Arc<LeasedGenerator>, String>,
    pub flickr: Result<(MariaDb, MariaDb), String>,
    pub instagram: Result<Postgres, String>,
    /// Each peer of `IDGEN_PEERS` with its server and command, or why it did not start; or why
    /// no peers were run.
    pub peers: Result<peers::Listed, String>,
    pub dir: idgen_tests::TempDir,
}

impl Setup {
    pub fn start(runtime: &tokio::runtime::Runtime) -> Result<Setup> {
        // The leased row's coordinator: a horizon of its 2 s TTL, so grants made right after its
        // start wait at most that long.
        let horizon = COORDINATOR_HORIZON_MS.to_string();
        let module = Server::start(&["worker-id", "1", "workerid-horizon-ms", &horizon]);
        let plain = Server::start_with(Options {
            no_module: true,
            ..Options::default()
        });
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("idgen.dateseq-digits")
            .arg(DATESEQ_DIGITS)
            .query(&mut module.connection())?;
        let dir = data_dir("compare");
        // The sealed rows' key: a fixed one, as any key costs the same.
        let key_file = dir.join("seal.key");
        std::fs::write(&key_file, format!("{}\n", "5e".repeat(32)))?;
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("idgen.seal-key-file")
            .arg(key_file.display().to_string())
            .query(&mut module.connection())?;
        let single = TicketServer::start(1, 1, &dir.join("single"), &[]);
        let (odd, even) = TicketServer::odd_and_even(&dir, &[]);
        let pair = Arc::new(RoundRobin::new(&[odd.addr(), even.addr()])?);
        let prefetch = Arc::new(Prefetch::start(
            Arc::clone(&pair),
            "compare-prefetch",
            1_000_000,
            runtime.handle(),
        ));
        // Sized like Leaf's dynamic step, with a target a benchmark reaches: 1 s.
        let adaptive = Arc::new(Prefetch::start_sized(
            Arc::clone(&pair),
            "compare-adaptive",
            Sizing::adaptive(1_000, 10_000_000, Duration::from_secs(1)),
            runtime.handle(),
        ));
        let mut lease = LeaseOptions::new(&module.url(), "compare")
            .ttl(Duration::from_millis(COORDINATOR_HORIZON_MS));
        lease.settings.max_drift_ms = 0;
        let leased = LeasedGenerator::start(lease.clone())
            .map(Arc::new)
            .map_err(|e| e.to_string());
        // The Functions library on the plain server: its rows, and a coordinator like the
        // module's (the same horizon).
        let settings = library::Settings {
            horizon_ms: COORDINATOR_HORIZON_MS,
            ..library::Settings::default()
        };
        library::install_with(&mut plain.connection(), &settings)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let _: () = redis::cmd("HSET")
            .arg("idgen:snowflake")
            .arg("datacenter")
            .arg(0)
            .arg("worker")
            .arg(2)
            .query(&mut plain.connection())?;
        // Its own keys: the plain server also holds the INCR and date-sequence rows' keys.
        let leased_library = LeasedGenerator::start(LeaseOptions {
            url: plain.url(),
            namespace: "compare-leases".into(),
            backend: Backend::Library,
            ..lease
        })
        .map(Arc::new)
        .map_err(|e| e.to_string());
        let flickr = runtime.block_on(async {
            let first = MariaDb::start(&dir, 1, 2).await?;
            let second = MariaDb::start(&dir, 2, 2).await?;
            Ok::<_, String>((first, second))
        });
        let instagram = runtime.block_on(Postgres::start(&dir));
        let peers = peers::from_env().map(|list| {
            list.into_iter()
                .map(|peer| {
                    let started = peers::start(&peer);
                    (peer, started)
                })
                .collect()
        });
        Ok(Setup {
            module,
            plain,
            single,
            _odd: odd,
            even,
            pair,
            prefetch,
            adaptive,
            leased,
            leased_library,
            flickr,
            instagram,
            peers,
            dir,
        })
    }

    /// The table of approaches.
    pub fn approaches(&self) -> Vec<Approach> {
        let resp = |url: String, command: &[&str]| Target::Resp {
            url,
            command: command.iter().map(|s| s.to_string()).collect(),
            reply: if command[0] == "DATESEQ.NEXT" && command.contains(&"COUNT") {
                ReplyShape::Range
            } else if ["UUID7.NEXT", "ULID.NEXT"].contains(&command[0]) {
                ReplyShape::Text128
            } else {
                ReplyShape::Ids
            },
        };
        let in_process = |make| Target::InProcess(generators::stateless(make));
        let row = |name: &str, kind, target, bits, cap, node_death: &str, coordination| Approach {
            name: name.to_string(),
            kind,
            target,
            bits,
            cap,
            node_death: node_death.to_string(),
            coordination,
        };
        let no_server = "nothing: no server";
        let peer_rows: Vec<Approach> = match &self.peers {
            Err(why) => vec![row(
                "peers (IDGEN_PEERS)",
                Kind::Network,
                Target::Missing(why.clone()),
                64,
                "-",
                "-",
                "-",
            )],
            Ok(list) => list
                .iter()
                .map(|(peer, started)| {
                    let kind = match peer.kind {
                        PeerKind::Module { .. } => "module",
                        PeerKind::Script { .. } => "Lua script",
                    };
                    let target = match started {
                        Ok((server, command)) => Target::Resp {
                            url: server.url(),
                            command: command.clone(),
                            reply: peer.reply.clone(),
                        },
                        Err(why) => Target::Missing(why.clone()),
                    };
                    let name = format!("peer {} ({kind}, IDGEN_PEERS)", peer.name);
                    row(
                        &name,
                        Kind::Network,
                        target,
                        64,
                        "as its layout allows",
                        "not measured",
                        "as the peer documents",
                    )
                })
                .collect(),
        };
        let dateseq_cap = "10^10 per day per prefix";
        let mut rows = vec![
            row(
                "SNOWFLAKE.NEXT (module)",
                Kind::Network,
                resp(self.module.url(), &["SNOWFLAKE.NEXT"]),
                64,
                SNOWFLAKE_CAP,
                "not measured: clients move to another node (its own worker-id)",
                "a unique worker-id per node",
            ),
            row(
                "SNOWFLAKE.NEXT COUNT 100 (module, batched)",
                Kind::Batched,
                resp(self.module.url(), &["SNOWFLAKE.NEXT", "COUNT", "100"]),
                64,
                SNOWFLAKE_CAP,
                "as above",
                "a unique worker-id per node",
            ),
            row(
                "SNOWFLAKE.NEXT SEALED (module)",
                Kind::Network,
                resp(self.module.url(), &["SNOWFLAKE.NEXT", "SEALED"]),
                64,
                SNOWFLAKE_CAP,
                "as above",
                "a unique worker-id per node; one sealing key for all",
            ),
            row(
                "DATESEQ.NEXT (module)",
                Kind::Network,
                resp(self.module.url(), &["DATESEQ.NEXT", "compare"]),
                64,
                dateseq_cap,
                "not measured: the prefix's primary must fail over (Redis replication)",
                "one Redis primary per prefix (its Cluster slot)",
            ),
            row(
                "DATESEQ.NEXT COUNT 100 (module, batched)",
                Kind::Batched,
                resp(
                    self.module.url(),
                    &["DATESEQ.NEXT", "compare-bulk", "COUNT", "100"],
                ),
                64,
                dateseq_cap,
                "as above",
                "one Redis primary per prefix (its Cluster slot)",
            ),
            row(
                "FCALL snowflake_next (Functions library, plain redis-server)",
                Kind::Network,
                resp(
                    self.plain.url(),
                    &["FCALL", "snowflake_next", "1", "idgen:snowflake"],
                ),
                64,
                SNOWFLAKE_CAP,
                "not measured: clients move to another server (its own pair)",
                "a unique datacenter/worker pair per server, in its state key",
            ),
            row(
                "FCALL dateseq_next (Functions library, plain redis-server)",
                Kind::Network,
                resp(
                    self.plain.url(),
                    &[
                        "FCALL",
                        "dateseq_next",
                        "1",
                        "compare-dateseq",
                        "DIGITS",
                        "10",
                    ],
                ),
                64,
                dateseq_cap,
                "not measured: the key's primary must fail over (a gap of 10,000 after)",
                "one Redis primary per key",
            ),
            row(
                "date sequence by the client: INCR + EXPIRE, plain redis-server",
                Kind::Network,
                Target::DateSeqByClient {
                    url: self.plain.url(),
                    prefix: "compare-client".into(),
                },
                64,
                dateseq_cap,
                "not measured: the key's primary must fail over",
                "one Redis primary per prefix",
            ),
            row(
                "TICKET.NEXT, one ticket-server",
                Kind::Network,
                resp(self.single.url(), &["TICKET.NEXT"]),
                64,
                "disk-bound blocks; no cap per ms",
                "not measured: a single point of failure",
                "none; one server",
            ),
            row(
                "TICKET.NEXT, odd/even pair, round robin",
                Kind::Network,
                Target::RoundRobin(Arc::clone(&self.pair)),
                64,
                "no cap per ms",
                "",
                "offset and increment per server; a fixed set of N",
            ),
            row(
                "prefetching ticket client (in process, blocks of 1M from the pair)",
                Kind::InProcess,
                Target::InProcess(generators::prefetch(Arc::clone(&self.prefetch))),
                64,
                "no cap per ms",
                "not measured: blocks keep coming from the surviving server",
                "offset and increment per server; a fixed set of N",
            ),
            row(
                "prefetching ticket client (in process, adaptive blocks of 1k to 10M)",
                Kind::InProcess,
                Target::InProcess(generators::prefetch(Arc::clone(&self.adaptive))),
                64,
                "no cap per ms",
                "as above; a quiet service holds few tickets to lose on restart",
                "offset and increment per server; a fixed set of N",
            ),
            row(
                "leased Snowflake generator (in process, worker-id leased from the module)",
                Kind::InProcess,
                match &self.leased {
                    Ok(g) => Target::InProcess(generators::leased(Arc::clone(g))),
                    Err(why) => Target::Missing(format!("no lease: {why}")),
                },
                64,
                SNOWFLAKE_CAP,
                "not measured: issues until its lease ends, then refuses",
                "a lease from the coordinator",
            ),
            row(
                "leased Snowflake generator (in process, worker-id leased from the library)",
                Kind::InProcess,
                match &self.leased_library {
                    Ok(g) => Target::InProcess(generators::leased(Arc::clone(g))),
                    Err(why) => Target::Missing(format!("no lease: {why}")),
                },
                64,
                SNOWFLAKE_CAP,
                "not measured: issues until its lease ends, then refuses",
                "a lease from the Functions library on a plain redis-server",
            ),
            row(
                "idgen-core Snowflake (in process, held to the clock)",
                Kind::InProcess,
                Target::InProcess(generators::snowflake(0)),
                64,
                SNOWFLAKE_CAP,
                no_server,
                "a unique worker-id per thread",
            ),
            row(
                "idgen-core Snowflake (in process, uncapped: borrows up to a day ahead)",
                Kind::InProcess,
                Target::InProcess(generators::snowflake(86_400_000)),
                64,
                "uncapped while it borrows ahead (not comparable with capped rows)",
                no_server,
                "a unique worker-id per thread",
            ),
            row(
                "rs-snowflake 0.6 real_time_generate (in process)",
                Kind::InProcess,
                Target::InProcess(peer_crates::rs_snowflake()),
                64,
                SNOWFLAKE_CAP,
                no_server,
                "a unique (machine, node) per thread",
            ),
            row(
                "snowflaked 1.x (in process)",
                Kind::InProcess,
                Target::InProcess(peer_crates::snowflaked()),
                64,
                SNOWFLAKE_CAP,
                no_server,
                "a unique instance per thread",
            ),
            row(
                "ferroid 0.8 BasicSnowflakeGenerator (in process)",
                Kind::InProcess,
                Target::InProcess(peer_crates::ferroid()),
                64,
                SNOWFLAKE_CAP,
                no_server,
                "a unique machine ID per thread",
            ),
            row(
                "sonyflake 0.5 (in process)",
                Kind::InProcess,
                Target::InProcess(peer_crates::sonyflake()),
                64,
                "256 per 10 ms per machine",
                no_server,
                "a unique machine ID per thread",
            ),
            row(
                "INCR, plain redis-server",
                Kind::Baseline,
                resp(self.plain.url(), &["INCR", "compare"]),
                64,
                "no cap per ms",
                "not measured: the key's primary must fail over",
                "one Redis primary per key",
            ),
            row(
                "UUID v4 (uuid crate, in process)",
                Kind::InProcess,
                in_process(generators::uuid_v4),
                128,
                "none (random)",
                no_server,
                "none",
            ),
            row(
                "UUID7.NEXT (module)",
                Kind::Network,
                resp(self.module.url(), &["UUID7.NEXT"]),
                128,
                "none (a random step within the ms)",
                "not measured: clients move to another node (random bits keep them apart)",
                "none",
            ),
            row(
                "UUID7.NEXT SEALED (module)",
                Kind::Network,
                resp(self.module.url(), &["UUID7.NEXT", "SEALED"]),
                128,
                "none (a random step within the ms)",
                "as above",
                "one sealing key for all",
            ),
            row(
                "ULID.NEXT (module)",
                Kind::Network,
                resp(self.module.url(), &["ULID.NEXT"]),
                128,
                "none (a random step within the ms)",
                "not measured: clients move to another node (random bits keep them apart)",
                "none",
            ),
            row(
                "UUID7.NEXT COUNT 100 (module, batched)",
                Kind::Batched,
                resp(self.module.url(), &["UUID7.NEXT", "COUNT", "100"]),
                128,
                "none (a random step within the ms)",
                "as above",
                "none",
            ),
            row(
                "UUID v7 (uuid crate, in process)",
                Kind::InProcess,
                in_process(generators::uuid_v7),
                128,
                "none (random below the ms)",
                no_server,
                "none",
            ),
            row(
                "ULID (ulid 1.x, in process)",
                Kind::InProcess,
                in_process(generators::ulid),
                128,
                "none (random below the ms)",
                no_server,
                "none",
            ),
            row(
                "MongoDB ObjectId (bson crate, in process)",
                Kind::InProcess,
                in_process(peer_crates::object_id),
                96,
                "2^24 per second per process",
                no_server,
                "none",
            ),
            row(
                "Simpleflake (41 ms + 22 random bits, in process)",
                Kind::InProcess,
                Target::InProcess(generators::simpleflake()),
                64,
                "none; collisions likely past ~2,000 per ms",
                no_server,
                "none",
            ),
            row(
                "Flickr original: 2 MariaDB, REPLACE INTO",
                Kind::Network,
                match &self.flickr {
                    Ok((a, b)) => Target::Flickr(vec![a.url(), b.url()]),
                    Err(why) => Target::Missing(why.clone()),
                },
                64,
                "one durable commit per ID",
                "not measured: clients skip the dead server (as the pair above)",
                "auto-increment-increment and -offset per server",
            ),
            row(
                "Instagram original: PL/pgSQL next_id() on PostgreSQL",
                Kind::Network,
                match &self.instagram {
                    Ok(pg) => Target::Postgres(pg.url()),
                    Err(why) => Target::Missing(why.clone()),
                },
                64,
                "1,024 per ms per shard (10-bit sequence, taken modulo: repeats past it)",
                "not measured: the shard's database must fail over",
                "a shard ID per logical shard; shards mapped to servers",
            ),
        ];
        rows.extend(peer_rows);
        rows
    }
}
