//! The executor: runs a [`Program`] over a [`Transport`]. The only mover of bytes.

use crate::error::Error;
use crate::plan::{Op, Program};
use crate::transport::Transport;

/// Run `prog` to completion. On error, requests still in flight are waited for before the
/// error is returned, so no buffer is left in use by MPI.
pub fn run<T: Transport>(prog: &Program, t: &mut T) -> Result<(), Error> {
    t.alloc_tmp(&prog.tmp)?;
    let mut reqs: Vec<Option<T::Request>> = Vec::new();
    let mut result = Ok(());
    for op in &prog.ops {
        let r = step(op, t, &mut reqs);
        if r.is_err() {
            result = r;
            break;
        }
    }
    for slot in reqs.iter_mut() {
        if let Some(r) = slot.take() {
            let w = t.wait(r);
            if result.is_ok() {
                result = w.and(Err(Error::Internal("request never waited".into())));
            }
        }
    }
    result
}

fn step<T: Transport>(op: &Op, t: &mut T, reqs: &mut Vec<Option<T::Request>>) -> Result<(), Error> {
    let mut put = |req: u32, r: T::Request| {
        let i = req as usize;
        if reqs.len() <= i {
            reqs.resize_with(i + 1, || None);
        }
        debug_assert!(reqs[i].is_none(), "request slot {i} reused while in flight");
        reqs[i] = Some(r);
    };
    match op {
        Op::Irecv { req, peer, pieces } => put(*req, t.irecv(*peer, pieces)?),
        Op::Isend { req, peer, pieces } => put(*req, t.isend(*peer, pieces)?),
        Op::Wait { req } => {
            let r = reqs
                .get_mut(*req as usize)
                .and_then(|s| s.take())
                .ok_or_else(|| Error::Internal(format!("wait on idle request {req}")))?;
            t.wait(r)?;
        }
        Op::Reduce {
            src,
            dst,
            src_first,
        } => t.reduce(*src, *dst, *src_first)?,
        Op::Copy { src, dst } => t.copy(*src, *dst)?,
    }
    Ok(())
}
