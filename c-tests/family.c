/* family.c -- MPI_Bcast, MPI_Allgather and MPI_Reduce_scatter_block (issue 15) against
 * locally regenerated data and a sequential rank-order fold.
 *
 * Bcast: every root, counts 0, 1, p+1, 1000, 100003, on every communicator; the root's
 * buffer must stay as it was, every other buffer must equal it, the guard after it untouched.
 * Allgather: per-rank counts 0, 1, 7, 4099, in place and not; block j must be rank j's input.
 * Reduce_scatter_block: MPI_SUM (and MPI_MAX) per-rank counts 0, 1, 7, 4099, in place and not;
 * block r must be the fold of every rank's block r.
 */
#include "common.h"

static void one_bcast(tctx *t, MPI_Comm comm, int k, size_t count, int root)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = kind_size(k), bytes = count * es;
    unsigned char *buf = xmalloc(bytes + GUARD_BYTES), *want = xmalloc(bytes + 1);
    gen_buf(k, -1, seed, wr[root], 0, count, want);
    fill_sentinel(buf, bytes + GUARD_BYTES);
    if (r == root)
        memcpy(buf, want, bytes);
    int rc = MPI_Bcast(buf, (int)count, kind_dt(k), root, comm);
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Bcast returned %d", rc);
    check_elems(t, k, buf, want, count, r == root ? "root's buffer" : "received data");
    check_guard(t, buf + bytes, GUARD_BYTES, "buffer");
    free(buf);
    free(want);
    free(wr);
}

static void one_allgather(tctx *t, MPI_Comm comm, int k, size_t c, int inplace)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = kind_size(k), bytes = c * es * (size_t)n;
    unsigned char *in = xmalloc(c * es + 1), *out = xmalloc(bytes + GUARD_BYTES), *want = xmalloc(c * es + 1);
    gen_buf(k, -1, seed, wr[r], 0, c, in);
    fill_sentinel(out, bytes + GUARD_BYTES);
    int rc;
    if (inplace) {
        memcpy(out + (size_t)r * c * es, in, c * es);
        rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, (int)c, kind_dt(k), comm);
    } else {
        rc = MPI_Allgather(in, (int)c, kind_dt(k), out, (int)c, kind_dt(k), comm);
    }
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Allgather returned %d", rc);
    for (int j = 0; j < n; j++) {
        char what[40];
        gen_buf(k, -1, seed, wr[j], 0, c, want);
        snprintf(what, sizeof what, "block of rank %d", j);
        check_elems(t, k, out + (size_t)j * c * es, want, c, what);
    }
    check_guard(t, out + bytes, GUARD_BYTES, "recvbuf");
    free(in);
    free(out);
    free(want);
    free(wr);
}

static void one_rsb(tctx *t, MPI_Comm comm, int k, int o, size_t c, int inplace)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = kind_size(k), total = c * (size_t)n;
    unsigned char *in = xmalloc(total * es + 1), *want = xmalloc(c * es + 1);
    size_t outlen = (inplace ? total : c) * es;
    unsigned char *out = xmalloc(outlen + GUARD_BYTES);
    gen_buf(k, o, seed, wr[r], 0, total, in);
    fill_sentinel(out, outlen + GUARD_BYTES);
    int rc;
    if (inplace) {
        memcpy(out, in, total * es);
        rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, out, (int)c, kind_dt(k), op_handle(o), comm);
    } else {
        rc = MPI_Reduce_scatter_block(in, out, (int)c, kind_dt(k), op_handle(o), comm);
    }
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Reduce_scatter_block returned %d", rc);
    ref_fold(k, o, seed, wr, n, (size_t)r * c, c, want);
    check_elems(t, k, out, want, c, "my block");
    check_guard(t, out + outlen, GUARD_BYTES, "recvbuf");
    free(in);
    free(out);
    free(want);
    free(wr);
}

#define CASE(...)                                                                                                  \
    if (tc_case(&t, __VA_ARGS__))

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "family", argc, argv);
    tcomm comms[4];
    int nc = make_comms(comms, t.quick);
    static const int kinds[6] = {K_INT, K_DOUBLE, K_CHAR, K_DOUBLE_INT, K_SHORT, K_ULL};
    static const size_t per[4] = {0, 1, 7, 4099};
    for (int ci = 0; ci < nc; ci++) {
        int n;
        MPI_Comm_size(comms[ci].comm, &n);
        size_t counts[5] = {0, 1, (size_t)n + 1, 1000, 100003};
        for (int ri = 0; ri < 4; ri++) /* every root (at most 4) */
            for (int cc = 0; cc < 5; cc++) {
                int root = (ri * (n + 1) / 4) % n, k = kinds[(ci + cc + ri) % 6];
                if (t.quick && (cc + ri) % 2)
                    continue;
                CASE("bcast %s %s count=%zu root=%d", comms[ci].name, kind_names[k], counts[cc], root)
                one_bcast(&t, comms[ci].comm, k, counts[cc], root);
            }
        for (int cc = 0; cc < 4; cc++)
            for (int inpl = 0; inpl < 2; inpl++) {
                int k = kinds[(ci + cc + inpl) % 6];
                CASE("allgather %s %s count=%zu inplace=%d", comms[ci].name, kind_names[k], per[cc], inpl)
                one_allgather(&t, comms[ci].comm, k, per[cc], inpl);
                int kr = (cc % 2) ? K_INT : K_DOUBLE, o = inpl ? 2 /* MPI_MAX */ : 0 /* MPI_SUM */;
                CASE("reduce_scatter_block %s %s %s count=%zu inplace=%d", comms[ci].name, kind_names[kr],
                     op_names[o], per[cc], inpl)
                one_rsb(&t, comms[ci].comm, kr, o, per[cc], inpl);
            }
    }
    free_comms(comms, nc);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
