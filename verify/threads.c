/* threads: MPI_THREAD_MULTIPLE stress for pcoll (issue 7).
 *
 * T threads per rank, each with its own communicator (MPI_Comm_dup'ed, and for odd threads
 * MPI_Comm_split with reversed rank order, before the threads start), each running N
 * iterations that cycle through MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter and
 * MPI_Allgatherv with varying counts, roots, in-place flags and ops (MPI_SUM on int, MPI_MAX on
 * double, and a non-commutative user op: affine maps mod 2^32), each result checked against a
 * locally computed reference. The first collective on each communicator happens concurrently
 * in all threads, so pcoll's per-communicator setup runs concurrently too.
 * A deadlock shows as a timeout of the launcher (the scripts use `timeout`).
 * With -i 1 every call is the non-blocking form (MPI_Ireduce, ...) completed by MPI_Wait on
 * odd iterations and an MPI_Test loop on even ones: several threads then drive their own
 * outstanding collectives at once; every 50 iterations an MPI_Barrier on the thread's
 * communicator, where pcoll makes the shared window a non-blocking call asked for (never
 * inside the non-blocking initiation), concurrently in all threads.
 *
 * With -k 1 the communicators are left to MPI_Finalize (not freed: legal), with the windows
 * the threads made at once on them: pcoll frees those there, in one order on every rank.
 *
 * Usage: threads [-t T] [-n N] [-c MAXCOUNT] [-i 0|1] [-k 0|1]
 * Prints `threads: SKIP ...` and exits 0 if the MPI does not provide MPI_THREAD_MULTIPLE;
 * otherwise `threads: T threads x N iterations x p ranks, E errors` (rank 0), exit 1 if E > 0.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize;
static int is_mpich;
static MPI_Op affine_op;
static int nbmode; /* -i 1: the I-forms */

/* Complete a non-blocking call: MPI_Wait, or MPI_Test in a loop. */
static int fin(MPI_Request *q, long it) {
    if (it % 2) return MPI_Wait(q, MPI_STATUS_IGNORE);
    int done = 0, rc;
    while ((rc = MPI_Test(q, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done)
        ;
    return rc;
}

static int x_reduce(const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, int root, MPI_Comm c, long it) {
    if (!nbmode) return MPI_Reduce(s, r, n, d, o, root, c);
    MPI_Request q;
    int rc = MPI_Ireduce(s, r, n, d, o, root, c, &q);
    return rc != MPI_SUCCESS ? rc : fin(&q, it);
}

static int x_allreduce(const void *s, void *r, int n, MPI_Datatype d, MPI_Op o, MPI_Comm c, long it) {
    if (!nbmode) return MPI_Allreduce(s, r, n, d, o, c);
    MPI_Request q;
    int rc = MPI_Iallreduce(s, r, n, d, o, c, &q);
    return rc != MPI_SUCCESS ? rc : fin(&q, it);
}

static int x_reduce_scatter(const void *s, void *r, const int *cnt, MPI_Datatype d, MPI_Op o, MPI_Comm c, long it) {
    if (!nbmode) return MPI_Reduce_scatter(s, r, cnt, d, o, c);
    MPI_Request q;
    int rc = MPI_Ireduce_scatter(s, r, cnt, d, o, c, &q);
    return rc != MPI_SUCCESS ? rc : fin(&q, it);
}

static int x_allgatherv(const void *s, int sc, MPI_Datatype sd, void *r, const int *cnt, const int *dsp,
                        MPI_Datatype rd, MPI_Comm c, long it) {
    if (!nbmode) return MPI_Allgatherv(s, sc, sd, r, cnt, dsp, rd, c);
    MPI_Request q;
    int rc = MPI_Iallgatherv(s, sc, sd, r, cnt, dsp, rd, c, &q);
    return rc != MPI_SUCCESS ? rc : fin(&q, it);
}

static void affine(void *in, void *io, int *len, MPI_Datatype *dt) {
    (void)dt; /* pairs of uint32: (a1,b1) then (a2,b2) = (a1 a2, a2 b1 + b2) */
    uint32_t *x = in, *y = io;
    for (int i = 0; i < *len; i++) {
        uint32_t a1 = x[2 * i], b1 = x[2 * i + 1], a2 = y[2 * i], b2 = y[2 * i + 1];
        y[2 * i] = a1 * a2;
        y[2 * i + 1] = a2 * b1 + b2;
    }
}

static uint32_t val(int t, long it, int r, long i) {
    uint64_t x = (uint64_t)t * 1000003u + (uint64_t)it * 7919u + (uint64_t)r * 104729u + (uint64_t)i * 31u;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(x >> 32);
}

typedef struct {
    int t;
    MPI_Comm comm;
    long iters;
    long maxc;
    long errors;
    char first[256];
} job_t;

static void note(job_t *j, const char *what, long it, long i) {
    if (j->errors++ == 0)
        snprintf(j->first, sizeof j->first, "thread %d iteration %ld: %s at element %ld", j->t, it, what, i);
}

static void *worker(void *arg) {
    job_t *j = arg;
    int p, me;
    MPI_Comm_size(j->comm, &p);
    MPI_Comm_rank(j->comm, &me);
    long cap = j->maxc * p + 16;
    int *si = malloc(sizeof(int) * cap), *ri = malloc(sizeof(int) * cap);
    double *sd = malloc(sizeof(double) * cap), *rd = malloc(sizeof(double) * cap);
    uint32_t *su = malloc(8 * cap), *ru = malloc(8 * cap);
    int *cnt = malloc(sizeof(int) * p), *dsp = malloc(sizeof(int) * p);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_UINT32_T, &pair);
    MPI_Type_commit(&pair);
    for (long it = 0; it < j->iters; it++) {
        if (nbmode && it % 50 == 25) MPI_Barrier(j->comm);
        int kind = (int)(it % 4), flavor = (int)((it / 4) % 3), inplace = (it / 12) % 2;
        long n = (it * 37 + j->t * 11) % (j->maxc + 1);
        int root = (int)((it + j->t) % p);
        int rc = MPI_SUCCESS;
        if (kind == 0 || kind == 1) { /* reduce / allreduce */
            int amroot = kind == 1 || me == root;
            /* Debian MPICH 4.0.2 crashes natively on in-place reduce at root != 0 above 2048
             * bytes (MPI-NOTES.md): in place only at root 0 there. */
            int ip = inplace && amroot && !(is_mpich && kind == 0 && root != 0);
            if (flavor == 0) {
                for (long i = 0; i < n; i++) (ip ? ri : si)[i] = (int)(val(j->t, it, me, i) % 1000);
                rc = kind ? x_allreduce(ip ? MPI_IN_PLACE : si, ri, (int)n, MPI_INT, MPI_SUM, j->comm, it)
                          : x_reduce(ip ? MPI_IN_PLACE : si, ri, (int)n, MPI_INT, MPI_SUM, root, j->comm, it);
                if (amroot)
                    for (long i = 0; i < n; i++) {
                        long w = 0;
                        for (int r = 0; r < p; r++) w += val(j->t, it, r, i) % 1000;
                        if (ri[i] != w) { note(j, kind ? "allreduce SUM" : "reduce SUM", it, i); break; }
                    }
            } else if (flavor == 1) {
                for (long i = 0; i < n; i++) (ip ? rd : sd)[i] = (double)(val(j->t, it, me, i) % 100000) - 50000;
                rc = kind ? x_allreduce(ip ? MPI_IN_PLACE : sd, rd, (int)n, MPI_DOUBLE, MPI_MAX, j->comm, it)
                          : x_reduce(ip ? MPI_IN_PLACE : sd, rd, (int)n, MPI_DOUBLE, MPI_MAX, root, j->comm, it);
                if (amroot)
                    for (long i = 0; i < n; i++) {
                        double w = -1e300;
                        for (int r = 0; r < p; r++) {
                            double v = (double)(val(j->t, it, r, i) % 100000) - 50000;
                            if (v > w) w = v;
                        }
                        if (rd[i] != w) { note(j, kind ? "allreduce MAX" : "reduce MAX", it, i); break; }
                    }
            } else {
                for (long i = 0; i < n; i++) {
                    uint32_t *e = (ip ? ru : su) + 2 * i;
                    e[0] = val(j->t, it, me, 2 * i) | 1;
                    e[1] = val(j->t, it, me, 2 * i + 1);
                }
                rc = kind ? x_allreduce(ip ? MPI_IN_PLACE : su, ru, (int)n, pair, affine_op, j->comm, it)
                          : x_reduce(ip ? MPI_IN_PLACE : su, ru, (int)n, pair, affine_op, root, j->comm, it);
                if (amroot)
                    for (long i = 0; i < n; i++) {
                        uint32_t a = 1, b = 0; /* identity, then fold in rank order */
                        for (int r = 0; r < p; r++) {
                            uint32_t a2 = val(j->t, it, r, 2 * i) | 1, b2 = val(j->t, it, r, 2 * i + 1);
                            b = a2 * b + b2;
                            a = a * a2;
                        }
                        if (ru[2 * i] != a || ru[2 * i + 1] != b) { note(j, kind ? "allreduce affine" : "reduce affine", it, i); break; }
                    }
            }
        } else if (kind == 2) { /* reduce_scatter, int SUM, irregular counts */
            long tot = 0;
            for (int r = 0; r < p; r++) { cnt[r] = (int)((n + r * 3 + it) % (n + 1)); if ((r + it) % 5 == 0) cnt[r] = 0; tot += cnt[r]; }
            long off = 0;
            for (int r = 0; r < me; r++) off += cnt[r];
            int *in = inplace ? ri : si;
            for (long i = 0; i < tot; i++) in[i] = (int)(val(j->t, it, me, i) % 1000);
            rc = x_reduce_scatter(inplace ? MPI_IN_PLACE : si, ri, cnt, MPI_INT, MPI_SUM, j->comm, it);
            for (long i = 0; i < cnt[me]; i++) {
                long w = 0;
                for (int r = 0; r < p; r++) w += val(j->t, it, r, off + i) % 1000;
                if (ri[i] != w) { note(j, "reduce_scatter", it, i); break; }
            }
        } else { /* allgatherv, permuted blocks with gaps */
            /* MPICH 4.0.2 ignores displs[0] on a one-rank communicator (native defect). */
            long at = p > 1 ? 1 : 0;
            for (int r = 0; r < p; r++) cnt[r] = (int)((n + r * 7 + it) % (n + 1));
            for (int k = 0; k < p; k++) { int r = (k + (int)it) % p; dsp[r] = (int)at; at += cnt[r] + (k % 2); }
            for (long i = 0; i < at; i++) ri[i] = -7;
            int *mine = inplace ? ri + dsp[me] : si;
            for (long i = 0; i < cnt[me]; i++) mine[i] = (int)val(j->t, it, me, i);
            rc = x_allgatherv(inplace ? MPI_IN_PLACE : si, cnt[me], MPI_INT, ri, cnt, dsp, MPI_INT, j->comm, it);
            for (int r = 0; r < p; r++)
                for (long i = 0; i < cnt[r]; i++)
                    if (ri[dsp[r] + i] != (int)val(j->t, it, r, i)) { note(j, "allgatherv", it, i); r = p; break; }
            if (p > 1 && ri[0] != -7) note(j, "allgatherv gap", it, 0);
        }
        if (rc != MPI_SUCCESS) note(j, "MPI error returned", it, -1);
    }
    MPI_Type_free(&pair);
    free(si); free(ri); free(sd); free(rd); free(su); free(ru); free(cnt); free(dsp);
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int T = 4, keep = 0;
    long N = 2000, maxc = 300;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t")) T = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-n")) N = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-c")) maxc = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-i")) nbmode = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-k")) keep = atoi(argv[i + 1]);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (wrank == 0)
            printf("threads: SKIP: the MPI provides thread level %d, not MPI_THREAD_MULTIPLE (%d)\n", provided, MPI_THREAD_MULTIPLE);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int vl;
    MPI_Get_library_version(ver, &vl);
    is_mpich = strstr(ver, "MPICH") != NULL;
    MPI_Op_create(affine, 0, &affine_op);
    job_t *jobs = calloc(T, sizeof(job_t));
    pthread_t *th = calloc(T, sizeof(pthread_t));
    for (int t = 0; t < T; t++) {
        jobs[t].t = t;
        jobs[t].iters = N;
        jobs[t].maxc = maxc;
        if (t % 2) MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &jobs[t].comm);
        else MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
    }
    double t0 = MPI_Wtime();
    for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, worker, &jobs[t]);
    long errors = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        errors += jobs[t].errors;
        if (jobs[t].errors) printf("threads: rank %d: %ld errors, first: %s\n", wrank, jobs[t].errors, jobs[t].first);
    }
    double dt = MPI_Wtime() - t0;
    long total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (!keep)
        for (int t = 0; t < T; t++) MPI_Comm_free(&jobs[t].comm);
    free(jobs);
    free(th);
    MPI_Op_free(&affine_op);
    if (wrank == 0)
        printf("threads: %d threads x %ld iterations x %d ranks%s, %ld errors (%.1f s)\n", T, N, wsize, nbmode ? " (non-blocking forms)" : "", total, dt);
    MPI_Finalize();
    return total ? 1 : 0;
}
