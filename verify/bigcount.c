/* bigcount: collectives whose message exceeds 2^31 bytes (issue 7): no 32-bit byte-offset
 * overflow anywhere.
 *
 * Memory first: one buffer of COUNT MiB per rank (default 2050 MiB = 2 149 580 800 bytes, just
 * over 2^31 = 2 147 483 648). In-place allreduce needs the buffer plus at most one scratch copy
 * inside the MPI/pcoll (~4.1 GB per rank); the out-of-place reduce adds a receive buffer at the
 * root (~6.2 GB at the root, ~2.1 GB elsewhere). At p = 2 the peak is ~8.3 GB of the 24 GB, so
 * count 2100 (2.2 GB) would fit too, but 2050 leaves room for the other jobs on the machine;
 * the program checks MemAvailable first and skips (exit 0, `bigcount: SKIP`) below (2p+2) x.
 *
 *  1. T = MPI_Type_contiguous(262144, MPI_INT) (1 MiB), count COUNT, a user-defined sum op
 *     (both MPIs reject predefined ops on derived types): MPI_Allreduce in place and
 *     MPI_Reduce out of place to root p-1.
 *  2. MPI_INT, count COUNT * 262144 (fits an int, byte size > 2^31), MPI_SUM: the same two
 *     calls.
 *  3. MPI_Bcast of those bytes (to a multiple of 28) from rank 0, described as MPI_INT at the
 *     root and as a 28-byte contiguous type elsewhere (pcoll sends such calls to the MPI on
 *     every rank; a forced PCOLL_BCAST must not change that).
 * Element j of rank r holds (j mod 65521) + 3r: every element is checked, so a byte offset
 * that wrapped at 2^31 shows up as a wrong value.
 *
 * Usage: bigcount [-m MiB]   (rank 0 prints `bigcount: ...` and `bigcount: PASS|FAIL`)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER (262144L) /* ints per 1 MiB element */

static void isum(void *in, void *io, int *len, MPI_Datatype *dt) {
    int size;
    MPI_Type_size(*dt, &size);
    size_t n = (size_t)*len * (size_t)(size / (int)sizeof(int));
    const int *a = in;
    int *b = io;
    for (size_t i = 0; i < n; i++) b[i] += a[i];
}

static long mem_available_mib(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb / 1024;
}

static void fill(int *a, size_t n, int r) {
    for (size_t j = 0; j < n; j++) a[j] = (int)(j % 65521) + 3 * r;
}

/* Number of wrong elements; first wrong index in *first. */
static size_t check(const int *a, size_t n, int p, size_t *first) {
    size_t bad = 0;
    int add = 3 * p * (p - 1) / 2;
    for (size_t j = 0; j < n; j++)
        if (a[j] != p * (int)(j % 65521) + add) {
            if (!bad) *first = j;
            bad++;
        }
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    long mib = 2050;
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "-m")) mib = atol(argv[i + 1]);
    size_t n = (size_t)mib * PER; /* ints */
    size_t bytes = n * sizeof(int);
    long avail = mem_available_mib();
    /* about 2 buffers per rank (data + scratch) + 1 more at the root, plus one of margin */
    int skip = me == 0 && avail >= 0 && avail < mib * (2L * p + 2);
    MPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (skip) {
        if (me == 0)
            printf("bigcount: SKIP: MemAvailable %ld MiB < %ld MiB needed for count %ld MiB at p=%d\n",
                   avail, mib * (2L * p + 2), mib, p);
        MPI_Finalize();
        return 0;
    }
    if (me == 0)
        printf("bigcount: p=%d, %ld MiB per buffer = %zu bytes (2^31 = 2147483648), MemAvailable %ld MiB\n",
               p, mib, bytes, avail);
    int *a = malloc(bytes);
    if (!a) {
        printf("bigcount: rank %d: cannot allocate %zu bytes\n", me, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Datatype mib_t;
    MPI_Type_contiguous((int)PER, MPI_INT, &mib_t);
    MPI_Type_commit(&mib_t);
    MPI_Op usum;
    MPI_Op_create(isum, 1, &usum);
    int failures = 0, root = p - 1;
    for (int variant = 0; variant < 2; variant++) {
        MPI_Datatype t = variant == 0 ? mib_t : MPI_INT;
        int count = variant == 0 ? (int)mib : (int)n;
        MPI_Op op = variant == 0 ? usum : MPI_SUM;
        const char *name = variant == 0 ? "1MiB-contiguous(MPI_INT) user-sum" : "MPI_INT MPI_SUM";
        /* allreduce, in place */
        fill(a, n, me);
        double t0 = MPI_Wtime();
        int rc = MPI_Allreduce(MPI_IN_PLACE, a, count, t, op, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        size_t first = 0, bad = rc == MPI_SUCCESS ? check(a, n, p, &first) : n;
        size_t allbad = 0;
        MPI_Allreduce(&bad, &allbad, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (bad) printf("bigcount: rank %d: allreduce %s: rc=%d, %zu wrong elements, first at int %zu (byte %zu)\n",
                        me, name, rc, bad, first, first * 4);
        if (me == 0) printf("bigcount: allreduce %s count=%d in place: %s (%.1f s)\n", name, count, allbad ? "WRONG" : "ok", dt);
        failures += allbad != 0;
        /* reduce, out of place, to the last rank */
        fill(a, n, me);
        int *r = NULL;
        if (me == root) {
            r = malloc(bytes);
            if (!r) { printf("bigcount: cannot allocate the receive buffer\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
            memset(r, 0xEE, bytes);
        }
        t0 = MPI_Wtime();
        rc = MPI_Reduce(a, r, count, t, op, root, MPI_COMM_WORLD);
        dt = MPI_Wtime() - t0;
        bad = 0;
        if (rc != MPI_SUCCESS) bad = n;
        else if (me == root) bad = check(r, n, p, &first);
        /* the send buffer must be unchanged */
        for (size_t j = 0; j < n && rc == MPI_SUCCESS; j++)
            if (a[j] != (int)(j % 65521) + 3 * me) { bad++; first = j; break; }
        MPI_Allreduce(&bad, &allbad, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (bad) printf("bigcount: rank %d: reduce %s: rc=%d, %zu wrong elements, first at int %zu (byte %zu)\n",
                        me, name, rc, bad, first, first * 4);
        if (me == 0) printf("bigcount: reduce %s count=%d root=%d: %s (%.1f s)\n", name, count, root, allbad ? "WRONG" : "ok", dt);
        failures += allbad != 0;
        free(r);
    }
    /* bcast from rank 0, which describes the data as MPI_INT while the others use a 28-byte
     * contiguous type (equal signatures; session 52: split at different bytes, or with a
     * root's count beyond an int sent it to the MPI alone) */
    size_t m = n - n % 7;
    MPI_Datatype seven;
    MPI_Type_contiguous(7, MPI_INT, &seven);
    MPI_Type_commit(&seven);
    if (me == 0) fill(a, m, 0);
    else memset(a, 0xEE, m * sizeof(int));
    double t0 = MPI_Wtime();
    int rc = me == 0 ? MPI_Bcast(a, (int)m, MPI_INT, 0, MPI_COMM_WORLD)
                     : MPI_Bcast(a, (int)(m / 7), seven, 0, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0;
    size_t bad = rc == MPI_SUCCESS ? 0 : m, allbad = 0;
    for (size_t j = 0; j < m && !bad; j++)
        if (a[j] != (int)(j % 65521)) bad = 1 + j;
    MPI_Allreduce(&bad, &allbad, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (bad) printf("bigcount: rank %d: bcast: rc=%d, first wrong int %zu\n", me, rc, bad - 1);
    if (me == 0) printf("bigcount: bcast MPI_INT x %zu / 28-byte type x %zu: %s (%.1f s)\n", m, m / 7, allbad ? "WRONG" : "ok", dt);
    failures += allbad != 0;
    MPI_Type_free(&seven);
    free(a);
    MPI_Type_free(&mib_t);
    MPI_Op_free(&usum);
    if (me == 0) printf("bigcount: %s\n", failures ? "FAIL" : "PASS");
    MPI_Finalize();
    return failures ? 1 : 0;
}
