//! Every approach side by side: `cargo bench --bench compare` (full, a few minutes) or
//! `cargo bench --bench compare -- --quick` (about a minute). Starts the servers itself on free
//! loopback ports, drives each approach of one table with the same client loop at 1, 16 and 64
//! connections (threads for in-process generators), unpipelined and with 16 requests in
//! flight, and writes `target/compare/report.md` of the checkout it runs in, with a summary by
//! question, plots per pipelining depth and the latency tail.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use idgen_benches::compare::approach::{measure, Approach, Kind, Target, DATESEQ_DIGITS};
use idgen_benches::compare::mariadb::MariaDb;
use idgen_benches::compare::peers::{self, PeerKind, ReplyShape};
use idgen_benches::compare::postgres::Postgres;
use idgen_benches::compare::report::{self, Properties};
use idgen_benches::compare::{
    generators, instructions, is_properties_sample, plot, properties, python, Budget, Row,
    CONNECTIONS, PIPELINES, SAMPLE_CONNECTIONS,
};
use idgen_client::{LeaseOptions, LeasedGenerator};
use idgen_tests::ticket::TicketServer;
use idgen_tests::{data_dir, Options, Server};
use indicatif::{ProgressBar, ProgressStyle};
use ticket_server::client::prefetch::Prefetch;
use ticket_server::client::sizing::Sizing;
use ticket_server::client::RoundRobin;

/// What the 12-bit sequence of the Twitter layout allows.
const SNOWFLAKE_CAP: &str = "4,096 per ms per worker";

/// The servers and clients the approaches use, stopped when dropped.
/// The lease coordinator's `idgen.workerid-horizon-ms`, and the TTL of the leases taken from it.
const COORDINATOR_HORIZON_MS: u64 = 2_000;

struct Setup {
    module: Server,
    plain: Server,
    single: TicketServer,
    _odd: TicketServer,
    even: TicketServer,
    pair: Arc<RoundRobin>,
    prefetch: Arc<Prefetch>,
    adaptive: Arc<Prefetch>,
    leased: Result<Arc<LeasedGenerator>, String>,
    flickr: Result<(MariaDb, MariaDb), String>,
    instagram: Result<Postgres, String>,
    /// Each peer of `IDGEN_PEERS` with its server and command, or why it did not start; or why
    /// no peers were run.
    peers: Result<peers::Listed, String>,
    dir: idgen_tests::TempDir,
}

impl Setup {
    fn start(runtime: &tokio::runtime::Runtime) -> Result<Setup> {
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
        let leased = LeasedGenerator::start(lease)
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
            flickr,
            instagram,
            peers,
            dir,
        })
    }

    /// The table of approaches.
    fn approaches(&self) -> Vec<Approach> {
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
                Target::InProcess(generators::rs_snowflake()),
                64,
                SNOWFLAKE_CAP,
                no_server,
                "a unique (machine, node) per thread",
            ),
            row(
                "snowflaked 1.x (in process)",
                Kind::InProcess,
                Target::InProcess(generators::snowflaked()),
                64,
                SNOWFLAKE_CAP,
                no_server,
                "a unique instance per thread",
            ),
            row(
                "ferroid 0.8 BasicSnowflakeGenerator (in process)",
                Kind::InProcess,
                Target::InProcess(generators::ferroid()),
                64,
                SNOWFLAKE_CAP,
                no_server,
                "a unique machine ID per thread",
            ),
            row(
                "sonyflake 0.5 (in process)",
                Kind::InProcess,
                Target::InProcess(generators::sonyflake()),
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
                in_process(generators::object_id),
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

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = if quick {
        Budget::quick()
    } else {
        Budget::full()
    };
    let root = idgen_tests::workspace_root().to_path_buf();
    build_servers(&root)?;
    if std::env::args().any(|a| a == "--instructions") {
        return instructions_only(&root);
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let mut setup = Setup::start(&runtime)?;
    let approaches = setup.approaches();

    let scenarios: usize = approaches
        .iter()
        .filter(|a| !matches!(a.target, Target::Missing(_)))
        .map(|a| CONNECTIONS.len() * a.target.pipelines().len())
        .sum();
    let bar = ProgressBar::new(scenarios as u64 + 1);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let (mut rows, mut props) = (Vec::new(), Vec::new());
    for approach in &approaches {
        let (row, prop) = run_approach(&runtime, approach, budget, &bar);
        rows.push(row);
        props.push(prop);
    }

    bar.set_message("a node of the ticket pair dies mid-run");
    let death = runtime.block_on(node_death(&setup.pair, &mut setup.even, budget));
    if let Some(p) = props
        .iter_mut()
        .find(|p| p.name.starts_with("TICKET.NEXT, odd/even"))
    {
        p.node_death = death;
    }
    bar.inc(1);

    bar.finish_and_clear();
    println!("stepping the clock under each in-process generator (clock-step)...");
    let clock = clock_behaviour(&root, &setup.dir);
    println!("counting instructions per request under callgrind...");
    let peer_modules = match &setup.peers {
        Ok(listed) => peer_modules(listed.iter().map(|(peer, _)| peer)),
        Err(_) => Vec::new(),
    };
    let n = if quick { 1_600 } else { 4_800 };
    let counts = instruction_table(&root, &setup.dir, &peer_modules, n);
    println!("the Python package beside Python's ID libraries (builds the wheel)...");
    let python = python::section(&root, &setup.module.url(), COORDINATOR_HORIZON_MS);
    let out = root.join("target/compare");
    std::fs::create_dir_all(&out)?;
    write_report(
        &out,
        &rows,
        &props,
        &[&clock, &counts, &python],
        quick,
        budget,
    )?;
    println!("{}", report::summary(&rows));
    println!("report: {}", out.join("report.md").display());
    drop(approaches);
    drop(setup);
    Ok(())
}

/// Every scenario of one approach: its row of measurements and its properties.
fn run_approach(
    runtime: &tokio::runtime::Runtime,
    approach: &Approach,
    budget: Budget,
    bar: &ProgressBar,
) -> (Row, Properties) {
    let in_process = matches!(approach.target, Target::InProcess(_));
    let (mut measurements, mut sample, mut repeats) = (Vec::new(), None, 0);
    let mut result: Result<(), String> = Ok(());
    'scenarios: for &c in &CONNECTIONS {
        for &p in approach.target.pipelines() {
            bar.set_message(format!("{} · {c} × {p}", approach.name));
            match measure(runtime, approach, c, p, budget) {
                Ok((m, ids, repeated)) => {
                    repeats += repeated;
                    if is_properties_sample(in_process, c, p) {
                        sample = Some(ids);
                    }
                    measurements.push(m);
                }
                Err(e) => {
                    result = Err(e.to_string());
                    break 'scenarios;
                }
            }
            bar.inc(1);
        }
    }
    let results = result.map(|()| measurements);
    let props = Properties {
        name: approach.name.clone(),
        kind: approach.kind,
        bits: approach.bits,
        cap: approach.cap.to_string(),
        out_of_order: sample.as_deref().map(properties::out_of_order),
        max_id: sample
            .as_deref()
            .filter(|_| approach.bits <= 64)
            .and_then(|ids| ids.iter().max().copied()),
        k: sample.as_deref().map(properties::k_ordering),
        duplicates: results.is_ok().then_some(repeats),
        node_death: approach.node_death.clone(),
        coordination: approach.coordination.to_string(),
    };
    let row = Row {
        name: approach.name.clone(),
        kind: approach.kind,
        results,
    };
    (row, props)
}

/// The module and the ticket-server binary the servers run, built like `make build` does.
fn build_servers(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "-q",
            "-p",
            "redis-idgen",
            "-p",
            "ticket-server",
        ])
        .current_dir(root)
        .status()
        .context("run cargo build")?;
    anyhow::ensure!(
        status.success(),
        "building the module and ticket-server failed"
    );
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "build",
            "--release",
            "-q",
            "-p",
            "idgen-benches",
            "--bin",
            "clock-step",
        ])
        .current_dir(root)
        .status()
        .context("run cargo build")?;
    anyhow::ensure!(status.success(), "building clock-step failed");
    Ok(())
}

/// `--instructions`: the instruction table alone, to target/compare/instructions.md.
fn instructions_only(root: &Path) -> Result<()> {
    let out = root.join("target/compare");
    let dir = out.join("callgrind");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let peers = peers::from_env().unwrap_or_default();
    println!("counting instructions per request under callgrind...");
    let table = instruction_table(root, &dir, &peer_modules(peers.iter()), 4_800);
    std::fs::write(out.join("instructions.md"), &table)?;
    println!("{table}");
    Ok(())
}

/// The module peers among `peers`, for the instruction table.
fn peer_modules<'p>(peers: impl Iterator<Item = &'p peers::Peer>) -> Vec<instructions::PeerModule> {
    peers
        .filter_map(|peer| match &peer.kind {
            PeerKind::Module { path, load } => Some(instructions::PeerModule {
                name: peer.name.clone(),
                path: path.clone(),
                load: load.clone(),
                command: peer.command.clone(),
            }),
            PeerKind::Script { .. } => None,
        })
        .collect()
}

/// Instructions per request inside redis-server (with the module and with each peer module)
/// and the ticket-server, unpipelined and pipelined, as a markdown table with each command's
/// ratio to PING on the same server; then where our module commands' instructions go.
fn instruction_table(
    root: &Path,
    dir: &Path,
    peers: &[instructions::PeerModule],
    n: u32,
) -> String {
    let ticket_server = root.join("target/release/ticket-server");
    let rows = match instructions::count(dir, &idgen_tests::module_path(), &ticket_server, peers, n)
    {
        Err(why) => return format!("Not counted: {why}.\n"),
        Ok(rows) => rows,
    };
    let (p, starts) = (instructions::PIPELINE, instructions::STARTS);
    let mut md = format!(
        "Server-side instructions per request ({n} requests, one client; serverCron left out; \
         the median of {starts} server starts, as Redis seeds its hash tables at random on each). \
         Unpipelined, then {p} requests per round trip (-P {p}).\n\n\
         | server | command | unpipelined | × PING | -P {p} | × PING at -P {p} |\n\
         |---|---|---|---|---|---|\n"
    );
    for (server, command, count) in &rows {
        let ping = rows
            .iter()
            .find(|(s, c, _)| s == server && c == "PING")
            .map(|r| r.2.clone())
            .unwrap_or_default();
        md.push_str(&format!(
            "| {server} | `{command}` | {} | {:.2} | {} | {:.2} |\n",
            count.unpipelined,
            times(count.unpipelined, ping.unpipelined),
            count.pipelined,
            times(count.pipelined, ping.pipelined),
        ));
    }
    md.push_str(&dateseq_floor(&rows));
    let splits: Vec<String> = rows
        .iter()
        .filter_map(|(_, command, count)| {
            let s = count.split?;
            Some(format!(
                "| `{command}` | {} | {} | {} |",
                s.reply, s.api, s.own
            ))
        })
        .collect();
    if !splits.is_empty() {
        md.push_str(&format!(
            "\nWhere the module's commands spend their instructions, unpipelined, per request \
             (callgrind_annotate's inclusive counts inside the command callbacks; the rest of \
             each request is Redis's own: reading, parsing, dispatch, AOF, writing):\n\n\
             | command | reply (RM_ReplyWith*) | other Redis API (RM_*) | the module's own code |\n\
             |---|---|---|---|\n{}\n",
            splits.join("\n")
        ));
    }
    md
}

/// `a / b`, 0 when `b` is.
fn times(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}

/// DATESEQ.NEXT and its API floor (benches/floor/dateseq_floor.c) as multiples of INCR, all in
/// the floor's server, unpipelined and at -P 16; empty when the floor was not counted.
fn dateseq_floor(rows: &[instructions::Row]) -> String {
    let find = |command: &str| {
        rows.iter()
            .find(|(s, c, _)| s == instructions::FLOOR_SERVER && c == command)
            .map(|r| &r.2)
    };
    let (Some(incr), Some(expiring), Some(ours), Some(floor), Some(unchecked)) = (
        find(instructions::INCR_PLAIN),
        find(instructions::INCR_EXPIRING),
        find(instructions::DATESEQ_ONE),
        find(instructions::FLOOR_CHECKED),
        find(instructions::FLOOR_UNCHECKED),
    ) else {
        return String::new();
    };
    // "a × (b); c × (d)": against INCR, then against INCR of a key with a TTL.
    let x = |a: &instructions::Count| {
        format!(
            "{:.3} × ({:.3}); {:.3} × ({:.3})",
            times(a.unpipelined, incr.unpipelined),
            times(a.pipelined, incr.pipelined),
            times(a.unpipelined, expiring.unpipelined),
            times(a.pipelined, expiring.pipelined),
        )
    };
    let p = instructions::PIPELINE;
    format!(
        "\nAgainst `INCR` on the same server, unpipelined (at -P {p}); then against `{}`, a key \
         with a TTL as each day's counter has:\n\n\
         - DATESEQ.NEXT: {};\n\
         - its Redis API floor, `{}` ({}: DATESEQ.NEXT's Redis calls for a counter that exists, \
         ACL check included, from C with next to no code of its own): {};\n\
         - the floor without the ACL check on the counter key: {}.\n\n\
         What lies between DATESEQ.NEXT and its floor is the module's own code.\n",
        instructions::INCR_EXPIRING,
        x(ours),
        instructions::FLOOR_CHECKED,
        instructions::FLOOR_SOURCE,
        x(floor),
        x(unchecked),
    )
}

/// What each in-process generator does when its sequence is spent and when the clock steps
/// back: `clock-step` run at the real time, then under the clock shim; a markdown table.
fn clock_behaviour(root: &Path, dir: &Path) -> String {
    let program = root.join("target/release/clock-step");
    let shift = idgen_tests::clock::ClockShift::new(dir);
    let run = |shifted: bool| -> Vec<Vec<String>> {
        let mut command = Command::new(&program);
        if shifted {
            command
                .arg("--offset-file")
                .arg(dir.join("clock-offset"))
                .envs(shift.env());
        }
        let out = command
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        out.unwrap_or_default()
            .lines()
            .map(|l| l.split('|').map(str::to_string).collect())
            .filter(|f: &Vec<String>| f.len() == 3)
            .collect()
    };
    let (spent, stepped) = (run(false), run(true));
    if spent.is_empty() || stepped.len() != spent.len() {
        return format!("clock-step did not run ({}).\n", program.display());
    }
    let mut md = String::from(
        "| generator (in process) | its sequence spent (a tight loop, real time) | the clock 1.1 s behind, for 2.2 s |\n|---|---|---|\n",
    );
    for (a, b) in spent.iter().zip(&stepped) {
        md.push_str(&format!("| {} | {} | {} |\n", a[0], a[1], b[2]));
    }
    md
}

/// Kills the even server a third of the way into a run of 16 callers through the round-robin
/// client, and says what the callers saw.
async fn node_death(pair: &Arc<RoundRobin>, even: &mut TicketServer, budget: Budget) -> String {
    let length = budget.duration.max(Duration::from_millis(900)) * 2;
    let started = Instant::now();
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let pair = Arc::clone(pair);
            tokio::spawn(async move {
                let (mut ok, mut errors, mut slowest) = (0u64, 0u64, Duration::ZERO);
                while started.elapsed() < length {
                    let t = Instant::now();
                    match pair.next("default").await {
                        Ok(_) => ok += 1,
                        Err(_) => errors += 1,
                    }
                    slowest = slowest.max(t.elapsed());
                }
                (ok, errors, slowest)
            })
        })
        .collect();
    tokio::time::sleep(length / 3).await;
    even.kill9();
    let (mut ok, mut errors, mut slowest) = (0, 0, Duration::ZERO);
    for w in workers {
        if let Ok((o, e, s)) = w.await {
            ok += o;
            errors += e;
            slowest = slowest.max(s);
        }
    }
    even.restart();
    format!(
        "measured: one of two killed mid-run; {errors} errors reached callers, {ok} tickets served, slowest call {:.1} ms",
        slowest.as_secs_f64() * 1000.0
    )
}

fn write_report(
    out: &Path,
    rows: &[Row],
    props: &[Properties],
    tables: &[&str; 3],
    quick: bool,
    budget: Budget,
) -> Result<()> {
    let xs: Vec<String> = CONNECTIONS.iter().map(|c| c.to_string()).collect();
    for &depth in &PIPELINES {
        let throughput: Vec<(String, Vec<f64>)> = rows
            .iter()
            .filter_map(|r| {
                let ms = r.results.as_ref().ok()?;
                let line: Vec<f64> = CONNECTIONS
                    .iter()
                    .map(|&c| {
                        ms.iter()
                            .find(|m| m.connections == c && m.pipeline == depth)
                            .map_or(0.0, |m| m.ids_per_s)
                    })
                    .collect();
                line.iter()
                    .any(|v| *v > 0.0)
                    .then(|| (r.name.clone(), line))
            })
            .collect();
        std::fs::write(
            out.join(format!("throughput-{depth}.svg")),
            plot::lines(
                &format!("IDs per second, {depth} in flight per connection (threads in process)"),
                "connections",
                "IDs/s (log scale)",
                &xs,
                &throughput,
            )?,
        )?;
    }
    let levels = ["p50", "p90", "p99", "p99.9"];
    let tails: Vec<(String, Vec<f64>)> = rows
        .iter()
        .filter_map(|r| {
            let m = r
                .results
                .as_ref()
                .ok()?
                .iter()
                .find(|m| m.connections == 16 && m.pipeline == 1)?;
            let mut sorted = m.samples_us.clone();
            sorted.sort_unstable();
            let at = |q: f64| {
                if !idgen_benches::compare::enough_samples(q, sorted.len()) {
                    return 0.0; // too few samples: left out of the plot
                }
                sorted[((sorted.len() - 1) as f64 * q).round() as usize].max(1) as f64
            };
            let line: Vec<f64> = [0.5, 0.9, 0.99, 0.999].iter().map(|&q| at(q)).collect();
            line.iter()
                .any(|v| *v > 0.0)
                .then(|| (r.name.clone(), line))
        })
        .collect();
    let levels: Vec<String> = levels.iter().map(|l| l.to_string()).collect();
    std::fs::write(
        out.join("latency-tail.svg"),
        plot::lines(
            "Round-trip latency tail, 16 connections, unpipelined",
            "percentile",
            "µs (log scale)",
            &levels,
            &tails,
        )?,
    )?;

    let mut md = String::new();
    md.push_str("# Unique-ID approaches side by side\n\n");
    md.push_str(&format!(
        "{} run, {} per scenario (at most {} requests). {}\n\n",
        if quick { "Quick" } else { "Full" },
        humantime(budget.duration),
        budget.max_requests,
        machine()
    ));
    md.push_str("Every server runs on this machine, on loopback, started by the harness; the client is the same\n");
    md.push_str("loop for all (the `redis` crate, one multiplexed connection per worker; the pair goes through\n");
    md.push_str("`ticket_server::client::RoundRobin`). In-process generators: threads instead of connections,\n");
    md.push_str("latency per call. Pipelined = 16 requests in flight per connection; latency is per round trip.\n\n");
    md.push_str("## Which approach wins\n\n");
    md.push_str(&report::questions(rows, props));
    md.push_str("\n![unpipelined](throughput-1.svg)\n\n![pipelined](throughput-16.svg)\n\n![latency tail](latency-tail.svg)\n\n## Throughput and latency\n\n");
    md.push_str("× INCR: the rate over INCR's on a plain redis-server in the same run and scenario. A percentile\n");
    md.push_str("is shown only with enough samples (p99: 100, p99.9: 1,000). In-process rows time batches of 64\n");
    md.push_str("calls, so their samples count batches; their errors are refusals (a spent millisecond).\n\n");
    md.push_str(&report::results_table(rows));
    md.push_str(&format!(
        "\n## Properties\n\nOut-of-order share and k-ordering: the IDs of the {SAMPLE_CONNECTIONS}-connection unpipelined run,\n"
    ));
    md.push_str("merged in the order their replies arrived, as a database fed by many clients sees them (in-process\n");
    md.push_str("generators: one thread, wider IDs by their top 64 bits): 0% means every ID was larger than all\n");
    md.push_str("before it. Repeats: over every run (wide IDs compared whole). Cap: what the layout allows;\n");
    md.push_str("the module may run up to `idgen.max-drift-ms` ahead of the clock, so short batched runs can\n");
    md.push_str("exceed 4,096,000 IDs/s; longer ones are held to it and show refusals as errors. The uncapped\n");
    md.push_str(
        "idgen-core row borrows up to a day ahead and is not comparable with the capped ones.\n\n",
    );
    md.push_str(&report::properties_table(props));
    md.push_str("\n## When the sequence is spent and when the clock steps back\n\n");
    md.push_str("Measured, not taken from documentation: `clock-step` calls each generator in a tight loop for\n");
    md.push_str(
        "100 ms at the real time, then, in a process whose wall clock an LD_PRELOAD shim moves\n",
    );
    md.push_str("(tests/clockshift), steps the clock back 1.1 s for 2.2 s and counts repeats, IDs below earlier\n");
    md.push_str("ones, refusals and the longest call. Each generator runs in a process of its own, so one that\n");
    md.push_str("panics is reported and the others still run.\n\n");
    md.push_str(tables[0]);
    md.push_str("\n## Instructions per request inside the server\n\n");
    md.push_str(
        "Counted by callgrind (the server under valgrind, one client, unpipelined, AOF on for\n",
    );
    md.push_str("redis-server): a figure that does not swing with the machine's load as the rates above do.\n\n");
    md.push_str(tables[1]);
    md.push_str("\n## Python\n\n");
    md.push_str(
        "The idgen package (`make wheel`, docs/python.md) beside the usual Python ID libraries:\n",
    );
    md.push_str(
        "`benches/python_speed.py`, one process, one thread, calls of each back to back.\n\n",
    );
    md.push_str(tables[2]);
    std::fs::write(out.join("report.md"), md)?;
    Ok(())
}

fn humantime(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The machine and versions the run was on.
fn machine() -> String {
    let run = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    format!(
        "Run {}. Machine: {} cores ({cpu}), Linux {}; {}; {}.",
        run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        run("uname", &["-r"]),
        run("redis-server", &["--version"]),
        run("rustc", &["--version"]),
    )
}
