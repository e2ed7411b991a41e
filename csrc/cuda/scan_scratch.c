/*
 * cuda/scan_scratch.c - the single-pass scans' shared look-back scratch, and its epochs.
 *
 * Level: backend (CUDA), host side; a build with CUDA only.
 *
 * The one place the epoch protocol is explained.  A single-pass scan's look-back starts from a
 * zero tile counter and no descriptor that reads as published (device/tile_state.cuh).  Zeroing
 * a fresh scratch before every scan costs a memset on the stream (3.5 us on an H200: 6.5% of an
 * int32 scan of 2^24 values).  Instead every scan shares one scratch, zeroed once when it is
 * allocated, and tags its descriptors with its own epoch (gs_scan_desc.epoch, in the status
 * word's high bits): a descriptor another scan left reads as unpublished, and each scan leaves
 * the tile counter at zero (the block that takes the last tile resets it).  After
 * GS_EPOCH_LIMIT - 1 scans the tags would repeat, so the scratch is zeroed again.  The lock
 * keeps epoch, buffer and launch in one order on the stream, so a buffer replaced by a larger
 * one is freed in stream order, after every scan enqueued on it.
 */
#ifdef GS_HAVE_CUDA

#include "cuda/cuda_rt.h"

#include <pthread.h>

#include "gpuscan/config.h"

static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static void *scratch;
static size_t scratch_cap;
static unsigned epoch; /* the last epoch handed out since the scratch was zeroed */

/* A scratch of at least `bytes`, zeroed, with `epoch` reset (under the lock). */
static cudaError_t grow(size_t bytes)
{
    void *p = NULL;
    size_t cap = bytes + bytes / 4; /* room to grow a little without a new buffer */
    cudaError_t err = cudaMallocAsync(&p, cap, gs_cuda_stream);

    if (err == cudaSuccess && (err = cudaMemsetAsync(p, 0, cap, gs_cuda_stream)) != cudaSuccess)
        gs_cuda_free(p);
    if (err != cudaSuccess)
        return err;
    gs_cuda_free(scratch);
    scratch = p;
    scratch_cap = cap;
    epoch = 0;
    return cudaSuccess;
}

cudaError_t gs_cuda_scan_shared(const gs_scan_desc *d)
{
    size_t bytes = gs_scan_scratch_bytes(d->n);
    gs_scan_desc tagged = *d;
    cudaError_t err = cudaSuccess;

    if (bytes == 0) /* n == 0: nothing to launch */
        return gs_launch_scan(d, NULL, 0, gs_cuda_stream);
    pthread_mutex_lock(&scratch_lock);
    if (scratch_cap < bytes) {
        err = grow(bytes);
    } else if (epoch == GS_EPOCH_LIMIT - 1) { /* epochs used up: zero it again */
        if ((err = cudaMemsetAsync(scratch, 0, scratch_cap, gs_cuda_stream)) == cudaSuccess)
            epoch = 0;
    }
    if (err == cudaSuccess) {
        tagged.epoch = ++epoch;
        err = gs_launch_scan(&tagged, scratch, scratch_cap, gs_cuda_stream);
    }
    pthread_mutex_unlock(&scratch_lock);
    return err;
}

#endif /* GS_HAVE_CUDA */
