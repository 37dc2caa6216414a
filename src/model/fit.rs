//! Least-squares α, β, γ from algorithm-independent samples ([`fit`]).

use crate::algo::CostParams;

/// One measurement for [`fit`], independent of any collective algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sample {
    /// One-way point-to-point time of `bytes` (half a ping-pong round trip): `α + β·bytes`.
    PingPong { bytes: f64, time: f64 },
    /// Local reduction of `bytes` (e.g. `MPI_Reduce_local`): `γ·bytes`.
    LocalReduce { bytes: f64, time: f64 },
    /// Anything linear in the parameters: `time ≈ a·α + b·β + c·γ`.
    Linear { a: f64, b: f64, c: f64, time: f64 },
}

impl Sample {
    fn row(&self) -> ([f64; 3], f64) {
        match *self {
            Sample::PingPong { bytes, time } => ([1.0, bytes, 0.0], time),
            Sample::LocalReduce { bytes, time } => ([0.0, 0.0, bytes], time),
            Sample::Linear { a, b, c, time } => ([a, b, c], time),
        }
    }
}

/// Least-squares fit of α, β, γ.
///
/// First the joint fit minimising the sum of squared *relative* errors (each row divided by
/// its time, so small-message latency samples are not drowned by large ones). Parameters no
/// sample constrains keep the default ([`CostParams::default`]); so does a parameter whose
/// estimate comes out negative (the others are then refitted).
///
/// Then the ping-pongs are split in two regimes at the crossover `m = α/β`, where the two
/// terms are equal (`fit_regimes`): β is the slope of the bandwidth-bound samples
/// (ordinary least squares, so the largest messages decide it: the per-byte cost of a long
/// transfer), α the relative fit of the latency-bound ones (and every other row) with that β.
/// On a link that follows `α + β·m` at every size both fits agree; on one that does not — a
/// shaper whose burst lets messages below it pass at wire speed, an eager/rendezvous switch
/// — the joint fit would let the many small samples set β (the emulated cluster's 32 KB tbf
/// burst: 3.5x too small), while this keeps β what bandwidth-bound transfers pay and α what
/// small messages pay.
pub fn fit(samples: &[Sample]) -> CostParams {
    fit_regimes(samples, fit_relative(samples, None))
}

/// The two-regime refinement of [`fit`], starting from the joint fit `joint`: at most 8
/// rounds of (split the ping-pongs at `α/β`; β = least-squares slope of time over bytes of
/// the samples at or above it, if there are at least two and the slope is positive; α, γ =
/// the relative fit of the other samples with that β), until the split repeats. Fewer than
/// two bandwidth-bound samples, or a non-positive slope: the joint fit stands.
fn fit_regimes(samples: &[Sample], joint: CostParams) -> CostParams {
    let pings: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| match *s {
            Sample::PingPong { bytes, time } if time > 0.0 && time.is_finite() => {
                Some((bytes, time))
            }
            _ => None,
        })
        .collect();
    let mut cur = joint;
    let mut last_split = None;
    for _ in 0..8 {
        let cross = cur.alpha / cur.beta;
        let big: Vec<(f64, f64)> = pings.iter().copied().filter(|s| s.0 >= cross).collect();
        if big.len() < 2 || last_split == Some(big.len()) {
            break;
        }
        let beta = match ols_slope(&big) {
            Some(b) if b > 0.0 && b.is_finite() => b,
            _ => break,
        };
        let small: Vec<Sample> = samples
            .iter()
            .copied()
            .filter(|s| !matches!(*s, Sample::PingPong { bytes, .. } if bytes >= cross))
            .collect();
        // No latency-bound ping-pong left: α from every sample with β fixed.
        let any_small = small.iter().any(|s| matches!(s, Sample::PingPong { .. }));
        cur = fit_relative(if any_small { &small } else { samples }, Some(beta));
        last_split = Some(big.len());
    }
    cur
}

/// Slope of the ordinary least-squares line through `(x, y)` points (intercept free);
/// None if the x are all equal.
fn ols_slope(pts: &[(f64, f64)]) -> Option<f64> {
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The joint fit minimising squared relative errors; `beta`: β fixed at that value.
fn fit_relative(samples: &[Sample], beta: Option<f64>) -> CostParams {
    let rows: Vec<([f64; 3], f64)> = samples
        .iter()
        .map(|s| s.row())
        .filter(|(_, t)| *t > 0.0 && t.is_finite())
        .map(|(r, t)| ([r[0] / t, r[1] / t, r[2] / t], 1.0))
        .collect();
    let def = CostParams::default();
    let mut x = [def.alpha, beta.unwrap_or(def.beta), def.gamma];
    let mut active: Vec<usize> = (0..3)
        .filter(|&k| !(k == 1 && beta.is_some()))
        .filter(|&k| rows.iter().any(|(r, _)| r[k] != 0.0))
        .collect();
    loop {
        // Right-hand side minus the contribution of the fixed parameters.
        let k = active.len();
        if k == 0 {
            break;
        }
        let mut ata = vec![vec![0.0f64; k]; k];
        let mut atb = vec![0.0f64; k];
        for (r, t) in &rows {
            let fixed: f64 = (0..3)
                .filter(|i| !active.contains(i))
                .map(|i| r[i] * x[i])
                .sum();
            for (u, &iu) in active.iter().enumerate() {
                atb[u] += r[iu] * (t - fixed);
                for (v, &iv) in active.iter().enumerate() {
                    ata[u][v] += r[iu] * r[iv];
                }
            }
        }
        let sol = match solve(ata, atb) {
            Some(s) => s,
            None => break,
        };
        let neg: Vec<usize> = active
            .iter()
            .zip(&sol)
            .filter(|(_, &v)| v < 0.0)
            .map(|(&i, _)| i)
            .collect();
        let defaults = [def.alpha, def.beta, def.gamma];
        for (&i, &v) in active.iter().zip(&sol) {
            // A negative estimate (noise, e.g. a few tiny samples) is no estimate: that
            // parameter keeps its default (a table's [model] needs α, β > 0) and the others
            // are refitted with it fixed.
            x[i] = if v < 0.0 { defaults[i] } else { v };
        }
        if neg.is_empty() {
            break;
        }
        active.retain(|i| !neg.contains(i));
    }
    CostParams {
        alpha: x[0],
        beta: x[1],
        gamma: x[2],
    }
}

/// Gaussian elimination with partial pivoting; None if singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for row in col + 1..n {
            let (upper, lower) = a.split_at_mut(row);
            let (pivot, r) = (&upper[col], &mut lower[0]);
            let f = r[col] / pivot[col];
            for (x, &p) in r[col..n].iter_mut().zip(&pivot[col..n]) {
                *x -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| a[i][k] * x[k]).sum();
        x[i] = (b[i] - s) / a[i][i];
    }
    Some(x)
}
