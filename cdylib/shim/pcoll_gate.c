/* The native gate: the first thing pcoll's C entry points of MPI_Reduce, MPI_Allreduce,
 * MPI_Reduce_scatter and MPI_Allgatherv do. When the call goes to the MPI's own collective
 * anyway (the tuning table, or PCOLL_<COLL>, says `native` for this communicator size and
 * message size) and its arguments are plain, the gate makes the PMPI call itself, without
 * entering pcoll's Rust code: that costs a few PMPI queries instead of the full decision
 * (~350 instructions and the cache footprint of the Rust path; +50 ns on an 8-byte
 * allgatherv at p = 2 against +0-15 ns for a plain C wrapper).
 *
 * The gate only ever declines (PCOLL_GATE_DECLINED) or forwards; everything it is unsure of
 * (bad or unusual arguments, MPI_IN_PLACE in a reduce, NULL buffers, intercommunicators,
 * calls that may match a native defect pcoll routes around, communicators of more than
 * PCOLL_GATE_P ranks or of a size not yet published, a blocking call on a communicator where a
 * non-blocking call wanted something made (pcoll_want.c), PCOLL_STATS=1 timing,
 * PCOLL_DISABLE) is declined, and the Rust path decides. Both the native byte ranges per (collective, p) and
 * the defect guards per collective are published by the Rust code (src/gate.rs of pcoll-mpi)
 * from its resolver and its one list of defects (pcoll::decide::defects); this file has no
 * decision rule of its own. pcoll_gate_abi() (pcoll_shim.c) lets a Rust test check the shared
 * constants. */
#include <mpi.h>
#include "pcoll_gate.h"

/* The nine pairs of lines of the fast path, in one page (aligned: 9 x 256 bytes never
 * straddle two). */
struct gate_hot pcoll_hot[G_NHOT] __attribute__((aligned(4096))) = {
    [G_REDUCE] = {.fwd = (void (*)(void))PMPI_Reduce},
    [G_ALLREDUCE] = {.fwd = (void (*)(void))PMPI_Allreduce},
    [G_REDUCE_SCATTER] = {.fwd = (void (*)(void))PMPI_Reduce_scatter},
    [G_ALLGATHERV] = {.fwd = (void (*)(void))PMPI_Allgatherv},
    [G_BCAST] = {.fwd = (void (*)(void))PMPI_Bcast},
    [G_ALLGATHER] = {.fwd = (void (*)(void))PMPI_Allgather},
    [G_REDUCE_SCATTER_BLOCK] = {.fwd = (void (*)(void))PMPI_Reduce_scatter_block},
};

/* PCOLL_DISABLE=1: every blocking call of the seven goes straight to the MPI from its gate
 * function (set by the Rust path at the first call it sees disabled; before, each call entered
 * Rust to read the flag: 30-40 ns a call, where a forwarded call costs 3-16). */
static unsigned char passthrough;

void pcoll_gate_passthrough(void) { __atomic_store_n(&passthrough, 1, __ATOMIC_RELEASE); }

#define PASS (__builtin_expect(__atomic_load_n(&passthrough, __ATOMIC_RELAXED), 0))

void pcoll_gate_guard(int coll, unsigned flags, unsigned long long root_above)
{
    if (coll < 0 || coll >= G_NCOLL)
        return;
    pcoll_gate_memo_clear();
    pcoll_hot[coll].flags = flags;
    pcoll_hot[coll].root_above = root_above;
}

extern int pcoll_c_logical_op_on_float(MPI_Op op, MPI_Datatype dt);
extern int pcoll_c_op_is_predefined(MPI_Op op);
extern int pcoll_c_type_is_named(MPI_Datatype dt);

/* 1 if a guard of `coll` holds for the call (decline it). The one-rank guard is
 * allgatherv_native's own. */
HOT int guarded(int coll, int root, unsigned long long bytes, int tlb_nz, MPI_Op op, const void *sendbuf)
{
    unsigned f = pcoll_hot[coll].flags;
    if (!f)
        return 0;
    if ((f & PCOLL_GUARD_ROOT_NONZERO_ABOVE) && root > 0 && bytes > pcoll_hot[coll].root_above)
        return 1;
    if ((f & PCOLL_GUARD_TRUE_LB) && tlb_nz)
        return 1;
    if ((f & PCOLL_GUARD_USER_OP) && !pcoll_c_op_is_predefined(op))
        return 1;
    if ((f & PCOLL_GUARD_IN_PLACE) && sendbuf == MPI_IN_PLACE)
        return 1;
    return 0;
}

struct gate_cell {
    int n; /* ranges in use; 0: never native */
    struct {
        unsigned long long lo, hi; /* native iff lo <= bytes < hi */
    } r[PCOLL_GATE_R];             /* the first three share the line of n */
} __attribute__((aligned(64)));

static struct gate_cell gate[G_NCOLL][PCOLL_GATE_P + 1];
/* The same for the non-blocking forms (MPI_Ireduce, MPI_Iallreduce: pcoll_gate_reduce_like),
 * whose decisions may differ (table rules with form = "nonblocking"). */
static struct gate_cell gate_nb[G_NCOLL][PCOLL_GATE_P + 1];

/* Run-time forcing (pcoll_force, pcoll-bench's variants) per collective, one byte so that
 * switching costs a store, not a republication of the cells: PCOLL_MODE_CELLS the published
 * cells decide; PCOLL_MODE_NATIVE every plain call goes native (forced `native`, of every
 * size and p); PCOLL_MODE_DECLINE every call is declined (another algorithm or `model` was
 * forced: the Rust path decides). */

void pcoll_gate_mode(int coll, int mode)
{
    if (coll < 0 || coll >= G_NCOLL || mode < PCOLL_MODE_CELLS || mode > PCOLL_MODE_DECLINE)
        return;
    __atomic_store_n(&pcoll_hot[coll].mode, (unsigned char)mode, __ATOMIC_RELEASE);
    __atomic_store_n(&pcoll_hot[memo_line(coll, 1)].mode, (unsigned char)mode, __ATOMIC_RELEASE);
    pcoll_gate_memo_clear();
}

void pcoll_gate_close(void)
{
    for (int c = 0; c < G_NHOT; c++)
        __atomic_store_n(&pcoll_hot[c].open, 0, __ATOMIC_SEQ_CST);
    pcoll_gate_memo_clear();
}

/* While one of pcoll's non-blocking schedules runs every call is declined (held = 1): a
 * blocking collective then reaches the Rust path, which completes the schedules running on its
 * communicator before it blocks (nbc::before_blocking). */
void pcoll_gate_hold(int held)
{
    for (int c = 0; c < G_NHOT; c++)
        __atomic_store_n(&pcoll_hot[c].held, (unsigned char)(held != 0), __ATOMIC_SEQ_CST);
}

void pcoll_gate_open(void)
{
    pcoll_gate_memo_clear();
    for (int c = 0; c < G_NHOT; c++)
        __atomic_store_n(&pcoll_hot[c].open, 1, __ATOMIC_RELEASE);
}

/* Calls and bytes the gate forwarded for `coll` (read by the Rust stats). Bumped with a
 * relaxed load and store, not a locked add: exact for one thread, may miss counts when
 * several threads run collectives at the same moment. */
void pcoll_gate_counts(int coll, unsigned long long *calls, unsigned long long *bytes)
{
    if (coll < 0 || coll >= G_NCOLL)
        return;
    *calls = __atomic_load_n(&pcoll_hot[coll].calls, __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&pcoll_hot[coll].bytes, __ATOMIC_RELAXED);
}

/* Zero the counts of `coll`. */
void pcoll_gate_reset_counts(int coll)
{
    if (coll < 0 || coll >= G_NCOLL)
        return;
    __atomic_store_n(&pcoll_hot[coll].calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pcoll_hot[coll].bytes, 0, __ATOMIC_RELAXED);
}

/* Whether the last call of `coll` went through the gate (pcoll_last_algorithm). */
int pcoll_gate_hit(int coll)
{
    if (coll < 0 || coll >= G_NCOLL)
        return 0;
    return __atomic_load_n(&pcoll_hot[coll].hit, __ATOMIC_RELAXED);
}

/* The Rust path took the last call of `coll`. */
void pcoll_gate_clear_hit(int coll)
{
    if (coll < 0 || coll >= G_NCOLL)
        return;
    if (__atomic_load_n(&pcoll_hot[coll].hit, __ATOMIC_RELAXED))
        __atomic_store_n(&pcoll_hot[coll].hit, 0, __ATOMIC_RELAXED);
}

/* Ranges of bytes (half-open) for which `coll` at `p` ranks goes native; more than
 * PCOLL_GATE_R ranges, or p out of range: the gate declines that cell. A cell may be written
 * while other threads read it (a size published for the first time): the count goes to 0
 * first and is set last, with release/acquire, so a reader sees no range or complete ones. */
/* Write one cell: no range first, then the ranges, then their number. */
static void cell_write(struct gate_cell *c, int n, const unsigned long long *lo, const unsigned long long *hi)
{
    if (n < 0 || n > PCOLL_GATE_R)
        n = 0;
    __atomic_store_n(&c->n, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++) {
        c->r[i].lo = lo[i];
        c->r[i].hi = hi[i];
    }
    __atomic_store_n(&c->n, n, __ATOMIC_RELEASE);
}

void pcoll_gate_set(int coll, int p, int n, const unsigned long long *lo, const unsigned long long *hi)
{
    if (coll < 0 || coll >= G_NCOLL || p < 1 || p > PCOLL_GATE_P)
        return;
    pcoll_gate_memo_clear();
    cell_write(&gate[coll][p], n, lo, hi);
}

void pcoll_gate_set_nb(int coll, int p, int n, const unsigned long long *lo, const unsigned long long *hi)
{
    if (coll < 0 || coll >= G_NCOLL || p < 1 || p > PCOLL_GATE_P)
        return;
    cell_write(&gate_nb[coll][p], n, lo, hi);
}

/* `nb` == KEEP in the *_native functions below: a blocking call the Rust path sent to native
 * for good (its raced cell settled native; pcoll_gate_keep), checked as a call the gate
 * forwards and kept in the memo with this thread's `keeping` instead of counted. */
#define KEEP 2
static __thread struct { unsigned gen; unsigned long long *tally, limit; } keeping;

/* Does (coll, p, bytes) go native: the blocking cells, or the non-blocking ones (`nb`). */
HOT int native_at(int coll, int p, unsigned long long bytes, int nb)
{
    int mode = __atomic_load_n(&pcoll_hot[coll].mode, __ATOMIC_ACQUIRE);
    if (nb == KEEP) /* decided native by the Rust path; a memo is read in this mode only */
        return mode == PCOLL_MODE_CELLS;
    if (mode != PCOLL_MODE_CELLS)
        return mode == PCOLL_MODE_NATIVE;
    const struct gate_cell *c = nb ? &gate_nb[coll][p] : &gate[coll][p];
    int n = __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (c->r[i].lo <= bytes && bytes < c->r[i].hi)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ caches
 * The PMPI queries a forwarded call needs (communicator size and kind, type size and true
 * lower bound) cost more than the rest of the gate; their answers are kept here:
 * - communicators: direct-mapped by handle. An entry is added with an attribute whose delete
 *   callback (MPI_Comm_free, MPI_Finalize) removes it, so a handle reused for another
 *   communicator never finds an old entry.
 * - datatypes: only named (predefined) ones, which are never freed.
 * Entries are written as: key = 0 (empty), value, key; a reader takes the key, the value and
 * the key again, and uses the value only if both keys are its handle (else: a miss, and the
 * PMPI query). */
#define CACHE_N 64 /* power of two */

struct comm_entry {
    MPI_Comm key;
    int size; /* intracommunicator size; 0: do not gate */
    int rank;
    int used;
};
struct type_entry {
    MPI_Datatype key;
    long long size;
    long long true_lb;
    int used;
};
static struct comm_entry comm_cache[CACHE_N];
static struct type_entry type_cache[CACHE_N];
static int comm_keyval = MPI_KEYVAL_INVALID;

HOT unsigned slot_of(const void *h, size_t n)
{
    unsigned long long x = 0;
    __builtin_memcpy(&x, h, n < sizeof x ? n : sizeof x);
    x ^= x >> 17;
    x *= 0x9e3779b97f4a7c15ull;
    return (unsigned)(x >> 58) & (CACHE_N - 1);
}


static int comm_forget(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)keyval;
    (void)attr;
    (void)extra;
    struct comm_entry *e = &comm_cache[slot_of(&comm, sizeof comm)];
    if (__atomic_load_n(&e->used, __ATOMIC_ACQUIRE) && same_comm(e->key, comm))
        __atomic_store_n(&e->used, 0, __ATOMIC_RELEASE);
    pcoll_gate_memo_clear();
    return MPI_SUCCESS;
}


COLD int small_intra_miss(MPI_Comm comm, struct comm_entry *e, int *rank);
COLD long long type_size_miss(MPI_Datatype dt, struct type_entry *e, int *tlb_nz);

/* Size of an intracommunicator of at most PCOLL_GATE_P ranks (and this process's rank in
 * it), else 0. */
HOT int small_intra(int coll, MPI_Comm comm, int *rank)
{
    if (!__atomic_load_n(&pcoll_hot[coll].open, __ATOMIC_ACQUIRE) || __atomic_load_n(&pcoll_hot[coll].held, __ATOMIC_ACQUIRE) ||
        comm == MPI_COMM_NULL)
        return 0;
    struct comm_entry *e = &comm_cache[slot_of(&comm, sizeof comm)];
    if (__atomic_load_n(&e->used, __ATOMIC_ACQUIRE) && same_comm(e->key, comm)) {
        int size = e->size, r = e->rank;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->used, __ATOMIC_RELAXED) && same_comm(e->key, comm)) {
            *rank = r;
            return size;
        }
    }
    return small_intra_miss(comm, e, rank);
}

COLD int small_intra_miss(MPI_Comm comm, struct comm_entry *e, int *rank)
{
    int inter = 1, p = 0, r = -1;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || PMPI_Comm_size(comm, &p) != MPI_SUCCESS ||
        PMPI_Comm_rank(comm, &r) != MPI_SUCCESS)
        return 0;
    *rank = r;
    int size = (!inter && p >= 1 && p <= PCOLL_GATE_P) ? p : 0;
    /* Remember it (one attribute per communicator, for the delete callback). */
    if (comm_keyval == MPI_KEYVAL_INVALID) {
        int kv = MPI_KEYVAL_INVALID;
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_forget, &kv, NULL) != MPI_SUCCESS)
            return size;
        comm_keyval = kv;
    }
    if (PMPI_Comm_set_attr(comm, comm_keyval, NULL) == MPI_SUCCESS) {
        __atomic_store_n(&e->used, 0, __ATOMIC_RELEASE);
        e->key = comm;
        e->size = size;
        e->rank = r;
        __atomic_store_n(&e->used, 1, __ATOMIC_RELEASE);
    }
    return size;
}

/* Size of a datatype (and whether its true lower bound is not 0), or -1. */
HOT long long type_size(MPI_Datatype dt, int *tlb_nz)
{
    if (dt == MPI_DATATYPE_NULL)
        return -1;
    struct type_entry *e = &type_cache[slot_of(&dt, sizeof dt)];
    if (__atomic_load_n(&e->used, __ATOMIC_ACQUIRE) && same_type(e->key, dt)) {
        long long size = e->size, lb = e->true_lb;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->used, __ATOMIC_RELAXED) && same_type(e->key, dt)) {
            *tlb_nz = lb != 0;
            return size;
        }
    }
    return type_size_miss(dt, e, tlb_nz);
}

COLD long long type_size_miss(MPI_Datatype dt, struct type_entry *e, int *tlb_nz)
{
    MPI_Count s = -1;
    MPI_Aint tlb = 0, text = 0;
    /* MPI_DATATYPE_NULL is not asked about: the query's error would go to MPI_COMM_WORLD's
     * handler (fatal by default), where the MPI's collective reports MPI_ERR_TYPE to the
     * communicator's. */
    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size_x(dt, &s) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &text) != MPI_SUCCESS)
        return -1;
    *tlb_nz = tlb != 0;
    if (s >= 0 && pcoll_c_type_is_named(dt)) {
        __atomic_store_n(&e->used, 0, __ATOMIC_RELEASE);
        e->key = dt;
        e->size = (long long)s;
        e->true_lb = (long long)tlb;
        __atomic_store_n(&e->used, 1, __ATOMIC_RELEASE);
    }
    return (long long)s;
}


/* A memo is kept only for a communicator held in comm_cache (so its delete callback clears
 * the memos) and a named datatype (never freed): pcoll_memo.c. */
HOT int memo_cached(const struct memo_key *k)
{
    struct comm_entry *ce = &comm_cache[slot_of(&k->comm, sizeof k->comm)];
    struct type_entry *te = &type_cache[slot_of(&k->dt, sizeof k->dt)];
    return __atomic_load_n(&ce->used, __ATOMIC_ACQUIRE) && same_comm(ce->key, k->comm) &&
           __atomic_load_n(&te->used, __ATOMIC_ACQUIRE) && same_type(te->key, k->dt);
}

HOT unsigned memo_begin(void) { return __atomic_load_n(&pcoll_memo_gen, __ATOMIC_ACQUIRE); }

/* A call the gate sends to native: the blocking form is counted and kept in the memo (key
 * `k`, this process's `rank`), the non-blocking one (`nb`) neither; returns 1. KEEP: kept
 * with its cell's tally; returns 1 if the memo now holds it. */
HOT int going_native(int coll, const struct memo_key *k, int rank, int p, unsigned long long bytes, unsigned gen,
                     int nb)
{
    if (nb == KEEP)
        return memo_cached(k) && pcoll_memo_store(coll, k, rank, p, bytes, keeping.gen, keeping.tally, keeping.limit);
    if (!nb) {
        counted(coll, bytes);
        if (memo_cached(k))
            pcoll_memo_store(coll, k, rank, p, bytes, gen, NULL, 0);
    }
    return 1;
}

/* A plain reduce or allreduce (root < 0: allreduce) the gate may forward, before its cells
 * are read: its size `*p`, `*bytes`, this process's `*rank`. */
HOT int plain_reduce_like(int coll, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                          int root, MPI_Comm comm, int *p, unsigned long long *bytes, int *rank)
{
    int tlb_nz = 0;
    long long size;
    *rank = -1;
    *p = small_intra(coll, comm, rank);
    if (!*p || count < 0 || (size = type_size(dt, &tlb_nz)) < 0 || op == MPI_OP_NULL)
        return 0;
    /* In place (only the root may pass it to a reduce): pcoll decides. */
    if (coll == G_REDUCE && sendbuf == MPI_IN_PLACE)
        return 0;
#if !(defined(OPEN_MPI) && OPEN_MPI)
    /* MPICH 4.0.2 aborts on logical ops on floating types. */
    if (pcoll_c_logical_op_on_float(op, dt))
        return 0;
#endif
    *bytes = (unsigned long long)count * (unsigned long long)size;
    if (count > 0 && (sendbuf == NULL || ((coll != G_REDUCE || *rank == root) && recvbuf == NULL)))
        return 0;
    return !guarded(coll, root, *bytes, tlb_nz, op, sendbuf);
}

/* Reduce and allreduce (root < 0: allreduce): 1 if the call goes native here (counted; `nb`:
 * the non-blocking form, by its own cells, neither counted nor kept in the memo). */
HOT int reduce_like(int coll, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       int root, MPI_Comm comm, int nb)
{
    struct memo_key k = {comm, dt, op, count, root, sendbuf == MPI_IN_PLACE};
    unsigned gen = memo_begin();
    int p, rank;
    unsigned long long bytes;
    if (!plain_reduce_like(coll, sendbuf, recvbuf, count, dt, op, root, comm, &p, &bytes, &rank) ||
        !native_at(coll, p, bytes, nb))
        return 0;
    return going_native(coll, &k, rank, p, bytes, gen, nb);
}


int pcoll_gate_nb_reduce_like(int coll, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                              int root, MPI_Comm comm)
{
    if (coll != G_REDUCE && coll != G_ALLREDUCE)
        return 0;
    return reduce_like(coll, sendbuf, recvbuf, count, dt, op, coll == G_ALLREDUCE ? -1 : root, comm, 1);
}

int pcoll_gate_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                      MPI_Comm comm)
{
    if (!(PASS || (!WANTED(comm) && reduce_like(G_REDUCE, sendbuf, recvbuf, count, dt, op, root, comm, 0))))
        return PCOLL_GATE_DECLINED;
    return PMPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm);
}

int pcoll_gate_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    if (!(PASS || (!WANTED(comm) && reduce_like(G_ALLREDUCE, sendbuf, recvbuf, count, dt, op, -1, comm, 0))))
        return PCOLL_GATE_DECLINED;
    return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
}

/* The five others, as reduce_like: 1 if the call goes native here (counted and kept in the
 * memo for the blocking form; `nb`: the non-blocking form, by its own cells, neither). */
HOT int reduce_scatter_native(const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Datatype dt,
                                     MPI_Op op, MPI_Comm comm, int nb)
{
    struct memo_key k = {comm, dt, op, -1, -1, sendbuf == MPI_IN_PLACE};
    unsigned gen = memo_begin();
    int rank, p = small_intra(G_REDUCE_SCATTER, comm, &rank), tlb_nz = 0;
    long long size, elems;
    if (!p || op == MPI_OP_NULL || (size = type_size(dt, &tlb_nz)) < 0 || (elems = sum_counts(recvcounts, p)) < 0)
        return 0;
    if (elems > 0 && (sendbuf == NULL || recvbuf == NULL))
        return 0;
#if !(defined(OPEN_MPI) && OPEN_MPI)
    /* MPICH 4.0.2 aborts on logical ops on floating types (bad input: pcoll reports it). */
    if (pcoll_c_logical_op_on_float(op, dt))
        return 0;
#endif
    unsigned long long bytes = (unsigned long long)elems * (unsigned long long)size;
    if (guarded(G_REDUCE_SCATTER, 0, bytes, tlb_nz, op, sendbuf) || !native_at(G_REDUCE_SCATTER, p, bytes, nb))
        return 0;
    k.n = elems;
    return going_native(G_REDUCE_SCATTER, &k, rank, p, bytes, gen, nb);
}

int pcoll_gate_reduce_scatter(const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm)
{
    if (!(PASS || (!WANTED(comm) && reduce_scatter_native(sendbuf, recvbuf, recvcounts, dt, op, comm, 0))))
        return PCOLL_GATE_DECLINED;
    return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm);
}

int pcoll_gate_nb_reduce_scatter(const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Datatype dt,
                                 MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_native(sendbuf, recvbuf, recvcounts, dt, op, comm, 1);
}

/* `displs` NULL: not known (the non-blocking form's and a kept call's). */
HOT int allgatherv_native(const void *sendbuf, int sendcount, void *recvbuf, const int *recvcounts,
                          const int *displs, MPI_Datatype recvtype, MPI_Comm comm, int nb)
{
    struct memo_key k = {comm, recvtype, MPI_OP_NULL, -1, -1, sendbuf == MPI_IN_PLACE};
    unsigned gen = memo_begin();
    int rank, p = small_intra(G_ALLGATHERV, comm, &rank), tlb_nz = 0;
    long long size, elems;
    if (!p || (size = type_size(recvtype, &tlb_nz)) < 0 || (elems = sum_counts(recvcounts, p)) < 0)
        return 0;
    if (sendbuf != MPI_IN_PLACE && sendcount < 0)
        return 0;
    if (elems > 0 && (sendbuf == NULL || recvbuf == NULL))
        return 0;
    unsigned long long bytes = (unsigned long long)elems * (unsigned long long)size;
    if (guarded(G_ALLGATHERV, 0, bytes, tlb_nz, MPI_OP_NULL, sendbuf) || !native_at(G_ALLGATHERV, p, bytes, nb))
        return 0;
    if (p == 1 && one_rank_declined(sendbuf, recvcounts, displs))
        return 0;
    k.n = elems;
    return going_native(G_ALLGATHERV, &k, rank, p, bytes, gen, nb);
}

int pcoll_gate_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int *recvcounts, const int *displs, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!(PASS ||
          (!WANTED(comm) && allgatherv_native(sendbuf, sendcount, recvbuf, recvcounts, displs, recvtype, comm, 0))))
        return PCOLL_GATE_DECLINED;
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int pcoll_gate_nb_allgatherv(const void *sendbuf, int sendcount, void *recvbuf, const int *recvcounts,
                             MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgatherv_native(sendbuf, sendcount, recvbuf, recvcounts, NULL, recvtype, comm, 1);
}

HOT int bcast_native(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, int nb)
{
    struct memo_key k = {comm, dt, MPI_OP_NULL, count, root, buf == MPI_IN_PLACE};
    unsigned gen = memo_begin();
    int rank, p = small_intra(G_BCAST, comm, &rank), tlb_nz = 0;
    long long size;
    if (!p || count < 0 || root < 0 || root >= p || (size = type_size(dt, &tlb_nz)) < 0)
        return 0;
    if (count > 0 && buf == NULL)
        return 0;
    unsigned long long bytes = (unsigned long long)count * (unsigned long long)size;
    if (guarded(G_BCAST, root, bytes, tlb_nz, MPI_OP_NULL, buf) || !native_at(G_BCAST, p, bytes, nb))
        return 0;
    return going_native(G_BCAST, &k, rank, p, bytes, gen, nb);
}

int pcoll_gate_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (!(PASS || (!WANTED(comm) && bcast_native(buf, count, dt, root, comm, 0))))
        return PCOLL_GATE_DECLINED;
    return PMPI_Bcast(buf, count, dt, root, comm);
}

int pcoll_gate_nb_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    return bcast_native(buf, count, dt, root, comm, 1);
}

HOT int allgather_native(const void *sendbuf, int sendcount, void *recvbuf, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm, int nb)
{
    struct memo_key k = {comm, recvtype, MPI_OP_NULL, recvcount, -1, sendbuf == MPI_IN_PLACE};
    unsigned gen = memo_begin();
    int rank, p = small_intra(G_ALLGATHER, comm, &rank), tlb_nz = 0;
    long long size;
    if (!p || recvcount < 0 || (size = type_size(recvtype, &tlb_nz)) < 0)
        return 0;
    if (sendbuf != MPI_IN_PLACE && sendcount < 0)
        return 0;
    if (recvcount > 0 && (sendbuf == NULL || recvbuf == NULL))
        return 0;
    unsigned long long bytes = (unsigned long long)recvcount * (unsigned long long)p * (unsigned long long)size;
    if (guarded(G_ALLGATHER, 0, bytes, tlb_nz, MPI_OP_NULL, sendbuf) || !native_at(G_ALLGATHER, p, bytes, nb))
        return 0;
    return going_native(G_ALLGATHER, &k, rank, p, bytes, gen, nb);
}

int pcoll_gate_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!(PASS || (!WANTED(comm) && allgather_native(sendbuf, sendcount, recvbuf, recvcount, recvtype, comm, 0))))
        return PCOLL_GATE_DECLINED;
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int pcoll_gate_nb_allgather(const void *sendbuf, int sendcount, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather_native(sendbuf, sendcount, recvbuf, recvcount, recvtype, comm, 1);
}

HOT int reduce_scatter_block_native(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                                           MPI_Op op, MPI_Comm comm, int nb)
{
    struct memo_key k = {comm, dt, op, recvcount, -1, sendbuf == MPI_IN_PLACE};
    unsigned gen = memo_begin();
    int rank, p = small_intra(G_REDUCE_SCATTER_BLOCK, comm, &rank), tlb_nz = 0;
    long long size;
    if (!p || recvcount < 0 || op == MPI_OP_NULL || (size = type_size(dt, &tlb_nz)) < 0)
        return 0;
    if (recvcount > 0 && (sendbuf == NULL || recvbuf == NULL))
        return 0;
#if !(defined(OPEN_MPI) && OPEN_MPI)
    /* MPICH 4.0.2 aborts on logical ops on floating types (bad input: pcoll reports it). */
    if (pcoll_c_logical_op_on_float(op, dt))
        return 0;
#endif
    unsigned long long bytes = (unsigned long long)recvcount * (unsigned long long)p * (unsigned long long)size;
    if (guarded(G_REDUCE_SCATTER_BLOCK, 0, bytes, tlb_nz, op, sendbuf) ||
        !native_at(G_REDUCE_SCATTER_BLOCK, p, bytes, nb))
        return 0;
    return going_native(G_REDUCE_SCATTER_BLOCK, &k, rank, p, bytes, gen, nb);
}

int pcoll_gate_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt, MPI_Op op,
                                    MPI_Comm comm)
{
    if (!(PASS || (!WANTED(comm) && reduce_scatter_block_native(sendbuf, recvbuf, recvcount, dt, op, comm, 0))))
        return PCOLL_GATE_DECLINED;
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm);
}

int pcoll_gate_nb_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                                       MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_block_native(sendbuf, recvbuf, recvcount, dt, op, comm, 1);
}

int pcoll_gate_keep(int coll, const void *sendbuf, int sendcount, void *recvbuf, const int *counts, int count,
                    MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, unsigned gen, unsigned long long *tally,
                    unsigned long long limit)
{
    keeping.gen = gen, keeping.tally = tally, keeping.limit = limit;
    if (coll == G_REDUCE || coll == G_ALLREDUCE)
        return reduce_like(coll, sendbuf, recvbuf, count, dt, op, coll == G_ALLREDUCE ? -1 : root, comm, KEEP);
    if (coll == G_REDUCE_SCATTER)
        return reduce_scatter_native(sendbuf, recvbuf, counts, dt, op, comm, KEEP);
    if (coll == G_ALLGATHERV)
        return allgatherv_native(sendbuf, sendcount, recvbuf, counts, NULL, dt, comm, KEEP);
    if (coll == G_BCAST)
        return bcast_native(recvbuf, count, dt, root, comm, KEEP);
    if (coll == G_ALLGATHER)
        return allgather_native(sendbuf, sendcount, recvbuf, count, dt, comm, KEEP);
    if (coll == G_REDUCE_SCATTER_BLOCK)
        return reduce_scatter_block_native(sendbuf, recvbuf, count, dt, op, comm, KEEP);
    return 0;
}
