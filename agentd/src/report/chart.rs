//! SVG charts drawn with plotters: lines over a shared x axis, a histogram,
//! bars. Each chart carries its axis ranges and plotting-area pixels, so a
//! reader (the page's test) can turn the drawn points back into data.

use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width and height of every chart, pixels.
const SIZE: (u32, u32) = (900, 320);

/// Line colours, in series order (hex, as plotters writes them).
pub const PALETTE: [(u8, u8, u8); 6] = [
    (0x1f, 0x77, 0xb4),
    (0xff, 0x7f, 0x0e),
    (0x2c, 0xa0, 0x2c),
    (0xd6, 0x27, 0x28),
    (0x94, 0x67, 0xbd),
    (0x8c, 0x56, 0x4b),
];

/// The colour of step marks (vertical lines).
const MARK: RGBColor = RGBColor(0x99, 0x99, 0x99);

/// One named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
}

/// A drawn chart: its SVG and how to read it back.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The SVG document (no XML declaration: it is inlined in HTML).
    pub svg: String,
    /// x axis range.
    pub x: (f64, f64),
    /// y axis range.
    pub y: (f64, f64),
    /// Plotting area in pixels: left, right, top, bottom.
    pub pixels: (i32, i32, i32, i32),
    /// Series name and colour (`#rrggbb`), in drawing order.
    pub legend: Vec<(String, String)>,
}

/// Hex form of a palette colour, as plotters writes it in SVG.
pub fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02X}{g:02X}{b:02X}")
}

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("cannot draw a chart: {e}")
}

/// y range from 0 to a little above the largest value (1 when all are 0).
fn y_top(values: impl Iterator<Item = f64>) -> f64 {
    let max = values.fold(0.0_f64, f64::max);
    if max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// x range of all points (0..1 when there are none, widened when flat).
fn x_range(series: &[Series]) -> (f64, f64) {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    match (lo.is_finite(), hi > lo) {
        (true, true) => (lo, hi),
        (true, false) => (lo - 1.0, lo + 1.0),
        _ => (0.0, 1.0),
    }
}

fn area(svg: &mut String) -> Result<DrawingArea<SVGBackend<'_>, Shift>> {
    let root = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    Ok(root)
}

/// The plotting context every chart draws into: f64 axes on an SVG.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart titled `title` over the axis ranges `x` and `y` on `root`.
fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    x: (f64, f64),
    y: (f64, f64),
) -> Result<Plot<'a, 'b>> {
    ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x.0..x.1, y.0..y.1)
        .map_err(err)
}

/// Writes the drawn chart out; returns its plotting area in pixels.
fn present(
    chart: &Plot<'_, '_>,
    root: &DrawingArea<SVGBackend<'_>, Shift>,
) -> Result<(i32, i32, i32, i32)> {
    let (px, py) = chart.plotting_area().get_pixel_range();
    root.present().map_err(err)?;
    Ok((px.start, px.end, py.start, py.end))
}

/// Lines of `series` against a shared x axis, with vertical marks at `marks`.
pub fn lines(
    title: &str,
    (x_desc, y_desc): (&str, &str),
    series: &[Series],
    marks: &[f64],
) -> Result<Chart> {
    let x = x_range(series);
    let y = (
        0.0,
        y_top(series.iter().flat_map(|s| s.points.iter().map(|p| p.1))),
    );
    let mut svg = String::new();
    let mut legend = Vec::new();
    let pixels;
    {
        let root = area(&mut svg)?;
        let mut chart = frame(&root, title, x, y)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .light_line_style(WHITE)
            .draw()
            .map_err(err)?;
        for &m in marks {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(m, y.0), (m, y.1)],
                    MARK.stroke_width(1),
                )))
                .map_err(err)?;
        }
        for (i, s) in series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let color = RGBColor(c.0, c.1, c.2);
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(err)?
                .label(s.name.as_str())
                .legend(move |(lx, ly)| {
                    PathElement::new(vec![(lx, ly), (lx + 18, ly)], color.stroke_width(2))
                });
            legend.push((s.name.clone(), hex(c)));
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.85))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(err)?;
        }
        pixels = present(&chart, &root)?;
    }
    Ok(Chart {
        svg,
        x,
        y,
        pixels,
        legend,
    })
}

/// Bars of `values`, one per label, in order (x: the label's index).
pub fn bars(title: &str, y_desc: &str, labels: &[String], values: &[f64]) -> Result<Chart> {
    let n = labels.len().max(1);
    let x = (-0.5, n as f64 - 0.5);
    let y = (0.0, y_top(values.iter().copied()));
    let mut svg = String::new();
    let pixels;
    let c = PALETTE[0];
    {
        let root = area(&mut svg)?;
        let mut chart = frame(&root, title, x, y)?;
        let names = labels.to_vec();
        chart
            .configure_mesh()
            .y_desc(y_desc)
            .x_labels(n)
            .x_label_formatter(&|v| {
                let i = v.round();
                if (v - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .light_line_style(WHITE)
            .draw()
            .map_err(err)?;
        chart
            .draw_series(values.iter().enumerate().map(|(i, &v)| {
                let at = i as f64;
                Rectangle::new(
                    [(at - 0.35, 0.0), (at + 0.35, v)],
                    RGBColor(c.0, c.1, c.2).filled(),
                )
            }))
            .map_err(err)?;
        pixels = present(&chart, &root)?;
    }
    Ok(Chart {
        svg,
        x,
        y,
        pixels,
        legend: vec![(y_desc.to_string(), hex(c))],
    })
}

/// A histogram of `values` in bins of `width` (x: a bin's lower edge).
pub fn histogram(title: &str, x_desc: &str, values: &[u64], width: u64) -> Result<Chart> {
    let counts = bin_counts(values, width);
    let top = counts.keys().next_back().copied().unwrap_or(0);
    let x = (0.0, (top + width) as f64);
    let y = (0.0, y_top(counts.values().map(|&c| c as f64)));
    let mut svg = String::new();
    let pixels;
    let c = PALETTE[0];
    {
        let root = area(&mut svg)?;
        let mut chart = frame(&root, title, x, y)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("blocks")
            .light_line_style(WHITE)
            .draw()
            .map_err(err)?;
        chart
            .draw_series(counts.iter().map(|(&lo, &n)| {
                Rectangle::new(
                    [(lo as f64, 0.0), ((lo + width) as f64, n as f64)],
                    RGBColor(c.0, c.1, c.2).filled(),
                )
            }))
            .map_err(err)?;
        pixels = present(&chart, &root)?;
    }
    Ok(Chart {
        svg,
        x,
        y,
        pixels,
        legend: vec![("blocks".to_string(), hex(c))],
    })
}

/// Values per bin of `width` (key: the bin's lower edge), empty bins left out.
pub fn bin_counts(values: &[u64], width: u64) -> std::collections::BTreeMap<u64, u64> {
    let width = width.max(1);
    let mut counts = std::collections::BTreeMap::new();
    for v in values {
        *counts.entry(v / width * width).or_insert(0) += 1;
    }
    counts
}

/// A bin width giving at most about 30 bins up to `max`, rounded to 1, 2 or 5
/// times a power of ten.
pub fn bin_width(max: u64) -> u64 {
    let raw = (max / 30).max(1);
    let mut unit = 1;
    loop {
        for m in [1, 2, 5] {
            if unit * m >= raw {
                return unit * m;
            }
        }
        unit *= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_round_and_counted() {
        assert_eq!(bin_width(10), 1);
        assert_eq!(bin_width(100), 5);
        assert_eq!(bin_width(3000), 100);
        let c = bin_counts(&[0, 1, 4, 5, 12], 5);
        assert_eq!(
            c.into_iter().collect::<Vec<_>>(),
            vec![(0, 3), (5, 1), (10, 1)]
        );
    }

    #[test]
    fn a_line_chart_is_svg_with_its_series_colour() {
        let s = Series {
            name: "tps".into(),
            points: vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)],
        };
        let c = lines("t", ("s", "tx/s"), &[s], &[1.0]).unwrap();
        assert!(c.svg.starts_with("<svg"), "{}", &c.svg[..40]);
        assert!(c.svg.contains(&hex(PALETTE[0])));
        assert_eq!(c.x, (0.0, 2.0));
        assert!(c.pixels.0 < c.pixels.1 && c.pixels.2 < c.pixels.3);
    }
}
