/* Ranks describing bcast's and allgather(v)'s data with different datatypes, as MPI allows
 * there. One rank may use MPI_BOTTOM with a type of absolute addresses (MPI_Get_address)
 * while the others pass a buffer of doubles. pcoll must run the same algorithm on every
 * rank: until session 29 it sent the MPI_BOTTOM rank to the MPI's collective and ran its
 * own on the others (a hang), and MPICH 4.0's MPI_Pack refuses a NULL buffer, which pcoll's
 * staging uses.
 *
 * The type of absolute addresses is a double at the address of the user's array, resized to
 * an extent of 8 (true lower bound = that address): n of them from MPI_BOTTOM are the array.
 * Cases per size (1..2^16 doubles), each result checked:
 *   bcast      root from MPI_BOTTOM, the others into plain buffers; then the root plain and
 *              the others into MPI_BOTTOM; MPI_Ibcast from MPI_BOTTOM at the root
 *   ibcast, iallgatherv  a strided type (holes) on one rank, plain doubles on the others:
 *              the same non-blocking algorithm everywhere (`shm` was declined by that rank
 *              alone until session 29)
 *   allgatherv rank 0 sends from MPI_BOTTOM, rank 1 receives into MPI_BOTTOM; rank 1
 *              receives into MPI_BOTTOM with absolute displacements (1 MiB units)
 *   allgather  rank p-1 sends from and receives into MPI_BOTTOM
 * argv[1]: the algorithm forced in the environment for bcast and allgather(v), checked with
 * pcoll_last_algorithm ("-": no check). Prints "bottom: PASS" or "bottom: FAIL ..." per rank. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "last_alg.h"

/* n doubles at `a`, seen from MPI_BOTTOM: one double at a's address, extent 8. */
static MPI_Datatype absolute(const double *a)
{
    MPI_Aint at;
    MPI_Get_address((void *)a, &at);
    int one = 1;
    MPI_Datatype t, r;
    MPI_Type_create_hindexed(1, &one, &at, MPI_DOUBLE, &t);
    MPI_Type_create_resized(t, at, sizeof(double), &r);
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *want = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL;
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long bad = 0;
    const char *odd = NULL;
    for (int n = 1; n <= 1 << 16; n *= 4) {
        double *a = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n * p);
        int *counts = malloc(sizeof(int) * p), *displs = malloc(sizeof(int) * p);
        for (int q = 0; q < p; q++) counts[q] = n, displs[q] = q * n;
        MPI_Datatype ta = absolute(a), tg = absolute(g);
        /* bcast from MPI_BOTTOM at the root */
        for (int i = 0; i < n; i++) a[i] = r == 0 ? 0.5 * i : -1;
        if (r == 0)
            MPI_Bcast(MPI_BOTTOM, n, ta, 0, MPI_COMM_WORLD);
        else
            MPI_Bcast(a, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        check_alg("bcast", want, 1, &odd);
        for (int i = 0; i < n; i++) bad += a[i] != 0.5 * i;
        /* bcast into MPI_BOTTOM at the others (root p-1) */
        for (int i = 0; i < n; i++) a[i] = r == p - 1 ? 2.0 * i : -1;
        if (r == p - 1)
            MPI_Bcast(a, n, MPI_DOUBLE, p - 1, MPI_COMM_WORLD);
        else
            MPI_Bcast(MPI_BOTTOM, n, ta, p - 1, MPI_COMM_WORLD);
        check_alg("bcast", want, 1, &odd);
        for (int i = 0; i < n; i++) bad += a[i] != 2.0 * i;
        /* the same with MPI_Ibcast + MPI_Wait, root 0 */
        for (int i = 0; i < n; i++) a[i] = r == 0 ? 3.0 * i : -1;
        MPI_Request q;
        if (r == 0)
            MPI_Ibcast(MPI_BOTTOM, n, ta, 0, MPI_COMM_WORLD, &q);
        else
            MPI_Ibcast(a, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        check_alg("ibcast", want, 1, &odd);
        for (int i = 0; i < n; i++) bad += a[i] != 3.0 * i;
        /* MPI_Ibcast and MPI_Iallgatherv with a type with holes on one rank only (every
         * other element of a strided array), plain doubles on the others */
        double *w = malloc(sizeof(double) * 2 * n * p);
        MPI_Datatype strided;
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &strided);
        MPI_Type_commit(&strided);
        for (int i = 0; i < 2 * n; i++) w[i] = r == 1 ? (i % 2 ? -7.0 : 4.0 * i) : -1;
        for (int i = 0; i < n; i++) a[i] = -1;
        if (r == 1)
            MPI_Ibcast(w, 1, strided, 1, MPI_COMM_WORLD, &q);
        else
            MPI_Ibcast(a, n, MPI_DOUBLE, 1, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        check_alg("ibcast", want, 1, &odd);
        for (int i = 0; i < n; i++) bad += (r == 1 ? w[2 * i] : a[i]) != 8.0 * i;
        for (int i = 0; i < n; i++) a[i] = r * 1000.0 + i;
        for (int i = 0; i < 2 * n; i++) w[i] = r == 0 ? (i % 2 ? -7.0 : i / 2 + 0.0) : -1;
        MPI_Iallgatherv(r == 0 ? w : a, r == 0 ? 1 : n, r == 0 ? strided : MPI_DOUBLE, g, counts,
                        displs, MPI_DOUBLE, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        check_alg("iallgatherv", want, 1, &odd);
        for (int q2 = 0; q2 < p; q2++)
            for (int i = 0; i < n; i++) bad += g[q2 * n + i] != (q2 == 0 ? i : q2 * 1000.0 + i);
        MPI_Type_free(&strided);
        free(w);
        /* allgatherv: rank 0 sends from MPI_BOTTOM, rank 1 receives into it */
        for (int i = 0; i < n; i++) a[i] = r * 1000.0 + i;
        memset(g, 0, sizeof(double) * n * p);
        MPI_Allgatherv(r == 0 ? MPI_BOTTOM : a, n, r == 0 ? ta : MPI_DOUBLE,
                       r == 1 ? MPI_BOTTOM : g, counts, displs, r == 1 ? tg : MPI_DOUBLE,
                       MPI_COMM_WORLD);
        check_alg("allgatherv", want, 1, &odd);
        for (int q = 0; q < p; q++)
            for (int i = 0; i < n; i++) bad += g[q * n + i] != q * 1000.0 + i;
        /* allgatherv: rank 1 receives into MPI_BOTTOM with displacements of absolute
         * addresses, in units of a 1 MiB extent (block q is one n-double type at 1 MiB-
         * aligned memory); a true lower bound of 0 (until session 52 that rank went to the
         * MPI alone: a NULL buffer counted as misplaced whatever its displacements) */
        /* (n <= 16: Open MPI 4.1's own allgatherv hangs on it from 64 doubles) */
        for (int once = n <= 16; once; once = 0) {
        size_t span = ((size_t)n * sizeof(double) + (1 << 20) - 1) / (1 << 20) * (1 << 20);
        double *h = NULL;
        if (posix_memalign((void **)&h, 1 << 20, span * p)) h = NULL;
        if (!h) MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_Datatype blk, wide;
        MPI_Type_contiguous(n, MPI_DOUBLE, &blk);
        MPI_Type_create_resized(blk, 0, 1 << 20, &wide);
        MPI_Type_commit(&wide);
        int *ones = malloc(sizeof(int) * p), *abs_d = malloc(sizeof(int) * p);
        for (int q = 0; q < p; q++) {
            MPI_Aint at;
            MPI_Get_address((char *)h + q * span, &at);
            ones[q] = 1, abs_d[q] = (int)(at >> 20);
        }
        memset(h, 0, span * p);
        memset(g, 0, sizeof(double) * n * p);
        if (r == 1)
            MPI_Allgatherv(a, n, MPI_DOUBLE, MPI_BOTTOM, ones, abs_d, wide, MPI_COMM_WORLD);
        else
            MPI_Allgatherv(a, n, MPI_DOUBLE, g, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        check_alg("allgatherv", want, 1, &odd);
        for (int q = 0; q < p; q++)
            for (int i = 0; i < n; i++)
                bad += (r == 1 ? *((double *)((char *)h + q * span) + i) : g[q * n + i]) !=
                       q * 1000.0 + i;
        MPI_Type_free(&blk);
        MPI_Type_free(&wide);
        free(h), free(ones), free(abs_d);
        }
        /* allgather: rank p-1 from and into MPI_BOTTOM */
        memset(g, 0, sizeof(double) * n * p);
        int last = r == p - 1;
        MPI_Allgather(last ? MPI_BOTTOM : a, n, last ? ta : MPI_DOUBLE, last ? MPI_BOTTOM : g, n,
                      last ? tg : MPI_DOUBLE, MPI_COMM_WORLD);
        check_alg("allgather", want, 1, &odd);
        for (int q = 0; q < p; q++)
            for (int i = 0; i < n; i++) bad += g[q * n + i] != q * 1000.0 + i;
        MPI_Type_free(&ta);
        MPI_Type_free(&tg);
        free(a), free(g), free(counts), free(displs);
    }
    if (bad || odd)
        printf("bottom: FAIL rank %d: %ld wrong elements%s%s\n", r, bad,
               odd ? "; another algorithm ran for " : "", odd ? odd : "");
    else
        printf("bottom: PASS rank %d\n", r);
    MPI_Finalize();
    return bad || odd;
}
