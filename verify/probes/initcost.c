/* What pcoll adds to MPI_Init and to the first calls of a collective: MPI_Init's wall time,
 * then the first and second call of one collective (4 doubles) on MPI_COMM_WORLD and on a
 * communicator of a new size (the world split in halves), each after a barrier; max over ranks.
 * Run it natively and preloaded, alternated, several times (docs/known-gaps.md: session 55's
 * medians of 9 at p = 2).
 *   mpicc -O2 -o initcost initcost.c
 *   mpirun -np 2 [-x LD_PRELOAD=.../libpcoll.so] ./initcost [allreduce|bcast] */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static double call(const char *what, MPI_Comm c) {
    double x[4] = {1, 2, 3, 4}, y[4];
    double t0 = now();
    if (!strcmp(what, "bcast"))
        MPI_Bcast(x, 4, MPI_DOUBLE, 0, c);
    else
        MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, c);
    return now() - t0;
}
int main(int argc, char **argv) {
    double t0 = now();
    MPI_Init(&argc, &argv);
    double init = now() - t0;
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const char *what = argc > 1 ? argv[1] : "allreduce";
    PMPI_Barrier(MPI_COMM_WORLD);
    double w1 = call(what, MPI_COMM_WORLD), w2 = call(what, MPI_COMM_WORLD);
    MPI_Comm half;
    PMPI_Comm_split(MPI_COMM_WORLD, r < (p + 1) / 2, r, &half);
    PMPI_Barrier(MPI_COMM_WORLD);
    double h1 = call(what, half), h2 = call(what, half);
    double v[5] = {init, w1, w2, h1, h2}, m[5];
    PMPI_Reduce(v, m, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (!r)
        printf("init_us %.0f world_first %.0f world_second %.0f split_first %.0f split_second %.0f\n",
               m[0], m[1], m[2], m[3], m[4]);
    PMPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
