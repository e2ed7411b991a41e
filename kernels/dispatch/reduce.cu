/*
 * dispatch/reduce.cu - reductions: their __global__ kernels and the extern "C" launcher.
 *
 * Level: device-wide algorithm (kernels + dispatch).  One kernel per row of GS_TYPED_KERNELS
 * (dispatch/kernel_table.cuh), shared with the scan; rows and row length are run-time parameters,
 * so axis=None (one row), the last axis (many rows) and everything between are one launch.
 */
#include <limits.h>

#include "dispatch/kernel_table.cuh"

/* Kernel parameters (by value): the reduction and its scratch, carved as
 * gs_reduce_scratch_bytes() sized it. */
typedef struct gs_reduce_kparams {
    const void *in;
    void *out;
    int64_t rows;
    int64_t row_len;
    int64_t chunk_len;            /* gs_reduce_chunk_len(row_len) */
    unsigned *counters;           /* chunks finished, per row: zero on entry and on exit */
    unsigned long long *partials; /* (value, compensation) per chunk of every row */
} gs_reduce_kparams;

#define GS_AGENT "agent/reduce.cuh"
#include "stamp.cuh"

#define GS_REDUCE_KERNEL_NAME(op, in, out) gs_reduce_##op##_##in##_##out

#define GS_X_KERNEL(op, in, out, rs)                            \
    __global__ void __launch_bounds__(GS_NT)                    \
        GS_REDUCE_KERNEL_NAME(op, in, out)(gs_reduce_kparams p) \
    {                                                           \
        reduce_items_##rs(op, in, out, &p);                     \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_reduce_kernel)(gs_reduce_kparams);

/* The kernel for a (in, out, op) triple that gs_scan_pair_direct() accepts, or NULL. */
static gs_reduce_kernel gs_reduce_kernel_for(gs_dtype in, gs_dtype out, gs_op op)
{
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)         \
    if (op == op_ && in == in_ && out == out_) \
        return GS_REDUCE_KERNEL_NAME(op_, in_, out_);
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

extern "C" cudaError_t gs_launch_reduce(const gs_reduce_desc *d, void *scratch,
                                        size_t scratch_bytes, cudaStream_t stream)
{
    gs_reduce_kernel kernel = gs_reduce_kernel_for(d->in_type, d->out_type, d->op);
    const int64_t chunks = gs_reduce_chunks(d->row_len);
    const size_t need = gs_reduce_scratch_bytes(d->rows, d->row_len);
    gs_reduce_kparams p;
    cudaError_t err;
    int resident;

    if (d->rows == 0)
        return cudaSuccess;
    if (kernel == NULL || d->row_len < 1 || scratch_bytes < need || (need > 0 && !scratch))
        return cudaErrorInvalidValue;
    p.in = d->in;
    p.out = d->out;
    p.rows = d->rows;
    p.row_len = d->row_len;
    p.chunk_len = gs_reduce_chunk_len(d->row_len);
    if (p.chunk_len > INT_MAX / 2) /* offsets inside a chunk are ints (agent/reduce.cuh): a row
                                    * of 2^41 values, more than any device holds */
        return cudaErrorInvalidValue;
    p.counters = (unsigned *)scratch;
    p.partials =
        need == 0
            ? NULL
            : (unsigned long long *)((char *)scratch + gs_round_up(4 * d->rows, GS_SCRATCH_ALIGN));

    /* ---- One launch: a grid-stride loop over the rows' chunks. ---- */
    err = gs_resident_blocks((const void *)kernel, 0, &resident);
    if (err != cudaSuccess)
        return err;
    int64_t blocks = d->rows * chunks;
    if (blocks > resident)
        blocks = resident;
    kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(p);
    return gs_launch_check(stream);
}
