/*
 * host/pool.h - the process's worker threads, and the check for a request to stop that long work
 * makes between its pieces.
 * Level: host (below both backends: the CPU backend's loops and the CUDA pipeline's packing run
 * on these threads); plain C11 and POSIX threads, nothing of Python.
 */
#ifndef GS_POOL_H
#define GS_POOL_H

#include <stdatomic.h>
#include <stdint.h>

/* Worker threads used: $GPUSCAN_NUM_THREADS if set (>= 1), else the online cores. */
int gs_cpu_threads(void);

/* Run fn(ctx, i) for every i in [0, ntasks) on up to gs_cpu_threads() threads (the calling
 * thread is one of them); returns when all are done.  Tasks must not depend on each other.
 * Returns 0 (a pool that cannot grow runs the tasks on the calling thread), or -EINTR when the
 * call it works for was stopped (gs_stop_watch below): the tasks not begun by then were skipped,
 * and none of them is running any more. */
int gs_cpu_parallel_for(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx);

/* A request to stop (Ctrl-C).  The layer that owns the interpreter installs `check` once, at
 * import: called by the thread that started a long call (never by a worker), between the call's
 * pieces, it returns nonzero when the call should stop, with the reason already recorded where
 * that layer will find it (a pending KeyboardInterrupt).  gs_stop_requested() is 0 until one is
 * installed. */
void gs_stop_set_check(int (*check)(void));
int gs_stop_requested(void);

/* A watch for a request to stop, kept on its stack by the thread that starts a long call (a CPU
 * backend entry, from gs_stop_watch_begin to gs_stop_watch_end).  While it is open that thread
 * asks gs_stop_requested(), at most every GS_STOP_POLL_NS (pool.c), wherever it is: between the
 * tasks it runs in gs_cpu_parallel_for, while it waits there for the workers, and in every
 * gs_cpu_stopping() of a task it runs.  Once the answer is stop, the call is cancelled: the
 * tasks not begun are skipped on every thread, every later gs_cpu_parallel_for of the call runs
 * none, and gs_cpu_stopping() is nonzero on every thread working for it, so the call returns
 * soon, its results meaning nothing; gs_stop_watch_end then returns nonzero.  A call shorter
 * than GS_STOP_POLL_NS never asks.  Watches nest, each restoring the one it hid. */
typedef struct gs_stop_watch {
    atomic_int stopped;          /* the call is cancelled (read by every thread of it) */
    int64_t next_poll_ns;        /* when to ask next (pool.c's clock) */
    atomic_int *outer_flag;      /* what the thread worked for before (restored at the end) */
    struct gs_stop_watch *outer; /* the watch it kept before (restored at the end) */
} gs_stop_watch;
void gs_stop_watch_begin(gs_stop_watch *w);
int gs_stop_watch_end(gs_stop_watch *w);

/* Whether the work of the call that this thread works for should stop: its watch was cancelled.
 * For the long loops inside a task, between blocks of work (a task one thread runs over a whole
 * array must ask, so that the call stops within a block): a thread-local read and a relaxed
 * atomic load, plus on the watching thread a read of a coarse clock, a few nanoseconds in all:
 * ask once per block of thousands of values, never per value.  0 outside a watched call. */
int gs_cpu_stopping(void);

#endif /* GS_POOL_H */
