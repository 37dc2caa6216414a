/* reduce_scatter.c -- MPI_Reduce_scatter against a rank-order reference.
 *
 * recvcounts patterns: uniform 0, 1, p-1, p+1, 1000; irregular with zeros; a single
 * non-zero block; skewed; about 100003 elements in total. MPI_IN_PLACE means the input is
 * taken from recvbuf (all sum(recvcounts) elements) and rank r's block lands at the start
 * of recvbuf. Many predefined (type, op) pairs, dup / split communicators.
 */
#include "common.h"

enum { PAT_UNIFORM, PAT_IRREGULAR, PAT_ONE, PAT_SKEWED, PAT_LARGE, NPAT };
static const char *const pat_names[NPAT] = {"uniform", "irregular", "one-nonzero", "skewed", "large"};

static void make_counts(int pat, size_t c, uint64_t seed, int n, int *counts)
{
    for (int i = 0; i < n; i++) {
        uint64_t h = rnd(seed, -1, (size_t)i, 3);
        switch (pat) {
        case PAT_UNIFORM: counts[i] = (int)c; break;
        case PAT_IRREGULAR: counts[i] = (h % 3 == 0) ? 0 : 1 + (int)(h % 37); break;
        case PAT_ONE: counts[i] = (i == (int)(seed % (uint64_t)n)) ? 1000 : 0; break;
        case PAT_SKEWED: counts[i] = 5 * i * i + (i % 2) * 3; break;
        case PAT_LARGE: counts[i] = 100003 / n + (i < 100003 % n); break;
        }
    }
}

static void one_rs(tctx *t, MPI_Comm comm, int k, int o, int pat, size_t c, int inplace)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = kind_size(k);
    int *counts = xmalloc(sizeof(int) * (size_t)n);
    make_counts(pat, c, seed, n, counts);
    size_t total = 0, mine = 0;
    for (int i = 0; i < n; i++) {
        if (i < r)
            mine += (size_t)counts[i];
        total += (size_t)counts[i];
    }
    const size_t mycount = (size_t)counts[r];
    unsigned char *in = xmalloc(total * es), *keep = xmalloc(total * es);
    size_t outbytes = (inplace ? total : mycount) * es;
    unsigned char *out = xmalloc(outbytes + GUARD_BYTES), *want = xmalloc(mycount * es);
    gen_buf(k, o, seed, wr[r], 0, total, in);
    memcpy(keep, in, total * es);
    fill_sentinel(out, outbytes + GUARD_BYTES);
    const void *sbuf = in;
    if (inplace) {
        memcpy(out, in, total * es);
        sbuf = MPI_IN_PLACE;
    }
    int rc = MPI_Reduce_scatter(sbuf, out, counts, kind_dt(k), op_handle(o), comm);
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Reduce_scatter returned %d", rc);
    ref_fold(k, o, seed, wr, n, mine, mycount, want);
    check_elems(t, k, out, want, mycount, "recvbuf");
    check_guard(t, out + outbytes, GUARD_BYTES, "recvbuf");
    if (!inplace && memcmp(in, keep, total * es) != 0)
        tc_fail(t, "sendbuf was modified");
    free(in);
    free(keep);
    free(out);
    free(want);
    free(counts);
    free(wr);
}

#define CASE(...)                                                                                                  \
    if (tc_case(&t, __VA_ARGS__))

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "reduce_scatter", argc, argv);
    tcomm comms[4];
    int nc = make_comms(comms, t.quick);

    /* A: every valid (type, op) pair on MPI_COMM_WORLD, rotating pattern / in-place. */
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
                    int pat = (i + j) % 4;
                    size_t c = counts[(i * 3 + j) % 5];
                    int inpl = i % 3 == 2;
                    CASE("world %s %s counts=%s(%zu) inplace=%d", kind_names[k], op_names[o], pat_names[pat], c, inpl)
                    one_rs(&t, MPI_COMM_WORLD, k, o, pat, c, inpl);
                }
            }
    }
    /* B: every pattern on every communicator, in place or not. */
    {
        static const int combos[4][2] = {{K_INT, O_SUM}, {K_DOUBLE, O_MAX}, {K_DOUBLE_INT, O_MAXLOC}, {K_LONG, O_BAND}};
        for (int ci = 0; ci < nc; ci++) {
            int n, i = 0;
            MPI_Comm_size(comms[ci].comm, &n);
            size_t counts[5] = {0, 1, (size_t)n - 1, (size_t)n + 1, 1000};
            for (int pat = 0; pat < NPAT; pat++)
                for (int cc = 0; cc < (pat == PAT_UNIFORM ? 5 : 1); cc++)
                    for (int inpl = 0; inpl < 2; inpl++, i++) {
                        if (t.quick && ((pat == PAT_LARGE && (ci > 0 || inpl)) || (pat != PAT_LARGE && i % 2)))
                            continue;
                        int k = combos[i % 4][0], o = combos[i % 4][1];
                        CASE("%s %s %s counts=%s(%zu) inplace=%d", comms[ci].name, kind_names[k], op_names[o],
                             pat_names[pat], counts[cc], inpl)
                        one_rs(&t, comms[ci].comm, k, o, pat, counts[cc], inpl);
                    }
        }
    }
    /* C: large totals over more types. */
    {
        static const int combos[6][2] = {{K_DOUBLE, O_SUM}, {K_FLOAT, O_MIN},   {K_ULL, O_BOR},
                                         {K_SHORT, O_PROD}, {K_BOOL, O_LXOR}, {K_2INT, O_MINLOC}};
        for (int i = 0; i < (t.quick ? 2 : 6); i++) {
            int k = combos[i][0], o = combos[i][1], inpl = i % 2;
            CASE("world %s %s counts=large inplace=%d", kind_names[k], op_names[o], inpl)
            one_rs(&t, MPI_COMM_WORLD, k, o, PAT_LARGE, 0, inpl);
        }
    }
    free_comms(comms, nc);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
