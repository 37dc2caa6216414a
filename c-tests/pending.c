/* pending.c -- datatypes and user ops freed while a non-blocking or persistent collective
 * that uses them is pending. The standard: "any pending operation that uses the datatype
 * [op] will complete normally"; the program may free them right after the initiation.
 * Until session 50 pcoll used the freed handles (crash or wrong data); now a pending call
 * pins them (their frees are deferred to it), and the user op is still given the call's own
 * datatype handle.
 *
 * Element: two ints at bytes 0 and 8 of a 12-byte extent (a hole at 4). Each case makes
 * fresh types and ops, starts the call, frees them, makes other types and ops (which may
 * take the freed handles' values), waits, and checks against closed forms: bcast, allgather
 * (v, with a send type of its own), allreduce with a commutative user op, reduce with a
 * non-commutative one (canonical rank order), and the persistent forms (MPI-4 `_init`, where
 * the MPI has them) started three times after the free.
 *
 * The same calls again on a communicator of their own, freed right after the initiation
 * too: a pending call completes, and a persistent request may be started after its
 * communicator's MPI_Comm_free (the MPI frees it when nothing refers to it any more). Until
 * session 51 pcoll freed its state of the communicator there (shadow, window): a persistent
 * start after it crashed. Not under Open MPI: its own collectives crash there (4.1's libnbc
 * in MPI_Wait for an MPI_Ibcast whose communicator was freed, p = 5, without pcoll; 5.0's
 * persistent ones started after the free).
 *
 * And the types freed with PMPI_Type_free, which pcoll does not see: MPICH's mpi_f08 binding
 * frees the type it made for an array section so, as do profiling tools' MPI_Type_free
 * wrappers. Until session 53 that freed the type under the pending call (Open MPI: segfault;
 * MPICH: yaksa assertion); now a pending call holds a duplicate of it.
 */
#include "common.h"

/* The handle of the case's element type as made (the program's variable is
 * MPI_DATATYPE_NULL after the free): the user functions must be given it ("a handle to the
 * data type that was passed into the call"), and count every other one. */
static MPI_Datatype made_el;
static int other_dt;

static void el_sum(void *in, void *io, int *len, MPI_Datatype *dt)
{
    other_dt += *dt != made_el;
    for (int i = 0; i < *len; i++) {
        int *a = (int *)((char *)in + 12L * i), *b = (int *)((char *)io + 12L * i);
        b[0] += a[0], b[2] += a[2];
    }
}

/* Non-commutative: (x, y) o (u, v) = (x * u, x * v + y) on unsigned 32-bit, lo applied first. */
static void el_affine(void *in, void *io, int *len, MPI_Datatype *dt)
{
    other_dt += *dt != made_el;
    for (int i = 0; i < *len; i++) {
        unsigned *lo = (unsigned *)((char *)in + 12L * i), *hi = (unsigned *)((char *)io + 12L * i);
        unsigned a = hi[0] * lo[0], b = hi[0] * lo[2] + hi[2];
        hi[0] = a, hi[2] = b;
    }
}

static MPI_Datatype el_type(void)
{
    MPI_Datatype t, el;
    int bl[2] = {1, 1};
    MPI_Aint ds[2] = {0, 8};
    MPI_Type_create_hindexed(2, bl, ds, MPI_INT, &t);
    MPI_Type_create_resized(t, 0, 12, &el);
    MPI_Type_free(&t);
    MPI_Type_commit(&el);
    return el;
}

/* Another type and op made and freed after the free (taking the freed handles' values where
 * the MPI reuses them) while the call is pending. */
static void churn(void)
{
    MPI_Datatype t;
    MPI_Op op;
    MPI_Type_contiguous(3, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Op_create(el_sum, 1, &op);
    MPI_Type_free(&t);
    MPI_Op_free(&op);
}

static int val(int r, long i, int lane) { return (int)((r + 1) * 1000 + i * 3 + lane); }
static unsigned aval(int r, long i, int lane) { return lane ? (unsigned)(r * 7 + i) : (unsigned)(2 * r + 3 + i % 5); }

static int *buffer(long n)
{
    int *b = malloc(12 * (size_t)(n ? n : 1));
    for (long i = 0; i < 3 * n; i++)
        b[i] = -1;
    return b;
}

/* Check pairs [0, n) of b: lane 0 and 2 as f(i, lane), the hole untouched. */
static void check(tctx *t, const int *b, long n, int (*f)(long, int, void *), void *ctx, const char *what)
{
    for (long i = 0; i < n; i++)
        if (b[3 * i] != f(i, 0, ctx) || b[3 * i + 2] != f(i, 1, ctx) || b[3 * i + 1] != -1) {
            tc_fail(t, "%s: element %ld is (%d, %d, hole %d), expected (%d, %d, -1)", what, i, b[3 * i], b[3 * i + 2],
                    b[3 * i + 1], f(i, 0, ctx), f(i, 1, ctx));
            return;
        }
}

static int from_root(long i, int lane, void *ctx) { return val(*(int *)ctx, i, lane); }
static int summed(long i, int lane, void *ctx)
{
    int p = *(int *)ctx, s = 0;
    for (int r = 0; r < p; r++)
        s += val(r, i, lane);
    return s;
}
static int composed(long i, int lane, void *ctx)
{
    int p = *(int *)ctx;
    unsigned x = aval(0, i, 0), y = aval(0, i, 1);
    for (int r = 1; r < p; r++) { /* acc = rank r o acc: r applied after the lower ranks */
        unsigned a = aval(r, i, 0) * x, b = aval(r, i, 0) * y + aval(r, i, 1);
        x = a, y = b;
    }
    return (int)(lane ? y : x);
}

static void fill(int *b, long n, int r, int affine)
{
    for (long i = 0; i < n; i++) {
        b[3 * i] = affine ? (int)aval(r, i, 0) : val(r, i, 0);
        b[3 * i + 2] = affine ? (int)aval(r, i, 1) : val(r, i, 1);
    }
}

enum { C_BCAST, C_ALLGATHER, C_ALLGATHERV, C_ALLREDUCE, C_REDUCE, NC };
static const char *cname[NC] = {"bcast", "allgather", "allgatherv", "allreduce", "reduce"};

/* One call of kind c on n elements a rank, non-blocking (persistent = 0) or persistent
 * (started `starts` times), with its types and op freed after the initiation. */
static void one(tctx *t, MPI_Comm world, int c, long n, int persistent, int free_op, int free_comm, int pmpi_free)
{
    int r, p;
    MPI_Comm_rank(world, &r);
    MPI_Comm_size(world, &p);
    if (!tc_case(t, "%s n=%ld persistent=%d free_op=%d free_comm=%d pmpi_free=%d", cname[c], n, persistent, free_op,
                 free_comm, pmpi_free))
        return;
    MPI_Comm comm = world;
    if (free_comm) { /* blocking collectives first: pcoll makes its shadow (and a forced window) */
        double x = 1, y;
        MPI_Comm_dup(world, &comm);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm);
        MPI_Bcast(&x, 1, MPI_DOUBLE, 0, comm);
    }
    MPI_Datatype el = el_type(), sel = el_type(); /* sel: allgather(v)'s own send type */
    made_el = el;
    other_dt = 0;
    MPI_Op op;
    MPI_Op_create(c == C_REDUCE ? el_affine : el_sum, c != C_REDUCE, &op);
    int root = p - 1;
    long total = c == C_ALLGATHER || c == C_ALLGATHERV ? n * p : n;
    int *in = buffer(n), *out = buffer(total);
    int *cnt = malloc(sizeof(int) * (size_t)p), *dsp = malloc(sizeof(int) * (size_t)p);
    for (int j = 0; j < p; j++)
        cnt[j] = (int)n, dsp[j] = (int)(n * (p - 1 - j)); /* blocks in reverse rank order */
    MPI_Request rq;
    int rc = MPI_SUCCESS, starts = persistent ? 3 : 1;
    for (int s = 0; s < starts; s++) {
        for (long i = 0; i < 3 * total; i++)
            out[i] = -1;
        fill(in, n, r, c == C_REDUCE);
        if (c == C_BCAST && r == root)
            fill(out, n, r, 0);
        if (s == 0) {
#if MPI_VERSION >= 4
            if (persistent) {
                MPI_Info info = MPI_INFO_NULL;
                switch (c) {
                case C_BCAST: rc = MPI_Bcast_init(out, (int)n, el, root, comm, info, &rq); break;
                case C_ALLGATHER: rc = MPI_Allgather_init(in, (int)n, sel, out, (int)n, el, comm, info, &rq); break;
                case C_ALLGATHERV: rc = MPI_Allgatherv_init(in, (int)n, sel, out, cnt, dsp, el, comm, info, &rq); break;
                case C_ALLREDUCE: rc = MPI_Allreduce_init(in, out, (int)n, el, op, comm, info, &rq); break;
                default: rc = MPI_Reduce_init(in, out, (int)n, el, op, root, comm, info, &rq); break;
                }
            } else
#endif
                switch (c) {
                case C_BCAST: rc = MPI_Ibcast(out, (int)n, el, root, comm, &rq); break;
                case C_ALLGATHER: rc = MPI_Iallgather(in, (int)n, sel, out, (int)n, el, comm, &rq); break;
                case C_ALLGATHERV: rc = MPI_Iallgatherv(in, (int)n, sel, out, cnt, dsp, el, comm, &rq); break;
                case C_ALLREDUCE: rc = MPI_Iallreduce(in, out, (int)n, el, op, comm, &rq); break;
                default: rc = MPI_Ireduce(in, out, (int)n, el, op, root, comm, &rq); break;
                }
            if (rc != MPI_SUCCESS) {
                tc_fail(t, "initiation returned %d", rc);
                break;
            }
            if (pmpi_free)
                PMPI_Type_free(&el), PMPI_Type_free(&sel);
            else
                MPI_Type_free(&el), MPI_Type_free(&sel);
            if (free_op)
                MPI_Op_free(&op);
            if (free_comm)
                MPI_Comm_free(&comm);
            churn();
        }
        if (persistent)
            rc = MPI_Start(&rq);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            tc_fail(t, "start %d: completion returned %d", s, rc);
            break;
        }
        if (c == C_BCAST)
            check(t, out, n, from_root, &root, "bcast");
        else if (c == C_ALLREDUCE)
            check(t, out, n, summed, &p, "allreduce");
        else if (c == C_REDUCE && r == root)
            check(t, out, n, composed, &p, "reduce");
        else if (c == C_ALLGATHER || c == C_ALLGATHERV)
            for (int j = 0; j < p; j++) {
                int jj = j;
                long at = c == C_ALLGATHER ? n * j : dsp[j];
                check(t, out + 3 * at, n, from_root, &jj, cname[c]);
            }
    }
    if (other_dt)
        tc_fail(t, "the user op was given another datatype handle than the call's %d times", other_dt);
    if (persistent && rq != MPI_REQUEST_NULL)
        MPI_Request_free(&rq);
    if (!free_op)
        MPI_Op_free(&op);
    free(in), free(out), free(cnt), free(dsp);
}

int main(int argc, char **argv)
{
    tctx t;
    MPI_Init(&argc, &argv);
    tc_init(&t, "pending", argc, argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    double x = 1, y;
    /* a blocking collective first: pcoll makes its shadow communicator there */
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comm);
    static const long sizes[] = {1, 100, 20000};
    int persist_max = MPI_VERSION >= 4 ? 2 : 1;
    for (int si = 0; si < 3; si++)
        for (int c = 0; c < NC; c++)
            for (int persistent = 0; persistent < persist_max; persistent++)
                for (int free_op = 0; free_op < 1 + (c >= C_ALLREDUCE); free_op++)
                    one(&t, comm, c, sizes[si], persistent, free_op, 0, 0);
    for (int si = 1; si < 3; si++)
        for (int c = 0; c < NC; c++)
            for (int persistent = 0; persistent < persist_max; persistent++)
                one(&t, comm, c, sizes[si], persistent, 0, 0, 1);
#ifndef OMPI_MAJOR_VERSION
    for (int si = 1; si < 3; si++)
        for (int c = 0; c < NC; c++)
            for (int persistent = 0; persistent < persist_max; persistent++)
                one(&t, comm, c, sizes[si], persistent, 1, 1, 0);
#endif
    int rc = tc_finish(&t);
    MPI_Finalize();
    return rc;
}
