#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int c, char **v) {
  MPI_Init(&c, &v); int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  int n = atoi(v[1]) / 8, it = 200000; double x[1024], y[1024];
  for (int i = 0; i < 1024; i++) x[i] = i;
  for (int rep = 0; rep < 3; rep++) {
    for (int side = 0; side < 2; side++) {
      MPI_Barrier(MPI_COMM_WORLD); double t = MPI_Wtime();
      for (int i = 0; i < it; i++) { if (side) MPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); else PMPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); }
      t = (MPI_Wtime() - t) / it * 1e9; double m; MPI_Reduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (!r) printf("%s %.1f ns  ", side ? "MPI" : "PMPI", m);
    }
    if (!r) printf("\n");
  }
  MPI_Finalize();
}
