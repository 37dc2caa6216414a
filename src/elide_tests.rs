//! Unit tests of [`super`] (the peephole pass), on hand-written programs.
use super::*;

fn pc(buf: Buf, off: usize, len: usize) -> Piece {
    Piece::new(buf, off, len)
}
fn cp(src: Piece, dst: Piece) -> Op {
    Op::Copy { src, dst }
}
fn red(src: Piece, dst: Piece, src_first: bool) -> Op {
    Op::Reduce {
        src,
        dst,
        src_first,
    }
}
const T0: Buf = Buf::Tmp(0);

/// The pass leaves `p` alone.
fn unchanged(p: &mut Program, commutative: bool, keep_roles: bool) {
    let before = p.clone();
    assert_eq!(elide_in_copies(p, commutative, keep_roles), 0);
    assert_eq!(*p, before);
}

/// Copy In -> Out, receive into Tmp(0), reduce it into Out: the root of a binomial tree.
fn root(src_first: bool) -> Program {
    let mut p = Program::new();
    let t = p.tmp(4);
    p.copy(pc(Buf::In, 0, 4), pc(Buf::Out, 0, 4));
    p.recv(1, vec![pc(t, 0, 4)]);
    p.reduce(pc(t, 0, 4), pc(Buf::Out, 0, 4), src_first);
    p
}

#[test]
fn root_copy_elided() {
    let mut p = root(false);
    assert_eq!(elide_in_copies(&mut p, false, false), 4);
    assert_eq!(
        p.ops,
        vec![
            Op::Irecv {
                req: 0,
                peer: 1,
                pieces: vec![pc(Buf::Out, 0, 4)]
            },
            Op::Wait { req: 0 },
            red(pc(Buf::In, 0, 4), pc(Buf::Out, 0, 4), true),
        ]
    );
    assert_eq!(p.tmp, vec![0]);
    p.validate(Some(4), Some(4)).unwrap();
}

#[test]
fn operand_order_kept_for_noncommutative() {
    // src_first = true would become dst := dst ⊕ In: a copy in the transport; skipped.
    let mut p = root(true);
    unchanged(&mut p, false, false);
    // Commutative: fine either way, unless the operands' roles must be kept.
    unchanged(&mut p, true, true);
    assert_eq!(elide_in_copies(&mut p, true, false), 4);
    assert!(matches!(
        p.ops[2],
        Op::Reduce {
            src_first: false,
            ..
        }
    ));
}

#[test]
fn not_when_out_is_touched_in_between() {
    for between in [
        // A read of Out that is not all copy of In (Out[4] is not copied).
        Op::Isend {
            req: 1,
            peer: 2,
            pieces: vec![pc(Buf::Out, 3, 2)],
        },
        // An overwrite of part of it.
        cp(pc(T0, 0, 1), pc(Buf::Out, 2, 1)),
        // A read-modify-write.
        red(pc(Buf::In, 0, 1), pc(Buf::Out, 0, 1), false),
    ] {
        let mut p = root(false);
        let send = matches!(between, Op::Isend { .. });
        p.ops.insert(2, between); // between the Irecv and its Wait
        if send {
            p.ops.insert(4, Op::Wait { req: 1 });
        }
        let before = p.clone();
        elide_in_copies(&mut p, true, false);
        let recv = |p: &Program| {
            p.ops
                .iter()
                .find(|o| matches!(o, Op::Irecv { .. }))
                .cloned()
        };
        assert_eq!(
            recv(&p),
            recv(&before),
            "{:?}: receive retargeted",
            before.ops[2]
        );
        assert_eq!(p.ops.last(), before.ops.last());
        assert_eq!(p.tmp, vec![4]);
    }
}

#[test]
fn reads_of_the_copy_read_in() {
    // Out is sent (and reduced from) before anything arrives for it: those reads read
    // In, and the receive still lands in Out.
    let mut p = root(false);
    p.ops.insert(
        1,
        Op::Isend {
            req: 1,
            peer: 2,
            pieces: vec![pc(Buf::Out, 0, 4)],
        },
    );
    p.ops.insert(
        2,
        Op::Reduce {
            src: pc(Buf::Out, 1, 2),
            dst: pc(Buf::Tmp(0), 0, 2),
            src_first: true,
        },
    );
    p.ops.insert(3, Op::Wait { req: 1 });
    assert_eq!(elide_in_copies(&mut p, true, false), 4);
    assert_eq!(
        p.ops[0],
        Op::Isend {
            req: 1,
            peer: 2,
            pieces: vec![pc(Buf::In, 0, 4)]
        }
    );
    assert_eq!(
        p.ops[1],
        Op::Reduce {
            src: pc(Buf::In, 1, 2),
            dst: pc(Buf::Tmp(0), 0, 2),
            src_first: true
        }
    );
    assert!(matches!(&p.ops[3], Op::Irecv { pieces, .. } if pieces == &[pc(Buf::Out, 0, 4)]));
    p.validate(Some(4), Some(4)).unwrap();
}

#[test]
fn overwritten_copy_is_dead() {
    // Butterfly root: half of Out is sent, then the finished half arrives into it.
    let mut p = Program::new();
    p.copy(pc(Buf::In, 0, 4), pc(Buf::Out, 0, 4));
    p.send(1, vec![pc(Buf::Out, 2, 2)]);
    p.recv(1, vec![pc(Buf::Out, 2, 2)]);
    assert_eq!(elide_in_copies(&mut p, true, false), 2);
    assert_eq!(p.ops[0], cp(pc(Buf::In, 0, 2), pc(Buf::Out, 0, 2)));
    assert_eq!(
        p.ops[1],
        Op::Isend {
            req: 0,
            peer: 1,
            pieces: vec![pc(Buf::In, 2, 2)]
        }
    );
    // A copy into scratch that is only read through In is not needed at all; one into
    // Out that is never overwritten is the result and stays.
    let mut p = Program::new();
    let a = p.tmp(4);
    p.copy(pc(Buf::In, 0, 4), pc(a, 0, 4));
    p.copy(pc(Buf::In, 0, 4), pc(Buf::Out, 0, 4));
    p.send(1, vec![pc(a, 0, 4)]);
    assert_eq!(elide_in_copies(&mut p, true, false), 4);
    assert_eq!(p.ops[0], cp(pc(Buf::In, 0, 4), pc(Buf::Out, 0, 4)));
    assert_eq!(
        p.ops[1],
        Op::Isend {
            req: 0,
            peer: 1,
            pieces: vec![pc(Buf::In, 0, 4)]
        }
    );
    assert_eq!(p.tmp, vec![0]);
}

#[test]
fn not_when_received_data_is_read_again() {
    let mut p = root(false);
    p.send(2, vec![pc(T0, 1, 1)]);
    unchanged(&mut p, true, false);
    // ... but fine once the scratch was overwritten first.
    let mut p = root(false);
    p.recv(3, vec![pc(T0, 0, 4)]);
    p.send(2, vec![pc(T0, 1, 1)]);
    assert_eq!(elide_in_copies(&mut p, true, false), 4);
    assert_eq!(p.tmp, vec![4]);
}

#[test]
fn not_when_receive_posted_before_the_copy_or_waited_after_the_reduce() {
    // Irecv, Copy, Wait, Reduce (greedy's inner nodes): fine while nothing else uses
    // Out from the post to the copy ...
    let mut p = root(false);
    p.ops.swap(0, 1);
    assert_eq!(elide_in_copies(&mut p, true, false), 4);
    assert!(matches!(&p.ops[0], Op::Irecv { pieces, .. } if pieces == &[pc(Buf::Out, 0, 4)]));
    // ... not when something does (here a send of Out still in flight at the post, or
    // a reduction into Out between the post and the copy).
    let mut p = root(false);
    p.ops.swap(0, 1);
    p.ops.insert(
        0,
        Op::Isend {
            req: 1,
            peer: 2,
            pieces: vec![pc(Buf::Out, 3, 1)],
        },
    );
    p.ops.insert(2, Op::Wait { req: 1 });
    unchanged(&mut p, true, false);
    let mut p = root(false);
    p.ops.swap(0, 1);
    p.ops
        .insert(1, red(pc(Buf::In, 0, 1), pc(Buf::Out, 0, 1), false));
    assert_eq!(elide_in_copies(&mut p, true, false), 0);

    let mut p = root(false);
    p.ops.swap(2, 3); // Copy, Irecv, Reduce, Wait (racy program: left alone)
    unchanged(&mut p, true, false);
}

#[test]
fn not_when_the_scratch_was_written_by_something_else() {
    let mut p = Program::new();
    let t = p.tmp(4);
    p.copy(pc(Buf::In, 0, 4), pc(Buf::Out, 0, 4));
    p.recv(1, vec![pc(t, 0, 4)]);
    p.copy(pc(Buf::In, 0, 2), pc(t, 0, 2));
    p.reduce(pc(t, 0, 4), pc(Buf::Out, 0, 4), false);
    unchanged(&mut p, true, false);
}

#[test]
fn segments_each_elided() {
    // Pipeline root: one copy, then per segment receive + reduce into its part of Out.
    let mut p = Program::new();
    let t = p.tmp(6);
    p.copy(pc(Buf::In, 0, 10), pc(Buf::Out, 0, 10));
    for (j, (off, len)) in [(0, 4), (4, 3), (7, 3)].into_iter().enumerate() {
        let slot = pc(t, (j % 2) * 4, len);
        p.recv(1, vec![slot]);
        p.reduce(slot, pc(Buf::Out, off, len), false);
    }
    assert_eq!(elide_in_copies(&mut p, false, false), 10);
    assert!(!p.ops.iter().any(|o| matches!(o, Op::Copy { .. })));
    assert_eq!(p.tmp, vec![0]);
    assert_eq!(p.ops[8], red(pc(Buf::In, 7, 3), pc(Buf::Out, 7, 3), true));
}

#[test]
fn partial_copy_kept_for_the_rest() {
    // Nothing arrives for Out[0,2) (the send of it reads In): that part of the result is
    // the copy, which stays, split around the elided part.
    let mut p = Program::new();
    let t = p.tmp(2);
    p.copy(pc(Buf::In, 1, 6), pc(Buf::Out, 0, 6));
    p.send(2, vec![pc(Buf::Out, 0, 2)]);
    p.recv(1, vec![pc(t, 0, 2)]);
    p.reduce(pc(t, 0, 2), pc(Buf::Out, 2, 2), false);
    assert_eq!(elide_in_copies(&mut p, true, false), 2);
    assert_eq!(p.ops[0], cp(pc(Buf::In, 1, 2), pc(Buf::Out, 0, 2)));
    assert_eq!(p.ops[1], cp(pc(Buf::In, 5, 2), pc(Buf::Out, 4, 2)));
    assert!(matches!(&p.ops[4], Op::Irecv { pieces, .. } if pieces == &[pc(Buf::Out, 2, 2)]));
    assert_eq!(p.ops[6], red(pc(Buf::In, 3, 2), pc(Buf::Out, 2, 2), true));
}

#[test]
fn packed_receive_split() {
    // One packed receive feeding two reductions (circulant reduce_scatter), plus a piece
    // that stays in scratch because its target was touched.
    let mut p = Program::new();
    let t = p.tmp(6);
    p.copy(pc(Buf::In, 0, 8), pc(Buf::Out, 0, 8));
    p.send(3, vec![pc(Buf::Out, 6, 3)]); // not all a copy of In: Out[8] is not
    p.recv(1, vec![pc(t, 0, 6), pc(Buf::Out, 3, 0)]);
    p.reduce(pc(t, 0, 2), pc(Buf::Out, 0, 2), true);
    p.reduce(pc(t, 2, 2), pc(Buf::Out, 6, 2), true);
    p.reduce(pc(t, 4, 2), pc(Buf::Out, 3, 2), true);
    assert_eq!(elide_in_copies(&mut p, true, false), 4);
    let Op::Irecv { pieces, .. } = &p.ops[4] else {
        panic!("{:?}", p.ops)
    };
    assert_eq!(
        pieces,
        &[
            pc(Buf::Out, 0, 2),
            pc(t, 2, 2),
            pc(Buf::Out, 3, 2),
            pc(Buf::Out, 3, 0)
        ]
    );
    let copies: Vec<&Op> = p
        .ops
        .iter()
        .filter(|o| matches!(o, Op::Copy { .. }))
        .collect();
    assert_eq!(
        copies,
        [
            &cp(pc(Buf::In, 2, 1), pc(Buf::Out, 2, 1)),
            &cp(pc(Buf::In, 5, 3), pc(Buf::Out, 5, 3))
        ]
    );
    assert_eq!(p.tmp, vec![4]);
    p.validate(Some(9), Some(9)).unwrap();
}

#[test]
fn scratch_accumulator_too() {
    // An inner tree node accumulates in scratch: same rewrite, Tmp(1) instead of Out.
    let mut p = Program::new();
    let a = p.tmp(3);
    let t = p.tmp(3);
    p.copy(pc(Buf::In, 0, 3), pc(a, 0, 3));
    p.recv(1, vec![pc(t, 0, 3)]);
    p.reduce(pc(t, 0, 3), pc(a, 0, 3), false);
    p.send(0, vec![pc(a, 0, 3)]);
    assert_eq!(elide_in_copies(&mut p, false, false), 3);
    assert_eq!(p.tmp, vec![3, 0]);
    assert!(matches!(&p.ops[0], Op::Irecv { pieces, .. } if pieces == &[pc(a, 0, 3)]));
}

#[test]
fn subtract_ranges() {
    let mut s = vec![(0, 10), (20, 30)];
    subtract(&mut s, 5, 25);
    assert_eq!(s, vec![(0, 5), (25, 30)]);
    subtract(&mut s, 0, 0);
    assert_eq!(s, vec![(0, 5), (25, 30)]);
    subtract(&mut s, 1, 2);
    assert_eq!(s, vec![(0, 1), (2, 5), (25, 30)]);
    subtract(&mut s, 0, 100);
    assert!(s.is_empty());
}
