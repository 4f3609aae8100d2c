//! Two small SVG charts, written by hand: lines over categories, and latency CDFs.

use std::fmt::Write;

const W: f64 = 900.0;
const H: f64 = 560.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 360.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 24] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
    "#e6550d", "#31a354", "#756bb1", "#636363", "#6baed6", "#fd8d3c", "#74c476", "#9e9ac8",
];

fn frame(title: &str, x_label: &str, y_label: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="15">{title}</text>
<text x="{}" y="{}" text-anchor="middle">{x_label}</text>
<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{y_label}</text>
<line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="black"/>
<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="black"/>
"#,
        (LEFT + W - RIGHT) / 2.0,
        (LEFT + W - RIGHT) / 2.0,
        H - 12.0,
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM
    );
    s
}

fn legend(s: &mut String, names: &[&str]) {
    for (i, name) in names.iter().enumerate() {
        let y = TOP + 10.0 + i as f64 * 18.0;
        let _ = writeln!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            W - RIGHT + 12.0,
            y - 10.0,
            COLORS[i % COLORS.len()],
            W - RIGHT + 30.0,
            y,
            escape(name)
        );
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Values on a log-10 axis from `min` to `max`: the position between 0 and 1.
fn log_pos(v: f64, min: f64, max: f64) -> f64 {
    (v.max(min).log10() - min.log10()) / (max.log10() - min.log10()).max(1e-9)
}

/// The whole decades (powers of 10) that hold every value, at least 1.
fn decade_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (min, max) = values.fold((f64::MAX, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (
        10f64.powf(min.max(1.0).log10().floor()),
        10f64.powf(max.log10().ceil()),
    )
}

fn decades(min: f64, max: f64) -> Vec<f64> {
    let (lo, hi) = (min.log10().floor() as i32, max.log10().ceil() as i32);
    (lo..=hi).map(|e| 10f64.powi(e)).collect()
}

fn human(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{}M", v / 1e6),
        v if v >= 1e3 => format!("{}k", v / 1e3),
        v if v >= 1.0 => format!("{v}"),
        v => format!("{v}"),
    }
}

/// Lines of `series` over the categories `xs`, on a log-10 y axis.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    xs: &[String],
    series: &[(String, Vec<f64>)],
) -> String {
    let mut s = frame(title, x_label, y_label);
    let (min, max) = decade_range(
        series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|v| *v > 0.0),
    );
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let x_at = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / xs.len().max(1) as f64;
    let y_at = |v: f64| H - BOTTOM - plot_h * log_pos(v, min, max);
    for tick in decades(min, max) {
        let y = y_at(tick);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            human(tick)
        );
    }
    for (i, x) in xs.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            x_at(i),
            H - BOTTOM + 18.0,
            escape(x)
        );
    }
    for (n, (_, values)) in series.iter().enumerate() {
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0.0)
            .map(|(i, v)| format!("{:.1},{:.1}", x_at(i), y_at(*v)))
            .collect();
        let color = COLORS[n % COLORS.len()];
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            points.join(" ")
        );
        for p in &points {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(s, r#"<circle cx="{x}" cy="{y}" r="3" fill="{color}"/>"#);
        }
    }
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    legend(&mut s, &names);
    s.push_str("</svg>\n");
    s
}

/// Cumulative distributions of latency samples (microseconds), log-10 x axis.
pub fn cdf(title: &str, series: &[(String, Vec<u32>)]) -> String {
    let mut s = frame(
        title,
        "round-trip latency (µs, log scale)",
        "share of requests",
    );
    let (min, max) = decade_range(
        series
            .iter()
            .flat_map(|(_, v)| v.iter().map(|&x| x.max(1) as f64)),
    );
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let x_at = |v: f64| LEFT + plot_w * log_pos(v, min, max);
    let y_at = |q: f64| H - BOTTOM - plot_h * q;
    for tick in decades(min, max) {
        let x = x_at(tick);
        let _ = writeln!(
            s,
            r##"<line x1="{x}" y1="{TOP}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 18.0,
            human(tick)
        );
    }
    for q in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let y = y_at(q);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{q}</text>"#,
            LEFT - 6.0,
            y + 4.0
        );
    }
    for (n, (_, samples)) in series.iter().enumerate() {
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        let step = (sorted.len() / 400).max(1);
        let points: Vec<String> = sorted
            .iter()
            .enumerate()
            .step_by(step)
            .chain(sorted.last().map(|v| (sorted.len() - 1, v)))
            .map(|(i, &v)| {
                format!(
                    "{:.1},{:.1}",
                    x_at(v.max(1) as f64),
                    y_at((i + 1) as f64 / sorted.len() as f64)
                )
            })
            .collect();
        let color = COLORS[n % COLORS.len()];
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            points.join(" ")
        );
    }
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    legend(&mut s, &names);
    s.push_str("</svg>\n");
    s
}
