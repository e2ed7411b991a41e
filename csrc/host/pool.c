/*
 * host/pool.c - the process's worker threads (host/pool.h), and the check for a request to stop.
 * Level: host, below both backends; plain C11 and POSIX threads, nothing of Python.
 * One process-wide pool of gs_cpu_threads() - 1 workers, created on the first parallel call and
 * kept for the next ones.  gs_cpu_parallel_for posts a job (fn, ctx, ntasks) with one ticket per
 * worker it wants; the caller and the workers that took a ticket then pull task numbers from one
 * atomic counter, so every task runs exactly once and a slow thread never holds up the others.
 * Guarantees:
 *  - when gs_cpu_parallel_for returns, every task has finished and its writes are visible to the
 *    caller (the workers check out under the pool's lock, which the caller then takes); the
 *    caller never waits for a worker that had not started by the time every task was handed
 *    out (its ticket is withdrawn), so a worker kept off its core costs nothing;
 *  - several threads may call at once: one caller at a time owns the pool, the others (and a task
 *    that itself calls gs_cpu_parallel_for) run their tasks on their own thread, so nothing waits
 *    on anything but its own tasks and nothing deadlocks;
 *  - if no worker can be created, the tasks run on the calling thread: the call still succeeds;
 *  - workers block every signal, so Ctrl-C reaches Python's main thread;
 *  - a child made by fork() starts with an empty pool and makes its own workers when needed.
 * Which thread runs which task is unspecified: callers make their results independent of it.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "host/pool.h"

/* Most threads the backend uses, whatever GPUSCAN_NUM_THREADS says: a typo such as 10000 must
 * not reserve 10000 stacks, and 1024 is beyond the core count of any host the package targets. */
#define GS_CPU_MAX_THREADS 1024

static pthread_once_t gs_init_once = PTHREAD_ONCE_INIT;
static int gs_threads = 1;

static struct gs_pool {
    pthread_mutex_t lock;  /* guards every field below except `next` */
    pthread_cond_t wake;   /* tickets were posted */
    pthread_cond_t idle;   /* the last ticket of the job checked out */
    pthread_mutex_t owner; /* held by the one caller whose job the pool runs */
    int nworkers;
    int tickets; /* posted tickets not yet taken */
    int active;  /* tickets taken or posted whose holder has not checked out */
    void (*fn)(void *ctx, int64_t task);
    void *ctx;
    int64_t ntasks;
    atomic_int_fast64_t next; /* the next task number to hand out */
} gs_pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .idle = PTHREAD_COND_INITIALIZER,
    .owner = PTHREAD_MUTEX_INITIALIZER,
};

/* In a child of fork() the workers do not exist and the locks may have been held by threads that
 * do not exist either: start over with an empty pool. */
static void gs_pool_after_fork_child(void)
{
    gs_pool.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    gs_pool.owner = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    gs_pool.wake = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    gs_pool.idle = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    gs_pool.nworkers = 0;
    gs_pool.tickets = 0;
    gs_pool.active = 0;
}

static void gs_init(void)
{
    long n = 0;
    const char *env = getenv("GPUSCAN_NUM_THREADS");
    if (env != NULL && *env != '\0') {
        char *end;
        errno = 0;
        n = strtol(env, &end, 10);
        if (errno != 0 || *end != '\0')
            n = 0;
    }
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    gs_threads = n > GS_CPU_MAX_THREADS ? GS_CPU_MAX_THREADS : (int)n;
    pthread_atfork(NULL, NULL, gs_pool_after_fork_child);
}

int gs_cpu_threads(void)
{
    pthread_once(&gs_init_once, gs_init);
    return gs_threads;
}

/* Pull task numbers until none is left. */
static void gs_run_tasks(void (*fn)(void *, int64_t), void *ctx, int64_t ntasks)
{
    for (;;) {
        int64_t task = atomic_fetch_add_explicit(&gs_pool.next, 1, memory_order_relaxed);
        if (task >= ntasks)
            return;
        fn(ctx, task);
    }
}

/* A worker: take a ticket, run the job's tasks, check out; forever.  Taking a second ticket of
 * the same job is harmless (the counter is exhausted by then), so any waiting worker may take any
 * ticket. */
static void *gs_worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&gs_pool.lock);
    for (;;) {
        while (gs_pool.tickets == 0)
            pthread_cond_wait(&gs_pool.wake, &gs_pool.lock);
        gs_pool.tickets--;
        void (*fn)(void *, int64_t) = gs_pool.fn;
        void *ctx = gs_pool.ctx;
        int64_t ntasks = gs_pool.ntasks;
        pthread_mutex_unlock(&gs_pool.lock);

        gs_run_tasks(fn, ctx, ntasks);

        pthread_mutex_lock(&gs_pool.lock);
        if (--gs_pool.active == 0)
            pthread_cond_signal(&gs_pool.idle);
    }
    return NULL;
}

/* Bring the pool up to `want` workers (called with the lock held).  A failure only leaves the
 * pool smaller; the next call tries again. */
static void gs_pool_grow(int want)
{
    sigset_t all, old;
    pthread_t thread;
    if (gs_pool.nworkers >= want)
        return;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the workers inherit the full mask */
    while (gs_pool.nworkers < want) {
        if (pthread_create(&thread, NULL, gs_worker, NULL) != 0)
            break;
        pthread_detach(thread);
        gs_pool.nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int gs_cpu_parallel_for(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx)
{
    int64_t i;
    int helpers;

    if (ntasks <= 0)
        return 0;
    if (ntasks == 1 || gs_cpu_threads() == 1 || pthread_mutex_trylock(&gs_pool.owner) != 0) {
        /* One task, one thread, or the pool is busy with another caller's job (or ours: a
         * nested call): run everything here. */
        for (i = 0; i < ntasks; i++)
            fn(ctx, i);
        return 0;
    }

    pthread_mutex_lock(&gs_pool.lock);
    gs_pool_grow(gs_threads - 1);
    helpers = gs_pool.nworkers;
    if (helpers > ntasks - 1)
        helpers = (int)(ntasks - 1);
    gs_pool.fn = fn;
    gs_pool.ctx = ctx;
    gs_pool.ntasks = ntasks;
    atomic_store_explicit(&gs_pool.next, 0, memory_order_relaxed);
    gs_pool.tickets = helpers;
    gs_pool.active = helpers;
    if (helpers > 0)
        pthread_cond_broadcast(&gs_pool.wake);
    pthread_mutex_unlock(&gs_pool.lock);

    gs_run_tasks(fn, ctx, ntasks);

    pthread_mutex_lock(&gs_pool.lock);
    /* Every task has been handed out: the tickets no worker has taken yet (it has not woken:
     * on a busy host it may not run for milliseconds) are withdrawn, and only the workers that
     * hold a task are waited for. */
    gs_pool.active -= gs_pool.tickets;
    gs_pool.tickets = 0;
    while (gs_pool.active > 0)
        pthread_cond_wait(&gs_pool.idle, &gs_pool.lock);
    pthread_mutex_unlock(&gs_pool.lock);
    pthread_mutex_unlock(&gs_pool.owner);
    return 0;
}

/* ---- stopping ------------------------------------------------------------------------------ */

static int (*_Atomic gs_stop_check)(void);

void gs_stop_set_check(int (*check)(void))
{
    atomic_store(&gs_stop_check, check);
}

int gs_stop_requested(void)
{
    int (*check)(void) = atomic_load(&gs_stop_check);
    return check != NULL && check();
}
