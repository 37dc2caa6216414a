/* Communicators on which a non-blocking call wanted pcoll's shadow or window made at their
 * next blocking collective (CommState::make_wanted, called by the Rust path): the gate
 * declines every blocking call on them (WANTED in pcoll_gate.h), so that the call reaches the
 * Rust path on every rank of the communicator (a memo or a cell would forward it on some
 * ranks and not on others). The non-blocking forms are not declined: one the gate forwards
 * would go native in the Rust path too, without wanting anything. Up to PCOLL_WANT_MAX by
 * handle; beyond that every blocking call is declined while more are wanted (want_over).
 * Written by the Rust path under its own lock, one writer at a time (pcoll_gate_want); read
 * by the blocking calls' gate functions (pcoll_want_n 0: one load). */
#include <mpi.h>
#include "pcoll_gate.h"

#define PCOLL_WANT_MAX 16
static MPI_Comm want_comm[PCOLL_WANT_MAX];
static unsigned char want_used[PCOLL_WANT_MAX];
int pcoll_want_n;     /* wanted communicators, in a slot or not */
static int want_over; /* wanted communicators without a slot */

void pcoll_gate_want(MPI_Comm comm, int on)
{
    int i;
    for (i = 0; i < PCOLL_WANT_MAX; i++)
        if (__atomic_load_n(&want_used[i], __ATOMIC_RELAXED) && same_comm(want_comm[i], comm))
            break;
    if (on) {
        if (i < PCOLL_WANT_MAX)
            return; /* wanted already */
        for (i = 0; i < PCOLL_WANT_MAX && __atomic_load_n(&want_used[i], __ATOMIC_RELAXED); i++)
            ;
        if (i < PCOLL_WANT_MAX) {
            __atomic_store_n(&want_comm[i], comm, __ATOMIC_RELAXED);
            __atomic_store_n(&want_used[i], 1, __ATOMIC_RELEASE);
        } else {
            __atomic_fetch_add(&want_over, 1, __ATOMIC_ACQ_REL);
        }
        __atomic_fetch_add(&pcoll_want_n, 1, __ATOMIC_ACQ_REL);
        /* A memo of this communicator must not forward its next call. */
        pcoll_gate_memo_clear();
    } else {
        if (i < PCOLL_WANT_MAX)
            __atomic_store_n(&want_used[i], 0, __ATOMIC_RELEASE);
        else if (__atomic_load_n(&want_over, __ATOMIC_RELAXED) > 0)
            __atomic_fetch_sub(&want_over, 1, __ATOMIC_ACQ_REL);
        else
            return; /* not wanted */
        __atomic_fetch_sub(&pcoll_want_n, 1, __ATOMIC_ACQ_REL);
    }
}

int pcoll_comm_wanted(MPI_Comm comm)
{
    if (__atomic_load_n(&want_over, __ATOMIC_ACQUIRE))
        return 1;
    for (int i = 0; i < PCOLL_WANT_MAX; i++)
        if (__atomic_load_n(&want_used[i], __ATOMIC_ACQUIRE) &&
            same_comm(__atomic_load_n(&want_comm[i], __ATOMIC_RELAXED), comm))
            return 1;
    return 0;
}
