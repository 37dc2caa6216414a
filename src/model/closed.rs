//! The closed forms of [`super::time_with_segments`]: one method per collective over the
//! quantities they share ([`Terms`]), each (collective, scheme) pair's time in the α-β-γ
//! model with n segments.

use super::Scheme;
use super::{uni_greedy_time, Duplex};
use crate::algo::CostParams;
use crate::sched::blocks::ceil_log2;

/// The quantities the closed forms of [`super::time_with_segments`] share.
pub(super) struct Terms {
    p: usize,
    bytes: usize,
    c: CostParams,
    a: f64,
    b: f64,
    g: f64,
    m: f64,
    pf: f64,
    /// ⌈log2 p⌉.
    q: f64,
    n: usize,
    nf: f64,
    /// Segment bytes m / n.
    s: f64,
    /// One segment sent and reduced.
    round: f64,
    half: bool,
    /// Exchange algorithms in half duplex: each round's send and receive are serialised.
    ax: f64,
    bx: f64,
    pow2: bool,
    /// ⌊log2 p⌋ and P = 2^⌊log2 p⌋.
    nf_lo: f64,
    pp: f64,
    bin_reduce: f64,
    bin_bcast: f64,
}

impl Terms {
    pub(super) fn new(p: usize, bytes: usize, c: &CostParams, duplex: Duplex, n: usize) -> Terms {
        let (a, b, g) = (c.alpha, c.beta, c.gamma);
        let m = bytes as f64;
        let q = ceil_log2(p) as f64;
        let n = n.max(1);
        let s = m / n as f64;
        let half = duplex == Duplex::Half;
        let (ax, bx) = if half { (2.0 * a, 2.0 * b) } else { (a, b) };
        let nf_lo = (usize::BITS - 1 - p.leading_zeros()) as f64; // floor(log2 p)
        Terms {
            p,
            bytes,
            c: *c,
            a,
            b,
            g,
            m,
            pf: p as f64,
            q,
            n,
            nf: n as f64,
            s,
            round: a + (b + g) * s,
            half,
            ax,
            bx,
            pow2: p.is_power_of_two(),
            nf_lo,
            pp: (1usize << nf_lo as u32) as f64, // P = 2^floor(log2 p)
            bin_reduce: q * (a + b * m + g * m),
            bin_bcast: q * (a + b * m),
        }
    }

    /// The tree report's trees ([`crate::sched::trees`]) with n segments of `one` round each:
    /// the unsegmented rounds R (single port: one message received, or sent, per round) and
    /// then one segment every c rounds, c = 2 once a node has two children (p ≥ 3: two
    /// receives, or two sends, per segment), 1 for p = 2. Half duplex (reduce): c = 4, the
    /// Lowery–Langou binary tree's, an upper bound by simulation; bcast c = 3.
    fn tree(&self, scheme: Scheme, bcast: bool, one: f64) -> f64 {
        use crate::sched::trees::{bcast_rounds, reduce_rounds, Shape};
        let shape = if scheme == Scheme::Binary {
            Shape::Binary
        } else {
            Shape::Fibonacci
        };
        let r = if bcast {
            bcast_rounds(shape, self.p)
        } else {
            reduce_rounds(shape, self.p)
        } as f64;
        let c = match (self.p >= 3, self.half, bcast) {
            (false, _, _) => 1.0,
            (true, false, _) => 2.0,
            (true, true, true) => 3.0,
            (true, true, false) => 4.0,
        };
        (r + c * (self.nf - 1.0)) * one
    }

    pub(super) fn reduce(&self, scheme: Scheme) -> f64 {
        let Terms {
            pf,
            q,
            nf,
            s,
            round,
            half,
            ax,
            bx,
            g,
            m,
            pp,
            nf_lo,
            ..
        } = *self;
        match scheme {
            Scheme::Binomial => self.bin_reduce,
            Scheme::Pipeline if half => (pf - 1.0 + 2.0 * (nf - 1.0)) * round,
            Scheme::Pipeline => (pf + nf - 2.0) * round,
            Scheme::Binary | Scheme::Fibonacci => self.tree(scheme, false, round),
            Scheme::HeapBinary => {
                let big_n = ceil_log2(self.p + 1) as f64;
                if half {
                    (2.0 * (big_n - 1.0) + 4.0 * (nf - 1.0)) * round
                } else {
                    2.0 * (big_n + nf - 2.0) * round
                }
            }
            Scheme::Greedy if !half => (q + nf - 1.0) * round,
            Scheme::GreedyUni => uni_greedy_time(self.p, self.n, self.bytes, &self.c),
            Scheme::Circulant => (nf - 1.0 + q) * (ax + (bx + g) * s),
            Scheme::Butterfly if self.pow2 => 2.0 * q * ax + (1.0 - 1.0 / pf) * (2.0 * bx + g) * m,
            Scheme::Butterfly => {
                (q + nf_lo) * ax + (2.5 - 2.0 / pp) * bx * m + (1.5 - 1.0 / pp) * g * m
            }
            _ => f64::INFINITY,
        }
    }

    pub(super) fn allreduce(&self, scheme: Scheme) -> f64 {
        let Terms {
            a,
            b,
            pf,
            q,
            nf,
            s,
            round,
            half,
            ax,
            bx,
            g,
            m,
            pp,
            ..
        } = *self;
        match scheme {
            Scheme::Binomial => self.bin_reduce + self.bin_bcast,
            // greedy reduce + circulant n-block broadcast with the same n (§5.6).
            Scheme::Greedy if !half => (q + nf - 1.0) * round + (q + nf - 1.0) * (a + b * s),
            Scheme::Circulant => 2.0 * q * ax + (pf - 1.0) / pf * (2.0 * bx + g) * m,
            Scheme::Butterfly => {
                let (bw, lat) = if self.pow2 {
                    (
                        2.0 * q * ax + (1.0 - 1.0 / pf) * (2.0 * bx + g) * m,
                        q * (ax + bx * m + g * m),
                    )
                } else {
                    (
                        2.0 * q * ax + (1.5 - 1.0 / pp) * (2.0 * bx + g) * m,
                        (q + 1.0) * (ax + bx * m) + q * g * m,
                    )
                };
                bw.min(lat)
            }
            Scheme::Ring => 2.0 * (pf - 1.0) * ax + (pf - 1.0) / pf * (2.0 * bx + g) * m,
            // reduce to rank 0 + broadcast on the same tree, with the same n.
            Scheme::Binary | Scheme::Fibonacci => {
                self.tree(scheme, false, round) + self.tree(scheme, true, a + b * s)
            }
            _ => f64::INFINITY,
        }
    }

    pub(super) fn reduce_scatter(&self, scheme: Scheme) -> f64 {
        let Terms {
            a,
            b,
            pf,
            q,
            ax,
            bx,
            g,
            m,
            pp,
            ..
        } = *self;
        match scheme {
            Scheme::Binomial => self.bin_reduce + (pf - 1.0) * (a + b * m / pf),
            Scheme::Circulant => q * ax + (pf - 1.0) / pf * (bx + g) * m,
            Scheme::Butterfly if self.pow2 => q * ax + (1.0 - 1.0 / pf) * (bx + g) * m,
            // reduction phase + one redistribution round (approximate, §6.5)
            Scheme::Butterfly => q * ax + (1.5 - 1.0 / pp) * (bx + g) * m + ax + bx * m / pp,
            Scheme::Ring => (pf - 1.0) * (ax + (bx + g) * m / pf),
            _ => f64::INFINITY,
        }
    }

    pub(super) fn allgatherv(&self, scheme: Scheme) -> f64 {
        let Terms {
            a,
            b,
            pf,
            q,
            ax,
            bx,
            m,
            pp,
            ..
        } = *self;
        match scheme {
            Scheme::Binomial => (pf - 1.0) * (a + b * m / pf) + self.bin_bcast,
            Scheme::Circulant => q * ax + (pf - 1.0) / pf * bx * m,
            Scheme::Butterfly if self.pow2 => q * ax + (pf - 1.0) / pf * bx * m,
            Scheme::Butterfly => (q + 1.0) * ax + (pf - 1.0) / pf * bx * m + bx * m / pp,
            Scheme::Ring => (pf - 1.0) * (ax + bx * m / pf),
            _ => f64::INFINITY,
        }
    }

    pub(super) fn bcast(&self, scheme: Scheme) -> f64 {
        let Terms {
            a,
            b,
            pf,
            q,
            ax,
            bx,
            m,
            nf,
            s,
            ..
        } = *self;
        match scheme {
            Scheme::Binomial => self.bin_bcast,
            Scheme::Pipeline => (pf + nf - 2.0) * (a + b * s),
            Scheme::Circulant => (nf - 1.0 + q) * (ax + bx * s),
            Scheme::Binary | Scheme::Fibonacci => self.tree(scheme, true, a + b * s),
            // binomial scatter (q rounds, (p−1)/p·m from the root) + ring allgather.
            Scheme::ScatterAllgather => {
                q * a + (pf - 1.0) / pf * b * m + (pf - 1.0) * (ax + bx * m / pf)
            }
            _ => f64::INFINITY,
        }
    }
}
