/* verify/agree_noinit.c: MPI initialised with PMPI_Init, so pcoll never sees MPI_Init (as with
 * a program that initialises MPI some other way); then 5 MPI_Allreduce and 1 MPI_Reduce
 * (root 0) of 100000 doubles, checked against the exact sums (small integers: every order of
 * summation gives the same doubles). verify/agree.sh runs it with settings that differ across
 * ranks: pcoll must ignore them on every rank alike. Rank 0 prints "noinit: ok" or
 * "noinit: MISMATCH ..."; exit status 1 on a mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100000

int main(int argc, char **argv) {
    PMPI_Init(&argc, &argv);
    int rank, p, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    double *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < N; i++) in[i] = (double)((i + 7 * rank + round) % 1000);
        if (round < 5) MPI_Allreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else MPI_Reduce(in, out, N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (round < 5 || rank == 0)
            for (int i = 0; i < N; i++) {
                double want = 0;
                for (int r = 0; r < p; r++) want += (double)((i + 7 * r + round) % 1000);
                if (out[i] != want) { bad++; break; }
            }
    }
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "noinit: MISMATCH on %d rounds\n" : "noinit: ok%.0d\n", all);
    free(in);
    free(out);
    MPI_Finalize();
    return all != 0;
}
