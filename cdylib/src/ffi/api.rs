//! pcoll's own C API, declared in `include/pcoll.h` (kept in sync by `tests/header.rs`).

use super::guard;
use crate::state;
use pcoll::{Algorithm, Collective, Pick};
use std::ffi::{c_char, c_double, c_int, c_longlong, c_ulonglong, CStr};

pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// Read a C string argument (`None` for null or invalid UTF-8).
///
/// # Safety
/// `s` is null or a NUL-terminated string.
unsafe fn arg<'a>(s: *const c_char) -> Option<&'a str> {
    if s.is_null() {
        return None;
    }
    // SAFETY: caller guarantees NUL termination.
    unsafe { CStr::from_ptr(s) }.to_str().ok()
}

/// `"0.1.0"`: the library's version.
#[no_mangle]
pub extern "C" fn pcoll_version() -> *const c_char {
    VERSION.as_ptr() as *const c_char
}

/// Force `algorithm` for `collective` from now on (NULL or "" algorithm: back to the
/// environment and table). Collective: all ranks of a communicator must agree.
/// Returns 0, -1 for an unknown collective, -2 for an algorithm that does not exist for it.
///
/// # Safety
///
/// `collective` and `algorithm` are each NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pcoll_force(collective: *const c_char, algorithm: *const c_char) -> c_int {
    guard("pcoll_force", || {
        // SAFETY: C strings from the caller.
        let (c, a) = unsafe { (arg(collective), arg(algorithm)) };
        let Some(coll) = c.and_then(|c| c.parse::<Collective>().ok()) else {
            return -1;
        };
        match a {
            None | Some("") => {
                state::force(coll, None);
                0
            }
            Some(name) => match name.parse::<Pick>() {
                Ok(pick) if pick.available(coll) => {
                    state::force(coll, Some(pick));
                    0
                }
                _ => -2,
            },
        }
    })
}

/// Segment size in bytes for the segmented algorithms (pipeline, greedy, greedy_uni,
/// circulant) from now on, above `PCOLL_SEGMENT` and the tuning table's `segment`; 0 goes
/// back to them (and to the cost model's choice). Collective: all ranks of a communicator
/// must set the same. Returns 0, or -1 for a negative or too large value (nothing changes).
#[no_mangle]
pub extern "C" fn pcoll_segment(bytes: c_longlong) -> c_int {
    guard("pcoll_segment", || match usize::try_from(bytes) {
        Ok(0) => {
            state::set_segment(None);
            0
        }
        Ok(b) if b <= pcoll::tuning::MAX_SEGMENT => {
            state::set_segment(Some(b));
            0
        }
        _ => -1,
    })
}

/// Name of the algorithm that served the last call of `collective` in this process
/// ("" if none yet; NULL for an unknown collective). The string is static. `ireduce`,
/// `iallreduce`, ...: the last non-blocking or persistent call of that collective.
///
/// # Safety
///
/// `collective` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn pcoll_last_algorithm(collective: *const c_char) -> *const c_char {
    // SAFETY: C string from the caller.
    let Some(name) = (unsafe { arg(collective) }) else {
        return std::ptr::null();
    };
    // `ireduce`, `iallreduce`, ...: the last non-blocking or persistent call.
    let (nb, coll) = match name.parse::<Collective>() {
        Ok(c) => (false, c),
        Err(_) => match name.strip_prefix('i').map(|n| n.parse::<Collective>()) {
            Some(Ok(c)) => (true, c),
            _ => return std::ptr::null(),
        },
    };
    match if nb {
        state::last_nb(coll)
    } else {
        state::last(coll)
    } {
        None => c"".as_ptr(),
        Some(a) => static_name(a),
    }
}

fn static_name(a: Algorithm) -> *const c_char {
    match a {
        Algorithm::Native => c"native".as_ptr(),
        Algorithm::Binomial => c"binomial".as_ptr(),
        Algorithm::Pipeline => c"pipeline".as_ptr(),
        Algorithm::Greedy => c"greedy".as_ptr(),
        Algorithm::GreedyUni => c"greedy_uni".as_ptr(),
        Algorithm::Circulant => c"circulant".as_ptr(),
        Algorithm::Butterfly => c"butterfly".as_ptr(),
        Algorithm::Ring => c"ring".as_ptr(),
        Algorithm::Hier => c"hier".as_ptr(),
        Algorithm::HierMl => c"hier_ml".as_ptr(),
        Algorithm::ScatterAllgather => c"scatter_allgather".as_ptr(),
        Algorithm::Shm => c"shm".as_ptr(),
        Algorithm::Binary => c"binary".as_ptr(),
        Algorithm::Fibonacci => c"fibonacci".as_ptr(),
    }
}

/// Statistics of this process for one collective and algorithm. Any out-pointer may be NULL.
/// Returns 0, or -1 for an unknown collective or algorithm.
///
/// # Safety
///
/// `collective` and `algorithm` are each NULL or a NUL-terminated string; `calls`, `bytes`
/// and `time_us` are each NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn pcoll_stats(
    collective: *const c_char,
    algorithm: *const c_char,
    calls: *mut c_ulonglong,
    bytes: *mut c_ulonglong,
    time_us: *mut c_double,
) -> c_int {
    guard("pcoll_stats", || {
        // SAFETY: C strings from the caller.
        let (c, a) = unsafe { (arg(collective), arg(algorithm)) };
        let (Some(coll), Some(alg)) = (
            c.and_then(|c| c.parse::<Collective>().ok()),
            a.and_then(|a| a.parse::<Algorithm>().ok()),
        ) else {
            return -1;
        };
        let s = state::stat(coll, alg);
        // SAFETY: each pointer is null or writable, per the API.
        unsafe {
            if !calls.is_null() {
                *calls = s.calls;
            }
            if !bytes.is_null() {
                *bytes = s.bytes;
            }
            if !time_us.is_null() {
                *time_us = s.time_us;
            }
        }
        0
    })
}

/// Reset this process's statistics.
#[no_mangle]
pub extern "C" fn pcoll_stats_reset() {
    let _ = guard("pcoll_stats_reset", || {
        state::reset_stats();
        0
    });
}
