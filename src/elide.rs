//! Peephole pass over a [`Program`]: receive the first contribution straight into the
//! accumulator instead of copying the input there first.
//!
//! Builders start an accumulator by copying this rank's input into it (`Copy In -> X`) and
//! later fold a received partial into it (`Irecv Tmp`, `Wait`, `Reduce Tmp -> X`). When `In`
//! does not alias `Out` (no `MPI_IN_PLACE`), `In` is never written during the call, so the
//! same result comes from receiving into `X` directly and reducing `In` into it with the
//! operand order flipped:
//!
//! ```text
//! Copy In[a] -> X[d]            Irecv .. X[d] ..
//! Irecv .. Tmp[t] ..      =>    Wait
//! Wait                          Reduce In[a] -> X[d], src_first = !f
//! Reduce Tmp[t] -> X[d], f
//! ```
//!
//! `f = false` computes `X := X ⊕ Tmp = In ⊕ recv`; the rewrite `src_first = true` computes
//! `X := In ⊕ X = In ⊕ recv`, the same combination in the same order (and vice versa), so
//! non-commutative ops keep canonical rank order. One memory pass (the copy) and, when nothing
//! else uses it, the scratch buffer go away.
//!
//! Two more rewrites of the same copy follow from `In` being immutable: an op that reads
//! part of `X` that still is exactly the copy (a send, a copy, a reduction's source) reads
//! `In` instead, and a part of the copy that is then overwritten before anything else reads
//! it (or, in scratch, never read at all) is not copied. `Out` ranges that stay the copy to
//! the end are the result and stay copied.
//!
//! Everything is decided per element range of the copy, and only where it is provably safe:
//! * the copy is `In -> X` with `X` not `In`; ranges of it that are still needed stay as
//!   copies (at the same place, in the same order);
//! * the first op after the copy that touches (reads or writes) `X[d]`, reads through `In`
//!   aside, is the `Reduce`, and `d` lies inside the copied range;
//! * the `Reduce` reads `Tmp(k)[t]`, and the last op before it that touches `Tmp(k)[t]` is an
//!   `Irecv`, one of whose pieces contains `t` (a multi-piece or packed receive is split
//!   around `t`; the message keeps its length and element order), and whose `Wait` comes
//!   before the `Reduce`; if it was posted before the copy, nothing touches `X[d]` from the
//!   post to the copy and no earlier send or receive of `X[d]` is still in flight at the post;
//! * nothing after the `Reduce` reads `Tmp(k)[t]` before it is written again (the received
//!   data no longer lands there);
//! * for a non-commutative op, only `f = false` is rewritten: the transport then calls the op
//!   with the same operands in the same roles as before (`in` = own data, `inout` = received),
//!   in one `MPI_Reduce_local` instead of a copy and a reduction; `f = true` would cost the
//!   transport a copy;
//! * for a commutative op the transport always calls `op(in = src, inout = dst)`, so the
//!   rewrite swaps the roles of the two operands. That is harmless where every element is
//!   reduced at one rank only, but not where two ranks must compute the same value bit for bit
//!   with an op whose commutativity is not bitwise (butterfly allreduce; e.g. max with NaNs):
//!   `keep_roles` forbids it there (reads through `In` and dead copies keep the roles).
//!
//! Messages, peers, request slots and their order are unchanged, so ranks that run the pass
//! and ranks that do not (in-place root, non-root) still match. Scratch buffers are shrunk to
//! the elements still referenced.

use crate::plan::{Buf, Op, Piece, Program};

/// Rewrite `prog` as described in the module docs. Only valid when `In` does not alias `Out`
/// on this rank (the call is not in place). `keep_roles`: never swap the operands' roles of a
/// commutative op (see the module docs). Returns the number of elements no longer copied.
pub fn elide_in_copies(prog: &mut Program, commutative: bool, keep_roles: bool) -> usize {
    let mut rewritten = 0;
    let mut ci = 0;
    while ci < prog.ops.len() {
        let (src, dst) = match prog.ops[ci] {
            Op::Copy { src, dst } if src.buf == Buf::In && dst.buf != Buf::In && dst.len > 0 => {
                (src, dst)
            }
            _ => {
                ci += 1;
                continue;
            }
        };
        let elided = elide_copy(prog, ci, src, dst, commutative, keep_roles);
        if elided.is_empty() {
            ci += 1;
            continue;
        }
        rewritten += elided.iter().map(|(lo, hi)| hi - lo).sum::<usize>();
        // What is left of the copy, in order, at the same place.
        let mut kept = vec![(dst.off, dst.end())];
        for &(lo, hi) in &elided {
            subtract(&mut kept, lo, hi);
        }
        kept.sort_unstable();
        let copies: Vec<Op> = kept
            .iter()
            .map(|&(lo, hi)| Op::Copy {
                src: Piece::new(Buf::In, src.off + (lo - dst.off), hi - lo),
                dst: Piece::new(dst.buf, lo, hi - lo),
            })
            .collect();
        let n = copies.len();
        prog.ops.splice(ci..ci + 1, copies);
        ci += n;
    }
    if rewritten > 0 {
        shrink_tmp(prog);
    }
    rewritten
}

/// Elide what can be elided of the copy `In[src] -> dst` at `ops[ci]`; returns the element
/// ranges `[lo, hi)` of `dst` that no longer need copying (the ops after `ci` are rewritten).
fn elide_copy(
    prog: &mut Program,
    ci: usize,
    src: Piece,
    dst: Piece,
    commutative: bool,
    keep_roles: bool,
) -> Vec<(usize, usize)> {
    let in_piece = |d: &Piece| Piece::new(Buf::In, src.off + (d.off - dst.off), d.len);
    // Ranges of dst that still hold the copy of In and that nothing has read since.
    let mut pending = vec![(dst.off, dst.end())];
    let inside = |pending: &[(usize, usize)], d: &Piece| {
        d.buf == dst.buf
            && d.len > 0
            && pending.iter().any(|&(lo, hi)| lo <= d.off && d.end() <= hi)
    };
    let mut elided = Vec::new();
    let mut j = ci + 1;
    while j < prog.ops.len() && !pending.is_empty() {
        if let Op::Reduce {
            src: t,
            dst: d,
            src_first,
        } = prog.ops[j]
        {
            let candidate = inside(&pending, &d)
                && matches!(t.buf, Buf::Tmp(_))
                && !overlaps(&t, &d)
                && if commutative { !keep_roles } else { !src_first };
            if candidate {
                if let Some((i, k)) = filling_recv(prog, ci, j, &t, &d) {
                    if dead_after(prog, j, &t) {
                        retarget(prog, i, k, &t, d);
                        prog.ops[j] = Op::Reduce {
                            src: in_piece(&d),
                            dst: d,
                            src_first: !src_first,
                        };
                        elided.push((d.off, d.end()));
                        subtract(&mut pending, d.off, d.end());
                        j += 1;
                        continue;
                    }
                }
            }
        }
        // Reads of what still is a copy of In read In instead.
        match &mut prog.ops[j] {
            Op::Isend { pieces, .. } => {
                for pc in pieces.iter_mut().filter(|pc| inside(&pending, pc)) {
                    *pc = in_piece(pc);
                }
            }
            Op::Copy { src: s, .. } | Op::Reduce { src: s, .. } if inside(&pending, s) => {
                *s = in_piece(s);
            }
            _ => {}
        }
        // Other reads need the copy; a plain overwrite makes it dead.
        for pc in reads(&prog.ops[j]) {
            if pc.buf == dst.buf && pc.len > 0 {
                subtract(&mut pending, pc.off, pc.end());
            }
        }
        for pc in writes(&prog.ops[j]) {
            if pc.buf == dst.buf && pc.len > 0 {
                if !matches!(prog.ops[j], Op::Reduce { .. }) {
                    elided.extend(intersect(&pending, pc.off, pc.end()));
                }
                subtract(&mut pending, pc.off, pc.end());
            }
        }
        j += 1;
    }
    // Scratch that nothing reads before the end of the call was copied for nothing.
    if matches!(dst.buf, Buf::Tmp(_)) && j == prog.ops.len() {
        elided.append(&mut pending);
    }
    elided
}

/// The `Irecv` (op index, piece index) that filled `t` for the reduction into `d` at
/// `ops[j]`: the last op before `j` touching `t`, with one piece containing `t` and its
/// `Wait` before `j`. If it was posted before the copy at `ci`, `d` must be free from the
/// post on: no op between the post and the copy touches it, and no nonblocking op posted
/// earlier still uses it at the post.
fn filling_recv(
    prog: &Program,
    ci: usize,
    j: usize,
    t: &Piece,
    d: &Piece,
) -> Option<(usize, usize)> {
    let ops = &prog.ops;
    let i = (0..j)
        .rev()
        .find(|&i| touched(&ops[i]).any(|pc| overlaps(pc, t)))?;
    let Op::Irecv { req, pieces, .. } = &ops[i] else {
        return None;
    };
    let mut hits = pieces.iter().enumerate().filter(|(_, pc)| overlaps(pc, t));
    let (k, pc) = hits.next()?;
    if hits.next().is_some() || !contains(pc, t) {
        return None;
    }
    if wait_of(ops, i, *req)? >= j {
        return None;
    }
    if i < ci {
        for (h, op) in ops[..ci].iter().enumerate() {
            if touched(op).any(|pc| overlaps(pc, d)) {
                let in_flight = match op {
                    Op::Irecv { req, .. } | Op::Isend { req, .. } => {
                        !matches!(wait_of(ops, h, *req), Some(w) if w <= i)
                    }
                    _ => false,
                };
                if h >= i || in_flight {
                    return None;
                }
            }
        }
    }
    Some((i, k))
}

/// Index of the `Wait` completing the request `req` posted at `ops[h]`.
fn wait_of(ops: &[Op], h: usize, req: u32) -> Option<usize> {
    (h + 1..ops.len()).find(|&w| matches!(ops[w], Op::Wait { req: r } if r == req))
}

/// Is `t` written before it is read again after `ops[j]` (or never read again)?
fn dead_after(prog: &Program, j: usize, t: &Piece) -> bool {
    let mut live = vec![(t.off, t.end())];
    for op in &prog.ops[j + 1..] {
        if live.is_empty() {
            return true;
        }
        let hit = |pc: &Piece| {
            pc.buf == t.buf && live.iter().any(|&(lo, hi)| pc.off < hi && lo < pc.end())
        };
        if reads(op).any(|pc| pc.len > 0 && hit(pc)) {
            return false;
        }
        for pc in writes(op) {
            if pc.buf == t.buf {
                subtract(&mut live, pc.off, pc.end());
            }
        }
    }
    true
}

/// Make piece `k` of the `Irecv` at `ops[i]` deliver the elements it put in `t` into `d`.
fn retarget(prog: &mut Program, i: usize, k: usize, t: &Piece, d: Piece) {
    let Op::Irecv { pieces, .. } = &mut prog.ops[i] else {
        unreachable!("filling_recv returns an Irecv");
    };
    let pc = pieces[k];
    let parts = [
        pc.sub(0, t.off - pc.off),
        d,
        pc.sub(t.end() - pc.off, pc.len),
    ];
    let parts = parts.into_iter().filter(|p| p.len > 0);
    pieces.splice(k..k + 1, parts);
}

/// Shrink every scratch buffer to the elements some op still references.
fn shrink_tmp(prog: &mut Program) {
    let mut need = vec![0usize; prog.tmp.len()];
    for op in &prog.ops {
        for pc in touched(op) {
            if let Buf::Tmp(k) = pc.buf {
                let n = &mut need[k as usize];
                *n = (*n).max(pc.end());
            }
        }
    }
    for (t, n) in prog.tmp.iter_mut().zip(need) {
        *t = (*t).min(n);
    }
}

fn reads(op: &Op) -> impl Iterator<Item = &Piece> {
    let (a, b): (&[Piece], Option<&Piece>) = match op {
        Op::Isend { pieces, .. } => (pieces, None),
        Op::Reduce { src, dst, .. } => (std::slice::from_ref(src), Some(dst)),
        Op::Copy { src, .. } => (std::slice::from_ref(src), None),
        Op::Node { step, .. } => (std::slice::from_ref(step.reads()), None),
        Op::Irecv { .. } | Op::Wait { .. } => (&[], None),
    };
    a.iter().chain(b)
}

fn writes(op: &Op) -> impl Iterator<Item = &Piece> {
    let s: &[Piece] = match op {
        Op::Irecv { pieces, .. } => pieces,
        Op::Reduce { dst, .. } | Op::Copy { dst, .. } => std::slice::from_ref(dst),
        Op::Node { step, .. } => step.writes().map_or(&[], std::slice::from_ref),
        Op::Isend { .. } | Op::Wait { .. } => &[],
    };
    s.iter()
}

/// Every piece an op reads or writes (a nonblocking operation at its post).
fn touched(op: &Op) -> impl Iterator<Item = &Piece> {
    reads(op).chain(writes(op))
}

fn overlaps(a: &Piece, b: &Piece) -> bool {
    a.buf == b.buf && a.len > 0 && b.len > 0 && a.off < b.end() && b.off < a.end()
}

fn contains(outer: &Piece, inner: &Piece) -> bool {
    outer.buf == inner.buf && outer.off <= inner.off && inner.end() <= outer.end()
}

/// The parts of a set of disjoint ranges inside `[lo, hi)`.
fn intersect(set: &[(usize, usize)], lo: usize, hi: usize) -> Vec<(usize, usize)> {
    set.iter()
        .map(|&(a, b)| (a.max(lo), b.min(hi)))
        .filter(|&(a, b)| a < b)
        .collect()
}

/// Remove `[lo, hi)` from a set of disjoint half-open ranges.
fn subtract(set: &mut Vec<(usize, usize)>, lo: usize, hi: usize) {
    if lo >= hi {
        return;
    }
    let mut out = Vec::with_capacity(set.len() + 1);
    for &(a, b) in set.iter() {
        if b <= lo || hi <= a {
            out.push((a, b));
        } else {
            if a < lo {
                out.push((a, lo));
            }
            if hi < b {
                out.push((hi, b));
            }
        }
    }
    *set = out;
}

#[cfg(test)]
#[path = "elide_tests.rs"]
mod tests;
