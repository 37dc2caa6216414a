//! `pcoll::model::fit`: α, β, γ from ping-pong and local-reduce samples, including links
//! whose ping-pong times follow `α + β·m` only per regime (a shaper's burst).

use pcoll::algo::CostParams;
use pcoll::model::{fit, Sample};

/// pcoll-tune's ping-pong sizes (`fit_model`).
const TUNE_SIZES: [f64; 8] = [
    8.0, 64.0, 512.0, 4096.0, 32768.0, 262144.0, 1048576.0, 4194304.0,
];

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// Deterministic ±`amp` relative noise.
fn noise(seed: u64, amp: f64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        1.0 + ((s % 2001) as f64 - 1000.0) / 1000.0 * amp
    }
}

fn pings(sizes: &[f64], mut t: impl FnMut(f64) -> f64) -> Vec<Sample> {
    sizes
        .iter()
        .map(|&b| Sample::PingPong {
            bytes: b,
            time: t(b),
        })
        .collect()
}

fn reduces(gamma: f64, n: &mut impl FnMut() -> f64) -> Vec<Sample> {
    [65536.0, 262144.0, 1048576.0, 4194304.0]
        .iter()
        .map(|&b| Sample::LocalReduce {
            bytes: b,
            time: gamma * b * n(),
        })
        .collect()
}

#[test]
fn one_regime_recovered_at_tune_sizes() {
    for (k, (a, b, g)) in [
        (3e-6, 4e-10, 2.5e-10),
        (2e-7, 9e-11, 4e-11),
        (3e-5, 1.6e-8, 2e-10),
    ]
    .into_iter()
    .enumerate()
    {
        let mut n = noise(7 + k as u64, 0.02);
        let mut s = pings(&TUNE_SIZES, |m| (a + b * m) * n());
        s.extend(reduces(g, &mut n));
        let f = fit(&s);
        assert!(rel(f.alpha, a) < 0.1, "{k}: {f:?}");
        assert!(rel(f.beta, b) < 0.05, "{k}: {f:?}");
        assert!(rel(f.gamma, g) < 0.05, "{k}: {f:?}");
    }
}

/// Ping-pongs measured at [`TUNE_SIZES`], one-way times in µs.
fn measured(us: &[f64; 8]) -> Vec<Sample> {
    pings(&TUNE_SIZES, |m| {
        let i = TUNE_SIZES.iter().position(|&b| b == m).unwrap();
        us[i] * 1e-6
    })
}

/// A token-bucket shaper: the first `burst` bytes pass at `fast` s/B, the rest at the rate.
fn shaped(alpha: f64, beta: f64, fast: f64, burst: f64) -> impl Fn(f64) -> f64 {
    move |m: f64| alpha + fast * m.min(burst) + beta * (m - burst).max(0.0)
}

#[test]
fn burst_regime_beta_is_the_link_rate() {
    // 500 Mbit/s with TCP overhead (1.68e-8 s/B), veth below the 32 KB bucket.
    let (alpha, beta) = (7.5e-6, 1.68e-8);
    for (k, (fast, burst)) in [(2e-10, 32768.0), (1e-9, 32768.0), (2e-10, 65536.0)]
        .into_iter()
        .enumerate()
    {
        let t = shaped(alpha, beta, fast, burst);
        let mut n = noise(11 + k as u64, 0.03);
        let mut s = pings(&TUNE_SIZES, |m| t(m) * n());
        s.extend(reduces(2e-10, &mut n));
        let f = fit(&s);
        assert!(rel(f.beta, beta) < 0.05, "{k}: {f:?}");
        assert!(rel(f.alpha, alpha) < 0.1, "{k}: {f:?}");
        // Bandwidth-bound transfers are predicted within 10%.
        for m in [1048576.0, 4194304.0] {
            assert!(rel(f.alpha + f.beta * m, t(m)) < 0.1, "{k} {m}: {f:?}");
        }
    }
}

/// The emulated cluster's samples (results/tuning.net.toml, 4 nodes x 1 rank, 500 Mbit/s,
/// tbf burst 32 KB): the joint relative fit gave β = 4.74e-9 s/B.
#[test]
fn measured_shaped_link() {
    let us = [7.51, 7.66, 7.65, 15.25, 280.27, 4021.34, 17225.38, 69906.19];
    let f = fit(&measured(&us));
    // The link check measured 477-479 Mbit/s of TCP payload: 1.67e-8 s/B.
    assert!(rel(f.beta, 1.677e-8) < 0.03, "{f:?}");
    assert!(f.alpha > 5e-6 && f.alpha < 1e-5, "{f:?}");
}

/// Shared memory of this machine (results/tuning.mpich.toml, tuning.openmpi.toml: p = 2
/// ping-pongs): β stays the per-byte cost of large copies, α the small-message time.
#[test]
fn measured_shared_memory() {
    let sets: [([f64; 8], f64); 2] = [
        // MPICH 4.0.2: (1M..4M slope 7.99e-11 s/B)
        (
            [0.15, 0.17, 2.06, 6.44, 5.04, 23.01, 86.05, 337.52],
            7.99e-11,
        ),
        // Open MPI 4.1.4: (1M..4M slope 9.13e-11 s/B)
        (
            [2.17, 2.19, 2.27, 3.46, 6.67, 25.06, 88.99, 376.25],
            9.13e-11,
        ),
    ];
    for (us, slope) in sets {
        let f = fit(&measured(&us));
        assert!(rel(f.beta, slope) < 0.1, "{us:?}: {f:?}");
        // α within the two smallest samples' range (they are latency-bound).
        assert!(
            f.alpha >= 0.5 * us[0] * 1e-6 && f.alpha <= 1.5 * us[1] * 1e-6,
            "{f:?}"
        );
    }
}

#[test]
fn too_few_bandwidth_samples_keep_the_joint_fit() {
    // Two latency-bound samples only: no slope to take; α, β > 0 still.
    let s = [
        Sample::PingPong {
            bytes: 8.0,
            time: 2.0e-6,
        },
        Sample::PingPong {
            bytes: 64.0,
            time: 2.1e-6,
        },
    ];
    let f = fit(&s);
    assert!(f.alpha > 1.9e-6 && f.alpha < 2.1e-6, "{f:?}");
    assert!(f.beta > 0.0, "{f:?}");
    let d = CostParams::default();
    assert_eq!(fit(&[]), d);
}
