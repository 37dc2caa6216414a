//! Facts about datatypes and ops, read through PMPI (never assumed).

use crate::consts;
use mpi_sys::*;
use std::os::raw::c_int;

extern "C" {
    fn pcoll_c_op_is_predefined(op: MPI_Op) -> c_int;
    fn pcoll_c_op_is_rma_only(op: MPI_Op) -> c_int;
    fn pcoll_c_logical_op_on_float(op: MPI_Op, dt: MPI_Datatype) -> c_int;
    fn pcoll_c_type_is_named(dt: MPI_Datatype) -> c_int;
    fn pcoll_c_type_in_order(dt: MPI_Datatype) -> c_int;
}

/// Layout of one element of a datatype.
#[derive(Clone, Copy, Debug)]
pub struct TypeFacts {
    /// Bytes of data (`MPI_Type_size`).
    pub size: usize,
    pub lb: isize,
    /// Distance between consecutive elements (`MPI_Type_get_extent`).
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
    /// The type has no holes but its typemap does not list the data in memory order (or
    /// that could not be shown: `pcoll_c_type_in_order`), e.g. `MPI_Type_indexed` of blocks
    /// {1, 1} at {1, 0}: packing it is not a copy of its bytes.
    pub permuted: bool,
}

impl TypeFacts {
    /// Data occupies exactly `size` bytes at offset 0 of each element, with no holes, in
    /// typemap order: the element's bytes are its packed form.
    pub fn contiguous(&self) -> bool {
        self.no_holes() && !self.permuted
    }
    /// The layout numbers alone: `size` bytes at offset 0, no holes (in some order).
    fn no_holes(&self) -> bool {
        self.lb == 0
            && self.true_lb == 0
            && self.extent as usize == self.size
            && self.true_extent as usize == self.size
    }
    /// Bytes of memory spanned by `n` elements starting at the element's base, from `true_lb`.
    pub fn span(&self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (n - 1) * self.extent as usize + self.true_extent as usize
        }
    }
}

/// Would the MPI send `count` elements of `dt`? For a derived type, the MPI's own send-path
/// check (`PMPI_Send` to `MPI_PROC_NULL` on `MPI_COMM_SELF`, errors returned; nothing is
/// read): an uncommitted type fails there as in the MPI's collectives, with each MPI's own
/// rule for count 0 (Open MPI refuses it, MPICH passes it). Named types always pass.
pub fn sendable(dt: MPI_Datatype, count: usize) -> bool {
    if is_named(dt) {
        return true;
    }
    let byte = 0u8;
    let n = count.min(1) as c_int;
    let comm = consts::comm_self();
    crate::comm::errors_returned(comm, || {
        // SAFETY: a send to MPI_PROC_NULL reads no data; `byte` only makes the buffer non-NULL.
        unsafe {
            PMPI_Send(
                &byte as *const u8 as *const std::os::raw::c_void,
                n,
                dt,
                consts::PROC_NULL(),
                0,
                comm,
            )
        }
    }) == consts::SUCCESS()
}

/// The true lower bound of `dt` alone (one PMPI call; for the native fast path).
#[allow(clippy::unnecessary_cast)] // MPI_Aint is isize on Open MPI, long (i64) on MPICH
pub fn true_lb(dt: MPI_Datatype) -> Option<isize> {
    let (mut tlb, mut text): (MPI_Aint, MPI_Aint) = (0, 0);
    // SAFETY: out-pointers to locals; an invalid handle yields an error code.
    let rc = unsafe { PMPI_Type_get_true_extent(dt, &mut tlb, &mut text) };
    (rc == consts::SUCCESS()).then_some(tlb as isize)
}

thread_local! {
    /// Facts of named (predefined) datatypes seen by this thread. A named type is never freed,
    /// so its handle never comes to mean another type: a hit is always right.
    static NAMED: std::cell::RefCell<Vec<(u64, TypeFacts)>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// `op_accepts` answers for (predefined op, named type) pairs seen by this thread.
    static OP_TYPE: std::cell::RefCell<Vec<(u64, u64, c_int)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Most entries of each per-thread cache (a program uses a handful of types and ops).
const CACHE_MAX: usize = 64;

/// A type's size, asked of the MPI (`None`: an error, or `MPI_DATATYPE_NULL`, which is not
/// asked: the error of a query goes to `MPI_COMM_WORLD`'s handler, by default fatal, where
/// the MPI's own collective reports `MPI_ERR_TYPE` to the communicator's; session 53's bug
/// hunt).
pub fn type_size(dt: MPI_Datatype) -> Option<MPI_Count> {
    let mut size: MPI_Count = 0;
    // SAFETY: an out-pointer to a local; the MPI judges the (non-null) handle.
    (dt != consts::datatype_null()
        && unsafe { PMPI_Type_size_x(dt, &mut size) } == consts::SUCCESS())
    .then_some(size)
}

pub fn type_facts(dt: MPI_Datatype) -> Result<TypeFacts, c_int> {
    if dt == consts::datatype_null() {
        return Err(consts::ERR_TYPE());
    }
    let bits = handle_bits(dt);
    let hit = NAMED
        .try_with(|c| c.borrow().iter().find(|e| e.0 == bits).map(|e| e.1))
        .ok()
        .flatten();
    if let Some(f) = hit {
        return Ok(f);
    }
    let mut f = query_type_facts(dt)?;
    let named = is_named(dt);
    // A derived type without holes: is it in typemap order? (Asked on each call: a derived
    // handle may be freed and its value reused for another type.)
    // SAFETY: reads the type's envelope and contents; frees what the contents returned.
    f.permuted = !named && f.no_holes() && unsafe { pcoll_c_type_in_order(dt) } == 0;
    if named {
        let _ = NAMED.try_with(|c| {
            let mut c = c.borrow_mut();
            if c.len() < CACHE_MAX {
                c.push((bits, f));
            }
        });
    }
    Ok(f)
}

#[allow(clippy::unnecessary_cast)] // MPI_Aint is isize on Open MPI, long (i64) on MPICH
fn query_type_facts(dt: MPI_Datatype) -> Result<TypeFacts, c_int> {
    let mut size: MPI_Count = 0;
    let (mut lb, mut extent, mut tlb, mut text): (MPI_Aint, MPI_Aint, MPI_Aint, MPI_Aint) =
        (0, 0, 0, 0);
    // SAFETY: out-pointers to locals; `dt` is checked by MPI, errors come back as codes.
    unsafe {
        let rc = PMPI_Type_size_x(dt, &mut size);
        if rc != consts::SUCCESS() {
            return Err(rc);
        }
        let rc = PMPI_Type_get_extent(dt, &mut lb, &mut extent);
        if rc != consts::SUCCESS() {
            return Err(rc);
        }
        let rc = PMPI_Type_get_true_extent(dt, &mut tlb, &mut text);
        if rc != consts::SUCCESS() {
            return Err(rc);
        }
    }
    if size < 0 {
        return Err(consts::ERR_TYPE());
    }
    Ok(TypeFacts {
        size: size as usize,
        lb: lb as isize,
        extent: extent as isize,
        true_lb: tlb as isize,
        true_extent: text as isize,
        permuted: false,
    })
}

/// Is the op commutative? `Err(code)` for an invalid op handle.
pub fn op_commutative(op: MPI_Op) -> Result<bool, c_int> {
    if op == consts::op_null() {
        return Err(consts::ERR_OP());
    }
    if op_is_predefined(op) {
        return Ok(true); // all predefined reduction ops are commutative
    }
    let mut c: c_int = 0;
    // SAFETY: out-pointer to a local.
    let rc = unsafe { PMPI_Op_commutative(op, &mut c) };
    if rc != consts::SUCCESS() {
        return Err(rc);
    }
    Ok(c != 0)
}

pub fn op_is_predefined(op: MPI_Op) -> bool {
    // SAFETY: pure comparison of handles in C.
    unsafe { pcoll_c_op_is_predefined(op) != 0 }
}

/// MPI_LAND/LOR/LXOR on a floating-point or complex type (undefined; MPICH 4.0.2 aborts on
/// it, even in `MPI_Reduce_local`). Pure handle comparisons.
pub fn logical_op_on_float(op: MPI_Op, dt: MPI_Datatype) -> bool {
    // SAFETY: pure comparison of handles in C.
    unsafe { pcoll_c_logical_op_on_float(op, dt) != 0 }
}

pub fn op_is_rma_only(op: MPI_Op) -> bool {
    // SAFETY: pure comparison of handles in C.
    unsafe { pcoll_c_op_is_rma_only(op) != 0 }
}

/// The bits of a handle (a pointer in Open MPI, an int in MPICH), for use as a cache key.
pub fn handle_bits<T: Copy>(h: T) -> u64 {
    let mut v = [0u8; 8];
    let n = std::mem::size_of::<T>().min(8);
    // SAFETY: copies the first `n <= size_of::<T>()` bytes of a plain handle value.
    unsafe { std::ptr::copy_nonoverlapping(&h as *const T as *const u8, v.as_mut_ptr(), n) };
    u64::from_le_bytes(v)
}

/// Is `dt` a named (predefined) type? (`MPI_Type_get_envelope`, its `_c` form where the MPI
/// has one: the plain form fails fatally for large-count constructed types on MPICH's ABI.)
pub(crate) fn is_named(dt: MPI_Datatype) -> bool {
    // SAFETY: reads the handle's envelope into locals of the C helper.
    unsafe { pcoll_c_type_is_named(dt) != 0 }
}

static OP_TYPE_OK: once_cell::sync::Lazy<
    parking_lot::Mutex<std::collections::HashMap<(u64, u64), c_int>>,
> = once_cell::sync::Lazy::new(Default::default);

/// Does the MPI accept `op` on `dt` for reductions? Checked with `PMPI_Reduce_local` on one
/// zeroed element for predefined ops (user ops accept any type and are never called here),
/// with `MPI_COMM_WORLD`'s error handler set to return for the probe. Cached for named types.
pub fn op_accepts(op: MPI_Op, dt: MPI_Datatype, f: &TypeFacts) -> Result<(), c_int> {
    if op_is_rma_only(op) || (cfg!(pcoll_mpich) && logical_op_on_float(op, dt)) {
        return Err(consts::ERR_OP());
    }
    if !op_is_predefined(op) || f.size == 0 {
        return Ok(());
    }
    let (ob, db) = (handle_bits(op), handle_bits(dt));
    let seen = OP_TYPE
        .try_with(|c| {
            c.borrow()
                .iter()
                .find(|e| e.0 == ob && e.1 == db)
                .map(|e| e.2)
        })
        .ok()
        .flatten();
    let named = seen.is_none() && is_named(dt);
    let key = (ob, db);
    let rc = match seen {
        Some(rc) => rc,
        None => {
            let known = if named {
                OP_TYPE_OK.lock().get(&key).copied()
            } else {
                None
            };
            let rc = known.unwrap_or_else(|| probe_reduce_local(op, dt, f));
            if named {
                OP_TYPE_OK.lock().insert(key, rc);
                let _ = OP_TYPE.try_with(|c| {
                    let mut c = c.borrow_mut();
                    if c.len() < CACHE_MAX {
                        c.push((ob, db, rc));
                    }
                });
            }
            rc
        }
    };
    if rc == consts::SUCCESS() {
        Ok(())
    } else {
        Err(rc)
    }
}

fn probe_reduce_local(op: MPI_Op, dt: MPI_Datatype, f: &TypeFacts) -> c_int {
    let span = f.span(1).max(1);
    let mut a = vec![0u64; span.div_ceil(8)];
    let mut b = vec![0u64; span.div_ceil(8)];
    let off = -f.true_lb;
    // SAFETY: both buffers hold one element's full true extent; the base pointer is shifted
    // by -true_lb so that the element's data lies inside the allocation.
    crate::comm::errors_returned(consts::comm_world(), || unsafe {
        let pa = (a.as_mut_ptr() as *mut u8).wrapping_offset(off) as *const std::os::raw::c_void;
        let pb = (b.as_mut_ptr() as *mut u8).wrapping_offset(off) as *mut std::os::raw::c_void;
        PMPI_Reduce_local(pa, pb, 1, dt, op)
    })
}
