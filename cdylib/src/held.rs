//! The derived datatypes and user op a pending non-blocking or persistent call pcoll serves
//! keeps using after its initiation returned. The program may free them right away (legal:
//! "any pending operation that uses the datatype [op] will complete normally"); the MPIs keep
//! their own references, which a PMPI library cannot take. So a call pins them: the free of a
//! pinned handle (`MPI_Type_free`, `MPI_Op_free`, intercepted: [`type_free`], [`op_free`])
//! sets the caller's handle to the null handle and leaves the object to the last call that
//! holds it. The handle itself stays the one the program made (a user op's function is given
//! the caller's datatype handle, and may compare it with its own: c-tests/derived.c does), and
//! the MPI cannot give its value to another type or op meanwhile. Named types and predefined
//! ops are never freed and are not pinned.
//!
//! A free pcoll does not see (`PMPI_Type_free`: MPICH's `mpi_f08` binding frees the type it
//! made for an array section as soon as the initiation returns; a profiling tool's
//! `MPI_Type_free` wrapper) would still free a pinned type under the pending call: so a pin
//! of a type also holds a duplicate of it (`PMPI_Type_dup`), which keeps the original alive
//! in the MPI (a duplicate refers to its old type: Open MPI and MPICH count that reference)
//! until the last holder is done (session 53's bug hunt).

use crate::consts;
use crate::dispatch::Args;
use crate::mpi_types::{self, handle_bits};
use mpi_sys::*;
use parking_lot::Mutex;
use pcoll::Collective;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A datatype or op handle.
#[derive(Clone, Copy)]
enum Handle {
    Type(MPI_Datatype),
    Op(MPI_Op),
}

// SAFETY: a handle, passed to MPI by one thread at a time (under `PINS`' lock, or after it
// was taken out of the table).
unsafe impl Send for Handle {}

impl Handle {
    /// The table's key: the kind and the handle's bits.
    fn key(self) -> (bool, u64) {
        match self {
            Handle::Type(t) => (false, handle_bits(t)),
            Handle::Op(o) => (true, handle_bits(o)),
        }
    }

    /// Free the object through the MPI.
    fn free(self) {
        // SAFETY: the program freed this handle while a call held it; that call is done.
        unsafe {
            match self {
                Handle::Type(mut t) => PMPI_Type_free(&mut t),
                Handle::Op(mut o) => PMPI_Op_free(&mut o),
            };
        }
    }
}

/// What one pending call holds (pinned), released on drop.
#[derive(Default)]
pub struct Held(Vec<Handle>);

/// Pin the call's derived types and user op for as long as the returned value lives.
pub fn hold(a: &Args) -> Held {
    let mut h = Vec::new();
    let mut derived = |t: MPI_Datatype| {
        if t != consts::datatype_null() && !mpi_types::is_named(t) {
            h.push(Handle::Type(t));
        }
    };
    derived(a.dt);
    if a.coll.base() == Collective::Allgatherv && !a.in_place() && a.sendtype != a.dt {
        derived(a.sendtype);
    }
    if a.coll.reduces() && a.op != consts::op_null() && !mpi_types::op_is_predefined(a.op) {
        h.push(Handle::Op(a.op));
    }
    for &x in &h {
        pin(x);
    }
    Held(h)
}

impl Drop for Held {
    fn drop(&mut self) {
        for &x in &self.0 {
            unpin(x);
        }
    }
}

/// A pinned handle.
struct Pin {
    handle: Handle,
    /// Pending calls holding it.
    holders: usize,
    /// The program freed it: freed by its last holder.
    freed: bool,
    /// A type's duplicate, holding the MPI's reference to it (null for ops).
    keep: MPI_Datatype,
}

// SAFETY: as `Handle`'s: the duplicate is passed to MPI under `PINS`' lock or after it was
// taken out of the table.
unsafe impl Send for Pin {}

/// A duplicate of a pinned type (see the module's note); for an op, or if the MPI refuses
/// the duplicate (the call then goes on as before: frees pcoll sees are still deferred), the
/// null type.
fn keep_alive(handle: Handle) -> MPI_Datatype {
    let mut dup = consts::datatype_null();
    if let Handle::Type(t) = handle {
        // SAFETY: a derived type the program passed to a call being initiated.
        if unsafe { PMPI_Type_dup(t, &mut dup) } != consts::SUCCESS() {
            dup = consts::datatype_null();
        }
    }
    dup
}

/// Free a pin's duplicate.
fn release(mut keep: MPI_Datatype) {
    if keep != consts::datatype_null() {
        // SAFETY: the duplicate `keep_alive` made, freed once.
        unsafe { PMPI_Type_free(&mut keep) };
    }
}

static PINS: Mutex<Vec<Pin>> = parking_lot::const_mutex(Vec::new());
/// Handles pinned (0: the frees go straight to the MPI).
static PINNED: AtomicUsize = AtomicUsize::new(0);

fn pin(handle: Handle) {
    let key = handle.key();
    let mut pins = PINS.lock();
    match pins.iter_mut().find(|e| e.handle.key() == key) {
        Some(e) => e.holders += 1,
        None => {
            pins.push(Pin {
                handle,
                holders: 1,
                freed: false,
                keep: keep_alive(handle),
            });
            PINNED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn unpin(handle: Handle) {
    let key = handle.key();
    let (freed, keep) = {
        let mut pins = PINS.lock();
        let Some(i) = pins.iter().position(|e| e.handle.key() == key) else {
            return;
        };
        pins[i].holders -= 1;
        if pins[i].holders > 0 {
            return;
        }
        let e = pins.swap_remove(i);
        PINNED.fetch_sub(1, Ordering::Relaxed);
        (e.freed.then_some(e.handle), e.keep)
    };
    if let Some(h) = freed {
        h.free();
    }
    release(keep);
}

/// A free of `handle` by the program: `true` if it is pinned (then marked, to be freed by
/// its last holder); `false`: the caller frees it through the MPI.
fn defer(handle: Handle) -> bool {
    if PINNED.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let key = handle.key();
    let mut pins = PINS.lock();
    match pins.iter_mut().find(|e| e.handle.key() == key && !e.freed) {
        Some(e) => {
            e.freed = true;
            true
        }
        None => false,
    }
}

/// The program's free of `*h` (`MPI_Type_free`, `MPI_Op_free`): a pinned handle is left to
/// its last holder and the caller's handle set to `null`; any other goes to `pmpi`.
///
/// # Safety
/// `h` is the caller's argument of that free.
unsafe fn free_or_defer<H: Copy>(
    h: *mut H,
    handle: fn(H) -> Handle,
    null: H,
    pmpi: unsafe extern "C" fn(*mut H) -> c_int,
) -> c_int {
    // SAFETY: read only if non-null: the caller's handle.
    if !h.is_null() && defer(handle(unsafe { *h })) {
        // SAFETY: the caller's handle, set as the MPI's free sets it.
        unsafe { *h = null };
        return consts::SUCCESS();
    }
    // SAFETY: forwarded unchanged.
    unsafe { pmpi(h) }
}

/// `MPI_Type_free` (see [`free_or_defer`]).
///
/// # Safety
/// `t` is the caller's `MPI_Type_free` argument.
pub unsafe fn type_free(t: *mut MPI_Datatype) -> c_int {
    // SAFETY: the caller's guarantee.
    unsafe { free_or_defer(t, Handle::Type, consts::datatype_null(), PMPI_Type_free) }
}

/// `MPI_Op_free` (see [`free_or_defer`]).
///
/// # Safety
/// `op` is the caller's `MPI_Op_free` argument.
pub unsafe fn op_free(op: *mut MPI_Op) -> c_int {
    // SAFETY: the caller's guarantee.
    unsafe { free_or_defer(op, Handle::Op, consts::op_null(), PMPI_Op_free) }
}
