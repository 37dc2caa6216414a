/* allreduce.c -- MPI_Allreduce against a rank-order reference.
 *
 * Every valid (predefined datatype, predefined op) pair, counts 0, 1, p-1, p+1, 1000,
 * 100003, MPI_IN_PLACE (input in recvbuf on all ranks), dup / split communicators.
 * Every result must also be bit-identical on all ranks (hash compared with MPI_Allgather,
 * which pcoll does not intercept); the non-integer MPI_DOUBLE / MPI_FLOAT sums of section D
 * are rounding-sensitive, so there a result is checked against the reference with a
 * tolerance and for bit identity across ranks.
 */
#include "common.h"

static void one_allreduce(tctx *t, MPI_Comm comm, int k, int o, size_t count, int inplace)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = kind_size(k), bytes = count * es;
    unsigned char *in = xmalloc(bytes), *keep = xmalloc(bytes);
    unsigned char *out = xmalloc(bytes + GUARD_BYTES), *want = xmalloc(bytes);
    gen_buf(k, o, seed, wr[r], 0, count, in);
    memcpy(keep, in, bytes);
    fill_sentinel(out, bytes + GUARD_BYTES);
    const void *sbuf = in;
    if (inplace) {
        memcpy(out, in, bytes);
        sbuf = MPI_IN_PLACE;
    }
    int rc = MPI_Allreduce(sbuf, out, (int)count, kind_dt(k), op_handle(o), comm);
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Allreduce returned %d", rc);
    ref_fold(k, o, seed, wr, n, 0, count, want);
    check_elems(t, k, out, want, count, "recvbuf");
    check_guard(t, out + bytes, GUARD_BYTES, "recvbuf");
    if (!inplace && memcmp(in, keep, bytes) != 0)
        tc_fail(t, "sendbuf was modified");
    if (!same_on_all_ranks(comm, hash_elems(k, out, count)))
        tc_fail(t, "results differ between ranks");
    free(in);
    free(keep);
    free(out);
    free(want);
    free(wr);
}

/* Rounding-sensitive values: random mantissas over 30 binary orders of magnitude. */
static double gen_real(uint64_t seed, int rank, size_t i)
{
    uint64_t r = rnd(seed, rank, i, 7), r2 = rnd(seed, rank, i, 8);
    return ((double)(r >> 11) / 9007199254740992.0 - 0.5) * ldexp(1.0, (int)(r2 % 30) - 10);
}

static void one_real_sum(tctx *t, MPI_Comm comm, int is_float, size_t count, int inplace)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = is_float ? sizeof(float) : sizeof(double);
    unsigned char *in = xmalloc(count * es), *out = xmalloc(count * es + GUARD_BYTES);
    for (size_t i = 0; i < count; i++) {
        double v = gen_real(seed, wr[r], i);
        if (is_float)
            ((float *)in)[i] = (float)v;
        else
            ((double *)in)[i] = v;
    }
    fill_sentinel(out, count * es + GUARD_BYTES);
    if (inplace)
        memcpy(out, in, count * es);
    int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, (int)count, is_float ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM,
                           comm);
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Allreduce returned %d", rc);
    for (size_t i = 0; i < count; i++) {
        double ref = 0, mag = 0;
        for (int j = 0; j < n; j++) {
            double v = gen_real(seed, wr[j], i);
            if (is_float)
                v = (float)v;
            ref += v;
            mag += fabs(v);
        }
        double got = is_float ? ((float *)out)[i] : ((double *)out)[i];
        double tol = mag * (double)n * (is_float ? 1.2e-7 : 2.3e-16);
        if (!(fabs(got - ref) <= tol)) {
            tc_fail(t, "recvbuf[%zu]: got %.17g expected %.17g (+-%.3g)", i, got, ref, tol);
            break;
        }
    }
    check_guard(t, out + count * es, GUARD_BYTES, "recvbuf");
    if (!same_on_all_ranks(comm, hash_bytes(out, count * es)))
        tc_fail(t, "results are not bit-identical on all ranks");
    free(in);
    free(out);
    free(wr);
}

#define CASE(...)                                                                                                  \
    if (tc_case(&t, __VA_ARGS__))

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "allreduce", argc, argv);
    check_kind_extents(&t);
    tcomm comms[4];
    int nc = make_comms(comms, t.quick);

    /* A: every valid (type, op) pair on MPI_COMM_WORLD, rotating count and in-place. */
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
                    int inpl = i % 3 == 1;
                    CASE("world %s %s count=%zu inplace=%d", kind_names[k], op_names[o], c, inpl)
                    one_allreduce(&t, MPI_COMM_WORLD, k, o, c, inpl);
                }
            }
    }
    /* B: all communicators, in place or not. */
    {
        static const int combos[4][2] = {{K_INT, O_SUM}, {K_DOUBLE, O_MIN}, {K_2INT, O_MINLOC}, {K_UNSIGNED, O_BOR}};
        for (int ci = 0; ci < nc; ci++) {
            int n, i = 0;
            MPI_Comm_size(comms[ci].comm, &n);
            size_t counts[5] = {0, 1, (size_t)n + 1, 1000, 4099};
            for (int cc = 0; cc < 5; cc++)
                for (int inpl = 0; inpl < 2; inpl++)
                    for (int m = 0; m < (t.quick ? 1 : 2); m++, i++) {
                        if (t.quick && (cc + inpl) % 2)
                            continue;
                        int k = combos[i % 4][0], o = combos[i % 4][1];
                        CASE("%s %s %s count=%zu inplace=%d", comms[ci].name, kind_names[k], op_names[o], counts[cc],
                             inpl)
                        one_allreduce(&t, comms[ci].comm, k, o, counts[cc], inpl);
                    }
        }
    }
    /* C: large messages. */
    {
        static const int combos[8][2] = {{K_INT, O_SUM},    {K_DOUBLE, O_SUM},        {K_FLOAT, O_MAX},
                                         {K_ULL, O_BXOR},   {K_SCHAR, O_PROD},        {K_BOOL, O_LAND},
                                         {K_INT64, O_LXOR}, {K_FLOAT_INT, O_MAXLOC}};
        for (int i = 0; i < (t.quick ? 3 : 8); i++) {
            int k = combos[i][0], o = combos[i][1], inpl = i % 2;
            CASE("world %s %s count=100003 inplace=%d", kind_names[k], op_names[o], inpl)
            one_allreduce(&t, MPI_COMM_WORLD, k, o, 100003, inpl);
        }
    }
    /* D: rounding-sensitive sums must be bit-identical on all ranks. */
    for (int ci = 0; ci < nc; ci++) {
        int n;
        MPI_Comm_size(comms[ci].comm, &n);
        size_t counts[4] = {1, (size_t)n + 1, 1000, 100003};
        for (int cc = 0; cc < 4; cc++)
            for (int f = 0; f < 2; f++) {
                int inpl = (cc + f + ci) % 2;
                if (t.quick && ((cc == 3 && ci > 0) || f != cc % 2))
                    continue;
                CASE("%s non-integer %s MPI_SUM count=%zu inplace=%d", comms[ci].name, f ? "MPI_FLOAT" : "MPI_DOUBLE",
                     counts[cc], inpl)
                one_real_sum(&t, comms[ci].comm, f, counts[cc], inpl);
            }
    }
    free_comms(comms, nc);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
