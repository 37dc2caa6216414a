/* Preloaded into every MPICH rank by scripts/netcluster.sh: keeps UCX progressing through
 * MPICH 4.0.2's finalize so that no rank waits forever for a peer that stopped progressing,
 * and (second part, "idle waiting" below) lets a rank that waits for a message sleep on
 * UCX's event fd instead of spinning.
 *
 * Why: MPICH 4.0.2 (ch4:ucx, src/mpid/ch4/netmod/ucx/ucx_init.c, MPIDI_UCX_mpi_finalize_hook)
 * closes every endpoint with ucp_disconnect_nb (= a flushing close), calls
 * ucp_worker_progress until *its own* close requests are complete, then blocks in a PMI
 * barrier without progressing UCX any more, and only then destroys the worker. UCX 1.13's
 * TCP transport flushes an endpoint that has sent any active message since its last flush by
 * sending a zero-length PUT request and waiting for the peer's PUT ACK
 * (uct_tcp_ep_flush, UCT_TCP_EP_FLAG_NEED_FLUSH). The ACK is written by the peer's
 * ucp_worker_progress. A rank whose own closes finished first sits in the PMI barrier (a
 * blocking read of the PMI socket) and never sends the ACK the others need: they spin in
 * ucp_worker_progress for ever (seen with gdb: ranks 0 and 3 in read() under PMPI_Finalize,
 * ranks 1 and 2 in uct_tcp_iface_progress under PMPI_Finalize), until a launcher timeout
 * kills the job with SIGTERM ("killed by signal 15").
 *
 * What this does: from the first ucp_disconnect_nb call on (MPI_Finalize), a helper thread
 * keeps calling ucp_worker_progress on the worker, so ACKs keep flowing while the main thread
 * waits in the PMI barrier; ucp_worker_destroy stops and joins it first. A mutex serializes
 * every UCX call of the two threads from then on (MPICH creates the worker
 * UCS_THREAD_MODE_SERIALIZED). Before finalize, the only added cost is one flag test per
 * ucp_worker_progress call. Nothing else changes: closes still flush, so no data is dropped.
 *
 * Build: cc -shared -fPIC -O2 -pthread -o ucx_finalize_progress.so ucx_finalize_progress.c -ldl
 * (UCX's headers, libucx-dev; ucp_worker_get_efd/ucp_worker_arm resolve in the MPICH process)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucp/api/ucp.h>

static unsigned (*real_progress)(ucp_worker_h);
static void *(*real_disconnect)(ucp_ep_h);
static void (*real_destroy)(ucp_worker_h);
static void (*real_release)(void *);
static int (*real_is_completed)(void *);

static atomic_int finalizing;      /* set by the first ucp_disconnect_nb */
static atomic_int stop;
static ucp_worker_h last_worker;   /* the worker MPICH progresses (one VCI) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t helper;
static int helper_running;

static void *sym(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "ucx_finalize_progress: %s not found\n", name);
        abort();
    }
    return p;
}

static void *helper_main(void *worker) {
    struct timespec nap = {0, 50 * 1000}; /* 50 us between idle polls */
    while (!atomic_load(&stop)) {
        pthread_mutex_lock(&lock);
        unsigned n = real_progress(worker);
        pthread_mutex_unlock(&lock);
        if (!n) nanosleep(&nap, NULL);
    }
    return NULL;
}

/* --- idle waiting (the second fix, see README "Emulated cluster": the small-message floor) ---
 * MPICH's ch4:ucx waits for a message by calling ucp_worker_progress in a loop. With more
 * busy ranks than cores (4 ranks, 2 cores, other jobs) a rank that waits keeps its core until
 * the scheduler's tick takes it away, and the rank a message is for gets the core only at a
 * tick (4 ms here): every message round of a collective cost 4-40 ms. Here, after
 * PCOLL_NET_SPIN (default 200) empty progress calls in a row, the rank arms the worker's
 * event fd (ucp_worker_arm) and sleeps in poll() on it for at most PCOLL_NET_WAIT_US (default
 * 1000) microseconds: the kernel wakes it when a TCP segment for it arrives, and a woken task
 * preempts spinning ones. The context is created with UCP_FEATURE_WAKEUP for that
 * (ucp_init_version below). PCOLL_NET_SPIN=0 turns it off. */
static ucs_status_t (*real_init)(unsigned, unsigned, const ucp_params_t *, const ucp_config_t *,
                                 ucp_context_h *);
static int spin_limit = -1, wait_ms = 1, efd = -1, efd_failed;

ucs_status_t ucp_init_version(unsigned major, unsigned minor, const ucp_params_t *params,
                              const ucp_config_t *config, ucp_context_h *context) {
    if (!real_init) real_init = sym("ucp_init_version");
    const char *s = getenv("PCOLL_NET_SPIN"), *w = getenv("PCOLL_NET_WAIT_US");
    spin_limit = s ? atoi(s) : 200;
    wait_ms = w ? (atoi(w) + 999) / 1000 : 1;
    if (spin_limit <= 0 || !params || !(params->field_mask & UCP_PARAM_FIELD_FEATURES))
        return real_init(major, minor, params, config, context);
    ucp_params_t p = *params;
    p.features |= UCP_FEATURE_WAKEUP;
    ucs_status_t st = real_init(major, minor, &p, config, context);
    if (st != UCS_OK) { /* no transport with events: spin as before */
        spin_limit = 0;
        st = real_init(major, minor, params, config, context);
    }
    return st;
}

static void idle_wait(ucp_worker_h worker) {
    if (efd < 0 && !efd_failed && ucp_worker_get_efd(worker, &efd) != UCS_OK) efd_failed = 1;
    if (efd_failed) return;
    if (ucp_worker_arm(worker) != UCS_OK) return; /* UCS_ERR_BUSY: events pending */
    struct pollfd pfd = {efd, POLLIN, 0};
    poll(&pfd, 1, wait_ms);
}

unsigned ucp_worker_progress(ucp_worker_h worker) {
    static int idle;
    if (!real_progress) real_progress = sym("ucp_worker_progress");
    if (!atomic_load_explicit(&finalizing, memory_order_relaxed)) {
        last_worker = worker;
        unsigned n = real_progress(worker);
        if (n || spin_limit <= 0) {
            idle = 0;
            return n;
        }
        if (++idle >= spin_limit) {
            idle = 0;
            idle_wait(worker);
        }
        return n;
    }
    pthread_mutex_lock(&lock);
    unsigned n = real_progress(worker);
    pthread_mutex_unlock(&lock);
    return n;
}

void *ucp_disconnect_nb(ucp_ep_h ep) {
    if (!real_disconnect) real_disconnect = sym("ucp_disconnect_nb");
    if (!real_progress) real_progress = sym("ucp_worker_progress");
    if (!atomic_load(&finalizing)) {
        atomic_store(&finalizing, 1);
        if (last_worker && !getenv("PCOLL_NET_NO_FINALIZE_FIX") &&
            pthread_create(&helper, NULL, helper_main, last_worker) == 0)
            helper_running = 1;
    }
    pthread_mutex_lock(&lock);
    void *r = real_disconnect(ep);
    pthread_mutex_unlock(&lock);
    return r;
}

void ucp_request_release(void *req) {
    if (!real_release) real_release = sym("ucp_request_release");
    if (!atomic_load_explicit(&finalizing, memory_order_relaxed)) {
        real_release(req);
        return;
    }
    pthread_mutex_lock(&lock);
    real_release(req);
    pthread_mutex_unlock(&lock);
}

int ucp_request_is_completed(void *req) {
    if (!real_is_completed) real_is_completed = sym("ucp_request_is_completed");
    if (!atomic_load_explicit(&finalizing, memory_order_relaxed)) return real_is_completed(req);
    pthread_mutex_lock(&lock);
    int r = real_is_completed(req);
    pthread_mutex_unlock(&lock);
    return r;
}

void ucp_worker_destroy(ucp_worker_h worker) {
    if (!real_destroy) real_destroy = sym("ucp_worker_destroy");
    if (helper_running) {
        atomic_store(&stop, 1);
        pthread_join(helper, NULL);
        helper_running = 0;
    }
    real_destroy(worker);
}
