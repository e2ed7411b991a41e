/*
 * host/pool.h - the process's worker threads, and the check for a request to stop that long work
 * makes between its pieces.
 * Level: host (below both backends: the CPU backend's loops and the CUDA pipeline's packing run
 * on these threads); plain C11 and POSIX threads, nothing of Python.
 */
#ifndef GS_POOL_H
#define GS_POOL_H

#include <stdint.h>

/* Worker threads used: $GPUSCAN_NUM_THREADS if set (>= 1), else the online cores. */
int gs_cpu_threads(void);

/* Run fn(ctx, i) for every i in [0, ntasks) on up to gs_cpu_threads() threads (the calling
 * thread is one of them); returns when all are done.  Tasks must not depend on each other.
 * Returns 0 (a pool that cannot grow runs the tasks on the calling thread). */
int gs_cpu_parallel_for(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx);

/* A request to stop (Ctrl-C).  The layer that owns the interpreter installs `check` once, at
 * import: called by the thread that started a long call (never by a worker), between the call's
 * pieces, it returns nonzero when the call should stop, with the reason already recorded where
 * that layer will find it (a pending KeyboardInterrupt).  gs_stop_requested() is 0 until one is
 * installed. */
void gs_stop_set_check(int (*check)(void));
int gs_stop_requested(void);

#endif /* GS_POOL_H */
