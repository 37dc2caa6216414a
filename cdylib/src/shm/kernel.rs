//! `z := y ⊕ x` in one pass, for the op and types where it equals `MPI_Reduce_local` bit for
//! bit: `MPI_SUM` of `MPI_DOUBLE`, `MPI_FLOAT` (one IEEE addition, which commutes exactly),
//! `MPI_INT`, `MPI_LONG` (two's complement, wrapping as the MPIs' C loops do). The fold of a
//! slice starts with a copy and a `MPI_Reduce_local` otherwise (five streams of the slice);
//! this is three, as the one-core `z = x + y` bound counts them.

use crate::consts;
use crate::mpi_types::handle_bits;
use mpi_sys::*;

/// A one-pass `z := x ⊕ y` over `n` elements.
pub type Fused = unsafe fn(*const u8, *const u8, *mut u8, usize);

macro_rules! sum {
    ($name:ident, $t:ty, $add:expr) => {
        /// # Safety
        /// `x`, `y`, `z` point to `n` aligned elements; `z` overlaps neither input.
        unsafe fn $name(x: *const u8, y: *const u8, z: *mut u8, n: usize) {
            // SAFETY: the caller's guarantee (checked alignment, distinct memory).
            let (x, y, z) = unsafe {
                (
                    std::slice::from_raw_parts(x as *const $t, n),
                    std::slice::from_raw_parts(y as *const $t, n),
                    std::slice::from_raw_parts_mut(z as *mut $t, n),
                )
            };
            let add = $add;
            for ((z, x), y) in z.iter_mut().zip(x).zip(y) {
                *z = add(*x, *y);
            }
        }
    };
}

sum!(sum_f64, f64, |a: f64, b: f64| a + b);
sum!(sum_f32, f32, |a: f32, b: f32| a + b);
sum!(sum_i32, i32, |a: i32, b: i32| a.wrapping_add(b));
sum!(sum_i64, i64, |a: i64, b: i64| a.wrapping_add(b));

/// The fused kernel and its element size for (`op`, `dt`), if there is one.
pub fn fused(op: MPI_Op, dt: MPI_Datatype) -> Option<(Fused, usize)> {
    if handle_bits(op) != handle_bits(consts::op_sum()) {
        return None;
    }
    let d = handle_bits(dt);
    if d == handle_bits(consts::dt_double()) {
        Some((sum_f64, 8))
    } else if d == handle_bits(consts::dt_float()) {
        Some((sum_f32, 4))
    } else if d == handle_bits(consts::dt_int()) {
        Some((sum_i32, 4))
    } else if d == handle_bits(consts::dt_long())
        && std::mem::size_of::<std::os::raw::c_long>() == 8
    {
        Some((sum_i64, 8))
    } else {
        None
    }
}
