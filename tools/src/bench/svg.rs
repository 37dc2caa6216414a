//! SVG line plots (log-log), one panel per (collective, p), drawn with `plotters`' SVG
//! backend: message sizes on a power-of-two axis, a legend right of each panel, the native
//! baseline thick and black on top, an optional dashed reference line (ratio 1.0).

use super::kind::short_size;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::Shift;
use plotters::prelude::*;

pub struct Series {
    pub label: String,
    /// (x, y), both > 0 (log axes).
    pub points: Vec<(f64, f64)>,
    /// Drawn thick and black (the native baseline).
    pub emphasis: bool,
}

pub struct Panel {
    pub title: String,
    pub ylabel: String,
    pub series: Vec<Series>,
    /// A dashed horizontal reference line (e.g. ratio 1.0).
    pub hline: Option<f64>,
}

const W: u32 = 560;
const H: u32 = 380;
/// Width of the legend right of each panel.
const LEGEND_W: u32 = 120;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Error = DrawingAreaErrorKind<std::io::Error>;

/// Fixed colour per label, so an algorithm has the same colour in every panel and file.
fn colour(label: &str) -> RGBColor {
    const NAMES: [&str; 9] = [
        "passthru",
        "auto",
        "binomial",
        "pipeline",
        "greedy",
        "greedy_uni",
        "circulant",
        "butterfly",
        "ring",
    ];
    const PALETTE: [u32; 10] = [
        0x7f7f7f, 0x17becf, 0x1f77b4, 0xff7f0e, 0x2ca02c, 0x98df8a, 0xd62728, 0x9467bd, 0x8c564b,
        0xe377c2,
    ];
    let c = PALETTE[NAMES.iter().position(|n| *n == label).unwrap_or(9)];
    RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
}

/// Line style of a series: the native baseline thick and black.
fn style(se: &Series) -> ShapeStyle {
    if se.emphasis {
        BLACK.stroke_width(4)
    } else {
        colour(&se.label).stroke_width(2)
    }
}

/// Tick values of a log axis over [lo, hi]: decades, or 1-2-5 steps for short ranges.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mults: &[f64] = if b - a <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut t = Vec::new();
    for e in a..=b {
        for m in mults {
            let v = m * 10f64.powi(e);
            if v >= lo * 0.999 && v <= hi * 1.001 {
                t.push(v);
            }
        }
    }
    t
}

/// Powers of two in [lo, hi]: (labelled ones, all). Labels on exponents divisible by a step
/// chosen for at most ~9 labels.
fn pow2_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (e0, e1) = (lo.log2().ceil() as i32, hi.log2().floor() as i32);
    let need = (e1 - e0 + 1 + 8) / 9;
    let step = [1, 2, 4, 10].into_iter().find(|s| *s >= need).unwrap_or(10);
    let all: Vec<i32> = (e0..=e1).collect();
    let labelled = all.iter().filter(|e| e.rem_euclid(step) == 0);
    (
        labelled.map(|&e| 2f64.powi(e)).collect(),
        all.iter().map(|&e| 2f64.powi(e)).collect(),
    )
}

fn fmt_val(v: f64) -> String {
    if v >= 1e4 {
        format!("{:.0e}", v)
    } else if v >= 1.0 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The axis ranges of a panel: (x lo, x hi, y lo, y hi), or None without a drawable point.
fn ranges(p: &Panel) -> Option<(f64, f64, f64, f64)> {
    let pts: Vec<(f64, f64)> = p
        .series
        .iter()
        .flat_map(|se| drawable(&se.points))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let mut xlo = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let mut xhi = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let mut ylo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let mut yhi = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    if let Some(h) = p.hline {
        ylo = ylo.min(h);
        yhi = yhi.max(h);
    }
    if xhi <= xlo {
        xlo /= 2.0;
        xhi *= 2.0;
    }
    // A little headroom on y (log scale).
    Some((xlo, xhi, ylo / 1.25, yhi * 1.25))
}

/// The points a log-log plot can show.
fn drawable(points: &[(f64, f64)]) -> impl Iterator<Item = (f64, f64)> + Clone + '_ {
    points
        .iter()
        .copied()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
}

/// Renders the panels in a grid (`cols` per row) as one SVG document.
pub fn render(panels: &[Panel], cols: usize) -> String {
    let cols = cols.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(cols).max(1);
    let mut s = String::new();
    {
        let root =
            SVGBackend::with_string(&mut s, (W * cols as u32, H * rows as u32)).into_drawing_area();
        let drawn = root.fill(&WHITE).and_then(|()| {
            let cells = root.split_evenly((rows, cols));
            panels
                .iter()
                .zip(&cells)
                .try_for_each(|(p, area)| panel(area, p))
        });
        if let Err(e) = drawn.and_then(|()| root.present()) {
            eprintln!("pcoll-bench: plot: {e}");
        }
    }
    s
}

fn panel(area: &Area, p: &Panel) -> Result<(), Error> {
    let (plot, legend) = area.split_horizontally(W - LEGEND_W);
    let title = ("sans-serif", 16).into_font().style(FontStyle::Bold);
    let Some((xlo, xhi, ylo, yhi)) = ranges(p) else {
        let at = ((W - LEGEND_W) as i32 / 2, 20);
        let centred = TextStyle::from(title).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Center,
        ));
        return plot.draw(&Text::new(p.title.clone(), at, centred));
    };
    let (xlab, xall) = pow2_ticks(xlo, xhi);
    let mut chart = ChartBuilder::on(&plot)
        .caption(&p.title, title)
        .margin_top(6)
        .margin_right(8)
        .x_label_area_size(42)
        .y_label_area_size(58)
        .build_cartesian_2d(
            (xlo..xhi)
                .log_scale()
                .with_key_points(xlab)
                .with_light_points(xall),
            (ylo..yhi).log_scale().with_key_points(log_ticks(ylo, yhi)),
        )?;
    let grid = RGBColor(0xe4, 0xe4, 0xe4);
    chart
        .configure_mesh()
        .bold_line_style(grid)
        .light_line_style(grid)
        .axis_style(RGBColor(0x33, 0x33, 0x33))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .x_desc("message size (bytes)")
        .y_desc(p.ylabel.as_str())
        .x_label_formatter(&|x| short_size(*x as usize))
        .y_label_formatter(&|y| fmt_val(*y))
        .draw()?;
    if let Some(h) = p.hline {
        chart.draw_series(DashedLineSeries::new(
            [(xlo, h), (xhi, h)],
            5,
            4,
            BLACK.stroke_width(1),
        ))?;
    }
    lines(&mut chart, p)?;
    legend_of(&legend, p)
}

type LogAxis = WithKeyPoints<LogCoord<f64>>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogAxis, LogAxis>>;

/// The series, emphasised ones last so they are on top, each a line with its points.
fn lines(chart: &mut Chart, p: &Panel) -> Result<(), Error> {
    let mut order: Vec<&Series> = p.series.iter().filter(|se| !se.emphasis).collect();
    order.extend(p.series.iter().filter(|se| se.emphasis));
    for se in order {
        let st = style(se);
        chart.draw_series(LineSeries::new(drawable(&se.points), st))?;
        let r = if se.emphasis { 3 } else { 2 };
        chart.draw_series(drawable(&se.points).map(|pt| Circle::new(pt, r, st.color.filled())))?;
    }
    Ok(())
}

/// The legend right of the panel, in the order given.
fn legend_of(area: &Area, p: &Panel) -> Result<(), Error> {
    let font = ("sans-serif", 14).into_font();
    for (i, se) in p.series.iter().enumerate() {
        let y = 44 + 16 * i as i32;
        area.draw(&PathElement::new(vec![(6, y), (30, y)], style(se)))?;
        area.draw(&Text::new(se.label.clone(), (36, y - 6), font.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_well_formed_svg() {
        let panel = Panel {
            title: "reduce p=4 <double>".into(),
            ylabel: "latency (us)".into(),
            series: vec![
                Series {
                    label: "native".into(),
                    points: vec![(8.0, 3.0), (1024.0, 10.0), (1048576.0, 900.0)],
                    emphasis: true,
                },
                Series {
                    label: "ring".into(),
                    points: vec![(8.0, 4.0), (1024.0, 8.0), (1048576.0, 700.0)],
                    emphasis: false,
                },
            ],
            hline: Some(1.0),
        };
        let s = render(&[panel], 2);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        // Each series: its line and its legend entry; native thick black, ring its colour.
        assert_eq!(
            s.matches(r##"stroke="#000000" stroke-width="4""##).count(),
            2
        );
        assert_eq!(
            s.matches(r##"stroke="#8C564B" stroke-width="2""##).count(),
            2
        );
        assert!(s.contains("&lt;double&gt;"));
        assert!(s.replace('\n', "").contains(">1M<"));
    }

    #[test]
    fn ticks() {
        assert_eq!(log_ticks(1.0, 1000.0), vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(0.5, 2.0), vec![0.5, 1.0, 2.0]);
        let (lab, all) = pow2_ticks(8.0, 4.0 * 1024.0 * 1024.0);
        assert_eq!(all.len(), 20);
        assert_eq!(lab[0], 16.0);
        assert!(lab.len() <= 10);
    }
}
