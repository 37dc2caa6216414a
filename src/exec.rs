//! The executor: runs a [`Program`] over a [`Transport`]. The only mover of bytes.

use crate::error::Error;
use crate::plan::{Op, Program};
use crate::transport::Transport;

/// Run `prog` to completion. On error, requests still in flight are waited for before the
/// error is returned, so no buffer is left in use by MPI.
pub fn run<T: Transport>(prog: &Program, t: &mut T) -> Result<(), Error> {
    t.alloc_tmp(&prog.tmp)?;
    let mut reqs = Slots::new();
    let mut result = Ok(());
    for op in &prog.ops {
        let r = step(op, t, &mut reqs);
        if r.is_err() {
            result = r;
            break;
        }
    }
    for r in reqs.drain() {
        let w = t.wait(r);
        if result.is_ok() {
            result = w.and(Err(Error::Internal("request never waited".into())));
        }
    }
    result
}

/// Requests in flight by id: the first [`INLINE`] ids without a heap allocation (programs
/// reuse ids once waited, so most need only a few).
struct Slots<R> {
    inline: [Option<R>; INLINE],
    more: Vec<Option<R>>,
}

const INLINE: usize = 16;

impl<R> Slots<R> {
    fn new() -> Self {
        Slots {
            inline: std::array::from_fn(|_| None),
            more: Vec::new(),
        }
    }
    fn slot(&mut self, i: usize) -> &mut Option<R> {
        if i < INLINE {
            return &mut self.inline[i];
        }
        let j = i - INLINE;
        if self.more.len() <= j {
            self.more.resize_with(j + 1, || None);
        }
        &mut self.more[j]
    }
    fn drain(&mut self) -> impl Iterator<Item = R> + '_ {
        self.inline
            .iter_mut()
            .chain(self.more.iter_mut())
            .filter_map(|s| s.take())
    }
}

fn step<T: Transport>(op: &Op, t: &mut T, reqs: &mut Slots<T::Request>) -> Result<(), Error> {
    let mut put = |req: u32, r: T::Request| {
        let s = reqs.slot(req as usize);
        debug_assert!(s.is_none(), "request slot {req} reused while in flight");
        *s = Some(r);
    };
    match op {
        Op::Irecv { req, peer, pieces } => put(*req, t.irecv(*peer, pieces)?),
        Op::Isend { req, peer, pieces } => put(*req, t.isend(*peer, pieces)?),
        Op::Wait { req } => {
            let r = reqs
                .slot(*req as usize)
                .take()
                .ok_or_else(|| Error::Internal(format!("wait on idle request {req}")))?;
            t.wait(r)?;
        }
        Op::Reduce {
            src,
            dst,
            src_first,
        } => t.reduce(*src, *dst, *src_first)?,
        Op::Copy { src, dst } => t.copy(*src, *dst)?,
        Op::Node { members, step } => t.node(members, step)?,
    }
    Ok(())
}
