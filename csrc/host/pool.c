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
 *  - a watched call (gs_stop_watch) stops within GS_STOP_POLL_NS plus the longest piece of work
 *    in flight: its caller asks between tasks, in its tasks' gs_cpu_stopping() and while it waits
 *    for the workers (a timed wait); the job's flag, posted with the job, then keeps every thread
 *    from starting another task, and the call returns only when none is running;
 *  - a child made by fork() starts with an empty pool and makes its own workers when needed.
 * Which thread runs which task is unspecified: callers make their results independent of it.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "host/pool.h"

/* Most threads the backend uses, whatever GPUSCAN_NUM_THREADS says: a typo such as 10000 must
 * not reserve 10000 stacks, and 1024 is beyond the core count of any host the package targets. */
#define GS_CPU_MAX_THREADS 1024
/* How often a watched call asks whether to stop: every 50 ms, a tenth of the half second within
 * which Ctrl-C must take effect, which leaves the rest to the work in flight when the answer comes
 * (a task, or a block of one) and to the unwinding.  Each question takes the GIL for a few
 * microseconds (core/raise.c): 20 a second cost nothing measurable, and a call shorter than
 * this asks none. */
#define GS_STOP_POLL_NS ((int64_t)50 * 1000 * 1000)

static pthread_once_t gs_init_once = PTHREAD_ONCE_INIT;
static int gs_threads = 1;

static struct gs_pool {
    pthread_mutex_t lock;  /* guards every field below except `next` */
    pthread_cond_t wake;   /* tickets were posted */
    pthread_cond_t idle;   /* the last ticket of the job checked out */
    pthread_mutex_t owner; /* held by the one caller whose job the pool runs */
    int nworkers;
    atomic_int tickets; /* posted tickets not yet taken */
    atomic_int active;  /* tickets taken or posted whose holder has not checked out */
    void (*fn)(void *ctx, int64_t task);
    void *ctx;
    int64_t ntasks;
    atomic_int *stop;         /* the cancel flag of the call the job works for (NULL: none) */
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

/* ---- stopping: the flags every thread reads ------------------------------------------------- */

/* The cancel flag of the call whose work this thread does: its own watch's on the watching
 * thread, the job's on a worker (NULL: no watched call). */
static _Thread_local atomic_int *gs_flag;
/* The watch this thread keeps (NULL: none): the thread that asks gs_stop_requested(). */
static _Thread_local gs_stop_watch *gs_watch;

/* The clock of the questions: Linux's CLOCK_MONOTONIC_COARSE where there is one, read in about
 * 4 ns (CLOCK_MONOTONIC takes 35 ns in a virtual machine's vDSO), whose resolution of a tick (1
 * to 10 ms) is far finer than GS_STOP_POLL_NS. */
#ifdef CLOCK_MONOTONIC_COARSE
#define GS_STOP_CLOCK CLOCK_MONOTONIC_COARSE
#else
#define GS_STOP_CLOCK CLOCK_MONOTONIC
#endif

static int64_t gs_now_ns(void)
{
    struct timespec t;
    clock_gettime(GS_STOP_CLOCK, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The watching thread: ask gs_stop_requested() when its time has come; cancel the call if it
 * says stop.  The next time is set first, so that a call made from within the question (a Python
 * signal handler that calls gpuscan) does not ask again. */
static int gs_poll(gs_stop_watch *w)
{
    int64_t now = gs_now_ns();
    if (now < w->next_poll_ns)
        return 0;
    w->next_poll_ns = now + GS_STOP_POLL_NS;
    if (!gs_stop_requested())
        return 0;
    atomic_store_explicit(&w->stopped, 1, memory_order_relaxed);
    return 1;
}

/* Whether this thread's call is cancelled already (no question asked). */
static int gs_cancelled(void)
{
    atomic_int *flag = gs_flag;
    return flag != NULL && atomic_load_explicit(flag, memory_order_relaxed);
}

int gs_cpu_stopping(void)
{
    atomic_int *flag = gs_flag;
    if (flag == NULL)
        return 0;
    if (atomic_load_explicit(flag, memory_order_relaxed))
        return 1;
    return gs_watch != NULL && gs_poll(gs_watch);
}

void gs_stop_watch_begin(gs_stop_watch *w)
{
    atomic_init(&w->stopped, 0);
    w->next_poll_ns = gs_now_ns() + GS_STOP_POLL_NS;
    w->outer_flag = gs_flag;
    w->outer = gs_watch;
    gs_flag = &w->stopped;
    gs_watch = w;
}

int gs_stop_watch_end(gs_stop_watch *w)
{
    gs_flag = w->outer_flag;
    gs_watch = w->outer;
    return atomic_load_explicit(&w->stopped, memory_order_relaxed);
}

/* ---- the pool ------------------------------------------------------------------------------ */

/* How long a worker that ran out of work, and a caller waiting for its workers, watch for the
 * next job (or the last check-out) before they sleep on the condition variable: waking a
 * sleeping thread took 20-40 us on a 2-core virtual machine, a third of a whole call on 4 MiB,
 * and calls often come back to back.  The watch yields the core after GS_SPIN_PAUSE_NS, so that
 * on a host with more threads than cores it takes no time from those that have work. */
#define GS_SPIN_NS ((int64_t)50 * 1000)
#define GS_SPIN_PAUSE_NS ((int64_t)5 * 1000)

/* Unlock, watch *v until it differs from `from` or GS_SPIN_NS pass, lock again. */
static void gs_spin_while(atomic_int *v, int from)
{
    pthread_mutex_unlock(&gs_pool.lock);
    const int64_t start = gs_now_ns();
    int64_t now = start;
    while (atomic_load_explicit(v, memory_order_relaxed) == from && now - start < GS_SPIN_NS) {
        if (now - start >= GS_SPIN_PAUSE_NS)
            sched_yield();
#if defined(__x86_64__) || defined(__i386__)
        else
            __builtin_ia32_pause();
#endif
        now = gs_now_ns();
    }
    pthread_mutex_lock(&gs_pool.lock);
}

/* Pull task numbers until none is left, or the call is cancelled. */
static void gs_run_tasks(void (*fn)(void *, int64_t), void *ctx, int64_t ntasks)
{
    for (;;) {
        if (gs_cpu_stopping())
            return;
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
        if (gs_pool.tickets == 0)
            gs_spin_while(&gs_pool.tickets, 0);
        while (gs_pool.tickets == 0)
            pthread_cond_wait(&gs_pool.wake, &gs_pool.lock);
        gs_pool.tickets--;
        void (*fn)(void *, int64_t) = gs_pool.fn;
        void *ctx = gs_pool.ctx;
        int64_t ntasks = gs_pool.ntasks;
        gs_flag = gs_pool.stop;
        pthread_mutex_unlock(&gs_pool.lock);

        gs_run_tasks(fn, ctx, ntasks);

        pthread_mutex_lock(&gs_pool.lock);
        gs_flag = NULL;
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

/* The caller, its tasks handed out: wait until the workers holding one have checked out (called
 * with the lock held).  A watching caller wakes when its next question is due and asks it
 * without the lock (the question takes the GIL), so that a stop reaches the workers' long tasks
 * through the job's flag even while the caller has no task left to run. */
static void gs_wait_idle(void)
{
    if (gs_pool.active > 0)
        gs_spin_while(&gs_pool.active, gs_pool.active);
    while (gs_pool.active > 0) {
        if (gs_watch == NULL || gs_cancelled()) {
            pthread_cond_wait(&gs_pool.idle, &gs_pool.lock);
            continue;
        }
        const int64_t wait = gs_watch->next_poll_ns - gs_now_ns();
        if (wait > 0) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
            until.tv_nsec += wait % 1000000000;
            until.tv_sec += wait / 1000000000 + until.tv_nsec / 1000000000;
            until.tv_nsec %= 1000000000;
            pthread_cond_timedwait(&gs_pool.idle, &gs_pool.lock, &until);
            continue;
        }
        pthread_mutex_unlock(&gs_pool.lock);
        gs_cpu_stopping();
        pthread_mutex_lock(&gs_pool.lock);
    }
}

int gs_cpu_parallel_for(int64_t ntasks, void (*fn)(void *ctx, int64_t task), void *ctx)
{
    int64_t i;
    int helpers;

    if (ntasks <= 0)
        return 0;
    if (gs_cancelled()) /* a later step of a stopped call: its inputs may mean nothing */
        return -EINTR;
    if (ntasks == 1 || gs_cpu_threads() == 1 || pthread_mutex_trylock(&gs_pool.owner) != 0) {
        /* One task, one thread, or the pool is busy with another caller's job (or ours: a
         * nested call): run everything here, asking between the tasks. */
        for (i = 0; i < ntasks; i++) {
            if (i > 0 && gs_cpu_stopping())
                return -EINTR;
            fn(ctx, i);
        }
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
    gs_pool.stop = gs_flag;
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
    gs_wait_idle();
    pthread_mutex_unlock(&gs_pool.lock);
    pthread_mutex_unlock(&gs_pool.owner);
    return gs_cancelled() ? -EINTR : 0;
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
