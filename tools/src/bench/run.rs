//! The measurement engine: native and pcoll variants of one case, INTERLEAVED in one process
//! (forward then reverse order per iteration, ABBA, and BAAB the next), a barrier before every
//! timed call, each repetition's time the MAXIMUM over ranks (MPI-NOTES.md "Timing on 2
//! cores": separate runs differ by up to 2x; alternation inside one process makes ratios
//! trustworthy).

use super::case::{select, Case, Variant};
use super::mpi;
use pcoll::Algorithm;
use pcoll_mpi::consts;

#[derive(Clone, Debug)]
pub struct Opts {
    pub warmup: usize,
    /// Maximum iterations (each iteration times every variant twice: forward and reverse).
    pub iters: usize,
    /// Minimum iterations, whatever the time budget.
    pub min_iters: usize,
    /// Seconds one case may take (estimated from the warm-up); 0 = no limit.
    pub budget: f64,
    /// Validate every pcoll result against the native one (and native against the oracle).
    pub check: bool,
    /// Mismatching elements printed per variant and rank.
    pub show_mismatches: usize,
    /// Cold buffers: every call (warm-up and timed, every variant alike) on the next set of
    /// a pool of at least 96 MiB per rank ([`super::case::Case::make_cold`]); false: hot.
    pub cold: bool,
    /// Measure the case's floor ([`super::floor`]) before it.
    pub floor: bool,
}

/// Summary statistics of one variant (microseconds).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Stats {
    pub min: f64,
    pub median: f64,
    pub p90: f64,
    pub mean: f64,
}

impl Stats {
    pub fn of(samples_s: &[f64]) -> Stats {
        if samples_s.is_empty() {
            return Stats::default();
        }
        let mut v: Vec<f64> = samples_s.iter().map(|s| s * 1e6).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            0.5 * (v[n / 2 - 1] + v[n / 2])
        };
        // Nearest-rank percentile.
        let p90 = v[((0.9 * n as f64).ceil() as usize).clamp(1, n) - 1];
        Stats {
            min: v[0],
            median,
            p90,
            mean: v.iter().sum::<f64>() / n as f64,
        }
    }
}

#[derive(Clone, Debug)]
pub struct VariantResult {
    pub variant: Variant,
    /// The algorithm that served the calls (`auto`: the table's choice).
    pub algorithm: Algorithm,
    /// Per-repetition times (seconds), max over ranks (valid on every rank).
    pub samples: Vec<f64>,
    pub stats: Stats,
    /// Calls that returned an MPI error (summed over ranks).
    pub errors: i64,
    /// Result elements differing from native (summed over ranks); None without `--check`.
    pub mismatches: Option<i64>,
}

#[derive(Clone, Debug)]
pub struct CaseResult {
    pub iters: usize,
    /// Elements where the native result differs from the sequential oracle (`--check`).
    pub native_mismatches: Option<i64>,
    /// Index 0 is always the native baseline.
    pub variants: Vec<VariantResult>,
    /// Variants left out, with the reason.
    pub skipped: Vec<(String, String)>,
}

impl CaseResult {
    pub fn native_median(&self) -> f64 {
        self.variants[0].stats.median
    }
    pub fn get(&self, label: &str) -> Option<&VariantResult> {
        self.variants.iter().find(|v| v.variant.label() == label)
    }
}

/// Measures `variants` (native is added first if missing) on `case`. Collective over
/// `case.comm`; the result is identical on every rank.
pub fn measure(case: &mut Case, variants: &[Variant], o: &Opts) -> CaseResult {
    let mut list: Vec<Variant> = vec![Variant::Native];
    for v in variants {
        if !list.contains(v) {
            list.push(*v);
        }
    }
    // 1. Probe, 2. warm-up (variants failing there are dropped).
    let (active, mut skipped) = probe(case, &list);
    let (active, est) = warm_up(case, active, o.warmup, &mut skipped);
    let nv = active.len();

    // 3. Check results.
    let mut native_mismatches = None;
    let mut mismatches = vec![None; nv];
    if o.check {
        let (nm, mm) = check(case, &active, o.show_mismatches);
        native_mismatches = Some(nm);
        mismatches = mm.into_iter().map(Some).collect();
    }

    // 4. Iterations from the time budget (est is the same on every rank: same decision).
    let iters = iterations(o, est);

    // 5. Timed ABBA iterations.
    let (flat, errs) = timed(case, &active, iters);
    let per = 2 * iters;
    let variants = active
        .iter()
        .enumerate()
        .map(|(k, (v, a))| {
            let s = flat[k * per..(k + 1) * per].to_vec();
            VariantResult {
                variant: *v,
                algorithm: *a,
                stats: Stats::of(&s),
                samples: s,
                errors: errs[k],
                mismatches: mismatches[k],
            }
        })
        .collect();
    CaseResult {
        iters,
        native_mismatches,
        variants,
        skipped,
    }
}

/// Variants left out, each as (label, reason).
type Skipped = Vec<(String, String)>;

/// Can pcoll serve the case with each variant on every rank? (the variants that can, with
/// the algorithm serving them; the others with the reason).
fn probe(case: &mut Case, list: &[Variant]) -> (Vec<(Variant, Algorithm)>, Skipped) {
    let probes: Vec<Result<Algorithm, String>> = list.iter().map(|v| case.probe(*v)).collect();
    let mut fails: Vec<i64> = probes.iter().map(|r| r.is_err() as i64).collect();
    mpi::allreduce_sum_i64(case.comm, &mut fails);
    let mut skipped = Vec::new();
    let mut active: Vec<(Variant, Algorithm)> = Vec::new();
    for ((v, r), f) in list.iter().zip(&probes).zip(&fails) {
        match (r, *f) {
            (Ok(a), 0) => active.push((*v, *a)),
            (Err(e), _) => skipped.push((v.label(), e.clone())),
            (Ok(_), _) => skipped.push((v.label(), "fails on another rank".into())),
        }
    }
    (active, skipped)
}

/// Untimed passes over every variant (at least one: it also estimates the time of a pass).
/// Returns the variants without MPI errors there (all ranks agree: summed counts) and the
/// fastest pass's time (max over ranks).
fn warm_up(
    case: &mut Case,
    active: Vec<(Variant, Algorithm)>,
    warmup: usize,
    skipped: &mut Skipped,
) -> (Vec<(Variant, Algorithm)>, f64) {
    let comm = case.comm;
    let mut errors = vec![0i64; active.len()];
    // The first pass also sets up pcoll's communicator state and programs: the estimate is
    // the fastest pass (max over ranks).
    let mut pass_times = vec![0.0; warmup.max(1)];
    for pt in pass_times.iter_mut() {
        mpi::barrier(comm);
        let t0 = mpi::wtime();
        for (k, (v, _)) in active.iter().enumerate() {
            select(case.coll, *v);
            case.rotate();
            mpi::barrier(comm);
            if case.call(*v) != consts::SUCCESS() {
                errors[k] += 1;
            }
        }
        *pt = mpi::wtime() - t0;
    }
    mpi::allreduce_max_f64(comm, &mut pass_times);
    let est = pass_times.iter().copied().fold(f64::INFINITY, f64::min);
    mpi::allreduce_sum_i64(comm, &mut errors);
    let mut keep = Vec::new();
    for (k, (v, a)) in active.iter().enumerate() {
        if errors[k] > 0 && *v != Variant::Native {
            skipped.push((v.label(), format!("{} MPI errors in warm-up", errors[k])));
        } else {
            keep.push((*v, *a));
        }
    }
    (keep, est)
}

/// Timed iterations: `o.iters` (at least `o.min_iters`), fewer when a pass estimated at `est`
/// seconds (twice per iteration) would exceed the budget.
fn iterations(o: &Opts, est: f64) -> usize {
    let per_iter = 2.0 * est;
    let mut iters = o.iters.max(o.min_iters).max(1);
    if o.budget > 0.0 && per_iter > 0.0 {
        let fit = (o.budget / per_iter).floor() as usize;
        iters = iters.min(fit.max(o.min_iters.max(1)));
    }
    iters
}

/// `iters` timed ABBA / BAAB iterations: every variant's 2·iters times (max over ranks), variant
/// after variant, and its MPI errors (summed over ranks).
fn timed(case: &mut Case, active: &[(Variant, Algorithm)], iters: usize) -> (Vec<f64>, Vec<i64>) {
    let (comm, nv) = (case.comm, active.len());
    let mut samples = vec![Vec::with_capacity(2 * iters); nv];
    let mut errs = vec![0i64; nv];
    // ABBA, then BAAB: each variant takes both ends and both middles alike (with ABBA alone
    // the middle positions read slower in cold sub-us cells, the same call on both sides).
    let abba: Vec<usize> = (0..nv).chain((0..nv).rev()).collect();
    let baab: Vec<usize> = (0..nv).rev().chain(0..nv).collect();
    for i in 0..iters {
        for &k in if i % 2 == 0 { &abba } else { &baab } {
            let v = active[k].0;
            select(case.coll, v);
            case.rotate();
            mpi::barrier(comm);
            let t = mpi::wtime();
            let rc = case.call(v);
            let dt = mpi::wtime() - t;
            samples[k].push(dt);
            if rc != consts::SUCCESS() {
                errs[k] += 1;
            }
        }
    }
    select(case.coll, Variant::Auto);
    let mut flat: Vec<f64> = samples.concat();
    mpi::allreduce_max_f64(comm, &mut flat);
    mpi::allreduce_sum_i64(comm, &mut errs);
    (flat, errs)
}

/// Runs native once, then every variant, comparing results bit for bit; returns (native vs
/// oracle mismatches, per-variant mismatches vs native), summed over ranks.
fn check(case: &mut Case, active: &[(Variant, Algorithm)], show: usize) -> (i64, Vec<i64>) {
    let comm = case.comm;
    let es = case.dt.size();
    let oracle = case.oracle();
    case.use_primary(true);
    case.poison();
    mpi::barrier(comm);
    case.call(Variant::Native);
    let native = case.result().to_vec();
    let mut counts = vec![0i64; active.len() + 1];
    counts[0] = diff(case, "native vs oracle", &native, &oracle, es, show);
    for (k, (v, _)) in active.iter().enumerate() {
        if *v == Variant::Native {
            continue;
        }
        case.poison();
        select(case.coll, *v);
        mpi::barrier(comm);
        case.call(*v);
        let got = case.result().to_vec();
        counts[k + 1] = diff(case, &v.label(), &got, &native, es, show);
    }
    case.use_primary(false);
    select(case.coll, Variant::Auto);
    mpi::allreduce_sum_i64(comm, &mut counts);
    (counts[0], counts[1..].to_vec())
}

/// Mismatching elements between `got` and `want`; prints the first `show` (one write per
/// line, so lines of different ranks do not interleave).
pub(crate) fn diff(
    case: &Case,
    what: &str,
    got: &[u8],
    want: &[u8],
    es: usize,
    show: usize,
) -> i64 {
    let mut bad = 0i64;
    for (i, (g, w)) in got.chunks(es).zip(want.chunks(es)).enumerate() {
        if g != w {
            if (bad as usize) < show {
                let line = format!(
                    "MISMATCH {} p={} bytes={} rank={} {what}: element {i}: got {} want {}\n",
                    case.coll,
                    case.p,
                    case.bytes(),
                    case.rank,
                    case.dt.decode(g),
                    case.dt.decode(w)
                );
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            }
            bad += 1;
        }
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::Stats;
    use crate::bench::case::Case;
    use crate::bench::kind::{DType, OpKind};
    use pcoll::Collective;

    fn case(coll: Collective, p: usize, rank: usize, n: usize, dt: DType, op: OpKind) -> Case {
        // No MPI call happens before `call`: the communicator is only stored.
        Case::new(coll, pcoll_mpi::consts::comm_null(), p, rank, n, dt, op)
    }

    #[test]
    fn oracle_by_hand_and_check_catches_wrong_results() {
        // value(r, i) = (131 i + 71 r + 7) mod 11 - 5: element 0 of ranks 0,1,2 = 2, -4, 1;
        // element 1 = (138, 209, 280) mod 11 - 5 = 1, -5, 0.
        let c = case(Collective::Allreduce, 3, 1, 2, DType::Long, OpKind::Sum);
        let o = c.oracle();
        let got: Vec<i64> = o
            .chunks(8)
            .map(|b| i64::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(got, vec![2 - 4 + 1, 1 - 5]);
        let m = case(Collective::Allreduce, 3, 1, 2, DType::Int, OpKind::Max).oracle();
        assert_eq!(m, [2i32.to_ne_bytes(), 1i32.to_ne_bytes()].concat());
        // Reduce: only the root has a result.
        assert!(case(Collective::Reduce, 3, 2, 2, DType::Long, OpKind::Sum)
            .oracle()
            .is_empty());
        // Allgatherv of 5 elements over 3 ranks: blocks 2, 2, 1 from ranks 0, 1, 2.
        let g = case(Collective::Allgatherv, 3, 0, 5, DType::Char, OpKind::Sum).oracle();
        let want: Vec<u8> = [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4)]
            .iter()
            .map(|&(r, i)| (((131 * i + 71 * r + 7) % 11) as i64 - 5) as i8 as u8)
            .collect();
        assert_eq!(g, want);
        // Reduce_scatter: rank 1 gets elements 2..4 of the reduced vector.
        let rs = case(Collective::ReduceScatter, 3, 1, 5, DType::Long, OpKind::Min);
        assert_eq!(rs.result_range(), 0..16);
        // A poisoned (never written) receive buffer fails the comparison in every element;
        // the oracle compared with itself passes.
        let mut c = case(Collective::Allreduce, 3, 0, 7, DType::Double, OpKind::Prod);
        c.poison();
        let o = c.oracle();
        assert_eq!(super::diff(&c, "test", c.result(), &o, 8, 0), 7);
        assert_eq!(super::diff(&c, "test", &o, &o, 8, 0), 0);
    }

    #[test]
    fn stats() {
        let s = Stats::of(&[4e-6, 1e-6, 3e-6, 2e-6, 10e-6]);
        assert!((s.min - 1.0).abs() < 1e-9);
        assert!((s.median - 3.0).abs() < 1e-9);
        assert!((s.p90 - 10.0).abs() < 1e-9);
        let e = Stats::of(&[1e-6, 2e-6]);
        assert!((e.median - 1.5).abs() < 1e-9);
    }
}
