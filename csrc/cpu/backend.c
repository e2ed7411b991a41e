/*
 * cpu/backend.c - the CPU backend's table (ops/ops.h): the multi-threaded C of csrc/cpu/ over
 * host buffers.
 *
 * Level: backend (CPU).  Each entry calls the backend's function and turns its negative errno
 * into the call's failure record; nothing here touches Python.  A split needs no state between
 * its passes: the count pass counts, the scatter pass moves.
 *
 * Ctrl-C: every entry runs its functions under a watch (host/pool.h), which asks, every few tens
 * of milliseconds of a long call, whether to stop.  A call stopped that way fails with kind 'p'
 * (KeyboardInterrupt is already set, by the question) whatever its functions returned: what they
 * wrote then means nothing, and no thread of theirs is still running.
 */
#include "cpu/cpu.h"
#include "cpu/jit.h"

#include <errno.h>
#include <string.h>

/* The outcome of the functions run under the watch w (0, or a negative errno), which ends here,
 * as an entry's result: a stop first, whatever rc says. */
static int outcome(gs_stop_watch *w, int rc, const char *call, gs_fail *f)
{
    if (gs_stop_watch_end(w))
        return gs_fail_set(f, 'p', 0, "KeyboardInterrupt", 0);
    return rc < 0 ? gs_fail_set(f, 'e', -rc, call, 0) : 0;
}

static int cpu_scan(const gs_scan_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    /* Carries come from streamed scans, which this backend (host memory) never runs. */
    if (d->carry_in != NULL || d->carry_out != NULL)
        return gs_fail_set(f, 'e', EINVAL, "gs_cpu_scan (a carry)", 0);
    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_scan(d), "gs_cpu_scan", f);
}

static int cpu_reduce(const gs_reduce_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_reduce(d), "gs_cpu_reduce", f);
}

static int cpu_split_count(const gs_split_desc *d, void **state, int64_t *total, gs_fail *f)
{
    gs_split_desc count = *d;
    gs_stop_watch w;
    int64_t n = 0;

    *state = NULL;
    if (total == NULL) /* the scatter pass counts as it moves */
        return 0;
    count.out = NULL;
    gs_stop_watch_begin(&w);
    if (outcome(&w, gs_cpu_split(&count, &n), "gs_cpu_split", f) < 0)
        return -1;
    *total = n;
    return 0;
}

static int cpu_split_scatter(const gs_split_desc *d, void *state, int64_t *total, gs_fail *f)
{
    gs_stop_watch w;
    int64_t n = 0;

    (void)state;
    gs_stop_watch_begin(&w);
    if (outcome(&w, gs_cpu_split(d, &n), "gs_cpu_split", f) < 0)
        return -1;
    if (total != NULL)
        *total = n;
    return 0;
}

static void cpu_split_end(void *state)
{
    (void)state;
}

static int cpu_hist(const gs_hist_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_hist(d), "gs_cpu_hist", f);
}

static int cpu_step(const gs_step_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_step(d), "gs_cpu_step", f);
}

static int cpu_segreduce(const gs_segreduce_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_segreduce(d), "gs_cpu_segreduce", f);
}

/* The count, then the positions pass (which counts again as it writes) when they fit.  A count
 * stopped by Ctrl-C means nothing, but the positions pass of a stopped call runs no task. */
static int cpu_heads_count(const gs_split_desc *d, void **state, int64_t *positions, int64_t room,
                           int64_t *count, int *placed, gs_fail *f)
{
    gs_stop_watch w;
    int64_t again;
    int rc;

    *state = NULL;
    *placed = 0;
    gs_stop_watch_begin(&w);
    rc = gs_cpu_heads(d, NULL, count);
    if (rc == 0 && *count > 0 && *count <= room) {
        *placed = 1;
        rc = gs_cpu_heads(d, positions, &again);
    }
    return outcome(&w, rc, "gs_cpu_heads", f);
}

static int cpu_heads(const gs_split_desc *d, void *state, int64_t *positions, gs_fail *f)
{
    gs_stop_watch w;
    int64_t count;

    (void)state;
    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_heads(d, positions, &count), "gs_cpu_heads", f);
}

/* Answered at once: no guard, nothing held. */
static int cpu_index_check(const int64_t *idx, int64_t m, int64_t n, gs_index_answer *a, gs_fail *f)
{
    gs_stop_watch w;

    memset(a, 0, sizeof(*a));
    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_index_check(idx, m, n, &a->first_bad, &a->increasing),
                   "gs_cpu_index_check", f);
}

static int cpu_index_wait(gs_index_answer *a, gs_fail *f)
{
    (void)a, (void)f;
    return 0;
}

static int cpu_linrec(const gs_linrec_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_linrec(d), "gs_cpu_linrec", f);
}

static int cpu_sort(const gs_sort_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_sort(d), "gs_cpu_sort", f);
}

/* The selection's tasks: ranges of GS_SELECT_TASK values, each moved by memcpy of its size (a
 * constant-size move for a dtype's width, once inlined per case). */
#define GS_SELECT_TASK ((int64_t)1 << 16)

static void select_task(void *ctx, int64_t t)
{
    const gs_select_desc *d = ctx;
    const int64_t i0 = t * GS_SELECT_TASK;
    const int64_t i1 = i0 + GS_SELECT_TASK < d->n ? i0 + GS_SELECT_TASK : d->n;
    const size_t size = (size_t)d->size;

    for (int64_t i = i0; i < i1; i++)
        memcpy((char *)d->out + i * size,
               d->mask[i] ? (const char *)d->in + i * size : (const char *)d->fill, size);
}

static int cpu_select(const gs_select_desc *d, gs_fail *f)
{
    gs_stop_watch w;

    gs_stop_watch_begin(&w);
    return outcome(
        &w,
        gs_cpu_parallel_for((d->n + GS_SELECT_TASK - 1) / GS_SELECT_TASK, select_task, (void *)d),
        "gs_cpu_parallel_for", f);
}

/* Operators you write (cpu/jit.h): the compile runs on the calling thread, unwatched (a
 * compiler is not stopped halfway); the work runs watched, as every entry's. */
static int cpu_user_load(const gs_user_spec *s, const gs_user_prog **prog, gs_user_msg *msg,
                         gs_fail *f)
{
    int rc = gs_cpu_user_load(s, prog, msg);
    if (rc < 0 && msg->error == NULL)
        return gs_fail_set(f, 'e', -rc, "gs_cpu_user_load", 0);
    return rc < 0 ? -1 : 0;
}

static int cpu_user_scan(const gs_user_desc *d, gs_fail *f)
{
    gs_stop_watch w;
    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_user_scan(d), "gs_cpu_user_scan", f);
}

static int cpu_user_reduce(const gs_user_desc *d, gs_fail *f)
{
    gs_stop_watch w;
    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_user_reduce(d), "gs_cpu_user_reduce", f);
}

static int cpu_user_segreduce(const gs_user_desc *d, gs_fail *f)
{
    gs_stop_watch w;
    gs_stop_watch_begin(&w);
    return outcome(&w, gs_cpu_user_segreduce(d), "gs_cpu_user_segreduce", f);
}

const gs_backend_ops gs_cpu_backend = {
    .name = "cpu",
    .mem = GS_MEM_HOST,
    .inner_axes = 1, /* scans and reductions along axes read in place (cpu/scan.c, cpu/reduce.c) */
    .scan = cpu_scan,
    .reduce = cpu_reduce,
    .split_count = cpu_split_count,
    .split_scatter = cpu_split_scatter,
    .split_end = cpu_split_end,
    .hist = cpu_hist,
    .step = cpu_step,
    .segreduce = cpu_segreduce,
    .heads_count = cpu_heads_count,
    .heads = cpu_heads,
    .index_check = cpu_index_check,
    .index_wait = cpu_index_wait,
    .linrec = cpu_linrec,
    .select = cpu_select,
    .sort = cpu_sort,
    .user_load = cpu_user_load,
    .user_scan = cpu_user_scan,
    .user_reduce = cpu_user_reduce,
    .user_segreduce = cpu_user_segreduce,
};
