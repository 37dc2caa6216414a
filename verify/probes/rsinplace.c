/* In-place MPI_Reduce_scatter with unequal counts (rank 0's 0 and the others' n: "0,n"; n + k:
 * "n+k") and equal ones, per datatype: the smallest total (bytes, steps of 1/64) whose call fails
 * on some rank (-1: none up to 4 MiB). Pair types take MPI_MAXLOC, the derived ones a user op
 * that does nothing (only the call's return code is read), MPI_DOUBLE MPI_SUM. Session 43,
 * without pcoll: Intel MPI 2021.19 returns MPI_ERR_TYPE for MPI_FLOAT_INT and contig(3, int)
 * from 131472 bytes at p = 2 (~236 KB at p = 3 and 4, ~526 KB at p = 5), never for the others;
 * MPICH 4.0.2 and 5.0.2 abort (memcpy overlap) from 530608 bytes at p = 2 for every contiguous
 * type (src/decide/defects.rs: impi- and mpich-reduce-scatter-inplace-unequal; with pcoll
 * preloaded no type fails).
 *   mpicc -O2 -o rsinplace rsinplace.c
 *   mpirun -np 2 [-x LD_PRELOAD=.../libpcoll.so] ./rsinplace [type index: one type only] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static void myop(void *a, void *b, int *n, MPI_Datatype *t) { (void)a; (void)b; (void)n; (void)t; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype vec, con, hvec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec); MPI_Type_commit(&vec);
    MPI_Type_contiguous(3, MPI_INT, &con); MPI_Type_commit(&con);
    MPI_Type_create_resized(MPI_INT, 0, 8, &hvec); MPI_Type_commit(&hvec);
    MPI_Datatype types[] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_2INT, MPI_LONG_DOUBLE_INT, vec, con, hvec, MPI_DOUBLE};
    const char *tn[] = {"FLOAT_INT", "DOUBLE_INT", "LONG_INT", "SHORT_INT", "2INT", "LONG_DOUBLE_INT", "vec(2,1,2,int)", "contig(3,int)", "resized(int,8)", "DOUBLE"};
    MPI_Op uop; MPI_Op_create(myop, 1, &uop);
    MPI_Op ops[] = {MPI_MAXLOC, uop, uop, uop, uop, uop, uop, uop, uop, MPI_SUM};
    int nt = sizeof types / sizeof *types;
    int t0 = argc > 1 ? atoi(argv[1]) : 0, t1 = argc > 1 ? t0 + 1 : nt;
    for (int t = t0; t < t1; t++) for (int mode = 0; mode < 3; mode++) {
        MPI_Aint lb, ext; MPI_Type_get_extent(types[t], &lb, &ext);
        long first = -1;
        for (long tb = 1024; tb <= (4l << 20); tb += tb / 64) {
            long n = tb / ext / (mode == 0 ? 1 : p);
            int counts[64]; long total = 0;
            for (int k = 0; k < p; k++) { long c = mode == 0 ? (k == 0 ? 0 : n) : mode == 1 ? n + k : n; counts[k] = c; total += c; }
            char *buf = calloc(total + 1, ext);
            int rc = MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts, types[t], ops[t], MPI_COMM_WORLD);
            int bad = rc != MPI_SUCCESS, any;
            MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            free(buf);
            if (any) { first = total * ext; break; }
        }
        if (r == 0) printf("%-16s %-6s first failing total %ld bytes\n", tn[t], mode == 0 ? "0,n" : mode == 1 ? "n+k" : "equal", first);
    }
    MPI_Finalize();
}
