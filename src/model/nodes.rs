//! The two-level cost model: a communicator of `n` nodes with up to `k` ranks each, α, β, γ
//! inside a node (the table's `[model]`) and α, β between nodes (`[model.net]`), where a
//! node's ranks share its link.
//!
//! * A **flat** algorithm on such a communicator is priced with the inter-node α and β
//!   times `k`: in a round, every rank of a node may send off the node at once, through the
//!   one link (an upper bound). The exception is `ring` on nodes of consecutive ranks, where
//!   one rank per node crosses the link per step: β once.
//! * **Native** is priced as its own flat algorithm under the same parameters as a flat one.
//! * **`hier`**: the node-local step (the cheapest pcoll algorithm for `k` ranks under the
//!   node's parameters), the leaders' step (the cheapest for `n` ranks under the inter-node
//!   parameters: one rank per node uses the link), and the node-local broadcast, scatter or
//!   gather.
//! * **`hier_ml`** with width `w` (the smallest node's size): node-local reduce_scatter, `w`
//!   concurrent inter-node steps of `m/w` bytes sharing the link (β times `w`), node-local
//!   allgatherv (allreduce) or linear gather (reduce).
//!
//! The builders ([`crate::algo::hier`]) choose their steps' algorithms with the same
//! parameters ([`leaders`], [`multi_leaders`]), so what is priced is what runs.

use crate::algo::hier::{node_shm_pays, pick_sub};
use crate::algo::{Algorithm, Collective, CostParams};
use crate::nodes::NodeShape;
use crate::sched::blocks::ceil_log2;

/// Parameters inside a node and between nodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Levels {
    pub intra: CostParams,
    pub inter: CostParams,
    /// The nodes have shared windows (`shm` on): `hier`'s node-local reduce and broadcast
    /// are priced as the builder runs them ([`node_shm_pays`]).
    pub node_shm: bool,
}

/// The leaders' step of `hier`: one rank per node on the link.
pub fn leaders(inter: &CostParams) -> CostParams {
    *inter
}

/// One of the `w` concurrent inter-node steps of `hier_ml`: `w` ranks share the link.
pub fn multi_leaders(inter: &CostParams, w: usize) -> CostParams {
    CostParams {
        beta: inter.beta * w.max(1) as f64,
        ..*inter
    }
}

/// A flat algorithm (or native, `alg = Native`) over the whole communicator.
pub fn flat_params(l: &Levels, shape: &NodeShape, alg: Algorithm) -> CostParams {
    let share = if alg == Algorithm::Ring && shape.contiguous {
        1.0
    } else {
        shape.max_ppn.max(1) as f64
    };
    CostParams {
        alpha: l.inter.alpha,
        beta: l.inter.beta * share,
        gamma: l.intra.gamma,
    }
}

/// Predicted seconds of pcoll's cheapest algorithm for `coll` on `q` ranks.
fn step(coll: Collective, q: usize, bytes: usize, commutative: bool, c: &CostParams) -> f64 {
    if q <= 1 {
        // One rank: a local copy at most.
        return 0.0;
    }
    let alg = pick_sub(coll, q, bytes, commutative, c);
    crate::model::predict(coll, alg, q, bytes, c).time
}

/// Binomial broadcast of `bytes` over `q` ranks.
pub fn binomial_bcast(q: usize, bytes: usize, c: &CostParams) -> f64 {
    ceil_log2(q) as f64 * (c.alpha + c.beta * bytes as f64)
}

/// A node-local step of `hier` or `hier_ml` (reduce, broadcast, reduce_scatter, allgatherv)
/// over `k` ranks: through the node's window where the builder runs it so, else
/// point-to-point.
fn node_step(coll: Collective, k: usize, bytes: usize, c: bool, l: &Levels) -> Parts {
    if l.node_shm && node_shm_pays(k, bytes) {
        return Parts {
            windows: crate::model::shm::time(coll, k, bytes),
            rest: 0.0,
        };
    }
    rest(match coll {
        Collective::Bcast => binomial_bcast(k, bytes, &l.intra),
        _ => step(coll, k, bytes, c, &l.intra),
    })
}

/// A node-aware algorithm's predicted time: its node steps through the nodes' windows, and
/// the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Parts {
    pub windows: f64,
    pub rest: f64,
}

impl Parts {
    pub fn total(self) -> f64 {
        self.windows + self.rest
    }
}

impl std::ops::Add for Parts {
    type Output = Parts;
    fn add(self, o: Parts) -> Parts {
        Parts {
            windows: self.windows + o.windows,
            rest: self.rest + o.rest,
        }
    }
}

/// A time spent outside the nodes' windows.
fn rest(t: f64) -> Parts {
    Parts {
        windows: 0.0,
        rest: t,
    }
}

/// Linear gather or scatter of `bytes` in all over `q` ranks (at the root).
fn linear(q: usize, bytes: usize, c: &CostParams) -> f64 {
    if q <= 1 {
        return 0.0;
    }
    let qf = q as f64;
    (qf - 1.0) * c.alpha + c.beta * bytes as f64 * (qf - 1.0) / qf
}

/// Predicted seconds of `hier` / `hier_ml` for the call (infinite where it does not exist),
/// in its [`Parts`]: the node steps through the windows apart.
pub fn node_aware_time(
    coll: Collective,
    alg: Algorithm,
    shape: &NodeShape,
    bytes: usize,
    commutative: bool,
    l: &Levels,
) -> Parts {
    use Collective::*;
    let (n, k) = (shape.nodes.max(1), shape.max_ppn.max(1));
    let w = shape.min_ppn.max(1);
    let intra = &l.intra;
    let lead = leaders(&l.inter);
    let ml = multi_leaders(&l.inter, w);
    let c = commutative;
    let per_node = bytes / n;
    match (coll, alg) {
        (Reduce, Algorithm::Hier) => {
            node_step(Reduce, k, bytes, c, l) + rest(step(Reduce, n, bytes, c, &lead))
        }
        (Allreduce, Algorithm::Hier) => {
            node_step(Reduce, k, bytes, c, l)
                + rest(step(Allreduce, n, bytes, c, &lead))
                + node_step(Bcast, k, bytes, true, l)
        }
        (Reduce, Algorithm::HierMl) => {
            node_step(ReduceScatter, k, bytes, c, l)
                + rest(step(Reduce, n, bytes.div_ceil(w), c, &ml))
                + rest(linear(k, bytes, intra))
        }
        (Allreduce, Algorithm::HierMl) => {
            node_step(ReduceScatter, k, bytes, c, l)
                + rest(step(Allreduce, n, bytes.div_ceil(w), c, &ml))
                + node_step(Allgatherv, k, bytes, true, l)
        }
        (ReduceScatter, Algorithm::Hier) => {
            node_step(Reduce, k, bytes, c, l)
                + rest(step(ReduceScatter, n, bytes, c, &lead))
                + rest(linear(k, per_node, intra))
        }
        (Allgatherv, Algorithm::Hier) => {
            rest(linear(k, per_node, intra))
                + rest(step(Allgatherv, n, bytes, true, &lead))
                + rest(binomial_bcast(k, bytes, intra))
        }
        _ => rest(f64::INFINITY),
    }
}

/// Predicted seconds of a flat pcoll algorithm over the whole communicator.
pub fn flat_time(
    coll: Collective,
    alg: Algorithm,
    p: usize,
    shape: &NodeShape,
    bytes: usize,
    l: &Levels,
) -> f64 {
    crate::model::predict(coll, alg, p, bytes, &flat_params(l, shape, alg)).time
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arithmetic: 2 nodes x 2 ranks, a bandwidth-bound link; hier_ml's link
    /// carries m per direction, a flat butterfly 2m (both ranks of a node cross at once).
    #[test]
    fn two_by_two_bandwidth_bound() {
        let intra = CostParams {
            alpha: 1e-6,
            beta: 1e-11,
            gamma: 1e-11,
        };
        let inter = CostParams {
            alpha: 2e-5,
            beta: 1.6e-8,
            gamma: 1e-11,
        };
        let l = Levels {
            intra,
            inter,
            node_shm: false,
        };
        let shape = NodeShape::blocks(4, 2);
        let m = 16 << 20;
        let ml = node_aware_time(
            Collective::Allreduce,
            Algorithm::HierMl,
            &shape,
            m,
            true,
            &l,
        )
        .total();
        let bf = flat_time(
            Collective::Allreduce,
            Algorithm::Butterfly,
            4,
            &shape,
            m,
            &l,
        );
        let link = m as f64 * inter.beta;
        assert!(ml > link && ml < 1.2 * link, "hier_ml {ml} vs link {link}");
        assert!(bf > 1.8 * link, "butterfly {bf} vs link {link}");
        // Ring on consecutive nodes: 1.5 m through the link.
        let ring = flat_time(Collective::Allreduce, Algorithm::Ring, 4, &shape, m, &l);
        assert!(ring > 1.4 * link && ring < 1.7 * link, "ring {ring}");
    }
}
