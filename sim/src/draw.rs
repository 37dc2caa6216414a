//! `pcoll-sim draw`: a Gantt chart of a reduction schedule (SVG, `plotters`), one row per
//! rank, one colour per segment. A message is an outlined bar on the sender's row (a solid
//! strip at its end, the receiver's rank written in it) and a solid bar on the receiver's,
//! followed by the darker reduction.

use pcoll::model::{simulate_tree_events, Duplex};
use pcoll::sched::greedy::{bi_greedy, bi_greedy_conjecture, uni_greedy, SegCost};
use pcoll::sched::pipeline::{binary_parents, chain_parents};
use pcoll::sched::trees::{parents, Shape};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One message: (start time, sender, receiver, segment).
type Event = (f64, usize, usize, usize);

/// A schedule to draw: its title, completion time and messages.
struct Gantt {
    title: String,
    total: f64,
    events: Vec<Event>,
}

/// The schedule of `alg` (greedy, greedy_uni, pipeline, binary) on `p` ranks.
fn schedule(alg: &str, p: usize, nseg: usize, tcomm: u64, tcomp: u64) -> Result<Gantt, String> {
    let (tc, tp) = (tcomm as f64, tcomp as f64);
    let costs = format!("p = {p}, {nseg} segments, tcomm = {tcomm}, tcomp = {tcomp}");
    Ok(match alg {
        "greedy" => {
            let s = bi_greedy(p, 0, nseg, tcomm, tcomp);
            let conj = bi_greedy_conjecture(p, nseg, tcomm, tcomp);
            Gantt {
                title: format!(
                    "bi-greedy, {costs}: T = {} (conjecture {conj})",
                    s.completion
                ),
                total: s.completion as f64,
                events: s.tuples(),
            }
        }
        "greedy_uni" => {
            let seg = SegCost {
                tcomm: tc,
                tcomp: tp,
            };
            let s = uni_greedy(p, 0, &vec![seg; nseg]);
            Gantt {
                title: format!("uni-greedy (half-duplex), {costs}: T = {}", s.completion),
                total: s.completion,
                events: s.tuples(),
            }
        }
        "pipeline" | "heap_binary" | "binary" | "fibonacci" => {
            let par = match alg {
                "pipeline" => chain_parents(p, 0, true),
                "heap_binary" => binary_parents(p, 0),
                "binary" => parents(Shape::Binary, p, 0),
                _ => parents(Shape::Fibonacci, p, 0),
            };
            let (t, events) = simulate_tree_events(&par, nseg, tc, tp, Duplex::Full);
            Gantt {
                title: format!("{alg} (full-duplex), {costs}: T = {t}"),
                total: t,
                events,
            }
        }
        _ => {
            return Err(format!(
                "unknown algorithm '{alg}' (accepted: greedy, greedy_uni, pipeline, binary, fibonacci, heap_binary)"
            ))
        }
    })
}

/// Segment `j`'s colour (light: messages, dark: reductions), golden-angle hues.
fn colour(j: usize, dark: bool) -> HSLColor {
    let hue = ((j * 137) % 360) as f64 / 360.0;
    HSLColor(hue, 0.7, if dark { 0.30 } else { 0.55 })
}

/// A Gantt chart of a reduction schedule as SVG text.
pub fn draw(alg: &str, p: usize, nseg: usize, tcomm: u64, tcomp: u64) -> Result<String, String> {
    if p == 0 || nseg == 0 || tcomm == 0 {
        return Err("need p >= 1, segments >= 1, tcomm >= 1".into());
    }
    let g = schedule(alg, p, nseg, tcomm, tcomp)?;
    let unit = (900.0 / g.total.max(1.0)).clamp(4.0, 60.0);
    let width = (80.0 + g.total * unit + 20.0) as u32;
    let height = 40 + p as u32 * 22 + 50;
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| chart(&root, &g, p, tcomm as f64, tcomp as f64))
            .and_then(|()| root.present())
            .map_err(|e| format!("drawing: {e}"))?;
    }
    Ok(s)
}

fn chart(
    root: &DrawingArea<SVGBackend, Shift>,
    g: &Gantt,
    p: usize,
    tc: f64,
    tp: f64,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let total = g.total.max(1.0);
    // Ranks top to bottom: rank r occupies [r, r + 1) on a reversed axis; time grid every
    // unit, labelled every 5 (drawn here: the ranks are labelled mid-row).
    let mut c = ChartBuilder::on(root)
        .caption(&g.title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..total, (p as f64)..0.0)?;
    let font = ("sans-serif", 14).into_font();
    let steps = total.ceil() as usize;
    c.draw_series((0..=steps).map(|t| {
        let (t, grey) = (t as f64, if t % 5 == 0 { 0xdd } else { 0xf0 });
        PathElement::new(vec![(t, 0.0), (t, p as f64)], RGBColor(grey, grey, grey))
    }))?;
    c.draw_series((1..=p).map(|r| {
        let y = r as f64;
        PathElement::new(vec![(0.0, y), (total, y)], RGBColor(0xdd, 0xdd, 0xdd))
    }))?;
    for t in (0..=steps).step_by(5) {
        let (x, y) = c.backend_coord(&(t as f64, p as f64));
        let centred = TextStyle::from(font.clone()).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(t.to_string(), (x, y + 6), centred))?;
    }
    for r in 0..p {
        let (x, y) = c.backend_coord(&(0.0, r as f64 + 0.5));
        let right = TextStyle::from(font.clone()).pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(format!("rank {r}"), (x - 6, y), right))?;
    }
    let bar = |row: usize, t0: f64, t1: f64, style: ShapeStyle| {
        let (y0, y1) = (row as f64 + 0.15, row as f64 + 0.85);
        Rectangle::new([(t0, y0), (t1.max(t0 + 0.01), y1)], style)
    };
    for &(t, a, b, j) in &g.events {
        let (light, dark) = (colour(j, false), colour(j, true));
        c.draw_series([
            bar(a, t, t + tc, WHITE.filled()),
            bar(a, t, t + tc, light.stroke_width(2)),
            bar(a, t + tc - 0.2, t + tc, light.filled()),
            bar(b, t, t + tc, light.filled()),
        ])?;
        if tp > 0.0 {
            c.draw_series([bar(b, t + tc, t + tc + tp, dark.filled())])?;
        }
        c.draw_series([Text::new(
            b.to_string(),
            (t + 0.05, a as f64 + 0.3),
            ("sans-serif", 11),
        )])?;
    }
    Ok(())
}
