//! The report's charts, drawn with plotters into SVG: lines over categories on a log-10 axis.

use plotters::prelude::*;

/// The chart's size in pixels.
const SIZE: (u32, u32) = (900, 560);

/// An SVG of `series` (name, one value per category; 0 for none) as lines over the categories
/// `xs`, on a log-10 y axis spanning the whole decades that hold every value.
///
/// # Errors
/// What plotters reports when it cannot draw.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    xs: &[String],
    series: &[(String, Vec<f64>)],
) -> anyhow::Result<String> {
    let (min, max) = decade_range(series.iter().flat_map(|(_, v)| v.iter().copied()));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .right_y_label_area_size(0)
            .build_cartesian_2d(
                (0..xs.len().saturating_sub(1)).into_segmented(),
                (min..max).log_scale(),
            )
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .x_labels(xs.len())
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) => xs.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&|v| human(*v))
            .draw()
            .map_err(drawing)?;
        for (n, (name, values)) in series.iter().enumerate() {
            let color = Palette99::pick(n).to_rgba();
            let points: Vec<_> = values
                .iter()
                .enumerate()
                .filter(|(_, v)| **v > 0.0)
                .map(|(i, v)| (SegmentValue::CenterOf(i), *v))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(drawing)?
                .label(name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(drawing)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(drawing)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

fn drawing<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the chart: {e:?}")
}

/// The whole decades (powers of 10) that hold every positive value, at least 1 to 10.
fn decade_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (min, max) = values
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let min = 10f64.powf(min.clamp(1.0, max).log10().floor());
    let max = 10f64.powf(max.log10().ceil()).max(min * 10.0);
    (min, max)
}

/// A value on the axis: 10k, 2.5M.
fn human(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{}M", v / 1e6),
        v if v >= 1e3 => format!("{}k", v / 1e3),
        v => format!("{v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_holds_every_category_series_and_decade() {
        let xs = ["1".to_string(), "4".into(), "16".into()];
        let series = [
            ("INCR".to_string(), vec![20_000.0, 70_000.0, 120_000.0]),
            ("SNOWFLAKE.NEXT".to_string(), vec![18_000.0, 0.0, 110_000.0]),
        ];
        let svg = lines("IDs per second", "connections", "IDs/s", &xs, &series).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40.min(svg.len())]);
        for text in [
            "IDs per second",
            "connections",
            "INCR",
            "SNOWFLAKE.NEXT",
            "16",
            "10k",
            "1M",
        ] {
            assert!(svg.contains(text), "{text} is missing");
        }
        assert_eq!(
            svg.matches("<circle").count(),
            5,
            "no point where a value is 0"
        );
    }

    #[test]
    fn the_axis_spans_whole_decades() {
        assert_eq!(
            decade_range([15_000.0, 2_500_000.0].into_iter()),
            (10_000.0, 10_000_000.0)
        );
        assert_eq!(decade_range([0.0].into_iter()), (1.0, 10.0));
        assert_eq!(human(2_500_000.0), "2.5M");
    }
}
