/* badinput: one erroneous collective call per case, under MPI_ERRORS_RETURN (issue 7).
 *
 *   badinput --list        the case names, one a line
 *   badinput CASE          run one case: every rank prints `BADINPUT <case> rank=<r> <class>`
 *                          (`<case>_own`, listed for the NULL-type cases: on a communicator
 *                          with MPI_ERRORS_RETURN of its own, the world's handler fatal)
 *                          where <class> is the MPI error class name of the return code
 *                          (MPI_SUCCESS if the MPI accepted the call)
 *
 * verify/badinput.sh runs every case in its own launcher (a crash or a hang of one case is
 * recorded as such, not fatal to the rest), natively and with pcoll, and compares the classes.
 * All ranks pass the same bad argument unless the case says otherwise, so that an MPI that
 * checks arguments locally returns on every rank instead of leaving the others waiting.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, p;
static int sb[64], rb[256];
static int cnt[64], dsp[64];
/* One rank's bad buffer in a call big enough to be sent by rendezvous: the others must not hang. */
#define BIG (1 << 18)
static int bsb[BIG], brb[BIG], bcnt[64], bdsp[64];

static const char *class_name(int rc) {
    if (rc == MPI_SUCCESS) return "MPI_SUCCESS";
    int c = rc;
    MPI_Error_class(rc, &c);
#define C(x) if (c == x) return #x;
    C(MPI_ERR_BUFFER) C(MPI_ERR_COUNT) C(MPI_ERR_TYPE) C(MPI_ERR_TAG) C(MPI_ERR_COMM)
    C(MPI_ERR_RANK) C(MPI_ERR_REQUEST) C(MPI_ERR_ROOT) C(MPI_ERR_GROUP) C(MPI_ERR_OP)
    C(MPI_ERR_TOPOLOGY) C(MPI_ERR_DIMS) C(MPI_ERR_ARG) C(MPI_ERR_UNKNOWN) C(MPI_ERR_TRUNCATE)
    C(MPI_ERR_OTHER) C(MPI_ERR_INTERN) C(MPI_ERR_IN_STATUS) C(MPI_ERR_PENDING)
    C(MPI_ERR_NO_MEM) C(MPI_ERR_KEYVAL) C(MPI_ERR_INFO)
#undef C
    static char buf[32];
    snprintf(buf, sizeof buf, "class-%d", c);
    return buf;
}

static MPI_Comm freed_comm(void) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm stale = c;
    MPI_Comm_free(&c);
    return stale;
}

static MPI_Datatype uncommitted(void) {
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    return t;
}

typedef int (*case_fn)(void);
/* The communicator of the call: MPI_COMM_WORLD, or for a case named `<case>_own` a duplicate
 * with MPI_ERRORS_RETURN of its own while MPI_COMM_WORLD and MPI_COMM_SELF keep the default
 * fatal handler (an error pcoll's own queries raised there would end the job; session 53). */
static MPI_Comm W_comm;
#define W W_comm
static int t_reduce_neg_count(void) { return MPI_Reduce(sb, rb, -1, MPI_INT, MPI_SUM, 0, W); }
static int t_allreduce_neg_count(void) { return MPI_Allreduce(sb, rb, -1, MPI_INT, MPI_SUM, W); }
static int t_rs_neg_count(void) { cnt[0] = -1; return MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, W); }
static int t_agv_neg_recvcount(void) { cnt[p - 1] = -3; return MPI_Allgatherv(sb, cnt[me], MPI_INT, rb, cnt, dsp, MPI_INT, W); }
static int t_agv_neg_sendcount(void) { return MPI_Allgatherv(sb, -1, MPI_INT, rb, cnt, dsp, MPI_INT, W); }
static int t_reduce_root_p(void) { return MPI_Reduce(sb, rb, 4, MPI_INT, MPI_SUM, p, W); }
static int t_reduce_root_neg(void) { return MPI_Reduce(sb, rb, 4, MPI_INT, MPI_SUM, -5, W); }
static int t_reduce_comm_null(void) { return MPI_Reduce(sb, rb, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_NULL); }
static int t_allreduce_comm_null(void) { return MPI_Allreduce(sb, rb, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL); }
static int t_rs_comm_null(void) { return MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, MPI_COMM_NULL); }
static int t_agv_comm_null(void) { return MPI_Allgatherv(sb, 2, MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_NULL); }
static int t_reduce_freed_comm(void) { return MPI_Reduce(sb, rb, 4, MPI_INT, MPI_SUM, 0, freed_comm()); }
static int t_allreduce_freed_comm(void) { return MPI_Allreduce(sb, rb, 4, MPI_INT, MPI_SUM, freed_comm()); }
static int t_rs_freed_comm(void) { return MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, freed_comm()); }
static int t_agv_freed_comm(void) { return MPI_Allgatherv(sb, 2, MPI_INT, rb, cnt, dsp, MPI_INT, freed_comm()); }
static int t_reduce_type_null(void) { return MPI_Reduce(sb, rb, 4, MPI_DATATYPE_NULL, MPI_SUM, 0, W); }
static int t_allreduce_type_null(void) { return MPI_Allreduce(sb, rb, 4, MPI_DATATYPE_NULL, MPI_SUM, W); }
static int t_rs_type_null(void) { return MPI_Reduce_scatter(sb, rb, cnt, MPI_DATATYPE_NULL, MPI_SUM, W); }
static int t_agv_type_null(void) { return MPI_Allgatherv(sb, 2, MPI_DATATYPE_NULL, rb, cnt, dsp, MPI_DATATYPE_NULL, W); }
static int t_allreduce_uncommitted(void) { return MPI_Allreduce(sb, rb, 2, uncommitted(), MPI_SUM, W); }
static int t_agv_uncommitted(void) { MPI_Datatype t = uncommitted(); return MPI_Allgatherv(sb, 1, t, rb, cnt, dsp, t, W); }
static int t_reduce_op_null(void) { return MPI_Reduce(sb, rb, 4, MPI_INT, MPI_OP_NULL, 0, W); }
static int t_allreduce_op_null(void) { return MPI_Allreduce(sb, rb, 4, MPI_INT, MPI_OP_NULL, W); }
static int t_rs_op_null(void) { return MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_OP_NULL, W); }
static int t_allreduce_sum_double_int(void) { return MPI_Allreduce(sb, rb, 2, MPI_DOUBLE_INT, MPI_SUM, W); }
static int t_reduce_band_double(void) { return MPI_Reduce(sb, rb, 2, MPI_DOUBLE, MPI_BAND, 0, W); }
static int t_allreduce_maxloc_int(void) { return MPI_Allreduce(sb, rb, 4, MPI_INT, MPI_MAXLOC, W); }
static int t_allreduce_land_float(void) { return MPI_Allreduce(sb, rb, 4, MPI_FLOAT, MPI_LAND, W); }
static int t_rs_bxor_float(void) { return MPI_Reduce_scatter(sb, rb, cnt, MPI_FLOAT, MPI_BXOR, W); }
static int t_allreduce_replace(void) { return MPI_Allreduce(sb, rb, 4, MPI_INT, MPI_REPLACE, W); }
static int t_allreduce_sum_derived(void) {
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return MPI_Allreduce(sb, rb, 2, t, MPI_SUM, W);
}
static int t_allreduce_null_sendbuf(void) { return MPI_Allreduce(NULL, rb, 4, MPI_INT, MPI_SUM, W); }
static int t_allreduce_null_recvbuf(void) { return MPI_Allreduce(sb, NULL, 4, MPI_INT, MPI_SUM, W); }
static int t_reduce_null_recvbuf_root(void) { return MPI_Reduce(sb, me == 0 ? NULL : rb, 4, MPI_INT, MPI_SUM, 0, W); }
static int t_rs_null_recvbuf(void) { return MPI_Reduce_scatter(sb, NULL, cnt, MPI_INT, MPI_SUM, W); }
static int t_agv_null_recvbuf(void) { return MPI_Allgatherv(sb, 2, MPI_INT, NULL, cnt, dsp, MPI_INT, W); }
static int t_allreduce_inplace_recvbuf(void) { return MPI_Allreduce(sb, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, W); }
static int t_allreduce_inplace_both(void) { return MPI_Allreduce(MPI_IN_PLACE, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, W); }
static int t_reduce_inplace_recvbuf(void) { return MPI_Reduce(sb, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, 0, W); }
static int t_rs_inplace_recvbuf(void) { return MPI_Reduce_scatter(sb, MPI_IN_PLACE, cnt, MPI_INT, MPI_SUM, W); }
static int t_agv_inplace_recvbuf(void) { return MPI_Allgatherv(sb, 2, MPI_INT, MPI_IN_PLACE, cnt, dsp, MPI_INT, W); }
/* Only the non-root ranks pass MPI_IN_PLACE (erroneous there): an MPI may not notice. */
static int t_reduce_inplace_nonroot(void) { return MPI_Reduce(me == 0 ? sb : MPI_IN_PLACE, rb, 4, MPI_INT, MPI_SUM, 0, W); }
/* Only one rank passes the NULL buffer; the others' arguments are valid. */
static int t_reduce_null_recvbuf_root_big(void) { return MPI_Reduce(bsb, me == 1 % p ? NULL : brb, BIG, MPI_INT, MPI_SUM, 1 % p, W); }
static int t_allreduce_null_sendbuf_one(void) { return MPI_Allreduce(me == p - 1 ? NULL : sb, rb, 4, MPI_INT, MPI_SUM, W); }
static int t_allreduce_null_sendbuf_one_big(void) { return MPI_Allreduce(me == p - 1 ? NULL : bsb, brb, BIG, MPI_INT, MPI_SUM, W); }
static int t_allreduce_null_recvbuf_one_big(void) { return MPI_Allreduce(bsb, me == 0 ? NULL : brb, BIG, MPI_INT, MPI_SUM, W); }
static int t_rs_null_recvbuf_one_big(void) { return MPI_Reduce_scatter(bsb, me == 0 ? NULL : brb, bcnt, MPI_INT, MPI_SUM, W); }
static int t_rs_inplace_null_recvbuf_one_big(void) { return MPI_Reduce_scatter(MPI_IN_PLACE, me == 0 ? NULL : brb, bcnt, MPI_INT, MPI_SUM, W); }
static int t_agv_null_recvbuf_one_big(void) { return MPI_Allgatherv(bsb, bcnt[me], MPI_INT, me == 0 ? NULL : brb, bcnt, bdsp, MPI_INT, W); }
static int t_agv_sendcount_mismatch(void) { return MPI_Allgatherv(sb, 3, MPI_INT, rb, cnt, dsp, MPI_INT, W); }
/* MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block (issue 15). */
static int t_bcast_neg_count(void) { return MPI_Bcast(rb, -1, MPI_INT, 0, W); }
static int t_bcast_root_p(void) { return MPI_Bcast(rb, 4, MPI_INT, p, W); }
static int t_bcast_root_neg(void) { return MPI_Bcast(rb, 4, MPI_INT, -5, W); }
static int t_bcast_comm_null(void) { return MPI_Bcast(rb, 4, MPI_INT, 0, MPI_COMM_NULL); }
static int t_bcast_freed_comm(void) { return MPI_Bcast(rb, 4, MPI_INT, 0, freed_comm()); }
static int t_bcast_type_null(void) { return MPI_Bcast(rb, 4, MPI_DATATYPE_NULL, 0, W); }
static int t_bcast_uncommitted(void) { return MPI_Bcast(rb, 2, uncommitted(), 0, W); }
static int t_bcast_null_buf(void) { return MPI_Bcast(NULL, 4, MPI_INT, 0, W); }
static int t_bcast_null_buf_one_big(void) { return MPI_Bcast(me == p - 1 ? NULL : brb, BIG, MPI_INT, 0, W); }
static int t_ag_neg_recvcount(void) { return MPI_Allgather(sb, 2, MPI_INT, rb, -2, MPI_INT, W); }
static int t_ag_neg_sendcount(void) { return MPI_Allgather(sb, -1, MPI_INT, rb, 2, MPI_INT, W); }
static int t_ag_comm_null(void) { return MPI_Allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, MPI_COMM_NULL); }
static int t_ag_freed_comm(void) { return MPI_Allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, freed_comm()); }
static int t_ag_type_null(void) { return MPI_Allgather(sb, 2, MPI_DATATYPE_NULL, rb, 2, MPI_DATATYPE_NULL, W); }
static int t_ag_null_recvbuf(void) { return MPI_Allgather(sb, 2, MPI_INT, NULL, 2, MPI_INT, W); }
static int t_ag_inplace_recvbuf(void) { return MPI_Allgather(sb, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, W); }
static int t_ag_sendcount_mismatch(void) { return MPI_Allgather(sb, 3, MPI_INT, rb, 2, MPI_INT, W); }
static int t_ag_null_recvbuf_one_big(void) { return MPI_Allgather(bsb, BIG / 64, MPI_INT, me == 0 ? NULL : brb, BIG / 64, MPI_INT, W); }
static int t_rsb_neg_count(void) { return MPI_Reduce_scatter_block(sb, rb, -1, MPI_INT, MPI_SUM, W); }
static int t_rsb_comm_null(void) { return MPI_Reduce_scatter_block(sb, rb, 2, MPI_INT, MPI_SUM, MPI_COMM_NULL); }
static int t_rsb_type_null(void) { return MPI_Reduce_scatter_block(sb, rb, 2, MPI_DATATYPE_NULL, MPI_SUM, W); }
static int t_rsb_op_null(void) { return MPI_Reduce_scatter_block(sb, rb, 2, MPI_INT, MPI_OP_NULL, W); }
static int t_rsb_bxor_float(void) { return MPI_Reduce_scatter_block(sb, rb, 2, MPI_FLOAT, MPI_BXOR, W); }
static int t_rsb_null_recvbuf(void) { return MPI_Reduce_scatter_block(sb, NULL, 2, MPI_INT, MPI_SUM, W); }
static int t_rsb_inplace_recvbuf(void) { return MPI_Reduce_scatter_block(sb, MPI_IN_PLACE, 2, MPI_INT, MPI_SUM, W); }
static int t_rsb_null_recvbuf_one_big(void) { return MPI_Reduce_scatter_block(bsb, me == 0 ? NULL : brb, BIG / 64, MPI_INT, MPI_SUM, W); }

static const struct { const char *name; case_fn fn; } cases[] = {
#define E(x) {#x, t_##x}
    E(reduce_neg_count), E(allreduce_neg_count), E(rs_neg_count), E(agv_neg_recvcount), E(agv_neg_sendcount),
    E(reduce_root_p), E(reduce_root_neg),
    E(reduce_comm_null), E(allreduce_comm_null), E(rs_comm_null), E(agv_comm_null),
    E(reduce_freed_comm), E(allreduce_freed_comm), E(rs_freed_comm), E(agv_freed_comm),
    E(reduce_type_null), E(allreduce_type_null), E(rs_type_null), E(agv_type_null),
    E(allreduce_uncommitted), E(agv_uncommitted),
    E(reduce_op_null), E(allreduce_op_null), E(rs_op_null),
    E(allreduce_sum_double_int), E(reduce_band_double), E(allreduce_maxloc_int), E(allreduce_land_float),
    E(rs_bxor_float), E(allreduce_replace), E(allreduce_sum_derived),
    E(allreduce_null_sendbuf), E(allreduce_null_recvbuf), E(reduce_null_recvbuf_root), E(rs_null_recvbuf),
    E(agv_null_recvbuf),
    E(allreduce_inplace_recvbuf), E(allreduce_inplace_both), E(reduce_inplace_recvbuf), E(rs_inplace_recvbuf),
    E(agv_inplace_recvbuf), E(reduce_inplace_nonroot), E(agv_sendcount_mismatch),
    E(reduce_null_recvbuf_root_big), E(allreduce_null_sendbuf_one), E(allreduce_null_sendbuf_one_big),
    E(allreduce_null_recvbuf_one_big), E(rs_null_recvbuf_one_big), E(rs_inplace_null_recvbuf_one_big),
    E(agv_null_recvbuf_one_big),
    E(bcast_neg_count), E(bcast_root_p), E(bcast_root_neg), E(bcast_comm_null), E(bcast_freed_comm),
    E(bcast_type_null), E(bcast_uncommitted), E(bcast_null_buf), E(bcast_null_buf_one_big),
    E(ag_neg_recvcount), E(ag_neg_sendcount), E(ag_comm_null), E(ag_freed_comm), E(ag_type_null),
    E(ag_null_recvbuf), E(ag_inplace_recvbuf), E(ag_sendcount_mismatch), E(ag_null_recvbuf_one_big),
    E(rsb_neg_count), E(rsb_comm_null), E(rsb_type_null), E(rsb_op_null), E(rsb_bxor_float),
    E(rsb_null_recvbuf), E(rsb_inplace_recvbuf), E(rsb_null_recvbuf_one_big),
#undef E
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < NCASES; i++) printf("%s\n", cases[i].name);
        for (int i = 0; i < NCASES; i++)
            if (strstr(cases[i].name, "type_null")) printf("%s_own\n", cases[i].name);
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    char want[128] = "";
    if (argc == 2) snprintf(want, sizeof want, "%s", argv[1]);
    size_t wl = strlen(want);
    W_comm = MPI_COMM_WORLD;
    if (wl > 4 && !strcmp(want + wl - 4, "_own")) {
        want[wl - 4] = 0;
        MPI_Comm_dup(MPI_COMM_WORLD, &W_comm);
        MPI_Comm_set_errhandler(W_comm, MPI_ERRORS_RETURN);
    } else {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    }
    for (int i = 0; i < 64; i++) sb[i] = i + me;
    for (int k = 0; k < p && k < 64; k++) { cnt[k] = 2; dsp[k] = 2 * k; }
    for (int i = 0; i < BIG; i++) bsb[i] = i + me;
    for (int k = 0; k < p && k < 64; k++) { bcnt[k] = BIG / 64; bdsp[k] = k * (BIG / 64); }
    int rc = 2;
    for (int i = 0; i < NCASES; i++)
        if (argc == 2 && !strcmp(want, cases[i].name)) {
            int r = cases[i].fn();
            char line[256];
            snprintf(line, sizeof line, "BADINPUT %s rank=%d %s\n", argv[1], me, class_name(r));
            fputs(line, stdout);
            fflush(stdout);
            rc = 0;
        }
    if (rc) fprintf(stderr, "usage: badinput --list | badinput CASE\n");
    MPI_Finalize();
    return rc;
}
