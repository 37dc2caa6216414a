/* typemaps.c -- bcast, allgather and allgatherv where every rank describes the same data
 * (pairs of ints, equal type signatures) with a datatype of its own.
 *
 * Some layouts have no holes (size = extent = true extent, lower bounds 0) but list their
 * data out of memory order, so the bytes of an element are not its packed form:
 *   plain   MPI_Type_contiguous(2, MPI_INT)                     a b
 *   vec     MPI_Type_vector(2, 1, 1, MPI_INT)                   a b
 *   swap    MPI_Type_indexed({1,1}, {1,0}, MPI_INT)             b a (typemap: a@4, b@0)
 *   sswap   MPI_Type_create_struct({1,1}, {4,0}, {INT,INT})     b a
 *   dswap   MPI_Type_dup(swap)                                  b a
 *   quad    MPI_Type_contiguous(2, swap): two pairs an element  b a b a (count halved)
 *   nvec    MPI_Type_create_struct({1}, {4}, {hvector(2, 1, -4 bytes, MPI_INT)})  b a
 * and, as a root's bcast type or an allgather send type only, zero: MPI_Type_create_resized(
 * MPI_INT, 0, 0), whose count 2n sends one int 2n times (extent 0; legal for sending).
 * Until session 50 pcoll moved the swapped layouts as raw bytes (wrong data wherever two
 * ranks' layouts differed, with the defaults on Open MPI 4.1 at p = 4, 1.2 MB) and a root's
 * extent-0 type sent that rank alone to the MPI while the others ran pcoll's algorithm (a
 * hang). The reference is the logical pair (a, b) of every element, computed locally; gaps
 * between allgatherv blocks must keep their sentinel.
 */
#include "common.h"

enum { T_PLAIN, T_VEC, T_SWAP, T_SSWAP, T_DSWAP, T_QUAD, T_NVEC, NT, T_ZERO = NT };
static const char *tname[] = {"plain", "vec", "swap", "sswap", "dswap", "quad", "nvec", "zero"};
static MPI_Datatype types[NT + 1];
#define GAP (-7)

static void build_types(void)
{
    MPI_Type_contiguous(2, MPI_INT, &types[T_PLAIN]);
    MPI_Type_vector(2, 1, 1, MPI_INT, &types[T_VEC]);
    int bl[2] = {1, 1}, di[2] = {1, 0};
    MPI_Type_indexed(2, bl, di, MPI_INT, &types[T_SWAP]);
    MPI_Aint da[2] = {4, 0};
    MPI_Datatype ti[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, bl, da, ti, &types[T_SSWAP]);
    MPI_Type_dup(types[T_SWAP], &types[T_DSWAP]);
    MPI_Type_contiguous(2, types[T_SWAP], &types[T_QUAD]);
    MPI_Datatype neg;
    MPI_Aint four = 4;
    MPI_Type_create_hvector(2, 1, -4, MPI_INT, &neg);
    MPI_Type_create_struct(1, bl, &four, &neg, &types[T_NVEC]);
    MPI_Type_free(&neg);
    MPI_Type_create_resized(MPI_INT, 0, 0, &types[T_ZERO]);
    for (int k = 0; k <= NT; k++)
        MPI_Type_commit(&types[k]);
}

static int swapped(int k) { return k == T_SWAP || k == T_SSWAP || k == T_DSWAP || k == T_QUAD || k == T_NVEC; }
/* Elements of type k holding n pairs (quad: two pairs an element). */
static int elems(int k, int n) { return k == T_QUAD ? n / 2 : k == T_ZERO ? 2 * n : n; }
/* The type rank r uses in case c (quad only where every count is even). */
static int pick(int r, int c, int even) { int k = (r + c) % NT; return k == T_QUAD && !even ? T_SWAP : k; }

static int val(uint64_t seed, int r, size_t i, int lane) { return (int)(rnd(seed, r, i, (unsigned)lane) & 0x7fffffff); }

/* Store / load pair i of a buffer laid out as type k (pairs at 8-byte steps). */
static void put(int *m, int k, size_t i, int a, int b)
{
    m[2 * i] = swapped(k) ? b : a;
    m[2 * i + 1] = swapped(k) ? a : b;
}
static void get(const int *m, int k, size_t i, int *a, int *b)
{
    *a = swapped(k) ? m[2 * i + 1] : m[2 * i];
    *b = swapped(k) ? m[2 * i] : m[2 * i + 1];
}

/* The send buffer of rank r's n pairs in layout k (zero: one int, the pair (x, x)). */
static int *source(tctx *t, int r, int n, int k)
{
    int *m = malloc(sizeof(int) * (2 * (size_t)n + 2));
    if (k == T_ZERO)
        m[0] = val(t->seed, r, 0, 0);
    else
        for (int i = 0; i < n; i++)
            put(m, k, (size_t)i, val(t->seed, r, (size_t)i, 0), val(t->seed, r, (size_t)i, 1));
    return m;
}

/* Check pairs [at, at + n) of `m` (layout k) against rank r's data (sent as layout sk). */
static void expect(tctx *t, const int *m, int k, size_t at, int n, int r, int sk, const char *what)
{
    for (int i = 0; i < n; i++) {
        int a, b;
        get(m, k, at + (size_t)i, &a, &b);
        int ea = val(t->seed, r, sk == T_ZERO ? 0 : (size_t)i, 0);
        int eb = sk == T_ZERO ? ea : val(t->seed, r, (size_t)i, 1);
        if (a != ea || b != eb) {
            tc_fail(t, "%s: pair %d from rank %d is (%d, %d), expected (%d, %d)", what, i, r, a, b, ea, eb);
            return;
        }
    }
}

static void check_rc(tctx *t, int rc, const char *what)
{
    if (rc != MPI_SUCCESS)
        tc_fail(t, "%s returned %d", what, rc);
}

static void bcast_case(tctx *t, MPI_Comm comm, int n, int root, int c, int zero)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    if (!tc_case(t, "bcast n=%d root=%d c=%d zero=%d", n, root, c, zero))
        return;
    int k = r == root && zero ? T_ZERO : pick(r, c, n % 2 == 0);
    int *m = r == root ? source(t, root, n, k) : malloc(sizeof(int) * (2 * (size_t)n + 2));
    if (r != root)
        for (size_t i = 0; i < 2 * (size_t)n; i++)
            m[i] = GAP;
    check_rc(t, MPI_Bcast(m, elems(k, n), types[k], root, comm), "MPI_Bcast");
    if (r != root)
        expect(t, m, k, 0, n, root, zero ? T_ZERO : -1, tname[k]);
    free(m);
}

/* Allgather (v = 0) or allgatherv (v = 1, rank j's block n / (j + 1) + j % 2 pairs, one pair
 * of gap after each); in place (rank's block placed in its receive layout first) or sent
 * with a type of its own, zero: every other rank sends with the extent-0 type. */
static void gather_case(tctx *t, MPI_Comm comm, int n, int c, int v, int in_place, int zero)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    if (!tc_case(t, "%s n=%d c=%d in_place=%d zero=%d", v ? "allgatherv" : "allgather", n, c, in_place, zero))
        return;
    int *cnt = malloc(sizeof(int) * (size_t)p), *dsp = malloc(sizeof(int) * (size_t)p);
    int total = 0, even = 1;
    for (int j = 0; j < p; j++) {
        cnt[j] = v ? n / (j + 1) + j % 2 : n;
        dsp[j] = total;
        total += cnt[j] + v;
        even &= cnt[j] % 2 == 0 && dsp[j] % 2 == 0;
    }
    /* Allgatherv's send types all have the size of a pair: Open MPI 4.1's and 5.0's own
     * allgatherv picks its algorithm by the send type's size times the receive counts, so
     * ranks sending quads (or ints) chose another algorithm than the others and hung,
     * natively. */
    int rk = pick(r, c, even && !v);
    int sk = v ? pick(r, c + 1, 0) : zero && r % 2 ? T_ZERO : pick(r, c + 1, cnt[r] % 2 == 0);
    int *m = malloc(sizeof(int) * (2 * (size_t)total + 2));
    for (size_t i = 0; i < 2 * (size_t)total; i++)
        m[i] = GAP;
    int *s = source(t, r, cnt[r], in_place ? rk : sk);
    int rc;
    if (in_place) {
        memcpy(m + 2 * (size_t)dsp[r], s, sizeof(int) * 2 * (size_t)cnt[r]);
        if (v)
            rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m, cnt, dsp, types[rk], comm);
        else
            rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m, elems(rk, n), types[rk], comm);
    } else if (v) {
        rc = MPI_Allgatherv(s, elems(sk, cnt[r]), types[sk], m, cnt, dsp, types[rk], comm);
    } else {
        rc = MPI_Allgather(s, elems(sk, n), types[sk], m, elems(rk, n), types[rk], comm);
    }
    check_rc(t, rc, v ? "MPI_Allgatherv" : "MPI_Allgather");
    for (int j = 0; j < p; j++) {
        int jk = in_place ? -1 : zero && j % 2 ? T_ZERO : -1;
        expect(t, m, rk, (size_t)dsp[j], cnt[j], j, jk, tname[rk]);
        if (v && (m[2 * ((size_t)dsp[j] + cnt[j])] != GAP || m[2 * ((size_t)dsp[j] + cnt[j]) + 1] != GAP))
            tc_fail(t, "the gap after rank %d's block was written", j);
    }
    free(s), free(m), free(cnt), free(dsp);
}

/* An empty signature as a count of a type with no data (MPI_Type_contiguous(0, MPI_INT)) from
 * a NULL buffer on one rank, count 0 of MPI_INT on the others: a bcast from `root`, and an
 * allgather whose rank `root` sends so. Nothing may be written. (Until session 51 that
 * rank's NULL counted as a misplaced buffer: it went to the MPI alone and the others hung.) */
static void empty_case(tctx *t, MPI_Comm comm, int root)
{
    int r;
    MPI_Comm_rank(comm, &r);
    if (!tc_case(t, "empty signature from NULL at rank %d", root))
        return;
    MPI_Datatype none;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    int buf[4] = {7, 7, 7, 7}, got[64];
    for (int i = 0; i < 64; i++)
        got[i] = -5;
    int rc = r == root ? MPI_Bcast(NULL, 5, none, root, comm) : MPI_Bcast(buf, 0, MPI_INT, root, comm);
    if (rc == MPI_SUCCESS)
        rc = r == root ? MPI_Allgather(NULL, 3, none, got, 0, MPI_INT, comm)
                       : MPI_Allgather(buf, 0, MPI_INT, got, 0, MPI_INT, comm);
    if (rc != MPI_SUCCESS)
        tc_fail(t, "returned %d", rc);
    for (int i = 0; i < 64; i++)
        if (got[i] != -5 || (i < 4 && buf[i] != 7)) {
            tc_fail(t, "a buffer of an empty call was written at %d", i);
            break;
        }
    MPI_Type_free(&none);
}

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "typemaps", argc, argv);
    build_types();
    MPI_Comm comm = MPI_COMM_WORLD;
    int p = t.wsize;
    static const int sizes[] = {0, 1, 3, 1000, 40000, 150000};
    int ns = (int)(sizeof sizes / sizeof sizes[0]);
    for (int si = 0; si < ns; si++) {
        int n = sizes[si];
        for (int root = 0; root < p; root++) {
            if ((n >= 40000 || t.quick) && root != p - 1 && root != 0)
                continue;
            for (int zero = 0; zero < 2; zero++)
                bcast_case(&t, comm, n, root, si + root, zero);
        }
        if (n > 40000 && (t.quick || p > 4))
            continue;
        for (int v = 0; v < 2; v++)
            for (int in_place = 0; in_place < 2; in_place++)
                for (int zero = 0; zero < 2 - (in_place | v); zero++)
                    gather_case(&t, comm, n, si + v + zero, v, in_place, zero);
    }
    for (int root = 0; root < p; root++)
        empty_case(&t, comm, root);
    for (int k = 0; k <= NT; k++)
        MPI_Type_free(&types[k]);
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
