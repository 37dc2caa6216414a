/* fakepcoll.c -- a stand-in for libpcoll.so that checks the c-tests themselves.
 *
 * A PMPI passthrough for MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter, MPI_Allgatherv
 * that prints pcoll-format stats lines from rank 0 at MPI_Finalize
 * (`pcoll: stats <coll> <alg> calls=<n> bytes=<n> time_us=<t>`, alg = $PCOLL_<COLL> or
 * native), so run-tests.sh can be exercised before the real library exists, and that
 * injects one fault chosen by PCOLL_FAKE_FAULT, to show that the tests catch it:
 *   order     non-commutative reductions are folded in reverse rank order
 *   leak      after each MPI_Allreduce, a stray message (tag 0) is sent to self on the
 *             user's communicator and fetched with a 50 ms receive
 *   overrun   MPI_Allgatherv writes one byte after the last block
 *   gap       MPI_Allgatherv writes one byte into the first gap between blocks
 *   bits      MPI_Allreduce of MPI_DOUBLE: rank 0's result element 0 moves by one ulp
 *   errclass  MPI_Reduce with a root out of range returns MPI_ERR_ARG
 *   sendbuf   MPI_Reduce flips one bit of the caller's sendbuf at rank 0
 * Built and used by selftest/run-selftest.sh; not part of pcoll.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long calls[4], bytes[4];
static double secs[4];
static const char *const cname[4] = {"reduce", "allreduce", "reduce_scatter", "allgatherv"};
static const char *const cenv[4] = {"PCOLL_REDUCE", "PCOLL_ALLREDUCE", "PCOLL_REDUCE_SCATTER", "PCOLL_ALLGATHERV"};

static int fault(const char *f)
{
    const char *e = getenv("PCOLL_FAKE_FAULT");
    return e && !strcmp(e, f);
}

static void account(int c, long n, MPI_Datatype dt, double t0)
{
    int sz = 0;
    if (dt != MPI_DATATYPE_NULL)
        PMPI_Type_size(dt, &sz);
    calls[c]++;
    bytes[c] += n * sz;
    secs[c] += PMPI_Wtime() - t0;
}

static int noncommutative(MPI_Op op)
{
    int commute = 1;
    if (op != MPI_OP_NULL)
        PMPI_Op_commutative(op, &commute);
    return !commute;
}

int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc, me = 0, p = 1;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &me);
        PMPI_Comm_size(comm, &p);
        if (fault("errclass") && (root < 0 || root >= p))
            return MPI_ERR_ARG;
    }
    if (fault("sendbuf") && me == 0 && s != MPI_IN_PLACE && s && n > 0)
        ((unsigned char *)s)[0] ^= 1; /* (const cast: that is the fault) */
    if (fault("order") && noncommutative(op) && p > 1 && root >= 0 && root < p) {
        MPI_Comm rev;
        PMPI_Comm_split(comm, 0, p - me, &rev);
        rc = PMPI_Reduce(s, r, n, dt, op, p - 1 - root, rev);
        PMPI_Comm_free(&rev);
    } else {
        rc = PMPI_Reduce(s, r, n, dt, op, root, comm);
    }
    account(0, n, dt, t0);
    return rc;
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc, me = 0, p = 1;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &me);
        PMPI_Comm_size(comm, &p);
    }
    if (fault("order") && noncommutative(op) && p > 1) {
        MPI_Comm rev;
        PMPI_Comm_split(comm, 0, p - me, &rev);
        rc = PMPI_Allreduce(s, r, n, dt, op, rev);
        PMPI_Comm_free(&rev);
    } else {
        rc = PMPI_Allreduce(s, r, n, dt, op, comm);
    }
    if (rc == MPI_SUCCESS && fault("bits") && me == 0 && dt == MPI_DOUBLE && n > 0) {
        double *d = r;
        if (d[0] != floor(d[0]))
            d[0] = nextafter(d[0], INFINITY);
    }
    if (rc == MPI_SUCCESS && fault("leak")) {
        int x = 42, y, flag = 0;
        MPI_Request sr, rr;
        PMPI_Isend(&x, 1, MPI_INT, me, 0, comm, &sr);
        PMPI_Irecv(&y, 1, MPI_INT, me, 0, comm, &rr);
        double t = PMPI_Wtime();
        while (!flag && PMPI_Wtime() - t < 0.05)
            PMPI_Test(&rr, &flag, MPI_STATUS_IGNORE);
        if (!flag) { /* a user's wildcard receive took it */
            PMPI_Cancel(&rr);
            PMPI_Wait(&rr, MPI_STATUS_IGNORE);
        }
        PMPI_Wait(&sr, MPI_STATUS_IGNORE);
    }
    account(1, n, dt, t0);
    return rc;
}

int MPI_Reduce_scatter(const void *s, void *r, const int counts[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Reduce_scatter(s, r, counts, dt, op, comm), p = 1;
    long tot = 0;
    if (comm != MPI_COMM_NULL && rc == MPI_SUCCESS) {
        PMPI_Comm_size(comm, &p);
        for (int i = 0; i < p; i++)
            tot += counts[i];
    }
    account(2, tot, dt, t0);
    return rc;
}

int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int counts[], const int displs[],
                   MPI_Datatype rt, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Allgatherv(s, sc, st, r, counts, displs, rt, comm), p = 1;
    long tot = 0;
    if (comm != MPI_COMM_NULL && rc == MPI_SUCCESS) {
        MPI_Aint lb, ext;
        PMPI_Comm_size(comm, &p);
        PMPI_Type_get_extent(rt, &lb, &ext);
        long end = 0;
        for (int i = 0; i < p; i++) {
            tot += counts[i];
            if (counts[i] && displs[i] + counts[i] > end)
                end = displs[i] + counts[i];
        }
        if (fault("overrun") && end > 0)
            ((unsigned char *)r)[end * ext] ^= 0x5a;
        if (fault("gap")) { /* first element not covered by any block, below end */
            for (long e = 0; e < end; e++) {
                int covered = 0;
                for (int i = 0; i < p && !covered; i++)
                    covered = counts[i] && e >= displs[i] && e < displs[i] + counts[i];
                if (!covered) {
                    ((unsigned char *)r)[e * ext] ^= 0x5a;
                    break;
                }
            }
        }
    }
    account(3, tot, rt, t0);
    return rc;
}

int MPI_Finalize(void)
{
    int me = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0 && getenv("PCOLL_STATS"))
        for (int c = 0; c < 4; c++)
            if (calls[c]) {
                const char *a = getenv(cenv[c]);
                char line[200];
                snprintf(line, sizeof line, "pcoll: stats %s %s calls=%ld bytes=%ld time_us=%.1f\n", cname[c],
                         a && *a ? a : "native", calls[c], bytes[c], secs[c] * 1e6);
                fputs(line, stderr);
            }
    return PMPI_Finalize();
}
