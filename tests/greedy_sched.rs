//! Greedy schedule generators (ALGORITHMS.md §3, §4) against the reference vectors
//! (test-vectors/vectors.json and §9), the independent validator, and the bi-greedy
//! conjecture over a grid.

use pcoll::sched::greedy::{bi_greedy, bi_greedy_conjecture, uni_greedy, validate, SegCost};
use serde_json::Value;

fn vectors() -> Value {
    let path = std::env::var("PCOLL_VECTORS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/vectors.json").into());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn json_events(case: &Value) -> Vec<(f64, usize, usize, usize)> {
    case["events[start,sender,receiver,segment]"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let e = e.as_array().unwrap();
            (
                e[0].as_f64().unwrap(),
                e[1].as_u64().unwrap() as usize,
                e[2].as_u64().unwrap() as usize,
                e[3].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

#[test]
fn bigreedy_vectors() {
    let v = vectors();
    let cases = v["bigreedy"].as_array().unwrap();
    assert!(cases.len() >= 4);
    for c in cases {
        let g = |k: &str| c[k].as_u64().unwrap();
        let (p, nseg, tc, tp) = (g("p") as usize, g("nseg") as usize, g("tcomm"), g("tcomp"));
        let s = bi_greedy(p, 0, nseg, tc, tp);
        assert_eq!(s.completion, g("time"), "p={p} nseg={nseg} {tc},{tp}");
        // Same events in the same (generation) order as the reference model.
        assert_eq!(s.tuples(), json_events(c), "p={p} nseg={nseg}");
        let t = validate(p, 0, nseg, &s.tuples(), |_| (tc as f64, tp as f64), false).unwrap();
        assert_eq!(t, s.completion as f64);
    }
}

#[test]
fn unigreedy_vectors() {
    let v = vectors();
    let cases = v["unigreedy"].as_array().unwrap();
    assert!(cases.len() >= 3);
    for c in cases {
        let g = |k: &str| c[k].as_f64().unwrap();
        let p = c["p"].as_u64().unwrap() as usize;
        let nseg = c["nseg"].as_u64().unwrap() as usize;
        let sz = g("segment_size");
        let cost = SegCost {
            tcomm: g("alpha") + g("beta") * sz,
            tcomp: g("gamma") * sz,
        };
        let s = uni_greedy(p, 0, &vec![cost; nseg]);
        assert_eq!(s.completion, g("time"), "p={p} nseg={nseg}");
        assert_eq!(s.tuples(), json_events(c), "p={p} nseg={nseg}");
        let t = validate(p, 0, nseg, &s.tuples(), |_| (cost.tcomm, cost.tcomp), true).unwrap();
        assert_eq!(t, s.completion);
    }
}

/// §9 table (also in the JSON, but kept literal here as the spec prints it).
#[test]
fn section9_times() {
    for (p, nseg, tc, tp, want) in [
        (16, 5, 2, 1, 24),
        (7, 3, 2, 1, 15),
        (12, 4, 1, 0, 7),
        (5, 6, 3, 2, 40),
    ] {
        assert_eq!(bi_greedy(p, 0, nseg, tc, tp).completion, want);
    }
    for (p, nseg, a, b, g, want) in [
        (15, 5, 2.0, 0.0, 1.0, 39.0),
        (8, 3, 1.0, 1.0, 0.5, 17.5),
        (6, 4, 1.0, 1.0, 0.0, 18.0),
    ] {
        let c = SegCost {
            tcomm: a + b,
            tcomp: g,
        };
        assert_eq!(uni_greedy(p, 0, &vec![c; nseg]).completion, want);
    }
}

/// Brute-force reference for uni-greedy with one segment: a half-duplex reduction of one
/// segment with equal costs cannot beat ⌈log2 p⌉ steps, and greedy reaches it (it is the
/// binomial tree).
#[test]
fn unigreedy_one_segment_is_binomial() {
    for p in 1..70usize {
        let c = SegCost {
            tcomm: 3.0,
            tcomp: 2.0,
        };
        let s = uni_greedy(p, p / 3, &[c]);
        let q = pcoll::sched::blocks::ceil_log2(p) as f64;
        assert_eq!(s.completion, q * 5.0, "p={p}");
    }
}

/// Half-duplex pipeline chain time (p−1+2(nseg−1))(tcomm) for γ = 0 is an upper bound that
/// uni-greedy (optimal among in-order algorithms) never exceeds; binomial is another.
#[test]
fn unigreedy_never_slower_than_chain_or_binomial() {
    for p in 2..40usize {
        for nseg in 1..10usize {
            for (tc, tp) in [(1.0, 0.0), (2.0, 1.0), (5.0, 3.0), (1.0, 2.0)] {
                let s = uni_greedy(
                    p,
                    0,
                    &vec![
                        SegCost {
                            tcomm: tc,
                            tcomp: tp
                        };
                        nseg
                    ],
                );
                let chain = (p - 1 + 2 * (nseg - 1)) as f64 * (tc + tp);
                let binomial = (pcoll::sched::blocks::ceil_log2(p) * nseg) as f64 * (tc + tp);
                assert!(s.completion <= chain + 1e-9, "p={p} nseg={nseg}");
                assert!(s.completion <= binomial + 1e-9, "p={p} nseg={nseg}");
            }
        }
    }
}

#[test]
fn unigreedy_valid_any_root_unequal_segments() {
    let mut seed = 12345u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let p = 1 + (rnd() % 50) as usize;
        let root = (rnd() % p as u64) as usize;
        let nseg = 1 + (rnd() % 9) as usize;
        let costs: Vec<SegCost> = (0..nseg)
            .map(|_| SegCost {
                tcomm: 1.0 + (rnd() % 7) as f64,
                tcomp: (rnd() % 4) as f64,
            })
            .collect();
        let s = uni_greedy(p, root, &costs);
        let t = validate(
            p,
            root,
            nseg,
            &s.tuples(),
            |j| (costs[j].tcomm, costs[j].tcomp),
            true,
        )
        .unwrap_or_else(|e| panic!("p={p} root={root} nseg={nseg}: {e}"));
        assert_eq!(t, s.completion);
        // Segments in order on every process (the uni-greedy restriction).
        for i in 0..p {
            let ev = s.events_of(i);
            for w in ev.windows(2) {
                assert!(w[0].segment() <= w[1].segment(), "p={p} rank {i}");
            }
        }
    }
}

#[test]
fn bigreedy_valid_any_root() {
    for p in 1..=40usize {
        for root in [0, p / 2, p - 1] {
            for nseg in [1, 2, 5, 9] {
                for (tc, tp) in [(1, 0), (2, 1), (3, 2), (1, 3)] {
                    let s = bi_greedy(p, root, nseg, tc, tp);
                    let t = validate(
                        p,
                        root,
                        nseg,
                        &s.tuples(),
                        |_| (tc as f64, tp as f64),
                        false,
                    )
                    .unwrap_or_else(|e| panic!("p={p} root={root} nseg={nseg}: {e}"));
                    assert_eq!(t, s.completion as f64);
                }
            }
        }
    }
}

/// The paper's conjecture (ALGORITHMS.md §4): completion = (⌈log2 p⌉ + nseg − 1)(tcomm + tcomp).
#[test]
fn bigreedy_conjecture_grid() {
    let start = std::time::Instant::now();
    let mut cases = 0;
    let ps: Vec<usize> = (2..=64).chain([100, 128, 129]).collect();
    for &p in &ps {
        let nmax = if p > 70 { 6 } else { 12 };
        for nseg in 1..=nmax {
            for (tc, tp) in [(1, 0), (2, 1), (1, 1), (3, 1), (3, 2), (2, 0)] {
                let s = bi_greedy(p, 0, nseg, tc, tp);
                assert_eq!(
                    s.completion,
                    bi_greedy_conjecture(p, nseg, tc, tp),
                    "p={p} nseg={nseg} tcomm={tc} tcomp={tp}"
                );
                if p <= 33 && nseg <= 6 {
                    validate(p, 0, nseg, &s.tuples(), |_| (tc as f64, tp as f64), false)
                        .unwrap_or_else(|e| panic!("p={p} nseg={nseg}: {e}"));
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 4644);
    eprintln!(
        "bi-greedy conjecture: {cases} cases in {:?}",
        start.elapsed()
    );
}

/// The validator itself must reject broken schedules (otherwise the tests above prove nothing).
#[test]
fn validator_rejects() {
    let ok = vec![(0.0, 1, 0, 0), (0.0, 3, 2, 0), (3.0, 2, 0, 0)];
    let c = |_| (2.0, 1.0);
    assert_eq!(validate(4, 0, 1, &ok, c, false).unwrap(), 6.0);
    // 1 sends before it has reduced 2's contribution.
    let early = vec![(0.0, 2, 1, 0), (2.0, 1, 0, 0)];
    let e = validate(3, 0, 1, &early, c, false);
    assert!(format!("{e:?}").contains("before reducing"));
    assert!(e.is_err());
    // root receives two messages at once.
    let dbl = vec![(0.0, 1, 0, 0), (0.0, 2, 0, 0), (0.0, 3, 1, 0)];
    let e = validate(4, 0, 1, &dbl, c, false);
    assert!(e.is_err());
    // 3 never sends.
    let miss = vec![(0.0, 1, 0, 0), (3.0, 2, 0, 0)];
    let e = validate(4, 0, 1, &miss, c, false);
    assert!(e.is_err());
    // root sends.
    let rs = vec![(0.0, 0, 1, 0), (3.0, 1, 2, 0), (6.0, 2, 3, 0)];
    let e = validate(4, 0, 1, &rs, c, false);
    assert!(e.is_err());
    // half duplex: 2 receives from 3 while sending to 0 (fine in full duplex? no: send
    // must follow the reduction anyway) — use separate segments instead.
    let hd = vec![(0.0, 1, 0, 0), (0.0, 1, 0, 1)];
    let e = validate(2, 0, 2, &hd, c, true);
    assert!(e.is_err());
    // cycle: 1 -> 2 -> 1 never reaches the root (and 2 receives after sending).
    let cyc = vec![(0.0, 1, 2, 0), (3.0, 2, 1, 0)];
    let e = validate(3, 0, 1, &cyc, c, false);
    assert!(e.is_err());
}
