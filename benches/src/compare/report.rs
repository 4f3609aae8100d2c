//! The report: markdown tables (throughput and latency; properties) and a terminal summary.

use std::fmt::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use super::approach::Kind;
use super::{
    enough_samples, plot, Budget, Measurement, Row, CONNECTIONS, PIPELINES, SAMPLE_CONNECTIONS,
};

/// One approach's properties: measured where they can be, stated where they cannot.
#[derive(Clone, Debug)]
pub struct Properties {
    pub name: String,
    /// Where it makes its IDs.
    pub kind: Kind,
    /// Bits per ID.
    pub bits: u32,
    /// The most IDs per second it can issue by design.
    pub cap: String,
    /// Share of IDs out of order when merged by arrival, if measured.
    pub out_of_order: Option<f64>,
    /// The largest ID of the sample (IDs above 2^53 do not fit a JavaScript number).
    pub max_id: Option<u64>,
    /// k-ordering of the same sample.
    pub k: Option<usize>,
    /// Repeated IDs in every sample taken.
    pub duplicates: Option<usize>,
    /// What happens when a node dies.
    pub node_death: String,
    /// What coordination running it needs.
    pub coordination: String,
}

fn fmt_rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn fmt_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A percentile's figure, or "-" when too few samples were taken to show it.
fn percentile(m: &Measurement, index: usize) -> String {
    let quantile = [0.5, 0.99, 0.999][index];
    if enough_samples(quantile, m.samples) {
        fmt_us(m.latency_us[index])
    } else {
        "-".into()
    }
}

/// INCR's rate in the same scenario (in-process rows: the same connections, unpipelined).
fn incr_rate(rows: &[Row], m: &Measurement) -> Option<f64> {
    let incr = rows.iter().find(|r| r.kind == Kind::Baseline)?;
    let ms = incr.results.as_ref().ok()?;
    ms.iter()
        .find(|i| i.connections == m.connections && i.pipeline == m.pipeline)
        .map(|i| i.ids_per_s)
}

/// The throughput and latency table, each rate also as a ratio to INCR's in the same run and
/// scenario; percentiles with the count of samples they come from.
pub fn results_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| approach | connections | in flight each | IDs/s | × INCR | p50 µs | p99 µs | p99.9 µs | samples | errors |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        match &row.results {
            Ok(ms) => {
                for m in ms {
                    let ratio = incr_rate(rows, m)
                        .filter(|r| *r > 0.0)
                        .map_or("-".into(), |r| format!("{:.2}", m.ids_per_s / r));
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | {} | {ratio} | {} | {} | {} | {} | {} |",
                        row.name,
                        m.connections,
                        m.pipeline,
                        fmt_rate(m.ids_per_s),
                        percentile(m, 0),
                        percentile(m, 1),
                        percentile(m, 2),
                        m.samples,
                        m.errors
                    );
                }
            }
            Err(why) => {
                let _ = writeln!(s, "| {} | - | - | not run: {why} | | | | | | |", row.name);
            }
        }
    }
    s
}

/// Each sealed row's rate over its plain command's (the row named without " SEALED") in the
/// same scenario of the same run; the goal is 0.7 with requests in flight.
pub fn sealed_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| sealed | connections | in flight each | sealed IDs/s | plain IDs/s | × plain |\n|---|---|---|---|---|---|\n",
    );
    for sealed in rows.iter().filter(|r| r.name.contains(" SEALED")) {
        let plain_name = sealed.name.replace(" SEALED", "");
        let plain = rows.iter().find(|r| r.name == plain_name);
        let (Ok(ms), Some(Ok(plain_ms))) = (&sealed.results, plain.map(|p| &p.results)) else {
            continue;
        };
        for m in ms {
            let Some(p) = plain_ms
                .iter()
                .find(|p| p.connections == m.connections && p.pipeline == m.pipeline)
                .filter(|p| p.ids_per_s > 0.0)
            else {
                continue;
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.2} |",
                sealed.name,
                m.connections,
                m.pipeline,
                fmt_rate(m.ids_per_s),
                fmt_rate(p.ids_per_s),
                m.ids_per_s / p.ids_per_s
            );
        }
    }
    s
}

/// The properties table.
pub fn properties_table(props: &[Properties]) -> String {
    let mut s = String::from(
        "| approach | bits | cap | out of order by arrival | k-ordering | fits a JS number | repeats | when a node dies | coordination |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let opt = |v: Option<String>| v.unwrap_or_else(|| "n/a".into());
    for p in props {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.name,
            p.bits,
            p.cap,
            opt(p.out_of_order.map(|v| format!("{:.2}%", v * 100.0))),
            opt(p.k.map(|k| k.to_string())),
            opt(p.max_id.map(|m| fits_js(p.bits, m).to_string())),
            opt(p.duplicates.map(|d| d.to_string())),
            p.node_death,
            p.coordination
        );
    }
    s
}

/// The best throughput of each approach, for the terminal.
pub fn summary(rows: &[Row]) -> String {
    let mut s = String::new();
    for row in rows {
        match &row.results {
            Ok(_) => {
                if let Some(m) = fastest(row) {
                    let _ = writeln!(
                        s,
                        "  {:<44} {:>9} IDs/s best ({} conn x {}), p99 {} µs",
                        row.name,
                        fmt_rate(m.ids_per_s),
                        m.connections,
                        m.pipeline,
                        fmt_us(m.latency_us[1])
                    );
                }
            }
            Err(why) => {
                let _ = writeln!(s, "  {:<44} not run: {why}", row.name);
            }
        }
    }
    s
}

/// Whether every ID of the sample is an exact JavaScript number (at most 2^53).
fn fits_js(bits: u32, max_id: u64) -> &'static str {
    if bits <= 64 && max_id <= 1 << 53 {
        "yes"
    } else {
        "no"
    }
}

/// An approach's fastest scenario, if it ran.
fn fastest(row: &Row) -> Option<&Measurement> {
    let ms = row.results.as_ref().ok()?;
    ms.iter().max_by(|a, b| a.ids_per_s.total_cmp(&b.ids_per_s))
}

/// The summary at the top of the report: for each question a user asks, the approach that
/// wins in this run and its figure.
pub fn questions(rows: &[Row], props: &[Properties]) -> String {
    let mut s = String::from("| question | winner in this run | figure |\n|---|---|---|\n");
    let scenario = |row: &Row, c: usize, p: usize| -> Option<Measurement> {
        let ms = row.results.as_ref().ok()?;
        ms.iter()
            .find(|m| m.connections == c && m.pipeline == p)
            .cloned()
    };
    let over_network = |row: &&Row| row.kind.over_network();
    let best = |label: &str, pick: &dyn Fn(&Row) -> Option<(f64, String)>, high: bool| {
        let winner = rows
            .iter()
            .filter_map(|r| pick(r).map(|v| (r, v)))
            .max_by(|a, b| {
                let o = a.1 .0.total_cmp(&b.1 .0);
                if high {
                    o
                } else {
                    o.reverse()
                }
            });
        match winner {
            Some((row, (_, figure))) => format!("| {label} | {} | {figure} |\n", row.name),
            None => format!("| {label} | none ran | |\n"),
        }
    };
    let ratio = |m: &Measurement| {
        incr_rate(rows, m)
            .filter(|r| *r > 0.0)
            .map_or(String::new(), |r| {
                format!(", {:.2} × INCR", m.ids_per_s / r)
            })
    };
    s.push_str(&best(
        "fastest single call over the network (one ID per request, 1 connection, unpipelined)",
        &|r| {
            let single = over_network(&r) && r.kind != Kind::Batched;
            let m = scenario(r, 1, 1).filter(|_| single)?;
            Some((
                m.ids_per_s,
                format!(
                    "{} IDs/s, p50 {} µs{}",
                    fmt_rate(m.ids_per_s),
                    fmt_us(m.latency_us[0]),
                    ratio(&m)
                ),
            ))
        },
        true,
    ));
    s.push_str(&best(
        "fastest bulk over the network (any scenario)",
        &|r| {
            let m = fastest(r).filter(|_| over_network(&r))?;
            Some((
                m.ids_per_s,
                format!(
                    "{} IDs/s ({} conn × {}){}",
                    fmt_rate(m.ids_per_s),
                    m.connections,
                    m.pipeline,
                    ratio(m)
                ),
            ))
        },
        true,
    ));
    s.push_str(&best(
        "fastest in process (any thread count)",
        &|r| {
            let m = fastest(r).filter(|_| !over_network(&r))?;
            Some((
                m.ids_per_s,
                format!(
                    "{} IDs/s ({} threads)",
                    fmt_rate(m.ids_per_s),
                    m.connections
                ),
            ))
        },
        true,
    ));
    s.push_str(&best(
        "lowest p99 over the network (16 connections, unpipelined)",
        &|r| {
            let m = scenario(r, 16, 1)
                .filter(|m| over_network(&r) && enough_samples(0.99, m.samples))?;
            Some((
                m.latency_us[1],
                format!(
                    "p99 {} µs over {} samples",
                    fmt_us(m.latency_us[1]),
                    m.samples
                ),
            ))
        },
        false,
    ));
    let listed = |pred: &dyn Fn(&Properties) -> bool| -> String {
        let names: Vec<&str> = props
            .iter()
            .filter(|p| pred(p))
            .map(|p| p.name.as_str())
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join("; ")
        }
    };
    let measured: Vec<&Properties> = props
        .iter()
        .filter(|p| p.node_death.starts_with("measured"))
        .collect();
    let _ = writeln!(
        s,
        "| survives a node's death | {} | {} |",
        listed(&|p| p.node_death.starts_with("measured")),
        measured
            .iter()
            .map(|p| p.node_death.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    let _ = writeln!(
        s,
        "| needs no coordination | {} | by design |",
        listed(&|p| p.coordination == "none" && p.duplicates == Some(0))
    );
    let _ = writeln!(
        s,
        "| IDs fit a JavaScript number | {} | largest ID of the sample ≤ 2^53 |",
        listed(&|p| p.max_id.is_some_and(|m| fits_js(p.bits, m) == "yes"))
    );
    let least = props
        .iter()
        .filter(|p| p.kind.over_network())
        .filter_map(|p| p.k)
        .min();
    let _ = writeln!(
        s,
        "| most nearly time-ordered across clients | {} | k-ordering {} over {SAMPLE_CONNECTIONS} connections (every ID within k places of its sorted place) |",
        listed(&|p| least.is_some() && p.k == least && p.kind.over_network()),
        least.map_or("-".into(), |k| k.to_string()),
    );
    s
}

pub fn write_report(
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
                if !enough_samples(q, sorted.len()) {
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
    md.push_str(
        "`ticket_client::RoundRobin`). In-process generators: threads instead of connections,\n",
    );
    md.push_str("latency per call. Pipelined = 16 requests in flight per connection; latency is per round trip.\n\n");
    md.push_str("## Which approach wins\n\n");
    md.push_str(&questions(rows, props));
    md.push_str("\n![unpipelined](throughput-1.svg)\n\n![pipelined](throughput-16.svg)\n\n![latency tail](latency-tail.svg)\n\n## Throughput and latency\n\n");
    md.push_str("× INCR: the rate over INCR's on a plain redis-server in the same run and scenario. A percentile\n");
    md.push_str("is shown only with enough samples (p99: 100, p99.9: 1,000). In-process rows time batches of 64\n");
    md.push_str("calls, so their samples count batches; their errors are refusals (a spent millisecond).\n\n");
    md.push_str(&results_table(rows));
    md.push_str("\n## Sealed against plain\n\n");
    md.push_str("Each sealed command over the same command unsealed, from the rows above (measured one after\n");
    md.push_str("the other in this run; `benches/module.sh` alternates them in rounds). Goal: 0.7 with 16 in flight.\n\n");
    md.push_str(&sealed_table(rows));
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
    md.push_str(&properties_table(props));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, rates: &[(usize, f64)]) -> Row {
        let results = rates
            .iter()
            .map(|&(pipeline, ids_per_s)| Measurement {
                connections: 16,
                pipeline,
                ids_per_s,
                latency_us: [0.0; 3],
                samples: 0,
                samples_us: Vec::new(),
                errors: 0,
            })
            .collect();
        Row {
            name: name.into(),
            kind: Kind::Network,
            results: Ok(results),
        }
    }

    #[test]
    fn sealed_rows_are_set_against_their_plain_command_in_each_scenario() {
        let rows = [
            row("UUID7.NEXT SEALED (module)", &[(1, 90e3), (16, 700e3)]),
            row("SNOWFLAKE.NEXT (module)", &[(1, 100e3), (16, 1e6)]),
            row("SNOWFLAKE.NEXT SEALED (module)", &[(1, 95e3), (16, 750e3)]),
            row("UUID7.NEXT (module)", &[(1, 100e3)]),
        ];
        let table = sealed_table(&rows);
        let lines: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            lines,
            [
                "| UUID7.NEXT SEALED (module) | 16 | 1 | 90.0k | 100.0k | 0.90 |",
                "| SNOWFLAKE.NEXT SEALED (module) | 16 | 1 | 95.0k | 100.0k | 0.95 |",
                "| SNOWFLAKE.NEXT SEALED (module) | 16 | 16 | 750.0k | 1.00M | 0.75 |",
            ]
        );
    }
}
