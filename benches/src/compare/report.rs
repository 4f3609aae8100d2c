//! The report: markdown tables (throughput and latency; properties) and a terminal summary.

use std::fmt::Write;

use super::approach::Kind;
use super::{enough_samples, Measurement, Row, SAMPLE_CONNECTIONS};

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
