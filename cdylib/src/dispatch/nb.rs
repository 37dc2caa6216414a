//! The non-blocking and persistent forms' share of the one path: the same validation,
//! decision ([`super::resolve::choose_nb`]) and program (the communicator's cache) as a
//! blocking call, then instead of running the program to completion, a [`Planned`] call that
//! [`crate::nbc`] starts ([`Planned::start`]) and advances without blocking
//! ([`Active::advance`]) from the user's completion calls. A persistent request keeps its
//! [`Planned`] call and starts it again at every `MPI_Start`.

use super::call::Args;
use super::serve::{self, Bases};
use super::validate::{self, Valid};
use crate::comm::{self, CommState};
use crate::held::{self, Held};
use crate::pmpi::{PmpiTransport, Req, Scratch};
use crate::state;
use pcoll::algo::hier::NodeSteps;
use pcoll::algo::{Algorithm, Collective};
use pcoll::exec::Run;
use pcoll::{Error, Program};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// A call pcoll serves with one of its programs, decided and built at initiation.
pub struct Planned {
    pub(crate) a: Args,
    v: Valid,
    pub(crate) alg: Algorithm,
    pub(crate) st: &'static CommState,
    /// The program (None: `shm`, which runs the window's protocol instead).
    prog: Option<Arc<Program>>,
    /// The derived types and user op of `a`, held until the call is dropped (see
    /// [`crate::held`]).
    _held: Held,
}

// SAFETY: the raw pointers are the user's buffers and handles, only passed to MPI by the
// thread that completes the request (as MPI allows for the thread level it was given); the
// state is shared between threads already (see `dispatch::again::Entry`).
unsafe impl Send for Planned {}

/// Decide a non-blocking or persistent call: `Err` sends it to native (pcoll cannot or
/// should not serve it; every rank decides alike, from the same facts) with its bytes for
/// `PCOLL_STATS` (0 where the call was not validated).
pub fn plan(a: Args) -> Result<Planned, usize> {
    if state::bypassed() || crate::foreign::nb_native() {
        return Err(0);
    }
    let g = state::global();
    let a = match again(a) {
        Ok(planned) => return Ok(planned),
        Err(a) => a,
    };
    if super::badinput::own_error(&a).is_some() {
        return Err(0);
    }
    let v = validate::validate(g, &a).ok_or(0usize)?;
    let bytes = v.spec.bytes();
    plan_valid(g, a, v, super::again::begin()).ok_or(bytes)
}

/// [`plan`] for a validated call.
fn plan_valid(g: &'static state::Global, a: Args, mut v: Valid, gen: u64) -> Option<Planned> {
    let shm_ok = shm_ok(&a, &v);
    let chosen = super::resolve::choose_nb(g, &a, &mut v.spec, shm_ok).ok()?;
    let alg = chosen.alg;
    // A call that runs native while `shm`'s window waits (counted), is wanted (made by the
    // communicator's next blocking collective), is off or refused for good, or the shadow is
    // not made: its repeats go native at initiation (`crate::nbc::waiting`; until the window
    // or the shadow is made, which forgets them, or for good). A non-blocking call's decision
    // has no learned input without `PCOLL_LEARN` (`learn::raced` skips non-blocking calls).
    let native = |stands: bool| {
        if let (true, None) = (chosen.why.is_empty(), &g.cfg.learn) {
            match chosen.waits {
                Some(w) => w.memo_nb(&a, v.spec.bytes(), gen),
                None if stands => {
                    crate::nbc::waiting::keep(&a, v.spec.bytes(), gen, None);
                }
                None => {}
            }
        }
        None
    };
    if alg == Algorithm::Native {
        return native(super::resolve::native_stands(&a, v.spec.p));
    }
    // The initiation never waits for the other ranks: native until the communicator's next
    // blocking collective made the shadow (at the same call on every rank), or for good if
    // it could not be made.
    let st = comm::state_nb(a.comm, v.spec.p, v.spec.rank).ok()?;
    if st.shadow_later() || st.shadow_failed() {
        log::debug!(
            "{} (non-blocking): native until pcoll's shadow communicator is made",
            a.coll
        );
        return native(st.shadow_later());
    }
    // Kept for the next call: the nodes known, no warning (`why` is written only for one or
    // for the debug log), no learning, not a call counted while the window waits.
    let keep = |v: &Valid, prog: &Arc<Program>| {
        let settled = v.spec.p <= 1 || st.known_layout().is_some();
        if settled && chosen.why.is_empty() && g.cfg.learn.is_none() && chosen.waits.is_none() {
            super::again::keep(true, &a, v, (alg, st, prog), gen, Default::default());
        }
    };
    let log = |v: &Valid| {
        let (p, bytes) = (v.spec.p, v.spec.bytes());
        log::debug!(
            "{} (non-blocking) p={p} bytes={bytes}: {alg} ({})",
            a.coll,
            chosen.why
        );
    };
    if alg == Algorithm::Shm {
        log(&v);
        keep(&v, &Arc::new(Program::new()));
        return Some(Planned::held(a, v, alg, st, None));
    }
    if alg.node_aware() && st.known_layout().is_none() {
        return None;
    }
    // A node step through a node's window blocks until every member reaches it: never in a
    // schedule advanced from completion calls. Where the communicator has the windows, a
    // cached program of a blocking call may hold node steps, so a node-aware decision goes
    // native (whether the windows exist is agreed on every rank); without them the program
    // is built with point-to-point node steps.
    if alg.node_aware() && crate::shm::node_mode().is_some() && st.known_node_shm().is_some() {
        return None;
    }
    let spec = &v.spec;
    let prog = serve::program(g, st, alg, spec, NodeSteps::PointToPoint).ok()?;
    keep(&v, &prog);
    log(&v);
    Some(Planned::held(a, v, alg, st, Some(prog)))
}

/// The same call as the last one served (everything it was decided by but its buffers),
/// planned from it; else the arguments back.
#[allow(clippy::result_large_err)] // the caller's own arguments handed back, not an error
fn again(a: Args) -> Result<Planned, Args> {
    let Some((v, alg, st, prog)) = super::again::again(state::global(), true, &a, |e, _| {
        let prog = (e.alg != Algorithm::Shm).then(|| e.prog.clone());
        (e.v.clone(), e.alg, e.st, prog)
    }) else {
        return Err(a);
    };
    // Kept calls have named types and predefined ops only (`again::keep`): nothing to hold.
    Ok(Planned {
        a,
        v,
        alg,
        st,
        prog,
        _held: Held::default(),
    })
}

/// `shm` serves a call whose element fits a cell (every rank has the same type for the
/// reductions; bcast and allgather(v) run in bytes), that `MPI_Reduce_local` can reduce if it
/// reduces (asked on every rank alike); bcast and allgather(v) beyond an int count of bytes
/// went to the MPI in `validate` (the same total on every rank). Nothing a rank alone
/// knows: ranks may describe a bcast's or allgather(v)'s data with different types, and a
/// rank whose type has holes is staged (`Planned::staged`) as in the blocking call. Until session 29 such a rank declined
/// `shm` while the others took it (an `MPI_Ibcast` from `MPI_BOTTOM` at the root hung).
fn shm_ok(a: &Args, v: &Valid) -> bool {
    crate::shm::enabled()
        && crate::shm::run::cell_elems(crate::shm::cell_bytes(), &v.facts).is_some()
        && (!a.coll.reduces() || crate::shm::run::reducible(a.dt, a.op).is_ok())
}

/// One start of a planned call: its transport (scratch, requests), its place in the program,
/// and the staging buffer of a type with holes; or, for `shm`, its place in the window's
/// protocol (None: done, p = 1).
pub enum Active {
    Program {
        prog: Arc<Program>,
        t: PmpiTransport<'static>,
        run: Run<Req>,
        staged: Option<Scratch>,
    },
    Shm {
        op: Option<crate::shm::run::Op>,
        staged: Option<Scratch>,
    },
}

impl Planned {
    /// The planned call, holding its types and op for as long as it lives.
    fn held(
        a: Args,
        v: Valid,
        alg: Algorithm,
        st: &'static CommState,
        prog: Option<Arc<Program>>,
    ) -> Planned {
        let _held = held::hold(&a);
        Planned {
            a,
            v,
            alg,
            st,
            prog,
            _held,
        }
    }

    /// Bytes of the call (for the stats).
    pub fn bytes(&self) -> usize {
        self.v.spec.bytes()
    }

    /// Start the call with its messages on `tag`: stage (types with holes), bind the buffers,
    /// and advance the program as far as it goes (its first messages are posted now).
    pub fn start(&self, tag: c_int) -> Result<Active, Error> {
        let (a, v, st) = (&self.a, &self.v, self.st);
        let Some(prog) = self.prog.clone() else {
            let (staged, bases) = self.staged(|| serve::plan_bases(a, v, st))?;
            let op = self.start_shm(bases);
            let mut act = Active::Shm { op: op?, staged };
            act.advance(self)?;
            return Ok(act);
        };
        let g = state::global();
        let (staged, bases) = self.staged(|| serve::bases(a, v, st))?;
        let t = serve::transport(g, a, v, st, bases).with_tag(tag);
        let mut act = Active::Program {
            prog,
            t,
            run: Run::new(),
            staged,
        };
        act.advance(self)?;
        Ok(act)
    }
}

impl Planned {
    /// A bcast or allgather(v) of a type with holes (or `MPI_BOTTOM`): the staging buffer,
    /// this rank's data packed into it, and its bases; else no buffer and `plain`'s bases.
    fn staged(
        &self,
        plain: impl FnOnce() -> Result<Bases, Error>,
    ) -> Result<(Option<Scratch>, Bases), Error> {
        let (a, v, st) = (&self.a, &self.v, self.st);
        Ok(match (v.bytes, v.spec.coll.base()) {
            (Some(true), Collective::Bcast) => {
                let mut buf = serve::stage_bcast(a, v, st)?;
                let base = buf.ptr() as *mut c_void;
                (Some(buf), (base as *const c_void, base))
            }
            (Some(true), Collective::Allgatherv) => {
                let (buf, bases) = serve::stage(a, v, st)?;
                (Some(buf), bases)
            }
            _ => (None, plain()?),
        })
    }

    /// Start `shm` on the communicator's window with `bases` (a bcast's or allgather(v)'s,
    /// staged or the user's buffers) (None: p = 1, done here).
    fn start_shm(&self, bases: Bases) -> Result<Option<crate::shm::run::Op>, Error> {
        use crate::shm::run::{cell_elems, run_plan, Op};
        let (a, v, st) = (&self.a, &self.v, self.st);
        let spec = &v.spec;
        let w = if spec.p > 1 {
            Some(
                st.shm()
                    .ok_or_else(|| Error::Internal("shm chosen without a window".into()))?,
            )
        } else {
            None
        };
        if matches!(spec.coll, Collective::Reduce | Collective::Allreduce) {
            let call = serve::shm_call(a, v);
            let Some(w) = w else {
                crate::shm::run::alone(&call)?;
                return Ok(None);
            };
            return Op::start(w, call).map(Some);
        }
        let call = serve::plan_call(a, v, bases);
        let plan = pcoll::algo::shm::xfer::Plan {
            kind: serve::plan_kind(spec),
            p: spec.p,
            counts: &spec.counts,
            displs: &spec.displs,
            cell_elems: cell_elems(w.map_or(usize::MAX, |w| w.cell), &v.facts)
                .ok_or_else(|| Error::Internal("shm chosen for an element above a cell".into()))?,
            in_place: v.in_place,
        };
        let Some(w) = w else {
            run_plan(None, &call, &plan)?;
            return Ok(None);
        };
        Op::start_plan(w, call, &plan).map(Some)
    }
}

impl Active {
    /// Advance without blocking; `Ok(true)` once complete (then unstaged).
    pub fn advance(&mut self, p: &Planned) -> Result<bool, Error> {
        let (r, staged) = match self {
            Active::Shm { op: None, staged } => (Ok(true), staged),
            Active::Shm {
                op: Some(op),
                staged,
            } => (op.advance(), staged),
            Active::Program { run, .. } if run.done() => return Ok(true),
            Active::Program {
                prog,
                t,
                run,
                staged,
            } => (run.advance(prog, t), staged),
        };
        if !matches!(r, Ok(false)) {
            if let Some(buf) = staged.take() {
                let out = match (&r, p.v.spec.coll.base()) {
                    (Ok(_), Collective::Bcast) => serve::unstage_bcast(&p.a, &p.v, p.st, &buf),
                    (Ok(_), _) => serve::unstage(&p.a, &p.v, p.st, &buf),
                    _ => Ok(()),
                };
                p.st.pool.give(buf);
                out?;
            }
        }
        r
    }
}
