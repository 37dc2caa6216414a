//! The cost model's prediction next to a measurement, and the model fit used by `pcoll-tune`
//! (both from the core's `pcoll::model`).

use pcoll::{Algorithm, Collective, CostParams};

pub use pcoll::model::{fit, Sample};

/// Predicted time (microseconds) of `alg` for the call (`None` for `native`, which the model
/// does not describe).
pub fn predict_us(
    coll: Collective,
    alg: Algorithm,
    p: usize,
    bytes: usize,
    params: &CostParams,
) -> Option<f64> {
    Some(pcoll::model::predict(coll, alg, p, bytes, params).time * 1e6).filter(|t| t.is_finite())
}
