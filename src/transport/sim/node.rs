//! The simulated transport's node steps ([`crate::plan::NodeStep`]): by messages among the
//! node's members, an independent stand-in for the shared window's protocols (the root folds
//! in member order).

use super::SimTransport;
use crate::error::Error;
use crate::plan::{Buf, Piece};
use crate::transport::Transport;

impl SimTransport {
    /// Every member sends its input to the root, which folds them in member order.
    pub(super) fn node_reduce(
        &mut self,
        members: &[usize],
        me: usize,
        root: usize,
        input: Piece,
        output: Option<Piece>,
    ) -> Result<(), Error> {
        if me != root {
            let r = self.isend(members[root], &[input])?;
            return self.wait(r);
        }
        let out =
            output.ok_or_else(|| Error::Internal("node reduce: root without output".into()))?;
        let acc = self.fold_from(members, me, input)?;
        self.bytes_mut(&out)?.copy_from_slice(&acc);
        Ok(())
    }
    /// The member-order fold of `mine` (this rank's piece) and the same-sized pieces every
    /// other member sends now.
    pub(super) fn fold_from(
        &mut self,
        members: &[usize],
        me: usize,
        mine: Piece,
    ) -> Result<Vec<u8>, Error> {
        let n = mine.len;
        let t = self.scratch(members.len() * n);
        let mut reqs = Vec::new();
        for (j, &q) in members.iter().enumerate().filter(|&(j, _)| j != me) {
            reqs.push(self.irecv(q, &[Piece::new(t, j * n, n)])?);
        }
        for r in reqs {
            self.wait(r)?;
        }
        let mut acc: Option<Vec<u8>> = None;
        for j in 0..members.len() {
            let at = if j == me {
                mine
            } else {
                Piece::new(t, j * n, n)
            };
            let x = self.bytes(&at)?.to_vec();
            acc = Some(match acc {
                None => x,
                Some(a) => {
                    let mut y = x;
                    self.op.apply(&a, &mut y); // a ⊕ x
                    y
                }
            });
        }
        self.tmp.pop();
        Ok(acc.unwrap_or_default())
    }
    /// The root sends `data` to every other member.
    pub(super) fn node_bcast(
        &mut self,
        members: &[usize],
        me: usize,
        root: usize,
        data: Piece,
    ) -> Result<(), Error> {
        if me != root {
            let r = self.irecv(members[root], &[data])?;
            return self.wait(r);
        }
        let mut reqs = Vec::new();
        for (_, &q) in members.iter().enumerate().filter(|&(j, _)| j != me) {
            reqs.push(self.isend(q, &[data])?);
        }
        for r in reqs {
            self.wait(r)?;
        }
        Ok(())
    }
    /// Member j's block goes to member j from everyone (sends posted first), which folds.
    pub(super) fn node_reduce_scatter(
        &mut self,
        members: &[usize],
        me: usize,
        counts: &[usize],
        input: Piece,
        output: Piece,
    ) -> Result<(), Error> {
        let start: Vec<usize> = counts
            .iter()
            .scan(0, |a, &c| {
                let o = *a;
                *a += c;
                Some(o)
            })
            .collect();
        let mut sends = Vec::new();
        for (j, &q) in members.iter().enumerate().filter(|&(j, _)| j != me) {
            sends.push(self.isend(q, &[input.sub(start[j], start[j] + counts[j])])?);
        }
        let mine = input.sub(start[me], start[me] + counts[me]);
        let acc = self.fold_from(members, me, mine)?;
        for r in sends {
            self.wait(r)?;
        }
        self.bytes_mut(&output)?.copy_from_slice(&acc);
        Ok(())
    }
    /// Every member sends its block to every other member, which receives it in place.
    pub(super) fn node_allgatherv(
        &mut self,
        members: &[usize],
        me: usize,
        counts: &[usize],
        displs: &[usize],
        data: Piece,
    ) -> Result<(), Error> {
        let block = |j: usize| data.sub(displs[j], displs[j] + counts[j]);
        let mut reqs = Vec::new();
        for (j, &q) in members.iter().enumerate().filter(|&(j, _)| j != me) {
            reqs.push(self.irecv(q, &[block(j)])?);
        }
        for (_, &q) in members.iter().enumerate().filter(|&(j, _)| j != me) {
            reqs.push(self.isend(q, &[block(me)])?);
        }
        for r in reqs {
            self.wait(r)?;
        }
        Ok(())
    }
    /// This rank's local index among `members`.
    pub(super) fn member(&self, members: &[usize]) -> Result<usize, Error> {
        members
            .iter()
            .position(|&q| q == self.rank)
            .ok_or_else(|| Error::Internal(format!("rank {} not in node {members:?}", self.rank)))
    }
    /// A scratch buffer of `n` elements past the program's own (popped by the caller).
    pub(super) fn scratch(&mut self, n: usize) -> Buf {
        self.tmp.push(vec![0xA5; n * self.eb]);
        Buf::Tmp((self.tmp.len() - 1) as u32)
    }
}
