//! The one path every intercepted collective takes, sequenced here; each step lives in a
//! module named for what it does:
//! the native fast path (`native`: the resolver says native -> `PMPI_`, nothing validated) ->
//! bad input pcoll reports itself (`badinput`) -> validate (`validate`: invalid or unservable
//! -> the native `PMPI_` call, which reports errors exactly as the MPI does) -> choose an
//! algorithm (`resolve`, the glue to `pcoll::decide::Resolver`) -> build (or reuse) the
//! program and run it over `PmpiTransport` on the shadow communicator (`serve`) -> stats.
//! The call record and its vectors are in `call`. The process context ([`Global`]) is fetched
//! once per call, here or in [`vector_native`], and passed down.

mod again;
mod badinput;
mod call;
mod native;
pub mod nb;
mod resolve;
mod serve;
mod validate;

pub use again::forget_all as forget_served;
pub(crate) use again::{stable_handles, CallKey};

/// The served-again generation now: what a kept decision was made in is used only while it
/// holds (`crate::nbc::waiting`).
pub(crate) fn served_gen() -> u64 {
    again::begin()
}
pub(crate) use badinput::error_code;
pub use call::{Args, Counts, SMALL};
pub use native::{regular_native, vector_native};

use crate::consts;
use crate::standin;
use crate::state::{self, Global};
use mpi_sys::*;
use pcoll::algo::Algorithm;
use std::os::raw::c_int;
use validate::Valid;

/// Wall-clock time for the stats (only with `PCOLL_STATS=1`, so that a native call pays
/// no timer reads otherwise; `time_us` then stays 0).
fn stat_time(g: &Global) -> f64 {
    if g.cfg.stats {
        wtime()
    } else {
        0.0
    }
}

fn wtime() -> f64 {
    // SAFETY: no arguments.
    unsafe { PMPI_Wtime() }
}

/// Serve one collective call. `native` performs the same call with `PMPI_`.
pub fn collective(a: &Args, native: &mut dyn FnMut() -> c_int) -> c_int {
    if state::disabled() {
        crate::gate::passthrough();
        return native();
    }
    if let Some(rc) = no_world(a.coll, native) {
        return rc;
    }
    crate::nbc::before_blocking(a.comm);
    serve_call(state::global(), a, native)
}

/// A call without the world model (an MPI-4 sessions program before `MPI_Init`, or after
/// `MPI_Finalize`: [`state::world_model`]) is forwarded, and `pcoll_last_algorithm` says so
/// (`Some`: its return code); `None` with the world model.
pub(crate) fn no_world(
    coll: pcoll::algo::Collective,
    native: &mut dyn FnMut() -> c_int,
) -> Option<c_int> {
    if state::world_model() {
        return None;
    }
    let rc = native();
    state::record(coll, Algorithm::Native, 0, 0.0);
    Some(rc)
}

/// [`collective`] with the process context.
fn serve_call(g: &'static Global, a: &Args, native: &mut dyn FnMut() -> c_int) -> c_int {
    let t0 = stat_time(g);
    if let Some(rc) = served_again(g, a, native, t0) {
        return rc;
    }
    if let Some(bytes) = native::native_requested(g, a) {
        let rc = native();
        state::record(a.coll, Algorithm::Native, bytes, stat_time(g) - t0);
        return rc;
    }
    if let Some(e) = badinput::own_error(a) {
        return refuse(g, a, e);
    }
    let Some(mut v) = validate::validate(g, a) else {
        return unserved(g, a, native, t0);
    };
    let bytes = v.spec.bytes();
    // The decision may be kept for the next call only if it had the communicator's nodes to
    // go by (asked at the first call pcoll serves on it; they do not change afterwards).
    let gen = again::begin();
    let settled = v.spec.p <= 1
        || crate::comm::existing(a.comm).is_some_and(|st| st.known_layout().is_some());
    let chosen = match resolve::choose(g, a, &mut v.spec) {
        Ok(x) => x,
        Err(code) => return badinput::raise(a.comm, code),
    };
    let (alg, why) = (chosen.alg, chosen.why);
    let track = again::Track {
        tally: chosen.tally,
        cell: chosen.kept,
        wait: chosen.waits,
    };
    if alg != Algorithm::Native && no_shadow(a, &v) {
        return unserved(g, a, native, t0);
    }
    // `hier`'s node windows may wait too: the call then runs its node steps point-to-point.
    let at_once = chosen.forced || chosen.explore.is_some();
    let waits = resolve::node_windows_wait(g, a, &v.spec, alg, at_once);
    // A call exploring its cell (a race, PCOLL_LEARN) is timed, and kept to be served again
    // only with its cell (whose next call may run another candidate).
    let explore = chosen.explore.as_ref();
    let explores = chosen.explore.is_some() && track.cell.is_none();
    let settled = settled && !explores && !waits;
    if alg == Algorithm::Native {
        let rc = crate::learn::timed(explore, native);
        // Native calls are kept only while `shm`'s window waits (the fast path cannot send
        // them to native: it decides `shm`): in the gate's memo, and for the served-again
        // path (the memo forwards only what the gate would, and one call shape at a time).
        if let (Some(w), true, true, Some(st)) = (track.wait, settled, why.is_empty(), known(a)) {
            w.memo(a, st);
            let empty = std::sync::Arc::new(pcoll::Program::new());
            again::keep(false, a, &v, (alg, st, &empty), gen, track);
        }
        state::record(a.coll, alg, bytes, stat_time(g) - t0);
        log::debug!("{} p={} bytes={bytes}: native ({why})", a.coll, v.spec.p);
        return rc;
    }
    if alg == Algorithm::Shm {
        let result = crate::learn::timed(explore, || serve::run_shm(g, a, &v));
        // Kept for the next call as the programs are (with an empty program; p > 1 only).
        if let (Ok(()), true, true, Some(st)) = (&result, settled, why.is_empty(), known(a)) {
            let empty = std::sync::Arc::new(pcoll::Program::new());
            again::keep(false, a, &v, (alg, st, &empty), gen, track);
        }
        let rc = finish(g, a, (&v, alg), result.map(|()| 0), t0, &why);
        call::recycle(std::mem::take(&mut v.spec.counts));
        return rc;
    }
    let result = crate::learn::timed(explore, || serve::run(g, a, &v, alg));
    // `why` is only written for a warning or the debug log: neither is kept.
    if let (Ok((st, prog)), true, true) = (&result, settled, why.is_empty()) {
        again::keep(false, a, &v, (alg, st, prog), gen, track);
    }
    let result = result.map(|(_, prog)| prog.rounds);
    let rc = finish(g, a, (&v, alg), result, t0, &why);
    call::recycle(std::mem::take(&mut v.spec.counts));
    call::recycle(std::mem::take(&mut v.spec.displs));
    rc
}

/// The call served from an entry of [`again`] (`None`: none is kept for it): its entry's
/// algorithm, or native where the entry steps a raced cell that runs native at this call
/// (timed from a common start if the call is timed).
fn served_again(
    g: &'static Global,
    a: &Args,
    native: &mut dyn FnMut() -> c_int,
    t0: f64,
) -> Option<c_int> {
    again::again(g, false, a, |e, pick| {
        let explore = pick.explore.as_ref();
        if pick.alg == Algorithm::Native {
            let rc = crate::learn::timed(explore, native);
            state::record(
                a.coll,
                Algorithm::Native,
                e.v.spec.bytes(),
                stat_time(g) - t0,
            );
            return rc;
        }
        let result = crate::learn::timed(explore, || {
            if e.alg == Algorithm::Shm {
                serve::run_shm(g, a, &e.v).map(|()| 0)
            } else {
                serve::run_program(g, a, &e.v, e.st, &e.prog).map(|()| e.prog.rounds)
            }
        });
        finish(g, a, (&e.v, e.alg), result, t0, "")
    })
}

/// A call whose arguments pcoll does not serve (an intercommunicator, one with processes from
/// outside `MPI_COMM_WORLD`, a type or count it cannot run): an op undefined for the type is
/// reported, anything else goes to the MPI.
fn unserved(g: &Global, a: &Args, native: &mut dyn FnMut() -> c_int, t0: f64) -> c_int {
    if let Some(code) = badinput::op_type_error(a) {
        // Every rank passes the same op and type, so every rank returns here.
        log::error!("{}: the op is not defined for this datatype", a.coll);
        return badinput::raise(a.comm, code);
    }
    log::debug!("{}: arguments pcoll does not serve; native call", a.coll);
    let rc = native();
    state::record(a.coll, Algorithm::Native, 0, stat_time(g) - t0);
    rc
}

/// pcoll could not make its shadow of the call's communicator (the first call pcoll serves
/// on it makes it; the MPI's context ids may be used up: MPICH has 2048): the call and every
/// later one on the communicator go to the MPI, on every rank alike (the dup is collective
/// and fails everywhere), with one warning per process. Natively such a program runs.
fn no_shadow(a: &Args, v: &Valid) -> bool {
    let spec = &v.spec;
    if spec.p <= 1 {
        return false;
    }
    // The shadow is made here (every rank is in this call) and may fail: the MPI's context
    // ids used up.
    let rc = match crate::comm::state(a.comm, spec.p, spec.rank) {
        Ok(st) if st.live_shadow().is_some() => return false,
        Ok(_) => consts::ERR_INTERN(),
        Err(rc) => rc,
    };
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        log::warn!(
            "{}: pcoll could not duplicate a communicator of {} ranks (MPI error {rc}; too many communicators?): its collectives go to the MPI",
            a.coll,
            spec.p
        );
    }
    crate::nodes::forward_always(a.comm);
    true
}

/// The communicator's state if it has one and more than one rank.
fn known(a: &Args) -> Option<&'static crate::comm::CommState> {
    crate::comm::existing(a.comm).filter(|st| st.size > 1)
}

/// Stats, log and return code of a call pcoll served with `alg`.
fn finish(
    g: &Global,
    a: &Args,
    (v, alg): (&Valid, Algorithm),
    result: Result<usize, pcoll::Error>,
    t0: f64,
    why: &str,
) -> c_int {
    let bytes = v.spec.bytes();
    match result {
        Ok(rounds) => {
            let dt = stat_time(g) - t0;
            state::record(a.coll, alg, bytes, dt);
            log_served(a, v, (alg, why), bytes, rounds, dt);
            consts::SUCCESS()
        }
        Err(e) => {
            log::error!("{} {alg}: {e}", a.coll);
            badinput::raise(a.comm, badinput::error_code(&e))
        }
    }
}

/// Report this rank's own bad argument. The other ranks may have valid arguments and go on
/// into the collective (native or pcoll) and wait for this one: take part with scratch
/// standing in for the NULL buffer, then report the error here only.
fn refuse(g: &'static Global, a: &Args, e: badinput::OwnError) -> c_int {
    log::error!("{}: invalid argument: {}", a.coll, e.what);
    if let Some(si) = e.stand_in {
        if standin::participate(a, si, |b, n| serve_call(g, b, n)) {
            log::debug!("{}: took part with a stand-in buffer", a.coll);
        }
    }
    badinput::raise(a.comm, e.code)
}

/// Debug log of a call pcoll served.
fn log_served(
    a: &Args,
    v: &Valid,
    (alg, why): (Algorithm, &str),
    bytes: usize,
    rounds: usize,
    dt: f64,
) {
    let spec = &v.spec;
    log::debug!(
        "{} p={} rank={} bytes={bytes} root={}: {alg} ({why}), segment {}, {rounds} rounds, {:.1} us",
        a.coll,
        spec.p,
        spec.rank,
        spec.root,
        match spec.seg_elems {
            _ if !pcoll::segment::uses_segment(alg, a.coll) => "not used".to_string(),
            0 => "from the model".to_string(),
            n => format!("{} B", n * spec.elem_bytes),
        },
        dt * 1e6
    );
}
