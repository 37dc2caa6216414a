/* pcoll.h: the C API of libpcoll.so beyond the MPI functions it interposes.
 * Checked against the library's exports by `cargo test -p pcoll-mpi --test header`. */
#ifndef PCOLL_H
#define PCOLL_H

#ifdef __cplusplus
extern "C" {
#endif

#define PCOLL_VERSION_MAJOR 0
#define PCOLL_VERSION_MINOR 1
#define PCOLL_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the loaded library. */
const char *pcoll_version(void);

/* Force `algorithm` ("native", "binomial", "pipeline", "greedy", "greedy_uni", "circulant",
 * "butterfly", "ring", "hier", "hier_ml", "scatter_allgather", "shm", "binary", "fibonacci",
 * or "model": the cost
 * model's pick; each collective has its subset) for `collective` ("reduce", "allreduce",
 * "reduce_scatter", "allgatherv", "bcast", "allgather", "reduce_scatter_block") from now on;
 * NULL or "" goes back to
 * PCOLL_<COLL> and tuning.toml. Cheap (a few stores): may be called between any two calls.
 * All ranks of a communicator must force the same. Returns 0, -1 for an unknown
 * collective, -2 for an algorithm that does not exist for that collective. */
int pcoll_force(const char *collective, const char *algorithm);

/* Segment (block) size in bytes of the segmented algorithms ("pipeline", "greedy",
 * "greedy_uni", "circulant", "binary", "fibonacci") from now on, above PCOLL_SEGMENT and tuning.toml's `segment`;
 * 0 goes back to them (and to the cost model's choice). All ranks of a communicator must
 * set the same. Returns 0, or -1 for a negative value or one above 2 GiB (nothing changes). */
int pcoll_segment(long long bytes);

/* The algorithm that served this process's last call of `collective` ("" if none yet,
 * NULL for an unknown collective); "ireduce", "iallreduce", ...: its last non-blocking or
 * persistent call. */
const char *pcoll_last_algorithm(const char *collective);

/* This process's statistics for one collective and algorithm; out-pointers may be NULL.
 * Returns 0, or -1 for an unknown name. */
int pcoll_stats(const char *collective, const char *algorithm, unsigned long long *calls,
                unsigned long long *bytes, double *time_us);

/* Reset this process's statistics. */
void pcoll_stats_reset(void);

#ifdef __cplusplus
}
#endif
#endif /* PCOLL_H */
