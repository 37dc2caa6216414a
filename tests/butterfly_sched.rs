//! Butterfly schedules (src/sched/butterfly.rs) against the reference vectors
//! (ALGORITHMS.md §9 and test-vectors/vectors.json), per-rank consistency, the one-port
//! property, and a symbolic non-commutative execution: every partial is a contiguous rank
//! interval with an explicit bracketing tree, combined only as lower ⊕ adjacent-higher.

use pcoll::sched::blocks::ceil_log2;
use pcoll::sched::butterfly::{
    bw_allreduce, bw_reduce, final_blocks, global, latency_allreduce, reduce_routing_rounds,
    Layout, Mode, Transfer,
};
use std::collections::HashMap;

fn tr(src: usize, dst: usize, lo: usize, hi: usize, mode: &str) -> Transfer {
    Transfer {
        src,
        dst,
        lo,
        hi,
        mode: match mode {
            "L" => Mode::L,
            "R" => Mode::R,
            "C" => Mode::C,
            x => panic!("bad mode {x}"),
        },
    }
}

fn sorted(mut v: Vec<Transfer>) -> Vec<Transfer> {
    v.sort();
    v
}

fn assert_same_rounds(got: &[Vec<Transfer>], want: &[Vec<Transfer>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: number of rounds");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            sorted(g.clone()),
            sorted(w.clone()),
            "{what}: round {i} differs"
        );
    }
}

/// ALGORITHMS.md §9, "Butterfly p = 5, m = 16", typed in from the text.
#[test]
fn p5_m16_vector_from_the_text() {
    let want = vec![
        vec![
            tr(1, 2, 0, 8, "L"),
            tr(2, 1, 8, 16, "R"),
            tr(4, 3, 0, 8, "R"),
            tr(3, 4, 8, 16, "L"),
        ],
        vec![tr(2, 0, 0, 8, "R"), tr(0, 1, 8, 16, "L")],
        vec![
            tr(3, 0, 0, 4, "R"),
            tr(4, 1, 8, 12, "R"),
            tr(0, 3, 4, 8, "L"),
            tr(1, 4, 12, 16, "L"),
        ],
        vec![
            tr(0, 3, 0, 4, "C"),
            tr(1, 4, 8, 12, "C"),
            tr(3, 0, 4, 8, "C"),
            tr(4, 1, 12, 16, "C"),
        ],
        vec![tr(0, 2, 0, 8, "C"), tr(1, 0, 8, 16, "C")],
        vec![
            tr(1, 2, 8, 16, "C"),
            tr(2, 1, 0, 8, "C"),
            tr(3, 4, 0, 8, "C"),
            tr(4, 3, 8, 16, "C"),
        ],
    ];
    let got = global(5, |r| bw_allreduce(5, 16, r));
    assert_same_rounds(&got, &want, "p=5 m=16");
}

#[test]
fn json_vectors() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/vectors.json"
    ))
    .expect("vectors.json is readable");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = v["butterfly"].as_array().expect("butterfly vectors");
    assert!(!cases.is_empty());
    for c in cases {
        let p = c["p"].as_u64().unwrap() as usize;
        let m = c["m"].as_u64().unwrap() as usize;
        assert_eq!(c["op"].as_str(), Some("allreduce"));
        let red = c["reduction_rounds"].as_u64().unwrap() as usize;
        let want: Vec<Vec<Transfer>> = c["rounds[src,dst,lo,hi,mode]"]
            .as_array()
            .unwrap()
            .iter()
            .map(|round| {
                round
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| {
                        let x = x.as_array().unwrap();
                        let u = |i: usize| x[i].as_u64().unwrap() as usize;
                        tr(u(0), u(1), u(2), u(3), x[4].as_str().unwrap())
                    })
                    .collect()
            })
            .collect();
        assert_eq!(Layout::new(p).reduction_rounds(), red, "p={p}");
        let got = global(p, |r| bw_allreduce(p, m, r));
        assert_same_rounds(&got, &want, &format!("json p={p} m={m}"));
    }
}

/// Per-rank lists agree (a transfer is listed by both endpoints, in the same round), every
/// listed transfer involves the rank, and one-port full duplex holds.
fn check_consistent(p: usize, what: &str, per_rank: impl Fn(usize) -> Vec<Vec<Transfer>>) {
    let lists: Vec<Vec<Vec<Transfer>>> = (0..p).map(&per_rank).collect();
    let nr = lists.iter().map(|l| l.len()).max().unwrap_or(0);
    for (r, l) in lists.iter().enumerate() {
        assert_eq!(l.len(), nr, "{what}: rank {r} has {} rounds", l.len());
    }
    for i in 0..nr {
        let mut by_src: Vec<Transfer> = vec![];
        let mut by_dst: Vec<Transfer> = vec![];
        for (r, l) in lists.iter().enumerate() {
            let mut sends = 0;
            let mut recvs = 0;
            for x in &l[i] {
                assert!(x.src == r || x.dst == r, "{what}: {x:?} listed at {r}");
                assert!(x.src != x.dst && x.src < p && x.dst < p, "{what}: {x:?}");
                if x.src == r {
                    by_src.push(*x);
                    sends += 1;
                }
                if x.dst == r {
                    by_dst.push(*x);
                    recvs += 1;
                }
            }
            assert!(
                sends <= 1 && recvs <= 1,
                "{what}: round {i} rank {r} not one-port"
            );
        }
        assert_eq!(sorted(by_src), sorted(by_dst), "{what}: round {i}");
    }
}

fn ms(p: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        2,
        3,
        5,
        16,
        p.saturating_sub(1),
        p + 1,
        2 * p + 3,
        4 * p,
    ];
    v.sort();
    v.dedup();
    v
}

fn roots(p: usize) -> Vec<usize> {
    if p <= 24 {
        (0..p).collect()
    } else {
        let mut v = vec![0, 1, 2, 3, 4, 5, p / 2, p / 2 + 1, p - 2, p - 1];
        v.retain(|&r| r < p);
        v.sort();
        v.dedup();
        v
    }
}

#[test]
fn per_rank_lists_are_consistent_and_one_port() {
    for p in 1..=64 {
        for m in ms(p) {
            check_consistent(p, &format!("bw allreduce p={p} m={m}"), |r| {
                bw_allreduce(p, m, r)
            });
            check_consistent(p, &format!("lat allreduce p={p} m={m}"), |r| {
                latency_allreduce(p, m, r)
            });
            for root in roots(p) {
                check_consistent(p, &format!("reduce p={p} m={m} root={root}"), |r| {
                    bw_reduce(p, m, root, r)
                });
            }
        }
    }
}

/// Symbolic values: leaves are ranks; inner nodes are interned (left, right) pairs of
/// adjacent rank intervals, so equal ids mean equal interval AND equal bracketing.
struct Sym {
    iv: Vec<(usize, usize)>,
    intern: HashMap<(u32, u32), u32>,
}

impl Sym {
    fn new(p: usize) -> Sym {
        Sym {
            iv: (0..p).map(|r| (r, r)).collect(),
            intern: HashMap::new(),
        }
    }
    /// a ⊕ b where a covers the lower ranks; panics unless adjacent.
    fn combine(&mut self, a: u32, b: u32, ctx: &str) -> u32 {
        let (al, ah) = self.iv[a as usize];
        let (bl, bh) = self.iv[b as usize];
        assert_eq!(
            ah + 1,
            bl,
            "{ctx}: combining [{al},{ah}] with [{bl},{bh}] breaks canonical order"
        );
        if let Some(&id) = self.intern.get(&(a, b)) {
            return id;
        }
        let id = self.iv.len() as u32;
        self.iv.push((al, bh));
        self.intern.insert((a, b), id);
        id
    }
}

/// Execute a global schedule symbolically; returns each rank's final element values.
fn execute(
    p: usize,
    m: usize,
    rounds: &[Vec<Transfer>],
    sym: &mut Sym,
    ctx: &str,
) -> Vec<Vec<u32>> {
    let mut state: Vec<Vec<u32>> = (0..p).map(|r| vec![r as u32; m]).collect();
    for (i, round) in rounds.iter().enumerate() {
        let start = state.clone(); // all transfers read round-start data
        for x in round {
            for e in x.lo..x.hi {
                let rv = start[x.src][e];
                let own = state[x.dst][e];
                let c = format!("{ctx} round {i} {x:?} elem {e}");
                state[x.dst][e] = match x.mode {
                    Mode::L => sym.combine(rv, own, &c),
                    Mode::R => sym.combine(own, rv, &c),
                    Mode::C => rv,
                };
            }
        }
    }
    state
}

fn check_total(sym: &Sym, p: usize, vals: &[u32], ctx: &str) -> Option<u32> {
    let mut id = None;
    for (e, &x) in vals.iter().enumerate() {
        assert_eq!(
            sym.iv[x as usize],
            (0, p - 1),
            "{ctx}: element {e} incomplete"
        );
        if let Some(i) = id {
            assert_eq!(i, x, "{ctx}: element {e} bracketed differently");
        }
        id = Some(x);
    }
    id
}

#[test]
fn symbolic_allreduce_canonical_one_bracketing() {
    for p in 1..=64 {
        for m in ms(p) {
            for (name, rounds) in [
                ("bw", global(p, |r| bw_allreduce(p, m, r))),
                ("lat", global(p, |r| latency_allreduce(p, m, r))),
            ] {
                let ctx = format!("{name} allreduce p={p} m={m}");
                let mut sym = Sym::new(p);
                let st = execute(p, m, &rounds, &mut sym, &ctx);
                let mut id = None;
                for (r, vals) in st.iter().enumerate() {
                    let x = check_total(&sym, p, vals, &format!("{ctx} rank {r}"));
                    if id.is_some() && x.is_some() {
                        assert_eq!(id, x, "{ctx}: rank {r} bracketed differently");
                    }
                    id = id.or(x);
                }
                let q = ceil_log2(p);
                let want = match name {
                    "bw" => 2 * q,
                    _ if p.is_power_of_two() => q,
                    _ => q + 1,
                };
                assert_eq!(rounds.len(), want, "{ctx}: rounds");
            }
        }
    }
}

#[test]
fn symbolic_reduce_every_root() {
    for p in 1..=64 {
        for m in ms(p) {
            for root in roots(p) {
                let ctx = format!("reduce p={p} m={m} root={root}");
                let rounds = global(p, |r| bw_reduce(p, m, root, r));
                let mut sym = Sym::new(p);
                let st = execute(p, m, &rounds, &mut sym, &ctx);
                check_total(&sym, p, &st[root], &ctx);
                let l = Layout::new(p);
                assert_eq!(
                    rounds.len(),
                    l.reduction_rounds() + reduce_routing_rounds(p, root),
                    "{ctx}"
                );
            }
        }
    }
}

/// After the reduction phase alone, survivors' final blocks partition [0, m) and hold the
/// complete canonical result (what reduce_scatter relies on).
#[test]
fn reduction_phase_blocks_partition_and_are_complete() {
    use pcoll::sched::butterfly::reduction_phase;
    for p in 1..=64 {
        for m in ms(p) {
            let ctx = format!("reduction p={p} m={m}");
            let blocks = final_blocks(p, m);
            let mut at = 0;
            for &(_, lo, hi) in &blocks {
                assert_eq!(lo, at, "{ctx}: blocks {blocks:?}");
                at = hi;
            }
            assert_eq!(at, m, "{ctx}");
            let rounds = global(p, |r| reduction_phase(p, m, r));
            let mut sym = Sym::new(p);
            let st = execute(p, m, &rounds, &mut sym, &ctx);
            let mut id = None;
            for &(r, lo, hi) in &blocks {
                if let Some(x) = check_total(&sym, p, &st[r][lo..hi], &ctx) {
                    assert!(id.is_none() || id == Some(x), "{ctx}: bracketing");
                    id = Some(x);
                }
            }
        }
    }
}
