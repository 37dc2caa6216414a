/* The C entry points of the seven collectives (MPI_Reduce, MPI_Bcast, ... are two-byte jumps
 * to these: cdylib/src/ffi/entry.rs). A call that repeats the last forwarded call of its
 * collective (the memo, pcoll_gate.h) goes straight to the MPI's own collective; any other
 * call takes the miss path: the one before it (the older memo), then the full gate
 * (pcoll_gate.c) and, when that declines, pcoll's Rust path (pcoll_rs_<coll>,
 * cdylib/src/ffi/c.rs and family.rs).
 *
 * Why here and laid out so: a forwarded call runs with pcoll's code and data cold (after a
 * barrier, another collective, a context switch), and what it costs is the pages and lines it
 * touches, not its instructions. Measured with MPICH at p = 2, an 8-byte MPI_Bcast after a
 * barrier: a plain C wrapper adds 0-10 ns; pcoll's earlier path (a Rust function, the gate
 * through the GOT, PMPI_Bcast through the PLT: six pages) added 110 ns; a wrapper touching
 * eight pages of its own adds 50-80 ns. Here the hit path touches this section's page (the
 * jumps and these functions: ".text.hot.*", kept together by -z keep-text-section-prefix) and
 * the page of pcoll_hot, and calls the MPI through the pointer that page holds. */
#include "pcoll_gate.h"

/* No frame pointer: the entries tail-call the MPI or the miss path, and the hit path is
 * measured in lines of code (memo_hit). */
#define ENTRY __attribute__((section(".text.hot.pcoll"), visibility("hidden"), optimize("omit-frame-pointer")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FWD(coll, type) ((type)pcoll_hot[coll].fwd)

typedef int (*reduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
typedef int (*vreduce_fn)(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm);
typedef int (*allgatherv_fn)(const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype,
                             MPI_Comm);
typedef int (*bcast_fn)(void *, int, MPI_Datatype, int, MPI_Comm);
typedef int (*allgather_fn)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);

/* The older memo's check per collective (the miss path's first step), with the entry's
 * arguments. A vector call's counts are summed over that memo's communicator size. */
HOT int older_vector_key(int coll, struct memo_key *k, const int *counts)
{
    int mp = memo_p(coll, k->comm, 1);
    k->n = mp ? sum_counts(counts, mp) : -1;
    return k->n >= 0;
}
HOT int older_reduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, op, n, root, s == MPI_IN_PLACE};
    return memo_hit_older(G_REDUCE, &k, s, r);
}
HOT int older_allreduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, op, n, -1, s == MPI_IN_PLACE};
    return memo_hit_older(G_ALLREDUCE, &k, s, r);
}
HOT int older_reduce_scatter(const void *s, void *r, const int *counts, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, op, -1, -1, s == MPI_IN_PLACE};
    return older_vector_key(G_REDUCE_SCATTER, &k, counts) && memo_hit_older(G_REDUCE_SCATTER, &k, s, r);
}
HOT int older_allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *counts, const int *displs,
                         MPI_Datatype rt, MPI_Comm comm)
{
    (void)st;
    struct memo_key k = {comm, rt, MPI_OP_NULL, -1, -1, s == MPI_IN_PLACE};
    /* The key has no displacements: a one-rank call the guard declines never repeats a memo. */
    return (s == MPI_IN_PLACE || sn >= 0) && older_vector_key(G_ALLGATHERV, &k, counts) &&
           !(k.n >= 0 && memo_p(G_ALLGATHERV, comm, 1) == 1 && one_rank_declined(s, counts, displs)) &&
           memo_hit_older(G_ALLGATHERV, &k, s, r);
}
HOT int older_bcast(void *b, int n, MPI_Datatype dt, int root, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, MPI_OP_NULL, n, root, b == MPI_IN_PLACE};
    return memo_hit_older(G_BCAST, &k, b, b);
}
HOT int older_allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm)
{
    (void)st;
    struct memo_key k = {comm, rt, MPI_OP_NULL, rn, -1, s == MPI_IN_PLACE};
    return (k.in_place || sn >= 0) && memo_hit_older(G_ALLGATHER, &k, s, r);
}
HOT int older_reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, op, n, -1, s == MPI_IN_PLACE};
    return memo_hit_older(G_REDUCE_SCATTER_BLOCK, &k, s, r);
}

/* Not a repeat of the last call: the older memo, the full gate, and pcoll's Rust path when
 * that declines (out of the entries' section: a hit never touches it). */
#define MISS(name, coll, fn, params, args)                                                                         \
    extern int pcoll_rs_##name params;                                                                             \
    static __attribute__((noinline)) int name##_miss params                                                        \
    {                                                                                                              \
        if (older_##name args)                                                                                     \
            return FWD(coll, fn) args;                                                                             \
        int rc = pcoll_gate_##name args;                                                                           \
        return rc != PCOLL_GATE_DECLINED ? rc : pcoll_rs_##name args;                                              \
    }

MISS(reduce, G_REDUCE, reduce_fn, (const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm),
     (s, r, n, dt, op, root, comm))
MISS(allreduce, G_ALLREDUCE, allreduce_fn, (const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (s, r, n, dt, op, comm))
MISS(reduce_scatter, G_REDUCE_SCATTER, vreduce_fn,
     (const void *s, void *r, const int *counts, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (s, r, counts, dt, op, comm))
MISS(allgatherv, G_ALLGATHERV, allgatherv_fn,
     (const void *s, int sn, MPI_Datatype st, void *r, const int *counts, const int *displs, MPI_Datatype rt,
      MPI_Comm comm),
     (s, sn, st, r, counts, displs, rt, comm))
MISS(bcast, G_BCAST, bcast_fn, (void *b, int n, MPI_Datatype dt, int root, MPI_Comm comm), (b, n, dt, root, comm))
MISS(allgather, G_ALLGATHER, allgather_fn,
     (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm),
     (s, sn, st, r, rn, rt, comm))
MISS(reduce_scatter_block, G_REDUCE_SCATTER_BLOCK, allreduce_fn,
     (const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm), (s, r, n, dt, op, comm))

ENTRY int pcoll_entry_reduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, op, n, root, s == MPI_IN_PLACE};
    if (LIKELY(memo_hit(G_REDUCE, &k, s, r)))
        return FWD(G_REDUCE, reduce_fn)(s, r, n, dt, op, root, comm);
    return reduce_miss(s, r, n, dt, op, root, comm);
}

ENTRY int pcoll_entry_allreduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, op, n, -1, s == MPI_IN_PLACE};
    if (LIKELY(memo_hit(G_ALLREDUCE, &k, s, r)))
        return FWD(G_ALLREDUCE, allreduce_fn)(s, r, n, dt, op, comm);
    return allreduce_miss(s, r, n, dt, op, comm);
}

ENTRY int pcoll_entry_reduce_scatter(const void *s, void *r, const int *counts, MPI_Datatype dt, MPI_Op op,
                                     MPI_Comm comm)
{
    int mp = memo_p(G_REDUCE_SCATTER, comm, 0);
    struct memo_key k = {comm, dt, op, mp ? sum_counts(counts, mp) : -1, -1, s == MPI_IN_PLACE};
    if (LIKELY(k.n >= 0 && memo_hit(G_REDUCE_SCATTER, &k, s, r)))
        return FWD(G_REDUCE_SCATTER, vreduce_fn)(s, r, counts, dt, op, comm);
    return reduce_scatter_miss(s, r, counts, dt, op, comm);
}

ENTRY int pcoll_entry_allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *counts,
                                 const int *displs, MPI_Datatype rt, MPI_Comm comm)
{
    int mp = s == MPI_IN_PLACE || sn >= 0 ? memo_p(G_ALLGATHERV, comm, 0) : 0;
    struct memo_key k = {comm, rt, MPI_OP_NULL, mp ? sum_counts(counts, mp) : -1, -1, s == MPI_IN_PLACE};
    /* The key has no displacements: a one-rank call the guard declines never repeats a memo. */
    if (UNLIKELY(mp == 1 && k.n >= 0 && one_rank_declined(s, counts, displs)))
        k.n = -1;
    if (LIKELY(k.n >= 0 && memo_hit(G_ALLGATHERV, &k, s, r)))
        return FWD(G_ALLGATHERV, allgatherv_fn)(s, sn, st, r, counts, displs, rt, comm);
    return allgatherv_miss(s, sn, st, r, counts, displs, rt, comm);
}

ENTRY int pcoll_entry_bcast(void *b, int n, MPI_Datatype dt, int root, MPI_Comm comm)
{
    struct memo_key k = {comm, dt, MPI_OP_NULL, n, root, b == MPI_IN_PLACE};
    if (LIKELY(memo_hit(G_BCAST, &k, b, b)))
        return FWD(G_BCAST, bcast_fn)(b, n, dt, root, comm);
    return bcast_miss(b, n, dt, root, comm);
}

ENTRY int pcoll_entry_allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                                MPI_Comm comm)
{
    struct memo_key k = {comm, rt, MPI_OP_NULL, rn, -1, s == MPI_IN_PLACE};
    if (LIKELY((k.in_place || sn >= 0) && memo_hit(G_ALLGATHER, &k, s, r)))
        return FWD(G_ALLGATHER, allgather_fn)(s, sn, st, r, rn, rt, comm);
    return allgather_miss(s, sn, st, r, rn, rt, comm);
}

ENTRY int pcoll_entry_reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op,
                                           MPI_Comm comm)
{
    struct memo_key k = {comm, dt, op, n, -1, s == MPI_IN_PLACE};
    if (LIKELY(memo_hit(G_REDUCE_SCATTER_BLOCK, &k, s, r)))
        return FWD(G_REDUCE_SCATTER_BLOCK, allreduce_fn)(s, r, n, dt, op, comm);
    return reduce_scatter_block_miss(s, r, n, dt, op, comm);
}
