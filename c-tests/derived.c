/* derived.c -- derived datatypes with holes and resized extents.
 *
 * Layouts (element = one extent; only the listed fields carry data, the rest are holes):
 *   vec5   MPI_Type_vector(2,1,2,MPI_INT) resized to 20 bytes        int@0 int@8
 *          (made with the large-count `_c` constructors on MPICH's ABI)
 *   idx6   MPI_Type_indexed({2,1},{0,4},MPI_DOUBLE) resized to 48    double@0 double@8 double@32
 *   mixed  MPI_Type_create_struct {int@0, double@16, short@28}, 40    int double short
 *   aff16  MPI_Type_create_struct {unsigned@0, unsigned@8}, 16        a b
 *   lead12 MPI_Type_create_struct {int@4} resized to lb 0, extent 12   a hole before the data
 *          (true lower bound 4) and after it
 *   neg24  MPI_Type_create_struct {double@-8, int@8} resized to lb -8,  double int
 *          extent 24: a negative lower bound, so every buffer the MPI is given points 8
 *          bytes past the start of its first element's data
 *
 * Neither Open MPI 4.1 nor MPICH 4.0 accepts a PREDEFINED op on a derived datatype (both
 * return MPI_ERR_OP, even for MPI_Type_contiguous(2, MPI_INT)), so reductions here use
 * user-defined ops: `usum` (commutative; per field: integer / double sums, short XOR) on
 * every layout and `uaffine` (non-commutative affine composition, see noncommutative.c) on
 * vec5 and aff16; errors.c compares the error class of the predefined-op case. The user
 * function finds the layout from the datatype handle it is given: an implementation must
 * pass the user's datatype.
 *
 * Receive buffers are pre-filled with a sentinel: holes (and allgatherv gaps) must stay
 * untouched, data must match the rank-order reference. Also: allgatherv with different
 * send and receive types of the same type signature (vec5 <-> 2 x MPI_INT), and the
 * padding of MPI_DOUBLE_INT (a hole of the predefined pair type) under MPI_MINLOC.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "common.h"
#include <dlfcn.h>

typedef struct { int kind; size_t off; int op; } field_t;
typedef struct {
    const char *name;
    MPI_Datatype dt;
    size_t extent;
    int nf;
    field_t f[3];
    size_t shift; /* -lb: the MPI's element base lies this far into the element's slot */
} layout_t;

enum { L_VEC5, L_IDX6, L_MIXED, L_AFF16, L_LEAD12, L_NEG24, NL };
static layout_t L[NL] = {
    {"vec5", MPI_DATATYPE_NULL, 20, 2, {{K_INT, 0, O_SUM}, {K_INT, 8, O_SUM}}, 0},
    {"idx6", MPI_DATATYPE_NULL, 48, 3, {{K_DOUBLE, 0, O_SUM}, {K_DOUBLE, 8, O_SUM}, {K_DOUBLE, 32, O_SUM}}, 0},
    {"mixed", MPI_DATATYPE_NULL, 40, 3, {{K_INT, 0, O_SUM}, {K_DOUBLE, 16, O_SUM}, {K_SHORT, 28, O_BXOR}}, 0},
    {"aff16", MPI_DATATYPE_NULL, 16, 2, {{K_UNSIGNED, 0, O_SUM}, {K_UNSIGNED, 8, O_SUM}}, 0},
    {"lead12", MPI_DATATYPE_NULL, 12, 1, {{K_INT, 4, O_SUM}}, 0},
    {"neg24", MPI_DATATYPE_NULL, 24, 2, {{K_DOUBLE, 0, O_SUM}, {K_INT, 16, O_SUM}}, 8},
};

static void build_layouts(void)
{
    MPI_Datatype tmp;
#if defined(MPICH_VERSION) && MPI_VERSION >= 4
    /* MPI-4's large-count constructors where the MPI has them (MPICH 4.x/5.x, Intel MPI; as
     * mpi4py makes its types there): MPI_Type_get_envelope fails on such a type, fatally by
     * default (pcoll called it until session 49: the job aborted) */
    MPI_Type_vector_c(2, 1, 2, MPI_INT, &tmp);
    MPI_Type_create_resized_c(tmp, 0, 20, &L[L_VEC5].dt);
#else
    MPI_Type_vector(2, 1, 2, MPI_INT, &tmp);
    MPI_Type_create_resized(tmp, 0, 20, &L[L_VEC5].dt);
#endif
    MPI_Type_free(&tmp);
    int bl[3] = {2, 1, 1}, di[2] = {0, 4};
    MPI_Type_indexed(2, bl, di, MPI_DOUBLE, &tmp);
    MPI_Type_create_resized(tmp, 0, 48, &L[L_IDX6].dt);
    MPI_Type_free(&tmp);
    int bl1[3] = {1, 1, 1};
    MPI_Aint d3[3] = {0, 16, 28};
    MPI_Datatype t3[3] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    MPI_Type_create_struct(3, bl1, d3, t3, &tmp);
    MPI_Type_create_resized(tmp, 0, 40, &L[L_MIXED].dt);
    MPI_Type_free(&tmp);
    MPI_Aint d2[2] = {0, 8};
    MPI_Datatype t2[2] = {MPI_UNSIGNED, MPI_UNSIGNED};
    MPI_Type_create_struct(2, bl1, d2, t2, &tmp);
    MPI_Type_create_resized(tmp, 0, 16, &L[L_AFF16].dt);
    MPI_Type_free(&tmp);
    MPI_Aint d1 = 4;
    MPI_Datatype t1 = MPI_INT;
    MPI_Type_create_struct(1, bl1, &d1, &t1, &tmp);
    MPI_Type_create_resized(tmp, 0, 12, &L[L_LEAD12].dt);
    MPI_Type_free(&tmp);
    MPI_Aint dn[2] = {-8, 8};
    MPI_Datatype tn[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(2, bl1, dn, tn, &tmp);
    MPI_Type_create_resized(tmp, -8, 24, &L[L_NEG24].dt);
    MPI_Type_free(&tmp);
    for (int l = 0; l < NL; l++)
        MPI_Type_commit(&L[l].dt);
}

static volatile int unknown_type_seen;

static int layout_of(MPI_Datatype dt)
{
    for (int l = 0; l < NL; l++)
        if (L[l].dt == dt)
            return l;
    return -1;
}

/* commutative: per field sum (short: xor) */
static void usum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int l = layout_of(*dt);
    if (l < 0) {
        unknown_type_seen = 1;
        return;
    }
    char *io = (char *)inout - L[l].shift, *ip = (char *)in - L[l].shift; /* slot starts */
    for (int i = 0; i < *len; i++)
        for (int f = 0; f < L[l].nf; f++) {
            size_t o = (size_t)i * L[l].extent + L[l].f[f].off;
            fold_elem(L[l].f[f].kind, L[l].f[f].op, io + o, ip + o);
        }
}

/* non-commutative: (a, b) at fields 0 and 1 is x -> a*x+b mod 2^32; lo o hi applies lo first */
static void affine_pair(const layout_t *lay, void *hi_out, const void *lo)
{
    uint32_t la, lb, ha, hb;
    memcpy(&la, (const char *)lo + lay->f[0].off, 4);
    memcpy(&lb, (const char *)lo + lay->f[1].off, 4);
    memcpy(&ha, (char *)hi_out + lay->f[0].off, 4);
    memcpy(&hb, (char *)hi_out + lay->f[1].off, 4);
    uint32_t a = ha * la, b = ha * lb + hb;
    memcpy((char *)hi_out + lay->f[0].off, &a, 4);
    memcpy((char *)hi_out + lay->f[1].off, &b, 4);
}
static void uaffine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int l = layout_of(*dt);
    if (l != L_VEC5 && l != L_AFF16) {
        unknown_type_seen = 1;
        return;
    }
    for (int i = 0; i < *len; i++)
        affine_pair(&L[l], (char *)inout + (size_t)i * L[l].extent, (char *)in + (size_t)i * L[l].extent);
}

static MPI_Op usum, uaffine;

enum { C_REDUCE, C_ALLREDUCE, C_RS };

/* Native defects with the types whose true lower bound is not 0, on the registry's MPIs, where
 * no pcoll is loaded (pcoll routes these calls around the native ones under any forced
 * algorithm, so with pcoll they run):
 * - MPICH 5.0.2's shared-memory release_gather collectives (a communicator's from its 6th
 *   collective) with a commutative user op: MPI_Reduce on lead12 or neg24 to a root other than
 *   0 frees a shifted pointer (glibc aborts: "free(): invalid pointer", under 700 elements;
 *   pcoll's defect mpich5-reduce-userop-true-lb); MPI_Allreduce on neg24 segfaults at any
 *   size (mpich5-allreduce-userop-negative-lb).
 * - Intel MPI 2021.19: MPI_Reduce and MPI_Allreduce with a user op on neg24 compute wrong
 *   results, and its MPI_Reduce of 1000 lead12 elements to root 1 segfaulted (p = 3, in the
 *   split_parity communicator); pcoll's defects impi-reduce-userop-holes and
 *   impi-allreduce-userop-holes (any type with holes). */
enum { NATIVE_OTHER, NATIVE_MPICH5, NATIVE_IMPI };
static int unguarded_native = -1;
static int native_defect_skip_lb(tctx *t, int coll, int l, int affine, int root)
{
    if (!t->avoid_native_defects || affine)
        return 0;
    if (unguarded_native < 0) {
        char ver[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0, major = 0;
        MPI_Get_library_version(ver, &len);
        const char *v = strstr(ver, "MPICH Version:");
        if (v)
            sscanf(v, "MPICH Version: %d", &major);
        unguarded_native = dlsym(RTLD_DEFAULT, "pcoll_force") != NULL ? NATIVE_OTHER
                           : strstr(ver, "Intel")                   ? NATIVE_IMPI
                           : major >= 5                             ? NATIVE_MPICH5
                                                                    : NATIVE_OTHER;
    }
    int skip = 0;
    if (unguarded_native == NATIVE_MPICH5)
        skip = (coll == C_REDUCE && root != 0 && (l == L_LEAD12 || l == L_NEG24)) ||
               (coll == C_ALLREDUCE && l == L_NEG24);
    else if (unguarded_native == NATIVE_IMPI)
        skip = (coll == C_REDUCE || coll == C_ALLREDUCE) && (l == L_LEAD12 || l == L_NEG24);
    t->nskipped += skip;
    return skip;
}

/* element i of rank into an element slot (holes untouched) */
static void gen_el(int l, int affine, uint64_t seed, int rank, size_t i, void *el)
{
    for (int f = 0; f < L[l].nf; f++) {
        void *p = (char *)el + L[l].f[f].off;
        if (affine) {
            uint32_t v = (uint32_t)rnd(seed, rank, i * 3 + (size_t)f, 0);
            if (f == 0)
                v |= 1u;
            memcpy(p, &v, 4);
        } else {
            gen_elem(L[l].f[f].kind, L[l].f[f].op, seed, rank, i * 3 + (size_t)f, p);
        }
    }
}
static void gen_els(int l, int affine, uint64_t seed, int rank, size_t i0, size_t n, void *buf)
{
    for (size_t i = 0; i < n; i++)
        gen_el(l, affine, seed, rank, i0 + i, (char *)buf + i * L[l].extent);
}

static void ref_els(int l, int affine, uint64_t seed, const int *wr, int np, size_t i0, size_t n, void *out)
{
    unsigned char x[64];
    for (size_t i = 0; i < n; i++) {
        char *acc = (char *)out + i * L[l].extent;
        gen_el(l, affine, seed, wr[0], i0 + i, acc);
        for (int r = 1; r < np; r++) {
            gen_el(l, affine, seed, wr[r], i0 + i, x);
            if (affine) {
                affine_pair(&L[l], x, acc); /* acc := acc o x */
                for (int f = 0; f < 2; f++)
                    memcpy(acc + L[l].f[f].off, x + L[l].f[f].off, 4);
            } else {
                for (int f = 0; f < L[l].nf; f++)
                    fold_elem(L[l].f[f].kind, L[l].f[f].op, acc + L[l].f[f].off, x + L[l].f[f].off);
            }
        }
    }
}

/* data fields must equal want's; every other byte of the n elements must be sentinel */
static void check_els(tctx *t, int l, const unsigned char *got, const unsigned char *want, size_t n, const char *what)
{
    const size_t ext = L[l].extent;
    unsigned char mask[64];
    memset(mask, 0, ext);
    for (int f = 0; f < L[l].nf; f++)
        memset(mask + L[l].f[f].off, 1, kind_size(L[l].f[f].kind));
    for (size_t i = 0; i < n; i++) {
        for (int f = 0; f < L[l].nf; f++) {
            size_t o = i * ext + L[l].f[f].off;
            if (!elem_equal(L[l].f[f].kind, got + o, want + o)) {
                char gs[64], ws[64];
                elem_str(L[l].f[f].kind, got + o, gs, sizeof gs);
                elem_str(L[l].f[f].kind, want + o, ws, sizeof ws);
                tc_fail(t, "%s element %zu field %d: got %s expected %s", what, i, f, gs, ws);
                return;
            }
        }
        for (size_t b = 0; b < ext; b++)
            if (!mask[b] && got[i * ext + b] != SENTINEL) {
                tc_fail(t, "%s element %zu: hole byte %zu was overwritten", what, i, b);
                return;
            }
    }
}

static const char *const coll_names[3] = {"reduce", "allreduce", "reduce_scatter"};

static void one_red(tctx *t, MPI_Comm comm, int coll, int l, int affine, size_t count, int root, int inplace,
                    int irregular)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t ext = L[l].extent;
    int *counts = xmalloc(sizeof(int) * (size_t)n);
    size_t total = count, mine = 0, mycount = count;
    if (coll == C_RS) {
        total = 0;
        for (int i = 0; i < n; i++) {
            uint64_t h = rnd(seed, -1, (size_t)i, 3);
            counts[i] = irregular ? ((h % 3 == 0) ? 0 : (int)(h % (count + 5))) : (int)count;
            if (i < r)
                mine += (size_t)counts[i];
            total += (size_t)counts[i];
        }
        mycount = (size_t)counts[r];
    }
    if ((coll == C_REDUCE && !affine && native_defect_skip(t, inplace, root, total * ext)) ||
        native_defect_skip_lb(t, coll, l, affine, root) ||
        (coll == C_RS && affine && native_defect_skip_rs_nc(t, n))) {
        free(counts);
        free(wr);
        return;
    }
    const int gets = coll != C_REDUCE || r == root;
    size_t outn = coll == C_RS ? (inplace ? total : mycount) : total;
    unsigned char *in = xmalloc(total * ext), *keep = xmalloc(total * ext);
    unsigned char *out = xmalloc(outn * ext + GUARD_BYTES), *want = xmalloc(mycount * ext);
    fill_sentinel(in, total * ext);
    fill_sentinel(out, outn * ext + GUARD_BYTES);
    fill_sentinel(want, mycount * ext);
    gen_els(l, affine, seed, wr[r], 0, total, in);
    memcpy(keep, in, total * ext);
    const void *sbuf = in + L[l].shift; /* the MPI's buffers: element bases (lb) */
    unsigned char *rbuf = out + L[l].shift;
    if (inplace && gets) {
        gen_els(l, affine, seed, wr[r], 0, total, out); /* holes stay sentinel */
        sbuf = MPI_IN_PLACE;
    }
    MPI_Op op = affine ? uaffine : usum;
    int rc = MPI_ERR_OTHER;
    unknown_type_seen = 0;
    switch (coll) {
    case C_REDUCE: rc = MPI_Reduce(sbuf, rbuf, (int)count, L[l].dt, op, root, comm); break;
    case C_ALLREDUCE: rc = MPI_Allreduce(sbuf, rbuf, (int)count, L[l].dt, op, comm); break;
    case C_RS: rc = MPI_Reduce_scatter(sbuf, rbuf, counts, L[l].dt, op, comm); break;
    }
    if (rc != MPI_SUCCESS)
        tc_fail(t, "collective returned %d", rc);
    if (unknown_type_seen)
        tc_fail(t, "user op was called with a datatype other than the user's");
    if (gets) {
        ref_els(l, affine, seed, wr, n, mine, mycount, want);
        check_els(t, l, out, want, mycount, "recvbuf");
        check_guard(t, out + outn * ext, GUARD_BYTES, "recvbuf");
    } else if (find_non_sentinel(out, outn * ext + GUARD_BYTES) != (size_t)-1) {
        tc_fail(t, "non-root recvbuf was written");
    }
    if (sbuf != MPI_IN_PLACE && memcmp(in, keep, total * ext) != 0)
        tc_fail(t, "sendbuf was modified");
    free(in);
    free(keep);
    free(out);
    free(want);
    free(counts);
    free(wr);
}

/* allgatherv with derived send and receive type (mode 0), send vec5 / receive 2c MPI_INT
 * (mode 1), send 2c MPI_INT / receive vec5 (mode 2). Displacements reversed with gaps. */
static void one_agv(tctx *t, MPI_Comm comm, int l, int mode, size_t c, int irregular, int inplace)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    int *counts = xmalloc(sizeof(int) * (size_t)n), *displs = xmalloc(sizeof(int) * (size_t)n);
    int *rcounts = xmalloc(sizeof(int) * (size_t)n), *rdispls = xmalloc(sizeof(int) * (size_t)n);
    size_t pos = 1, maxc = 0;
    for (int i = n - 1; i >= 0; i--) { /* element counts of layout l, reversed placement */
        uint64_t h = rnd(seed, -1, (size_t)i, 3);
        counts[i] = irregular ? ((h % 3 == 0) ? 0 : (int)(h % (c + 5))) : (int)c;
        displs[i] = (int)pos;
        pos += (size_t)counts[i] + h % 3;
        maxc = (size_t)counts[i] > maxc ? (size_t)counts[i] : maxc;
    }
    if (native_defect_skip_agv(t, n, inplace, displs[0], counts[0])) {
        free(counts);
        free(displs);
        free(rcounts);
        free(rdispls);
        free(wr);
        return;
    }
    const size_t len = pos; /* in elements of layout l */
    const size_t ext = L[l].extent;
    /* what travels: send side */
    size_t mycount = (size_t)counts[r];
    unsigned char *in = xmalloc(mycount * ext + 1), *packed = xmalloc(mycount * 8 + 1);
    fill_sentinel(in, mycount * ext);
    gen_els(l, 0, seed, wr[r], 0, mycount, in);
    for (size_t i = 0; i < mycount; i++) /* the same ints, packed (mode 2 sends these) */
        for (int f = 0; f < 2; f++)
            memcpy(packed + 8 * i + 4 * (size_t)f, in + i * ext + L[l].f[f].off, 4);
    /* receive side */
    size_t rbytes;
    MPI_Datatype rtype = L[l].dt;
    if (mode == 1) {
        rtype = MPI_INT;
        for (int i = 0; i < n; i++) {
            rcounts[i] = 2 * counts[i];
            rdispls[i] = 2 * displs[i];
        }
        rbytes = len * 8;
    } else {
        memcpy(rcounts, counts, sizeof(int) * (size_t)n);
        memcpy(rdispls, displs, sizeof(int) * (size_t)n);
        rbytes = len * ext;
    }
    unsigned char *out = xmalloc(rbytes + GUARD_BYTES), *want = xmalloc(maxc * ext + 1);
    fill_sentinel(out, rbytes + GUARD_BYTES);
    unsigned char *rbuf = out + (mode == 1 ? 0 : L[l].shift); /* the MPI's: element bases */
    int rc;
    if (inplace) {
        if (mode == 1)
            memcpy(out + (size_t)rdispls[r] * 4, packed, mycount * 8);
        else
            gen_els(l, 0, seed, wr[r], 0, mycount, out + (size_t)displs[r] * ext);
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, rcounts, rdispls, rtype, comm);
    } else if (mode == 2) {
        rc = MPI_Allgatherv(packed, (int)(2 * mycount), MPI_INT, rbuf, rcounts, rdispls, rtype, comm);
    } else {
        rc = MPI_Allgatherv(in + L[l].shift, (int)mycount, L[l].dt, rbuf, rcounts, rdispls, rtype, comm);
    }
    if (rc != MPI_SUCCESS)
        tc_fail(t, "MPI_Allgatherv returned %d", rc);
    unsigned char *covered = xmalloc(rbytes + 1);
    memset(covered, 0, rbytes);
    for (int j = 0; j < n && !t->case_failed; j++) {
        size_t cj = (size_t)counts[j];
        char what[48];
        snprintf(what, sizeof what, "block of rank %d", j);
        fill_sentinel(want, cj * ext);
        gen_els(l, 0, seed, wr[j], 0, cj, want);
        if (mode == 1) {
            for (size_t i = 0; i < cj; i++)
                for (int f = 0; f < 2; f++) {
                    size_t o = ((size_t)rdispls[j] + 2 * i + (size_t)f) * 4;
                    if (memcmp(out + o, want + i * ext + L[l].f[f].off, 4) != 0) {
                        tc_fail(t, "%s int %zu differs", what, 2 * i + (size_t)f);
                        i = cj;
                        break;
                    }
                }
            memset(covered + (size_t)rdispls[j] * 4, 1, cj * 8);
        } else {
            check_els(t, l, out + (size_t)displs[j] * ext, want, cj, what);
            memset(covered + (size_t)displs[j] * ext, 1, cj * ext); /* holes checked by check_els */
        }
    }
    for (size_t b = 0; b < rbytes; b++)
        if (!covered[b] && out[b] != SENTINEL) {
            tc_fail(t, "gap byte %zu was overwritten", b);
            break;
        }
    check_guard(t, out + rbytes, GUARD_BYTES, "recvbuf");
    free(in);
    free(packed);
    free(out);
    free(want);
    free(covered);
    free(counts);
    free(displs);
    free(rcounts);
    free(rdispls);
    free(wr);
}

/* MPI_DOUBLE_INT's 4 padding bytes are a hole of the predefined type: reduce/allreduce
 * with MPI_MINLOC and allgatherv must leave them alone. */
static void one_pair_padding(tctx *t, MPI_Comm comm, int coll, size_t count)
{
    int r, n;
    int *wr = world_ranks(comm, &n);
    MPI_Comm_rank(comm, &r);
    const uint64_t seed = t->seed ^ mix64((uint64_t)t->case_id);
    const size_t es = sizeof(double_int_t);
    size_t outn = coll == 3 ? count * (size_t)n : count;
    double_int_t *in = xmalloc(count * es), *out = xmalloc(outn * es), *want = xmalloc(outn * es);
    fill_sentinel(in, count * es);
    fill_sentinel(out, outn * es);
    for (size_t i = 0; i < count; i++) { /* fields only: the padding stays sentinel */
        double_int_t e;
        gen_elem(K_DOUBLE_INT, O_MINLOC, seed, wr[r], i, &e);
        in[i].v = e.v;
        in[i].i = e.i;
    }
    int rc = MPI_ERR_OTHER, gets = 1;
    if (coll == 0) {
        rc = MPI_Reduce(in, out, (int)count, MPI_DOUBLE_INT, MPI_MINLOC, n - 1, comm);
        gets = r == n - 1;
    } else if (coll == 1) {
        rc = MPI_Allreduce(in, out, (int)count, MPI_DOUBLE_INT, MPI_MINLOC, comm);
    } else {
        int *cnt = xmalloc(sizeof(int) * (size_t)n), *dsp = xmalloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) {
            cnt[i] = (int)count;
            dsp[i] = (int)count * (n - 1 - i);
        }
        rc = MPI_Allgatherv(in, (int)count, MPI_DOUBLE_INT, out, cnt, dsp, MPI_DOUBLE_INT, comm);
        free(cnt);
        free(dsp);
    }
    if (rc != MPI_SUCCESS)
        tc_fail(t, "collective returned %d", rc);
    if (gets) {
        if (coll == 3) {
            for (int j = 0; j < n; j++)
                gen_buf(K_DOUBLE_INT, O_MINLOC, seed, wr[j], 0, count, want + count * (size_t)(n - 1 - j));
        } else {
            ref_fold(K_DOUBLE_INT, O_MINLOC, seed, wr, n, 0, count, want);
        }
        check_elems(t, K_DOUBLE_INT, out, want, outn, "recvbuf");
        for (size_t i = 0; i < outn; i++) {
            const unsigned char *pad = (const unsigned char *)&out[i] + offsetof(double_int_t, i) + sizeof(int);
            if (find_non_sentinel(pad, es - offsetof(double_int_t, i) - sizeof(int)) != (size_t)-1) {
                tc_fail(t, "padding of MPI_DOUBLE_INT element %zu was overwritten", i);
                break;
            }
        }
    }
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
    tc_init(&t, "derived", argc, argv);
    build_layouts();
    for (int l = 0; l < NL; l++) {
        MPI_Aint lb, ext;
        MPI_Type_get_extent(L[l].dt, &lb, &ext);
        if (lb != -(MPI_Aint)L[l].shift || (size_t)ext != L[l].extent) {
            tc_case(&t, "extent of %s", L[l].name);
            tc_fail(&t, "lb=%ld extent=%ld, expected %ld and %zu", (long)lb, (long)ext, -(long)L[l].shift,
                    L[l].extent);
        }
    }
    MPI_Op_create(usum_fn, 1, &usum);
    MPI_Op_create(uaffine_fn, 0, &uaffine);
    tcomm comms[4];
    int nc = make_comms(comms, t.quick);

    for (int ci = 0; ci < nc; ci++) {
        int n, i = 0;
        MPI_Comm_size(comms[ci].comm, &n);
        size_t counts[5] = {0, 1, (size_t)n + 1, 1000, 20011};
        int ncounts = t.quick ? 4 : 5;
        /* reductions: every layout with usum, vec5 / aff16 with uaffine; roots rotate
         * (every root is visited on world), in place half of the time */
        for (int coll = 0; coll < 3; coll++)
            for (int l = 0; l < NL; l++)
                for (int affine = 0; affine < 2; affine++) {
                    if (affine && l != L_VEC5 && l != L_AFF16)
                        continue;
                    for (int cc = 0; cc < ncounts; cc++, i++) {
                        if ((ci > 0 && cc == 4) || (t.quick && (cc + l + coll + ci) % 2))
                            continue;
                        int root = i % n, inpl = (i / 2) % 2, irr = coll == C_RS && i % 3 == 1;
                        CASE("%s %s %s op=%s count=%zu root=%d inplace=%d irregular=%d", comms[ci].name,
                             coll_names[coll], L[l].name, affine ? "uaffine" : "usum", counts[cc], root, inpl, irr)
                        one_red(&t, comms[ci].comm, coll, l, affine, counts[cc], root, inpl, irr);
                    }
                }
        /* allgatherv */
        for (int l = 0; l < NL; l++)
            for (int cc = 0; cc < ncounts; cc++)
                for (int inpl = 0; inpl < 2; inpl++, i++) {
                    if ((ci > 0 && cc == 4) || (t.quick && (cc + l + inpl + ci) % 2))
                        continue;
                    CASE("%s allgatherv %s count=%zu irregular=%d inplace=%d", comms[ci].name, L[l].name, counts[cc],
                         i % 2, inpl)
                    one_agv(&t, comms[ci].comm, l, 0, counts[cc], i % 2, inpl);
                }
        for (int mode = 1; mode < 3; mode++)
            for (int cc = 0; cc < ncounts; cc++, i++) {
                int inpl = mode == 1 && cc % 2;
                CASE("%s allgatherv %s count=%zu irregular=%d inplace=%d", comms[ci].name,
                     mode == 1 ? "send vec5 / recv 2x MPI_INT" : "send 2x MPI_INT / recv vec5", counts[cc], i % 2,
                     inpl)
                one_agv(&t, comms[ci].comm, L_VEC5, mode, counts[cc], i % 2, inpl);
            }
        /* MPI_DOUBLE_INT padding */
        for (int coll = 0; coll < 4; coll++) {
            if (coll == 2)
                continue;
            CASE("%s %s MPI_DOUBLE_INT padding count=%zu", comms[ci].name,
                 coll == 0 ? "reduce MINLOC root=p-1" : coll == 1 ? "allreduce MINLOC" : "allgatherv", counts[3])
            one_pair_padding(&t, comms[ci].comm, coll, counts[3]);
        }
    }
    free_comms(comms, nc);
    MPI_Op_free(&usum);
    MPI_Op_free(&uaffine);
    for (int l = 0; l < NL; l++)
        MPI_Type_free(&L[l].dt);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
