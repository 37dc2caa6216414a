/* reduce.c -- MPI_Reduce against a rank-order reference.
 *
 * Covers every valid (predefined datatype, predefined op) pair, counts 0, 1, p-1, p+1, 1000,
 * 100003, every root, MPI_IN_PLACE at the root, a NULL / sentinel-filled recvbuf at
 * non-roots (must stay untouched), input buffers that must stay unchanged, and
 * MPI_Comm_dup / MPI_Comm_split communicators (including reversed rank order).
 */
#include "common.h"

static void one_reduce(tctx *t, MPI_Comm comm, int k, int o, size_t count, int root, int inplace, int null_recv)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = kind_size(k), bytes = count * es;
    if (native_defect_skip(t, inplace, root, bytes)) {
        free(wr);
        return;
    }
    unsigned char *in = xmalloc(bytes), *keep = xmalloc(bytes);
    unsigned char *out = xmalloc(bytes + GUARD_BYTES);
    gen_buf(k, o, seed, wr[r], 0, count, in);
    memcpy(keep, in, bytes);
    fill_sentinel(out, bytes + GUARD_BYTES);
    const void *sbuf = in;
    void *rbuf = out;
    if (r == root && inplace) {
        memcpy(out, in, bytes);
        sbuf = MPI_IN_PLACE;
    }
    if (r != root && null_recv)
        rbuf = NULL;
    int rc = MPI_Reduce(sbuf, rbuf, (int)count, kind_dt(k), op_handle(o), root, comm);
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Reduce returned %d", rc);
    if (r == root) {
        unsigned char *want = xmalloc(bytes);
        ref_fold(k, o, seed, wr, n, 0, count, want);
        check_elems(t, k, out, want, count, "recvbuf");
        check_guard(t, out + bytes, GUARD_BYTES, "recvbuf");
        free(want);
    } else if (!null_recv) {
        size_t off = find_non_sentinel(out, bytes + GUARD_BYTES);
        if (off != (size_t)-1)
            tc_fail(t, "non-root recvbuf byte %zu was written", off);
    }
    if (sbuf != MPI_IN_PLACE && memcmp(in, keep, bytes) != 0)
        tc_fail(t, "sendbuf was modified");
    free(in);
    free(keep);
    free(out);
    free(wr);
}

#define CASE(...)                                                                                                  \
    if (tc_case(&t, __VA_ARGS__))

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "reduce", argc, argv);
    check_kind_extents(&t);
    tcomm comms[4];
    int nc = make_comms(comms, t.quick);

    /* A: every valid (type, op) pair on MPI_COMM_WORLD, rotating count / root / in-place. */
    {
        int n = t.wsize, i = 0;
        size_t counts[5] = {0, 1, (size_t)n - 1, (size_t)n + 1, 1000};
        for (int k = 0; k < K_NKINDS; k++)
            for (int o = 0; o < O_NOPS; o++) {
                if (!combo_valid(k, o))
                    continue;
                for (int j = 0; j < (t.quick ? 1 : 2); j++, i++) {
                    if (t.quick && i % 3)
                        continue;
                    size_t c = counts[(i * 3 + j) % 5];
                    int root = (i * 3 + 1) % n, inpl = i % 4 == 1, nullr = i % 3 == 2;
                    CASE("world %s %s count=%zu root=%d inplace=%d nullrecv=%d", kind_names[k], op_names[o], c, root,
                         inpl, nullr)
                    one_reduce(&t, MPI_COMM_WORLD, k, o, c, root, inpl, nullr);
                }
            }
    }
    /* B: every root, in place or not, small / medium / large. */
    {
        static const int combos[4][2] = {{K_INT, O_SUM}, {K_DOUBLE, O_MAX}, {K_ULL, O_BXOR}, {K_DOUBLE_INT, O_MINLOC}};
        int n = t.wsize, i = 0;
        for (int root = 0; root < n; root++)
            for (int inpl = 0; inpl < 2; inpl++)
                for (int ci = 0; ci < 3; ci++, i++) {
                    size_t c = ci == 0 ? 1 : ci == 1 ? 1000 : 100003;
                    if (t.quick && (ci == 2 ? root != 0 && root != n - 1 : (root + inpl + ci) % 2))
                        continue;
                    int k = combos[i % 4][0], o = combos[i % 4][1];
                    CASE("world %s %s count=%zu root=%d inplace=%d", kind_names[k], op_names[o], c, root, inpl)
                    one_reduce(&t, MPI_COMM_WORLD, k, o, c, root, inpl, 0);
                }
    }
    /* C: other communicators (sizes differ per half of a split: roots are taken modulo
     * the local size, so each half runs its own valid case under the same case id). */
    {
        static const int combos[4][2] = {{K_INT, O_SUM}, {K_DOUBLE, O_SUM}, {K_LONG_INT, O_MAXLOC}, {K_SCHAR, O_PROD}};
        for (int ci = 0; ci < nc; ci++) {
            int n, i = 0;
            MPI_Comm_size(comms[ci].comm, &n);
            size_t counts[4] = {1, (size_t)n + 1, 1000, 4099};
            for (int cc = 0; cc < 4; cc++)
                for (int m = 0; m < (t.quick ? 1 : 4); m++, i++) {
                    int k = combos[(cc + m) % 4][0], o = combos[(cc + m) % 4][1];
                    int root = (i * 5 + 2) % n, inpl = i % 2;
                    CASE("%s %s %s count=%zu root=%d(mod size) inplace=%d", comms[ci].name, kind_names[k],
                         op_names[o], counts[cc], root, inpl)
                    one_reduce(&t, comms[ci].comm, k, o, counts[cc], root, inpl, 0);
                }
        }
    }
    /* D: large messages over many types (pipelined / segmented paths). */
    {
        static const int combos[8][2] = {{K_INT, O_SUM},        {K_DOUBLE, O_SUM}, {K_FLOAT, O_PROD},
                                         {K_ULL, O_BXOR},       {K_UCHAR, O_BAND}, {K_BOOL, O_LOR},
                                         {K_DOUBLE_INT, O_MAXLOC}, {K_SHORT, O_MIN}};
        int n = t.wsize;
        for (int i = 0; i < (t.quick ? 3 : 8); i++) {
            int k = combos[i][0], o = combos[i][1], root = (i * 3) % n, inpl = i % 3 == 2;
            CASE("world %s %s count=100003 root=%d inplace=%d", kind_names[k], op_names[o], root, inpl)
            one_reduce(&t, MPI_COMM_WORLD, k, o, 100003, root, inpl, 0);
        }
    }
    free_comms(comms, nc);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
