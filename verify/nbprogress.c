/* nbprogress.c -- a non-blocking collective must progress while its rank is blocked in
 * a point-to-point call (MPI's progress rule; issue 27).
 *
 * Every rank starts a non-blocking collective; every rank but 0 completes it and then sends a
 * message to rank 0, while rank 0 first receives those messages (blocking MPI_Recv, MPI_Probe
 * then MPI_Recv, or MPI_Sendrecv: one per round) and only then waits for its
 * collective. A correct MPI program: the MPI must advance rank 0's part of the collective
 * while rank 0 is blocked in the receive, or the other ranks never finish theirs. pcoll runs
 * its schedules in steps that only its intercepted calls advance.
 *
 *   mpirun -np <p> [PCOLL_<COLL>=binomial ...] nbprogress [count]
 * Last line "nbprogress: ok" or the first failure; a hang is the caller's timeout.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, p;

static void check(int ok, const char *what, int round) {
    if (!ok) {
        printf("nbprogress: FAILED: %s, round %d, rank %d\n", what, round, rank);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Rank 0 gets one message from every other rank, blocked in the call of this round's kind. */
static void gather_msgs(int kind, int round) {
    int v = -1;
    if (rank != 0) {
        if (kind == 2) {
            MPI_Sendrecv(&rank, 1, MPI_INT, 0, 5, &v, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(v == 0, "sendrecv reply", round);
        } else {
            MPI_Send(&rank, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
        }
        return;
    }
    for (int r = 1; r < p; r++) {
        MPI_Status st;
        if (kind == 1) {
            MPI_Probe(r, 5, MPI_COMM_WORLD, &st);
            MPI_Recv(&v, 1, MPI_INT, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (kind == 2) {
            int zero = 0;
            MPI_Sendrecv(&zero, 1, MPI_INT, r, 6, &v, 1, MPI_INT, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&v, 1, MPI_INT, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        check(v == r, "message", round);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int n = argc > 1 ? atoi(argv[1]) : 1 << 18;
    double *a = malloc(sizeof(double) * n * p), *b = malloc(sizeof(double) * n * p);
    for (int round = 0; round < 12; round++) {
        int coll = round % 4, kind = (round / 4) % 3;
        for (int i = 0; i < n * p; i++) a[i] = rank + 1 + i % 7, b[i] = -1;
        MPI_Request q;
        if (coll == 0) MPI_Ibcast(a, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q);
        else if (coll == 1) MPI_Ireduce(a, b, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &q);
        else if (coll == 2) MPI_Iallreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        else MPI_Iallgather(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, MPI_COMM_WORLD, &q);
        if (rank == 0) {
            gather_msgs(kind, round);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            gather_msgs(kind, round);
        }
        double sum = p * (p + 1) / 2.0 + p * (n - 1 < 0 ? 0 : (n - 1) % 7);
        if (coll == 0) check(a[n - 1] == 1 + (n - 1) % 7, "bcast", round);
        if (coll == 1 && rank == 0) check(b[n - 1] == sum, "reduce", round);
        if (coll == 2) check(b[n - 1] == sum, "allreduce", round);
        if (coll == 3) check(b[(p - 1) * n] == p, "allgather", round);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("nbprogress: ok\n");
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
