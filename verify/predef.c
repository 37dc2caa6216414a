/* predef.c: the predefined datatypes the difftest does not draw -- C complex, long double,
 * C bool, MPI_AINT / MPI_OFFSET / MPI_COUNT, MPI_WCHAR, MPI_PACKED, the Fortran types seen
 * from C (MPI_INTEGER, MPI_REAL, MPI_LOGICAL, MPI_COMPLEX, the sized ones), the Fortran pair
 * types and MPI_LONG_DOUBLE_INT -- each with every predefined op (MPI_REPLACE and MPI_NO_OP
 * too), through MPI_Allreduce, MPI_Reduce (root p - 1, and in place at the root) and
 * MPI_Reduce_scatter_block, each call made through the MPI_ entry (pcoll, with whatever the
 * environment forces) and then through PMPI_ (the MPI alone, the reference).
 *
 * Checked: the same error class (a pair the MPI refuses must be refused alike), and where
 * both succeed the same values (the value bytes of each element only: long double's padding
 * is left out). Inputs are small integers (1..3, a few negative), so that every sum and
 * product is exact in every type at p <= 4 whatever the order of the fold.
 *
 * One exception, documented in docs/mpis.md: MPI_LAND / MPI_LOR / MPI_LXOR on a floating or
 * complex type are not defined by the standard. Open MPI and MPICH 5 refuse them
 * (MPI_ERR_OP); Debian's MPICH 4.0.2 aborts on LAND/LOR of C float types and returns
 * garbage for the Fortran ones; Intel MPI 2021 returns rank 0's input for LAND/LOR. pcoll
 * refuses them on every MPI. For those pairs the MPI is not called: the call through pcoll
 * must return MPI_ERR_OP, and without pcoll the pair is skipped.
 *
 * Usage: mpirun -np P predef [count]   (P <= 4). Last line: "predef: PASS ..." or
 * "predef: FAIL ...". */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <mpi.h>
#include <complex.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KINT, KFLT, KLDBL, KCPLX, KLDCPLX, KBOOL, KLDI };
typedef struct {
    const char *name;
    MPI_Datatype dt;
    int kind;
    int size;   /* bytes of one value (for pairs: of each half but KLDI's) */
    int pair;   /* MPI_2INTEGER, MPI_2REAL, MPI_2DOUBLE_PRECISION */
} T;

/* v into one value of t's kind at p (padding stays zero) */
static void put(const T *t, unsigned char *p, long v)
{
    switch (t->kind) {
    case KINT:
        if (t->size == 1) { signed char x = (signed char)v; memcpy(p, &x, 1); }
        else if (t->size == 2) { short x = (short)v; memcpy(p, &x, 2); }
        else if (t->size == 4) { int x = (int)v; memcpy(p, &x, 4); }
        else { long x = v; memcpy(p, &x, 8); }
        break;
    case KFLT:
        if (t->size == 4) { float x = (float)v; memcpy(p, &x, 4); }
        else { double x = (double)v; memcpy(p, &x, 8); }
        break;
    case KLDBL: case KLDI: { long double x = (long double)v; memcpy(p, &x, 10); } break;
    case KCPLX:
        if (t->size == 8) { float complex x = (float)v + (float)(v % 2) * I; memcpy(p, &x, 8); }
        else { double complex x = (double)v + (double)(v % 2) * I; memcpy(p, &x, 16); }
        break;
    case KLDCPLX: { long double re = (long double)v, im = (long double)(v % 2);
                    memcpy(p, &re, 10); memcpy(p + sizeof(long double), &im, 10); } break;
    case KBOOL: { int x = (int)(v & 1); memcpy(p, &x, (size_t)t->size); } break;
    }
}

/* do elements a and b hold the same values? */
static int same(const T *t, const unsigned char *a, const unsigned char *b, size_t ext)
{
    switch (t->kind) {
    case KLDBL: return !memcmp(a, b, 10);
    case KLDCPLX: return !memcmp(a, b, 10) && !memcmp(a + sizeof(long double), b + sizeof(long double), 10);
    case KLDI: return !memcmp(a, b, 10) && !memcmp(a + sizeof(long double), b + sizeof(long double), sizeof(int));
    default: return !memcmp(a, b, t->pair ? ext : (size_t)t->size);
    }
}

static int logical_on_float(const T *t, MPI_Op op)
{
    int fl = t->kind == KFLT || t->kind == KLDBL || t->kind == KCPLX || t->kind == KLDCPLX;
    return fl && !t->pair && (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int n = argc > 1 ? atoi(argv[1]) : 7;
    const int have_pcoll = dlsym(RTLD_DEFAULT, "pcoll_force") != NULL;
    if (p > 4) {
        if (r == 0) printf("predef: FAIL (p = %d: at most 4, or products overflow the 8-bit types)\n", p);
        MPI_Finalize();
        return 2;
    }
#define TY(dt, kind, size, pair) {#dt, dt, kind, size, pair}
    const T ts[] = {
        TY(MPI_CHAR, KINT, 1, 0), TY(MPI_WCHAR, KINT, 4, 0), TY(MPI_C_BOOL, KBOOL, 1, 0),
        TY(MPI_AINT, KINT, 8, 0), TY(MPI_OFFSET, KINT, 8, 0), TY(MPI_COUNT, KINT, 8, 0),
        TY(MPI_PACKED, KINT, 1, 0), TY(MPI_FLOAT, KFLT, 4, 0), TY(MPI_LONG_DOUBLE, KLDBL, 16, 0),
        TY(MPI_C_FLOAT_COMPLEX, KCPLX, 8, 0), TY(MPI_C_DOUBLE_COMPLEX, KCPLX, 16, 0),
        TY(MPI_C_LONG_DOUBLE_COMPLEX, KLDCPLX, 32, 0), TY(MPI_INTEGER, KINT, 4, 0), TY(MPI_REAL, KFLT, 4, 0),
        TY(MPI_DOUBLE_PRECISION, KFLT, 8, 0), TY(MPI_LOGICAL, KBOOL, 4, 0), TY(MPI_COMPLEX, KCPLX, 8, 0),
        TY(MPI_DOUBLE_COMPLEX, KCPLX, 16, 0), TY(MPI_INTEGER1, KINT, 1, 0), TY(MPI_INTEGER2, KINT, 2, 0),
        TY(MPI_INTEGER4, KINT, 4, 0), TY(MPI_INTEGER8, KINT, 8, 0), TY(MPI_REAL4, KFLT, 4, 0),
        TY(MPI_REAL8, KFLT, 8, 0), TY(MPI_2INTEGER, KINT, 4, 1), TY(MPI_2REAL, KFLT, 4, 1),
        TY(MPI_2DOUBLE_PRECISION, KFLT, 8, 1), TY(MPI_LONG_DOUBLE_INT, KLDI, 16, 0),
    };
#undef TY
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR,
                          MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
    const char *opn[] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR",
                         "MAXLOC", "MINLOC", "REPLACE", "NO_OP"};
    const char *colln[] = {"allreduce", "reduce", "reduce in place", "reduce_scatter_block"};
    const int nt = (int)(sizeof ts / sizeof ts[0]), no = (int)(sizeof ops / sizeof ops[0]);
    long calls = 0, served = 0, refused = 0, skipped = 0, bad = 0;
    for (int ti = 0; ti < nt; ti++) {
        const T *t = &ts[ti];
        if (t->dt == MPI_DATATYPE_NULL)
            continue;
        MPI_Aint lb, ext;
        MPI_Type_get_extent(t->dt, &lb, &ext);
        const size_t es = (size_t)ext, tot = es * (size_t)n * (size_t)p;
        unsigned char *in = calloc(tot, 1), *a = calloc(tot, 1), *b = calloc(tot, 1);
        for (size_t i = 0; i < (size_t)n * (size_t)p; i++) {
            long v = (long)((i * 7 + (size_t)r * 5) % 3) + 1;
            if (r == 1 && i % 4 == 0)
                v = -v;
            unsigned char *e = in + i * es;
            put(t, e, v);
            if (t->kind == KLDI) {
                int loc = (int)((i + (size_t)r) % 4);
                memcpy(e + sizeof(long double), &loc, sizeof loc);
            } else if (t->pair) {
                put(t, e + es / 2, (long)((i + (size_t)r) % 4));
            }
        }
        for (int oi = 0; oi < no; oi++)
            for (int coll = 0; coll < 4; coll++) {
                const int root = p - 1, gets = (coll != 1 && coll != 2) || r == root;
                const int lof = logical_on_float(t, ops[oi]);
                if (lof && !have_pcoll) {
                    skipped++;
                    continue;
                }
                int rc[2] = {0, 0}, cls[2] = {0, 0};
                for (int pass = 0; pass < 2 - lof; pass++) { /* 0: MPI_ (pcoll), 1: PMPI_ (reference) */
                    unsigned char *out = pass ? b : a;
                    memset(out, 0, tot);
                    const void *sb = in;
                    if (coll == 2 && r == root) {
                        memcpy(out, in, tot);
                        sb = MPI_IN_PLACE;
                    }
                    if (coll == 0)
                        rc[pass] = (pass ? PMPI_Allreduce : MPI_Allreduce)(sb, out, n, t->dt, ops[oi], MPI_COMM_WORLD);
                    else if (coll < 3)
                        rc[pass] = (pass ? PMPI_Reduce : MPI_Reduce)(sb, out, n, t->dt, ops[oi], root, MPI_COMM_WORLD);
                    else
                        rc[pass] = (pass ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(
                            in, out, n, t->dt, ops[oi], MPI_COMM_WORLD);
                    if (rc[pass] != MPI_SUCCESS)
                        MPI_Error_class(rc[pass], &cls[pass]);
                }
                calls++;
                const char *why = NULL;
                if (lof) {
                    if (cls[0] != MPI_ERR_OP)
                        why = "a logical op on a floating type was not refused with MPI_ERR_OP";
                } else if (cls[0] != cls[1]) {
                    why = "error classes differ";
                } else if (rc[0] == MPI_SUCCESS && gets) {
                    for (size_t i = 0; i < (size_t)n && !why; i++)
                        if (!same(t, a + i * es, b + i * es, es))
                            why = "values differ";
                }
                served += rc[0] == MPI_SUCCESS;
                refused += rc[0] != MPI_SUCCESS;
                if (why) {
                    if (bad++ < 20)
                        printf("predef: rank %d %s %s %s: %s (class %d, MPI alone %d)\n", r, t->name, opn[oi],
                               colln[coll], why, cls[0], lof ? -1 : cls[1]);
                }
            }
        free(in);
        free(a);
        free(b);
    }
    long tb = 0;
    PMPI_Allreduce(&bad, &tb, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0)
        printf("predef: %s p=%d count=%d: %ld calls (%ld succeeded, %ld refused alike), %ld pairs skipped "
               "(logical op on a floating type without pcoll), %ld mismatches over all ranks%s\n",
               tb ? "FAIL" : "PASS", p, n, calls, served, refused, skipped, tb, have_pcoll ? "" : " (no pcoll)");
    MPI_Finalize();
    return tb != 0;
}
