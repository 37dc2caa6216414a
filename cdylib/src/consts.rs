//! MPI constants taken from the C shim (`shim/pcoll_shim.c`), so no ABI value is hard-coded.
#![allow(non_upper_case_globals, non_snake_case)]

use mpi_sys::{
    MPI_Comm, MPI_Comm_copy_attr_function, MPI_Datatype, MPI_Errhandler, MPI_Info, MPI_Op,
};
use std::os::raw::{c_int, c_void};

/// Which MPI this crate is built against, `"openmpi"` or `"mpich"` (build.rs sets the
/// `pcoll_openmpi` / `pcoll_mpich` cfg, which crates depending on this one do not see).
pub const MPI_NAME: &str = if cfg!(pcoll_mpich) {
    "mpich"
} else {
    "openmpi"
};

extern "C" {
    static pcoll_c_in_place: *const c_void;
    static pcoll_c_bottom: *const c_void;
    static pcoll_c_datatype_null: MPI_Datatype;
    static pcoll_c_op_null: MPI_Op;
    static pcoll_c_comm_null: MPI_Comm;
    static pcoll_c_comm_world: MPI_Comm;
    static pcoll_c_comm_self: MPI_Comm;
    static pcoll_c_errors_return: MPI_Errhandler;
    static pcoll_c_int: MPI_Datatype;
    static pcoll_c_long: MPI_Datatype;
    static pcoll_c_float: MPI_Datatype;
    static pcoll_c_double: MPI_Datatype;
    static pcoll_c_char: MPI_Datatype;
    static pcoll_c_byte: MPI_Datatype;
    static pcoll_c_packed: MPI_Datatype;
    static pcoll_c_uint64: MPI_Datatype;
    static pcoll_c_double_int: MPI_Datatype;
    static pcoll_c_sum: MPI_Op;
    static pcoll_c_max: MPI_Op;
    static pcoll_c_min: MPI_Op;
    static pcoll_c_prod: MPI_Op;
    static pcoll_c_band: MPI_Op;
    static pcoll_c_bor: MPI_Op;
    static pcoll_c_minloc: MPI_Op;
    static pcoll_c_maxloc: MPI_Op;
    static pcoll_c_replace: MPI_Op;
    static pcoll_c_success: c_int;
    static pcoll_c_err_buffer: c_int;
    static pcoll_c_err_count: c_int;
    static pcoll_c_err_type: c_int;
    static pcoll_c_err_root: c_int;
    static pcoll_c_err_comm: c_int;
    static pcoll_c_err_op: c_int;
    static pcoll_c_err_arg: c_int;
    static pcoll_c_err_intern: c_int;
    static pcoll_c_err_other: c_int;
    static pcoll_c_err_no_mem: c_int;
    static pcoll_c_keyval_invalid: c_int;
    static pcoll_c_undefined: c_int;
    static pcoll_c_comm_null_copy_fn: MPI_Comm_copy_attr_function;
    static pcoll_c_comm_type_shared: c_int;
    static pcoll_c_info_null: MPI_Info;
    static pcoll_c_max_processor_name: c_int;
    static pcoll_c_max_library_version_string: c_int;
    static pcoll_c_proc_null: c_int;
    static pcoll_c_tag_ub_key: c_int;
    static pcoll_c_err_request: c_int;
    static pcoll_c_err_in_status: c_int;
}

macro_rules! getter {
    ($($name:ident: $ty:ty = $sym:ident;)*) => {
        $(
            #[inline]
            pub fn $name() -> $ty {
                // SAFETY: a constant defined once in the C shim, never written.
                unsafe { $sym }
            }
        )*
    };
}

getter! {
    in_place: *const c_void = pcoll_c_in_place;
    bottom: *const c_void = pcoll_c_bottom;
    datatype_null: MPI_Datatype = pcoll_c_datatype_null;
    op_null: MPI_Op = pcoll_c_op_null;
    comm_null: MPI_Comm = pcoll_c_comm_null;
    comm_world: MPI_Comm = pcoll_c_comm_world;
    comm_self: MPI_Comm = pcoll_c_comm_self;
    errors_return: MPI_Errhandler = pcoll_c_errors_return;
    dt_int: MPI_Datatype = pcoll_c_int;
    dt_long: MPI_Datatype = pcoll_c_long;
    dt_float: MPI_Datatype = pcoll_c_float;
    dt_double: MPI_Datatype = pcoll_c_double;
    dt_char: MPI_Datatype = pcoll_c_char;
    dt_byte: MPI_Datatype = pcoll_c_byte;
    dt_packed: MPI_Datatype = pcoll_c_packed;
    dt_uint64: MPI_Datatype = pcoll_c_uint64;
    dt_double_int: MPI_Datatype = pcoll_c_double_int;
    op_sum: MPI_Op = pcoll_c_sum;
    op_max: MPI_Op = pcoll_c_max;
    op_min: MPI_Op = pcoll_c_min;
    op_prod: MPI_Op = pcoll_c_prod;
    op_band: MPI_Op = pcoll_c_band;
    op_bor: MPI_Op = pcoll_c_bor;
    op_minloc: MPI_Op = pcoll_c_minloc;
    op_maxloc: MPI_Op = pcoll_c_maxloc;
    op_replace: MPI_Op = pcoll_c_replace;
    SUCCESS: c_int = pcoll_c_success;
    ERR_BUFFER: c_int = pcoll_c_err_buffer;
    ERR_COUNT: c_int = pcoll_c_err_count;
    ERR_TYPE: c_int = pcoll_c_err_type;
    ERR_ROOT: c_int = pcoll_c_err_root;
    ERR_COMM: c_int = pcoll_c_err_comm;
    ERR_OP: c_int = pcoll_c_err_op;
    ERR_ARG: c_int = pcoll_c_err_arg;
    ERR_INTERN: c_int = pcoll_c_err_intern;
    ERR_OTHER: c_int = pcoll_c_err_other;
    ERR_NO_MEM: c_int = pcoll_c_err_no_mem;
    KEYVAL_INVALID: c_int = pcoll_c_keyval_invalid;
    UNDEFINED: c_int = pcoll_c_undefined;
    comm_null_copy_fn: MPI_Comm_copy_attr_function = pcoll_c_comm_null_copy_fn;
    COMM_TYPE_SHARED: c_int = pcoll_c_comm_type_shared;
    info_null: MPI_Info = pcoll_c_info_null;
    MAX_PROCESSOR_NAME: c_int = pcoll_c_max_processor_name;
    MAX_LIBRARY_VERSION_STRING: c_int = pcoll_c_max_library_version_string;
    PROC_NULL: c_int = pcoll_c_proc_null;
    TAG_UB_KEY: c_int = pcoll_c_tag_ub_key;
    ERR_REQUEST: c_int = pcoll_c_err_request;
    ERR_IN_STATUS: c_int = pcoll_c_err_in_status;
}

/// Open MPI's Fortran `MPI_IN_PLACE` / `MPI_BOTTOM`: addresses of common blocks in libmpi.
#[cfg(pcoll_openmpi)]
pub mod fortran {
    use std::os::raw::c_void;
    extern "C" {
        static mpi_fortran_in_place_: u8;
        static mpi_fortran_bottom_: u8;
    }
    pub fn in_place() -> *const c_void {
        // Only the address of the extern static is taken, never its value.
        std::ptr::addr_of!(mpi_fortran_in_place_) as *const c_void
    }
    pub fn bottom() -> *const c_void {
        std::ptr::addr_of!(mpi_fortran_bottom_) as *const c_void
    }
}
