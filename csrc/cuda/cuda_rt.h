/*
 * cuda/cuda_rt.h - the CUDA-typed internals of csrc/cuda/: the stream, the device, the one
 * error macro. Included by the files of csrc/cuda/ only, and only in a build with CUDA.
 * Level: backend (CUDA), host side.
 */
#ifndef GS_CUDA_RT_H
#define GS_CUDA_RT_H

#ifndef GS_HAVE_CUDA
#error "cuda/cuda_rt.h is for builds with CUDA"
#endif

#include "cuda/cuda.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpuscan/launch.h"

/* The stream every gpuscan operation is enqueued on (blocking: ordered with the legacy default
 * stream) and the device it belongs to (runtime.c). */
extern cudaStream_t gs_cuda_stream;
extern int gs_cuda_device;

/* Record a failed CUDA call (the first failure wins) and jump to the function's `done:`
 * label, which always runs: its cleanup serves success and failure alike. */
#define GS_CUDA_TRY(f, call)                               \
    do {                                                   \
        cudaError_t gs_err_ = (call);                      \
        if (gs_err_ != cudaSuccess) {                      \
            gs_fail_set((f), 'c', (int)gs_err_, #call, 0); \
            goto done;                                     \
        }                                                  \
    } while (0)

/* Make gpuscan's device current in the calling thread. */
cudaError_t gs_cuda_enter(void);

/* runtime.c: give back what the pool holds unused (after the work enqueued so far, which a
 * trim waits for); *released its size. */
int gs_cuda_trim_pool(size_t *released, gs_fail *f);

/* scan_scratch.c: enqueue one single-pass scan (gs_launch_scan) on the scans' shared scratch,
 * zeroed once and reused with an epoch per scan.  No GIL needed. */
cudaError_t gs_cuda_scan_shared(const gs_scan_desc *d);

/* scan_scratch.c: the same for any launch that tags its look-back with an epoch: launch(ctx,
 * scratch, cap, epoch) enqueued under the scratch's lock, with at least `bytes` of it. */
typedef cudaError_t (*gs_tagged_launch)(void *ctx, void *scratch, size_t cap, unsigned epoch);
cudaError_t gs_cuda_scan_tagged(size_t bytes, gs_tagged_launch launch, void *ctx);

/* scan_scratch.c: enqueue one reduction (gs_launch_reduce) on the reductions' shared scratch,
 * zeroed once (each reduction leaves its counters zero).  No GIL needed. */
cudaError_t gs_cuda_reduce_shared(const gs_reduce_desc *d);

/* scan_scratch.c: enqueue one histogram (gs_launch_hist) with the histograms' shared ready word
 * and the next epoch.  No GIL needed. */
cudaError_t gs_cuda_hist_shared(const gs_hist_desc *d);
/* scan_scratch.c: enqueue reduceat's index check (gs_launch_index_check) on the checks' shared
 * words, zeroed once (each check's last block leaves them zero).  No GIL needed. */
cudaError_t gs_cuda_index_check_shared(const int64_t *idx, int64_t m, int64_t n,
                                       unsigned long long *guard, unsigned long long *reply);

/* scan_scratch.c: a split's scratch of at least `bytes` (gs_split_scratch_bytes), its
 * header's running words zero (gpuscan/config.h): the kept one when it is free, else a new one
 * (*out NULL for 0 bytes); give it back once the launches that use it are enqueued.  No GIL
 * needed. */
typedef struct gs_split_scratch {
    void *dev;
    size_t cap;
} gs_split_scratch;
int gs_split_scratch_take(size_t bytes, gs_split_scratch **out, gs_fail *f);
void gs_split_scratch_give(gs_split_scratch *s);

/* pinned.c: page-locked host blocks for results (the table's host_take and host_give), and
 * whether [lo, hi) lies in one of them. */
void *gs_pinned_take(size_t bytes);
void gs_pinned_give(void *ptr);
int gs_pinned_holds(const void *lo, const void *hi);
size_t gs_pinned_release_cached(void);
/* The table's host_hold and host_unhold (include/gpuscan/backend.h). */
int gs_pinned_hold(void *ptr, size_t bytes);
void gs_pinned_unhold(void *ptr);
/* Bytes of the cache's blocks in use by results, and cached. */
void gs_pinned_counts(size_t *in_use, size_t *cached);

/* reply.c: a few bytes of device memory copied by a kernel to page-locked host memory on
 * gpuscan's stream, waited for with an event of their own, so that work enqueued after the copy
 * goes on while the host reads them.  take (made once, then kept), fetch (enqueue the copy of
 * `bytes` <= GS_REPLY_BYTES from `dev`, then the event), wait (*host: the bytes), give (back to
 * the free list, after any copy still on its way).  No GIL needed. */
#define GS_REPLY_BYTES 64
typedef struct gs_reply gs_reply;
int gs_reply_take(gs_reply **out, gs_fail *f);
int gs_reply_fetch(gs_reply *r, const void *dev, size_t bytes, gs_fail *f);
/* Or a kernel writes the bytes itself: to the device's view of them, then mark (the event). */
void *gs_reply_view(gs_reply *r);
int gs_reply_mark(gs_reply *r, gs_fail *f);
int gs_reply_wait(gs_reply *r, const void **host, gs_fail *f);
void gs_reply_give(gs_reply *r);

#endif /* GS_CUDA_RT_H */
