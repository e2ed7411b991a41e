/*
 * cuda/scan_scratch.c - the single-pass scans' shared look-back scratch, and its epochs; the
 * reductions' shared scratch; the histograms' ready word.
 * Level: backend (CUDA), host side; a build with CUDA only.
 * The one place the epoch protocol is explained. A single-pass scan's look-back starts from a
 * zero tile counter and no descriptor that reads as published (device/tile_state.cuh). Rather
 * than a memset on the stream before every scan (a measurable part of a small scan), every scan
 * shares one scratch, zeroed once when it is allocated, and tags its descriptors with its own
 * epoch (gs_scan_desc.epoch, in the status word's high bits): a descriptor another scan left
 * reads as unpublished, and each scan leaves the tile counter at zero (the block that takes the
 * last tile resets it). After GS_EPOCH_LIMIT - 1 scans the tags would repeat, so the scratch is
 * zeroed again. The lock keeps epoch, buffer and launch in one order on the stream, so a buffer
 * replaced by a larger one is freed in stream order, after every scan enqueued on it.  The scans
 * of an operator you write (cuda/user.c) share the scratch and the epochs the same way
 * (gs_cuda_scan_tagged), with descriptors of their own layout (kernels/agent/user.cuh).
 * Reductions share a scratch of their own the same way (without epochs): a reduction leaves its
 * rows' counters at zero (the last chunk of a row resets them), and its partials are written
 * before they are read.  But one reduction's partials lie where a later one with more rows keeps
 * counters, so the scratch remembers how many of its first bytes are known to be zero, and a
 * reduction that needs more counters zeroes only the difference: a repeated reduction of the
 * same shape needs no memset and no allocation.
 * reduceat's index checks share their three words (the kernel's last block zeroes them).
 * Histograms share one device word: the kernel's block 0 zeroes the result and then writes the
 * launch's epoch there, which the other blocks wait for (agent/hist.cuh).  Any value differing
 * from what the launches before left will do, so the epoch is a 64-bit counter (it never wraps),
 * handed out and enqueued under the lock like the scans'.
 * A split's scratch (gpuscan/config.h) needs only its header's running word at zero, which each
 * count pass leaves so: one scratch is kept, so a small split needs neither an allocation nor a
 * memset. A split holds its scratch from the count pass to the scatter, with the GIL taken
 * between them, so a second split in flight does not wait for the kept one: it takes a new one,
 * zeroed when allocated. Only a scratch of up to SPLIT_KEEP_BYTES is kept: a larger split would
 * save little beside its passes, and a kept buffer is never trimmed.
 */
#ifdef GS_HAVE_CUDA

#include "cuda/cuda_rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "gpuscan/config.h"

/* A device buffer kept between calls, zeroed when allocated; used under its lock only. */
typedef struct kept_scratch {
    pthread_mutex_t lock;
    void *ptr;
    size_t cap;
    size_t clean; /* the reductions': its first `clean` bytes are zero */
} kept_scratch;

static kept_scratch scan_scratch = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };
static kept_scratch reduce_scratch = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };
static unsigned epoch; /* the scans': the last epoch handed out since their scratch was zeroed */
static kept_scratch hist_word = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };
static unsigned long long hist_epoch; /* the histograms': the last epoch handed out */
static kept_scratch check_words = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 };

/* k holds at least `bytes`, zeroed if it was replaced (under k's lock).  The old buffer is
 * freed in stream order, after every launch enqueued on it. */
static cudaError_t grow(kept_scratch *k, size_t bytes, int *replaced)
{
    void *p = NULL;
    size_t cap = bytes + bytes / 4; /* room to grow a little without a new buffer */
    cudaError_t err;

    *replaced = 0;
    if (k->cap >= bytes)
        return cudaSuccess;
    err = cudaMallocAsync(&p, cap, gs_cuda_stream);
    if (err == cudaSuccess && (err = cudaMemsetAsync(p, 0, cap, gs_cuda_stream)) != cudaSuccess)
        gs_cuda_free(p);
    if (err != cudaSuccess)
        return err;
    gs_cuda_free(k->ptr);
    k->ptr = p;
    k->cap = cap;
    k->clean = cap;
    *replaced = 1;
    return cudaSuccess;
}

cudaError_t gs_cuda_scan_tagged(size_t bytes, gs_tagged_launch launch, void *ctx)
{
    cudaError_t err;
    int fresh;

    pthread_mutex_lock(&scan_scratch.lock);
    err = grow(&scan_scratch, bytes, &fresh);
    if (err == cudaSuccess && fresh) {
        epoch = 0;
    } else if (err == cudaSuccess && epoch == GS_EPOCH_LIMIT - 1) { /* epochs used up: zero it */
        if ((err = cudaMemsetAsync(scan_scratch.ptr, 0, scan_scratch.cap, gs_cuda_stream)) ==
            cudaSuccess)
            epoch = 0;
    }
    if (err == cudaSuccess)
        err = launch(ctx, scan_scratch.ptr, scan_scratch.cap, ++epoch);
    pthread_mutex_unlock(&scan_scratch.lock);
    return err;
}

static cudaError_t scan_launch(void *ctx, void *scratch, size_t cap, unsigned e)
{
    gs_scan_desc tagged = *(const gs_scan_desc *)ctx;
    tagged.epoch = e;
    return gs_launch_scan(&tagged, scratch, cap, gs_cuda_stream);
}

cudaError_t gs_cuda_scan_shared(const gs_scan_desc *d)
{
    const size_t bytes = gs_scan_scratch_bytes(d->n);
    if (bytes == 0) /* n == 0: nothing to launch */
        return gs_launch_scan(d, NULL, 0, gs_cuda_stream);
    return gs_cuda_scan_tagged(bytes, scan_launch, (void *)d);
}

cudaError_t gs_cuda_reduce_shared(const gs_reduce_desc *d)
{
    const size_t bytes = gs_reduce_scratch_bytes(d->rows, d->row_len);
    /* the counters, as gs_launch_reduce carves the scratch; the partials follow them */
    const size_t counters = (size_t)gs_round_up(4 * d->rows, GS_SCRATCH_ALIGN);
    kept_scratch *k = &reduce_scratch;
    cudaError_t err;
    int fresh;

    if (bytes == 0) /* rows of one chunk: no partials, no counters */
        return gs_launch_reduce(d, NULL, 0, gs_cuda_stream);
    pthread_mutex_lock(&k->lock);
    err = grow(k, bytes, &fresh);
    if (err == cudaSuccess && k->clean < counters)
        err = cudaMemsetAsync((char *)k->ptr + k->clean, 0, counters - k->clean, gs_cuda_stream);
    if (err == cudaSuccess) {
        err = gs_launch_reduce(d, k->ptr, k->cap, gs_cuda_stream);
        /* the counters are left zero, the partials after them are not (nor, on an error, is
         * anything) */
        k->clean = err == cudaSuccess ? counters : 0;
    }
    pthread_mutex_unlock(&k->lock);
    return err;
}

cudaError_t gs_cuda_hist_shared(const gs_hist_desc *d)
{
    cudaError_t err;
    int fresh;

    pthread_mutex_lock(&hist_word.lock);
    err = grow(&hist_word, sizeof(unsigned long long), &fresh);
    if (err == cudaSuccess)
        err = gs_launch_hist(d, (unsigned long long *)hist_word.ptr, ++hist_epoch, gs_cuda_stream);
    pthread_mutex_unlock(&hist_word.lock);
    return err;
}

cudaError_t gs_cuda_index_check_shared(const int64_t *idx, int64_t m, int64_t n,
                                       unsigned long long *guard, unsigned long long *reply)
{
    cudaError_t err;
    int fresh;

    pthread_mutex_lock(&check_words.lock);
    err = grow(&check_words, 8 * GS_INDEX_CHECK_WORDS, &fresh);
    if (err == cudaSuccess)
        err = gs_launch_index_check(idx, m, n, (unsigned long long *)check_words.ptr, guard,
                                    reply, gs_cuda_stream);
    pthread_mutex_unlock(&check_words.lock);
    return err;
}

#define SPLIT_KEEP_BYTES ((size_t)4 << 20) /* the scratch of a split of 2^24 values fits */

static pthread_mutex_t split_lock = PTHREAD_MUTEX_INITIALIZER;
static gs_split_scratch *split_spare; /* the kept scratch while no split holds it */

int gs_split_scratch_take(size_t bytes, gs_split_scratch **out, gs_fail *f)
{
    gs_split_scratch *s = NULL;
    size_t cap;

    *out = NULL;
    if (bytes == 0)
        return 0;
    if (bytes <= SPLIT_KEEP_BYTES) { /* a larger one is never kept: leave the spare be */
        pthread_mutex_lock(&split_lock);
        s = split_spare;
        split_spare = NULL;
        pthread_mutex_unlock(&split_lock);
    }
    if (s != NULL && s->cap >= bytes) {
        *out = s;
        return 0;
    }
    if (s != NULL) { /* too small: freed after the launches enqueued on it */
        gs_cuda_free(s->dev);
        s->dev = NULL;
    } else if ((s = calloc(1, sizeof(*s))) == NULL) {
        return gs_fail_set(f, 'e', ENOMEM, "malloc", sizeof(*s));
    }
    /* room to grow a little without a new buffer, where it will be kept */
    cap = bytes + bytes / 4 <= SPLIT_KEEP_BYTES ? bytes + bytes / 4 : bytes;
    if (gs_cuda_alloc(&s->dev, cap, f) < 0)
        goto done;
    s->cap = cap;
    GS_CUDA_TRY(f, cudaMemsetAsync(s->dev, 0, GS_SCRATCH_ALIGN, gs_cuda_stream));
done:
    if (f->kind) {
        gs_cuda_free(s->dev);
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void gs_split_scratch_give(gs_split_scratch *s)
{
    if (s == NULL)
        return;
    if (s->cap <= SPLIT_KEEP_BYTES) {
        pthread_mutex_lock(&split_lock);
        if (split_spare == NULL) {
            split_spare = s;
            s = NULL;
        }
        pthread_mutex_unlock(&split_lock);
    }
    if (s != NULL) {
        gs_cuda_free(s->dev);
        free(s);
    }
}

#endif /* GS_HAVE_CUDA */
