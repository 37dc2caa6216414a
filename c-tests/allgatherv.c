/* allgatherv.c -- MPI_Allgatherv against locally regenerated blocks.
 *
 * Counts: uniform 0, 1, p-1, p+1, 1000; irregular with zeros; one non-zero block; skewed;
 * about 100003 in total. Displacements: packed; reversed order with gaps; a random
 * permutation with gaps where zero-sized blocks point anywhere (even into other blocks).
 * recvbuf is pre-filled with a sentinel: gaps and the guard after the last block must stay
 * untouched. MPI_IN_PLACE: rank r's own block is already at displs[r] of recvbuf
 * (sendcount / sendtype are ignored: we pass 0 and MPI_DATATYPE_NULL). "from-end": the
 * reversed layout, but odd ranks pass the end of their buffer with negative displacements
 * (each rank's displacements are its own: one rank's must not change how the others run).
 */
#include "common.h"

enum { PAT_UNIFORM, PAT_IRREGULAR, PAT_ONE, PAT_SKEWED, PAT_LARGE, NPAT };
static const char *const pat_names[NPAT] = {"uniform", "irregular", "one-nonzero", "skewed", "large"};
enum { D_PACKED, D_REVERSED_GAPS, D_PERMUTED_GAPS, D_FROM_END, NDISP };
static const char *const disp_names[NDISP] = {"packed", "reversed+gaps", "permuted+gaps", "from-end"};

static void make_counts(int pat, size_t c, uint64_t seed, int n, int *counts)
{
    for (int i = 0; i < n; i++) {
        uint64_t h = rnd(seed, -1, (size_t)i, 3);
        switch (pat) {
        case PAT_UNIFORM: counts[i] = (int)c; break;
        case PAT_IRREGULAR: counts[i] = (h % 3 == 0) ? 0 : 1 + (int)(h % 37); break;
        case PAT_ONE: counts[i] = (i == (int)(seed % (uint64_t)n)) ? 1000 : 0; break;
        case PAT_SKEWED: counts[i] = 5 * (n - 1 - i) * (n - 1 - i) + (i % 2) * 3; break;
        case PAT_LARGE: counts[i] = 100003 / n + (i < 100003 % n); break;
        }
    }
}

/* Fills displs; returns the number of elements recvbuf must hold. */
static size_t make_displs(int dp, uint64_t seed, int n, const int *counts, int *displs)
{
    size_t pos = 0, end = 0;
    switch (dp) {
    case D_PACKED:
        for (int i = 0; i < n; i++) {
            displs[i] = (int)pos;
            pos += (size_t)counts[i];
        }
        break;
    case D_REVERSED_GAPS:
    case D_FROM_END:
        pos = rnd(seed, -1, 0, 4) % 3;
        for (int i = n - 1; i >= 0; i--) {
            displs[i] = (int)pos;
            pos += (size_t)counts[i] + rnd(seed, -1, (size_t)i, 5) % 5;
        }
        break;
    case D_PERMUTED_GAPS: {
        int *perm = xmalloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(rnd(seed, -1, (size_t)i, 6) % (uint64_t)(i + 1)), x = perm[i];
            perm[i] = perm[j];
            perm[j] = x;
        }
        pos = 1;
        for (int s = 0; s < n; s++) {
            int i = perm[s];
            if (counts[i] == 0) {
                displs[i] = (int)(rnd(seed, -1, (size_t)i, 7) % (pos + 1)); /* anywhere */
                continue;
            }
            displs[i] = (int)pos;
            pos += (size_t)counts[i] + rnd(seed, -1, (size_t)i, 5) % 8;
        }
        free(perm);
        break;
    }
    }
    for (int i = 0; i < n; i++)
        if (counts[i] && (size_t)(displs[i] + counts[i]) > end)
            end = (size_t)(displs[i] + counts[i]);
    return end;
}

static void one_agv(tctx *t, MPI_Comm comm, int k, int pat, size_t c, int dp, int inplace)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = kind_size(k);
    int *counts = xmalloc(sizeof(int) * (size_t)n), *displs = xmalloc(sizeof(int) * (size_t)n);
    make_counts(pat, c, seed, n, counts);
    size_t len = make_displs(dp, seed, n, counts, displs);
    if (native_defect_skip_agv(t, n, inplace, displs[0], counts[0])) {
        free(counts);
        free(displs);
        free(wr);
        return;
    }
    size_t mycount = (size_t)counts[r], bytes = len * es, maxc = 0;
    for (int j = 0; j < n; j++)
        maxc = (size_t)counts[j] > maxc ? (size_t)counts[j] : maxc;
    unsigned char *in = xmalloc(mycount * es), *keep = xmalloc(mycount * es);
    unsigned char *out = xmalloc(bytes + GUARD_BYTES), *want = xmalloc(maxc * es);
    unsigned char *covered = xmalloc(bytes);
    gen_buf(k, -1, seed, wr[r], 0, mycount, in);
    memcpy(keep, in, mycount * es);
    fill_sentinel(out, bytes + GUARD_BYTES);
    int rc;
    /* The buffer as this rank passes it: from its end for odd ranks under D_FROM_END. */
    int shift = dp == D_FROM_END && r % 2 ? (int)len : 0;
    int *dcall = xmalloc(sizeof(int) * (size_t)n);
    for (int j = 0; j < n; j++)
        dcall[j] = displs[j] - shift;
    unsigned char *base = out + (size_t)shift * es;
    if (inplace) {
        memcpy(out + (size_t)displs[r] * es, in, mycount * es);
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base, counts, dcall, kind_dt(k), comm);
    } else {
        rc = MPI_Allgatherv(in, (int)mycount, kind_dt(k), base, counts, dcall, kind_dt(k), comm);
    }
    free(dcall);
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Allgatherv returned %d", rc);
    memset(covered, 0, bytes);
    for (int j = 0; j < n; j++) {
        char what[48];
        size_t cj = (size_t)counts[j];
        if (!cj)
            continue;
        gen_buf(k, -1, seed, wr[j], 0, cj, want);
        snprintf(what, sizeof what, "block of rank %d at displ %d", j, displs[j]);
        check_elems(t, k, out + (size_t)displs[j] * es, want, cj, what);
        memset(covered + (size_t)displs[j] * es, 1, cj * es);
    }
    for (size_t b = 0; b < bytes; b++)
        if (!covered[b] && out[b] != SENTINEL) {
            tc_fail(t, "gap byte %zu (element %zu) was overwritten", b, b / es);
            break;
        }
    check_guard(t, out + bytes, GUARD_BYTES, "recvbuf");
    if (!inplace && memcmp(in, keep, mycount * es) != 0)
        tc_fail(t, "sendbuf was modified");
    free(in);
    free(keep);
    free(out);
    free(want);
    free(covered);
    free(counts);
    free(displs);
    free(wr);
}

#define CASE(...)                                                                                                  \
    if (tc_case(&t, __VA_ARGS__))

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "allgatherv", argc, argv);
    tcomm comms[4];
    int nc = make_comms(comms, t.quick);
    static const int kinds[10] = {K_INT,  K_DOUBLE, K_CHAR, K_BYTE,  K_SHORT,
                                  K_DOUBLE_INT, K_ULL, K_BOOL, K_2INT, K_FLOAT};

    /* A: every pattern x displacement layout x in-place on every communicator. */
    for (int ci = 0; ci < nc; ci++) {
        int n, i = 0;
        MPI_Comm_size(comms[ci].comm, &n);
        size_t counts[5] = {0, 1, (size_t)n - 1, (size_t)n + 1, 1000};
        for (int pat = 0; pat < NPAT; pat++)
            for (int cc = 0; cc < (pat == PAT_UNIFORM ? 5 : 1); cc++)
                for (int dp = 0; dp < NDISP; dp++)
                    for (int inpl = 0; inpl < 2; inpl++, i++) {
                        if (t.quick && ((dp + inpl + cc + pat + (ci > 0)) % 2 || (pat == PAT_LARGE && (ci > 0 || dp == 1))))
                            continue;
                        int k = kinds[(i + ci) % 10];
                        CASE("%s %s counts=%s(%zu) displs=%s inplace=%d", comms[ci].name, kind_names[k],
                             pat_names[pat], counts[cc], disp_names[dp], inpl)
                        one_agv(&t, comms[ci].comm, k, pat, counts[cc], dp, inpl);
                    }
    }
    /* B: every type on world with irregular counts and permuted displacements. */
    for (int ki = 0; ki < 10; ki++)
        for (int inpl = 0; inpl < 2; inpl++) {
            if (t.quick && inpl != ki % 2)
                continue;
            CASE("world %s counts=irregular displs=permuted+gaps inplace=%d", kind_names[kinds[ki]], inpl)
            one_agv(&t, MPI_COMM_WORLD, kinds[ki], PAT_IRREGULAR, 0, D_PERMUTED_GAPS, inpl);
        }
    /* C: one call repeated on a one-rank communicator, its block at the start and away from it
     * by turns (a gate that remembers the last call it forwarded must tell the two apart). */
    for (int rep = 0; rep < (t.quick ? 6 : 12); rep++) {
        int dp = rep % 2 ? D_REVERSED_GAPS : D_PACKED;
        CASE("self repeat %d MPI_INT counts=uniform(1000) displs=%s", rep, disp_names[dp])
        one_agv(&t, MPI_COMM_SELF, K_INT, PAT_UNIFORM, 1000, dp, 0);
    }
    free_comms(comms, nc);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
