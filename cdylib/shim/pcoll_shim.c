/* Constants of the MPI C ABI that differ between MPI implementations (values, or macros
 * that are not Rust-visible through bindgen). Exported as link-time constants so that the
 * Rust code never hard-codes an ABI. */
#include <mpi.h>
#include "pcoll_gate.h"

void *const pcoll_c_in_place = MPI_IN_PLACE;
void *const pcoll_c_bottom = MPI_BOTTOM;

const MPI_Datatype pcoll_c_datatype_null = MPI_DATATYPE_NULL;
const MPI_Op pcoll_c_op_null = MPI_OP_NULL;
const MPI_Comm pcoll_c_comm_null = MPI_COMM_NULL;
const MPI_Comm pcoll_c_comm_world = MPI_COMM_WORLD;
const MPI_Comm pcoll_c_comm_self = MPI_COMM_SELF;
const MPI_Errhandler pcoll_c_errors_return = MPI_ERRORS_RETURN;

/* Datatypes and ops the benchmark and tools name (not all in mpi-sys). */
const MPI_Datatype pcoll_c_int = MPI_INT;
const MPI_Datatype pcoll_c_long = MPI_LONG;
const MPI_Datatype pcoll_c_float = MPI_FLOAT;
const MPI_Datatype pcoll_c_double = MPI_DOUBLE;
const MPI_Datatype pcoll_c_char = MPI_CHAR;
const MPI_Datatype pcoll_c_byte = MPI_BYTE;
const MPI_Datatype pcoll_c_packed = MPI_PACKED;
const MPI_Datatype pcoll_c_uint64 = MPI_UINT64_T;
const MPI_Datatype pcoll_c_double_int = MPI_DOUBLE_INT;
const MPI_Op pcoll_c_sum = MPI_SUM;
const MPI_Op pcoll_c_max = MPI_MAX;
const MPI_Op pcoll_c_min = MPI_MIN;
const MPI_Op pcoll_c_prod = MPI_PROD;
const MPI_Op pcoll_c_band = MPI_BAND;
const MPI_Op pcoll_c_bor = MPI_BOR;
const MPI_Op pcoll_c_minloc = MPI_MINLOC;
const MPI_Op pcoll_c_maxloc = MPI_MAXLOC;
const MPI_Op pcoll_c_replace = MPI_REPLACE;

const int pcoll_c_success = MPI_SUCCESS;
const int pcoll_c_err_buffer = MPI_ERR_BUFFER;
const int pcoll_c_err_count = MPI_ERR_COUNT;
const int pcoll_c_err_type = MPI_ERR_TYPE;
const int pcoll_c_err_root = MPI_ERR_ROOT;
const int pcoll_c_err_comm = MPI_ERR_COMM;
const int pcoll_c_err_op = MPI_ERR_OP;
const int pcoll_c_err_arg = MPI_ERR_ARG;
const int pcoll_c_err_intern = MPI_ERR_INTERN;
const int pcoll_c_err_other = MPI_ERR_OTHER;
const int pcoll_c_err_no_mem = MPI_ERR_NO_MEM;
const int pcoll_c_keyval_invalid = MPI_KEYVAL_INVALID;
const int pcoll_c_undefined = MPI_UNDEFINED;
const int pcoll_c_max_error_string = MPI_MAX_ERROR_STRING;

MPI_Comm_copy_attr_function *const pcoll_c_comm_null_copy_fn = MPI_COMM_NULL_COPY_FN;

#if defined(OPEN_MPI) && OPEN_MPI
const int pcoll_c_is_openmpi = 1;
#else
const int pcoll_c_is_openmpi = 0;
#endif

/* 1 if `op` is one of the predefined reduction ops valid for MPI_Reduce. */
int pcoll_c_op_is_predefined(MPI_Op op)
{
    return op == MPI_MAX || op == MPI_MIN || op == MPI_SUM || op == MPI_PROD || op == MPI_LAND ||
           op == MPI_BAND || op == MPI_LOR || op == MPI_BOR || op == MPI_LXOR || op == MPI_BXOR ||
           op == MPI_MINLOC || op == MPI_MAXLOC;
}

/* 1 if `op` is a logical op (MPI_LAND, MPI_LOR, MPI_LXOR) and `dt` a floating-point or
 * complex type: not defined by the standard. MPICH 4.0.2 accepts the pair in its argument
 * check and then aborts in the reduction ("Assertion failed in opland.c"), also inside
 * MPI_Reduce_local, so pcoll must recognise it without calling MPI. */
int pcoll_c_logical_op_on_float(MPI_Op op, MPI_Datatype dt)
{
    if (op != MPI_LAND && op != MPI_LOR && op != MPI_LXOR)
        return 0;
    if (dt == MPI_DATATYPE_NULL)
        return 0;
    return dt == MPI_FLOAT || dt == MPI_DOUBLE || dt == MPI_LONG_DOUBLE || dt == MPI_C_FLOAT_COMPLEX ||
           dt == MPI_C_DOUBLE_COMPLEX || dt == MPI_C_LONG_DOUBLE_COMPLEX || dt == MPI_REAL ||
           dt == MPI_DOUBLE_PRECISION || dt == MPI_COMPLEX || dt == MPI_DOUBLE_COMPLEX ||
           dt == MPI_REAL4 || dt == MPI_REAL8;
}

/* 1 if `dt` is a named (predefined) datatype. On the MPIs with MPI-4's large-count bindings
 * (MPICH 4.x/5.x, Intel MPI 2021) a type made by a large-count constructor
 * (MPI_Type_vector_c, ...; mpi4py makes them there) makes MPI_Type_get_envelope raise an
 * error on MPI_COMM_WORLD, fatal by default ("use MPI_Type_get_envelope_c"): the _c form
 * answers for every type. */
int pcoll_c_type_is_named(MPI_Datatype dt)
{
    int comb = 0;
#if defined(MPICH_VERSION) && MPI_VERSION >= 4
    MPI_Count ni, na, nc, nd;
    if (PMPI_Type_get_envelope_c(dt, &ni, &na, &nc, &nd, &comb) != MPI_SUCCESS)
        return 0;
#else
    int ni, na, nd;
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
#endif
    return comb == MPI_COMBINER_NAMED;
}

/* 1 if `op` is MPI_REPLACE or MPI_NO_OP (valid only for one-sided calls). */
int pcoll_c_op_is_rma_only(MPI_Op op)
{
    return op == MPI_REPLACE || op == MPI_NO_OP;
}

/* For the node layout (PCOLL_NODES). */
const int pcoll_c_comm_type_shared = MPI_COMM_TYPE_SHARED;
const MPI_Info pcoll_c_info_null = MPI_INFO_NULL;
const int pcoll_c_max_processor_name = MPI_MAX_PROCESSOR_NAME;
/* For the running implementation's name (pcoll::mpi::Mpi::detect). */
const int pcoll_c_max_library_version_string = MPI_MAX_LIBRARY_VERSION_STRING;

/* Non-blocking and persistent collectives (src/nbc.rs). */
const int pcoll_c_proc_null = MPI_PROC_NULL;
const int pcoll_c_tag_ub_key = MPI_TAG_UB;
const int pcoll_c_err_request = MPI_ERR_REQUEST;
const int pcoll_c_err_in_status = MPI_ERR_IN_STATUS;

/* The status of a completed collective request as the MPIs give it (an empty status:
 * MPI_ANY_SOURCE, MPI_ANY_TAG, no elements) over the stand-in's (a receive from
 * MPI_PROC_NULL: MPI_PROC_NULL as source). MPI_ERROR is left as the completion call set it. */
void pcoll_c_status_empty(MPI_Status *s)
{
    if (s == MPI_STATUS_IGNORE || s == MPI_STATUSES_IGNORE)
        return;
    s->MPI_SOURCE = MPI_ANY_SOURCE;
    s->MPI_TAG = MPI_ANY_TAG;
}

/* The status of a receive from MPI_PROC_NULL as the standard has it (source MPI_PROC_NULL,
 * tag MPI_ANY_TAG, count 0): MPICH 4.0.2 leaves source and tag 0 when a non-blocking one
 * completes (its blocking MPI_Recv has them right), and pcoll posts the non-blocking form of
 * a blocking receive while one of its schedules runs (cdylib/src/ffi/blocking.rs). */
void pcoll_c_status_proc_null(MPI_Status *s)
{
    if (s == MPI_STATUS_IGNORE || s == MPI_STATUSES_IGNORE)
        return;
    s->MPI_SOURCE = MPI_PROC_NULL;
    s->MPI_TAG = MPI_ANY_TAG;
    PMPI_Status_set_elements(s, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(s, 0);
}

/* The constants Rust must agree with (cdylib/src/gate.rs tests). */
long long pcoll_gate_abi(int what)
{
    switch (what) {
    case 0: return PCOLL_GATE_P;
    case 1: return PCOLL_GATE_R;
    case 2: return PCOLL_GATE_DECLINED;
    case 3: return G_NCOLL;
    case 10: return G_REDUCE;
    case 11: return G_ALLREDUCE;
    case 12: return G_REDUCE_SCATTER;
    case 13: return G_ALLGATHERV;
    case 14: return G_BCAST;
    case 15: return G_ALLGATHER;
    case 16: return G_REDUCE_SCATTER_BLOCK;
    case 20: return PCOLL_GUARD_ROOT_NONZERO_ABOVE;
    case 21: return PCOLL_GUARD_ONE_RANK;
    case 22: return PCOLL_GUARD_TRUE_LB;
    case 23: return PCOLL_GUARD_USER_OP;
    case 24: return PCOLL_GUARD_IN_PLACE;
    case 30: return PCOLL_MODE_CELLS;
    case 31: return PCOLL_MODE_NATIVE;
    case 32: return PCOLL_MODE_DECLINE;
    default: return -1;
    }
}
