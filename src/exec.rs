//! The executor: runs a [`Program`] over a [`Transport`]. The only mover of bytes.
//!
//! Two ways to drive one program, over the same step function: [`run`] to completion
//! (blocking collectives: a `Wait` op blocks in the transport), and [`Run::advance`], which
//! goes as far as it can without blocking (non-blocking and persistent collectives: a `Wait`
//! op whose request is not complete yet stops it; the next `advance` resumes there). A
//! [`Run`] owns the requests in flight, so several programs can be outstanding at once,
//! each advanced whenever its owner polls it.

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
        let r = step(op, t, &mut reqs, true);
        if let Err(e) = r {
            result = Err(e);
            break;
        }
    }
    drain(&mut reqs, t, result)
}

/// Wait for every request still in flight; an error if there was one (a program that
/// completed with a request never waited is an internal error).
fn drain<T: Transport>(
    reqs: &mut Slots<T::Request>,
    t: &mut T,
    mut result: Result<(), Error>,
) -> Result<(), Error> {
    for r in reqs.drain() {
        let w = t.wait(r);
        if result.is_ok() {
            result = w.and(Err(Error::Internal("request never waited".into())));
        }
    }
    result
}

/// One program being advanced without blocking: the next op to run and the requests in
/// flight. Cost: the same steps as [`run`], plus one failed `test` per poll that finds a
/// `Wait` op's request still in flight.
pub struct Run<R> {
    pc: usize,
    reqs: Slots<R>,
    state: State,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Fresh,
    Running,
    Done,
}

impl<R> Default for Run<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R> Run<R> {
    pub fn new() -> Self {
        Run {
            pc: 0,
            reqs: Slots::new(),
            state: State::Fresh,
        }
    }

    /// The program has completed (successfully or not).
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Advance `prog` over `t` as far as it goes without blocking: `Ok(true)` once it has
    /// completed, `Ok(false)` when the next op waits for a request still in flight. Call again
    /// with the same program and transport to resume. On error the requests in flight are
    /// waited for (as [`run`] does) and the run counts as done.
    pub fn advance<T: Transport<Request = R>>(
        &mut self,
        prog: &Program,
        t: &mut T,
    ) -> Result<bool, Error> {
        match self.state {
            State::Done => return Ok(true),
            State::Fresh => {
                self.state = State::Running;
                if let Err(e) = t.alloc_tmp(&prog.tmp) {
                    self.state = State::Done;
                    return Err(e);
                }
            }
            State::Running => {}
        }
        while let Some(op) = prog.ops.get(self.pc) {
            match step(op, t, &mut self.reqs, false) {
                Ok(true) => self.pc += 1,
                Ok(false) => return Ok(false),
                Err(e) => {
                    self.state = State::Done;
                    return drain(&mut self.reqs, t, Err(e)).map(|()| true);
                }
            }
        }
        self.state = State::Done;
        drain(&mut self.reqs, t, Ok(())).map(|()| true)
    }
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

/// Run one op. `block`: a `Wait` blocks until its request completes; otherwise it only
/// tests it, and `Ok(false)` says the request is still in flight (the op is not done and
/// the request stays in its slot).
fn step<T: Transport>(
    op: &Op,
    t: &mut T,
    reqs: &mut Slots<T::Request>,
    block: bool,
) -> Result<bool, Error> {
    let mut put = |req: u32, r: T::Request| {
        let s = reqs.slot(req as usize);
        debug_assert!(s.is_none(), "request slot {req} reused while in flight");
        *s = Some(r);
    };
    match op {
        Op::Irecv { req, peer, pieces } => put(*req, t.irecv(*peer, pieces)?),
        Op::Isend { req, peer, pieces } => put(*req, t.isend(*peer, pieces)?),
        Op::Wait { req } => {
            let slot = reqs.slot(*req as usize);
            let idle = || Error::Internal(format!("wait on idle request {req}"));
            if block {
                t.wait(slot.take().ok_or_else(idle)?)?;
            } else {
                let r = slot.as_mut().ok_or_else(idle)?;
                if !t.test(r)? {
                    return Ok(false);
                }
                *slot = None;
            }
        }
        Op::Reduce {
            src,
            dst,
            src_first,
        } => t.reduce(*src, *dst, *src_first)?,
        Op::Copy { src, dst } => t.copy(*src, *dst)?,
        Op::Node { members, step } => t.node(members, step)?,
    }
    Ok(true)
}
