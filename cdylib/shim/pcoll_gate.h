/* What the native gate's fast path needs, shared by the gate (pcoll_gate.c: publication,
 * caches, the full path) and the entry points (pcoll_entry.c: MPI_Reduce, MPI_Bcast, ...
 * jump there first). Hidden symbols only: nothing here is visible outside libpcoll.so. */
#ifndef PCOLL_GATE_H
#define PCOLL_GATE_H
#include <mpi.h>
#include <stddef.h>

/* The gate's fast paths are inlined into each entry point and its slow paths (cache misses:
 * PMPI queries) kept out of line: a forwarded call then costs a few dozen instructions and no
 * calls of pcoll's own (measured in a loop over MPI_Reduce on MPI_COMM_SELF, Open MPI:
 * +90-100 ns a call with every helper a function of its own, see README). */
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline, cold))

#define PCOLL_GATE_P 64
#define PCOLL_GATE_R 8
#define PCOLL_GATE_DECLINED (-0x7ffe1234)

/* Collective indices: pcoll::Collective::index(). */
enum {
    G_REDUCE = 0,
    G_ALLREDUCE = 1,
    G_REDUCE_SCATTER = 2,
    G_ALLGATHERV = 3,
    G_BCAST = 4,
    G_ALLGATHER = 5,
    G_REDUCE_SCATTER_BLOCK = 6,
    G_NCOLL = 7,
    /* pcoll_hot's second lines of the rooted collectives: the memo of their calls at a root
     * other than 0 (a program rotating its root alternates between the two sides). */
    G_REDUCE_NONZERO = 7,
    G_BCAST_NONZERO = 8,
    G_NHOT = 9
};

/* Guards (gate.rs guard_bit): decline a call that may match a native defect. */
enum {
    PCOLL_GUARD_ROOT_NONZERO_ABOVE = 1, /* reduce, root != 0, bytes above guard_root_above */
    PCOLL_GUARD_ONE_RANK = 2,
    PCOLL_GUARD_TRUE_LB = 4, /* datatype whose true lower bound is not 0 */
    PCOLL_GUARD_USER_OP = 8,
    PCOLL_GUARD_IN_PLACE = 16,
};
/* Modes per collective (gate_mode below). */
enum { PCOLL_MODE_CELLS = 0, PCOLL_MODE_NATIVE = 1, PCOLL_MODE_DECLINE = 2 };

/* One forwarded call a memo remembers: a call with the same communicator, datatype, op,
 * element count, root and in-place-ness repeats it. */
struct gate_memo {
    long long n;                       /* elements: count, or the sum of the counts */
    MPI_Comm comm;
    MPI_Datatype dt;
    MPI_Op op;                         /* MPI_OP_NULL for the calls without one */
    int root;                          /* -1 for the calls without one */
    int rank;                          /* this process's rank in comm (a reduce's root receives) */
    unsigned char in_place;            /* the call's send buffer was MPI_IN_PLACE */
    unsigned char p;                   /* communicator size */
    unsigned char tallied;             /* tally below is set (read on hits only then) */
    unsigned char valid;               /* the older memo's (the newer's is in gate_hot.state) */
    unsigned long long bytes;          /* the call's bytes */
    unsigned long long *tally;         /* a raced cell's count of its calls, +1 a hit */
    unsigned long long limit;          /* no hit once *tally reaches it */
};

/* Everything a forwarded call of one collective reads or writes besides its communicator,
 * datatype and size cell, in one cache line: a forwarded call runs between the caller's
 * own work and the MPI's, with this file's data cold (after a barrier, say; on a core shared
 * with another rank every line it touches is a cache miss), so it should touch as few lines
 * as it can. The line holds the last forwarded call (the memo): a call with the same
 * communicator, datatype, op, element count, root and in-place-ness, when nothing was
 * published since, goes native after reading this line alone (see memo_hit), and calls the
 * MPI through the pointer held here (not the PLT, whose stub and GOT are two more pages).
 * The second line holds the call the memo held before (`older`), read only when the first
 * does not match (memo_hit_older, on the entries' miss path): a program alternating two
 * shapes of one collective (a solver's 8-byte dot product between its 8 KiB reductions)
 * repeats one or the other (until session 58 each call of such a program that waited for
 * `shm`'s window took pcoll's Rust path: 1.06-1.19x native at 4-16 KiB on Open MPI 4.1).
 * Reduce and bcast have a second pair (G_<COLL>_NONZERO, memo_line) whose memos hold their
 * last forwarded calls at a root other than 0 and match any such root: pcoll decides by
 * whether the root is 0, never by which other rank it is (its tables, cells and defects), so
 * a program rotating its root repeats one of the two memos. The second pair's open, mode and
 * held follow the first's; its calls are counted in the first. */
struct gate_hot {
    union {
        struct {
            unsigned char open;        /* 0: decline everything (pcoll_gate_close) */
            unsigned char mode;        /* PCOLL_MODE_* */
            unsigned char held;        /* 1: decline everything (a non-blocking schedule runs) */
            unsigned char memo_valid;  /* the memo below holds a forwarded call */
            unsigned memo_seq;         /* odd while either memo is written (a sequence lock) */
        };
        unsigned long long state;      /* the five above, read at once by memo_hit */
    };
    struct gate_memo memo;             /* the last forwarded call */
    unsigned long long calls, bytes;   /* forwarded calls and bytes (pcoll's stats) */
    void (*fwd)(void);                 /* the MPI's own PMPI_<coll> (called on a memo hit) */
    unsigned char hit;                 /* the last call went through the gate */
    /* The second line: read on misses only. */
    struct gate_memo older __attribute__((aligned(128))); /* the one before (older.valid) */
    unsigned flags;                    /* PCOLL_GUARD_* */
    unsigned long long root_above;     /* bytes bound of PCOLL_GUARD_ROOT_NONZERO_ABOVE */
} __attribute__((aligned(128)));
extern struct gate_hot pcoll_hot[G_NHOT] __attribute__((visibility("hidden")));

/* The line whose memo a call of `coll` at `root` may repeat (root -1: a collective without). */
HOT int memo_line(int coll, int root)
{
    return root > 0 && coll == G_REDUCE ? G_REDUCE_NONZERO : root > 0 && coll == G_BCAST ? G_BCAST_NONZERO : coll;
}

HOT int same_comm(MPI_Comm a, MPI_Comm b) { return __builtin_memcmp(&a, &b, sizeof a) == 0; }
HOT int same_type(MPI_Datatype a, MPI_Datatype b) { return __builtin_memcmp(&a, &b, sizeof a) == 0; }

HOT void counted(int coll, unsigned long long bytes)
{
    struct gate_hot *h = &pcoll_hot[coll];
    __atomic_store_n(&h->calls, __atomic_load_n(&h->calls, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&h->bytes, __atomic_load_n(&h->bytes, __ATOMIC_RELAXED) + bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&h->hit, 1, __ATOMIC_RELAXED);
}

/* The call's key, as a gate function sees it. */
struct memo_key {
    MPI_Comm comm;
    MPI_Datatype dt;
    MPI_Op op;
    long long n;
    int root, in_place;
};

/* The communicator size of memo `m` of line `h` if it holds `comm` (for the vector calls,
 * which need p to sum their counts before they can compare), else 0. `valid`: whether it
 * holds a call (read with m's fields, under the line's sequence lock). */
HOT int memo_p_of(struct gate_hot *h, const struct gate_memo *m, const unsigned char *valid, MPI_Comm comm)
{
    unsigned s = __atomic_load_n(&h->memo_seq, __ATOMIC_ACQUIRE);
    int p = __atomic_load_n(&m->p, __ATOMIC_RELAXED);
    int ok = __atomic_load_n(valid, __ATOMIC_RELAXED) && same_comm(__atomic_load_n(&m->comm, __ATOMIC_RELAXED), comm);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return ok && !(s & 1) && __atomic_load_n(&h->memo_seq, __ATOMIC_RELAXED) == s ? p : 0;
}

/* memo_p_of for the last call of `coll` (`older`: the one before). */
HOT int memo_p(int coll, MPI_Comm comm, int older)
{
    struct gate_hot *h = &pcoll_hot[coll];
    return older ? memo_p_of(h, &h->older, &h->older.valid, comm) : memo_p_of(h, &h->memo, &h->memo_valid, comm);
}

/* 1 if a one-rank allgatherv is declined by its guard (MPICH 4.0 ignores displs[0]): its
 * block not empty, not in place and away from the start (`displs` NULL: not known). */
HOT int one_rank_declined(const void *sendbuf, const int *recvcounts, const int *displs)
{
    return (pcoll_hot[G_ALLGATHERV].flags & PCOLL_GUARD_ONE_RANK) && sendbuf != MPI_IN_PLACE && recvcounts[0] != 0 &&
           (!displs || displs[0] != 0);
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the gate's state word (MEMO_READY) is laid out for a little-endian machine"
#endif
/* The state word of a collective whose memo may be used: open, the cells' mode, not held, a
 * memo, and the sequence even (no writer). The older memo: the same but its own valid. */
#define MEMO_READY (1ull | (unsigned long long)PCOLL_MODE_CELLS << 8 | 1ull << 24)
#define MEMO_READY_MASK 0x1ffffffffull
#define OLDER_READY (1ull | (unsigned long long)PCOLL_MODE_CELLS << 8)
#define OLDER_READY_MASK 0x100ffffffull

/* The key fields a collective's memos can differ in besides communicator, datatype, count and
 * in-place-ness (the others hold the same constant in every memo of it: MPI_OP_NULL, root -1).
 * A root other than 0 matches any such root (the memo's second line: memo_line). */
#define COLL_HAS_OP(c) ((c) == G_REDUCE || (c) == G_ALLREDUCE || (c) == G_REDUCE_SCATTER || (c) == G_REDUCE_SCATTER_BLOCK)
#define COLL_HAS_ROOT(c) ((c) == G_REDUCE || (c) == G_BCAST)

/* 1 if the call repeats memo `m` of line `h`, whose state word was `w` (and its buffers are
 * plain): forward it, counted.
 * What a forwarded call costs beyond the MPI's is the lines of code it runs, which it finds
 * cold (after a barrier, or the MPI's own progress loop), more than its instructions: so the
 * state is one word, each field is compared straight from memory with a branch to the one
 * exit, and the fields constant for the collective are not read. An 8-byte MPI_Allgather at
 * p = 2 alternated with PMPI_Allgather (Open MPI 4.1, the second VM, median of 8 processes):
 * 1.06-1.08x native for the earlier form (every field and the tally's loaded before one test:
 * seven lines of code, five registers saved), 1.03-1.05 for this one, 1.02 for a check of the
 * state and communicator alone. The bytes counted are read after the check: with threads
 * changing the memo a hit may count the new memo's bytes (the counts are exact for one thread
 * only). */
HOT int memo_match(int coll, struct gate_hot *h, const struct gate_memo *m, unsigned long long w,
                   const struct memo_key *k, const void *sendbuf, const void *recvbuf)
{
    if (!same_comm(__atomic_load_n(&m->comm, __ATOMIC_RELAXED), k->comm) ||
        !same_type(__atomic_load_n(&m->dt, __ATOMIC_RELAXED), k->dt) ||
        __atomic_load_n(&m->n, __ATOMIC_RELAXED) != k->n ||
        __atomic_load_n(&m->in_place, __ATOMIC_RELAXED) != k->in_place ||
        (COLL_HAS_OP(coll) && __atomic_load_n(&m->op, __ATOMIC_RELAXED) != k->op) ||
        (COLL_HAS_ROOT(coll) && (k->root <= 0 ? __atomic_load_n(&m->root, __ATOMIC_RELAXED) != k->root
                                              : k->root >= __atomic_load_n(&m->p, __ATOMIC_RELAXED))))
        return 0;
    /* A NULL buffer the call reads or writes (MPI_IN_PLACE is never NULL; a reduce writes the
     * receive buffer at its root only): the full path reports it. */
    if (k->n > 0 && (sendbuf == NULL || (recvbuf == NULL && (coll != G_REDUCE ||
                                                             __atomic_load_n(&m->rank, __ATOMIC_RELAXED) == k->root))))
        return 0;
    int tallied = __atomic_load_n(&m->tallied, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&h->memo_seq, __ATOMIC_RELAXED) != (unsigned)(w >> 32))
        return 0;
    if (__builtin_expect(tallied, 0)) { /* a raced cell's call: counted in the cell, none once it is raced again */
        unsigned long long *tally = __atomic_load_n(&m->tally, __ATOMIC_RELAXED);
        unsigned long long limit = __atomic_load_n(&m->limit, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&h->memo_seq, __ATOMIC_RELAXED) != (unsigned)(w >> 32))
            return 0;
        unsigned long long t = __atomic_load_n(tally, __ATOMIC_RELAXED);
        if (t >= limit)
            return 0;
        __atomic_store_n(tally, t + 1, __ATOMIC_RELAXED);
    }
    counted(coll, __atomic_load_n(&m->bytes, __ATOMIC_RELAXED));
    return 1;
}

/* 1 if the call repeats the last forwarded call of `coll` (memo_match). */
HOT int memo_hit(int coll, const struct memo_key *k, const void *sendbuf, const void *recvbuf)
{
    struct gate_hot *h = &pcoll_hot[memo_line(coll, k->root)];
    unsigned long long w = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
    return (w & MEMO_READY_MASK) == MEMO_READY && memo_match(coll, h, &h->memo, w, k, sendbuf, recvbuf);
}

/* 1 if the call repeats the one before it (the older memo; the entries' miss path). */
HOT int memo_hit_older(int coll, const struct memo_key *k, const void *sendbuf, const void *recvbuf)
{
    struct gate_hot *h = &pcoll_hot[memo_line(coll, k->root)];
    unsigned long long w = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
    return (w & OLDER_READY_MASK) == OLDER_READY && __atomic_load_n(&h->older.valid, __ATOMIC_RELAXED) &&
           memo_match(coll, h, &h->older, w, k, sendbuf, recvbuf);
}


/* Sum of p non-negative counts, or -1. */
HOT long long sum_counts(const int *c, int p)
{
    long long s = 0;
    if (c == NULL)
        return -1;
    for (int i = 0; i < p; i++) {
        if (c[i] < 0)
            return -1;
        s += c[i];
    }
    return s;
}


/* Clear every memo (pcoll_memo.c; the gate clears them whenever what it decides by changes,
 * pcoll_want.c when a communicator is wanted). */
void pcoll_gate_memo_clear(void) __attribute__((visibility("hidden")));
/* Bumped by every clear (pcoll_memo.c). */
extern unsigned pcoll_memo_gen __attribute__((visibility("hidden")));
/* Keep a forwarded call (key `k`, this process's `rank` in a communicator of `p`) as its
 * line's last, with a tally and its limit (NULL: none), unless a clear happened since `gen`:
 * 1 if the memo now holds it (pcoll_memo.c). The gate checks first that its communicator
 * and datatype are in its caches. */
int pcoll_memo_store(int coll, const struct memo_key *k, int rank, int p, unsigned long long bytes, unsigned gen,
                     unsigned long long *tally, unsigned long long limit) __attribute__((visibility("hidden")));
/* Communicators whose next blocking collective must reach the Rust path (pcoll_want.c):
 * WANTED(comm) is 1 for a blocking call the gate declines for that reason. */
extern int pcoll_want_n __attribute__((visibility("hidden")));
int pcoll_comm_wanted(MPI_Comm comm) __attribute__((visibility("hidden"), cold));
#define WANTED(comm) (__atomic_load_n(&pcoll_want_n, __ATOMIC_ACQUIRE) && pcoll_comm_wanted(comm))

/* The memo's generation now (bumped by every clear), for pcoll_gate_keep's `gen`. */
unsigned pcoll_gate_memo_gen(void);
/* MPI_Ireduce / MPI_Iallreduce: 1 if the call goes native by the non-blocking cells. */
int pcoll_gate_nb_reduce_like(int coll, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                              int root, MPI_Comm comm);
/* A blocking call of `coll` the Rust path sent to native for good (a raced cell of its
 * communicator settled native; the arguments as the collective's own, `counts` for
 * reduce_scatter and allgatherv, `count` the count, recvcount or element count of the
 * others): kept in the memo, so that the next call repeating it is forwarded from C, unless
 * a clear happened since `gen` (pcoll_gate_memo_gen at the call's start) or the call is not
 * one the gate would forward. A memo hit counts the call in `*tally` (the cell's count of its
 * winner's calls, owned by the cell: the memo is cleared with the communicator) and none is
 * forwarded once `*tally` reaches `limit` (the cell is raced again: that call reaches the
 * Rust path). Returns 1 if the memo now holds the call, 0 if it keeps what it held. */
int pcoll_gate_keep(int coll, const void *sendbuf, int sendcount, void *recvbuf, const int *counts, int count,
                    MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, unsigned gen, unsigned long long *tally,
                    unsigned long long limit);
/* The full gate (pcoll_gate.c), called by the entries when the memo did not match (so it
 * does not check the memo again): forwards a plain call that goes native (and remembers it),
 * else returns PCOLL_GATE_DECLINED. */
int pcoll_gate_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                      MPI_Comm comm);
int pcoll_gate_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int pcoll_gate_reduce_scatter(const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm);
int pcoll_gate_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int *recvcounts, const int *displs, MPI_Datatype recvtype, MPI_Comm comm);
int pcoll_gate_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int pcoll_gate_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm);
int pcoll_gate_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt, MPI_Op op,
                                    MPI_Comm comm);

#endif
