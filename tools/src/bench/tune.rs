//! `pcoll-tune`'s decisions, kept free of MPI so they are unit-tested: the winner of a
//! measured cell, and merging neighbouring cells with the same winner into table rules.

use super::case::{size_label, split_counts, Variant};
use super::kind::short_size;
use super::report::Measured;
use super::tuning_api::{Rule, INF};
use pcoll::{Algorithm, CallSpec, Collective, CostParams};
use std::fmt;

/// Candidates for a tuning rule: native, the algorithms and the algorithms at a set segment
/// size; `auto` (the table being replaced) and `passthru` (= native behind pcoll's dispatch)
/// are not candidates.
pub fn is_candidate(v: Variant) -> bool {
    pick_of(v).is_some()
}

pub fn algorithm_of(v: Variant) -> Option<Algorithm> {
    pick_of(v).map(|p| p.alg)
}

/// What a rule can say: an algorithm and, optionally, its segment size in bytes (`None`: the
/// cost model's choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    pub alg: Algorithm,
    pub segment: Option<usize>,
}

impl Pick {
    pub fn of(alg: Algorithm) -> Pick {
        Pick { alg, segment: None }
    }
}

impl fmt::Display for Pick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.segment {
            None => write!(f, "{}", self.alg),
            Some(b) => write!(f, "{}@{}", self.alg, size_label(b)),
        }
    }
}

/// The rule a candidate variant stands for.
pub fn pick_of(v: Variant) -> Option<Pick> {
    match v {
        Variant::Native => Some(Pick::of(Algorithm::Native)),
        Variant::Alg(a) if a != Algorithm::Native => Some(Pick::of(a)),
        Variant::Seg(a, b) if a != Algorithm::Native => Some(Pick {
            alg: a,
            segment: Some(b),
        }),
        _ => None,
    }
}

/// The call shape pcoll-tune measures for `n` elements of `elem_bytes` on `p` ranks (rank 0,
/// commutative op, near-equal counts as in [`super::case::Case`]), for segment candidates.
pub fn probe_spec(
    coll: Collective,
    p: usize,
    n: usize,
    elem_bytes: usize,
    params: CostParams,
) -> CallSpec {
    let (counts, displs) = match coll {
        Collective::Reduce | Collective::Allreduce | Collective::Bcast => (vec![n], vec![]),
        Collective::ReduceScatter => (split_counts(n, p).0, vec![]),
        Collective::Allgatherv => split_counts(n, p),
        Collective::ReduceScatterBlock => (vec![n / p; p], vec![]),
        Collective::Allgather => (vec![n / p; p], (0..p).map(|j| j * (n / p)).collect()),
    };
    CallSpec {
        coll,
        p,
        rank: 0,
        root: 0,
        counts,
        displs,
        commutative: true,
        elem_bytes,
        seg_elems: 0,
        params,
        in_place: false,
    }
}

/// Segment variants worth measuring in a cell: the fastest algorithm that uses a segment size
/// (if it is within `margin` of the cell's fastest candidate, e.g. 1.0 = 2x), at the sizes
/// [`pcoll::segment::candidates`] gives around the model's segment for `factors`. Returns
/// that algorithm's plain variant first (the model's segment), then the `alg@size` variants;
/// empty if there is none. Identical on every rank (the ranking is).
pub fn segment_variants(
    spec: &CallSpec,
    rank: &[(Variant, f64)],
    margin: f64,
    factors: &[f64],
) -> Vec<Variant> {
    let Some(&(_, best)) = rank.first() else {
        return vec![];
    };
    let Some(&(v, _)) = rank.iter().find(|(v, t)| {
        matches!(v, Variant::Alg(a) if pcoll::segment::uses_segment(*a, spec.coll))
            && *t <= best * (1.0 + margin)
    }) else {
        return vec![];
    };
    let Variant::Alg(a) = v else {
        return vec![];
    };
    let mut out = vec![v];
    out.extend(
        pcoll::segment::candidates(a, spec, factors)
            .into_iter()
            .map(|b| Variant::Seg(a, b)),
    );
    if out.len() == 1 {
        out.clear();
    }
    out
}

/// Candidates of a measured case by median time (fastest first): (variant, median us).
pub fn ranking(m: &Measured) -> Vec<(Variant, f64)> {
    let mut r: Vec<(Variant, f64)> = m
        .result
        .variants
        .iter()
        .filter(|v| is_candidate(v.variant) && v.errors == 0 && v.mismatches.unwrap_or(0) == 0)
        .map(|v| (v.variant, v.stats.median))
        .collect();
    r.sort_by(|a, b| a.1.total_cmp(&b.1));
    r
}

/// Candidates within `close` (relative, e.g. 0.05) of the fastest, the fastest included.
pub fn close_calls(rank: &[(Variant, f64)], close: f64) -> Vec<Variant> {
    match rank.first() {
        None => vec![],
        Some(&(_, best)) => rank
            .iter()
            .filter(|(_, t)| *t <= best * (1.0 + close))
            .map(|(v, _)| *v)
            .collect(),
    }
}

/// The decided winner of one (collective, p, bytes) cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub coll: Collective,
    pub p: usize,
    pub bytes: usize,
    pub alg: Algorithm,
    /// The winner's segment size in bytes (`None`: the cost model's choice).
    pub segment: Option<usize>,
    pub time_us: f64,
    pub native_us: f64,
    /// Second-best candidate and its median relative to the winner (1.03 = 3% slower).
    pub rival: Option<(Pick, f64)>,
    pub remeasured: bool,
    /// Every candidate's median (us): the winner first, then fastest first.
    pub times: Vec<(Pick, f64)>,
    /// The winner was replaced by its neighbours' algorithm ([`smooth`]).
    pub smoothed: bool,
}

/// Medians within this (relative) of the fastest are a tie, broken by the 90th percentile:
/// an algorithm whose times spread widely should not win a cell on one lucky median. Seen on
/// the emulated cluster: `butterfly` won a 4 MiB allreduce by 2.7% of median (its times
/// 121-181 ms, ring's 125-131), and `auto` then ran 1.42x ring at 8 MiB.
pub const TIE: f64 = 0.03;

/// `ranking` with the winner first: among the candidates within [`TIE`] of the fastest
/// median, the one with the smallest 90th percentile.
pub fn ranking_tied(m: &Measured) -> Vec<(Variant, f64)> {
    let mut r = ranking(m);
    let Some(&(_, best)) = r.first() else {
        return r;
    };
    let p90 = |v: Variant| {
        m.result
            .variants
            .iter()
            .find(|x| x.variant == v)
            .map_or(f64::INFINITY, |x| x.stats.p90)
    };
    let k = (0..r.len())
        .filter(|&i| r[i].1 <= best * (1.0 + TIE))
        .min_by(|&a, &b| p90(r[a].0).total_cmp(&p90(r[b].0)))
        .unwrap_or(0);
    let w = r.remove(k);
    r.insert(0, w);
    r
}

impl Cell {
    /// The cell from the (final) measurement of a case.
    pub fn decide(m: &Measured, remeasured: bool) -> Option<Cell> {
        let r = ranking_tied(m);
        let (v, t) = *r.first()?;
        let win = pick_of(v)?;
        Some(Cell {
            coll: m.coll,
            p: m.p,
            bytes: m.bytes,
            alg: win.alg,
            segment: win.segment,
            time_us: t,
            native_us: m.result.native_median(),
            rival: r
                .get(1)
                .and_then(|(w, u)| pick_of(*w).map(|a| (a, u / t.max(1e-12)))),
            remeasured,
            times: r
                .iter()
                .filter_map(|(v, t)| pick_of(*v).map(|a| (a, *t)))
                .collect(),
            smoothed: false,
        })
    }
    pub fn pick(&self) -> Pick {
        Pick {
            alg: self.alg,
            segment: self.segment,
        }
    }
    pub fn ratio(&self) -> f64 {
        self.time_us / self.native_us.max(1e-12)
    }
    /// With a set segment: the winner's median over the same algorithm's at the model's
    /// segment (0.8 = 20% faster), if that was measured.
    pub fn segment_gain(&self) -> Option<f64> {
        self.segment?;
        let plain = Pick::of(self.alg);
        self.times
            .iter()
            .find(|(k, _)| *k == plain)
            .map(|(_, t)| self.time_us / t.max(1e-12))
    }
}

/// A rule to be written: collective, p range, bytes range (half-open), winner, the cells.
#[derive(Clone, Debug)]
pub struct Span {
    pub coll: Collective,
    pub p: (usize, usize),
    pub bytes: (usize, usize),
    pub alg: Algorithm,
    /// The rule's `segment` (bytes; `None`: the cost model's choice).
    pub segment: Option<usize>,
    pub cells: Vec<Cell>,
}

impl Span {
    pub fn pick(&self) -> Pick {
        Pick {
            alg: self.alg,
            segment: self.segment,
        }
    }

    pub fn rule(&self) -> Rule {
        let mut r = Rule::new(self.alg).note(self.note());
        if let Some(b) = self.segment {
            r = r.segment(b);
        }
        r = if self.p.1 == INF {
            r.p(self.p.0..)
        } else {
            r.p(self.p.0..self.p.1)
        };
        if (self.bytes.0, self.bytes.1) != (0, INF) {
            r = if self.bytes.1 == INF {
                r.bytes(self.bytes.0..)
            } else {
                r.bytes(self.bytes.0..self.bytes.1)
            };
        }
        r
    }

    /// The measurement behind the rule, for its comment.
    pub fn note(&self) -> String {
        let ratios: Vec<f64> = self.cells.iter().map(Cell::ratio).collect();
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let ps: Vec<usize> = {
            let mut v: Vec<usize> = self.cells.iter().map(|c| c.p).collect();
            v.sort();
            v.dedup();
            v
        };
        let sizes = {
            let mut v: Vec<usize> = self.cells.iter().map(|c| c.bytes).collect();
            v.sort();
            v.dedup();
            match (v.first(), v.last()) {
                (Some(a), Some(b)) if a != b => format!("{}..{} B", short_size(*a), short_size(*b)),
                (Some(a), _) => format!("{} B", short_size(*a)),
                _ => String::new(),
            }
        };
        let ps = ps
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let cells = match ratios.len() {
            1 => String::new(),
            n => format!(", {n} cells"),
        };
        let mut s = if self.alg == Algorithm::Native {
            format!("measured: native fastest at p={ps} {sizes}{cells}")
        } else {
            format!(
                "measured: {} at p={ps} {sizes}: median/native {}",
                self.pick(),
                if ratios.len() == 1 {
                    format!("{lo:.2}")
                } else {
                    format!("{lo:.2}..{hi:.2} (geo-mean {geo:.2}{cells})")
                }
            )
        };
        s.push_str(&self.remarks());
        s
    }

    /// The note's remarks: segment gains, the closest rival, smoothed and re-measured cells.
    fn remarks(&self) -> String {
        let mut s = String::new();
        let closest = self
            .cells
            .iter()
            .filter_map(|c| c.rival.map(|r| (r, c.bytes, c.p)))
            .min_by(|a, b| a.0 .1.total_cmp(&b.0 .1));
        let gains: Vec<f64> = self.cells.iter().filter_map(Cell::segment_gain).collect();
        if !gains.is_empty() {
            let lo = gains.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = gains.iter().copied().fold(0.0, f64::max);
            let r = if gains.len() == 1 {
                format!("{lo:.2}")
            } else {
                format!("{lo:.2}..{hi:.2}")
            };
            s.push_str(&format!(
                "; this segment / the model's segment for {}: {r}",
                self.alg
            ));
        }
        if let Some(((a, rel), b, p)) = closest {
            s.push_str(&format!(
                "; closest rival {a} +{:.1}% at {} B p={p}",
                (rel - 1.0) * 100.0,
                short_size(b)
            ));
        }
        let sm = self.cells.iter().filter(|c| c.smoothed).count();
        if sm > 0 {
            s.push_str(&format!(
                "; {sm} isolated cell(s) smoothed to the neighbours' choice"
            ));
        }
        let re = self.cells.iter().filter(|c| c.remeasured).count();
        if re > 0 {
            s.push_str(&format!("; {re} close call(s) re-measured"));
        }
        s
    }
}

/// An isolated cell (one size whose two neighbouring sizes, same collective and p, agree on
/// an algorithm A that differs from its own winner) takes A when A is within `tol`
/// (relative) of the winner there: a one-cell flip inside a range is usually noise, and a
/// table should not switch algorithms for it. Decisions use the original winners only.
pub fn smooth(cells: &mut [Cell], tol: f64) {
    let mut idx: Vec<usize> = (0..cells.len()).collect();
    idx.sort_by_key(|&i| (cells[i].coll, cells[i].p, cells[i].bytes));
    let orig: Vec<Pick> = cells.iter().map(Cell::pick).collect();
    let mut changes = Vec::new();
    for w in idx.windows(3) {
        let (a, b, c) = (w[0], w[1], w[2]);
        let same = |x: usize, y: usize| cells[x].coll == cells[y].coll && cells[x].p == cells[y].p;
        if !same(a, b) || !same(b, c) || orig[a] != orig[c] || orig[a] == orig[b] {
            continue;
        }
        let alt = orig[a];
        if let Some(&(_, t)) = cells[b].times.iter().find(|(x, _)| *x == alt) {
            if t <= cells[b].time_us * (1.0 + tol) {
                changes.push((b, alt, t));
            }
        }
    }
    for (b, alt, t) in changes {
        let c = &mut cells[b];
        c.rival = Some((c.pick(), c.time_us / t.max(1e-12)));
        c.alg = alt.alg;
        c.segment = alt.segment;
        c.time_us = t;
        c.smoothed = true;
    }
}

/// Merges cells into rules. Per (collective, p): sizes in order, runs with the same winner
/// become one bytes range; the first starts at 0, the last is open, a boundary is the first
/// measured size of the next run. Then neighbouring measured p with identical rule lists are
/// merged. A measured p covers up to the next measured p; the largest only itself: the
/// table never extrapolates (pcoll-tune closes each collective with a `model` rule).
pub fn spans(cells: &[Cell]) -> Vec<Span> {
    let mut out = Vec::new();
    for coll in Collective::ALL {
        let mut ps: Vec<usize> = cells
            .iter()
            .filter(|c| c.coll == coll)
            .map(|c| c.p)
            .collect();
        ps.sort();
        ps.dedup();
        // Per p: runs (bytes lo, bytes hi, alg, cells).
        let mut per_p: Vec<(usize, Vec<Span>)> = Vec::new();
        for (k, &p) in ps.iter().enumerate() {
            let mut cs: Vec<&Cell> = cells
                .iter()
                .filter(|c| c.coll == coll && c.p == p)
                .collect();
            cs.sort_by_key(|c| c.bytes);
            let p_hi = ps.get(k + 1).copied().unwrap_or(p + 1);
            let mut runs: Vec<Span> = Vec::new();
            for c in cs {
                match runs.last_mut() {
                    Some(r) if r.pick() == c.pick() => r.cells.push(c.clone()),
                    _ => {
                        let lo = if runs.is_empty() { 0 } else { c.bytes };
                        if let Some(r) = runs.last_mut() {
                            r.bytes.1 = c.bytes;
                        }
                        runs.push(Span {
                            coll,
                            p: (p, p_hi),
                            bytes: (lo, INF),
                            alg: c.alg,
                            segment: c.segment,
                            cells: vec![c.clone()],
                        });
                    }
                }
            }
            per_p.push((p, runs));
        }
        // Merge neighbouring p with the same (bytes range, alg) lists.
        let mut merged: Vec<Vec<Span>> = Vec::new();
        for (_, runs) in per_p {
            let same = merged.last().is_some_and(|prev: &Vec<Span>| {
                prev.len() == runs.len()
                    && prev
                        .iter()
                        .zip(&runs)
                        .all(|(a, b)| a.bytes == b.bytes && a.pick() == b.pick())
            });
            if same {
                let prev = merged.last_mut().unwrap();
                for (a, b) in prev.iter_mut().zip(runs) {
                    a.p.1 = b.p.1;
                    a.cells.extend(b.cells);
                }
            } else {
                merged.push(runs);
            }
        }
        out.extend(merged.into_iter().flatten());
    }
    out
}

#[cfg(test)]
#[path = "tune_tests.rs"]
mod tests;
