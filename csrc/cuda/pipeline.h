/*
 * cuda/pipeline.h - the one chunked, overlapped host<->device pipeline (cuda/pipeline.c) and
 * the primitives streamed through it (cuda/stream.c).
 * Level: backend (CUDA), host side; a build with CUDA only.
 * A pipeline moves n elements of up to GS_PIPE_MAX host arrays (any strides, byte order,
 * broadcast, cast on the way) to the device chunk by chunk, lets the primitive enqueue its work
 * on each chunk, and moves up to GS_PIPE_MAX outputs back, unpacking them into host arrays.
 * Three streams (host to device, compute, device to host) ordered by events per ring slot, so
 * the copies both ways and the kernels overlap; the pool's threads pack chunk k + 1 into a
 * pinned staging slot while chunk k - 1 is unpacked out of another.  Host memory beyond the
 * operands: the staging ring (2 x GS_PIPE_RING slots, allocated once); device memory: as much
 * again, from the pool, for the call (none for a plain transfer, gs_pipe.dev).  Chunk
 * boundaries are a fixed function of n, the dtypes and the configured chunk size (never of free
 * memory or timing), so a streamed float scan has the same bits on every run.
 */
#ifndef GS_PIPELINE_H
#define GS_PIPELINE_H

#include "cuda/cuda_rt.h"

/* Input or output arrays of one pipeline at most, and ring slots (chunks in flight). */
#define GS_PIPE_MAX 3
#define GS_PIPE_RING 3

/* One streamed array: a host view (its elements taken in C order) and the dtype its values
 * have on the device. */
typedef struct gs_pipe_array {
    const gs_view *view;
    gs_dtype dtype;
} gs_pipe_array;

/* A run of a chunk's outputs and its place: elements [from, from + count) of the chunk go to
 * elements [to, to + count) of every output view (split sends a chunk's flagged values and its
 * others to two places). */
#define GS_PIPE_PIECES 2
typedef struct gs_pipe_piece {
    int64_t from, to, count;
} gs_pipe_piece;

typedef struct gs_pipe {
    int64_t n; /* elements of every array streamed: [base, base + n) in C order */
    int64_t base;
    int nin, nout;
    gs_pipe_array in[GS_PIPE_MAX], out[GS_PIPE_MAX];
    int64_t chunk_align; /* chunks hold a multiple of this many elements (a row length), or 1 */
    int64_t chunk;       /* elements per chunk when > 0 (another pipeline's, to match it) */
    /* Enqueue chunk k's work (elements [e0, e0 + len) of the n) on gs_cuda_stream: dev_in[i] holds
     * len values of in[i].dtype, dev_out[j] receives len values of out[j].dtype.  No GIL.
     * NULL for a plain transfer into or out of `dev`. */
    int (*run)(void *ctx, int64_t k, int64_t e0, int64_t len, void *const *dev_in,
               void *const *dev_out, gs_fail *f);
    /* A plain transfer (run NULL; one input or one output): the device's C-contiguous values,
     * element base + e0 of the chunk at dev + (base + e0) x its size.  The chunks are copied
     * straight into or out of it, with no device slots and no copy between them and it. */
    char *dev;
    /* Where chunk k's outputs go: fills pc[] with at most GS_PIPE_PIECES pieces and returns
     * their number; NULL: the whole chunk to elements base + e0 onwards of each output view.
     * No GIL. */
    int (*pieces)(void *ctx, int64_t k, int64_t e0, int64_t len, gs_pipe_piece *pc);
    void *ctx;
} gs_pipe;

/* Elements per chunk of a pipeline over n elements of `bytes_per_elem` bytes (inputs or
 * outputs, whichever is more), a multiple of `align`: equal chunks no larger than the
 * configured chunk size (gs_xfer_chunk_bytes; at least one `align` per chunk). */
int64_t gs_pipe_chunk(int64_t n, int64_t bytes_per_elem, int64_t align);

/* Run the pipeline, asking gs_stop_requested() (host/pool.h) between chunks: when it says stop,
 * the run ends with a failure of kind 'p' and nothing left enqueued.  Call without the GIL. */
int gs_pipe_run(const gs_pipe *p, gs_fail *f);

/* The primitives streamed through it (cuda/stream.c): the CUDA table's streamed entries. */
int gs_cuda_stream_scan(const gs_scan_desc *d, const gs_view *in, const gs_view *flags,
                        const gs_view *out, gs_fail *f);
int64_t gs_cuda_stream_chunk(int64_t n, gs_dtype type);
int gs_cuda_stream_reduce(const gs_reduce_desc *d, const gs_view *in, const gs_view *out,
                          gs_fail *f);
int gs_cuda_stream_partials(const gs_reduce_desc *d, const gs_op *ops, int nops, const gs_view *in,
                            int64_t base, int64_t n, int64_t chunk, void *parts, gs_fail *f);
int gs_cuda_stream_hist(const gs_hist_desc *d, const gs_view *in, const gs_view *weights,
                        const gs_view *out, gs_fail *f);
int gs_cuda_stream_split(const gs_split_desc *d, const gs_view *in, const gs_view *flags,
                         int (*result)(void *ctx, int64_t len, gs_view *out), void *ctx,
                         int64_t *total, gs_fail *f);

#endif /* GS_PIPELINE_H */
