/*
 * cuda/backend.c - the CUDA backend's table (gpuscan/backend.h): the launchers of kernels/dispatch/
 * with the scratch each needs.
 * Level: backend (CUDA), host side; a build with CUDA only (stubs.c fills the table
 * otherwise).  Every entry runs without the GIL, enqueues on gpuscan's stream and waits only
 * where its contract says so (a flagged count the host must know).  Scratch comes from the
 * pool (its size from the pure functions of gpuscan/config.h and teach_config.h) and goes back
 * stream-ordered, after the launches that use it; the single-pass scans, the reductions and the
 * histograms share kept scratch, and a split takes the kept one when it is free
 * (scan_scratch.c).
 */
#ifdef GS_HAVE_CUDA

#include "cuda/pipeline.h"
#include "cuda/user.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "gpuscan/config.h"
#include "gpuscan/teach_config.h"

static int cuda_scan(const gs_scan_desc *d, gs_fail *f)
{
    void *scratch = NULL;
    size_t bytes;

    GS_CUDA_TRY(f, gs_cuda_enter());
    if (d->algorithm == GS_ALGO_AUTO) {
        GS_CUDA_TRY(f, gs_cuda_scan_shared(d));
        goto done;
    }
    bytes = gs_teach_scratch_bytes(d);
    if (gs_cuda_alloc(&scratch, bytes, f) < 0)
        goto done;
    GS_CUDA_TRY(f, gs_launch_teach_scan(d, scratch, bytes, gs_cuda_stream));
done:
    gs_cuda_free(scratch);
    return f->kind ? -1 : 0;
}

static int cuda_reduce(const gs_reduce_desc *d, gs_fail *f)
{
    GS_CUDA_TRY(f, gs_cuda_enter());
    GS_CUDA_TRY(f, gs_cuda_reduce_shared(d));
done:
    return f->kind ? -1 : 0;
}

/* The count pass on a split's scratch (the kept one when free), which *state holds until
 * split_end: NULL for n == 0, where no pass launches.  A compact's count (total not NULL)
 * comes back in a reply that the count pass's last block writes. */
static int cuda_split_count(const gs_split_desc *d, void **state, int64_t *total, gs_fail *f)
{
    gs_split_scratch *s = NULL;
    gs_reply *r = NULL;
    const void *host;

    *state = NULL;
    if (total != NULL)
        *total = 0;
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (gs_split_scratch_take(gs_split_scratch_bytes(d->n), &s, f) < 0 || s == NULL)
        goto done;
    *state = s;
    if (total != NULL && gs_reply_take(&r, f) < 0)
        goto done;
    GS_CUDA_TRY(f, gs_launch_split_count(d, s->dev, s->cap, r != NULL ? gs_reply_view(r) : NULL,
                                         gs_cuda_stream));
    if (r != NULL && gs_reply_mark(r, f) == 0 && gs_reply_wait(r, &host, f) == 0)
        *total = (int64_t) * (const unsigned long long *)host;
done:
    gs_reply_give(r);
    return f->kind ? -1 : 0;
}

/* The scatter; a split's count (total not NULL) comes back in a reply that the scatter writes
 * itself, so the host waits for the scatter alone, with no launch after it. */
static int cuda_split_scatter(const gs_split_desc *d, void *state, int64_t *total, gs_fail *f)
{
    const gs_split_scratch *s = state;
    gs_reply *r = NULL;
    const void *host;

    if (total != NULL)
        *total = 0;
    if (s == NULL) /* n == 0: nothing to move */
        return 0;
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (total != NULL && gs_reply_take(&r, f) < 0)
        goto done;
    GS_CUDA_TRY(f, gs_launch_split_scatter(d, s->dev, s->cap, r != NULL ? gs_reply_view(r) : NULL,
                                           gs_cuda_stream));
    if (r != NULL && gs_reply_mark(r, f) == 0 && gs_reply_wait(r, &host, f) == 0)
        *total = (int64_t) * (const unsigned long long *)host;
done:
    gs_reply_give(r);
    return f->kind ? -1 : 0;
}

static void cuda_split_end(void *state)
{
    gs_split_scratch_give(state);
}

/* The last histogram's edges (or byte table) on the device, kept so that a repeated histogram
 * does not upload them again (a copy from pageable memory waits for the work already enqueued).
 * A replaced copy is freed stream-ordered, after the kernels that read it. */
static pthread_mutex_t edge_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *host; /* a copy of what `dev` holds (NULL: empty) */
    size_t bytes;
    void *dev;
} edge_cache;

/* *dev = the host edges' device copy: the cached one, or a new upload that replaces it. */
static int device_edges(const void *host, size_t bytes, const void **dev, gs_fail *f)
{
    void *copy = NULL, *up = NULL;

    pthread_mutex_lock(&edge_lock);
    if (edge_cache.host != NULL && edge_cache.bytes == bytes &&
        memcmp(edge_cache.host, host, bytes) == 0) {
        *dev = edge_cache.dev;
        goto done;
    }
    if (gs_cuda_alloc(&up, bytes, f) < 0)
        goto done;
    GS_CUDA_TRY(f, cudaMemcpyAsync(up, host, bytes, cudaMemcpyHostToDevice, gs_cuda_stream));
    *dev = up;
    if ((copy = malloc(bytes)) == NULL)
        goto done; /* no cache: nothing lost but speed (`up` is freed after the launch) */
    memcpy(copy, host, bytes);
    free(edge_cache.host);
    gs_cuda_free(edge_cache.dev);
    edge_cache.host = copy;
    edge_cache.bytes = bytes;
    edge_cache.dev = up;
    up = NULL;
done:
    pthread_mutex_unlock(&edge_lock);
    if (up != NULL && f->kind) /* uploaded, not cached: the caller frees it after its launch */
        gs_cuda_free(up);
    return f->kind ? -1 : (up != NULL ? 1 : 0);
}

static int cuda_hist(const gs_hist_desc *d, gs_fail *f)
{
    const size_t bytes = gs_hist_edge_bytes(d);
    gs_hist_desc dd = *d;
    const void *dev = NULL;
    int fresh = 0;

    GS_CUDA_TRY(f, gs_cuda_enter());
    if (bytes > 0 && (fresh = device_edges(d->edges, bytes, &dev, f)) < 0)
        goto done;
    dd.edges = dev;
    GS_CUDA_TRY(f, gs_cuda_hist_shared(&dd));
done:
    if (fresh == 1)
        gs_cuda_free((void *)dev);
    return f->kind ? -1 : 0;
}

static int cuda_step(const gs_step_desc *d, gs_fail *f)
{
    GS_CUDA_TRY(f, gs_cuda_enter());
    GS_CUDA_TRY(f, gs_launch_step(d, gs_cuda_stream));
done:
    return f->kind ? -1 : 0;
}

static int cuda_segreduce(const gs_segreduce_desc *d, gs_fail *f)
{
    const size_t bytes = gs_segreduce_scratch_bytes(d->n, d->nseg, d->ends == NULL);
    void *scratch = NULL;

    GS_CUDA_TRY(f, gs_cuda_enter());
    if (gs_cuda_alloc(&scratch, bytes, f) < 0)
        goto done;
    GS_CUDA_TRY(f, gs_launch_segreduce(d, scratch, bytes, gs_cuda_stream));
done:
    gs_cuda_free(scratch);
    return f->kind ? -1 : 0;
}

/* The heads' count (gs_launch_heads_count), read back from the reply; the scratch is the state
 * that the positions pass reads (split_end gives it back). The positions that fit in the room
 * are enqueued before the host waits for the count, so a count within the room needs no more
 * launches before the reduction. */
static int cuda_heads_count(const gs_split_desc *d, void **state, int64_t *positions, int64_t room,
                            int64_t *count, int *placed, gs_fail *f)
{
    gs_split_scratch *s = NULL;
    gs_reply *r = NULL;
    const void *host;

    *state = NULL;
    *count = 0;
    *placed = 0;
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (gs_split_scratch_take(gs_split_scratch_bytes(d->n), &s, f) < 0 || s == NULL)
        goto done;
    *state = s;
    if (gs_reply_take(&r, f) < 0)
        goto done;
    /* The count's kernel writes the reply itself (no copy's launch between it and the host),
     * and publishes the tiles' prefixes that the positions pass reads. */
    GS_CUDA_TRY(f, gs_launch_heads_count(d, s->dev, s->cap, gs_reply_view(r), gs_cuda_stream));
    if (gs_reply_mark(r, f) < 0)
        goto done;
    if (room > 0)
        GS_CUDA_TRY(f, gs_launch_heads(d, s->dev, s->cap, positions, room, gs_cuda_stream));
    if (gs_reply_wait(r, &host, f) == 0) {
        *count = (int64_t) * (const unsigned long long *)host;
        *placed = room > 0 && *count <= room;
    }
done:
    gs_reply_give(r);
    return f->kind ? -1 : 0;
}

/* The heads' positions from the count's scratch (`state`): all of them, for a count over the
 * room that heads_count filled. */
static int cuda_heads(const gs_split_desc *d, void *state, int64_t *positions, gs_fail *f)
{
    const gs_split_scratch *s = state;

    if (s == NULL) /* n == 0: no heads */
        return 0;
    GS_CUDA_TRY(f, gs_cuda_enter());
    GS_CUDA_TRY(f, gs_launch_heads(d, s->dev, s->cap, positions, d->n, gs_cuda_stream));
done:
    return f->kind ? -1 : 0;
}

/* The check in flight: its device words (the guard) and their way back. */
typedef struct index_state {
    void *dev;
    gs_reply *reply;
    int64_t m;
} index_state;

/* Enqueued, the check writing its words into the reply itself; the host waits in
 * cuda_index_wait. */
static int cuda_index_check(const int64_t *idx, int64_t m, int64_t n, gs_index_answer *a,
                            gs_fail *f)
{
    index_state *s = NULL;

    memset(a, 0, sizeof(*a));
    a->first_bad = -1;
    a->increasing = 1;
    if (m == 0)
        return 0;
    GS_CUDA_TRY(f, gs_cuda_enter());
    if ((s = calloc(1, sizeof(*s))) == NULL) {
        gs_fail_set(f, 'e', ENOMEM, "malloc", sizeof(*s));
        goto done;
    }
    s->m = m;
    if (gs_cuda_alloc(&s->dev, 2 * sizeof(unsigned long long), f) < 0 ||
        gs_reply_take(&s->reply, f) < 0)
        goto done;
    GS_CUDA_TRY(f, gs_cuda_index_check_shared(idx, m, n, s->dev, gs_reply_view(s->reply)));
    if (gs_reply_mark(s->reply, f) < 0)
        goto done;
    a->guard = s->dev;
    a->state = s;
done:
    if (f->kind && s != NULL) {
        gs_cuda_free(s->dev);
        gs_reply_give(s->reply);
        free(s);
    }
    return f->kind ? -1 : 0;
}

static int cuda_index_wait(gs_index_answer *a, gs_fail *f)
{
    index_state *s = a->state;
    const void *host;

    if (s == NULL)
        return 0;
    if (gs_reply_wait(s->reply, &host, f) == 0) {
        const unsigned long long *w = host;
        a->first_bad = w[0] == 0 ? -1 : s->m - (int64_t)w[0];
        a->increasing = w[1] == 0;
    }
    /* Freed stream-ordered: after the launches that read the guard. */
    gs_cuda_free(s->dev);
    gs_reply_give(s->reply);
    free(s);
    a->state = NULL;
    a->guard = NULL;
    return f->kind ? -1 : 0;
}

static int cuda_linrec(const gs_linrec_desc *d, gs_fail *f)
{
    const size_t bytes = gs_linrec_scratch_bytes(d->n);
    void *scratch = NULL;

    GS_CUDA_TRY(f, gs_cuda_enter());
    if (gs_cuda_alloc(&scratch, bytes, f) < 0)
        goto done;
    GS_CUDA_TRY(f, gs_launch_linrec(d, scratch, bytes, gs_cuda_stream));
done:
    gs_cuda_free(scratch);
    return f->kind ? -1 : 0;
}

/* A sort or argsort: rows sorted inside a block need no scratch; the device-wide sort takes
 * its scratch from the pool and gives it back after its launches. */
static int cuda_sort(const gs_sort_desc *d, gs_fail *f)
{
    const size_t bytes = gs_sort_scratch_bytes(d->rows, d->row_len, (int)gs_dtype_size(d->type),
                                               gs_dtype_is_float(d->type), d->keys_out != NULL,
                                               d->index_out != NULL);
    void *scratch = NULL;

    GS_CUDA_TRY(f, gs_cuda_enter());
    if (gs_cuda_alloc(&scratch, bytes, f) < 0)
        goto done;
    GS_CUDA_TRY(f, gs_launch_sort(d, scratch, bytes, gs_cuda_stream));
done:
    gs_cuda_free(scratch);
    return f->kind ? -1 : 0;
}

static int cuda_select(const gs_select_desc *d, gs_fail *f)
{
    GS_CUDA_TRY(f, gs_cuda_enter());
    GS_CUDA_TRY(f, gs_launch_select(d, gs_cuda_stream));
done:
    return f->kind ? -1 : 0;
}

const gs_backend_ops gs_cuda_backend = {
    .name = "cuda",
    .mem = GS_MEM_DEVICE,
    .scan = cuda_scan,
    .reduce = cuda_reduce,
    .split_count = cuda_split_count,
    .split_scatter = cuda_split_scatter,
    .split_end = cuda_split_end,
    .hist = cuda_hist,
    .step = cuda_step,
    .segreduce = cuda_segreduce,
    .heads_count = cuda_heads_count,
    .heads = cuda_heads,
    .index_check = cuda_index_check,
    .index_wait = cuda_index_wait,
    .linrec = cuda_linrec,
    .select = cuda_select,
    .sort = cuda_sort,
    .user_load = gs_cuda_user_load,
    .user_scan = gs_cuda_user_scan,
    .user_reduce = gs_cuda_user_reduce,
    .user_segreduce = gs_cuda_user_segreduce,
    .stream_scan = gs_cuda_stream_scan,
    .stream_chunk = gs_cuda_stream_chunk,
    .stream_reduce = gs_cuda_stream_reduce,
    .stream_partials = gs_cuda_stream_partials,
    .stream_hist = gs_cuda_stream_hist,
    .stream_split = gs_cuda_stream_split,
    .host_take = gs_pinned_take,
    .host_give = gs_pinned_give,
    .host_hold = gs_pinned_hold,
    .host_unhold = gs_pinned_unhold,
};

#endif /* GS_HAVE_CUDA */
