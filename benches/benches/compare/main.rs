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
use idgen_benches::compare::approach::{measure, Approach, Target};
use idgen_benches::compare::peers::{self, PeerKind};
use idgen_benches::compare::report::{self, Properties};
use idgen_benches::compare::{
    instructions, is_properties_sample, properties, python, Budget, Row, CONNECTIONS,
};
use idgen_tests::ticket::TicketServer;
use indicatif::{ProgressBar, ProgressStyle};
use ticket_client::RoundRobin;

mod setup;

use setup::{Setup, COORDINATOR_HORIZON_MS};

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
    // A quick run (make demo) is a first table in minutes: callgrind and the wheel's build take
    // longer than the rest of it, so their sections belong to the full run (make bench).
    let (counts, python) = if quick {
        let later = "Left out of a quick run: `make bench` (or `cargo bench --bench compare`) \
                     adds it.\n"
            .to_string();
        (later.clone(), later)
    } else {
        println!("counting instructions per request under callgrind...");
        let peer_modules = match &setup.peers {
            Ok(listed) => peer_modules(listed.iter().map(|(peer, _)| peer)),
            Err(_) => Vec::new(),
        };
        let counts = instruction_table(&root, &setup.dir, &peer_modules, 4_800);
        println!("the Python package beside Python's ID libraries (builds the wheel)...");
        let python = python::section(&root, &setup.module.url(), COORDINATOR_HORIZON_MS);
        (counts, python)
    };
    let out = root.join("target/compare");
    std::fs::create_dir_all(&out)?;
    report::write_report(
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
            "-p",
            "idgen-lease-worker",
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
