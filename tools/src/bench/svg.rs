//! Hand-written SVG line plots (log-log), one panel per (collective, p); no plotting crate.

use super::kind::short_size;
use std::fmt::Write as _;

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

const W: f64 = 560.0;
const H: f64 = 380.0;
const ML: f64 = 70.0;
const MR: f64 = 120.0;
const MT: f64 = 34.0;
const MB: f64 = 52.0;

/// Fixed colour per label, so an algorithm has the same colour in every panel and file.
fn colour(label: &str) -> &'static str {
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
    const PALETTE: [&str; 10] = [
        "#7f7f7f", "#17becf", "#1f77b4", "#ff7f0e", "#2ca02c", "#98df8a", "#d62728", "#9467bd",
        "#8c564b", "#e377c2",
    ];
    let i = NAMES.iter().position(|n| *n == label).unwrap_or(9);
    PALETTE[i]
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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

/// Renders the panels in a grid (`cols` per row) as one SVG document.
pub fn render(panels: &[Panel], cols: usize) -> String {
    let cols = cols.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(cols).max(1);
    let (tw, th) = (W * cols as f64, H * rows as f64);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{tw}" height="{th}" viewBox="0 0 {tw} {th}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (k, p) in panels.iter().enumerate() {
        let (ox, oy) = (W * (k % cols) as f64, H * (k / cols) as f64);
        panel(&mut s, p, ox, oy);
    }
    s.push_str("</svg>\n");
    s
}

fn panel(s: &mut String, p: &Panel, ox: f64, oy: f64) {
    let pts: Vec<(f64, f64)> = p
        .series
        .iter()
        .flat_map(|se| se.points.iter().copied())
        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
        .collect();
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13" font-weight="bold">{}</text>"#,
        ox + ML + (W - ML - MR) / 2.0,
        oy + 20.0,
        esc(&p.title)
    );
    if pts.is_empty() {
        return;
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
    ylo /= 1.25;
    yhi *= 1.25;
    let (x0, x1, y0, y1) = (ox + ML, ox + W - MR, oy + MT, oy + H - MB);
    let fx = |x: f64| x0 + (x.ln() - xlo.ln()) / (xhi.ln() - xlo.ln()) * (x1 - x0);
    let fy = |y: f64| y1 - (y.ln() - ylo.ln()) / (yhi.ln() - ylo.ln()) * (y1 - y0);
    // Frame and grid.
    let _ = writeln!(
        s,
        r##"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="none" stroke="#333"/>"##,
        x1 - x0,
        y1 - y0
    );
    // x ticks: powers of two; labels on exponents divisible by `step` (at most ~9 labels).
    let (e0, e1) = (xlo.log2().ceil() as i32, xhi.log2().floor() as i32);
    let need = (e1 - e0 + 1 + 8) / 9;
    let step = [1, 2, 4, 10].into_iter().find(|s| *s >= need).unwrap_or(10);
    for e in e0..=e1 {
        let x = 2f64.powi(e);
        let px = fx(x);
        let labelled = e.rem_euclid(step) == 0;
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{y0}" x2="{px:.1}" y2="{y1}" stroke="#e4e4e4"/>"##
        );
        if labelled {
            let _ = writeln!(
                s,
                r#"<text x="{px:.1}" y="{}" text-anchor="middle">{}</text>"#,
                y1 + 15.0,
                short_size(x as usize)
            );
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">message size (bytes)</text>"#,
        (x0 + x1) / 2.0,
        y1 + 34.0
    );
    for t in log_ticks(ylo, yhi) {
        let py = fy(t);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{py:.1}" x2="{x1}" y2="{py:.1}" stroke="#e4e4e4"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 5.0,
            py + 4.0,
            fmt_val(t)
        );
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        ox + 16.0,
        (y0 + y1) / 2.0,
        esc(&p.ylabel)
    );
    if let Some(h) = p.hline {
        let py = fy(h);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{py:.1}" x2="{x1}" y2="{py:.1}" stroke="#000" stroke-dasharray="5,4"/>"##
        );
    }
    // Series: emphasised ones last so they are on top.
    let mut order: Vec<&Series> = p.series.iter().filter(|se| !se.emphasis).collect();
    order.extend(p.series.iter().filter(|se| se.emphasis));
    for se in &order {
        let (col, width) = if se.emphasis {
            ("#000000", 3.5)
        } else {
            (colour(&se.label), 1.6)
        };
        let path: Vec<String> = se
            .points
            .iter()
            .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", fx(x), fy(y)))
            .collect();
        if path.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{col}" stroke-width="{width}" points="{}"><title>{}</title></polyline>"#,
            path.join(" "),
            esc(&se.label)
        );
        for pt in &path {
            let (cx, cy) = pt.split_once(',').unwrap();
            let _ = writeln!(
                s,
                r#"<circle cx="{cx}" cy="{cy}" r="{}" fill="{col}"/>"#,
                if se.emphasis { 3.0 } else { 2.0 }
            );
        }
    }
    // Legend (in the order given).
    for (i, se) in p.series.iter().enumerate() {
        let ly = y0 + 10.0 + 16.0 * i as f64;
        let (col, width) = if se.emphasis {
            ("#000000", 3.5)
        } else {
            (colour(&se.label), 1.6)
        };
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{col}" stroke-width="{width}"/>"#,
            x1 + 10.0,
            x1 + 34.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            x1 + 40.0,
            ly + 4.0,
            esc(&se.label)
        );
    }
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
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("&lt;double&gt;"));
        assert!(s.contains(r##"stroke="#000000" stroke-width="3.5""##));
        assert!(s.contains(">1M<"));
    }

    #[test]
    fn ticks() {
        assert_eq!(log_ticks(1.0, 1000.0), vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(0.5, 2.0), vec![0.5, 1.0, 2.0]);
    }
}
