/* The gate's memos, their writers' side (pcoll_gate.h has the readers': memo_hit and
 * memo_hit_older, inlined into the entries). */
#include <mpi.h>
#include "pcoll_gate.h"

/* The last two forwarded calls of each collective (line), guarded by a sequence lock
 * (memo_seq odd while a writer holds it; readers retry nothing: a reader that sees it odd or
 * changed takes the full path). A memo is stored only for a communicator held in comm_cache
 * (so its delete callback clears the memos) and a named datatype (never freed); every change
 * of what the gate decides by (cells, guards, modes, open/closed) clears the memos first. */

/* Take the memo lock of `h`; 0 if another thread holds it. */
static int memo_lock(struct gate_hot *h, unsigned *seq)
{
    unsigned s = __atomic_load_n(&h->memo_seq, __ATOMIC_RELAXED);
    if ((s & 1) || !__atomic_compare_exchange_n(&h->memo_seq, &s, s + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *seq = s;
    return 1;
}

/* Bumped by every clear: a call decided by the full path stores its memo only if no clear
 * happened since it began (so a memo never outlives what it was decided by). */
unsigned pcoll_memo_gen;

void pcoll_gate_memo_clear(void)
{
    __atomic_fetch_add(&pcoll_memo_gen, 1, __ATOMIC_ACQ_REL);
    for (int c = 0; c < G_NHOT; c++) {
        unsigned s;
        while (!memo_lock(&pcoll_hot[c], &s))
            ;
        __atomic_store_n(&pcoll_hot[c].memo_valid, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pcoll_hot[c].older.valid, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pcoll_hot[c].memo_seq, s + 2, __ATOMIC_RELEASE);
    }
}

unsigned pcoll_gate_memo_gen(void) { return __atomic_load_n(&pcoll_memo_gen, __ATOMIC_ACQUIRE); }

/* Copy memo `from` to `to` (fields only; the writer holds the line's lock). */
static void memo_copy(struct gate_memo *to, const struct gate_memo *from)
{
    __atomic_store_n(&to->comm, from->comm, __ATOMIC_RELAXED);
    __atomic_store_n(&to->dt, from->dt, __ATOMIC_RELAXED);
    __atomic_store_n(&to->op, from->op, __ATOMIC_RELAXED);
    __atomic_store_n(&to->n, from->n, __ATOMIC_RELAXED);
    __atomic_store_n(&to->root, from->root, __ATOMIC_RELAXED);
    __atomic_store_n(&to->in_place, from->in_place, __ATOMIC_RELAXED);
    __atomic_store_n(&to->rank, from->rank, __ATOMIC_RELAXED);
    __atomic_store_n(&to->p, from->p, __ATOMIC_RELAXED);
    __atomic_store_n(&to->bytes, from->bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&to->tallied, from->tallied, __ATOMIC_RELAXED);
    __atomic_store_n(&to->tally, from->tally, __ATOMIC_RELAXED);
    __atomic_store_n(&to->limit, from->limit, __ATOMIC_RELAXED);
}

/* Whether memo `m` is the call of key `k` (any root other than 0 is one). */
static int memo_is(const struct gate_memo *m, const struct memo_key *k)
{
    return same_comm(m->comm, k->comm) && same_type(m->dt, k->dt) && m->op == k->op && m->n == k->n &&
           m->in_place == k->in_place && (m->root == k->root || (m->root > 0 && k->root > 0));
}

/* Keep the call (key `k`) as the line's last; the last before it becomes the older memo, unless
 * it is the same call or counts in the same tally (a counter counts for one memo only: the
 * window's wait gives each call its own rent, CommState::wait_memo). Returns 1 if the memo now
 * holds the call (0: the memos keep what they held). */
int pcoll_memo_store(int coll, const struct memo_key *k, int rank, int p, unsigned long long bytes, unsigned gen,
                     unsigned long long *tally, unsigned long long limit)
{
    struct gate_hot *h = &pcoll_hot[memo_line(coll, k->root)];
    unsigned s;
    if (!memo_lock(h, &s))
        return 0;
    if (__atomic_load_n(&pcoll_memo_gen, __ATOMIC_ACQUIRE) != gen) { /* cleared meanwhile */
        __atomic_store_n(&h->memo_seq, s + 2, __ATOMIC_RELEASE);
        return 0;
    }
    struct gate_memo *m = &h->memo, *o = &h->older;
    if (h->memo_valid && !memo_is(m, k) && !(tally && m->tally == tally)) {
        memo_copy(o, m);
        __atomic_store_n(&o->valid, 1, __ATOMIC_RELAXED);
    } else if (o->valid && (memo_is(o, k) || (tally && o->tally == tally)))
        __atomic_store_n(&o->valid, 0, __ATOMIC_RELAXED);
    const struct gate_memo call = {.n = k->n,
                                   .comm = k->comm,
                                   .dt = k->dt,
                                   .op = k->op,
                                   .root = k->root,
                                   .rank = rank,
                                   .in_place = (unsigned char)k->in_place,
                                   .p = (unsigned char)p,
                                   .tallied = (unsigned char)(tally != NULL),
                                   .bytes = bytes,
                                   .tally = tally,
                                   .limit = limit};
    memo_copy(m, &call);
    __atomic_store_n(&h->memo_valid, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&h->memo_seq, s + 2, __ATOMIC_RELEASE);
    return 1;
}
