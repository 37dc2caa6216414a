/* A non-blocking call served again from its kept decision (dispatch/again.rs, `again_nb`)
 * must be decided afresh once the communicator's shared window is made. Table (PCOLL_TUNING,
 * written by verify/gate.sh): `shm` for MPI_Iallreduce, `binomial` for MPI_Bcast (one call
 * first makes pcoll's shadow of MPI_COMM_WORLD). Phase 0: three calls before any
 * MPI_Barrier, when the window is not made yet (a non-blocking initiation never makes it):
 * the decision falls back (on MPICH 4.0 at p = 3, 1 MiB, to the model's circulant, which is
 * kept; on Intel MPI to native, whose repeats are sent native at initiation since session 60,
 * `nbc::waiting`); then MPI_Barrier makes the window; phase 1: three calls that must run `shm`.
 * Every result is checked against the closed form. Argument: "kept" requires phase 0 to
 * have run a pcoll algorithm other than shm (where the model picks one, so that a stale kept
 * decision would show). Argument "off" (run with PCOLL_SHM=0 and the same table): 4 KiB
 * calls whose `shm` falls back to the model's pick, native on four of the five MPIs (kept
 * native at initiation for good: `nbc::waiting`'s case 4, no window will come) and
 * `circulant` on MPICH 4.0 (served again from its kept decision); then every rank calls
 * pcoll_force("allreduce", "binomial") before the barrier, and phase 1's calls must run
 * `binomial`: the override ends what was kept (a library whose `pcoll_force` forgets
 * nothing fails it). Prints "nbagain: PASS" or "nbagain: FAIL ..." on rank 0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef const char *(*last_fn)(const char *);
typedef int (*force_fn)(const char *, const char *);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int kept = argc > 1 && strcmp(argv[1], "kept") == 0;
    int off = argc > 1 && strcmp(argv[1], "off") == 0;
    last_fn last = (last_fn)dlsym(RTLD_DEFAULT, "pcoll_last_algorithm");
    force_fn force = (force_fn)dlsym(RTLD_DEFAULT, "pcoll_force");
    /* The algorithm phase 1 must run. */
    const char *want = off ? "binomial" : "shm";
    int n = off ? 512 : 131072, bad = 0;
    double *s = malloc(n * sizeof *s), *d = malloc(n * sizeof *d);
    for (int i = 0; i < n; i++)
        s[i] = i + r;
    /* A blocking broadcast the table gives to `binomial` makes pcoll's shadow of the
     * communicator (not the window): a non-blocking call goes native on a communicator
     * without one. */
    int one = r;
    MPI_Bcast(&one, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int phase = 0; phase < 2; phase++) {
        for (int k = 0; k < 3; k++) {
            MPI_Request q;
            memset(d, 0, n * sizeof *d);
            MPI_Iallreduce(s, d, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i += 997)
                if (d[i] != (double)i * p + p * (p - 1) / 2.0)
                    bad++;
            const char *alg = last ? last("iallreduce") : "?";
            if (r == 0) {
                printf("nbagain: phase %d call %d: %s\n", phase, k, alg);
                if (phase == 1 && strcmp(alg, want) != 0)
                    bad++;
                if (phase == 0 && kept && (!strcmp(alg, "shm") || !strcmp(alg, "native")))
                    bad++;
            }
        }
        if (off && phase == 0 && (!force || force("allreduce", "binomial") != 0))
            bad++;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0)
        printf(all || !last ? "nbagain: FAIL (%d wrong)\n" : "nbagain: PASS\n", all);
    MPI_Finalize();
    return all != 0;
}
