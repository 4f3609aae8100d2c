//! Every approach side by side: `cargo bench --bench compare` (full, a few minutes) or
//! `cargo bench --bench compare -- --quick` (under a minute). Starts the servers itself on free
//! loopback ports, drives each approach with the same client loop at 1, 16 and 64 connections,
//! unpipelined and with 16 requests in flight, and writes `target/compare/report.md` with a
//! throughput plot and a latency CDF.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use idgen_benches::compare::mariadb::{FlickrClient, MariaDb};
use idgen_benches::compare::report::{self, Properties};
use idgen_benches::compare::{
    drive, properties, svg, Budget, Measurement, Row, CONNECTIONS, PIPELINES,
};
use idgen_tests::ticket::TicketServer;
use idgen_tests::{data_dir, Options, Server};
use indicatif::{ProgressBar, ProgressStyle};
use redis::aio::MultiplexedConnection;
use redis::Value;
use ticket_server::client::RoundRobin;

/// How an approach is reached.
enum Target {
    /// A command sent to a RESP server (its reply: an ID, or an array of IDs).
    Resp {
        url: String,
        command: Vec<&'static str>,
    },
    /// The round-robin client over the ticket pair.
    RoundRobin(Arc<RoundRobin>),
    /// A generator called in this process (128-bit IDs).
    InProcess(fn() -> u128),
    /// Flickr's MariaDB ticket servers, used in turn by each client.
    Flickr(Vec<String>),
    /// Not available here, and why.
    Missing(String),
}

struct Approach {
    name: &'static str,
    target: Target,
    bits: u32,
    node_death: String,
    coordination: &'static str,
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = if quick {
        Budget::quick()
    } else {
        Budget::full()
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?
        .to_path_buf();
    build_servers(&root)?;

    let module = Server::start(&["worker-id", "1"]);
    let plain = Server::start_with(Options {
        no_module: true,
        ..Options::default()
    });
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("idgen.dateseq-digits")
        .arg("10")
        .query(&mut module.connection())?;
    let dir = data_dir("compare");
    let single = TicketServer::start(1, 1, &dir.join("single"), &[]);
    let (odd, mut even) = TicketServer::odd_and_even(&dir, &[]);
    let pair = Arc::new(RoundRobin::new(&[odd.addr(), even.addr()])?);
    let runtime = tokio::runtime::Runtime::new()?;
    let flickr = runtime.block_on(async {
        let first = MariaDb::start(&dir, 1, 2).await?;
        let second = MariaDb::start(&dir, 2, 2).await?;
        Ok::<_, String>((first, second))
    });
    let flickr_target = match &flickr {
        Ok((a, b)) => Target::Flickr(vec![a.url(), b.url()]),
        Err(why) => Target::Missing(why.clone()),
    };

    let approaches = vec![
        Approach {
            name: "SNOWFLAKE.NEXT (module)",
            target: Target::Resp {
                url: module.url(),
                command: vec!["SNOWFLAKE.NEXT"],
            },
            bits: 64,
            node_death: "not measured: clients move to another node (its own worker-id)".into(),
            coordination: "a unique worker-id per node",
        },
        Approach {
            name: "SNOWFLAKE.NEXT COUNT 100 (module, batched)",
            target: Target::Resp {
                url: module.url(),
                command: vec!["SNOWFLAKE.NEXT", "COUNT", "100"],
            },
            bits: 64,
            node_death: "as above".into(),
            coordination: "a unique worker-id per node",
        },
        Approach {
            name: "DATESEQ.NEXT (module)",
            target: Target::Resp {
                url: module.url(),
                command: vec!["DATESEQ.NEXT", "compare"],
            },
            bits: 64,
            node_death: "not measured: the prefix's primary must fail over (Redis replication)"
                .into(),
            coordination: "one Redis primary per prefix (its Cluster slot)",
        },
        Approach {
            name: "TICKET.NEXT, one ticket-server",
            target: Target::Resp {
                url: single.url(),
                command: vec!["TICKET.NEXT"],
            },
            bits: 64,
            node_death: "not measured: a single point of failure".into(),
            coordination: "none; one server",
        },
        Approach {
            name: "TICKET.NEXT, odd/even pair, round robin",
            target: Target::RoundRobin(Arc::clone(&pair)),
            bits: 64,
            node_death: String::new(), // measured below
            coordination: "offset and increment per server; a fixed set of N",
        },
        Approach {
            name: "INCR, plain redis-server",
            target: Target::Resp {
                url: plain.url(),
                command: vec!["INCR", "compare"],
            },
            bits: 64,
            node_death: "not measured: the key's primary must fail over".into(),
            coordination: "one Redis primary per key",
        },
        Approach {
            name: "UUID v4 (uuid crate, in process)",
            target: Target::InProcess(|| uuid::Uuid::new_v4().as_u128()),
            bits: 128,
            node_death: "nothing: no server".into(),
            coordination: "none",
        },
        Approach {
            name: "UUID v7 (uuid crate, in process)",
            target: Target::InProcess(|| uuid::Uuid::now_v7().as_u128()),
            bits: 128,
            node_death: "nothing: no server".into(),
            coordination: "none",
        },
        Approach {
            name: "Flickr original: 2 MariaDB, REPLACE INTO",
            target: flickr_target,
            bits: 64,
            node_death: "not measured: clients skip the dead server (as the pair above)".into(),
            coordination: "auto-increment-increment and -offset per server",
        },
    ];

    let scenarios: usize = approaches
        .iter()
        .map(|a| match a.target {
            Target::InProcess(_) | Target::Flickr(_) => CONNECTIONS.len(),
            Target::Missing(_) => 0,
            _ => CONNECTIONS.len() * PIPELINES.len(),
        })
        .sum();
    let bar = ProgressBar::new(scenarios as u64 + 1);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );

    let mut rows = Vec::new();
    let mut props = Vec::new();
    for approach in &approaches {
        let mut measurements = Vec::new();
        let mut sample = None;
        let mut repeats = 0;
        let result: Result<(), String> = (|| {
            for &c in &CONNECTIONS {
                // MySQL's protocol has no pipelining; in-process calls have nothing to pipeline.
                let pipelines: &[usize] = match approach.target {
                    Target::InProcess(_) | Target::Flickr(_) => &[1],
                    _ => &PIPELINES,
                };
                for &p in pipelines {
                    bar.set_message(format!("{} · {c} conn × {p}", approach.name));
                    let (m, ids, repeated) = measure(&runtime, &approach.target, c, p, budget)
                        .map_err(|e| e.to_string())?;
                    repeats += repeated;
                    if c == 1 && p == 1 {
                        sample = Some(ids);
                    }
                    measurements.push(m);
                    bar.inc(1);
                }
            }
            Ok(())
        })();
        let result = match (&approach.target, result) {
            (Target::Missing(why), _) => Err(why.clone()),
            (_, Err(e)) => Err(e),
            (_, Ok(())) => Ok(measurements),
        };
        props.push(Properties {
            name: approach.name.to_string(),
            bits: approach.bits,
            out_of_order: sample.as_deref().map(properties::out_of_order),
            k: sample.as_deref().map(properties::k_ordering),
            duplicates: result.is_ok().then_some(repeats),
            node_death: approach.node_death.clone(),
            coordination: approach.coordination.to_string(),
        });
        rows.push(Row {
            name: approach.name.to_string(),
            results: result,
        });
    }

    bar.set_message("a node of the ticket pair dies mid-run");
    let death = runtime.block_on(node_death(&pair, &mut even, budget));
    if let Some(p) = props
        .iter_mut()
        .find(|p| p.name.starts_with("TICKET.NEXT, odd/even"))
    {
        p.node_death = death;
    }
    bar.inc(1);
    bar.finish_and_clear();

    let out = root.join("target/compare");
    std::fs::create_dir_all(&out)?;
    write_report(&out, &rows, &props, quick, budget)?;
    println!("{}", report::summary(&rows));
    println!("report: {}", out.join("report.md").display());
    drop(flickr);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
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
    Ok(())
}

/// One scenario: its measurement, its IDs in arrival order (UUIDs by their top 64 bits, which
/// hold the time in v7), and how many IDs repeated.
fn measure(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    connections: usize,
    pipeline: usize,
    budget: Budget,
) -> Result<(Measurement, Vec<u64>, usize)> {
    let with_repeats = |(m, ids): (Measurement, Vec<u64>)| {
        let repeated = properties::duplicates(&ids);
        (m, ids, repeated)
    };
    match target {
        Target::Resp { url, command } => {
            let (url, command) = (url.clone(), command.clone());
            let run = runtime.block_on(drive::run(
                connections,
                pipeline,
                budget,
                || {
                    let url = url.clone();
                    async move {
                        Ok(redis::Client::open(url)?
                            .get_multiplexed_async_connection()
                            .await?)
                    }
                },
                move |conn: &mut MultiplexedConnection, p| {
                    let mut pipe = redis::pipe();
                    for _ in 0..p {
                        pipe.cmd(command[0]);
                        for arg in &command[1..] {
                            pipe.arg(*arg);
                        }
                    }
                    let mut conn = conn.clone();
                    async move {
                        let replies: Vec<Value> = pipe.query_async(&mut conn).await?;
                        Ok(flatten(replies))
                    }
                },
            ));
            run.map(with_repeats)
        }
        Target::RoundRobin(client) => {
            let client = Arc::clone(client);
            let run = runtime.block_on(drive::run(
                connections,
                pipeline,
                budget,
                || {
                    let client = Arc::clone(&client);
                    async move { Ok(client) }
                },
                |client: &mut Arc<RoundRobin>, p| {
                    let client = Arc::clone(client);
                    async move {
                        let calls = (0..p).map(|_| client.next("default"));
                        futures::future::join_all(calls)
                            .await
                            .into_iter()
                            .collect::<Result<Vec<u64>>>()
                    }
                },
            ));
            run.map(with_repeats)
        }
        Target::Flickr(urls) => {
            let urls = urls.clone();
            let run = runtime.block_on(drive::run(
                connections,
                pipeline,
                budget,
                || {
                    let urls = urls.clone();
                    async move {
                        Ok(Arc::new(tokio::sync::Mutex::new(
                            FlickrClient::connect(&urls).await?,
                        )))
                    }
                },
                |client: &mut Arc<tokio::sync::Mutex<FlickrClient>>, _| {
                    let client = Arc::clone(client);
                    async move { Ok(vec![client.lock().await.ticket().await?]) }
                },
            ));
            run.map(with_repeats)
        }
        Target::InProcess(make) => {
            let (m, ids) = drive::in_process(connections, budget, *make);
            let repeated = properties::duplicates(&ids);
            Ok((
                m,
                ids.into_iter().map(|id| (id >> 64) as u64).collect(),
                repeated,
            ))
        }
        Target::Missing(why) => anyhow::bail!("{why}"),
    }
}

fn flatten(replies: Vec<Value>) -> Vec<u64> {
    let mut ids = Vec::with_capacity(replies.len());
    for reply in replies {
        match reply {
            Value::Int(id) => ids.push(id as u64),
            Value::Array(items) => ids.extend(items.into_iter().filter_map(|v| match v {
                Value::Int(id) => Some(id as u64),
                _ => None,
            })),
            _ => {}
        }
    }
    ids
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
    quick: bool,
    budget: Budget,
) -> Result<()> {
    let xs: Vec<String> = CONNECTIONS.iter().map(|c| c.to_string()).collect();
    let throughput: Vec<(String, Vec<f64>)> = rows
        .iter()
        .filter_map(|r| {
            let ms = r.results.as_ref().ok()?;
            let line = CONNECTIONS
                .iter()
                .map(|&c| {
                    ms.iter()
                        .find(|m| m.connections == c && m.pipeline == 1)
                        .map_or(0.0, |m| m.ids_per_s)
                })
                .collect();
            Some((r.name.clone(), line))
        })
        .collect();
    std::fs::write(
        out.join("throughput.svg"),
        svg::lines(
            "IDs per second, one request in flight per connection",
            "connections",
            "IDs/s (log scale)",
            &xs,
            &throughput,
        ),
    )?;
    let latencies: Vec<(String, Vec<u32>)> = rows
        .iter()
        .filter_map(|r| {
            let m = r
                .results
                .as_ref()
                .ok()?
                .iter()
                .find(|m| m.connections == 16 && m.pipeline == 1)?;
            (!m.samples_us.is_empty()).then(|| (r.name.clone(), m.samples_us.clone()))
        })
        .collect();
    std::fs::write(
        out.join("latency-cdf.svg"),
        svg::cdf(
            "Round-trip latency, 16 connections, unpipelined",
            &latencies,
        ),
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
    md.push_str("![throughput](throughput.svg)\n\n![latency](latency-cdf.svg)\n\n## Throughput and latency\n\n");
    md.push_str(&report::results_table(rows));
    md.push_str("\n## Properties\n\nOut-of-order share and k-ordering: the IDs of the one-connection unpipelined run (one\n");
    md.push_str("thread for UUIDs, by their top 64 bits) in the order they arrived: 0% means every ID was larger\n");
    md.push_str("than all before it. Repeats: over every run (UUIDs compared whole). The module may run up to\n");
    md.push_str("`idgen.max-drift-ms` ahead of the clock, so short batched runs can exceed 4,096,000 IDs/s;\n");
    md.push_str("longer ones are held to it and show refusals as errors.\n\n");
    md.push_str(&report::properties_table(props));
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
        "Machine: {} cores ({cpu}), Linux {}; {}; {}.",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        run("uname", &["-r"]),
        run("redis-server", &["--version"]),
        run("rustc", &["--version"]),
    )
}
