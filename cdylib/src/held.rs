//! The datatypes and user op a pending non-blocking or persistent call pcoll serves keeps
//! using after its initiation returned. The program may free them right away (legal: "any
//! pending operation that uses the datatype [op] will complete normally"), and the MPIs keep
//! their own references, which a PMPI library cannot take. So a derived datatype is
//! duplicated (`MPI_Type_dup`) at initiation and the duplicate freed when the call is done
//! with it; a user op, which cannot be duplicated, is pinned: `MPI_Op_free` (intercepted,
//! [`op_free`]) of a pinned op sets the handle to `MPI_OP_NULL` and frees it with the last
//! call that holds it. Named types and predefined ops are never freed and are not held.

use crate::consts;
use crate::dispatch::Args;
use crate::mpi_types::{self, handle_bits};
use mpi_sys::*;
use parking_lot::Mutex;
use pcoll::Collective;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What one pending call holds: its own duplicates of the caller's derived types, and a
/// pin of its user op; released on drop.
#[derive(Default)]
pub struct Held {
    types: Vec<MPI_Datatype>,
    op: Option<MPI_Op>,
}

// SAFETY: handles only, passed to MPI by whichever thread completes or frees the call (as
// the call itself is, see `dispatch::nb::Planned`).
unsafe impl Send for Held {}

/// Hold the call's types and op: the derived types in `a` are replaced by duplicates (the
/// same duplicate where send and receive type are one handle). A duplicate the MPI refuses
/// leaves the caller's handle in place (used as before, valid unless freed while pending).
pub fn hold(a: &mut Args) -> Held {
    let mut h = Held::default();
    let user = a.dt;
    if let Some(d) = dup(user) {
        a.dt = d;
        h.types.push(d);
    }
    if a.coll.base() == Collective::Allgatherv && !a.in_place() {
        if a.sendtype == user {
            a.sendtype = a.dt;
        } else if let Some(d) = dup(a.sendtype) {
            a.sendtype = d;
            h.types.push(d);
        }
    }
    if a.coll.reduces() && a.op != consts::op_null() && !mpi_types::op_is_predefined(a.op) {
        pin(a.op);
        h.op = Some(a.op);
    }
    h
}

fn dup(t: MPI_Datatype) -> Option<MPI_Datatype> {
    if t == consts::datatype_null() || mpi_types::is_named(t) {
        return None;
    }
    let mut d = std::mem::MaybeUninit::<MPI_Datatype>::uninit();
    // SAFETY: a committed type the call was validated with; the duplicate is committed.
    (unsafe { PMPI_Type_dup(t, d.as_mut_ptr()) } == consts::SUCCESS())
        // SAFETY: written on success.
        .then(|| unsafe { d.assume_init() })
}

impl Drop for Held {
    fn drop(&mut self) {
        for t in &mut self.types {
            // SAFETY: our own duplicate, no longer used by the call.
            unsafe { PMPI_Type_free(t) };
        }
        if let Some(op) = self.op {
            unpin(op);
        }
    }
}

/// A pinned user op.
struct Pin {
    bits: u64,
    op: OpHandle,
    /// Pending calls holding it.
    holders: usize,
    /// The program freed it (`MPI_Op_free`): freed by its last holder.
    freed: bool,
}

struct OpHandle(MPI_Op);
// SAFETY: a handle, passed to MPI by one thread at a time (under `PINS`' lock or after).
unsafe impl Send for OpHandle {}

static PINS: Mutex<Vec<Pin>> = parking_lot::const_mutex(Vec::new());
/// Ops pinned (0: `MPI_Op_free` goes straight to the MPI).
static PINNED: AtomicUsize = AtomicUsize::new(0);

fn pin(op: MPI_Op) {
    let bits = handle_bits(op);
    let mut pins = PINS.lock();
    match pins.iter_mut().find(|e| e.bits == bits) {
        Some(e) => e.holders += 1,
        None => {
            pins.push(Pin {
                bits,
                op: OpHandle(op),
                holders: 1,
                freed: false,
            });
            PINNED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn unpin(op: MPI_Op) {
    let bits = handle_bits(op);
    let freed = {
        let mut pins = PINS.lock();
        let Some(i) = pins.iter().position(|e| e.bits == bits) else {
            return;
        };
        pins[i].holders -= 1;
        if pins[i].holders > 0 {
            return;
        }
        let e = pins.swap_remove(i);
        PINNED.fetch_sub(1, Ordering::Relaxed);
        e.freed.then_some(e.op)
    };
    if let Some(OpHandle(mut op)) = freed {
        // SAFETY: the program freed this op while a call held it; that call is done.
        unsafe { PMPI_Op_free(&mut op) };
    }
}

/// `MPI_Op_free`: a pinned op is marked for freeing by its last holder and the caller's
/// handle set to `MPI_OP_NULL`; any other goes to the MPI.
///
/// # Safety
/// `op` is the caller's `MPI_Op_free` argument.
pub unsafe fn op_free(op: *mut MPI_Op) -> c_int {
    if PINNED.load(Ordering::Relaxed) > 0 && !op.is_null() {
        // SAFETY: non-null: the caller's handle.
        let b = handle_bits(unsafe { *op });
        let mut pins = PINS.lock();
        if let Some(e) = pins.iter_mut().find(|e| e.bits == b && !e.freed) {
            e.freed = true;
            // SAFETY: the caller's handle, set as MPI_Op_free sets it.
            unsafe { *op = consts::op_null() };
            return consts::SUCCESS();
        }
    }
    // SAFETY: forwarded unchanged.
    unsafe { PMPI_Op_free(op) }
}
