/* Constants of the MPI C ABI that differ between MPI implementations (values, or macros
 * that are not Rust-visible through bindgen). Exported as link-time constants so that the
 * Rust code never hard-codes an ABI. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
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
    case 4: return G_NHOT;
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
    case 40: return memo_line(G_REDUCE, 1);
    case 41: return memo_line(G_BCAST, 2);
    case 42: return memo_line(G_REDUCE, 0);
    case 43: return memo_line(G_ALLREDUCE, -1);
    default: return -1;
    }
}

/* ------------------------------------------------------------------ typemap order
 * 1 if the data of one element of `dt`, in typemap order (the order MPI_Pack writes them),
 * lie at increasing addresses with no overlap: then a type without holes (size = extent =
 * true extent, lower bounds 0, checked by the caller) packs to exactly its memory bytes and
 * may be moved as bytes where ranks describe the data with different types. Read from the
 * type's constructor (envelope and contents), recursively; 0 whenever that is not shown
 * (subarray and darray types, large-count constructors, nesting deeper than 16, an error):
 * 0 only costs a pack through a staging buffer. */
static int in_order_at(MPI_Datatype dt, int depth);

/* Free a type returned by MPI_Type_get_contents (named ones are not freed). */
static void free_contents_type(MPI_Datatype t)
{
    if (!pcoll_c_type_is_named(t))
        PMPI_Type_free(&t);
}

/* The blocks (byte displacement, count of `types[j]`) in order: each block's type in order,
 * its copies one after another, and each block after the one before. */
static int blocks_in_order(int n, const MPI_Aint *disp, const MPI_Count *len, const MPI_Datatype *types,
                           int depth)
{
    MPI_Aint end = 0, lb = 0, ext = 0, tlb = 0, text = 0;
    MPI_Count size = 0;
    int first = 1, known = 0; /* the facts above are of types[known - 1] (one type: asked once) */
    for (int j = 0; j < n; j++) {
        if (len[j] == 0)
            continue;
        if (!known || types[j] != types[known - 1]) {
            if (PMPI_Type_size_x(types[j], &size) != MPI_SUCCESS || PMPI_Type_get_extent(types[j], &lb, &ext) != MPI_SUCCESS ||
                PMPI_Type_get_true_extent(types[j], &tlb, &text) != MPI_SUCCESS)
                return 0;
            if (size > 0 && !in_order_at(types[j], depth + 1))
                return 0;
            known = j + 1;
        }
        if (size == 0)
            continue;
        if (len[j] < 0 || (len[j] > 1 && (ext <= 0 || text > ext)))
            return 0;
        MPI_Aint start = disp[j] + tlb;
        if (!first && start < end)
            return 0;
        end = disp[j] + (MPI_Aint)(len[j] - 1) * ext + tlb + text;
        first = 0;
    }
    return 1;
}

/* The blocks of a vector, indexed or struct constructor as (byte displacement, count,
 * type), in order, from its contents (`ext`: the extent of its old type), then whether they
 * are in order. Vectors: equal blocks at one stride, so the first two show the order of all. */
static int constructor_in_order(int comb, const int *ints, const MPI_Aint *addrs, const MPI_Datatype *types,
                                MPI_Aint ext, int depth)
{
    int n = ints[0], ok = 0;
    if ((comb == MPI_COMBINER_VECTOR || comb == MPI_COMBINER_HVECTOR) && n > 2)
        n = 2;
    if (n < 0)
        return 0;
    MPI_Aint *disp = malloc(sizeof(MPI_Aint) * (n ? n : 1));
    MPI_Count *len = malloc(sizeof(MPI_Count) * (n ? n : 1));
    MPI_Datatype *bt = malloc(sizeof(MPI_Datatype) * (n ? n : 1));
    if (disp && len && bt) {
        for (int j = 0; j < n; j++) {
            bt[j] = comb == MPI_COMBINER_STRUCT ? types[j] : types[0];
            switch (comb) {
            case MPI_COMBINER_VECTOR:
                len[j] = ints[1], disp[j] = (MPI_Aint)j * ints[2] * ext;
                break;
            case MPI_COMBINER_HVECTOR:
                len[j] = ints[1], disp[j] = (MPI_Aint)j * addrs[0];
                break;
            case MPI_COMBINER_INDEXED_BLOCK:
                len[j] = ints[1], disp[j] = (MPI_Aint)ints[2 + j] * ext;
                break;
            case MPI_COMBINER_HINDEXED_BLOCK:
                len[j] = ints[1], disp[j] = addrs[j];
                break;
            case MPI_COMBINER_INDEXED:
                len[j] = ints[1 + j], disp[j] = (MPI_Aint)ints[1 + n + j] * ext;
                break;
            default: /* HINDEXED, STRUCT */
                len[j] = ints[1 + j], disp[j] = addrs[j];
                break;
            }
        }
        ok = blocks_in_order(n, disp, len, bt, depth);
    }
    free(disp), free(len), free(bt);
    return ok;
}

/* The combiner `comb` of `dt` (one this walk knows, with ni/na/nd contents) in order. */
static int contents_in_order(MPI_Datatype dt, int comb, int ni, int na, int nd, int depth)
{
    int *ints = malloc(sizeof(int) * (ni ? ni : 1));
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (na ? na : 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (nd ? nd : 1));
    int ok = 0, got = 0;
    MPI_Aint lb, ext;
    if (!ints || !addrs || !types || PMPI_Type_get_contents(dt, ni, na, nd, ints, addrs, types) != MPI_SUCCESS)
        goto out;
    got = 1;
    if (nd < 1 || PMPI_Type_get_extent(types[0], &lb, &ext) != MPI_SUCCESS)
        goto out;
    if (comb == MPI_COMBINER_DUP || comb == MPI_COMBINER_RESIZED) {
        ok = in_order_at(types[0], depth + 1);
    } else if (comb == MPI_COMBINER_CONTIGUOUS) {
        MPI_Aint d = 0;
        MPI_Count c = ints[0];
        ok = blocks_in_order(1, &d, &c, types, depth);
    } else {
        ok = constructor_in_order(comb, ints, addrs, types, ext, depth);
    }
out:
    if (got)
        for (int j = 0; j < nd; j++)
            free_contents_type(types[j]);
    free(ints), free(addrs), free(types);
    return ok;
}

static int in_order_at(MPI_Datatype dt, int depth)
{
    int ni, na, nd, comb = 0;
#if defined(MPICH_VERSION) && MPI_VERSION >= 4
    MPI_Count cni, cna, cnc, cnd;
    if (PMPI_Type_get_envelope_c(dt, &cni, &cna, &cnc, &cnd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
    if (cnc != 0 || cni > INT_MAX || cna > INT_MAX || cnd > INT_MAX)
        return 0; /* a large-count constructor */
    ni = (int)cni, na = (int)cna, nd = (int)cnd;
#else
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
#endif
    switch (comb) {
    case MPI_COMBINER_F90_REAL:
    case MPI_COMBINER_F90_COMPLEX:
    case MPI_COMBINER_F90_INTEGER:
        return 1; /* predefined types with parameters */
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
    case MPI_COMBINER_STRUCT:
        return depth <= 16 && contents_in_order(dt, comb, ni, na, nd, depth);
    default:
        return 0; /* subarray, darray, or one this walk does not know */
    }
}

int pcoll_c_type_in_order(MPI_Datatype dt)
{
    return in_order_at(dt, 0);
}
