/* idup_threads.c -- an Open MPI defect pcoll steers around (docs/mpis.md): four threads,
 * each with its own duplicate of MPI_COMM_WORLD, start MPI_Comm_idup and MPI_Iallreduce on it
 * at once and wait for both; 20 rounds. No pcoll needed.
 *   mpirun -np 3 idup_threads [x]   (x: four threads; without it, one)
 * Open MPI 5.0.x (the registry's), four threads: "MPI Error in NBC subrequest ... : 15" and
 * "NBC_Progress: an error 15 was found during schedule" (and, with pcoll's shadow idups in
 * verify/threads.c, segfaults; Open MPI 4.1 failed alike there); one thread, and MPICH 4.0
 * with four: "idup ok". */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
static MPI_Comm comms[4];
static void *w(void *a) {
    int t = (int)(long)a;
    MPI_Comm s; MPI_Request q[2];
    double x = 1, y = 0;
    MPI_Comm_idup(comms[t], &s, &q[0]);
    MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comms[t], &q[1]);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Wait(&q[1], MPI_STATUS_IGNORE);
    double z = 0;
    MPI_Allreduce(&x, &z, 1, MPI_DOUBLE, MPI_SUM, s);
    MPI_Comm_free(&s);
    return 0;
}
int main(int c, char **v) {
    int pr; MPI_Init_thread(&c, &v, MPI_THREAD_MULTIPLE, &pr);
    int T = c > 1 ? 4 : 1;
    for (int rep = 0; rep < 20; rep++) {
        for (int t = 0; t < T; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
        pthread_t th[4];
        for (int t = 0; t < T; t++) pthread_create(&th[t], 0, w, (void *)(long)t);
        for (int t = 0; t < T; t++) pthread_join(th[t], 0);
        for (int t = 0; t < T; t++) MPI_Comm_free(&comms[t]);
    }
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (!r) printf("idup ok (T=%d)\n", T);
    MPI_Finalize();
}
