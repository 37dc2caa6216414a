//! `pcoll-sim scale`: predicted time against p (log-log), one panel per (collective, size):
//! every pcoll algorithm (thin), native's own algorithm (black, dashed) and the decision the
//! library makes (thick, grey under the lines). Everything here is modelled.

use super::choose;
use pcoll::algo::Collective;
use pcoll::config::Config;
use pcoll::model::native::Mpi;
use pcoll::tuning::size::format_size;
use pcoll::tuning::Table;
use std::fmt::Write as _;

const COLORS: [(&str, &str); 7] = [
    ("binomial", "#1f77b4"),
    ("pipeline", "#ff7f0e"),
    ("greedy", "#2ca02c"),
    ("greedy_uni", "#17becf"),
    ("circulant", "#d62728"),
    ("butterfly", "#9467bd"),
    ("ring", "#8c564b"),
];

/// One SVG with a grid of panels: rows = collectives, columns = sizes.
pub fn svg(cfg: &Config, table: &Table, mpi: Mpi, ps: &[usize], sizes: &[usize]) -> String {
    let (pw, ph) = (330.0, 230.0);
    let (ml, mt) = (60.0, 90.0);
    let cols = sizes.len();
    let rows = Collective::ALL.len();
    let w = ml + cols as f64 * (pw + 20.0) + 140.0;
    let h = mt + rows as f64 * (ph + 50.0) + 20.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='11'>\
         <rect width='100%' height='100%' fill='white'/>\
         <text x='{ml}' y='22' font-size='15'>Modelled time against p, {} native and pcoll's decision ({})</text>\
         <text x='{ml}' y='40'>alpha = {:.3e} s, beta = {:.3e} s/B, gamma = {:.3e} s/B; margin {}. Native: the algorithm the MPI's default selection runs (dashed black).</text>\
         <text x='{ml}' y='56'>Thick grey: pcoll's decision (model; table rules where p was measured). Nothing here is measured.</text>",
        mpi.name(),
        table.origin(),
        table.model().alpha,
        table.model().beta,
        table.model().gamma,
        table.margin()
    );
    for (r, &coll) in Collective::ALL.iter().enumerate() {
        for (k, &bytes) in sizes.iter().enumerate() {
            let x0 = ml + k as f64 * (pw + 20.0);
            let y0 = mt + r as f64 * (ph + 50.0);
            let cells: Vec<choose::Cell> = ps
                .iter()
                .filter_map(|&p| choose::cell(cfg, table, mpi, coll, p, bytes, true).ok())
                .collect();
            panel(&mut s, x0, y0, pw, ph, coll, bytes, &cells);
        }
    }
    // Legend.
    let lx = ml + cols as f64 * (pw + 20.0);
    let mut ly = mt + 10.0;
    for (name, c) in COLORS {
        let _ = write!(
            s,
            "<line x1='{lx}' y1='{ly}' x2='{}' y2='{ly}' stroke='{c}' stroke-width='1.5'/><text x='{}' y='{}'>{name}</text>",
            lx + 20.0,
            lx + 25.0,
            ly + 4.0
        );
        ly += 16.0;
    }
    let _ = write!(
        s,
        "<line x1='{lx}' y1='{ly}' x2='{}' y2='{ly}' stroke='black' stroke-width='2' stroke-dasharray='5,3'/><text x='{}' y='{}'>native</text>",
        lx + 20.0,
        lx + 25.0,
        ly + 4.0
    );
    ly += 16.0;
    let _ = write!(
        s,
        "<line x1='{lx}' y1='{ly}' x2='{}' y2='{ly}' stroke='#bbbbbb' stroke-width='9'/><text x='{}' y='{}'>decision</text>",
        lx + 20.0,
        lx + 25.0,
        ly + 4.0
    );
    s.push_str("</svg>\n");
    s
}

#[allow(clippy::too_many_arguments)]
fn panel(
    s: &mut String,
    x0: f64,
    y0: f64,
    pw: f64,
    ph: f64,
    coll: Collective,
    bytes: usize,
    cells: &[choose::Cell],
) {
    let _ = write!(
        s,
        "<text x='{x0}' y='{}' font-size='12'>{coll}, {}</text><rect x='{x0}' y='{y0}' width='{pw}' height='{ph}' fill='none' stroke='#999'/>",
        y0 - 6.0,
        format_size(bytes)
    );
    if cells.is_empty() {
        return;
    }
    let times = cells.iter().flat_map(|c| {
        c.prices
            .iter()
            .map(|x| x.1)
            .chain([c.native.1])
            .filter(|t| t.is_finite() && *t > 0.0)
    });
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for t in times {
        lo = lo.min(t);
        hi = hi.max(t);
    }
    if !(lo.is_finite() && hi > 0.0) {
        return;
    }
    let (ly0, ly1) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );
    let (px0, px1) = (
        (cells[0].p as f64).log2(),
        (cells[cells.len() - 1].p as f64)
            .log2()
            .max((cells[0].p as f64).log2() + 1.0),
    );
    let x = |p: usize| x0 + ((p as f64).log2() - px0) / (px1 - px0) * pw;
    let y = |t: f64| y0 + ph - (t.log10() - ly0) / (ly1 - ly0) * ph;
    // Axes: decades of time, powers of 4 of p.
    let mut d = ly0;
    while d <= ly1 {
        let yy = y(10f64.powf(d));
        let _ = write!(
            s,
            "<line x1='{x0}' y1='{yy}' x2='{}' y2='{yy}' stroke='#eee'/><text x='{}' y='{}' text-anchor='end'>1e{}</text>",
            x0 + pw,
            x0 - 3.0,
            yy + 4.0,
            d as i32
        );
        d += 1.0;
    }
    for c in cells
        .iter()
        .filter(|c| c.p.trailing_zeros() % 2 == 1 || c.p == cells[0].p)
    {
        let xx = x(c.p);
        let _ = write!(
            s,
            "<text x='{xx}' y='{}' text-anchor='middle'>{}</text>",
            y0 + ph + 13.0,
            c.p
        );
    }
    let poly = |pts: Vec<(f64, f64)>| {
        pts.iter()
            .map(|(a, b)| format!("{a:.1},{b:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The decision under everything.
    let dec: Vec<(f64, f64)> = cells
        .iter()
        .map(|c| (x(c.p), c.chosen_time()))
        .filter(|(_, t)| t.is_finite() && *t > 0.0)
        .map(|(a, t)| (a, y(t)))
        .collect();
    let _ = write!(
        s,
        "<polyline points='{}' fill='none' stroke='#bbbbbb' stroke-width='9' stroke-linejoin='round' opacity='0.8'/>",
        poly(dec)
    );
    for (name, col) in COLORS {
        let pts: Vec<(f64, f64)> = cells
            .iter()
            .filter_map(|c| c.prices.iter().find(|x| x.0 == name).map(|x| (c.p, x.1)))
            .filter(|(_, t)| t.is_finite() && *t > 0.0)
            .map(|(p, t)| (x(p), y(t)))
            .collect();
        if pts.len() > 1 {
            let _ = write!(
                s,
                "<polyline points='{}' fill='none' stroke='{col}' stroke-width='1.5'/>",
                poly(pts)
            );
        }
    }
    let nat: Vec<(f64, f64)> = cells
        .iter()
        .filter(|c| c.native.1 > 0.0)
        .map(|c| (x(c.p), y(c.native.1)))
        .collect();
    let _ = write!(
        s,
        "<polyline points='{}' fill='none' stroke='black' stroke-width='2' stroke-dasharray='5,3'/>",
        poly(nat)
    );
    // Which algorithm native runs and pcoll decides, at the ends and the middle.
    let mid = &cells[cells.len() / 2];
    let last = &cells[cells.len() - 1];
    let _ = write!(
        s,
        "<text x='{}' y='{}' font-size='10'>p={}: native {} / pcoll {}</text><text x='{}' y='{}' font-size='10'>p={}: native {} / pcoll {}</text>",
        x0 + 4.0,
        y0 + 12.0,
        mid.p,
        mid.native.0,
        mid.decision.algorithm,
        x0 + 4.0,
        y0 + 24.0,
        last.p,
        last.native.0,
        last.decision.algorithm
    );
}
