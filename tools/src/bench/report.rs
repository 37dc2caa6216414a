//! Results of a benchmark run: flat rows, an OSU-style table, CSV and JSON (the plots: [`super::plot`]).

use super::case::Variant;
use super::kind::{short_size, DType, OpKind};
use super::run::CaseResult;
use pcoll::Collective;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One measured case (collective, p, size) with all its variants.
#[derive(Clone, Debug)]
pub struct Measured {
    pub coll: Collective,
    pub p: usize,
    pub bytes: usize,
    pub count: usize,
    pub result: CaseResult,
    /// Model predictions (us) per variant label, where the model has one.
    pub predicted: BTreeMap<String, f64>,
    /// `hot` or `cold` (every call on buffers rotated over >= 96 MiB per rank).
    pub buffers: &'static str,
    /// One core's memory-stream bound for the case (us; [`super::floor`]), where measured.
    pub floor_us: Option<f64>,
}

/// One CSV / JSON row: one variant of one case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub mpi: String,
    pub collective: String,
    pub p: usize,
    pub bytes: usize,
    pub count: usize,
    pub datatype: DType,
    pub op: OpKind,
    pub variant: String,
    pub algorithm: String,
    pub iters: usize,
    pub samples: usize,
    pub min_us: f64,
    pub median_us: f64,
    pub p90_us: f64,
    pub mean_us: f64,
    /// median / native median.
    pub ratio: f64,
    pub predicted_us: Option<f64>,
    pub errors: i64,
    pub mismatches: Option<i64>,
    /// `hot` or `cold` buffers.
    pub buffers: String,
    /// One core's memory-stream bound of the case on rank 0 (us), the same in every row of
    /// the case.
    pub floor_us: Option<f64>,
    /// median / floor.
    pub x_floor: Option<f64>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Meta {
    pub tool: String,
    pub mpi: String,
    pub mpi_version: String,
    pub world_size: usize,
    pub datatype: DType,
    pub op: OpKind,
    pub command: String,
    pub unix_time: u64,
    /// `hot` (the same buffers every call) or `cold` (rotated over >= 96 MiB per rank).
    pub buffers: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Skipped {
    pub collective: String,
    pub p: usize,
    pub bytes: usize,
    pub variant: String,
    pub reason: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Document {
    pub meta: Meta,
    pub rows: Vec<Row>,
    pub skipped: Vec<Skipped>,
}

pub fn rows(meta: &Meta, ms: &[Measured]) -> Vec<Row> {
    let mut out = Vec::new();
    for m in ms {
        let nat = m.result.native_median();
        for v in &m.result.variants {
            out.push(Row {
                mpi: meta.mpi.clone(),
                collective: m.coll.name().to_string(),
                p: m.p,
                bytes: m.bytes,
                count: m.count,
                datatype: meta.datatype,
                op: meta.op,
                variant: v.variant.label(),
                algorithm: v.algorithm.name().to_string(),
                iters: m.result.iters,
                samples: v.samples.len(),
                min_us: v.stats.min,
                median_us: v.stats.median,
                p90_us: v.stats.p90,
                mean_us: v.stats.mean,
                ratio: if nat > 0.0 {
                    v.stats.median / nat
                } else {
                    f64::NAN
                },
                predicted_us: m.predicted.get(&v.variant.label()).copied(),
                errors: v.errors,
                mismatches: if v.variant == Variant::Native {
                    m.result.native_mismatches
                } else {
                    v.mismatches
                },
                buffers: m.buffers.into(),
                floor_us: m.floor_us,
                x_floor: m.floor_us.map(|f| v.stats.median / f),
            });
        }
    }
    out
}

pub fn skipped(ms: &[Measured]) -> Vec<Skipped> {
    let mut out = Vec::new();
    for m in ms {
        for (v, r) in &m.result.skipped {
            out.push(Skipped {
                collective: m.coll.name().into(),
                p: m.p,
                bytes: m.bytes,
                variant: v.clone(),
                reason: r.clone(),
            });
        }
    }
    out
}

pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "mpi,collective,p,bytes,count,datatype,op,variant,algorithm,iters,samples,min_us,median_us,p90_us,mean_us,ratio,predicted_us,errors,mismatches,buffers,floor_us,x_floor\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.4},{},{},{},{},{},{}",
            r.mpi,
            r.collective,
            r.p,
            r.bytes,
            r.count,
            r.datatype,
            r.op,
            r.variant,
            r.algorithm,
            r.iters,
            r.samples,
            r.min_us,
            r.median_us,
            r.p90_us,
            r.mean_us,
            r.ratio,
            r.predicted_us.map_or(String::new(), |v| format!("{v:.3}")),
            r.errors,
            r.mismatches.map_or(String::new(), |v| v.to_string()),
            r.buffers,
            r.floor_us.map_or(String::new(), |v| format!("{v:.3}")),
            r.x_floor.map_or(String::new(), |v| format!("{v:.3}")),
        );
    }
    s
}

/// Cases grouped by (collective, p), in first-seen order.
fn groups(ms: &[Measured]) -> Vec<((Collective, usize), Vec<&Measured>)> {
    let mut out: Vec<((Collective, usize), Vec<&Measured>)> = Vec::new();
    for m in ms {
        let key = (m.coll, m.p);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(m),
            None => out.push((key, vec![m])),
        }
    }
    out
}

/// Variant labels of a group in measured order (union over sizes, native first).
fn labels(g: &[&Measured]) -> Vec<String> {
    let mut l: Vec<String> = Vec::new();
    for m in g {
        for v in &m.result.variants {
            let s = v.variant.label();
            if !l.contains(&s) {
                l.push(s);
            }
        }
    }
    l
}

/// The OSU-style table: per (collective, p) one block, one line per size: native median
/// (us) and the floor, then each variant's median, its ratio to native, the model's time and
/// median / floor; `*` marks the fastest.
pub fn table(meta: &Meta, ms: &[Measured]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {} ({}), datatype {}, op {}; times: median over repetitions of the max over ranks, us; ratio = median / native median (< 1: pcoll faster); * = fastest",
        meta.mpi_version, meta.mpi, meta.datatype, meta.op
    );
    let _ = writeln!(s, "# buffers: {}", buffers_note(&meta.buffers));
    if ms.iter().any(|m| m.floor_us.is_some()) {
        let _ = writeln!(
            s,
            "# floor: ONE CORE's memory-stream bound on rank 0 (others wait at a barrier), median, {} buffers: z = x + y over the vector (reduce, allreduce) or the largest block (reduce_scatter), memcpy of what a rank receives (bcast, allgather); ranks of one node share the memory bandwidth; x_fl = median / floor",
            meta.buffers
        );
    }
    for ((coll, p), g) in groups(ms) {
        block(&mut s, coll, p, &g);
    }
    s
}

/// One (collective, p) block of [`table`]: heading, column names, a line per size, notes.
fn block(s: &mut String, coll: Collective, p: usize, g: &[&Measured]) {
    let labels = labels(g);
    let with_pred = g.iter().any(|m| !m.predicted.is_empty());
    let lo = g.iter().map(|m| m.result.iters).min().unwrap_or(0);
    let hi = g.iter().map(|m| m.result.iters).max().unwrap_or(0);
    let its = if lo == hi {
        format!("{lo}")
    } else {
        format!("{hi}..{lo}")
    };
    let _ = writeln!(
        s,
        "\n# {coll}  p={p}  {} buffers  ({its} iterations x2 per case, ABBA; fewer for large sizes by the time budget)",
        g[0].buffers
    );
    let with_floor = g.iter().any(|m| m.floor_us.is_some());
    let mut h = format!("{:>10} {:>11}", "size", "native");
    if with_floor {
        let _ = write!(h, " {:>9}", "floor");
    }
    for l in labels.iter().skip(1) {
        let _ = write!(h, " {:>11} {:>6}", l, "ratio");
        if with_pred {
            let _ = write!(h, " {:>9}", "model");
        }
        if with_floor {
            let _ = write!(h, " {:>6}", "x_fl");
        }
    }
    let _ = writeln!(s, "{h}");
    for m in g {
        let _ = writeln!(s, "{}", size_line(m, &labels, with_pred, with_floor));
    }
    for n in notes(g) {
        let _ = writeln!(s, "{n}");
    }
}

/// `hot` / `cold` with what it means (the table's header).
pub fn buffers_note(buffers: &str) -> String {
    match buffers {
        "cold" => "cold (every call, every variant alike, on the next buffers of a pool of >= 96 MiB per rank, as IMB's -off_cache: no call finds its data in a cache)".into(),
        b => format!("{b} (the same buffers every call)"),
    }
}

/// One size's line: native median and the floor, then each variant's median, ratio, model
/// time and median / floor.
fn size_line(m: &Measured, labels: &[String], with_pred: bool, with_floor: bool) -> String {
    let nat = m.result.native_median();
    let best = m
        .result
        .variants
        .iter()
        .min_by(|a, b| a.stats.median.total_cmp(&b.stats.median))
        .map(|v| v.variant.label());
    let star = |l: &str| if best.as_deref() == Some(l) { "*" } else { " " };
    let mut line = format!(
        "{:>10} {:>10.2}{}",
        short_size(m.bytes),
        nat,
        star("native")
    );
    let opt = |v: Option<f64>, w: usize, prec: usize| match v {
        Some(t) => format!(" {t:>w$.prec$}"),
        None => format!(" {:>w$}", ""),
    };
    if with_floor {
        line += &opt(m.floor_us, 9, 2);
    }
    for l in labels.iter().skip(1) {
        match m.result.get(l) {
            Some(v) => {
                let _ = write!(
                    line,
                    " {:>10.2}{} {:>6.2}",
                    v.stats.median,
                    star(l),
                    v.stats.median / nat
                );
            }
            None => {
                let _ = write!(line, " {:>11} {:>6}", "-", "");
            }
        }
        if with_pred {
            line += &opt(m.predicted.get(l).copied(), 9, 2);
        }
        if with_floor {
            let x = m
                .floor_us
                .zip(m.result.get(l))
                .map(|(f, v)| v.stats.median / f);
            line += &opt(x, 6, 2);
        }
    }
    line
}

/// A block's notes: failed checks and MPI errors per size, skipped variants (each reason
/// once with its sizes), the check total.
fn notes(g: &[&Measured]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for m in g {
        if let Some(nm) = m.result.native_mismatches {
            let bad: i64 = m.result.variants.iter().filter_map(|v| v.mismatches).sum();
            if nm != 0 || bad != 0 {
                notes.push(format!(
                    "#   CHECK FAILED at {}: native vs oracle {nm}, pcoll vs native {bad} mismatching elements",
                    short_size(m.bytes)
                ));
            }
        }
        let errs: i64 = m.result.variants.iter().map(|v| v.errors).sum();
        if errs != 0 {
            notes.push(format!("#   {errs} MPI errors at {}", short_size(m.bytes)));
        }
    }
    notes.extend(skipped_notes(g));
    if g.iter().all(|m| m.result.native_mismatches.is_some()) {
        let total: i64 = g
            .iter()
            .map(|m| {
                m.result.native_mismatches.unwrap_or(0)
                    + m.result
                        .variants
                        .iter()
                        .filter_map(|v| v.mismatches)
                        .sum::<i64>()
            })
            .sum();
        notes.push(format!(
            "#   check: {total} mismatching elements (every pcoll result vs native, native vs sequential oracle)"
        ));
    }
    notes
}

/// Skipped variants, each reason once with the sizes it applies to.
fn skipped_notes(g: &[&Measured]) -> Vec<String> {
    let mut sk: Vec<(String, String, Vec<usize>)> = Vec::new();
    for m in g {
        for (v, r) in &m.result.skipped {
            match sk.iter_mut().find(|(a, b, _)| a == v && b == r) {
                Some((_, _, sizes)) => sizes.push(m.bytes),
                None => sk.push((v.clone(), r.clone(), vec![m.bytes])),
            }
        }
    }
    sk.into_iter()
        .map(|(v, r, sizes)| {
            let at = if sizes.len() == g.len() {
                "all sizes".to_string()
            } else {
                sizes
                    .iter()
                    .map(|b| short_size(*b))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!("#   skipped {v} ({at}): {r}")
        })
        .collect()
}
