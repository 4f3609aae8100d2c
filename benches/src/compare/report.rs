//! The report: markdown tables (throughput and latency; properties) and a terminal summary.

use std::fmt::Write;

use super::Row;

/// One approach's properties: measured where they can be, stated where they cannot.
#[derive(Clone, Debug)]
pub struct Properties {
    pub name: String,
    /// Bits per ID.
    pub bits: u32,
    /// Share of IDs out of order when merged by arrival (16 connections), if measured.
    pub out_of_order: Option<f64>,
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

/// The throughput and latency table.
pub fn results_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| approach | connections | in flight each | IDs/s | p50 µs | p99 µs | p99.9 µs | errors |\n|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        match &row.results {
            Ok(ms) => {
                for m in ms {
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | {} | {} | {} | {} | {} |",
                        row.name,
                        m.connections,
                        m.pipeline,
                        fmt_rate(m.ids_per_s),
                        fmt_us(m.latency_us[0]),
                        fmt_us(m.latency_us[1]),
                        fmt_us(m.latency_us[2]),
                        m.errors
                    );
                }
            }
            Err(why) => {
                let _ = writeln!(s, "| {} | - | - | not run: {why} | | | | |", row.name);
            }
        }
    }
    s
}

/// The properties table.
pub fn properties_table(props: &[Properties]) -> String {
    let mut s = String::from(
        "| approach | bits | out of order by arrival | k-ordering | repeats | when a node dies | coordination |\n|---|---|---|---|---|---|---|\n",
    );
    let opt = |v: Option<String>| v.unwrap_or_else(|| "n/a".into());
    for p in props {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.name,
            p.bits,
            opt(p.out_of_order.map(|v| format!("{:.2}%", v * 100.0))),
            opt(p.k.map(|k| k.to_string())),
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
            Ok(ms) => {
                let best = ms.iter().max_by(|a, b| a.ids_per_s.total_cmp(&b.ids_per_s));
                if let Some(m) = best {
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
