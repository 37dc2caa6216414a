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

/// A one-pass `z := w := x ⊕ y` over `n` elements: an allreduce's owner of a slice writes its
/// result into its output cell (that the others copy) and its own receive buffer at once,
/// instead of copying it back out of the cell (one read of the slice less).
pub type Dual = unsafe fn(*const u8, *const u8, *mut u8, *mut u8, usize);

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

macro_rules! dual {
    ($name:ident, $t:ty, $add:expr) => {
        /// # Safety
        /// `x`, `y`, `z`, `w` point to `n` aligned elements; `w` overlaps nothing else; `z` is
        /// `x`, `y` or memory overlapping neither (each element is read before it is written).
        unsafe fn $name(x: *const u8, y: *const u8, z: *mut u8, w: *mut u8, n: usize) {
            let (x, y, z, w) = (x as *const $t, y as *const $t, z as *mut $t, w as *mut $t);
            let add = $add;
            for i in 0..n {
                // SAFETY: the caller's guarantee; element i is read before it is written.
                unsafe {
                    let v = add(*x.add(i), *y.add(i));
                    *z.add(i) = v;
                    *w.add(i) = v;
                }
            }
        }
    };
}

sum!(sum_f64, f64, |a: f64, b: f64| a + b);
sum!(sum_f32, f32, |a: f32, b: f32| a + b);
sum!(sum_i32, i32, |a: i32, b: i32| a.wrapping_add(b));
sum!(sum_i64, i64, |a: i64, b: i64| a.wrapping_add(b));

dual!(dual_f64, f64, |a: f64, b: f64| a + b);
dual!(dual_f32, f32, |a: f32, b: f32| a + b);
dual!(dual_i32, i32, |a: i32, b: i32| a.wrapping_add(b));
dual!(dual_i64, i64, |a: i64, b: i64| a.wrapping_add(b));

/// The fused kernel and its element size for (`op`, `dt`), if there is one.
pub fn fused(op: MPI_Op, dt: MPI_Datatype) -> Option<(Fused, usize)> {
    kernels(op, dt).map(|(f, _, size)| (f, size))
}

/// The dual-store kernel for (`op`, `dt`): exactly where [`fused`] has one.
pub fn dual(op: MPI_Op, dt: MPI_Datatype) -> Option<Dual> {
    kernels(op, dt).map(|(_, d, _)| d)
}

fn kernels(op: MPI_Op, dt: MPI_Datatype) -> Option<(Fused, Dual, usize)> {
    if handle_bits(op) != handle_bits(consts::op_sum()) {
        return None;
    }
    let d = handle_bits(dt);
    if d == handle_bits(consts::dt_double()) {
        Some((sum_f64, dual_f64, 8))
    } else if d == handle_bits(consts::dt_float()) {
        Some((sum_f32, dual_f32, 4))
    } else if d == handle_bits(consts::dt_int()) {
        Some((sum_i32, dual_i32, 4))
    } else if d == handle_bits(consts::dt_long())
        && std::mem::size_of::<std::os::raw::c_long>() == 8
    {
        Some((sum_i64, dual_i64, 8))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dual store writes `x + y` to both outputs, exactly as the one-output kernel does,
    /// also when its first output is one of the inputs (an allreduce in place).
    #[test]
    fn dual_matches_sum_in_place_too() {
        let n = 1003;
        let x: Vec<f64> = (0..n).map(|i| (i as f64) * 0.37 - 100.0).collect();
        let y: Vec<f64> = (0..n).map(|i| 1.0 / (i as f64 + 3.0)).collect();
        let mut want = vec![0f64; n];
        let (mut z, mut w) = (vec![0f64; n], vec![0f64; n]);
        let b = |v: &[f64]| v.as_ptr() as *const u8;
        // SAFETY: n aligned f64 at each, outputs distinct from the inputs.
        unsafe {
            sum_f64(b(&x), b(&y), want.as_mut_ptr() as *mut u8, n);
            dual_f64(
                b(&x),
                b(&y),
                z.as_mut_ptr() as *mut u8,
                w.as_mut_ptr() as *mut u8,
                n,
            );
        }
        let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&z), bits(&want));
        assert_eq!(bits(&w), bits(&want));
        // In place: z is x.
        let mut xz = x.clone();
        let mut w2 = vec![0f64; n];
        let p = xz.as_mut_ptr() as *mut u8;
        // SAFETY: z == x exactly (allowed), w distinct.
        unsafe { dual_f64(p, b(&y), p, w2.as_mut_ptr() as *mut u8, n) };
        assert_eq!(bits(&xz), bits(&want));
        assert_eq!(bits(&w2), bits(&want));
        // The integer kernels wrap as the MPIs' C loops do.
        let (a, c) = ([i32::MAX, -5, 7], [1i32, -6, 8]);
        let (mut z, mut w) = ([0i32; 3], [0i32; 3]);
        // SAFETY: 3 aligned i32 at each, distinct.
        unsafe {
            dual_i32(
                a.as_ptr() as *const u8,
                c.as_ptr() as *const u8,
                z.as_mut_ptr() as *mut u8,
                w.as_mut_ptr() as *mut u8,
                3,
            )
        };
        assert_eq!(z, [i32::MIN, -11, 15]);
        assert_eq!(w, z);
    }
}
