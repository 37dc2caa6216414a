/* What a non-blocking call wants made on its communicator (the shadow, which a non-blocking
 * call never makes itself, and the shared window) is made at the
 * communicator's next blocking collective of any kind, not only MPI_Barrier. Run with
 * PCOLL_REDUCE=binomial PCOLL_ALLREDUCE=shm (verify/gate.sh). For each kind of blocking
 * collective (bcast and allgather: the native gate's path, whose memo and cells would forward
 * the call without pcoll's Rust path; gather and split: the calls pcoll forwards after
 * draining; barrier), on a fresh dup of MPI_COMM_WORLD: the collective twice (the gate learns
 * it), an MPI_Ireduce and an MPI_Iallreduce (they want the shadow and the window), the
 * collective once more, then both again, which must run `binomial` and `shm`. Every result is
 * checked against its closed form. Prints "nbwanted: PASS" or "nbwanted: FAIL ..." on rank 0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const char *(*last_fn)(const char *);

static const char *kinds[] = {"bcast", "allgather", "gather", "split", "barrier"};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

/* One blocking collective of kind `k` on `comm`, its result checked; returns the wrong ones. */
static int blocking(int k, MPI_Comm comm, int r, int p)
{
    int bad = 0, v = r + 1, *all = malloc(p * sizeof *all);
    if (k == 0) {
        v = r == 0 ? 42 : -1;
        MPI_Bcast(&v, 1, MPI_INT, 0, comm);
        bad += v != 42;
    } else if (k == 1 || k == 2) {
        for (int i = 0; i < p; i++)
            all[i] = -1;
        if (k == 1)
            MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, comm);
        else
            MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, 0, comm);
        for (int i = 0; i < p && (k == 1 || r == 0); i++)
            bad += all[i] != i + 1;
    } else if (k == 3) {
        MPI_Comm half;
        MPI_Comm_split(comm, r % 2, r, &half);
        MPI_Comm_free(&half);
    } else {
        MPI_Barrier(comm);
    }
    free(all);
    return bad;
}

/* An MPI_Ireduce to root 0 and an MPI_Iallreduce of n doubles, checked; the algorithms that
 * ran in `red` and `all`. */
static int nonblocking(MPI_Comm comm, int r, int p, int n, last_fn last, const char **red, const char **all)
{
    double *s = malloc(n * sizeof *s), *d = malloc(n * sizeof *d), *e = malloc(n * sizeof *e);
    int bad = 0;
    for (int i = 0; i < n; i++)
        s[i] = i % 1000 + r;
    MPI_Request q[2];
    MPI_Ireduce(s, d, n, MPI_DOUBLE, MPI_SUM, 0, comm, &q[0]);
    MPI_Waitall(1, q, MPI_STATUSES_IGNORE);
    *red = last ? last("ireduce") : "?";
    MPI_Iallreduce(s, e, n, MPI_DOUBLE, MPI_SUM, comm, &q[1]);
    MPI_Wait(&q[1], MPI_STATUS_IGNORE);
    *all = last ? last("iallreduce") : "?";
    for (int i = 0; i < n; i++) {
        double want = (double)(i % 1000) * p + p * (p - 1) / 2.0;
        bad += (r == 0 && d[i] != want) + (e[i] != want);
    }
    free(s);
    free(d);
    free(e);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p, bad = 0, odd = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    last_fn last = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    for (int k = 0; k < NKINDS; k++) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        const char *red0, *all0, *red1, *all1;
        bad += blocking(k, comm, r, p) + blocking(k, comm, r, p);
        bad += nonblocking(comm, r, p, 20000, last, &red0, &all0);
        bad += blocking(k, comm, r, p);
        bad += nonblocking(comm, r, p, 20000, last, &red1, &all1);
        if (r == 0)
            printf("nbwanted: %-9s before: ireduce %s, iallreduce %s; after: ireduce %s, iallreduce %s\n", kinds[k],
                   red0, all0, red1, all1);
        if (strcmp(red1, "binomial") != 0 || strcmp(all1, "shm") != 0) {
            if (r == 0)
                printf("nbwanted: %s did not make what the non-blocking calls wanted\n", kinds[k]);
            odd++;
        }
        MPI_Comm_free(&comm);
    }
    int sum[2] = {bad, odd}, tot[2];
    MPI_Allreduce(sum, tot, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) {
        if (tot[0] || tot[1] || !last)
            printf("nbwanted: FAIL (%d wrong results, %d kinds not made%s)\n", tot[0], tot[1],
                   last ? "" : ", pcoll not preloaded");
        else
            printf("nbwanted: PASS\n");
    }
    MPI_Finalize();
    return tot[0] || tot[1] || !last;
}
