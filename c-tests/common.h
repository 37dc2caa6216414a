/* common.h -- shared helpers for the pcoll c-tests.
 *
 * Every test regenerates every rank's input locally from (seed, world rank, element index)
 * and folds it in rank order 0..p-1 to get an independent reference; results of the
 * collective under test are compared against that reference only (never against another
 * call of the library under test). Cross-rank bookkeeping (votes, case counts, the
 * allreduce's same-result check) uses PMPI_Allgather, which no interposed library reaches:
 * pcoll serves MPI_Allgather, and a broken one must not be able to hide a failure.
 *
 * Command-line options understood by every C test (parsed by tc_init):
 *   quick                  smaller case matrix (used by `run-tests.sh --quick`)
 *   case=N                 run only case N (the number printed in a FAIL line)
 *   avoid-native-defects   skip cases on which Debian's MPICH 4.0.2 itself fails (crash or
 *                          wrong result; see native_defect_skip*): run-tests.sh passes it
 *                          when the native MPICH collective would serve the call
 *   seed=N                 change the data seed
 *   verbose                rank 0 prints every case before running it
 */
#ifndef PCOLL_CTESTS_COMMON_H
#define PCOLL_CTESTS_COMMON_H

#include <mpi.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* deterministic data                                                                   */
/* ------------------------------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t x)
{ /* splitmix64 finaliser */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The random word for (seed, rank, idx, lane): identical on every rank. */
static inline uint64_t rnd(uint64_t seed, int rank, size_t idx, unsigned lane)
{
    return mix64(mix64(seed ^ ((uint64_t)lane << 56)) + (uint64_t)(rank + 1) * 0xD1B54A32D192ED03ull +
                 (uint64_t)idx * 0x8CB92BA72F3D8DD7ull);
}

/* ------------------------------------------------------------------------------------ */
/* test context, case bookkeeping, failure reporting                                     */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    const char *prog;
    int wrank, wsize;
    int quick, verbose, avoid_native_defects;
    long only_case; /* -1: all */
    uint64_t seed;
    long case_id;  /* id of the current case (incremented by tc_case) */
    long ncases;   /* cases actually run */
    long nfail;    /* failures seen by this rank */
    long nprinted; /* FAIL lines printed by this rank */
    long nskipped; /* cases skipped because of a native defect */
    char desc[320];
    int case_failed;
} tctx;

static inline void tc_init(tctx *t, const char *prog, int argc, char **argv)
{
    memset(t, 0, sizeof *t);
    t->prog = prog;
    t->only_case = -1;
    t->seed = 20240601u;
    MPI_Comm_rank(MPI_COMM_WORLD, &t->wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->wsize);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "quick"))
            t->quick = 1;
        else if (!strcmp(argv[i], "verbose"))
            t->verbose = 1;
        else if (!strcmp(argv[i], "avoid-native-defects"))
            t->avoid_native_defects = 1;
        else if (!strncmp(argv[i], "case=", 5))
            t->only_case = atol(argv[i] + 5);
        else if (!strncmp(argv[i], "seed=", 5))
            t->seed = strtoull(argv[i] + 5, NULL, 10);
        else if (t->wrank == 0)
            fprintf(stderr, "%s: ignoring unknown argument '%s'\n", prog, argv[i]);
    }
    /* fixed-size integer types of the reference must match the MPI ones */
}

/* Starts case number t->case_id+1 with a description; returns 1 if it is to be run.
 * Every rank of MPI_COMM_WORLD must call it identically (the ids must agree). */
static inline int tc_case(tctx *t, const char *fmt, ...)
{
    va_list ap;
    t->case_id++;
    t->case_failed = 0;
    va_start(ap, fmt);
    vsnprintf(t->desc, sizeof t->desc, fmt, ap);
    va_end(ap);
    if (t->only_case >= 0 && t->case_id != t->only_case)
        return 0;
    if (t->verbose && t->wrank == 0) {
        printf("case=%ld %s\n", t->case_id, t->desc);
        fflush(stdout);
    }
    t->ncases++;
    return 1;
}

/* Records a failure of the current case on this rank; prints the one-line reproducer. */
static inline void tc_fail(tctx *t, const char *fmt, ...)
{
    char detail[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    t->nfail++;
    if (t->case_failed++ == 0 && t->nprinted < 12) {
        char line[900];
        t->nprinted++;
        snprintf(line, sizeof line, "FAIL %s p=%d rank=%d case=%ld [%s] %s\n", t->prog, t->wsize, t->wrank,
                 t->case_id, t->desc, detail);
        fputs(line, stdout);
        fflush(stdout);
    }
}

/* Must be called by all ranks of MPI_COMM_WORLD. Prints PASS/FAILED from rank 0 and
 * returns the process exit code. */
static inline int tc_finish(tctx *t)
{
    long mine[3] = {t->nfail, t->ncases, t->nskipped};
    long *all = malloc(sizeof(long) * 3 * (size_t)t->wsize);
    long tot = 0, skipped = 0;
    PMPI_Allgather(mine, 3, MPI_LONG, all, 3, MPI_LONG, MPI_COMM_WORLD);
    for (int r = 0; r < t->wsize; r++) {
        tot += all[3 * r];
        skipped += all[3 * r + 2];
        if (all[3 * r + 1] != t->ncases) {
            tot++;
            if (t->wrank == 0)
                printf("FAIL %s p=%d rank=%d case=-1 ranks ran different numbers of cases (%ld vs %ld)\n", t->prog,
                       t->wsize, r, all[3 * r + 1], t->ncases);
        }
    }
    free(all);
    if (t->wrank == 0) {
        if (skipped)
            printf("NOTE %s skipped %ld (case, rank) pairs to avoid native MPI defects\n", t->prog, skipped);
        if (tot == 0)
            printf("PASS %s %ld\n", t->prog, t->ncases);
        else
            printf("FAILED %s %ld failures\n", t->prog, tot);
        fflush(stdout);
    }
    return tot != 0;
}

/* Every rank votes; returns 1 on all ranks if any rank voted 1 (PMPI_Allgather). */
static inline int any_rank(MPI_Comm comm, int vote)
{
    int n;
    MPI_Comm_size(comm, &n);
    int *v = malloc(sizeof(int) * (size_t)n);
    int r = 0;
    PMPI_Allgather(&vote, 1, MPI_INT, v, 1, MPI_INT, comm);
    for (int i = 0; i < n; i++)
        r |= v[i];
    free(v);
    return r;
}

/* Debian MPICH 4.0.2: MPI_Reduce with MPI_IN_PLACE at a root other than 0 segfaults for
 * messages over 2048 bytes (of data, i.e. count * type size; `bytes` may be given as
 * count * extent, which skips a few more cases than necessary). It happens with predefined
 * ops and commutative user ops, not with non-commutative user ops. Under
 * `avoid-native-defects` such cases are skipped. */
static inline int native_defect_skip(tctx *t, int inplace, int root, size_t bytes)
{
    if (t->avoid_native_defects && inplace && root != 0 && bytes > 2048) {
        t->nskipped++;
        return 1;
    }
    return 0;
}

/* Debian MPICH 4.0.2: MPI_Allgatherv on a communicator of size 1 (not in place) writes the
 * block at the start of recvbuf, ignoring displs[0]. */
static inline int native_defect_skip_agv(tctx *t, int commsize, int inplace, int displ0, int count0)
{
    if (t->avoid_native_defects && commsize == 1 && !inplace && displ0 != 0 && count0 != 0) {
        t->nskipped++;
        return 1;
    }
    return 0;
}

/* Debian MPICH 4.0.2: MPI_Reduce_scatter with a NON-commutative user op on a
 * non-contiguous datatype, on a communicator whose size is a power of two (>= 2), returns
 * wrong blocks or corrupts the heap (seen at p = 2 and 4; p = 3 is fine). */
static inline int native_defect_skip_rs_nc(tctx *t, int commsize)
{
    if (t->avoid_native_defects && commsize >= 2 && (commsize & (commsize - 1)) == 0) {
        t->nskipped++;
        return 1;
    }
    return 0;
}

/* World ranks of the members of comm, in comm rank order (no collective). */
static inline int *world_ranks(MPI_Comm comm, int *n_out)
{
    MPI_Group gw, gc;
    int n;
    MPI_Comm_size(comm, &n);
    int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        in[i] = i;
    MPI_Comm_group(comm, &gc);
    MPI_Comm_group(MPI_COMM_WORLD, &gw);
    MPI_Group_translate_ranks(gc, n, in, gw, out);
    MPI_Group_free(&gc);
    MPI_Group_free(&gw);
    free(in);
    *n_out = n;
    return out;
}

/* The communicators every test runs over. */
typedef struct {
    MPI_Comm comm;
    const char *name;
    int own; /* free it at the end */
} tcomm;

/* world, a dup of world, odd/even split, and a split with reversed key order. Sizes
 * differ per rank for the split ones, which is fine: all ranks still iterate the same
 * list. */
static inline int make_comms(tcomm *c, int quick)
{
    int r, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    c[n].comm = MPI_COMM_WORLD;
    c[n].name = "world";
    c[n++].own = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &c[n].comm);
    c[n].name = "dup";
    c[n++].own = 1;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &c[n].comm);
    c[n].name = "split_parity";
    c[n++].own = 1;
    if (!quick) {
        MPI_Comm_split(MPI_COMM_WORLD, 0, -r, &c[n].comm);
        c[n].name = "split_reversed";
        c[n++].own = 1;
    }
    return n;
}

static inline void free_comms(tcomm *c, int n)
{
    for (int i = 0; i < n; i++)
        if (c[i].own)
            MPI_Comm_free(&c[i].comm);
}

/* ------------------------------------------------------------------------------------ */
/* element kinds (C type + MPI datatype) and ops                                         */
/* ------------------------------------------------------------------------------------ */

enum kind {
    K_INT,
    K_LONG,
    K_SHORT,
    K_UNSIGNED,
    K_SCHAR,
    K_UCHAR,
    K_ULL,
    K_INT64,
    K_FLOAT,
    K_DOUBLE,
    K_CHAR,
    K_BYTE,
    K_BOOL,
    K_DOUBLE_INT,
    K_2INT,
    K_LONG_INT,
    K_FLOAT_INT,
    K_SHORT_INT,
    K_NKINDS
};

typedef struct { double v; int i; } double_int_t;
typedef struct { int v; int i; } int2_t;
typedef struct { long v; int i; } long_int_t;
typedef struct { float v; int i; } float_int_t;
typedef struct { short v; int i; } short_int_t;

static const char *const kind_names[K_NKINDS] = {
    "MPI_INT", "MPI_LONG", "MPI_SHORT", "MPI_UNSIGNED", "MPI_SIGNED_CHAR", "MPI_UNSIGNED_CHAR",
    "MPI_UNSIGNED_LONG_LONG", "MPI_INT64_T", "MPI_FLOAT", "MPI_DOUBLE", "MPI_CHAR", "MPI_BYTE",
    "MPI_C_BOOL", "MPI_DOUBLE_INT", "MPI_2INT", "MPI_LONG_INT", "MPI_FLOAT_INT", "MPI_SHORT_INT"};

static inline MPI_Datatype kind_dt(int k)
{
    switch (k) {
    case K_INT: return MPI_INT;
    case K_LONG: return MPI_LONG;
    case K_SHORT: return MPI_SHORT;
    case K_UNSIGNED: return MPI_UNSIGNED;
    case K_SCHAR: return MPI_SIGNED_CHAR;
    case K_UCHAR: return MPI_UNSIGNED_CHAR;
    case K_ULL: return MPI_UNSIGNED_LONG_LONG;
    case K_INT64: return MPI_INT64_T;
    case K_FLOAT: return MPI_FLOAT;
    case K_DOUBLE: return MPI_DOUBLE;
    case K_CHAR: return MPI_CHAR;
    case K_BYTE: return MPI_BYTE;
    case K_BOOL: return MPI_C_BOOL;
    case K_DOUBLE_INT: return MPI_DOUBLE_INT;
    case K_2INT: return MPI_2INT;
    case K_LONG_INT: return MPI_LONG_INT;
    case K_FLOAT_INT: return MPI_FLOAT_INT;
    case K_SHORT_INT: return MPI_SHORT_INT;
    }
    return MPI_DATATYPE_NULL;
}

/* bytes one element occupies in a C array (= MPI extent, checked by check_kind_extents) */
static inline size_t kind_size(int k)
{
    switch (k) {
    case K_INT: return sizeof(int);
    case K_LONG: return sizeof(long);
    case K_SHORT: return sizeof(short);
    case K_UNSIGNED: return sizeof(unsigned);
    case K_SCHAR: return 1;
    case K_UCHAR: return 1;
    case K_ULL: return sizeof(unsigned long long);
    case K_INT64: return sizeof(int64_t);
    case K_FLOAT: return sizeof(float);
    case K_DOUBLE: return sizeof(double);
    case K_CHAR: return 1;
    case K_BYTE: return 1;
    case K_BOOL: return sizeof(_Bool);
    case K_DOUBLE_INT: return sizeof(double_int_t);
    case K_2INT: return sizeof(int2_t);
    case K_LONG_INT: return sizeof(long_int_t);
    case K_FLOAT_INT: return sizeof(float_int_t);
    case K_SHORT_INT: return sizeof(short_int_t);
    }
    return 0;
}

static inline int kind_is_pair(int k) { return k >= K_DOUBLE_INT; }
static inline int kind_is_float(int k) { return k == K_FLOAT || k == K_DOUBLE; }
static inline int kind_is_cint(int k)
{
    return k == K_INT || k == K_LONG || k == K_SHORT || k == K_UNSIGNED || k == K_SCHAR || k == K_UCHAR ||
           k == K_ULL || k == K_INT64;
}
static inline int kind_is_unsigned(int k) { return k == K_UNSIGNED || k == K_UCHAR || k == K_ULL; }

enum opk { O_SUM, O_PROD, O_MAX, O_MIN, O_BAND, O_BOR, O_BXOR, O_LAND, O_LOR, O_LXOR, O_MINLOC, O_MAXLOC, O_NOPS };
static const char *const op_names[O_NOPS] = {"MPI_SUM",  "MPI_PROD", "MPI_MAX", "MPI_MIN",
                                             "MPI_BAND", "MPI_BOR",  "MPI_BXOR", "MPI_LAND",
                                             "MPI_LOR",  "MPI_LXOR", "MPI_MINLOC", "MPI_MAXLOC"};
static inline MPI_Op op_handle(int o)
{
    switch (o) {
    case O_SUM: return MPI_SUM;
    case O_PROD: return MPI_PROD;
    case O_MAX: return MPI_MAX;
    case O_MIN: return MPI_MIN;
    case O_BAND: return MPI_BAND;
    case O_BOR: return MPI_BOR;
    case O_BXOR: return MPI_BXOR;
    case O_LAND: return MPI_LAND;
    case O_LOR: return MPI_LOR;
    case O_LXOR: return MPI_LXOR;
    case O_MINLOC: return MPI_MINLOC;
    case O_MAXLOC: return MPI_MAXLOC;
    }
    return MPI_OP_NULL;
}

/* Is (kind, op) a valid predefined reduction (MPI-3.1 §5.9.2; MPI_CHAR with MAX/MIN is
 * accepted by both MPIs here and asked for by the brief)? */
static inline int combo_valid(int k, int o)
{
    switch (o) {
    case O_SUM:
    case O_PROD: return kind_is_cint(k) || kind_is_float(k);
    case O_MAX:
    case O_MIN: return kind_is_cint(k) || kind_is_float(k) || k == K_CHAR;
    case O_BAND:
    case O_BOR:
    case O_BXOR: return kind_is_cint(k) || k == K_BYTE;
    case O_LAND:
    case O_LOR:
    case O_LXOR: return kind_is_cint(k) || k == K_BOOL;
    case O_MINLOC:
    case O_MAXLOC: return kind_is_pair(k);
    }
    return 0;
}

/* Generates element idx of world rank `rank` for (kind, op) into *out. Values are chosen
 * so that every op is exact and overflow-free for p <= 8 (PROD: factors +-1, +-2, 3 only
 * on ranks < 8 (1-byte types: +-2 on ranks < 6); SUM: small magnitudes; floats: integer values or powers
 * of two), so the rank-order fold is the unique correct answer. op = -1: arbitrary data
 * (allgatherv). */
/* noinline: inlined into its callers' loops, this switch and fold_elem's made gcc -O2 take
 * 10-15 s per program (allreduce.c 14.6 s, 0.5 s without), ~20 s of each MPI's c-tests. */
static __attribute__((noinline, unused)) void gen_elem(int k, int o, uint64_t seed, int rank, size_t idx, void *out)
{
    uint64_t r = rnd(seed, rank, idx, 0), r2 = rnd(seed, rank, idx, 1);
    int64_t sv; /* signed value to store */
    uint64_t uv;
    if (kind_is_pair(k)) {
        /* few distinct values -> many ties; index arbitrary (not the rank) */
        int v = (int)(r % 4) - 1;
        int ix = (int)(r2 % 1000) - 300;
        switch (k) {
        case K_DOUBLE_INT: { double_int_t *e = out; memset(e, 0, sizeof *e); e->v = v * 0.5; e->i = ix; break; }
        case K_2INT: { int2_t *e = out; e->v = v; e->i = ix; break; }
        case K_LONG_INT: { long_int_t *e = out; memset(e, 0, sizeof *e); e->v = (long)v << 33; e->i = ix; break; }
        case K_FLOAT_INT: { float_int_t *e = out; e->v = (float)v * 0.25f; e->i = ix; break; }
        case K_SHORT_INT: { short_int_t *e = out; memset(e, 0, sizeof *e); e->v = (short)v; e->i = ix; break; }
        }
        return;
    }
    if (k == K_BOOL) {
        _Bool b;
        switch (o) {
        case O_LAND: b = (r % 16) != 0; break;
        case O_LOR: b = (r % 16) == 0; break;
        default: b = r & 1; break;
        }
        *(_Bool *)out = b;
        return;
    }
    if (kind_is_float(k)) {
        double d;
        switch (o) {
        case O_SUM: d = (double)((int64_t)(r % 2001) - 1000); break;
        case O_PROD: {
            static const double f[8] = {1.0, -1.0, 2.0, 0.5, -0.5, 1.0, -2.0, 1.0};
            d = f[r % 8];
            break;
        }
        default: /* any finite value, exactly representable in float */
            d = ldexp((double)((int64_t)(r % 2000001) - 1000000), (int)(r2 % 21) - 10);
            break;
        }
        if (k == K_FLOAT)
            *(float *)out = (float)d;
        else
            *(double *)out = d;
        return;
    }
    /* integer-like kinds */
    switch (o) {
    case O_SUM: {
        /* no overflow, not even in unsigned types: Open MPI 4.1's AVX kernels saturate
         * 8/16-bit sums instead of wrapping (open-mpi/ompi#8045, "wontfix") */
        int64_t lim = (k == K_SCHAR || k == K_UCHAR) ? 15 : (k == K_SHORT) ? 4000 : (k == K_INT || k == K_UNSIGNED) ? 100000000 : (int64_t)1 << 50;
        sv = (int64_t)(r % (uint64_t)(2 * lim + 1)) - lim;
        if (kind_is_unsigned(k))
            sv = sv < 0 ? -sv : sv;
        uv = (uint64_t)sv;
        break;
    }
    case O_PROD:
        if (rank >= 8 || ((k == K_SCHAR || k == K_UCHAR) && rank >= 6)) {
            sv = (r & 1) || kind_is_unsigned(k) ? 1 : -1;
        } else {
            static const int f[8] = {1, -1, 2, 1, -2, 3, 1, -1};
            sv = f[r % 8];
            if (k == K_SCHAR || k == K_UCHAR)
                sv = (r & 2) ? 2 : 1; /* |product| <= 2^6 */
            if (kind_is_unsigned(k))
                sv = sv < 0 ? -sv : sv;
            if (k == K_SCHAR && (r & 4))
                sv = -sv;
        }
        uv = (uint64_t)sv;
        break;
    case O_BAND:
        uv = r | r2 | (r >> 7); /* bits mostly set */
        sv = (int64_t)uv;
        break;
    case O_BOR:
        uv = r & r2 & (r >> 5); /* bits mostly clear */
        sv = (int64_t)uv;
        break;
    case O_LAND:
        sv = (r % 16) ? (int64_t)(r2 % 5) + 1 : 0; /* non-zero values other than 1 */
        if (r2 & 8)
            sv = -sv;
        if (kind_is_unsigned(k)) sv = sv < 0 ? -sv : sv;
        uv = (uint64_t)sv;
        break;
    case O_LOR:
        sv = (r % 16) ? 0 : (int64_t)(r2 % 5) + 2;
        uv = (uint64_t)sv;
        break;
    case O_LXOR:
        sv = (r & 1) ? (int64_t)(r2 % 3) + 1 : 0;
        uv = (uint64_t)sv;
        break;
    case O_MAX:
    case O_MIN:
    case O_BXOR:
    default:
        uv = r;
        sv = (int64_t)r;
        if (kind_is_unsigned(k) && (o == O_MAX || o == O_MIN))
            /* top bit clear: MPICH 4.0.2 compares unsigned MAX/MIN as signed, also in
             * MPI_Reduce_local (pmodels/mpich#6083) -- an op defect, not a collective
             * one, so it is avoided everywhere */
            uv &= ~(1ull << (8 * kind_size(k) - 1));
        if (k == K_CHAR) { /* printable-ish, within signed char either way */
            sv = (int64_t)(r % 95) + 32;
            uv = (uint64_t)sv;
        }
        break;
    }
    switch (k) {
    case K_INT: *(int *)out = (int)(int32_t)(uint32_t)uv; break;
    case K_LONG: *(long *)out = (long)(int64_t)uv; break;
    case K_SHORT: *(short *)out = (short)(int16_t)(uint16_t)uv; break;
    case K_UNSIGNED: *(unsigned *)out = (unsigned)uv; break;
    case K_SCHAR: *(signed char *)out = (signed char)(int8_t)(uint8_t)uv; break;
    case K_UCHAR: *(unsigned char *)out = (unsigned char)uv; break;
    case K_ULL: *(unsigned long long *)out = (unsigned long long)uv; break;
    case K_INT64: *(int64_t *)out = (int64_t)uv; break;
    case K_CHAR: *(char *)out = (char)uv; break;
    case K_BYTE: *(unsigned char *)out = (unsigned char)uv; break;
    }
}

static inline void gen_buf(int k, int o, uint64_t seed, int rank, size_t idx0, size_t n, void *buf)
{
    size_t es = kind_size(k);
    for (size_t i = 0; i < n; i++)
        gen_elem(k, o, seed, rank, idx0 + i, (char *)buf + i * es);
}

#define PAIR_FOLD(T)                                                                                               \
    do {                                                                                                           \
        T *a = acc;                                                                                                \
        const T *b = x;                                                                                            \
        if (o == O_MINLOC ? (b->v < a->v) : (b->v > a->v)) {                                                       \
            a->v = b->v;                                                                                           \
            a->i = b->i;                                                                                           \
        } else if (b->v == a->v && b->i < a->i)                                                                    \
            a->i = b->i;                                                                                           \
    } while (0)

#define NUM_FOLD(T)                                                                                                \
    do {                                                                                                           \
        T *a = acc;                                                                                                \
        T b = *(const T *)x;                                                                                       \
        switch (o) {                                                                                               \
        case O_SUM: *a = (T)(*a + b); break;                                                                       \
        case O_PROD: *a = (T)(*a * b); break;                                                                      \
        case O_MAX: *a = *a > b ? *a : b; break;                                                                   \
        case O_MIN: *a = *a < b ? *a : b; break;                                                                   \
        case O_LAND: *a = (T)((*a != 0) && (b != 0)); break;                                                       \
        case O_LOR: *a = (T)((*a != 0) || (b != 0)); break;                                                        \
        case O_LXOR: *a = (T)((*a != 0) != (b != 0)); break;                                                       \
        }                                                                                                          \
    } while (0)

#define INT_FOLD(T)                                                                                                \
    do {                                                                                                           \
        T *a = acc;                                                                                                \
        T b = *(const T *)x;                                                                                       \
        switch (o) {                                                                                               \
        case O_BAND: *a = (T)(*a & b); break;                                                                      \
        case O_BOR: *a = (T)(*a | b); break;                                                                       \
        case O_BXOR: *a = (T)(*a ^ b); break;                                                                      \
        default: NUM_FOLD(T); break;                                                                               \
        }                                                                                                          \
    } while (0)

/* acc := acc (op) x, where acc holds the lower ranks. Unsigned arithmetic for wrapping
 * types; signed values are generated so that nothing overflows. */
static __attribute__((noinline, unused)) void fold_elem(int k, int o, void *acc, const void *x)
{
    switch (k) {
    case K_INT: INT_FOLD(int); break;
    case K_LONG: INT_FOLD(long); break;
    case K_SHORT: INT_FOLD(short); break;
    case K_UNSIGNED: INT_FOLD(unsigned); break;
    case K_SCHAR: INT_FOLD(signed char); break;
    case K_UCHAR: INT_FOLD(unsigned char); break;
    case K_ULL: INT_FOLD(unsigned long long); break;
    case K_INT64: INT_FOLD(int64_t); break;
    case K_FLOAT: NUM_FOLD(float); break;
    case K_DOUBLE: NUM_FOLD(double); break;
    case K_CHAR: NUM_FOLD(char); break;
    case K_BYTE: INT_FOLD(unsigned char); break;
    case K_BOOL: {
        _Bool *a = acc, b = *(const _Bool *)x;
        if (o == O_LAND) *a = *a && b;
        else if (o == O_LOR) *a = *a || b;
        else *a = *a != b;
        break;
    }
    case K_DOUBLE_INT: PAIR_FOLD(double_int_t); break;
    case K_2INT: PAIR_FOLD(int2_t); break;
    case K_LONG_INT: PAIR_FOLD(long_int_t); break;
    case K_FLOAT_INT: PAIR_FOLD(float_int_t); break;
    case K_SHORT_INT: PAIR_FOLD(short_int_t); break;
    }
}

/* Reference: element idx0+i (i < n) of the rank-order fold over the members `wr[0..np)`
 * (world ranks in comm rank order). */
static inline void ref_fold(int k, int o, uint64_t seed, const int *wr, int np, size_t idx0, size_t n, void *out)
{
    size_t es = kind_size(k);
    unsigned char x[64];
    for (size_t i = 0; i < n; i++) {
        void *a = (char *)out + i * es;
        gen_elem(k, o, seed, wr[0], idx0 + i, a);
        for (int r = 1; r < np; r++) {
            gen_elem(k, o, seed, wr[r], idx0 + i, x);
            fold_elem(k, o, a, x);
        }
    }
}

/* Compares the data bytes of one element (pair types: the two fields, not the padding). */
static inline int elem_equal(int k, const void *a, const void *b)
{
    switch (k) {
    case K_FLOAT: return *(const float *)a == *(const float *)b;
    case K_DOUBLE: return *(const double *)a == *(const double *)b;
    case K_DOUBLE_INT: { const double_int_t *x = a, *y = b; return x->v == y->v && x->i == y->i; }
    case K_2INT: { const int2_t *x = a, *y = b; return x->v == y->v && x->i == y->i; }
    case K_LONG_INT: { const long_int_t *x = a, *y = b; return x->v == y->v && x->i == y->i; }
    case K_FLOAT_INT: { const float_int_t *x = a, *y = b; return x->v == y->v && x->i == y->i; }
    case K_SHORT_INT: { const short_int_t *x = a, *y = b; return x->v == y->v && x->i == y->i; }
    default: return memcmp(a, b, kind_size(k)) == 0;
    }
}

static inline void elem_str(int k, const void *a, char *s, size_t n)
{
    switch (k) {
    case K_INT: snprintf(s, n, "%d", *(const int *)a); break;
    case K_LONG: snprintf(s, n, "%ld", *(const long *)a); break;
    case K_SHORT: snprintf(s, n, "%d", *(const short *)a); break;
    case K_UNSIGNED: snprintf(s, n, "%u", *(const unsigned *)a); break;
    case K_SCHAR: snprintf(s, n, "%d", *(const signed char *)a); break;
    case K_UCHAR: case K_BYTE: snprintf(s, n, "%u", *(const unsigned char *)a); break;
    case K_ULL: snprintf(s, n, "%llu", *(const unsigned long long *)a); break;
    case K_INT64: snprintf(s, n, "%lld", (long long)*(const int64_t *)a); break;
    case K_FLOAT: snprintf(s, n, "%.9g", *(const float *)a); break;
    case K_DOUBLE: snprintf(s, n, "%.17g", *(const double *)a); break;
    case K_CHAR: snprintf(s, n, "%d", *(const char *)a); break;
    case K_BOOL: snprintf(s, n, "%d", (int)*(const unsigned char *)a); break;
    case K_DOUBLE_INT: { const double_int_t *x = a; snprintf(s, n, "(%g,%d)", x->v, x->i); break; }
    case K_2INT: { const int2_t *x = a; snprintf(s, n, "(%d,%d)", x->v, x->i); break; }
    case K_LONG_INT: { const long_int_t *x = a; snprintf(s, n, "(%ld,%d)", x->v, x->i); break; }
    case K_FLOAT_INT: { const float_int_t *x = a; snprintf(s, n, "(%g,%d)", x->v, x->i); break; }
    case K_SHORT_INT: { const short_int_t *x = a; snprintf(s, n, "(%d,%d)", x->v, x->i); break; }
    default: snprintf(s, n, "?");
    }
}

/* Compares n elements of got against want; reports the first mismatch. Returns #bad. */
static inline size_t check_elems(tctx *t, int k, const void *got, const void *want, size_t n, const char *what)
{
    size_t es = kind_size(k), bad = 0;
    for (size_t i = 0; i < n; i++) {
        const void *g = (const char *)got + i * es, *w = (const char *)want + i * es;
        if (!elem_equal(k, g, w)) {
            if (bad == 0) {
                char gs[64], ws[64];
                elem_str(k, g, gs, sizeof gs);
                elem_str(k, w, ws, sizeof ws);
                tc_fail(t, "%s[%zu]: got %s expected %s", what, i, gs, ws);
            }
            bad++;
        }
    }
    return bad;
}

/* Sentinel byte pattern for untouched memory. */
#define SENTINEL 0xA7
static inline void fill_sentinel(void *p, size_t bytes) { memset(p, SENTINEL, bytes); }
/* Returns the first offset in [0, bytes) that is not the sentinel, or (size_t)-1. */
static inline size_t find_non_sentinel(const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < bytes; i++)
        if (c[i] != SENTINEL)
            return i;
    return (size_t)-1;
}

/* Guard elements after every receive buffer: must stay sentinel. */
#define GUARD_BYTES 64

static inline void check_guard(tctx *t, const void *p, size_t bytes, const char *what)
{
    size_t off = find_non_sentinel(p, bytes);
    if (off != (size_t)-1)
        tc_fail(t, "%s: byte %zu past the end was overwritten (0x%02x)", what, off, ((const unsigned char *)p)[off]);
}

/* FNV-1a over bytes. */
static inline uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* FNV-1a over the data bytes of n elements (pair types: fields only, not the padding). */
static inline uint64_t hash_elems(int k, const void *buf, size_t n)
{
    size_t es = kind_size(k);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        const char *e = (const char *)buf + i * es;
        size_t vbytes = es, ioff = 0;
        switch (k) {
        case K_DOUBLE_INT: vbytes = sizeof(double); ioff = offsetof(double_int_t, i); break;
        case K_2INT: vbytes = sizeof(int); ioff = offsetof(int2_t, i); break;
        case K_LONG_INT: vbytes = sizeof(long); ioff = offsetof(long_int_t, i); break;
        case K_FLOAT_INT: vbytes = sizeof(float); ioff = offsetof(float_int_t, i); break;
        case K_SHORT_INT: vbytes = sizeof(short); ioff = offsetof(short_int_t, i); break;
        }
        h = (h ^ hash_bytes(e, vbytes)) * 1099511628211ull;
        if (ioff)
            h = (h ^ hash_bytes(e + ioff, sizeof(int))) * 1099511628211ull;
    }
    return h;
}

/* Checks that all ranks of comm hold the same 64-bit value (PMPI_Allgather). */
static inline int same_on_all_ranks(MPI_Comm comm, uint64_t h)
{
    int n;
    MPI_Comm_size(comm, &n);
    uint64_t *v = malloc(sizeof(uint64_t) * (size_t)n);
    int ok = 1;
    PMPI_Allgather(&h, 1, MPI_UINT64_T, v, 1, MPI_UINT64_T, comm);
    for (int i = 0; i < n; i++)
        ok &= v[i] == h;
    free(v);
    return ok;
}

static inline void check_kind_extents(tctx *t)
{
    for (int k = 0; k < K_NKINDS; k++) {
        MPI_Aint lb, ext;
        MPI_Type_get_extent(kind_dt(k), &lb, &ext);
        if (lb != 0 || (size_t)ext != kind_size(k)) {
            tc_case(t, "extent of %s", kind_names[k]);
            tc_fail(t, "lb=%ld extent=%ld but C size %zu", (long)lb, (long)ext, kind_size(k));
        }
    }
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

#endif
