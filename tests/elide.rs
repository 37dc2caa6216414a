//! The copy-eliding pass ([`pcoll::elide`]) on the real builders: what it removes, and that it
//! never changes a rank's messages (so ranks with and without it still match). Its results
//! are checked end to end by `sim_oracle.rs` (in place and not, same calls).

use pcoll::algo::{build, build_plain, Algorithm, CallSpec, Collective, CostParams};
use pcoll::plan::{Buf, Op, Program};

fn spec(coll: Collective, p: usize, rank: usize, m: usize, commutative: bool) -> CallSpec {
    let (counts, displs) = match coll {
        Collective::Reduce | Collective::Allreduce | Collective::Bcast => (vec![m], vec![]),
        Collective::ReduceScatter => ((0..p).map(|j| m / p + j % 2).collect(), vec![]),
        Collective::ReduceScatterBlock => (vec![m / p; p], vec![]),
        Collective::Allgatherv | Collective::Allgather => (
            vec![m / p + 1; p],
            (0..p).map(|j| j * (m / p + 1)).collect(),
        ),
    };
    CallSpec {
        coll,
        p,
        rank,
        root: 0,
        counts,
        displs,
        commutative,
        elem_bytes: 8,
        seg_elems: 0,
        params: CostParams::default(),
        in_place: false,
    }
}

/// Elements copied by `Copy` ops and scratch elements allocated.
fn copied(prog: &Program) -> (usize, usize) {
    let c = prog
        .ops
        .iter()
        .map(|o| match o {
            Op::Copy { src, .. } => src.len,
            _ => 0,
        })
        .sum();
    (c, prog.tmp.iter().sum())
}

/// What the world sees of a program: message posts (peer, length), waits, in order.
fn messages(prog: &Program) -> Vec<(char, u32, usize, usize)> {
    prog.ops
        .iter()
        .filter_map(|o| match o {
            Op::Irecv { req, peer, pieces } => {
                Some(('r', *req, *peer, pieces.iter().map(|p| p.len).sum()))
            }
            Op::Isend { req, peer, pieces } => {
                Some(('s', *req, *peer, pieces.iter().map(|p| p.len).sum()))
            }
            Op::Wait { req } => Some(('w', *req, 0, 0)),
            _ => None,
        })
        .collect()
}

#[test]
fn binomial_reduce_root_p2_copies_nothing() {
    for commutative in [true, false] {
        let s = spec(Collective::Reduce, 2, 0, 1000, commutative);
        let prog = build(Algorithm::Binomial, &s).unwrap();
        assert_eq!(
            prog.ops
                .iter()
                .filter(|o| matches!(o, Op::Copy { .. }))
                .count(),
            0,
            "{:?}",
            prog.ops
        );
        assert_eq!(copied(&prog), (0, 0));
        assert!(prog
            .ops
            .iter()
            .any(|o| matches!(o, Op::Irecv { pieces, .. } if pieces[0].buf == Buf::Out)));
        // In place: In is Out, nothing to elide (the copy onto itself is free).
        let inplace = CallSpec {
            in_place: true,
            ..s.clone()
        };
        assert_eq!(
            build(Algorithm::Binomial, &inplace).unwrap(),
            build_plain(Algorithm::Binomial, &inplace).unwrap()
        );
    }
}

/// Every reduce algorithm's root at p = 2 copies nothing (the case measured slower than
/// native before the pass), and at larger p copies less than before.
#[test]
fn reduce_roots_copy_less() {
    for alg in Algorithm::available(Collective::Reduce) {
        if matches!(alg, Algorithm::Native | Algorithm::Shm) {
            continue;
        }
        for p in [2, 3, 4, 5, 8] {
            for commutative in [true, false] {
                let s = spec(Collective::Reduce, p, 0, 1000, commutative);
                let Ok(prog) = build(*alg, &s) else { continue };
                let plain = build_plain(*alg, &s).unwrap();
                let (c, t) = copied(&prog);
                let (c0, t0) = copied(&plain);
                eprintln!("{alg} p={p} comm={commutative}: copied {c0} -> {c}, tmp {t0} -> {t}");
                assert!(c < c0, "{alg} p={p}: root still copies {c} of {c0}");
                if p == 2 {
                    assert_eq!(c, 0, "{alg} p=2: root copies {c}");
                }
            }
        }
    }
}

/// The pass never changes what a rank sends or receives, from whom, or in which order.
#[test]
fn messages_unchanged_everywhere() {
    let mut total = [0usize; 2];
    for coll in Collective::ALL {
        for alg in Algorithm::available(coll) {
            for p in 1..=9 {
                for m in [0, 1, 7, 100, 1000] {
                    for commutative in [true, false] {
                        for rank in 0..p {
                            let s = spec(coll, p, rank, m, commutative);
                            let (Ok(prog), Ok(plain)) = (build(*alg, &s), build_plain(*alg, &s))
                            else {
                                continue;
                            };
                            prog.validate(Some(s.in_len()), s.out_len()).unwrap();
                            assert_eq!(messages(&prog), messages(&plain), "{coll} {alg} p={p}");
                            assert_eq!(prog.rounds, plain.rounds);
                            total[0] += copied(&plain).0;
                            total[1] += copied(&prog).0;
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "copied elements over all programs: {} -> {}",
        total[0], total[1]
    );
    assert!(total[1] < total[0]);
}
