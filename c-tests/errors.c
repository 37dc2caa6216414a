/* errors.c -- argument errors under MPI_ERRORS_RETURN.
 *
 * Prints one line `ERRCLASS <case> <class>` per case (from rank 0; `MIXED:<c0>,<c1>,..` if
 * the ranks disagree) so that a run with pcoll can be compared with a native run of the
 * same MPI (run-tests.sh diffs the lines). Only errors that every rank detects locally
 * before communicating are used (otherwise some ranks would enter the collective and the
 * others not), and only cases that neither native MPI crashes on. Left out because a
 * native MPI crashes or hangs on them (checked on Open MPI 4.1.4 and MPICH 4.0.2):
 *   - NULL recvcounts / displs arrays (both segfault),
 *   - per MPI (marked in the table, printed as `skipped(native-crash)`): MPICH segfaults
 *     on a negative count in MPI_Reduce / MPI_Allreduce; Open MPI segfaults on NULL
 *     buffers with count > 0 and on a negative recvcounts[i] in MPI_Allgatherv,
 *   - errors that only the root detects (recvbuf aliasing at the root, MPI_IN_PLACE at a
 *     non-root of MPI_Reduce): the other ranks proceed, leaving messages behind.
 * The program fails only if ranks disagree or a valid call after the errors fails.
 */
#include "common.h"

static const struct { int cls; const char *name; } classes[] = {
    {MPI_SUCCESS, "MPI_SUCCESS"},       {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"},   {MPI_ERR_COUNT, "MPI_ERR_COUNT"},
    {MPI_ERR_TYPE, "MPI_ERR_TYPE"},     {MPI_ERR_TAG, "MPI_ERR_TAG"},         {MPI_ERR_COMM, "MPI_ERR_COMM"},
    {MPI_ERR_RANK, "MPI_ERR_RANK"},     {MPI_ERR_ROOT, "MPI_ERR_ROOT"},       {MPI_ERR_GROUP, "MPI_ERR_GROUP"},
    {MPI_ERR_OP, "MPI_ERR_OP"},         {MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY"}, {MPI_ERR_DIMS, "MPI_ERR_DIMS"},
    {MPI_ERR_ARG, "MPI_ERR_ARG"},       {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN"}, {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"},
    {MPI_ERR_OTHER, "MPI_ERR_OTHER"},   {MPI_ERR_INTERN, "MPI_ERR_INTERN"},   {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS"},
    {MPI_ERR_PENDING, "MPI_ERR_PENDING"}, {MPI_ERR_REQUEST, "MPI_ERR_REQUEST"}, {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM"},
};

static void class_name(int cls, char *buf, size_t n)
{
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (classes[i].cls == cls) {
            snprintf(buf, n, "%s", classes[i].name);
            return;
        }
    snprintf(buf, n, "class%d", cls);
}

static MPI_Datatype uncommitted, contig2;
static MPI_Op userop;
static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* One erroneous (or borderline) call per case id. Buffers are big enough for any call. */
typedef int (*case_fn)(int p, int r, int *s, int *d, int *cnt, int *dsp);

#define R(name, expr)                                                                                              \
    static int name(int p, int r, int *s, int *d, int *cnt, int *dsp)                                             \
    {                                                                                                              \
        (void)p;                                                                                                   \
        (void)r;                                                                                                   \
        (void)s;                                                                                                   \
        (void)d;                                                                                                   \
        (void)cnt;                                                                                                 \
        (void)dsp;                                                                                                 \
        return expr;                                                                                               \
    }

/* MPI_Reduce */
R(reduce_count_negative, MPI_Reduce(s, d, -1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD))
R(reduce_root_too_large, MPI_Reduce(s, d, 4, MPI_INT, MPI_SUM, p, MPI_COMM_WORLD))
R(reduce_root_negative, MPI_Reduce(s, d, 4, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD))
R(reduce_root_any_source, MPI_Reduce(s, d, 4, MPI_INT, MPI_SUM, MPI_ANY_SOURCE, MPI_COMM_WORLD))
R(reduce_datatype_null, MPI_Reduce(s, d, 4, MPI_DATATYPE_NULL, MPI_SUM, 0, MPI_COMM_WORLD))
R(reduce_op_null, MPI_Reduce(s, d, 4, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD))
R(reduce_comm_null, MPI_Reduce(s, d, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_NULL))
R(reduce_band_double, MPI_Reduce(s, d, 2, MPI_DOUBLE, MPI_BAND, 0, MPI_COMM_WORLD))
R(reduce_minloc_int, MPI_Reduce(s, d, 2, MPI_INT, MPI_MINLOC, 0, MPI_COMM_WORLD))
R(reduce_sum_derived, MPI_Reduce(s, d, 2, contig2, MPI_SUM, 0, MPI_COMM_WORLD))
R(reduce_uncommitted_type, MPI_Reduce(s, d, 2, uncommitted, userop, 0, MPI_COMM_WORLD))
R(reduce_null_sendbuf, MPI_Reduce(NULL, d, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD))
R(reduce_count0_datatype_null, MPI_Reduce(s, d, 0, MPI_DATATYPE_NULL, MPI_SUM, 0, MPI_COMM_WORLD))
R(reduce_count0_op_null, MPI_Reduce(s, d, 0, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD))
R(reduce_count0_ok, MPI_Reduce(s, d, 0, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD))
/* MPI_Allreduce */
R(allreduce_count_negative, MPI_Allreduce(s, d, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
R(allreduce_datatype_null, MPI_Allreduce(s, d, 4, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD))
R(allreduce_op_null, MPI_Allreduce(s, d, 4, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD))
R(allreduce_comm_null, MPI_Allreduce(s, d, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL))
R(allreduce_band_double, MPI_Allreduce(s, d, 2, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD))
R(allreduce_minloc_int, MPI_Allreduce(s, d, 2, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD))
R(allreduce_sum_derived, MPI_Allreduce(s, d, 2, contig2, MPI_SUM, MPI_COMM_WORLD))
R(allreduce_uncommitted_type, MPI_Allreduce(s, d, 2, uncommitted, userop, MPI_COMM_WORLD))
R(allreduce_null_sendbuf, MPI_Allreduce(NULL, d, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
R(allreduce_null_recvbuf, MPI_Allreduce(s, NULL, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
R(allreduce_aliased_buffers, MPI_Allreduce(s, s, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
R(allreduce_count0_datatype_null, MPI_Allreduce(s, d, 0, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD))
R(allreduce_count0_ok, MPI_Allreduce(s, d, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
/* MPI_Reduce_scatter (cnt[] = 2 everywhere unless changed) */
R(reduce_scatter_count_negative, (cnt[p - 1] = -1, MPI_Reduce_scatter(s, d, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD)))
R(reduce_scatter_datatype_null, MPI_Reduce_scatter(s, d, cnt, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD))
R(reduce_scatter_op_null, MPI_Reduce_scatter(s, d, cnt, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD))
R(reduce_scatter_comm_null, MPI_Reduce_scatter(s, d, cnt, MPI_INT, MPI_SUM, MPI_COMM_NULL))
R(reduce_scatter_band_double, MPI_Reduce_scatter(s, d, cnt, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD))
R(reduce_scatter_sum_derived, MPI_Reduce_scatter(s, d, cnt, contig2, MPI_SUM, MPI_COMM_WORLD))
R(reduce_scatter_uncommitted_type, MPI_Reduce_scatter(s, d, cnt, uncommitted, userop, MPI_COMM_WORLD))
R(reduce_scatter_null_sendbuf, MPI_Reduce_scatter(NULL, d, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
R(reduce_scatter_aliased_buffers, MPI_Reduce_scatter(s, s, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
R(reduce_scatter_count0_datatype_null,
  (memset(cnt, 0, sizeof(int) * (size_t)p), MPI_Reduce_scatter(s, d, cnt, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD)))
/* MPI_Allgatherv (cnt[] = 2, dsp[i] = 2i unless changed) */
R(allgatherv_sendcount_negative, MPI_Allgatherv(s, -1, MPI_INT, d, cnt, dsp, MPI_INT, MPI_COMM_WORLD))
R(allgatherv_recvcount_negative,
  (cnt[p - 1] = -1, MPI_Allgatherv(s, 2, MPI_INT, d, cnt, dsp, MPI_INT, MPI_COMM_WORLD)))
R(allgatherv_sendtype_null, MPI_Allgatherv(s, 2, MPI_DATATYPE_NULL, d, cnt, dsp, MPI_INT, MPI_COMM_WORLD))
R(allgatherv_recvtype_null, MPI_Allgatherv(s, 2, MPI_INT, d, cnt, dsp, MPI_DATATYPE_NULL, MPI_COMM_WORLD))
R(allgatherv_comm_null, MPI_Allgatherv(s, 2, MPI_INT, d, cnt, dsp, MPI_INT, MPI_COMM_NULL))
R(allgatherv_uncommitted_type, MPI_Allgatherv(s, 1, uncommitted, d, cnt, dsp, MPI_INT, MPI_COMM_WORLD))
R(allgatherv_null_sendbuf, MPI_Allgatherv(NULL, 2, MPI_INT, d, cnt, dsp, MPI_INT, MPI_COMM_WORLD))
R(allgatherv_null_recvbuf, MPI_Allgatherv(s, 2, MPI_INT, NULL, cnt, dsp, MPI_INT, MPI_COMM_WORLD))
R(allgatherv_inplace_recvtype_null,
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT, d, cnt, dsp, MPI_DATATYPE_NULL, MPI_COMM_WORLD))
/* MPI_Bcast and MPI_Allgather(v) with a type never committed (MPI_ERR_TYPE natively; count 0:
 * Open MPI refuses it, MPICH passes) */
R(bcast_uncommitted_type, MPI_Bcast(s, 2, uncommitted, 0, MPI_COMM_WORLD))
R(bcast_count0_uncommitted_type, MPI_Bcast(s, 0, uncommitted, 0, MPI_COMM_WORLD))
R(allgather_uncommitted_type, MPI_Allgather(s, 1, uncommitted, d, 1, uncommitted, MPI_COMM_WORLD))
R(allgatherv_uncommitted_recvtype,
  (memset(cnt, 0, sizeof(int) * (size_t)p), cnt[0] = 1,
   MPI_Allgatherv(s, r == 0 ? 2 : 0, MPI_INT, d, cnt, dsp, uncommitted, MPI_COMM_WORLD)))

/* crash: the native MPI that crashes on the case (the case is then skipped for that MPI
 * and printed as `skipped`, so both runs of run-tests.sh still line up) */
enum { OK = 0, CRASH_OMPI = 1, CRASH_MPICH = 2 };
#if defined(OPEN_MPI)
#define THIS_MPI CRASH_OMPI
#elif defined(MPICH)
#define THIS_MPI CRASH_MPICH
#else
#define THIS_MPI 0
#endif

static const struct {
    const char *name;
    case_fn fn;
    int crash;
} cases[] = {
#define C(x, crash) {#x, x, crash}
    C(reduce_count_negative, CRASH_MPICH), /* MPICH 4.0.2 does not check: segfault */
    C(reduce_root_too_large, OK),
    C(reduce_root_negative, OK),
    C(reduce_root_any_source, OK),
    C(reduce_datatype_null, OK),
    C(reduce_op_null, OK),
    C(reduce_comm_null, OK),
    C(reduce_band_double, OK),
    C(reduce_minloc_int, OK),
    C(reduce_sum_derived, OK),
    C(reduce_uncommitted_type, OK),
    C(reduce_null_sendbuf, CRASH_OMPI), /* Open MPI 4.1.4 does not check NULL buffers */
    C(reduce_count0_datatype_null, OK),
    C(reduce_count0_op_null, OK),
    C(reduce_count0_ok, OK),
    C(allreduce_count_negative, CRASH_MPICH),
    C(allreduce_datatype_null, OK),
    C(allreduce_op_null, OK),
    C(allreduce_comm_null, OK),
    C(allreduce_band_double, OK),
    C(allreduce_minloc_int, OK),
    C(allreduce_sum_derived, OK),
    C(allreduce_uncommitted_type, OK),
    C(allreduce_null_sendbuf, CRASH_OMPI),
    C(allreduce_null_recvbuf, CRASH_OMPI),
    C(allreduce_aliased_buffers, OK),
    C(allreduce_count0_datatype_null, OK),
    C(allreduce_count0_ok, OK),
    C(reduce_scatter_count_negative, OK),
    C(reduce_scatter_datatype_null, OK),
    C(reduce_scatter_op_null, OK),
    C(reduce_scatter_comm_null, OK),
    C(reduce_scatter_band_double, OK),
    C(reduce_scatter_sum_derived, OK),
    C(reduce_scatter_uncommitted_type, OK),
    C(reduce_scatter_null_sendbuf, CRASH_OMPI),
    C(reduce_scatter_aliased_buffers, OK), /* Open MPI: MPI_SUCCESS, MPICH: MPI_ERR_BUFFER */
    C(reduce_scatter_count0_datatype_null, OK),
    C(allgatherv_sendcount_negative, OK),
    C(allgatherv_recvcount_negative, CRASH_OMPI), /* Open MPI 4.1.4: segfault */
    C(allgatherv_sendtype_null, OK),
    C(allgatherv_recvtype_null, OK),
    C(allgatherv_comm_null, OK),
    C(allgatherv_uncommitted_type, OK),
    C(allgatherv_null_sendbuf, CRASH_OMPI),
    C(allgatherv_null_recvbuf, CRASH_OMPI),
    C(allgatherv_inplace_recvtype_null, OK),
    C(bcast_uncommitted_type, OK),
    C(bcast_count0_uncommitted_type, OK),
    C(allgather_uncommitted_type, OK),
    C(allgatherv_uncommitted_recvtype, OK),
#undef C
};

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "errors", argc, argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(2, MPI_INT, &uncommitted); /* never committed */
    MPI_Type_contiguous(2, MPI_INT, &contig2);
    MPI_Type_commit(&contig2);
    MPI_Op_create(user_fn, 1, &userop);
    const int p = t.wsize, r = t.wrank;
    const size_t nbuf = 64 * (size_t)p + 64;
    int *s = xmalloc(nbuf * sizeof(double)), *d = xmalloc(nbuf * sizeof(double));
    int *cnt = xmalloc(sizeof(int) * (size_t)p), *dsp = xmalloc(sizeof(int) * (size_t)p);
    int *all = xmalloc(sizeof(int) * (size_t)p);
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < ncases; c++) {
        if (!tc_case(&t, "%s", cases[c].name))
            continue;
        if (cases[c].crash & THIS_MPI) {
            if (r == 0)
                printf("ERRCLASS %s skipped(native-crash)\n", cases[c].name);
            continue;
        }
        memset(s, 0, nbuf * sizeof(double));
        memset(d, 0, nbuf * sizeof(double));
        for (int i = 0; i < p; i++) {
            cnt[i] = 2;
            dsp[i] = 2 * i;
        }
        int rc = cases[c].fn(p, r, s, d, cnt, dsp), cls = rc;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        PMPI_Allgather(&cls, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        int agree = 1;
        for (int i = 0; i < p; i++)
            agree &= all[i] == all[0];
        if (!agree)
            tc_fail(&t, "ranks returned different error classes");
        if (r == 0) {
            char line[600], nm[64];
            int off = snprintf(line, sizeof line, "ERRCLASS %s ", cases[c].name);
            for (int i = 0; i < (agree ? 1 : p); i++) {
                class_name(all[i], nm, sizeof nm);
                off += snprintf(line + off, sizeof line - (size_t)off, "%s%s%s", (!agree && i == 0) ? "MIXED:" : "",
                                i ? "," : "", nm);
            }
            printf("%s\n", line);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* the library must still work after all those errors */
    if (tc_case(&t, "valid allreduce after the errors")) {
        int x = r + 1, y = 0;
        int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS || y != p * (p + 1) / 2)
            tc_fail(&t, "rc=%d sum=%d expected %d", rc, y, p * (p + 1) / 2);
    }
    MPI_Type_free(&uncommitted);
    MPI_Type_free(&contig2);
    MPI_Op_free(&userop);
    free(s);
    free(d);
    free(cnt);
    free(dsp);
    free(all);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
