/* difftest: randomized differential tester for MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter
 * and MPI_Allgatherv (issue 7), MPI_Bcast, MPI_Allgather and MPI_Reduce_scatter_block (issue 15:
 * allgather and reduce_scatter_block are checked as allgatherv / reduce_scatter with regular
 * counts; bcast checks every rank's buffer against the root's data, any root).
 *
 * Every rank draws the same sequence of random cases from a shared seed (case N uses only
 * (seed, N), so `--case N` reruns exactly one case). A case picks a collective, a datatype
 * (predefined integers/floats/byte, pair types, derived types with holes), an op (predefined,
 * user-defined commutative and non-commutative), a count (0 .. --max-count, skewed to small),
 * a root, MPI_IN_PLACE, irregular counts/displacements (zeros, gaps, permuted blocks), a
 * communicator (world, dup, reversed split, random splits, MPI_UNDEFINED split, self, fresh
 * dup freed afterwards) and, when libpcoll.so is loaded, an algorithm forced through
 * `pcoll_force` and, in half the cases, a segment size set through `pcoll_segment` (both
 * resolved with dlsym, so the program also runs on the bare MPI).
 *
 * Input element i of rank r is a pure function of (case seed, r, i, field): every rank can
 * regenerate every rank's input, so the reference result is computed locally by folding the
 * inputs in rank order with our own C implementation of the op (for user ops: the same math
 * the user function does). Data are exact (integer-valued floats, sums/products that cannot
 * overflow), so the comparison is exact; one mode uses real-valued float sums, checked with a
 * tolerance. Further checks: allreduce results bit-identical on all ranks, send buffers
 * unchanged, holes of derived types, gaps between allgatherv blocks and guard bytes around
 * every receive buffer untouched.
 *
 * Every mismatch prints one line:
 *   MISMATCH seed=.. case=.. coll=.. type=.. op=.. count=.. root=.. inplace=.. alg=.. seg=.. p=.. ...
 * Rank 0 ends with `difftest: N cases, M mismatches`. Exit status 1 if M > 0.
 *
 * Usage: difftest [--seed S] [--cases N] [--first K] [--case N] [--max-count C]
 *                 [--max-bytes B] [--alg NAME|random|none] [--coll NAME[,NAME...]] [--verbose]
 *                 [--full-range] [--near B] [--may-fall-back] [--same-alg]
 * --same-alg: check after every call that every rank ran the same algorithm (PCOLL_LEARN).
 * --near B: 40% of the counts near 1..5 times B bytes (shm's cell and window boundaries).
 * --may-fall-back: a forced algorithm may fall back to native (steer around native defects).
 * --full-range stops steering around known defects of the native MPIs (MPI-NOTES.md):
 * unsigned MIN/MAX with the top bit set, MPICH in-place reduce at root != 0, MPICH
 * one-rank allgatherv with displs[0] != 0, allgatherv with per-rank receive types (both),
 * Open MPI allreduce of types with true_lb > 0 (heap overrun in its ring algorithm), MPICH
 * in-place reduce_scatter with unequal counts above ~512 KiB (assertion), MPICH non-commutative
 * reduce_scatter on non-contiguous types (heap corruption).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_kind.h"
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- utilities */

static int wrank, wsize;

static void die(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(buf, sizeof buf, "difftest[%d]: FATAL: ", wrank);
    n += vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2) n = sizeof buf - 2;
    buf[n++] = '\n';
    if (write(2, buf, n) < 0) { /* nothing to do */ }
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* One line, written with one write() so that ranks' lines do not interleave. */
static void out(const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2) n = sizeof buf - 2;
    buf[n++] = '\n';
    fflush(stdout);
    if (write(1, buf, n) < 0) { /* nothing to do */ }
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static uint64_t splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

typedef struct { uint64_t s; } rng_t;
static uint64_t rnext(rng_t *r) { r->s += 0x9E3779B97F4A7C15ull; return splitmix(r->s); }
static uint64_t rbelow(rng_t *r, uint64_t n) { return n ? rnext(r) % n : 0; }
static int rpct(rng_t *r, int pct) { return (int)rbelow(r, 100) < pct; }

/* ---------------------------------------------------------------- scalar kinds */

enum { SK_I8, SK_U8, SK_I16, SK_U16, SK_I32, SK_U32, SK_I64, SK_U64, SK_F32, SK_F64, SK_BYTE };
static const int sk_size[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 1};
static int sk_signed(int k) { return k == SK_I8 || k == SK_I16 || k == SK_I32 || k == SK_I64; }
static int sk_float(int k) { return k == SK_F32 || k == SK_F64; }
static int sk_bits(int k) { return 8 * sk_size[k]; }

static int64_t rd_i(const unsigned char *p, int k) {
    switch (k) {
    case SK_I8: { int8_t v; memcpy(&v, p, 1); return v; }
    case SK_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case SK_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case SK_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: die("rd_i kind %d", k);
    }
    return 0;
}
static uint64_t rd_u(const unsigned char *p, int k) {
    switch (k) {
    case SK_U8: case SK_BYTE: return p[0];
    case SK_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case SK_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case SK_U64: { uint64_t v; memcpy(&v, p, 8); return v; }
    default: return (uint64_t)rd_i(p, k);
    }
}
static double rd_f(const unsigned char *p, int k) {
    if (k == SK_F32) { float v; memcpy(&v, p, 4); return v; }
    if (k == SK_F64) { double v; memcpy(&v, p, 8); return v; }
    if (sk_signed(k)) return (double)rd_i(p, k);
    return (double)rd_u(p, k);
}
/* Integers are stored truncated to the width (two's complement wrap), floats converted. */
static void wr_u(unsigned char *p, int k, uint64_t v) {
    switch (k) {
    case SK_I8: case SK_U8: case SK_BYTE: p[0] = (unsigned char)v; break;
    case SK_I16: case SK_U16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case SK_I32: case SK_U32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case SK_I64: case SK_U64: memcpy(p, &v, 8); break;
    default: die("wr_u kind %d", k);
    }
}
static void wr_f(unsigned char *p, int k, double v) {
    if (k == SK_F32) { float x = (float)v; memcpy(p, &x, 4); }
    else if (k == SK_F64) memcpy(p, &v, 8);
    else wr_u(p, k, (uint64_t)(int64_t)v);
}

/* ---------------------------------------------------------------- datatypes */

#define MAXF 64
typedef struct {
    char name[64];
    MPI_Datatype dt;
    int extent, size;
    int nf;
    int off[MAXF];
    unsigned char sk[MAXF];
    unsigned char *mask; /* per byte of one element: 0 hole, 1 data, 2 padding (ignored) */
    int pair;            /* fields come in (value, int index) pairs: MINLOC/MAXLOC */
    int derived;
    int base;            /* index of the predefined layout this one is built from */
    int nbase;           /* an element = nbase base elements, in type-map order */
} layout_t;

#define MAXL 160
static layout_t L[MAXL];
static int nlayouts, npredef;

static void finish_layout(layout_t *l) {
    MPI_Aint lb, ext;
    int size;
    MPI_Type_get_extent(l->dt, &lb, &ext);
    MPI_Type_size(l->dt, &size);
    if (lb != 0) die("%s: lb %ld != 0", l->name, (long)lb);
    if ((int)ext != l->extent) die("%s: MPI extent %ld, ours %d", l->name, (long)ext, l->extent);
    int s = 0;
    for (int f = 0; f < l->nf; f++) s += sk_size[l->sk[f]];
    if (s != size) die("%s: MPI size %d, ours %d", l->name, size, s);
    l->size = size;
    l->mask = xmalloc(l->extent);
    memset(l->mask, 0, l->extent);
    for (int f = 0; f < l->nf; f++)
        for (int b = 0; b < sk_size[l->sk[f]]; b++) l->mask[l->off[f] + b] = 1;
}

typedef struct { float v; int i; } fi_t;
typedef struct { double v; int i; } di_t;
typedef struct { long v; int i; } li_t;
typedef struct { short v; int i; } si_t;
typedef struct { int v; int i; } ii_t;

static int add_predef(const char *name, MPI_Datatype dt, int sk, int pair_off, int pair_ext) {
    layout_t *l = &L[nlayouts];
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->dt = dt;
    l->base = nlayouts;
    l->nbase = 1;
    if (pair_off) {
        l->pair = 1;
        l->nf = 2;
        l->off[0] = 0;
        l->sk[0] = (unsigned char)sk;
        l->off[1] = pair_off;
        l->sk[1] = SK_I32;
        l->extent = pair_ext;
    } else {
        l->nf = 1;
        l->sk[0] = (unsigned char)sk;
        l->extent = sk_size[sk];
    }
    finish_layout(l);
    /* Padding of predefined pair types is part of the C struct: an MPI may copy it. */
    if (pair_off)
        for (int b = 0; b < l->extent; b++)
            if (!l->mask[b]) l->mask[b] = 2;
    return nlayouts++;
}

enum { DV_CONTIG2, DV_CONTIG3, DV_CONTIG4, DV_VEC, DV_VEC2, DV_RESIZED, DV_HOLESTART, DV_NESTED, DV_NUM };
static const char *dv_name[] = {"contig2", "contig3", "contig4", "vector", "vector3x2",
                                "resized", "holestart", "contig2(vector)"};

/* Append copies of layout b's fields at byte offset `at` to l. */
static void put_fields(layout_t *l, const layout_t *b, int at) {
    for (int f = 0; f < b->nf; f++) {
        if (l->nf >= MAXF) die("too many fields in %s", l->name);
        l->off[l->nf] = at + b->off[f];
        l->sk[l->nf] = b->sk[f];
        l->nf++;
    }
}

static int add_derived(int kind, int bi) {
    const layout_t *b = &L[bi];
    layout_t *l = &L[nlayouts];
    memset(l, 0, sizeof *l);
    char bname[40];
    snprintf(bname, sizeof bname, "%s", b->name);
    snprintf(l->name, sizeof l->name, "%s(%s)", dv_name[kind], bname);
    l->derived = 1;
    l->base = bi;
    l->pair = b->pair;
    int e = b->extent;
    MPI_Datatype t = MPI_DATATYPE_NULL, t1;
    switch (kind) {
    case DV_CONTIG2: case DV_CONTIG3: case DV_CONTIG4: {
        int k = kind == DV_CONTIG2 ? 2 : kind == DV_CONTIG3 ? 3 : 4;
        MPI_Type_contiguous(k, b->dt, &t);
        for (int j = 0; j < k; j++) put_fields(l, b, j * e);
        l->extent = k * e;
        l->nbase = k;
        break;
    }
    case DV_VEC: /* blocks of 1 at 0 and 3e: holes [e, 3e) */
        MPI_Type_vector(2, 1, 3, b->dt, &t);
        put_fields(l, b, 0);
        put_fields(l, b, 3 * e);
        l->extent = 4 * e;
        l->nbase = 2;
        break;
    case DV_VEC2: /* blocks of 2 at 0, 3e, 6e */
        MPI_Type_vector(3, 2, 3, b->dt, &t);
        for (int j = 0; j < 3; j++) { put_fields(l, b, 3 * j * e); put_fields(l, b, (3 * j + 1) * e); }
        l->extent = 8 * e;
        l->nbase = 6;
        break;
    case DV_RESIZED: /* trailing hole of 8 bytes */
        MPI_Type_create_resized(b->dt, 0, e + 8, &t);
        put_fields(l, b, 0);
        l->extent = e + 8;
        l->nbase = 1;
        break;
    case DV_HOLESTART: { /* data at [e, 2e) of an extent 3e, lb 0: holes before and after */
        int disp = 1;
        MPI_Type_create_indexed_block(1, 1, &disp, b->dt, &t1);
        MPI_Type_create_resized(t1, 0, 3 * e, &t);
        MPI_Type_free(&t1);
        put_fields(l, b, e);
        l->extent = 3 * e;
        l->nbase = 1;
        break;
    }
    case DV_NESTED: {
        MPI_Type_vector(2, 1, 3, b->dt, &t1);
        MPI_Type_contiguous(2, t1, &t);
        MPI_Type_free(&t1);
        for (int j = 0; j < 2; j++) { put_fields(l, b, 4 * e * j); put_fields(l, b, 4 * e * j + 3 * e); }
        l->extent = 8 * e;
        l->nbase = 4;
        break;
    }
    default: die("derived kind %d", kind);
    }
    MPI_Type_commit(&t);
    l->dt = t;
    finish_layout(l);
    /* The base's padding stays padding inside the derived type. */
    if (b->pair)
        for (int x = 0; x < l->extent; x++)
            if (!l->mask[x]) {
                /* a byte inside a copy of the base element that is not data = base padding */
                for (int f = 0; f < l->nf; f += 2)
                    if (x >= l->off[f] && x < l->off[f] + e) { l->mask[x] = 2; break; }
            }
    return nlayouts++;
}

static int find_layout(MPI_Datatype dt) {
    for (int i = 0; i < nlayouts; i++)
        if (L[i].dt == dt) return i;
    return -1;
}

/* ---------------------------------------------------------------- ops */

enum { OP_MAX, OP_MIN, OP_SUM, OP_PROD, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR,
       OP_MAXLOC, OP_MINLOC, OP_UCOMM, OP_USUMNC, OP_AFFINE, OP_MATMUL, OP_NUM };
static const char *op_name[] = {"MPI_MAX", "MPI_MIN", "MPI_SUM", "MPI_PROD", "MPI_LAND",
                                "MPI_LOR", "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR",
                                "MPI_MAXLOC", "MPI_MINLOC", "user_comm", "user_sum_noncomm",
                                "user_affine", "user_matmul2x2"};
static MPI_Op op_handle[OP_NUM];
static int op_ok[OP_NUM][MAXL]; /* the combination is valid (and accepted by this MPI) */

static int is_cint(int k) { return k != SK_F32 && k != SK_F64 && k != SK_BYTE; }

/* Our own definition of every op on one element: inout := in (+) inout, `in` = lower ranks. */
static void apply_elem(int op, const layout_t *l, const unsigned char *in, unsigned char *io) {
    if (op == OP_MAXLOC || op == OP_MINLOC) {
        for (int f = 0; f < l->nf; f += 2) {
            int k = l->sk[f];
            double a = rd_f(in + l->off[f], k), b = rd_f(io + l->off[f], k);
            int64_t ia = rd_i(in + l->off[f + 1], SK_I32), ib = rd_i(io + l->off[f + 1], SK_I32);
            int take_in = op == OP_MAXLOC ? a > b : a < b;
            if (take_in) {
                memcpy(io + l->off[f], in + l->off[f], sk_size[k]);
                wr_u(io + l->off[f + 1], SK_I32, (uint64_t)ia);
            } else if (a == b && ia < ib) {
                wr_u(io + l->off[f + 1], SK_I32, (uint64_t)ia);
            }
        }
        return;
    }
    if (op == OP_AFFINE) { /* (a1,b1) then (a2,b2): x -> a2(a1 x + b1) + b2 (mod 2^32) */
        for (int f = 0; f < l->nf; f += 2) {
            uint32_t a1 = (uint32_t)rd_u(in + l->off[f], l->sk[f]), b1 = (uint32_t)rd_u(in + l->off[f + 1], l->sk[f + 1]);
            uint32_t a2 = (uint32_t)rd_u(io + l->off[f], l->sk[f]), b2 = (uint32_t)rd_u(io + l->off[f + 1], l->sk[f + 1]);
            wr_u(io + l->off[f], l->sk[f], (uint32_t)(a1 * a2));
            wr_u(io + l->off[f + 1], l->sk[f + 1], (uint32_t)(a2 * b1 + b2));
        }
        return;
    }
    if (op == OP_MATMUL) { /* 2x2 row-major matrices, in * io (mod 2^32) */
        for (int f = 0; f < l->nf; f += 4) {
            uint32_t A[4], B[4];
            for (int j = 0; j < 4; j++) {
                A[j] = (uint32_t)rd_u(in + l->off[f + j], l->sk[f + j]);
                B[j] = (uint32_t)rd_u(io + l->off[f + j], l->sk[f + j]);
            }
            uint32_t C[4] = {A[0] * B[0] + A[1] * B[2], A[0] * B[1] + A[1] * B[3],
                             A[2] * B[0] + A[3] * B[2], A[2] * B[1] + A[3] * B[3]};
            for (int j = 0; j < 4; j++) wr_u(io + l->off[f + j], l->sk[f + j], C[j]);
        }
        return;
    }
    for (int f = 0; f < l->nf; f++) {
        int k = l->sk[f];
        const unsigned char *a = in + l->off[f];
        unsigned char *b = io + l->off[f];
        if (op == OP_UCOMM) { /* x + y + 2xy (mod 2^32): (1+2x)(1+2y) = 1 + 2(x (+) y) */
            uint32_t x = (uint32_t)rd_u(a, k), y = (uint32_t)rd_u(b, k);
            wr_u(b, k, (uint32_t)(x + y + 2u * x * y));
            continue;
        }
        if (op == OP_USUMNC) {
            wr_u(b, k, (uint32_t)((uint32_t)rd_u(a, k) + (uint32_t)rd_u(b, k)));
            continue;
        }
        if (sk_float(k)) {
            double x = rd_f(a, k), y = rd_f(b, k), r = 0;
            switch (op) {
            case OP_MAX: r = x > y ? x : y; break;
            case OP_MIN: r = x < y ? x : y; break;
            case OP_SUM: r = x + y; break;
            case OP_PROD: r = x * y; break;
            default: die("op %s on float", op_name[op]);
            }
            wr_f(b, k, r);
        } else if (sk_signed(k)) {
            int64_t x = rd_i(a, k), y = rd_i(b, k), r = 0;
            switch (op) {
            case OP_MAX: r = x > y ? x : y; break;
            case OP_MIN: r = x < y ? x : y; break;
            case OP_SUM: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
            case OP_PROD: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
            case OP_LAND: r = (x != 0) && (y != 0); break;
            case OP_LOR: r = (x != 0) || (y != 0); break;
            case OP_LXOR: r = (x != 0) != (y != 0); break;
            case OP_BAND: r = x & y; break;
            case OP_BOR: r = x | y; break;
            case OP_BXOR: r = x ^ y; break;
            default: die("op %s on signed", op_name[op]);
            }
            wr_u(b, k, (uint64_t)r);
        } else {
            uint64_t x = rd_u(a, k), y = rd_u(b, k), r = 0;
            switch (op) {
            case OP_MAX: r = x > y ? x : y; break;
            case OP_MIN: r = x < y ? x : y; break;
            case OP_SUM: r = x + y; break;
            case OP_PROD: r = x * y; break;
            case OP_LAND: r = (x != 0) && (y != 0); break;
            case OP_LOR: r = (x != 0) || (y != 0); break;
            case OP_LXOR: r = (x != 0) != (y != 0); break;
            case OP_BAND: r = x & y; break;
            case OP_BOR: r = x | y; break;
            case OP_BXOR: r = x ^ y; break;
            default: die("op %s on unsigned", op_name[op]);
            }
            wr_u(b, k, r);
        }
    }
}

static long uop_calls;
static void uop_run(int op, void *in, void *io, int *len, MPI_Datatype *dt) {
    int li = find_layout(*dt);
    if (li < 0) die("user op %s called with a datatype difftest did not create", op_name[op]);
    const layout_t *l = &L[li];
    for (long e = 0; e < *len; e++)
        apply_elem(op, l, (const unsigned char *)in + e * l->extent, (unsigned char *)io + e * l->extent);
    uop_calls++;
}
static void uop_comm(void *a, void *b, int *n, MPI_Datatype *t) { uop_run(OP_UCOMM, a, b, n, t); }
static void uop_sumnc(void *a, void *b, int *n, MPI_Datatype *t) { uop_run(OP_USUMNC, a, b, n, t); }
static void uop_affine(void *a, void *b, int *n, MPI_Datatype *t) { uop_run(OP_AFFINE, a, b, n, t); }
static void uop_matmul(void *a, void *b, int *n, MPI_Datatype *t) { uop_run(OP_MATMUL, a, b, n, t); }

static int all_u32(const layout_t *l) {
    for (int f = 0; f < l->nf; f++)
        if (l->sk[f] != SK_I32 && l->sk[f] != SK_U32) return 0;
    return 1;
}

/* Valid by the MPI standard (section 5.9.2 / 5.9.5). */
static int op_valid(int op, const layout_t *l) {
    int k = L[l->base].sk[0];
    switch (op) {
    case OP_MAX: case OP_MIN: case OP_SUM: case OP_PROD: return !l->pair && k != SK_BYTE;
    case OP_LAND: case OP_LOR: case OP_LXOR: return !l->pair && is_cint(k);
    case OP_BAND: case OP_BOR: case OP_BXOR: return !l->pair && (is_cint(k) || k == SK_BYTE);
    case OP_MAXLOC: case OP_MINLOC: return l->pair;
    case OP_UCOMM: case OP_USUMNC: return all_u32(l);
    case OP_AFFINE: return all_u32(l) && l->nf % 2 == 0;
    case OP_MATMUL: return all_u32(l) && l->nf % 4 == 0;
    }
    return 0;
}

/* Predefined ops on derived types: the standard is terse; both MPIs accept derived types
 * built from one predefined type. Ask this MPI with MPI_Reduce_local (errors return). */
static int mpi_accepts(int op, const layout_t *l) {
    if (op >= OP_UCOMM || !l->derived) return 1;
    unsigned char *a = xmalloc(l->extent), *b = xmalloc(l->extent);
    memset(a, 0, l->extent);
    memset(b, 0, l->extent);
    int rc = MPI_Reduce_local(a, b, 1, l->dt, op_handle[op]);
    free(a);
    free(b);
    return rc == MPI_SUCCESS;
}

/* ---------------------------------------------------------------- collectives, algorithms */

enum { C_REDUCE, C_ALLREDUCE, C_RS, C_AGV, C_BCAST, C_AG, C_RSB, C_NUM };
static const char *coll_name[] = {"reduce", "allreduce", "reduce_scatter", "allgatherv",
                                  "bcast", "allgather", "reduce_scatter_block"};
static const char *alg_names[] = {"native", "binomial", "pipeline", "greedy", "greedy_uni",
                                  "circulant", "butterfly", "ring", "hier", "hier_ml",
                                  "scatter_allgather", "shm", "binary", "fibonacci"};
#define NALG 14
/* Random draws pick among the first 11 (shm, binary and fibonacci are tested forced:
 * verify/run-difftest.sh --shm and --trees), so that older reproducers draw the same
 * algorithms. */
#define NALG_RANDOM 11
/* The draw that picks a random algorithm keeps the range it had with 8 algorithms, so that
 * every other draw of a seed (and every older reproducer) is unchanged. */
#define NALG_DRAW 8
/* Allgather is checked as an allgatherv, reduce_scatter_block as a reduce_scatter. */
static int agv_like(int coll) { return coll == C_AGV || coll == C_AG; }
static int rs_like(int coll) { return coll == C_RS || coll == C_RSB; }
/* Collectives without an op. */
static int no_op(int coll) { return agv_like(coll) || coll == C_BCAST; }
static int (*p_force)(const char *, const char *);
static int (*p_segment)(long long);
static const char *(*p_last)(const char *);
static const char *(*p_version)(void);
static int alg_avail[C_NUM][NALG], n_avail[C_NUM];
static long served[C_NUM][NALG + 1];

/* ---------------------------------------------------------------- communicators */

enum { CM_WORLD, CM_DUP, CM_REVERSE, CM_SPLIT2, CM_SPLIT3R, CM_UNDEF, CM_SELF, CM_NUM };
static const char *comm_name[] = {"world", "dup", "reversed", "split2", "split3-randkey",
                                  "split-undefined", "self"};
static MPI_Comm pool[CM_NUM];

static void make_pool(uint64_t seed) {
    uint64_t h = splitmix(seed ^ 0xC0FFEEull ^ (uint64_t)wrank * 0x1234567ull);
    pool[CM_WORLD] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &pool[CM_DUP]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &pool[CM_REVERSE]);
    MPI_Comm_split(MPI_COMM_WORLD, (int)(h % 2), wrank, &pool[CM_SPLIT2]);
    MPI_Comm_split(MPI_COMM_WORLD, (int)((h >> 8) % 3), (int)((h >> 16) % 1000), &pool[CM_SPLIT3R]);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 3 == 1 ? MPI_UNDEFINED : 0, wrank, &pool[CM_UNDEF]);
    pool[CM_SELF] = MPI_COMM_SELF;
    for (int i = 0; i < CM_NUM; i++)
        if (pool[i] != MPI_COMM_NULL) MPI_Comm_set_errhandler(pool[i], MPI_ERRORS_RETURN);
}

/* ---------------------------------------------------------------- cases */

typedef struct {
    uint64_t seed;
    long idx;
    uint64_t dseed;
    int coll, li, op, real, zprob, inplace, alg, cm, fresh, nullrecv, nullzero, altsend, bigc;
    int mixrecv; /* allgatherv: odd ranks receive with the base type (same signature, valid MPI) */
    long seg;    /* pcoll_segment bytes for the case (0: table/env/model) */
    long count; /* reduce/allreduce: count; reduce_scatter/allgatherv: about the total */
    uint64_t rootdraw;
    /* per communicator */
    int p, rank, root;
    long *counts, *displs, total, rspan; /* rspan: allgatherv receive span in elements */
    const char *alg_s;
    int avoided; /* a known native defect was avoided by changing the case */
} case_t;

static long max_count = 1000000;
static long near_bytes = 0; /* --near B */
static long max_bytes = 16L << 20; /* per buffer */
static int is_mpich, is_mpich5, is_impi, have_pcoll;
/* --may-fall-back: a forced algorithm may hand calls to the native collective (shm with its
 * window refused): steer around the native defects as for unforced cases. */
static int may_fall_back;
/* --same-alg: after every call, check that every rank of the communicator was served by the
 * same algorithm (pcoll_last_algorithm, compared with one PMPI_Allreduce, which pcoll does
 * not see): PCOLL_LEARN's promise that all ranks run the same algorithm for the same call. */
static int same_alg;
static long same_alg_checked;
static int only_coll = -1;
/* --coll A,B,...: the cases' collectives (one: no draw, as before). */
static int coll_list[C_NUM], ncoll_list = 0;
static int alg_mode = 0; /* 0 random, 1 none, 2 fixed */
static int fixed_alg = -1;
static int verbose, trace;
static int full_range; /* --full-range: do not steer around known native defects */
static long avoided_total, avoided_agv, avoided_lb, avoided_rs, avoided_rsnc, avoided_impi_ag, avoided_impi_holes,
    avoided_mpich5_lb;
static char case_flags[256]; /* flags that change the case draw: part of every reproducer */

/* The value of one field of rank r's input element i (a pure function of the case). */
static void gen_field(const case_t *c, const layout_t *l, int r, long i, int f, unsigned char *dst) {
    int k = l->sk[f];
    uint64_t h = splitmix(c->dseed ^ splitmix((uint64_t)(r + 1) * 0x100000001B3ull + (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)f * 0xD6E8FEB86659FD93ull));
    int p = c->p;
    int bits = sk_bits(k);
    switch (c->op) {
    case OP_SUM:
        if (c->real) { wr_f(dst, k, (double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0); return; }
        if (sk_float(k)) {
            int64_t R = (k == SK_F32 ? (1 << 24) : (1LL << 50)) / p;
            if (R > 1000000) R = 1000000;
            double v = (double)((int64_t)(h % (uint64_t)(2 * R + 1)) - R);
            if (k == SK_F64 && (h >> 60) == 0) v += 0.25 * (double)((h >> 40) % 4); /* exact quarters */
            wr_f(dst, k, v);
        } else if (sk_signed(k)) {
            int64_t R = (int64_t)((((uint64_t)1 << (bits - 1)) - 1) / (uint64_t)p);
            if (R > 1000000) R = 1000000;
            int64_t v = (int64_t)(h % (uint64_t)(2 * R + 1)) - R;
            if (bits == 64) v += ((int64_t)((h >> 40) % 2001) - 1000) * ((int64_t)1 << 33);
            wr_u(dst, k, (uint64_t)v);
        } else {
            uint64_t R = (bits == 64 ? ~0ull : (((uint64_t)1 << bits) - 1)) / (uint64_t)p;
            if (R > 2000000) R = 2000000;
            uint64_t v = h % (R + 1);
            if (bits == 64) v += ((h >> 40) % 1000) << 34;
            wr_u(dst, k, v);
        }
        return;
    case OP_PROD: {
        /* At most `cap` ranks contribute a factor 2, the others +-1 (or a rare 0): no overflow. */
        int cap = sk_float(k) ? (k == SK_F32 ? 22 : 50) : sk_signed(k) ? bits - 2 : bits - 1;
        int64_t v;
        if (h % 64 == 0) v = 0;
        else if (r < cap && (h >> 8) % 3 == 0) v = 2;
        else v = (sk_signed(k) || sk_float(k)) && (h >> 16) % 2 ? -1 : 1;
        if (sk_float(k)) wr_f(dst, k, (double)v); else wr_u(dst, k, (uint64_t)v);
        return;
    }
    case OP_MAX: case OP_MIN:
        if (sk_float(k)) wr_f(dst, k, (double)((int64_t)(h % 2000001) - 1000000) * (((h >> 62) == 0) ? 0.5 : 1.0));
        else if ((h >> 59) == 0) wr_u(dst, k, (h >> 20) % 3); /* ties */
        else if (!sk_signed(k) && !full_range)
            /* Native defects (MPI-NOTES.md): MPICH 4.0.2 compares all unsigned types as signed
             * in MIN/MAX (pmodels/mpich#6083), Open MPI 4.1.4 MPI_UNSIGNED_LONG (ompi#10525).
             * pcoll reduces with PMPI_Reduce_local, so it inherits them: keep the top bit
             * clear unless --full-range. */
            wr_u(dst, k, h & ((((uint64_t)1) << (bits - 1)) - 1));
        else wr_u(dst, k, h);
        return;
    case OP_LAND: case OP_LOR: case OP_LXOR:
        if ((int)(h % 8) < c->zprob) wr_u(dst, k, 0);
        else wr_u(dst, k, sk_signed(k) && (h >> 8) % 2 ? (uint64_t)-(int64_t)(1 + (h >> 16) % 5) : 1 + (h >> 16) % 200);
        return;
    case OP_BAND: wr_u(dst, k, ~((h & splitmix(h) & splitmix(h + 1)) & ((h >> 3) | (h << 7)))); return;
    case OP_BOR: wr_u(dst, k, h & splitmix(h) & splitmix(h + 1)); return;
    case OP_BXOR: wr_u(dst, k, h); return;
    case OP_MAXLOC: case OP_MINLOC:
        if (f % 2 == 0) wr_f(dst, k, (double)((int)(h % 7) - 3));
        else wr_u(dst, k, (uint64_t)(int64_t)((int)(h % 13) - 2));
        return;
    case OP_AFFINE:
        wr_u(dst, k, f % 2 == 0 ? (h | 1) : h);
        return;
    default: /* user ops on 32-bit integers; allgatherv (no op): any bits that are not NaN */
        if (sk_float(k)) wr_f(dst, k, (double)((int64_t)(h % 2000001) - 1000000));
        else wr_u(dst, k, h);
        return;
    }
}

static void gen_elem(const case_t *c, const layout_t *l, int r, long i, unsigned char *e) {
    for (int f = 0; f < l->nf; f++) gen_field(c, l, r, i, f, e + l->off[f]);
}

/* Copy the data of element `e` (layout l) into l->nbase consecutive base elements at `dst`. */
static void to_base(const layout_t *l, const unsigned char *e, unsigned char *dst) {
    const layout_t *b = &L[l->base];
    for (int f = 0; f < l->nf; f++)
        memcpy(dst + (size_t)(f / b->nf) * b->extent + b->off[f % b->nf], e + l->off[f], sk_size[l->sk[f]]);
}

/* Reference: element i (global index) folded over ranks 0..p-1 in rank order. */
static void ref_elem(const case_t *c, const layout_t *l, long i, unsigned char *acc, unsigned char *tmp) {
    gen_elem(c, l, 0, i, acc);
    for (int r = 1; r < c->p; r++) {
        gen_elem(c, l, r, i, tmp);
        apply_elem(c->op, l, acc, tmp); /* tmp := acc (+) tmp */
        memcpy(acc, tmp, l->extent);
    }
}

/* Guard/sentinel patterns depend on the byte position: a shifted write is seen too. */
#define GUARD 64
static unsigned char recv_pat(size_t o) { return (unsigned char)(0xA5 ^ (o * 7) ^ (o >> 8)); }
static unsigned char send_pat(size_t o) { return (unsigned char)(0x5A ^ (o * 13) ^ (o >> 9)); }

typedef struct {
    unsigned char *alloc;
    size_t len; /* data span in bytes (without guards) */
    unsigned char *p;
} buf_t;

static void buf_init(buf_t *b, size_t len, int recv) {
    b->len = len;
    b->alloc = xmalloc(len + 2 * GUARD);
    for (size_t o = 0; o < len + 2 * GUARD; o++) b->alloc[o] = recv ? recv_pat(o) : send_pat(o);
    b->p = b->alloc + GUARD;
}

typedef struct {
    const case_t *c;
    int nbad;
    char first[512];
} check_t;

static void bad(check_t *k, const char *fmt, ...) {
    if (k->nbad++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(k->first, sizeof k->first, fmt, ap);
        va_end(ap);
    }
}

static void fmt_field(char *s, size_t n, const unsigned char *p, int k) {
    if (sk_float(k)) snprintf(s, n, "%.17g", rd_f(p, k));
    else if (sk_signed(k)) snprintf(s, n, "%" PRId64, rd_i(p, k));
    else snprintf(s, n, "%" PRIu64, rd_u(p, k));
}

static double eps_of(int k) { return k == SK_F32 ? 1.2e-7 : 2.3e-16; }

/* Compare result element `got` (global element index gi) with the reference. */
static void check_elem(check_t *ck, const layout_t *l, const unsigned char *got, long gi, long pos,
                       unsigned char *acc, unsigned char *tmp) {
    const case_t *c = ck->c;
    ref_elem(c, l, gi, acc, tmp);
    for (int f = 0; f < l->nf; f++) {
        int k = l->sk[f];
        const unsigned char *g = got + l->off[f], *w = acc + l->off[f];
        int ok;
        if (c->real) {
            double sumabs = 0;
            for (int r = 0; r < c->p; r++) {
                gen_field(c, l, r, gi, f, tmp);
                sumabs += fabs(rd_f(tmp, k));
            }
            double d = fabs(rd_f(g, k) - rd_f(w, k));
            ok = d <= 2.0 * (c->p + 1) * eps_of(k) * sumabs + 1e-300;
        } else if (sk_float(k)) {
            ok = rd_f(g, k) == rd_f(w, k);
        } else {
            ok = memcmp(g, w, sk_size[k]) == 0;
        }
        if (!ok) {
            char gs[64], ws[64];
            fmt_field(gs, sizeof gs, g, k);
            fmt_field(ws, sizeof ws, w, k);
            bad(ck, "element %ld field %d: got %s want %s", pos, f, gs, ws);
        }
    }
}

/* Bytes of element at `e` that are holes must still hold the receive pattern. */
static void check_holes(check_t *ck, const layout_t *l, const buf_t *b, size_t eoff, long pos) {
    for (int x = 0; x < l->extent; x++)
        if (l->mask[x] == 0) {
            size_t o = GUARD + eoff + x;
            if (b->alloc[o] != recv_pat(o)) {
                bad(ck, "hole byte %d of element %ld overwritten", x, pos);
                return;
            }
        }
}

static void check_range_untouched(check_t *ck, const buf_t *b, size_t from, size_t to, const char *what) {
    for (size_t o = from; o < to; o++)
        if (b->alloc[o] != recv_pat(o)) {
            bad(ck, "%s byte %ld overwritten", what, (long)o - GUARD);
            return;
        }
}

static void check_guards(check_t *ck, const buf_t *b) {
    check_range_untouched(ck, b, 0, GUARD, "guard-before");
    check_range_untouched(ck, b, GUARD + b->len, b->len + 2 * GUARD, "guard-after");
}

static uint64_t hash_result(const layout_t *l, const unsigned char *p, long n) {
    uint64_t h = 1469598103934665603ull;
    for (long e = 0; e < n; e++)
        for (int f = 0; f < l->nf; f++)
            for (int b = 0; b < sk_size[l->sk[f]]; b++) {
                h ^= p[e * l->extent + l->off[f] + b];
                h *= 1099511628211ull;
            }
    return h;
}

static long pick_count(rng_t *r) {
    int u = (int)rbelow(r, 100);
    long n;
    if (u < 5) n = 0;
    else if (u < 35) n = 1 + (long)rbelow(r, 8);
    else if (u < 65) n = 9 + (long)rbelow(r, 192);
    else if (u < 88) n = 201 + (long)rbelow(r, 19800);
    else { /* log-uniform up to max_count */
        double x = exp(log(20000.0) + (log((double)(max_count > 20001 ? max_count : 20001)) - log(20000.0)) * (double)rbelow(r, 1000001) / 1e6);
        n = (long)x;
    }
    if (n > max_count) n = (long)rbelow(r, (uint64_t)max_count + 1);
    return n;
}

/* A forced pcoll algorithm serves the case (not the native collective). */
static int pcoll_runs(const case_t *c) { return have_pcoll && c->alg > 0 && !may_fall_back; }

/* MPI_SUM of MPI_DOUBLE, MPI_FLOAT, MPI_INT, MPI_LONG (layout indices, set in main). */
static int common_li[4], ncommon;

static void draw_case(case_t *c, uint64_t seed, long idx) {
    memset(c, 0, sizeof *c);
    c->seed = seed;
    c->idx = idx;
    rng_t r = {splitmix(seed * 0x2545F4914F6CDD1Dull + (uint64_t)idx)};
    c->coll = ncoll_list > 1 ? coll_list[rbelow(&r, (uint64_t)ncoll_list)]
              : only_coll >= 0 ? only_coll : (int)rbelow(&r, C_NUM);
    (void)rnext(&r);
    if (no_op(c->coll)) {
        c->op = -1;
        c->li = rpct(&r, 50) ? (int)rbelow(&r, npredef) : npredef + (int)rbelow(&r, nlayouts - npredef);
    } else if (ncommon && rpct(&r, 20)) {
        /* The commonest reductions of real programs, where pcoll's shm has fused kernels: one
         * case in five, so that a forced run covers them however many other pairs there are. */
        c->op = OP_SUM;
        c->li = common_li[rbelow(&r, (uint64_t)ncommon)];
    } else {
        for (;;) {
            c->op = (int)rbelow(&r, OP_NUM);
            int cand[MAXL], n = 0, prefer_pre = rpct(&r, 50);
            for (int i = 0; i < nlayouts; i++)
                if (op_ok[c->op][i] && (L[i].derived != prefer_pre)) cand[n++] = i;
            if (!n)
                for (int i = 0; i < nlayouts; i++)
                    if (op_ok[c->op][i]) cand[n++] = i;
            if (!n) continue;
            c->li = cand[rbelow(&r, n)];
            break;
        }
    }
    const layout_t *l = &L[c->li];
    c->real = c->op == OP_SUM && sk_float(l->sk[0]) && rpct(&r, 30);
    c->zprob = (int)rbelow(&r, 4) * 2; /* logical ops: zeros in 0, 2, 4 or 6 of 8 */
    c->count = pick_count(&r);
    long cap = max_bytes / l->extent;
    if (c->count > cap) c->count = cap;
    if (near_bytes > 0) {
        /* --near B: 40% of the cases take a count whose bytes lie within two elements of
         * 1..5 times B (cell and window boundaries of shm); a draw of its own, so that the
         * other draws of a seed stay as they were. */
        rng_t r2 = {splitmix((seed ^ 0x6A09E667F3BCC909ull) * 0x9E3779B97F4A7C15ull + (uint64_t)idx)};
        if (rpct(&r2, 40)) {
            long n = (1 + (long)rbelow(&r2, 5)) * near_bytes / l->extent + (long)rbelow(&r2, 5) - 2;
            c->count = n < 0 ? 0 : n > cap ? cap : n > max_count ? max_count : n;
        }
    }
    c->inplace = rpct(&r, 30) && c->coll != C_BCAST;
    /* algorithm */
    /* The same draws with and without pcoll, so a case is the same case in both runs. */
    c->alg = -1;
    int a = (int)rbelow(&r, 4 * NALG_DRAW);
    uint64_t k64 = rnext(&r);
    if (have_pcoll) {
        /* --alg NAME: forced where the collective has it (hier_ml: reduce and allreduce),
         * pcoll's own decision elsewhere. */
        if (alg_mode == 2) c->alg = alg_avail[c->coll][fixed_alg] ? fixed_alg : -1;
        else if (alg_mode == 0 && a >= NALG_DRAW && n_avail[c->coll] > 0) {
            int k = (int)(k64 % (uint64_t)n_avail[c->coll]);
            for (int j = 0; j < NALG_RANDOM; j++)
                if (alg_avail[c->coll][j] && k-- == 0) { c->alg = j; break; }
        }
    }
    c->alg_s = c->alg < 0 ? (have_pcoll ? "default" : "none") : alg_names[c->alg];
    /* Run-time segment size (pcoll_segment), from its own stream so that every other draw
     * (and so every older reproducer) is unchanged: half the cases, about count/k elements
     * per segment for k in 1..64 (k = 1: one segment), in bytes of the extent. */
    if (p_segment) {
        rng_t rs = {splitmix(splitmix(seed ^ 0x5E6D5E6Dull) + (uint64_t)idx)};
        if (rpct(&rs, 50)) {
            long k = 1 + (long)rbelow(&rs, 64);
            c->seg = (c->count / k + 1) * (long)L[c->li].extent;
        }
    }
    int u = (int)rbelow(&r, 100);
    c->cm = u < 35 ? CM_WORLD : u < 50 ? CM_DUP : u < 65 ? CM_REVERSE : u < 78 ? CM_SPLIT2
          : u < 88 ? CM_SPLIT3R : u < 95 ? CM_UNDEF : CM_SELF;
    c->fresh = rpct(&r, 10);
    c->rootdraw = rnext(&r);
    c->nullrecv = rpct(&r, 50);
    c->nullzero = rpct(&r, 50);
    c->altsend = agv_like(c->coll) && l->derived && rpct(&r, 30);
#if MPI_VERSION >= 4
    c->bigc = rpct(&r, 30);
#else
    (void)rnext(&r);
#endif
    c->dseed = rnext(&r);
    c->mixrecv = no_op(c->coll) && l->derived && rpct(&r, 30);
}

/* The part of a case that depends on the communicator size (same on all its ranks). */
static void draw_comm_part(case_t *c, MPI_Comm comm) {
    MPI_Comm_size(comm, &c->p);
    MPI_Comm_rank(comm, &c->rank);
    c->root = (int)(c->rootdraw % (uint64_t)c->p);
    rng_t r = {splitmix(c->seed ^ splitmix((uint64_t)c->idx * 31 + (uint64_t)c->p))};
    int p = c->p;
    c->counts = xmalloc(sizeof(long) * p);
    c->displs = xmalloc(sizeof(long) * p);
    c->total = 0;
    c->rspan = 0;
    if (rs_like(c->coll) || agv_like(c->coll)) {
        long avg = c->count / p;
        int style = (int)rbelow(&r, 4);
        if (c->coll == C_AG || c->coll == C_RSB) style = 0; /* regular counts */
        for (int k = 0; k < p; k++) {
            long n;
            if (style == 0) n = avg;                           /* regular */
            else if (style == 1) n = rpct(&r, 25) ? 0 : (long)rbelow(&r, 2 * avg + 2); /* irregular, zeros */
            else if (style == 2) n = k == (int)(c->rootdraw % (uint64_t)p) ? c->count : 0; /* one block */
            else n = (long)rbelow(&r, 2 * avg + 2);
            c->counts[k] = n;
            c->total += n;
        }
        const layout_t *l = &L[c->li];
        /* Keep buffers within max_bytes. */
        while (c->total > 0 && c->total * l->extent > max_bytes) {
            c->total = 0;
            for (int k = 0; k < p; k++) { c->counts[k] /= 2; c->total += c->counts[k]; }
        }
        if (c->coll == C_AGV) { /* (allgather: packed, displs k·count, the else branch) */
            int *perm = xmalloc(sizeof(int) * p);
            for (int k = 0; k < p; k++) perm[k] = k;
            if (rpct(&r, 50))
                for (int k = p - 1; k > 0; k--) {
                    int j = (int)rbelow(&r, k + 1), t = perm[k];
                    perm[k] = perm[j];
                    perm[j] = t;
                }
            int gaps = rpct(&r, 60);
            long at = gaps ? (long)rbelow(&r, 3) : 0;
            for (int k = 0; k < p; k++) {
                c->displs[perm[k]] = at;
                at += c->counts[perm[k]] + (gaps ? (long)rbelow(&r, 4) : 0);
            }
            c->rspan = at;
            free(perm);
        } else {
            long at = 0;
            for (int k = 0; k < p; k++) { c->displs[k] = at; at += c->counts[k]; }
            c->rspan = at;
        }
    } else {
        c->total = c->count;
    }
    /* Open MPI 4.1.4's own allreduce (ring, from ~1000 elements) writes past its scratch
     * buffer for a datatype whose true lower bound is > 0 (heap corruption, valgrind: invalid
     * write in opal_unpack_homogeneous_contig): keep such counts small where native may run. */
    if (!is_mpich && !full_range && c->coll == C_ALLREDUCE && L[c->li].off[0] > 0 && c->count > 200 &&
        !pcoll_runs(c)) {
        c->count = c->total = 200;
        c->avoided = 3;
    }
    /* MPICH 4.0.2's own in-place MPI_Reduce_scatter with unequal counts and more than ~512 KiB
     * in total fails an assertion (memcpy overlap in typerep_yaksa_pack.c): out of place there.
     * Intel MPI 2021.19's returns MPI_ERR_TYPE for contiguous derived and pair types from ~128
     * KiB at p = 2; pcoll routes around it (impi-reduce-scatter-inplace-unequal), so only a run
     * without pcoll goes out of place. */
    if (c->coll == C_RS && c->inplace && !full_range &&
        ((is_mpich && !pcoll_runs(c) && c->total * L[c->li].extent > 256 * 1024) ||
         (is_impi && !have_pcoll && c->total * L[c->li].size > 64 * 1024))) {
        int uneq = 0;
        for (int k = 1; k < p; k++) uneq |= c->counts[k] != c->counts[0];
        if (uneq) {
            c->inplace = 0;
            c->avoided = 4;
        }
    }
    /* MPICH 4.0.2's own MPI_Reduce_scatter with a non-commutative op on a non-contiguous
     * datatype corrupts the heap (munmap_chunk()/free(): invalid pointer) and computes wrong
     * results, any count: use the commutative user op there. Intel MPI 2021.19's
     * MPI_Reduce_scatter_block computes wrong results so too (seed 634566210 case 268 at p = 3
     * without pcoll); pcoll routes around both, so only a run without pcoll steers there. */
    if (!full_range && rs_like(c->coll) && L[c->li].extent != L[c->li].size &&
        (c->op == OP_USUMNC || c->op == OP_AFFINE || c->op == OP_MATMUL) &&
        ((is_mpich && !pcoll_runs(c)) || (is_impi && !have_pcoll))) {
        c->op = OP_UCOMM;
        c->avoided = 5;
    }
    /* Both native allgathervs fail when ranks use different but signature-equal receive types
     * (valid MPI): Open MPI 4.1.4 hangs (default decision), MPICH 4.0.2 delivers wrong data
     * above ~16 KiB and then hangs. Mix them only where a forced pcoll algorithm runs (or with
     * --full-range). */
    if (!full_range && c->mixrecv && !pcoll_runs(c)) c->mixrecv = 0;
    /* Intel MPI 2021.19's own MPI_Allgather with a send type other than the receive type (the
     * base type against a contiguous type of it: equal signatures, valid MPI) delivers wrong
     * blocks and corrupts the heap (p = 2 and 3, without pcoll too). pcoll cannot route around
     * it (no rank knows the others' send types): the same type on both sides where native runs. */
    if (is_impi && !full_range && c->coll == C_AG && c->altsend && !pcoll_runs(c)) {
        c->altsend = 0;
        c->avoided = 6;
    }
    /* Intel MPI 2021.19's own MPI_Reduce and MPI_Allreduce with a user-defined op on a
     * datatype with holes compute wrong results and write into the holes (holestart(MPI_INT),
     * a reduce to root 1 of 10283 elements at p = 2, without pcoll too). pcoll routes around
     * both (impi-reduce-userop-holes, impi-allreduce-userop-holes); where nothing does (no
     * pcoll, or PCOLL_DISABLE=1) such a case runs on the datatype's base type. */
    if (is_impi && !have_pcoll && !full_range && (c->coll == C_REDUCE || c->coll == C_ALLREDUCE) &&
        c->op >= OP_UCOMM && L[c->li].extent != L[c->li].size) {
        const layout_t *d = &L[c->li];
        c->count *= d->nbase;
        c->total = c->count;
        c->li = d->base;
        if (!op_valid(c->op, &L[c->li])) c->op = OP_UCOMM;
        c->avoided = 7;
    }
    /* MPICH 5.0.2's own shared-memory reduce (release_gather, from a communicator's 6th
     * collective) with a commutative user op on a datatype whose true lower bound is > 0, at a
     * root other than 0, frees a pointer true_lb bytes before its scratch block (seed 795854441
     * at p = 3 aborted with free(): invalid pointer, without pcoll too). pcoll routes around it
     * (mpich5-reduce-userop-true-lb); where nothing does, such a case reduces to root 0. */
    if (is_mpich5 && !have_pcoll && !full_range && c->coll == C_REDUCE && c->root != 0 &&
        c->op == OP_UCOMM && L[c->li].off[0] > 0) {
        c->root = 0;
        c->avoided = 8;
    }
    /* Debian's MPICH 4.0.2 ignores displs[0] in MPI_Allgatherv on a one-rank communicator
     * (writes the block at offset 0): give it displs[0] = 0 where the native call runs. */
    if (is_mpich && !full_range && c->coll == C_AGV && p == 1 && c->displs[0] != 0 &&
        (!have_pcoll || c->alg == 0 || may_fall_back)) {
        c->displs[0] = 0;
        c->rspan = c->counts[0];
        c->avoided = 2;
    }
    /* Debian's MPICH 4.0.2 crashes in its own MPI_Reduce with MPI_IN_PLACE at root != 0 above
     * 2048 bytes (MPI-NOTES.md): avoid that combination when the native reduce may run. */
    if (is_mpich && c->coll == C_REDUCE && c->inplace && c->root != 0 &&
        c->count * L[c->li].extent > 1024 && !have_pcoll && !full_range) {
        c->inplace = 0;
        c->avoided = 1;
    }
}

static const char *type_name(const case_t *c) { return L[c->li].name; }

static long cases_run, mism_local;
static long *bad_cases;
static long nbad_cases, cap_bad_cases;

static void report(const case_t *c, check_t *ck, const char *served_s) {
    if (!ck->nbad) return;
    char counts[160] = "";
    if (rs_like(c->coll) || agv_like(c->coll)) {
        int n = snprintf(counts, sizeof counts, " counts=");
        for (int k = 0; k < c->p && n < (int)sizeof counts - 24; k++)
            n += snprintf(counts + n, sizeof counts - n, "%s%ld", k ? "," : "", c->counts[k]);
        if (agv_like(c->coll)) {
            n += snprintf(counts + n, sizeof counts - n, " displs=");
            for (int k = 0; k < c->p && n < (int)sizeof counts - 24; k++)
                n += snprintf(counts + n, sizeof counts - n, "%s%ld", k ? "," : "", c->displs[k]);
        }
    }
    out("MISMATCH seed=%" PRIu64 " case=%ld coll=%s type=%s op=%s count=%ld root=%d inplace=%d alg=%s seg=%ld p=%d"
        " comm=%s%s rank=%d served=%s bigcount=%d%s%s%s%s%s: %s (%d problems)",
        c->seed, c->idx, coll_name[c->coll], type_name(c), c->op >= 0 ? op_name[c->op] : "-",
        c->coll == C_REDUCE || c->coll == C_ALLREDUCE ? c->count : c->total,
        c->coll == C_REDUCE || c->coll == C_BCAST ? c->root : -1, c->inplace, c->alg_s, c->seg, c->p, comm_name[c->cm],
        c->fresh ? "+fresh-dup" : "", c->rank, served_s, c->bigc, counts,
        c->real ? " data=real" : "", c->altsend ? " sendtype=base" : "",
        c->mixrecv ? " recvtype=base-on-odd-ranks" : "", case_flags, ck->first, ck->nbad);
    mism_local++;
    if (nbad_cases == cap_bad_cases) {
        cap_bad_cases = cap_bad_cases ? 2 * cap_bad_cases : 64;
        bad_cases = realloc(bad_cases, sizeof(long) * cap_bad_cases);
    }
    if (nbad_cases == 0 || bad_cases[nbad_cases - 1] != c->idx) bad_cases[nbad_cases++] = c->idx;
}

static int call_coll(const case_t *c, const void *sb, void *rb, MPI_Datatype stype, long scount,
                     MPI_Datatype rtype, long scale, MPI_Comm comm) {
    const layout_t *l = &L[c->li];
    MPI_Op op = c->op >= 0 ? op_handle[c->op] : MPI_OP_NULL;
#if MPI_VERSION >= 4
    if (c->bigc) {
        MPI_Count *cc = xmalloc(sizeof(MPI_Count) * c->p);
        MPI_Aint *dd = xmalloc(sizeof(MPI_Aint) * c->p);
        for (int k = 0; k < c->p; k++) { cc[k] = c->counts[k] * scale; dd[k] = c->displs[k] * scale; }
        int rc = MPI_ERR_OTHER;
        switch (c->coll) {
        case C_REDUCE: rc = MPI_Reduce_c(sb, rb, c->count, l->dt, op, c->root, comm); break;
        case C_ALLREDUCE: rc = MPI_Allreduce_c(sb, rb, c->count, l->dt, op, comm); break;
        case C_RS: rc = MPI_Reduce_scatter_c(sb, rb, cc, l->dt, op, comm); break;
        case C_AGV: rc = MPI_Allgatherv_c(sb, scount, stype, rb, cc, dd, rtype, comm); break;
        case C_BCAST: rc = MPI_Bcast_c(rb, c->count * scale, rtype, c->root, comm); break;
        case C_AG: rc = MPI_Allgather_c(sb, scount, stype, rb, cc[0], rtype, comm); break;
        case C_RSB: rc = MPI_Reduce_scatter_block_c(sb, rb, cc[0], l->dt, op, comm); break;
        }
        free(cc);
        free(dd);
        return rc;
    }
#endif
    int *ci = xmalloc(sizeof(int) * c->p), *di = xmalloc(sizeof(int) * c->p);
    for (int k = 0; k < c->p; k++) { ci[k] = (int)(c->counts[k] * scale); di[k] = (int)(c->displs[k] * scale); }
    int rc = MPI_ERR_OTHER;
    switch (c->coll) {
    case C_REDUCE: rc = MPI_Reduce(sb, rb, (int)c->count, l->dt, op, c->root, comm); break;
    case C_ALLREDUCE: rc = MPI_Allreduce(sb, rb, (int)c->count, l->dt, op, comm); break;
    case C_RS: rc = MPI_Reduce_scatter(sb, rb, ci, l->dt, op, comm); break;
    case C_AGV: rc = MPI_Allgatherv(sb, (int)scount, stype, rb, ci, di, rtype, comm); break;
    case C_BCAST: rc = MPI_Bcast(rb, (int)(c->count * scale), rtype, c->root, comm); break;
    case C_AG: rc = MPI_Allgather(sb, (int)scount, stype, rb, ci[0], rtype, comm); break;
    case C_RSB: rc = MPI_Reduce_scatter_block(sb, rb, ci[0], l->dt, op, comm); break;
    }
    free(ci);
    free(di);
    return rc;
}

/* Bcast: the root's buffer holds the root's input (in the receive layout `rl`, `scale`
 * receive elements per element), every other rank's the receive pattern. */
static void bcast_fill(const case_t *c, buf_t *rb, const layout_t *rl, long scale) {
    const layout_t *l = &L[c->li];
    const size_t rext = (size_t)rl->extent;
    buf_init(rb, (size_t)c->count * scale * rext, 1);
    if (c->rank != c->root) return;
    unsigned char *e = xmalloc((size_t)l->extent);
    for (long i = 0; i < c->count; i++) {
        if (rl != l) {
            gen_elem(c, l, c->root, i, e);
            to_base(l, e, rb->p + (size_t)i * scale * rext);
        } else {
            gen_elem(c, l, c->root, i, rb->p + (size_t)i * rext);
        }
    }
    free(e);
}

/* Bcast: every field of every element equals the root's input; holes and guards untouched. */
static void bcast_check(const case_t *c, check_t *ck, const buf_t *rb, const layout_t *rl, long scale) {
    const layout_t *l = &L[c->li];
    const size_t rext = (size_t)rl->extent;
    unsigned char *e = xmalloc((size_t)l->extent), *want = xmalloc((size_t)l->extent + rext * scale);
    for (long j = 0; j < c->count * scale && ck->nbad < 50; j++) {
        long i = j / scale;
        if (rl != l) {
            gen_elem(c, l, c->root, i, e);
            to_base(l, e, want);
        } else {
            gen_elem(c, l, c->root, i, want);
        }
        const unsigned char *w = want + (j % scale) * rext;
        for (int f = 0; f < rl->nf; f++) {
            int sk = rl->sk[f];
            const unsigned char *g = rb->p + j * rext + rl->off[f];
            if (memcmp(g, w + rl->off[f], sk_size[sk]) != 0) {
                char gs[64], ws[64];
                fmt_field(gs, sizeof gs, g, sk);
                fmt_field(ws, sizeof ws, w + rl->off[f], sk);
                bad(ck, "element %ld field %d: got %s want %s", i, f, gs, ws);
            }
        }
        check_holes(ck, rl, rb, j * rext, j);
    }
    if (rb->alloc) check_guards(ck, rb);
    free(e);
    free(want);
}

static void run_case(uint64_t seed, long idx) {
    case_t cs, *c = &cs;
    draw_case(c, seed, idx);
    MPI_Comm comm = pool[c->cm];
    if (comm == MPI_COMM_NULL) return; /* this rank is not in the case's communicator */
    MPI_Comm fresh = MPI_COMM_NULL;
    if (c->fresh) {
        MPI_Comm_dup(comm, &fresh);
        MPI_Comm_set_errhandler(fresh, MPI_ERRORS_RETURN);
        comm = fresh;
    }
    draw_comm_part(c, comm);
    if (c->avoided == 1) avoided_total++;
    if (c->avoided == 2) avoided_agv++;
    if (c->avoided == 3) avoided_lb++;
    if (c->avoided == 4) avoided_rs++;
    if (c->avoided == 5) avoided_rsnc++;
    if (c->avoided == 6) avoided_impi_ag++;
    if (c->avoided == 7) avoided_impi_holes++;
    if (c->avoided == 8) avoided_mpich5_lb++;
    const layout_t *l = &L[c->li];
    const size_t ext = (size_t)l->extent;
    if (have_pcoll) {
        int rc = p_force(coll_name[c->coll], c->alg >= 0 ? alg_names[c->alg] : NULL);
        if (rc != 0) die("pcoll_force(%s, %s) = %d", coll_name[c->coll], c->alg_s, rc);
        if (p_segment && (rc = p_segment(c->seg)) != 0) die("pcoll_segment(%ld) = %d", c->seg, rc);
    }
    if ((verbose && c->rank == 0) || trace) {
        char cs[200] = "";
        if (rs_like(c->coll) || agv_like(c->coll)) {
            int n = 0;
            for (int k = 0; k < c->p && n < 150; k++)
                n += snprintf(cs + n, sizeof cs - n, "%s%ld@%ld", k ? "," : " counts@displs=", c->counts[k], c->displs[k]);
        }
        out("%scase %ld: coll=%s type=%s op=%s count=%ld total=%ld root=%d inplace=%d alg=%s seg=%ld p=%d comm=%s%s bigcount=%d%s%s%s",
            trace ? (wrank ? "trace: rank>0 " : "trace: rank0 ") : "", idx, coll_name[c->coll], l->name, c->op >= 0 ? op_name[c->op] : "-", c->count, c->total,
            c->root, c->inplace, c->alg_s, c->seg, c->p, comm_name[c->cm], c->fresh ? "+fresh" : "", c->bigc,
            c->altsend ? " sendtype=base" : "", c->mixrecv ? " recvtype=base-on-odd-ranks" : "", cs);
    }

    check_t ck = {c, 0, ""};
    unsigned char *acc = xmalloc(ext), *tmp = xmalloc(ext);
    buf_t sb = {0}, rb = {0}, sbcopy = {0};
    const void *sendp = NULL;
    void *recvp = NULL;
    MPI_Datatype stype = l->dt;
    long scount = 0;
    int p = c->p, me = c->rank;
    /* allgatherv receive layout: l, or on odd ranks of a mixrecv case l's base type */
    int altrecv = c->mixrecv && me % 2 == 1;
    const layout_t *rl = altrecv ? &L[l->base] : l;
    const long scale = altrecv ? l->nbase : 1;
    const size_t rext = (size_t)rl->extent;
    int inplace = c->inplace && !(c->coll == C_REDUCE && me != c->root);
    long own_off = 0; /* reduce_scatter: my block's global start */
    for (int k = 0; k < me; k++) own_off += c->counts[k];

    /* Inputs: element i of my input (global index gi). */
    long nin = agv_like(c->coll) ? c->counts[me] : c->coll == C_BCAST ? 0 : c->total;
    if (c->coll == C_BCAST) {
        bcast_fill(c, &rb, rl, scale);
        recvp = rb.p;
    } else if (agv_like(c->coll)) {
        rb.len = (size_t)c->rspan * scale * rext;
        buf_init(&rb, rb.len, 1);
        if (inplace && altrecv) {
            unsigned char *e = xmalloc(ext);
            for (long i = 0; i < nin; i++) {
                gen_elem(c, l, me, i, e);
                to_base(l, e, rb.p + ((c->displs[me] + i) * scale) * rext);
            }
            free(e);
            sendp = MPI_IN_PLACE;
        } else if (inplace) {
            for (long i = 0; i < nin; i++) gen_elem(c, l, me, i, rb.p + (c->displs[me] + i) * ext);
            sendp = MPI_IN_PLACE;
        } else if (c->altsend) {
            const layout_t *b = &L[l->base];
            size_t nb = (size_t)nin * l->nbase;
            buf_init(&sb, nb * b->extent, 0);
            unsigned char *e = xmalloc(ext);
            for (long i = 0; i < nin; i++) {
                gen_elem(c, l, me, i, e);
                to_base(l, e, sb.p + (size_t)i * l->nbase * b->extent);
            }
            free(e);
            stype = b->dt;
            scount = (long)nb;
            sendp = sb.p;
        } else {
            buf_init(&sb, (size_t)nin * ext, 0);
            for (long i = 0; i < nin; i++) gen_elem(c, l, me, i, sb.p + i * ext);
            scount = nin;
            sendp = sb.p;
        }
        recvp = rb.p;
    } else {
        long nrecv = rs_like(c->coll) ? (inplace ? c->total : c->counts[me]) : c->count;
        int want_recv = !(c->coll == C_REDUCE && me != c->root && c->nullrecv);
        if (want_recv) buf_init(&rb, (size_t)nrecv * ext, 1);
        if (inplace) {
            for (long i = 0; i < nin; i++) gen_elem(c, l, me, i, rb.p + i * ext);
            sendp = MPI_IN_PLACE;
        } else {
            buf_init(&sb, (size_t)nin * ext, 0);
            for (long i = 0; i < nin; i++) gen_elem(c, l, me, i, sb.p + i * ext);
            sendp = sb.p;
        }
        recvp = want_recv ? rb.p : NULL;
    }
    /* Zero-size calls: sometimes with NULL buffers (valid: nothing is accessed). */
    if (c->nullzero && nin == 0 && sendp != MPI_IN_PLACE) sendp = NULL;
    if (c->nullzero && recvp && rb.len == 0) recvp = NULL;
    if (sb.alloc) {
        sbcopy.alloc = xmalloc(sb.len + 2 * GUARD);
        memcpy(sbcopy.alloc, sb.alloc, sb.len + 2 * GUARD);
    }

    int rc = call_coll(c, sendp, recvp, stype, scount, rl->dt, scale, comm);
    const char *served_s = "-";
    if (p_last && rc == MPI_SUCCESS) { /* loaded (PCOLL_DISABLE=1 too: it must serve none) */
        const char *s = p_last(coll_name[c->coll]);
        served_s = s && *s ? s : "none";
        int j = NALG;
        for (int a = 0; a < NALG; a++)
            if (s && !strcmp(s, alg_names[a])) j = a;
        served[c->coll][j]++;
    }
    if (same_alg && have_pcoll && p_last) {
        const char *s = rc == MPI_SUCCESS ? p_last(coll_name[c->coll]) : NULL;
        int j = NALG;
        for (int a = 0; a < NALG; a++)
            if (s && !strcmp(s, alg_names[a])) j = a;
        int v[3] = {j, -j, rc != MPI_SUCCESS}, m[3];
        PMPI_Allreduce(v, m, 3, MPI_INT, MPI_MAX, comm);
        if (!m[2] && m[0] != -m[1])
            bad(&ck, "ranks ran different algorithms (this rank: %s; indices %d..%d)", served_s, -m[1], m[0]);
        same_alg_checked += !m[2];
    }
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(rc, es, &n);
        bad(&ck, "returned error %d (%s)", rc, es);
    } else {
        /* Send buffer untouched, guards included. */
        if (sb.alloc && memcmp(sb.alloc, sbcopy.alloc, sb.len + 2 * GUARD) != 0)
            bad(&ck, "send buffer modified");
        switch (c->coll) {
        case C_REDUCE:
        case C_ALLREDUCE:
            if (rb.alloc && (c->coll == C_ALLREDUCE || me == c->root)) {
                for (long i = 0; i < c->count && ck.nbad < 50; i++) {
                    check_elem(&ck, l, rb.p + i * ext, i, i, acc, tmp);
                    check_holes(&ck, l, &rb, i * ext, i);
                }
                check_guards(&ck, &rb);
            }
            break;
        case C_BCAST: bcast_check(c, &ck, &rb, rl, scale); break;
        case C_RS:
        case C_RSB: {
            long n = c->counts[me];
            for (long i = 0; i < n && ck.nbad < 50; i++) {
                check_elem(&ck, l, rb.p + i * ext, own_off + i, i, acc, tmp);
                check_holes(&ck, l, &rb, i * ext, i);
            }
            if (rb.alloc) check_guards(&ck, &rb); /* in place: the rest of recvbuf is undefined */
            break;
        }
        case C_AG:
        case C_AGV: {
            /* owner map over the receive span, in receive-type elements: -1 = gap */
            long span = c->rspan * scale;
            int *own = xmalloc(sizeof(int) * (span + 1));
            for (long j = 0; j < span; j++) own[j] = -1;
            for (int k = 0; k < p; k++)
                for (long i = 0; i < c->counts[k] * scale; i++) own[c->displs[k] * scale + i] = k;
            unsigned char *e = xmalloc(ext), *want = xmalloc(ext + rext * scale);
            for (long j = 0; j < span && ck.nbad < 50; j++) {
                if (own[j] < 0) {
                    check_range_untouched(&ck, &rb, GUARD + j * rext, GUARD + (j + 1) * rext, "gap");
                    continue;
                }
                int k = own[j];
                long i = j - c->displs[k] * scale; /* receive-type element within block k */
                if (altrecv) {
                    gen_elem(c, l, k, i / scale, e);
                    to_base(l, e, want);
                } else {
                    gen_elem(c, l, k, i, want);
                }
                const unsigned char *w = altrecv ? want + (i % scale) * rext : want;
                for (int f = 0; f < rl->nf; f++) {
                    int sk = rl->sk[f];
                    const unsigned char *g = rb.p + j * rext + rl->off[f];
                    if (memcmp(g, w + rl->off[f], sk_size[sk]) != 0) {
                        char gs[64], ws[64];
                        fmt_field(gs, sizeof gs, g, sk);
                        fmt_field(ws, sizeof ws, w + rl->off[f], sk);
                        bad(&ck, "block %d element %ld field %d: got %s want %s", k, i, f, gs, ws);
                    }
                }
                check_holes(&ck, rl, &rb, j * rext, j);
            }
            check_guards(&ck, &rb);
            free(own);
            free(e);
            free(want);
            break;
        }
        }
    }
    /* Allreduce: bit-identical results on all ranks. */
    if (c->coll == C_ALLREDUCE) {
        uint64_t h = rc == MPI_SUCCESS && rb.alloc ? hash_result(l, rb.p, c->count) : 0;
        uint64_t *all = xmalloc(sizeof(uint64_t) * p);
        PMPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm);
        for (int k = 0; k < p; k++)
            if (all[k] != h) { bad(&ck, "result differs bitwise between rank %d and rank %d", me, k); break; }
        free(all);
    }
    report(c, &ck, served_s);
    cases_run++;

    if (have_pcoll) p_force(coll_name[c->coll], NULL);
    if (p_segment) p_segment(0);
    free(sb.alloc);
    free(rb.alloc);
    free(sbcopy.alloc);
    free(acc);
    free(tmp);
    free(c->counts);
    free(c->displs);
    if (fresh != MPI_COMM_NULL) MPI_Comm_free(&fresh);
}

/* An algorithm still being written makes pcoll fail the call with "not yet implemented" on
 * stderr. Find those with one small call each (stderr captured around it) and leave them out
 * of the random choice, loudly: every other failure stays a failure of the test proper. */
static int alg_unimpl[C_NUM][NALG];
static void probe_algorithms(void) {
    int n = 2 * wsize + 3;
    int *sb = xmalloc(sizeof(int) * n * wsize), *rb = xmalloc(sizeof(int) * n * wsize);
    int *cnt = xmalloc(sizeof(int) * wsize), *dsp = xmalloc(sizeof(int) * wsize);
    for (int i = 0; i < n * wsize; i++) sb[i] = wrank + i;
    for (int k = 0; k < wsize; k++) { cnt[k] = 2; dsp[k] = 2 * k; }
    for (int c = 0; c < C_NUM; c++)
        for (int a = 1; a < NALG; a++) {
            if (!alg_avail[c][a]) continue;
            fflush(stderr);
            FILE *cap = tmpfile();
            int saved = dup(2);
            if (!cap || saved < 0) die("probe: cannot capture stderr");
            dup2(fileno(cap), 2);
            p_force(coll_name[c], alg_names[a]);
            int rc = MPI_ERR_OTHER;
            switch (c) {
            case C_REDUCE: rc = MPI_Reduce(sb, rb, n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); break;
            case C_ALLREDUCE: rc = MPI_Allreduce(sb, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
            case C_RS: rc = MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
            case C_AGV: rc = MPI_Allgatherv(sb, 2, MPI_INT, rb, cnt, dsp, MPI_INT, MPI_COMM_WORLD); break;
            case C_BCAST: rc = MPI_Bcast(sb, n, MPI_INT, 0, MPI_COMM_WORLD); break;
            case C_AG: rc = MPI_Allgather(sb, 2, MPI_INT, rb, 2, MPI_INT, MPI_COMM_WORLD); break;
            case C_RSB: rc = MPI_Reduce_scatter_block(sb, rb, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
            }
            p_force(coll_name[c], NULL);
            fflush(stderr);
            dup2(saved, 2);
            close(saved);
            char text[8192];
            rewind(cap);
            size_t len = fread(text, 1, sizeof text - 1, cap);
            text[len] = 0;
            fclose(cap);
            int mine = rc != MPI_SUCCESS && strstr(text, "not yet implemented") != NULL, any = 0;
            if (!mine && len) { if (write(2, text, len) < 0) { /* nothing */ } }
            PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (any) {
                alg_unimpl[c][a] = 1;
                alg_avail[c][a] = 0;
                if (a < NALG_RANDOM) n_avail[c]--;
            }
        }
    free(sb); free(rb); free(cnt); free(dsp);
}

static int lookup(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    uint64_t seed = 0;
    int have_seed = 0;
    long ncases = 1000, first = 0, one = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed") && v) { seed = strtoull(v, NULL, 0); have_seed = 1; i++; }
        else if (!strcmp(a, "--cases") && v) { ncases = atol(v); i++; }
        else if (!strcmp(a, "--first") && v) { first = atol(v); i++; }
        else if (!strcmp(a, "--case") && v) { one = atol(v); i++; }
        else if (!strcmp(a, "--max-count") && v) { max_count = atol(v); i++; }
        else if (!strcmp(a, "--max-bytes") && v) { max_bytes = atol(v); i++; }
        else if (!strcmp(a, "--near") && v) { near_bytes = atol(v); i++; }
        else if (!strcmp(a, "--may-fall-back")) may_fall_back = 1;
        else if (!strcmp(a, "--same-alg")) same_alg = 1;
        else if (!strcmp(a, "--full-range")) full_range = 1;
        else if (!strcmp(a, "--coll") && v) {
            char list[256];
            snprintf(list, sizeof list, "%s", v);
            ncoll_list = 0;
            for (char *t = strtok(list, ","); t && ncoll_list < C_NUM; t = strtok(NULL, ",")) {
                int c = lookup(t, coll_name, C_NUM);
                if (c < 0) die("unknown collective %s", t);
                coll_list[ncoll_list++] = c;
            }
            if (ncoll_list == 0) die("--coll: no collective");
            only_coll = ncoll_list == 1 ? coll_list[0] : -1;
            i++;
        } else if (!strcmp(a, "--alg") && v) {
            if (!strcmp(v, "random")) alg_mode = 0;
            else if (!strcmp(v, "none")) alg_mode = 1;
            else {
                alg_mode = 2;
                fixed_alg = lookup(v, alg_names, NALG);
                if (fixed_alg < 0) die("unknown algorithm %s", v);
            }
            i++;
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) verbose = 1;
        else if (!strcmp(a, "--trace")) trace = 1; /* every rank, every case, before the call */
        else {
            if (wrank == 0)
                fprintf(stderr, "usage: difftest [--seed S] [--cases N] [--first K] [--case N] [--max-count C]\n"
                                "                [--max-bytes B] [--alg NAME|random|none] [--coll NAME[,NAME...]] [--verbose] [--trace]\n"
                                "                [--full-range] [--near B] [--may-fall-back] [--same-alg]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (!have_seed) seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    {
        int n = 0;
        for (int i = 1; i < argc; i++) {
            const char *a = argv[i];
            int keep = !strcmp(a, "--coll") || !strcmp(a, "--max-count") || !strcmp(a, "--max-bytes") ||
                       !strcmp(a, "--alg") || !strcmp(a, "--near");
            if (keep && i + 1 < argc) {
                n += snprintf(case_flags + n, sizeof case_flags - n, " %s %s", a, argv[i + 1]);
                i++;
            } else if (!strcmp(a, "--full-range")) {
                n += snprintf(case_flags + n, sizeof case_flags - n, " %s", a);
            }
            if (n >= (int)sizeof case_flags) break;
        }
    }
    PMPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (max_count < 0) max_count = 0;

    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen = 0;
    MPI_Get_library_version(ver, &vlen);
    is_mpich = strstr(ver, "MPICH") != NULL;
    is_impi = strstr(ver, "Intel") != NULL;
    is_mpich5 = mpich_major() >= 5;
    char *nl = strchr(ver, '\n');
    if (nl) *nl = 0;

    *(void **)&p_force = dlsym(RTLD_DEFAULT, "pcoll_force");
    *(void **)&p_last = dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    *(void **)&p_segment = dlsym(RTLD_DEFAULT, "pcoll_segment");
    *(void **)&p_version = dlsym(RTLD_DEFAULT, "pcoll_version");
    have_pcoll = p_force != NULL;
    /* PCOLL_DISABLE=1 (pcoll's spellings of true): loaded but a passthrough, so every call is
     * the native one and the native defects are avoided as without pcoll. */
    const char *off = getenv("PCOLL_DISABLE");
    if (off && (!strcmp(off, "1") || !strcasecmp(off, "true") || !strcasecmp(off, "yes") || !strcasecmp(off, "on")))
        have_pcoll = 0;
    if (have_pcoll) {
        for (int c = 0; c < C_NUM; c++) {
            for (int a = 0; a < NALG; a++) {
                alg_avail[c][a] = p_force(coll_name[c], alg_names[a]) == 0;
                if (a < NALG_RANDOM) n_avail[c] += alg_avail[c][a];
            }
            p_force(coll_name[c], NULL);
        }
        probe_algorithms();
        if (alg_mode == 2) {
            int any = 0;
            for (int c = 0; c < C_NUM; c++)
                if (alg_avail[c][fixed_alg] && (only_coll < 0 || only_coll == c)) any = 1;
            /* --coll A,B: every listed collective must have the forced algorithm. */
            for (int k = 0; ncoll_list > 1 && k < ncoll_list; k++)
                if (!alg_avail[coll_list[k]][fixed_alg])
                    die("pcoll has no algorithm %s for %s", alg_names[fixed_alg], coll_name[coll_list[k]]);
            if (!any) die("pcoll has no algorithm %s for %s", alg_names[fixed_alg],
                          only_coll >= 0 ? coll_name[only_coll] : "any collective");
        }
    } else if (alg_mode == 2) {
        if (wrank == 0) out("difftest: note: --alg %s ignored: pcoll is not loaded", alg_names[fixed_alg]);
    }

    /* Datatypes. */
    if (sizeof(long) != 8 || sizeof(int) != 4 || sizeof(short) != 2) die("unexpected C type sizes");
    int iI8 = add_predef("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, SK_I8, 0, 0);
    add_predef("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, SK_U8, 0, 0);
    int iSHORT = add_predef("MPI_SHORT", MPI_SHORT, SK_I16, 0, 0);
    add_predef("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, SK_U16, 0, 0);
    int iINT = add_predef("MPI_INT", MPI_INT, SK_I32, 0, 0);
    int iUNS = add_predef("MPI_UNSIGNED", MPI_UNSIGNED, SK_U32, 0, 0);
    int iLONG = add_predef("MPI_LONG", MPI_LONG, SK_I64, 0, 0);
    add_predef("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, SK_U64, 0, 0);
    add_predef("MPI_LONG_LONG", MPI_LONG_LONG, SK_I64, 0, 0);
    add_predef("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, SK_U64, 0, 0);
    add_predef("MPI_INT8_T", MPI_INT8_T, SK_I8, 0, 0);
    int iU8 = add_predef("MPI_UINT8_T", MPI_UINT8_T, SK_U8, 0, 0);
    add_predef("MPI_INT16_T", MPI_INT16_T, SK_I16, 0, 0);
    add_predef("MPI_UINT16_T", MPI_UINT16_T, SK_U16, 0, 0);
    add_predef("MPI_INT32_T", MPI_INT32_T, SK_I32, 0, 0);
    int iU32 = add_predef("MPI_UINT32_T", MPI_UINT32_T, SK_U32, 0, 0);
    int iI64 = add_predef("MPI_INT64_T", MPI_INT64_T, SK_I64, 0, 0);
    add_predef("MPI_UINT64_T", MPI_UINT64_T, SK_U64, 0, 0);
    int iFLT = add_predef("MPI_FLOAT", MPI_FLOAT, SK_F32, 0, 0);
    int iDBL = add_predef("MPI_DOUBLE", MPI_DOUBLE, SK_F64, 0, 0);
    int iBYTE = add_predef("MPI_BYTE", MPI_BYTE, SK_BYTE, 0, 0);
    common_li[0] = iDBL, common_li[1] = iFLT, common_li[2] = iINT, common_li[3] = iLONG, ncommon = 4;
    int i2I = add_predef("MPI_2INT", MPI_2INT, SK_I32, (int)offsetof(ii_t, i), (int)sizeof(ii_t));
    add_predef("MPI_FLOAT_INT", MPI_FLOAT_INT, SK_F32, (int)offsetof(fi_t, i), (int)sizeof(fi_t));
    int iDI = add_predef("MPI_DOUBLE_INT", MPI_DOUBLE_INT, SK_F64, (int)offsetof(di_t, i), (int)sizeof(di_t));
    add_predef("MPI_LONG_INT", MPI_LONG_INT, SK_I64, (int)offsetof(li_t, i), (int)sizeof(li_t));
    int iSI = add_predef("MPI_SHORT_INT", MPI_SHORT_INT, SK_I16, (int)offsetof(si_t, i), (int)sizeof(si_t));
    npredef = nlayouts;
    int bases[] = {iINT, iUNS, iU32, iDBL, iFLT, iSHORT, iU8, iI8, iI64, iBYTE, i2I, iDI, iSI};
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
        for (int k = 0; k < DV_NUM; k++) {
            if (nlayouts >= MAXL) die("too many layouts");
            add_derived(k, bases[b]);
        }

    /* Ops. */
    op_handle[OP_MAX] = MPI_MAX; op_handle[OP_MIN] = MPI_MIN; op_handle[OP_SUM] = MPI_SUM;
    op_handle[OP_PROD] = MPI_PROD; op_handle[OP_LAND] = MPI_LAND; op_handle[OP_LOR] = MPI_LOR;
    op_handle[OP_LXOR] = MPI_LXOR; op_handle[OP_BAND] = MPI_BAND; op_handle[OP_BOR] = MPI_BOR;
    op_handle[OP_BXOR] = MPI_BXOR; op_handle[OP_MAXLOC] = MPI_MAXLOC; op_handle[OP_MINLOC] = MPI_MINLOC;
    MPI_Op_create(uop_comm, 1, &op_handle[OP_UCOMM]);
    MPI_Op_create(uop_sumnc, 0, &op_handle[OP_USUMNC]);
    MPI_Op_create(uop_affine, 0, &op_handle[OP_AFFINE]);
    MPI_Op_create(uop_matmul, 0, &op_handle[OP_MATMUL]);
    int ncombo = 0, nrejected = 0;
    for (int o = 0; o < OP_NUM; o++)
        for (int i = 0; i < nlayouts; i++) {
            if (!op_valid(o, &L[i])) continue;
            op_ok[o][i] = mpi_accepts(o, &L[i]);
            ncombo += op_ok[o][i];
            nrejected += !op_ok[o][i];
        }

    make_pool(seed);

    if (wrank == 0) {
        out("difftest: seed=%" PRIu64 " cases=%ld first=%ld max-count=%ld p=%d mpi=\"%s\" pcoll=%s",
            seed, one >= 0 ? 1 : ncases, one >= 0 ? one : first, max_count, wsize, ver,
            have_pcoll ? (p_version ? p_version() : "?") : "not loaded");
        out("difftest: %d datatypes (%d predefined), %d valid op/type combinations (%d predefined-op/derived-type combinations this MPI rejects)",
            nlayouts, npredef, ncombo, nrejected);
        if (have_pcoll) {
            char s[512];
            int n = 0;
            for (int c = 0; c < C_NUM; c++) {
                n += snprintf(s + n, sizeof s - n, " %s:", coll_name[c]);
                for (int a = 0; a < NALG; a++)
                    if (alg_avail[c][a]) n += snprintf(s + n, sizeof s - n, "%s%s", alg_names[a], ",");
                s[n - 1] = ' ';
            }
            out("difftest: algorithms forced at random:%s", s);
            n = 0;
            for (int c = 0; c < C_NUM; c++)
                for (int a = 0; a < NALG; a++)
                    if (alg_unimpl[c][a]) n += snprintf(s + n, sizeof s - n, " %s/%s", coll_name[c], alg_names[a]);
            if (n) out("difftest: NOT TESTED (pcoll: not yet implemented):%s", s);
        }
    }

    double t0 = MPI_Wtime();
    if (one >= 0) run_case(seed, one);
    else
        for (long i = first; i < first + ncases; i++) run_case(seed, i);
    double t1 = MPI_Wtime();

    /* Distinct failing cases over all ranks. */
    int nb = (int)(nbad_cases > 100000 ? 100000 : nbad_cases);
    int *nbs = wrank == 0 ? xmalloc(sizeof(int) * wsize) : NULL;
    MPI_Gather(&nb, 1, MPI_INT, nbs, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *dis = NULL, tot = 0;
    long *all = NULL;
    if (wrank == 0) {
        dis = xmalloc(sizeof(int) * wsize);
        for (int k = 0; k < wsize; k++) { dis[k] = tot; tot += nbs[k]; }
        all = xmalloc(sizeof(long) * (tot + 1));
    }
    MPI_Gatherv(bad_cases, nb, MPI_LONG, all, nbs, dis, MPI_LONG, 0, MPI_COMM_WORLD);
    long distinct = 0;
    if (wrank == 0) {
        for (int i = 0; i < tot; i++) {
            int seen = 0;
            for (int j = 0; j < i && !seen; j++) seen = all[j] == all[i];
            if (!seen) all[distinct++] = all[i];
        }
        if (p_last) {
            char s[2048];
            int n = 0;
            for (int c = 0; c < C_NUM; c++) {
                n += snprintf(s + n, sizeof s - n, " %s[", coll_name[c]);
                for (int a = 0; a <= NALG; a++)
                    if (served[c][a]) n += snprintf(s + n, sizeof s - n, "%s=%ld ", a < NALG ? alg_names[a] : "none", served[c][a]);
                if (s[n - 1] == ' ') n--;
                n += snprintf(s + n, sizeof s - n, "]");
            }
            out("difftest: served on rank 0 (pcoll_last_algorithm):%s", s);
        }
        if (same_alg)
            out("difftest: note: %ld calls compared across ranks for the algorithm that served them (--same-alg)", same_alg_checked);
        if (avoided_total)
            out("difftest: note: %ld in-place MPICH reduces at root != 0 run out of place (native defect, MPI-NOTES.md)", avoided_total);
        if (avoided_lb)
            out("difftest: note: %ld Open MPI allreduces of true_lb > 0 types cut to 200 elements (native defect)", avoided_lb);
        if (avoided_rs)
            out("difftest: note: %ld MPICH or Intel MPI in-place reduce_scatters with unequal counts run out of place (native defect)", avoided_rs);
        if (avoided_rsnc)
            out("difftest: note: %ld MPICH or Intel MPI non-commutative reduce_scatters of non-contiguous types use a commutative op (native defect)", avoided_rsnc);
        if (avoided_impi_ag)
            out("difftest: note: %ld Intel MPI allgathers run with the receive type on both sides (native defect)", avoided_impi_ag);
        if (avoided_agv)
            out("difftest: note: %ld MPICH one-rank allgatherv cases run with displs[0] = 0 (native defect)", avoided_agv);
        if (avoided_impi_holes)
            out("difftest: note: %ld Intel MPI reduces and allreduces with a user op on a type with holes run on its base type (native defect)", avoided_impi_holes);
        if (avoided_mpich5_lb)
            out("difftest: note: %ld MPICH 5 reduces with a user op on a type with a leading hole reduce to root 0 (native defect)", avoided_mpich5_lb);
        for (long i = 0; i < distinct && i < 20; i++)
            out("difftest: rerun: difftest --seed %" PRIu64 " --case %ld%s", seed, all[i], case_flags);
        out("difftest: %ld cases, %ld mismatches (seed=%" PRIu64 ", %.1f s, %ld user-op calls on rank 0)",
            one >= 0 ? 1 : ncases, distinct, seed, t1 - t0, uop_calls);
    }
    long dd = distinct;
    PMPI_Bcast(&dd, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    free(nbs);
    free(dis);
    free(all);
    free(bad_cases);
    for (int i = 0; i < nlayouts; i++) free(L[i].mask);
    for (int i = 1; i < CM_NUM; i++)
        if (i != CM_SELF && pool[i] != MPI_COMM_NULL) MPI_Comm_free(&pool[i]);
    for (int i = npredef; i < nlayouts; i++) MPI_Type_free(&L[i].dt);
    for (int o = OP_UCOMM; o < OP_NUM; o++) MPI_Op_free(&op_handle[o]);
    MPI_Finalize();
    return dd ? 1 : 0;
}
