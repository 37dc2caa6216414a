//! `pcoll-sim scale`: predicted time against p (log-log), one panel per (collective, size):
//! every pcoll algorithm (thin), native's own algorithm (black, dashed) and the decision the
//! library makes (thick, grey under the lines). Everything here is modelled. Drawn with
//! `plotters`' SVG backend.

use super::choose;
use pcoll::algo::Collective;
use pcoll::config::Config;
use pcoll::model::native::Mpi;
use pcoll::tuning::size::format_size;
use pcoll::tuning::Table;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

const COLORS: [(&str, RGBColor); 9] = [
    ("binomial", RGBColor(0x1f, 0x77, 0xb4)),
    ("pipeline", RGBColor(0xff, 0x7f, 0x0e)),
    ("greedy", RGBColor(0x2c, 0xa0, 0x2c)),
    ("greedy_uni", RGBColor(0x17, 0xbe, 0xcf)),
    ("circulant", RGBColor(0xd6, 0x27, 0x28)),
    ("butterfly", RGBColor(0x94, 0x67, 0xbd)),
    ("ring", RGBColor(0x8c, 0x56, 0x4b)),
    ("binary", RGBColor(0xbc, 0xbd, 0x22)),
    ("fibonacci", RGBColor(0xe3, 0x77, 0xc2)),
];
const DECISION: RGBColor = RGBColor(0xbb, 0xbb, 0xbb);

/// Panel size, the header above the grid and the legend right of it.
const PW: u32 = 350;
const PH: u32 = 280;
const HEADER: u32 = 80;
const LEGEND: u32 = 140;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Error = DrawingAreaErrorKind<std::io::Error>;
type LogAxis = WithKeyPoints<LogCoord<f64>>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogAxis, LogAxis>>;

/// One SVG with a grid of panels: rows = collectives, columns = sizes.
pub fn svg(cfg: &Config, table: &Table, mpi: Mpi, ps: &[usize], sizes: &[usize]) -> String {
    let (cols, rows) = (sizes.len().max(1), Collective::ALL.len());
    let (w, h) = (
        cols as u32 * PW + LEGEND + 20,
        rows as u32 * PH + HEADER + 10,
    );
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        let drawn = root.fill(&WHITE).and_then(|()| {
            let (top, rest) = root.split_vertically(HEADER);
            header(&top, table, mpi)?;
            let (grid, legend) = rest.split_horizontally(cols as u32 * PW);
            let cells = grid.split_evenly((rows, cols));
            for (r, &coll) in Collective::ALL.iter().enumerate() {
                for (k, &bytes) in sizes.iter().enumerate() {
                    let cs: Vec<choose::Cell> = ps
                        .iter()
                        .filter_map(|&p| choose::cell(cfg, table, mpi, coll, p, bytes, true).ok())
                        .collect();
                    panel(&cells[r * cols + k], coll, bytes, &cs)?;
                }
            }
            legend_of(&legend)
        });
        if let Err(e) = drawn.and_then(|()| root.present()) {
            eprintln!("pcoll-sim: scale: {e}");
        }
    }
    s
}

fn header(area: &Area, table: &Table, mpi: Mpi) -> Result<(), Error> {
    let m = table.model();
    let lines = [
        format!(
            "Modelled time against p, {} native and pcoll's decision ({})",
            mpi.name(),
            table.origin()
        ),
        format!(
            "alpha = {:.3e} s, beta = {:.3e} s/B, gamma = {:.3e} s/B; margin {}. Native: the algorithm the MPI's default selection runs (dashed black).",
            m.alpha, m.beta, m.gamma, table.margin()
        ),
        "Thick grey: pcoll's decision (model; table rules where p was measured). Nothing here is measured.".into(),
    ];
    for (i, l) in lines.into_iter().enumerate() {
        let size = if i == 0 { 19 } else { 14 };
        area.draw(&Text::new(l, (60, 8 + 22 * i as i32), ("sans-serif", size)))?;
    }
    Ok(())
}

/// The time range of a panel in whole decades, or None without a positive finite time.
fn decades(cells: &[choose::Cell]) -> Option<(f64, f64)> {
    let times = cells.iter().flat_map(|c| {
        c.prices
            .iter()
            .map(|x| x.1)
            .chain([c.native.1])
            .filter(|t| t.is_finite() && *t > 0.0)
    });
    let (lo, hi) = times.fold((f64::INFINITY, 0.0f64), |(lo, hi), t| {
        (lo.min(t), hi.max(t))
    });
    if !(lo.is_finite() && hi > 0.0) {
        return None;
    }
    let d0 = lo.log10().floor();
    Some((d0, hi.log10().ceil().max(d0 + 1.0)))
}

fn panel(area: &Area, coll: Collective, bytes: usize, cells: &[choose::Cell]) -> Result<(), Error> {
    let title = format!("{coll}, {}", format_size(bytes));
    let Some((d0, d1)) = decades(cells) else {
        return area.draw(&Text::new(title, (60, 8), ("sans-serif", 15)));
    };
    let (p0, p1) = (cells[0].p as f64, cells[cells.len() - 1].p as f64);
    let p1 = p1.max(2.0 * p0);
    // p labelled at the odd powers of two (2, 8, 32, ...) and at the first p.
    let pticks: Vec<f64> = cells
        .iter()
        .filter(|c| c.p.trailing_zeros() % 2 == 1 || c.p == cells[0].p)
        .map(|c| c.p as f64)
        .collect();
    let tticks: Vec<f64> = (d0 as i32..=d1 as i32).map(|d| 10f64.powi(d)).collect();
    let mut c = ChartBuilder::on(area)
        .caption(&title, ("sans-serif", 15))
        .margin(6)
        .margin_right(14)
        .x_label_area_size(22)
        .y_label_area_size(46)
        .build_cartesian_2d(
            (p0..p1).log_scale().with_key_points(pticks),
            (10f64.powf(d0)..10f64.powf(d1))
                .log_scale()
                .with_key_points(tticks),
        )?;
    c.configure_mesh()
        .disable_x_mesh()
        .bold_line_style(RGBColor(0xee, 0xee, 0xee))
        .label_style(("sans-serif", 13))
        .x_label_formatter(&|p| format!("{}", p.round() as usize))
        .y_label_formatter(&|t| format!("1e{}", t.log10().round() as i32))
        .draw()?;
    lines(&mut c, cells)?;
    annotate(area, cells)
}

/// The decision (under everything), each algorithm, native dashed on top.
fn lines(c: &mut Chart, cells: &[choose::Cell]) -> Result<(), Error> {
    let ok = |t: &f64| t.is_finite() && *t > 0.0;
    let dec = cells
        .iter()
        .map(|c| (c.p as f64, c.chosen_time()))
        .filter(|(_, t)| ok(t));
    c.draw_series(LineSeries::new(dec, DECISION.mix(0.8).stroke_width(9)))?;
    for (name, col) in COLORS {
        let pts: Vec<(f64, f64)> = cells
            .iter()
            .filter_map(|c| {
                c.prices
                    .iter()
                    .find(|x| x.0 == name)
                    .map(|x| (c.p as f64, x.1))
            })
            .filter(|(_, t)| ok(t))
            .collect();
        if pts.len() > 1 {
            c.draw_series(LineSeries::new(pts, col.stroke_width(2)))?;
        }
    }
    let nat = cells
        .iter()
        .filter(|c| c.native.1 > 0.0)
        .map(|c| (c.p as f64, c.native.1));
    c.draw_series(DashedLineSeries::new(nat, 6, 4, BLACK.stroke_width(2)))?;
    Ok(())
}

/// Which algorithm native runs and pcoll decides, at the middle and the largest p.
fn annotate(area: &Area, cells: &[choose::Cell]) -> Result<(), Error> {
    let (mid, last) = (&cells[cells.len() / 2], &cells[cells.len() - 1]);
    for (i, c) in [mid, last].into_iter().enumerate() {
        let text = format!(
            "p={}: native {} / pcoll {}",
            c.p, c.native.0, c.decision.algorithm
        );
        area.draw(&Text::new(
            text,
            (56, 28 + 14 * i as i32),
            ("sans-serif", 12),
        ))?;
    }
    Ok(())
}

fn legend_of(area: &Area) -> Result<(), Error> {
    let font = ("sans-serif", 14);
    let entry = |i: usize| 14 + 18 * i as i32;
    for (i, (name, col)) in COLORS.iter().enumerate() {
        let y = entry(i);
        area.draw(&PathElement::new(
            vec![(6, y), (30, y)],
            col.stroke_width(2),
        ))?;
        area.draw(&Text::new(*name, (36, y - 7), font))?;
    }
    let y = entry(COLORS.len());
    area.draw(&DashedPathElement::new(
        vec![(6, y), (30, y)],
        6,
        4,
        BLACK.stroke_width(2),
    ))?;
    area.draw(&Text::new("native", (36, y - 7), font))?;
    let y = entry(COLORS.len() + 1);
    area.draw(&PathElement::new(
        vec![(6, y), (30, y)],
        DECISION.stroke_width(9),
    ))?;
    area.draw(&Text::new("decision", (36, y - 7), font))
}
