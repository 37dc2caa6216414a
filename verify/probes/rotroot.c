/* Reduces back to back with the root fixed at 0 or rotating over the ranks (root = i % p),
 * pcoll (MPI_Reduce) against native (PMPI_Reduce) in 20 alternated blocks of 150 calls, and
 * the algorithm pcoll ran last at root 0 and at a root other than 0. The means include one-time costs (a raced
 * cell's window, 3-4 ms, and its races), as a short program pays them. Session 42, p = 2:
 * Intel MPI 64 KiB 1.37-1.58x native rotating, 0.92-1.20 fixed; Open MPI 4.1 32 KiB 1.45 / 1.62,
 * native forced 0.99 / 1.06; over 60000 calls (ITERS=60000) 1.16 rotating, 1.02 fixed
 * (docs/known-gaps.md, Reduces whose root rotates).
 *   mpicc -O2 -o rotroot rotroot.c -ldl
 *   mpirun -np 2 -x LD_PRELOAD=.../libpcoll.so [-x ITERS=3000] ./rotroot <bytes> <rotate 0|1> */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
typedef const char *(*last_fn)(const char *);
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: rotroot <bytes> <rotate 0|1>\n");
        MPI_Finalize();
        return 2;
    }
    int n = atoi(argv[1]) / 8, rot = atoi(argv[2]);
    int iters = getenv("ITERS") ? atoi(getenv("ITERS")) : 3000;
    iters = iters < 20 ? 20 : iters;
    double *s = calloc(n, 8), *r = calloc(n, 8);
    last_fn lastf = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    double tp = 0, tn = 0;
    const char *last[2] = {"?", "?"};
    for (int blk = 0; blk < 20; blk++) {
        for (int side = 0; side < 2; side++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters / 20; i++) {
                int root = rot ? i % p : 0;
                if ((side ^ (blk & 1)) == 0) MPI_Reduce(s, r, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
                else PMPI_Reduce(s, r, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
                if ((side ^ (blk & 1)) == 0 && blk == 19) last[root != 0] = lastf ? lastf("reduce") : "none";
            }
            double t = MPI_Wtime() - t0;
            if ((side ^ (blk & 1)) == 0) tp += t; else tn += t;
        }
    }
    if (rank == 0) printf("bytes %d rot %d: pcoll %.2f us native %.2f us ratio %.3f last root0 %s other %s\n", n * 8, rot,
                          tp / iters * 1e6, tn / iters * 1e6, tp / tn, last[0], rot ? last[1] : "-");
    MPI_Finalize();
    return 0;
}
