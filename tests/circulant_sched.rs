//! Träff's circulant schedules (ALGORITHMS.md §5.1–5.6, §9): the four correctness conditions
//! of §5.5, each on its own, exhaustively for every p in 2..=4096 and every relative rank
//! (release mode; a debug build checks p ≤ 600 to stay quick) and on sampled ranks of sampled
//! p up to 2^30; the vectors of `vectors.json`; Observation 2; and an n-block broadcast
//! simulated block by block.
//!
//! References written here, independently of `src/sched/circulant.rs`: skips from the closed
//! form `ceil(p / 2^(q−k))`, baseblocks from a brute-force canonical decomposition, the naive
//! O(q²) send schedule `S_r[k] = R_{r+s[k]}[k]` (root: `k`), and a per-block broadcast
//! simulation over whole tables (O(p·q) per p).

#![allow(clippy::needless_range_loop, clippy::type_complexity)]

use pcoll::sched::circulant::{
    baseblock, bcast_round_count, bcast_rounds, block_at, recv_schedule, schedule_json,
    schedule_table, send_schedule, send_schedule_traced, skips, Schedule,
};
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeSet;

const PMAX: usize = if cfg!(debug_assertions) { 600 } else { 4096 };

fn ceil_log2(p: usize) -> usize {
    let mut q = 0;
    while (1usize << q) < p {
        q += 1;
    }
    q
}

/// Closed form: s[k] = ceil(p / 2^(q−k)).
fn skips_ref(p: usize) -> Vec<usize> {
    let q = ceil_log2(p);
    (0..=q).map(|k| p.div_ceil(1 << (q - k))).collect()
}

/// Smallest index of the canonical skip sequence of r (largest skip first, taken whenever it
/// fits); panics unless the sequence ends exactly at r. `q` for r = 0.
fn baseblock_ref(s: &[usize], r: usize) -> usize {
    let q = s.len() - 1;
    let (mut rest, mut k, mut last) = (r, q, q);
    while rest > 0 {
        k = (0..k).rev().find(|&j| s[j] <= rest).expect("no skip fits");
        rest -= s[k];
        last = k;
    }
    last
}

/// Tables R[r][k], S[r][k] for all relative ranks of p.
fn tables(p: usize) -> (Vec<Vec<i64>>, Vec<Vec<i64>>) {
    (0..p)
        .map(|r| {
            let s = Schedule::new(p, r);
            (s.recv, s.send)
        })
        .unzip()
}

fn cond1(p: usize, s: &[usize], rt: &[Vec<i64>], st: &[Vec<i64>]) {
    let q = s.len() - 1;
    for r in 1..p {
        for k in 0..q {
            let f = (r + p - s[k] % p) % p;
            assert_eq!(rt[r][k], st[f][k], "condition 1: p={p} r={r} k={k}");
        }
    }
}

fn cond2(p: usize, s: &[usize], rt: &[Vec<i64>], st: &[Vec<i64>]) {
    let q = s.len() - 1;
    for r in 0..p {
        for k in 0..q {
            let t = (r + s[k]) % p;
            // naive O(q²) send schedule
            let naive = if r == 0 { k as i64 } else { rt[t][k] };
            assert_eq!(st[r][k], naive, "condition 2 / naive S: p={p} r={r} k={k}");
        }
    }
}

fn cond3(p: usize, s: &[usize], r: usize, rs: &[i64]) {
    let q = s.len() - 1;
    assert_eq!(rs.len(), q);
    // Residue bitmask: all of −q..−1 (root), or b and {j − q : j ≠ b}.
    let b = if r == 0 {
        None
    } else {
        Some(baseblock_ref(s, r))
    };
    let mut seen = 0u128;
    for &x in rs {
        let j = if x >= 0 { x } else { x + q as i64 };
        assert!(
            (0..q as i64).contains(&j) && (x >= 0) == (b == Some(j as usize)),
            "condition 3: p={p} r={r} R={rs:?}"
        );
        assert!(
            seen & (1 << j) == 0,
            "condition 3 (distinct): p={p} r={r} R={rs:?}"
        );
        seen |= 1 << j;
    }
    assert_eq!(
        seen.count_ones() as usize,
        q,
        "condition 3: p={p} r={r} R={rs:?}"
    );
}

fn cond4(p: usize, s: &[usize], r: usize, rs: &[i64], ss: &[i64]) {
    let q = s.len() - 1;
    if r == 0 {
        assert_eq!(
            ss,
            (0..q as i64).collect::<Vec<_>>(),
            "condition 4: root p={p}"
        );
        return;
    }
    let b = baseblock_ref(s, r) as i64;
    assert_eq!(ss[0], b - q as i64, "condition 4: S[0] p={p} r={r}");
    for k in 0..q {
        assert!(
            ss[k] == b - q as i64 || rs[..k].contains(&ss[k]),
            "condition 4: p={p} r={r} k={k} S={ss:?} R={rs:?}"
        );
    }
}

#[test]
fn skips_and_baseblocks_exhaustive() {
    for p in 1..=PMAX {
        let s = skips(p);
        assert_eq!(s, skips_ref(p), "skips p={p}");
        for r in 0..p {
            assert_eq!(
                baseblock(p, r),
                baseblock_ref(&s, r),
                "baseblock p={p} r={r}"
            );
        }
    }
}

#[test]
fn condition1_receiver_and_sender_agree_exhaustive() {
    for p in 2..=PMAX {
        let (rt, st) = tables(p);
        cond1(p, &skips_ref(p), &rt, &st);
    }
}

#[test]
fn condition2_sender_knows_receiver_exhaustive() {
    for p in 2..=PMAX {
        let (rt, st) = tables(p);
        cond2(p, &skips_ref(p), &rt, &st);
    }
}

#[test]
fn condition3_all_blocks_arrive_exhaustive() {
    for p in 2..=PMAX {
        let s = skips_ref(p);
        for r in 0..p {
            cond3(p, &s, r, &recv_schedule(p, r));
        }
    }
}

#[test]
fn condition4_only_owned_blocks_sent_exhaustive() {
    for p in 2..=PMAX {
        let s = skips_ref(p);
        for r in 0..p {
            cond4(p, &s, r, &recv_schedule(p, r), &send_schedule(p, r));
        }
    }
}

#[test]
fn algorithm6_needs_at_most_four_lookups() {
    for p in 2..=PMAX {
        for r in 0..p {
            let (_, l) = send_schedule_traced(p, r);
            assert!(l.len() <= 4, "p={p} r={r}: {} look-ups", l.len());
        }
    }
    // §9: Algorithm 6 look-ups for p = 17.
    let want: [&[usize]; 16] = [
        &[1],
        &[2],
        &[2],
        &[3, 1],
        &[3],
        &[2, 1],
        &[2],
        &[4],
        &[4],
        &[1],
        &[2],
        &[3, 2],
        &[3, 1],
        &[3, 2],
        &[2, 1],
        &[2],
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(send_schedule_traced(17, i + 1).1, w.to_vec(), "r={}", i + 1);
    }
}

/// Ranks worth sampling for a large p: the ends, around every skip, plus random ones.
fn sample_ranks(p: usize, seeds: &[usize]) -> Vec<usize> {
    let s = skips_ref(p);
    let mut v: BTreeSet<usize> = [0, 1, p - 1, p / 2].into_iter().collect();
    for &x in &s {
        for d in [x.wrapping_sub(1), x, x + 1, p - x.min(p)] {
            if d < p {
                v.insert(d);
            }
        }
    }
    for &x in seeds {
        v.insert(x % p);
    }
    v.into_iter().collect()
}

/// All four conditions on one sampled rank r of a large p, looking neighbours up directly.
fn conditions_at(p: usize, r: usize) {
    let s = skips_ref(p);
    let q = s.len() - 1;
    let rs = recv_schedule(p, r);
    let ss = send_schedule(p, r);
    cond3(p, &s, r, &rs);
    cond4(p, &s, r, &rs, &ss);
    for k in 0..q {
        let f = (r + p - s[k] % p) % p;
        let t = (r + s[k]) % p;
        if r != 0 {
            assert_eq!(
                rs[k],
                send_schedule(p, f)[k],
                "condition 1: p={p} r={r} k={k}"
            );
            assert_eq!(
                ss[k],
                recv_schedule(p, t)[k],
                "condition 2: p={p} r={r} k={k}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn conditions_sampled_large_p(p in 4097usize..=(1 << 30), seeds in prop::collection::vec(any::<usize>(), 8)) {
        for r in sample_ranks(p, &seeds) {
            conditions_at(p, r);
        }
    }
}

#[test]
fn conditions_at_powers_of_two_and_neighbours() {
    for e in [12, 16, 20, 24, 29, 30] {
        for p in [(1usize << e) - 1, 1 << e, (1 << e) + 1] {
            for r in sample_ranks(p, &[12345, 987654321]) {
                conditions_at(p, r);
            }
        }
    }
}

/// Observation 2 (§5.5): R for 2p from R for p.
#[test]
fn observation2_doubling() {
    let pmax = if cfg!(debug_assertions) { 100 } else { 700 };
    for p in 2..=pmax {
        let q = ceil_log2(p);
        for r in 0..2 * p {
            let old = recv_schedule(p, r % p);
            let mut want: Vec<i64> = old.iter().map(|&x| if x < 0 { x - 1 } else { x }).collect();
            if r < p {
                want.push(-1);
            } else if r == p {
                want.push(q as i64);
            } else {
                let j = old.iter().position(|&x| x >= 0).unwrap();
                want.push(old[j]);
                want[j] = -1;
            }
            assert_eq!(recv_schedule(2 * p, r), want, "p={p} -> {} r={r}", 2 * p);
        }
    }
}

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/vectors.json");
    let text = std::fs::read_to_string(path).expect("vectors.json");
    serde_json::from_str(&text).unwrap()
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

#[test]
fn vectors_schedules() {
    let v = vectors();
    let sch = v["schedules"].as_object().unwrap();
    assert!(sch.len() >= 31);
    for (ps, e) in sch {
        let p: usize = ps.parse().unwrap();
        let q = e["q"].as_u64().unwrap() as usize;
        let s = skips(p);
        assert_eq!(s.len() - 1, q, "q p={p}");
        assert_eq!(
            s.iter().map(|&x| x as i64).collect::<Vec<_>>(),
            ints(&e["skips"]),
            "skips p={p}"
        );
        let ranks: Vec<usize> = match e.get("sampled_ranks") {
            Some(r) => ints(r).into_iter().map(|x| x as usize).collect(),
            None => (0..p).collect(),
        };
        let bb = ints(&e["baseblock"]);
        let rv = e["recv"].as_array().unwrap();
        let sv = e["send"].as_array().unwrap();
        assert_eq!(ranks.len(), rv.len());
        for (i, &r) in ranks.iter().enumerate() {
            assert_eq!(baseblock(p, r) as i64, bb[i], "baseblock p={p} r={r}");
            assert_eq!(recv_schedule(p, r), ints(&rv[i]), "recv p={p} r={r}");
            assert_eq!(send_schedule(p, r), ints(&sv[i]), "send p={p} r={r}");
            let sc = Schedule::new(p, r);
            assert_eq!((sc.recv, sc.send), (ints(&rv[i]), ints(&sv[i])));
        }
    }
}

/// Messages (from, to, block) of each real round of an n-block broadcast from `root`,
/// built from the library's round list and per-rank schedules with root renumbering.
fn bcast_messages(p: usize, n: usize, root: usize) -> Vec<(usize, Vec<(usize, usize, usize)>)> {
    let sch: Vec<Schedule> = (0..p)
        .map(|rank| Schedule::new(p, (rank + p - root) % p))
        .collect();
    let s = skips(p);
    bcast_rounds(p, n)
        .into_iter()
        .map(|(k, off)| {
            let mut msgs = Vec::new();
            for rank in 0..p {
                let t = (rank + s[k]) % p;
                if t == root {
                    continue;
                }
                if let Some(b) = block_at(sch[rank].send[k], off, n) {
                    msgs.push((rank, t, b));
                }
            }
            (k, msgs)
        })
        .collect()
}

#[test]
fn vectors_bcast_traces() {
    let v = vectors();
    let traces = v["bcast_traces"].as_array().unwrap();
    assert!(traces.len() >= 5);
    for t in traces {
        let (p, n, root) = (
            t["p"].as_u64().unwrap() as usize,
            t["n"].as_u64().unwrap() as usize,
            t["root"].as_u64().unwrap() as usize,
        );
        let x = t["x_virtual_rounds"].as_u64().unwrap() as usize;
        let ours = bcast_messages(p, n, root);
        let rounds = t["rounds"].as_array().unwrap();
        assert_eq!(ours.len(), rounds.len(), "rounds p={p} n={n} root={root}");
        for (j, (rd, (k, msgs))) in rounds.iter().zip(&ours).enumerate() {
            assert_eq!(rd["global_round"].as_u64().unwrap() as usize, x + j);
            assert_eq!(rd["k"].as_u64().unwrap() as usize, *k);
            let mut want: Vec<(usize, usize, usize)> = rd["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let m = ints(m);
                    (m[0] as usize, m[1] as usize, m[2] as usize)
                })
                .collect();
            want.sort();
            let mut got = msgs.clone();
            got.sort();
            assert_eq!(got, want, "p={p} n={n} root={root} round {j}");
        }
    }
}

/// Simulate an n-block broadcast from `root`: every message's block must be owned by the
/// sender before the round and be exactly what the receiver's schedule expects; every
/// non-root gets every block exactly once, all within n−1+q rounds.
fn simulate_bcast(p: usize, n: usize, root: usize, rt: &[Vec<i64>], st: &[Vec<i64>]) {
    let s = skips_ref(p);
    let q = s.len() - 1;
    let mut have = vec![vec![0u32; n]; p];
    have[root].iter_mut().for_each(|h| *h = 1);
    let rounds = bcast_rounds(p, n);
    assert_eq!(rounds.len(), n - 1 + q);
    assert_eq!(bcast_round_count(p, n), n - 1 + q);
    for &(k, off) in &rounds {
        let mut arrivals = Vec::new();
        for rank in 0..p {
            let rel = (rank + p - root) % p;
            let t = (rank + s[k]) % p;
            let f = (rank + p - s[k] % p) % p;
            let sent = if t == root {
                None
            } else {
                block_at(st[rel][k], off, n)
            };
            let expect = if rank == root {
                None
            } else {
                block_at(rt[rel][k], off, n)
            };
            // what f sends to rank this round
            let rel_f = (f + p - root) % p;
            let from_f = if rank == root {
                None
            } else {
                block_at(st[rel_f][k], off, n)
            };
            assert_eq!(expect, from_f, "p={p} n={n} root={root} rank={rank} k={k}");
            if let Some(b) = sent {
                assert!(
                    have[rank][b] > 0,
                    "p={p} n={n} root={root}: rank {rank} sends block {b} it lacks"
                );
            }
            if let Some(b) = expect {
                arrivals.push((rank, b));
            }
        }
        for (rank, b) in arrivals {
            have[rank][b] += 1;
        }
    }
    for (rank, h) in have.iter().enumerate() {
        assert!(
            h.iter().all(|&c| c == 1),
            "p={p} n={n} root={root}: rank {rank} block counts {h:?}"
        );
    }
}

#[test]
fn nblock_broadcast_simulation() {
    let big = if cfg!(debug_assertions) { 40 } else { 130 };
    for p in (2..=big).chain([255, 256, 257, 511, 513, 1000]) {
        let (rt, st) = tables(p);
        let ns: Vec<usize> = if p <= big {
            (1..=12).chain([17, 31, 50]).collect()
        } else {
            vec![1, 2, 7, 20]
        };
        for n in ns {
            let mut roots = vec![0, 1 % p, p / 2, p - 1];
            roots.dedup();
            for root in roots {
                simulate_bcast(p, n, root, &rt, &st);
            }
        }
    }
}

#[test]
fn json_and_table_output() {
    let j: Value = serde_json::from_str(&schedule_json(17, 5)).unwrap();
    assert_eq!(j["p"], 17);
    assert_eq!(j["blocks"], 5);
    assert_eq!(ints(&j["skips"]), vec![1, 2, 3, 5, 9, 17]);
    let v = vectors();
    let e = &v["schedules"]["17"];
    assert_eq!(ints(&j["baseblock"]), ints(&e["baseblock"]));
    assert_eq!(j["recv"], e["recv"]);
    assert_eq!(j["send"], e["send"]);
    let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 6);
    let t = schedule_table(17);
    // §9 rows, spacing as printed there
    assert!(
        t.contains("R0: -4  0 -5 -4 -3 -5 -2 -5 -4 -3 -1 -5 -4 -3 -5 -2 -5\n"),
        "{t}"
    );
    assert!(
        t.contains("S4:  4  0  1  2  0  3  0  1 -3 -1 -1 -1 -1 -1 -1 -1 -1\n"),
        "{t}"
    );
    let j1: Value = serde_json::from_str(&schedule_json(1, 1)).unwrap();
    assert_eq!(ints(&j1["skips"]), vec![1]);
}
