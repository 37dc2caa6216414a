/* idup_threads.c -- an Open MPI defect pcoll steers around (docs/mpis.md): MPI_Comm_idup beside
 * other non-blocking collectives on the same communicator. No pcoll needed.
 *   mpirun -np 3 idup_threads      one thread, 200 rounds on a new duplicate each: Iallreduce,
 *                                  Comm_idup, MPI_Testall turns that differ by rank, then
 *                                  Iallreduce and Ibcast, all waited for at once
 *   mpirun -np 3 idup_threads x    four threads, each with its own duplicate: Comm_idup and
 *                                  Iallreduce at once, 20 rounds
 * Open MPI 4.1.4 and 5.0.x (session 20): "MPI Error in NBC subrequest ... : 15" and
 * "NBC_Progress: an error 15 was found during schedule" (a truncation): the first form in
 * both of two invocations on both, the second on 5.0 (with pcoll's shadow idups,
 * verify/threads.sh segfaulted, 4.1 and 5.0); MPICH 4.0: "idup ok" for the first form. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static MPI_Comm comms[4];

static void *threaded(void *a) {
    int t = (int)(long)a;
    MPI_Comm s;
    MPI_Request q[2];
    double x = 1, y = 0, z = 0;
    MPI_Comm_idup(comms[t], &s, &q[0]);
    MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comms[t], &q[1]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Wait(&q[1], MPI_STATUS_IGNORE);
    MPI_Allreduce(&x, &z, 1, MPI_DOUBLE, MPI_SUM, s);
    MPI_Comm_free(&s);
    return 0;
}

static void interleaved(int rank) {
    for (int rep = 0; rep < 200; rep++) {
        MPI_Comm c, s;
        MPI_Request q[4];
        double x[3] = {1, 1, 1}, y[3];
        int n = 0, flag;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Iallreduce(&x[0], &y[0], 1, MPI_DOUBLE, MPI_SUM, c, &q[n++]);
        MPI_Comm_idup(c, &s, &q[n++]);
        for (int k = 0; k < 50 * (rank + 1); k++) MPI_Testall(n, q, &flag, MPI_STATUSES_IGNORE);
        MPI_Iallreduce(&x[1], &y[1], 1, MPI_DOUBLE, MPI_SUM, c, &q[n++]);
        MPI_Ibcast(&x[2], 1, MPI_DOUBLE, 0, c, &q[n++]);
        for (int i = 0; i < n; i++) MPI_Wait(&q[i], MPI_STATUS_IGNORE);
        MPI_Comm_free(&s);
        MPI_Comm_free(&c);
    }
}

int main(int c, char **v) {
    int pr, r;
    MPI_Init_thread(&c, &v, MPI_THREAD_MULTIPLE, &pr);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int threads = c > 1 && !strcmp(v[1], "x");
    if (threads) {
        for (int rep = 0; rep < 20; rep++) {
            pthread_t th[4];
            for (int t = 0; t < 4; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
            for (int t = 0; t < 4; t++) pthread_create(&th[t], 0, threaded, (void *)(long)t);
            for (int t = 0; t < 4; t++) pthread_join(th[t], 0);
            for (int t = 0; t < 4; t++) MPI_Comm_free(&comms[t]);
        }
    } else {
        interleaved(r);
    }
    if (!r) printf("idup ok (%s)\n", threads ? "four threads" : "one thread, interleaved");
    MPI_Finalize();
    return 0;
}
