//! Träff's circulant n-block broadcast (ALGORITHMS.md §5.6; arXiv 2407.18004, Algorithm 1):
//! for every p = 1 … 64 and sampled p up to 4096, any root, and several n, the broadcast
//! program delivers the root's data to every rank, every non-root receives each element
//! exactly once, and the simulator's Lamport clock measures exactly ⌈log2 p⌉ + n − 1 rounds
//! (the rounds the programs declare too).

use pcoll::algo::{build, Algorithm, CallSpec, Collective, CostParams};
use pcoll::plan::Op;
use pcoll::transport::sim::{run, RankIo, SumU64};
use std::sync::Arc;

fn q_of(p: usize) -> usize {
    (0..).find(|&q| (1usize << q) >= p).unwrap()
}

fn spec(p: usize, root: usize, count: usize, seg: usize) -> CallSpec {
    CallSpec {
        coll: Collective::Bcast,
        p,
        rank: 0,
        root,
        counts: vec![count],
        displs: vec![],
        commutative: true,
        elem_bytes: 8,
        seg_elems: seg,
        params: CostParams::default(),
        in_place: false,
    }
}

/// Elements a program receives.
fn received(s: &CallSpec) -> usize {
    build(Algorithm::Circulant, s)
        .unwrap()
        .ops
        .iter()
        .map(|o| match o {
            Op::Irecv { pieces, .. } => pieces.iter().map(|pc| pc.len).sum(),
            _ => 0,
        })
        .sum()
}

/// Runs the n-block broadcast (n = count / 2 blocks of 2 elements) and checks data and rounds.
fn check(p: usize, root: usize, n: usize) {
    let count = 2 * n;
    let s = spec(p, root, count, 2);
    assert_eq!(pcoll::algo::bcast::circulant_blocks(&s), n);
    let data: Vec<u8> = (0..count * 8).map(|i| (i * 7 + root) as u8).collect();
    let io: Vec<RankIo> = (0..p)
        .map(|r| RankIo {
            input: vec![],
            out: Some(if r == root {
                data.clone()
            } else {
                vec![0xEE; count * 8]
            }),
            in_alias: None,
        })
        .collect();
    let res = run(Algorithm::Circulant, &s, Arc::new(SumU64), io)
        .unwrap_or_else(|e| panic!("p={p} root={root} n={n}: {e}"));
    let want = if p == 1 { 0 } else { q_of(p) + n - 1 };
    for (r, rr) in res.iter().enumerate() {
        assert_eq!(
            rr.out.as_ref().unwrap(),
            &data,
            "p={p} root={root} n={n} rank {r}"
        );
        assert_eq!(rr.declared_rounds, want, "p={p} n={n}");
    }
    let measured = res.iter().map(|r| r.rounds).max().unwrap() as usize;
    assert_eq!(measured, want, "p={p} root={root} n={n}: measured rounds");
}

#[test]
fn every_p_up_to_64() {
    for p in 1..=64 {
        for n in [1, 2, 3, 7] {
            for root in [0, p / 2, p - 1] {
                check(p, root, n);
            }
        }
    }
}

/// Sampled p above 64 on the threaded simulator (a thread per rank: 1025 ranks take seconds).
#[test]
fn sampled_p_up_to_1025() {
    for p in [65, 100, 127, 128, 129, 257, 513, 1000, 1025] {
        for n in [1, 5] {
            check(p, p / 3, n);
        }
    }
}

/// One full-duplex step of a program: what it receives (from, elements) and sends (to,
/// elements), posted together and completed together.
type Step = (Option<(usize, Vec<usize>)>, Option<(usize, Vec<usize>)>);

fn steps(s: &CallSpec) -> Vec<Step> {
    let elems = |pieces: &[pcoll::Piece]| -> Vec<usize> {
        pieces.iter().flat_map(|pc| pc.off..pc.end()).collect()
    };
    let mut out: Vec<Step> = Vec::new();
    let mut cur: Step = (None, None);
    for op in build(Algorithm::Circulant, s).unwrap().ops {
        match op {
            Op::Irecv { peer, pieces, .. } => cur.0 = Some((peer, elems(&pieces))),
            Op::Isend { peer, pieces, .. } => cur.1 = Some((peer, elems(&pieces))),
            _ if cur.0.is_some() || cur.1.is_some() => out.push(std::mem::take(&mut cur)),
            _ => {}
        }
    }
    out
}

/// Lockstep executor of the built programs of all ranks (no threads, for p in the
/// thousands): a step completes when its receive and its send are both matched with the
/// peers' current steps; its Lamport round is one after the rank's previous step and no
/// earlier than the sender's. Checks that a sender holds what it sends, and returns the
/// rounds and every rank's final holdings.
fn lockstep(p: usize, root: usize, count: usize, seg: usize) -> (usize, Vec<Vec<bool>>) {
    let prog: Vec<Vec<Step>> = (0..p)
        .map(|r| {
            steps(&CallSpec {
                rank: r,
                ..spec(p, root, count, seg)
            })
        })
        .collect();
    let mut have: Vec<Vec<bool>> = (0..p).map(|r| vec![r == root; count]).collect();
    // Current step, rounds completed, and the matched halves of the current step.
    let (mut at, mut time) = (vec![0usize; p], vec![0usize; p]);
    let (mut sent, mut got) = (vec![false; p], vec![None::<usize>; p]);
    let mut progress = true;
    while progress {
        progress = false;
        for r in 0..p {
            let Some((recv, send)) = prog[r].get(at[r]) else {
                continue;
            };
            if let (Some((t, el)), false) = (send, sent[r]) {
                let (t, el) = (*t, el);
                if let Some((Some((f, want)), _)) = prog[t].get(at[t]) {
                    if *f == r && got[t].is_none() {
                        assert_eq!(want, el, "p={p}: message {r} -> {t} differs on both sides");
                        for &e in el {
                            assert!(have[r][e], "p={p}: rank {r} sends element {e} it lacks");
                            have[t][e] = true;
                        }
                        // Sent in the round after the sender's previous step.
                        got[t] = Some(time[r] + 1);
                        sent[r] = true;
                        progress = true;
                    }
                }
            }
            let done = (send.is_none() || sent[r]) && (recv.is_none() || got[r].is_some());
            if done {
                time[r] = (time[r] + 1).max(got[r].unwrap_or(0));
                at[r] += 1;
                (sent[r], got[r]) = (false, None);
                progress = true;
            }
        }
    }
    for r in 0..p {
        assert_eq!(at[r], prog[r].len(), "p={p}: rank {r} stuck (deadlock)");
    }
    (time.into_iter().max().unwrap_or(0), have)
}

/// Every non-root receives each element exactly once; the root receives nothing.
#[test]
fn each_block_received_once() {
    for p in (2..=40).chain([100, 257, 1024]) {
        for n in [1, 5, 16] {
            let root = p / 2;
            for rank in 0..p {
                let s = CallSpec {
                    rank,
                    ..spec(p, root, 2 * n, 2)
                };
                let want = if rank == root { 0 } else { 2 * n };
                assert_eq!(received(&s), want, "p={p} n={n} rank={rank}");
            }
        }
    }
}

/// p up to 4096 (sampled above 64) on the lockstep executor: every rank ends with every
/// element, and the broadcast takes exactly ⌈log2 p⌉ + n − 1 rounds (Lamport rounds of the
/// built programs).
#[test]
fn lockstep_rounds_up_to_4096() {
    let ps = (1..=64).chain([
        65, 100, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 1500, 2047,
        2048, 2049, 3000, 4095, 4096,
    ]);
    for p in ps {
        for n in [1, 2, 5, 13] {
            for root in [0, p / 3, p - 1] {
                let (rounds, have) = lockstep(p, root, 2 * n, 2);
                let want = if p == 1 { 0 } else { q_of(p) + n - 1 };
                assert_eq!(rounds, want, "p={p} n={n} root={root}: rounds");
                assert!(
                    have.iter().all(|h| h.iter().all(|&x| x)),
                    "p={p} n={n}: data missing"
                );
            }
        }
    }
}
