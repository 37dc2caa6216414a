//! The glue to the resolver (`pcoll::decide::Resolver`, the one place every decision is
//! made): the facts of a call as it wants them, the decision (publishing the native gate's
//! cells for a communicator size on first use), and the choice of the full path with its
//! reason and the fallback warning.

use super::call::Args;
use crate::consts;
use crate::mpi_types;
use crate::state::{self, Global};
use mpi_sys::*;
use pcoll::algo::{Algorithm, CallSpec, Collective};
use pcoll::decide::{CallFacts, Decision, NativeFacts};
use pcoll::Error;
use std::os::raw::c_int;

/// The defect facts of a call, asked of the MPI only when a defect rule needs them.
pub(super) struct ArgFacts<'a> {
    pub dt: MPI_Datatype,
    pub unequal: &'a dyn Fn() -> bool,
}

impl NativeFacts for ArgFacts<'_> {
    fn holes(&self) -> bool {
        mpi_types::type_facts(self.dt).map_or(false, |f| !f.contiguous())
    }
    fn true_lb_positive(&self) -> bool {
        mpi_types::true_lb(self.dt).map_or(false, |lb| lb > 0)
    }
    fn unequal_counts(&self) -> bool {
        (self.unequal)()
    }
}

/// The resolver's decision for a call (publishing the gate's cells for `p` on first use).
pub(super) fn decide(
    g: &'static Global,
    call: &CallFacts,
    nf: &dyn NativeFacts,
) -> Result<Decision, Error> {
    crate::gate::ensure(g, call.p);
    state::resolver(g, call.coll, call.p).resolve(call, nf)
}

/// The facts of a call every rank shares, from its arguments (`None`: an op the MPI rejects;
/// the full path reports it).
pub(super) fn call_facts(a: &Args, p: usize, bytes: usize) -> Option<CallFacts> {
    let commutative = if a.coll.reduces() {
        mpi_types::op_commutative(a.op).ok()?
    } else {
        true
    };
    Some(CallFacts {
        coll: a.coll,
        p,
        bytes,
        commutative,
        in_place: a.in_place(),
        root: if a.coll == Collective::Reduce {
            a.root.max(0) as usize
        } else {
            0
        },
    })
}

/// Which algorithm runs, and why (for the debug log and warnings): the resolver with this
/// process's overrides; a forced algorithm that cannot serve the call warns once under
/// `PCOLL_FALLBACK=warn` (a table rule's fallback is only logged at debug level).
pub(super) fn choose(
    g: &'static Global,
    a: &Args,
    spec: &mut CallSpec,
) -> Result<(Algorithm, String), c_int> {
    let call = CallFacts {
        coll: spec.coll,
        p: spec.p,
        bytes: spec.bytes(),
        commutative: spec.commutative,
        in_place: a.in_place(),
        root: spec.root,
    };
    let unequal = || a.unequal_counts();
    let nf = ArgFacts {
        dt: a.dt,
        unequal: &unequal,
    };
    let d = match decide(g, &call, &nf) {
        Ok(d) => d,
        Err(e) => {
            log::error!("{e}");
            return Err(if spec.commutative {
                consts::ERR_ARG()
            } else {
                consts::ERR_OP()
            });
        }
    };
    // The reason is only formatted when somebody reads it (a warning, the debug log).
    let why = if d.warn || log::log_enabled!(log::Level::Debug) {
        d.reason(&call, &g.table)
    } else {
        String::new()
    };
    if d.warn {
        warn_once(
            spec.coll,
            d.fallback.as_ref().map_or(d.algorithm, |f| f.asked),
            &why,
        );
    }
    spec.seg_elems = d.seg_elems(spec.elem_bytes);
    Ok((d.algorithm, why))
}

fn warn_once(coll: Collective, alg: Algorithm, msg: &str) {
    use std::sync::Mutex;
    static SEEN: Mutex<u128> = Mutex::new(0);
    let nalg = Algorithm::ALL.len();
    let bit =
        1u128 << (coll.index() * nalg + Algorithm::ALL.iter().position(|a| *a == alg).unwrap());
    let first = SEEN.lock().map_or(false, |mut s| {
        let first = *s & bit == 0;
        *s |= bit;
        first
    });
    if first {
        log::warn!("{coll}: {msg}");
    }
}
