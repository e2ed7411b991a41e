/*
 * dispatch/reduce.cu - reductions: their __global__ kernels and the extern "C" launcher.
 * Level: device-wide algorithm (kernels + dispatch).  Three kernels per row of GS_TYPED_KERNELS
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
    int64_t chunks;               /* of a row: gs_reduce_chunks(row_len) */
    unsigned *counters;           /* chunks finished, per row: zero on entry and on exit */
    unsigned long long *partials; /* (value, compensation) per chunk of every row */
    int plus_zero;                /* gs_reduce_desc.plus_zero */
} gs_reduce_kparams;

#define GS_AGENT "agent/reduce.cuh"
#include "stamp.cuh"

#define GS_REDUCE_KERNEL_NAME(op, in, out) gs_reduce_##op##_##in##_##out
#define GS_REDUCE_PARTS_NAME(op, in, out) gs_reduce_parts_##op##_##in##_##out
#define GS_REDUCE_COMBINE_NAME(op, in, out) gs_reduce_combine_##op##_##in##_##out

/* The items' kernels' launch bounds: eight blocks a multiprocessor (32 registers) where four-
 * byte registers reach it without spilling (docs/performance-notes.md); eight-byte ones as
 * ptxas likes (eight would spill). */
#define GS_REDUCE_BOUNDS_u32 GS_NT, 8
#define GS_REDUCE_BOUNDS_i32 GS_NT, 8
#define GS_REDUCE_BOUNDS_f32 GS_NT, 8
#define GS_REDUCE_BOUNDS_u64 GS_NT
#define GS_REDUCE_BOUNDS_i64 GS_NT
#define GS_REDUCE_BOUNDS_f64 GS_NT

/* Three kernels a row of the table: the one-launch items (a grid-stride loop, the last chunk of a
 * row combining it), the items a block each (the first of two launches) and the rows' partials
 * combined (the second: its own register bound, agent/reduce.cuh). */
#define GS_X_KERNEL(op, in, out, rs)                             \
    __global__ void __launch_bounds__(GS_REDUCE_BOUNDS_##rs)     \
        GS_REDUCE_KERNEL_NAME(op, in, out)(gs_reduce_kparams p)  \
    {                                                            \
        reduce_items_##rs(op, in, out, &p);                      \
    }                                                            \
    __global__ void __launch_bounds__(GS_REDUCE_BOUNDS_##rs)     \
        GS_REDUCE_PARTS_NAME(op, in, out)(gs_reduce_kparams p)   \
    {                                                            \
        reduce_parts_##rs(op, in, out, &p);                      \
    }                                                            \
    __global__ void __launch_bounds__(GS_NT, 1)                  \
        GS_REDUCE_COMBINE_NAME(op, in, out)(gs_reduce_kparams p) \
    {                                                            \
        reduce_combine_##rs(op, out, &p);                        \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_reduce_kernel)(gs_reduce_kparams);

/* The kernels for a (in, out, op) triple that gs_scan_pair_direct() accepts: the one-launch
 * items' kernel (NULL if none), in *parts the items' kernel of the two-launch shape and in
 * *combine its combining one. */
static gs_reduce_kernel gs_reduce_kernel_for(gs_dtype in, gs_dtype out, gs_op op,
                                             gs_reduce_kernel *parts, gs_reduce_kernel *combine)
{
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)                     \
    if (op == op_ && in == in_ && out == out_) {           \
        *parts = GS_REDUCE_PARTS_NAME(op_, in_, out_);     \
        *combine = GS_REDUCE_COMBINE_NAME(op_, in_, out_); \
        return GS_REDUCE_KERNEL_NAME(op_, in_, out_);      \
    }
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

extern "C" cudaError_t gs_launch_reduce(const gs_reduce_desc *d, void *scratch,
                                        size_t scratch_bytes, cudaStream_t stream)
{
    gs_reduce_kernel parts = NULL, combine = NULL;
    gs_reduce_kernel kernel =
        gs_reduce_kernel_for(d->in_type, d->out_type, d->op, &parts, &combine);
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
    p.chunks = chunks;
    p.plus_zero = d->plus_zero;
    if (p.chunk_len > INT_MAX / 2) /* offsets inside a chunk are ints (agent/reduce.cuh): a row
                                    * of 2^41 values, more than any device holds */
        return cudaErrorInvalidValue;
    p.counters = (unsigned *)scratch;
    p.partials =
        need == 0
            ? NULL
            : (unsigned long long *)((char *)scratch + gs_round_up(4 * d->rows, GS_SCRATCH_ALIGN));

    /* ---- Up to one wave of blocks, or rows of one chunk: one launch, a grid-stride loop over
     * the rows' chunks where the last chunk of a row to finish combines the row's partials. */
    err = gs_resident_blocks((const void *)kernel, 0, &resident);
    if (err != cudaSuccess)
        return err;
    const int64_t items = d->rows * chunks;
    if (chunks == 1 || items <= resident) {
        kernel<<<(unsigned)(items < resident ? items : resident), GS_NT, 0, stream>>>(p);
        return gs_launch_check(stream);
    }

    /* ---- More: a block per chunk, refilled by the hardware as blocks finish (cheaper than the
     * fences, counts and imbalance of the first shape: docs/performance-notes.md), then a block
     * per row combining its partials, as the first launch's programmatic dependent. ---- */
    if (items > INT_MAX) /* a block per item: 2^31 chunks of thousands of values, more than any
                          * device holds */
        return cudaErrorInvalidValue;
    parts<<<(unsigned)items, GS_NT, 0, stream>>>(p);
    err = gs_launch_check(stream);
    if (err != cudaSuccess)
        return err;
    return gs_launch_dependent((const void *)combine, d->rows < resident ? d->rows : resident, &p,
                               stream);
}
