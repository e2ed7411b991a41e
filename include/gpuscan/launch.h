/*
 * gpuscan/launch.h - the CUDA launchers of kernels/dispatch/ (extern "C"), as csrc/cuda/ calls
 * them.
 * Level: include, for the host side of a build with CUDA only: the launchers' definitions
 * (the .cu files of kernels/dispatch/, compiled by nvcc) and their one caller, csrc/cuda/.  Each
 * enqueues on `stream` and returns the first CUDA error; device pointers throughout.
 */
#ifndef GS_LAUNCH_H
#define GS_LAUNCH_H

#include <cuda_runtime_api.h>

#include "gpuscan/desc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A teaching scan (d->algorithm != GS_ALGO_AUTO) on `stream`; `scratch` holds at least
 * gs_teach_scratch_bytes(d) bytes (gpuscan/teach_config.h). */
cudaError_t gs_launch_teach_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                                 cudaStream_t stream);

/* Enqueue one teaching step on `stream` (device pointers; work a device counter or NULL). */
cudaError_t gs_launch_step(const gs_step_desc *d, cudaStream_t stream);

/* Enqueue the scan on `stream`: one kernel launch. `scratch` holds at least
 * gs_scan_scratch_bytes(d->n) bytes (gpuscan/config.h), its tile counter zero and no word of it
 * tagged with d->epoch (csrc/cuda/scan_scratch.c). */
cudaError_t gs_launch_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                           cudaStream_t stream);

/* Enqueue the reduction on `stream`: the row partials and the deterministic final combine, in
 * one launch or two (dispatch/reduce.cu). `scratch` holds at least
 * gs_reduce_scratch_bytes(rows, row_len) bytes, its first 4 * rows bytes (the rows' counters)
 * zero, and is left so: a scratch zeroed once serves every reduction after it on the stream. */
cudaError_t gs_launch_reduce(const gs_reduce_desc *d, void *scratch, size_t scratch_bytes,
                             cudaStream_t stream);

/* Enqueue the strided converting copy on `stream`. */
cudaError_t gs_launch_copy(const gs_copy_desc *d, cudaStream_t stream);

/* Enqueue the selection on `stream`. */
cudaError_t gs_launch_select(const gs_select_desc *d, cudaStream_t stream);

/* Enqueue the copy of `bytes` (at most 256, any alignment) from device memory `src` to `dst`,
 * the device's view of page-locked host memory (cuda/reply.c), by a kernel. */
cudaError_t gs_launch_reply(void *dst, const void *src, size_t bytes, cudaStream_t stream);

/* The split in two launches on `stream`, with `scratch` of gs_split_scratch_bytes(d->n) bytes
 * (gpuscan/config.h) kept between them, whose GS_SPLIT_RUNNING word is zero (zeroed once when
 * allocated: the count pass leaves it zero). `reply`, when not NULL, is a device-visible word
 * (e.g. a page-locked reply, cuda/reply.c) that receives the flagged count as a uint64.
 * gs_launch_split_count runs the count pass (d->out unused), with no memset: afterwards the
 * scratch's first 8 bytes (GS_SPLIT_TOTAL) hold the flagged count, also written to `reply`.
 * gs_launch_split_scatter then writes d->out, and the count to `reply` (nothing for n == 0). */
cudaError_t gs_launch_split_count(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                  unsigned long long *reply, cudaStream_t stream);
/* The count pass for segment heads (gs_launch_heads_count): no total (the scratch's header is
 * not read or written); every descriptor word is written instead. */
cudaError_t gs_launch_split_count_heads(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                        cudaStream_t stream);
cudaError_t gs_launch_split_scatter(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                    unsigned long long *reply, cudaStream_t stream);

/* Enqueue the segmented reduction on `stream`; `scratch` holds at least
 * gs_segreduce_scratch_bytes(d->n, d->nseg, d->ends == NULL) bytes (gpuscan/config.h). */
cudaError_t gs_launch_segreduce(const gs_segreduce_desc *d, void *scratch, size_t scratch_bytes,
                                cudaStream_t stream);

/* The count of the segment heads of d->flags: the heads' count pass over `scratch`
 * (gs_split_scratch_bytes(d->n) bytes), then one launch that publishes every count tile's
 * prefix in its descriptor (which gs_launch_heads's look-backs need) and writes the flagged
 * count, plus one for element 0 when its flag is clear, into the scratch's first 8 bytes and
 * into `reply` (the device's view of a host reply, cuda/reply.c) unless it is NULL. */
cudaError_t gs_launch_heads_count(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                  unsigned long long *reply, cudaStream_t stream);

/* Enqueue the positions of the segment heads of d->flags into `positions`, the first `room`
 * of them (the rest are not written), after gs_launch_heads_count over the same `scratch`
 * (whose descriptors and mask it reads). */
cudaError_t gs_launch_heads(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                            int64_t *positions, int64_t room, cudaStream_t stream);

/* Check reduceat's m indices idx (device memory) against [0, n) into guard[0] (m minus the
 * first bad index's position; 0: none) and guard[1] (nonzero when they do not strictly
 * increase), and the same two words into `reply` (memory the host maps: a gs_reply's view) once
 * they are final. `words` is GS_INDEX_CHECK_WORDS device uint64 that are zero when the check
 * starts and that it leaves zero (the host keeps one such buffer, zeroed when made: no memset a
 * call); `guard` is two device uint64, written whole. Both zero: the indices are a sorted
 * partition's starts (a guard of gs_segreduce_desc). */
#define GS_INDEX_CHECK_WORDS 3 /* the two, and the blocks done */
cudaError_t gs_launch_index_check(const int64_t *idx, int64_t m, int64_t n,
                                  unsigned long long *words, unsigned long long *guard,
                                  unsigned long long *reply, cudaStream_t stream);

/* Enqueue the linear recurrences on `stream` (one launch after zeroing the scratch);
 * `scratch` holds at least gs_linrec_scratch_bytes(d->n) bytes (gpuscan/config.h). */
cudaError_t gs_launch_linrec(const gs_linrec_desc *d, void *scratch, size_t scratch_bytes,
                             cudaStream_t stream);

/* Enqueue the histogram on `stream`: one kernel launch (the method's; auto picks by nbins).
 * Unless d->accumulate, the accumulators are zeroed first: up to 64 KiB of them by the kernel's
 * block 0, which then sets *ready (a device word) to `epoch`, a value that must differ from what
 * any launch before it left there (a counter); a larger result by a memset before the launch.
 * All pointers are device memory. */
cudaError_t gs_launch_hist(const gs_hist_desc *d, unsigned long long *ready,
                           unsigned long long epoch, cudaStream_t stream);

/* How the last gs_launch_hist launch of the process counted (for the tests). */
typedef struct gs_hist_launch {
    int shared;         /* shared-memory histograms (else global atomics) */
    int replicas;       /* copies of a slice per block */
    int64_t slices;     /* blocks that split the bin range */
    int64_t slice_bins; /* bins per slice */
    int64_t blocks;     /* grid size */
    int64_t smem_bytes; /* dynamic shared memory per block */
} gs_hist_launch;
void gs_launch_hist_last(gs_hist_launch *out);

/* Enqueue the sort or argsort on `stream`: rows of at most GS_SORT_BLOCK_NV keys in one launch
 * (no scratch); longer rows by a memset of the scratch's head, the histogram and one launch per
 * digit position (dispatch/sort.cu). `scratch` holds at least gs_sort_scratch_bytes(d->rows,
 * d->row_len, key bytes, whether they are floats, d->keys_out != NULL, d->index_out != NULL)
 * bytes (gpuscan/config.h). */
cudaError_t gs_launch_sort(const gs_sort_desc *d, void *scratch, size_t scratch_bytes,
                           cudaStream_t stream);

/* Synchronize after every launch when set (GPUSCAN_DEBUG_SYNC=1): errors then surface at the
 * launch that caused them. */
extern int gs_launch_debug_sync;

#ifdef __cplusplus
}
#endif

#endif /* GS_LAUNCH_H */
