//! The cost model's prediction next to a measurement, and the model fit used by
//! `pcoll-tune`.
//!
//! TODO(model): `pcoll::model::predict(coll, alg, p, bytes, &params) -> Prediction { time,
//! segments }` and `pcoll::model::fit(&[Sample]) -> CostParams` are being written on another
//! branch and are not in this tree yet. When they land:
//!   * `predict_us` becomes `Some(pcoll::model::predict(coll, alg, p, bytes, params).time *
//!     1e6).filter(|t| t.is_finite())`;
//!   * `fit` becomes `pcoll::model::fit` with `Sample::PingPong` / `Sample::LocalReduce`
//!     (the same two kinds of samples as here), and the local least squares below goes.

use pcoll::{Algorithm, Collective, CostParams};

/// Predicted time (microseconds) of `alg` for the call; `None` while the model is missing
/// (and for `native`, which the model does not describe).
pub fn predict_us(
    _coll: Collective,
    _alg: Algorithm,
    _p: usize,
    _bytes: usize,
    _params: &CostParams,
) -> Option<f64> {
    None // TODO(model): see module docs.
}

/// One measurement for [`fit`]: one-way point-to-point time of `bytes` (`alpha + beta *
/// bytes`), or a local reduction of `bytes` (`gamma * bytes`).
#[derive(Clone, Copy, Debug)]
pub enum Sample {
    PingPong { bytes: f64, time: f64 },
    LocalReduce { bytes: f64, time: f64 },
}

/// Least squares of relative errors (each row divided by its time, so latency-bound samples
/// count as much as bandwidth-bound ones): alpha and beta from the ping-pongs, gamma from the
/// local reductions (slope through the origin). Parameters without samples, or with a
/// non-positive estimate, keep the defaults.
pub fn fit(samples: &[Sample]) -> CostParams {
    let def = CostParams::default();
    // alpha, beta: minimise sum ((a + b x_i) / t_i - 1)^2 -> 2x2 normal equations.
    let (mut s11, mut s12, mut s22, mut r1, mut r2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut g_num, mut g_den) = (0.0, 0.0);
    for s in samples {
        match *s {
            Sample::PingPong { bytes, time } if time > 0.0 => {
                let (u, v) = (1.0 / time, bytes / time);
                s11 += u * u;
                s12 += u * v;
                s22 += v * v;
                r1 += u;
                r2 += v;
            }
            Sample::LocalReduce { bytes, time } if time > 0.0 && bytes > 0.0 => {
                let v = bytes / time;
                g_num += v;
                g_den += v * v;
            }
            _ => {}
        }
    }
    let det = s11 * s22 - s12 * s12;
    let (mut alpha, mut beta) = (def.alpha, def.beta);
    if det.abs() > 1e-300 * s11.max(1.0) && s11 > 0.0 {
        let a = (r1 * s22 - r2 * s12) / det;
        let b = (s11 * r2 - s12 * r1) / det;
        if a > 0.0 && b > 0.0 {
            alpha = a;
            beta = b;
        } else if b > 0.0 {
            // Latency below resolution: refit beta alone through the origin.
            beta = r2 / s22;
        }
    }
    let gamma = if g_den > 0.0 && g_num > 0.0 {
        g_num / g_den
    } else {
        def.gamma
    };
    CostParams { alpha, beta, gamma }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_exact_parameters() {
        let (a, b, g) = (3e-6, 1.5e-10, 4e-10);
        let mut s = Vec::new();
        for k in 0..12 {
            let x = (8u64 << (2 * k)) as f64;
            s.push(Sample::PingPong {
                bytes: x,
                time: a + b * x,
            });
            s.push(Sample::LocalReduce {
                bytes: x,
                time: g * x,
            });
        }
        let c = fit(&s);
        assert!((c.alpha / a - 1.0).abs() < 1e-6, "{c:?}");
        assert!((c.beta / b - 1.0).abs() < 1e-6, "{c:?}");
        assert!((c.gamma / g - 1.0).abs() < 1e-6, "{c:?}");
    }

    #[test]
    fn fit_without_samples_keeps_defaults() {
        assert_eq!(fit(&[]), CostParams::default());
    }
}
