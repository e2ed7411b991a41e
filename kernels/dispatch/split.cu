/*
 * dispatch/split.cu - split (stable partition) and compact: their __global__ kernels and the extern
 * "C" launchers.
 * Level: device-wide algorithm (kernels + dispatch).  A count pass (one kernel per flag width,
 * floats apart: -0.0 is not a flag, NaN is) and a scatter pass (one kernel per value width: the
 * values are moved as bits, so every dtype of a width shares it; compact is a run-time switch).
 * Why two launches: the unflagged group's base in `out` needs the TOTAL flagged count, which a
 * single pass learns only at its last tile (CUB's Partition::Flagged writes the unflagged group
 * reversed instead; the contract wants both in order). The count pass reads only the flags and
 * pays for itself: it publishes every tile's count as a look-back aggregate (tile 0's as its
 * prefix), so the scatter's look-back never waits, and writes the flags back as one bit per
 * value, so the scatter is one kernel per value width and reads n / 8 bytes of flags. A compact
 * learns the total between the launches (to size its output) from the count pass's `reply`
 * word; a split's count reaches the host from the scatter's.
 */
#include "dispatch/kernel_table.cuh"

/* The layers of every register type; the split uses u32 (the block scan of per-piece counts)
 * and u64 (the look-back over flagged counts, past 2^32 values). */
#include "stamp.cuh"

#include "agent/split.cuh"

/* X(dtype): the flag dtypes a count kernel is stamped for (every other dtype reads as the
 * unsigned integer of its width). */
#define GS_SPLIT_FLAG_TYPES(X) \
    X(GS_UINT8)                \
    X(GS_UINT16)               \
    X(GS_UINT32)               \
    X(GS_UINT64)               \
    X(GS_FLOAT32)              \
    X(GS_FLOAT64)

/* X(dtype, bytes, min_blocks): the value dtypes a scatter kernel is stamped for, one per width,
 * with the width and the blocks per multiprocessor its register budget must allow. */
#define GS_SPLIT_VALUE_TYPES(X)      \
    X(GS_UINT8, 1, GS_MIN_BLOCKS_4)  \
    X(GS_UINT16, 2, GS_MIN_BLOCKS_4) \
    X(GS_UINT32, 4, GS_MIN_BLOCKS_4) \
    X(GS_UINT64, 8, GS_MIN_BLOCKS_8)

#define GS_X_COUNT(ft)                                                               \
    __global__ void __launch_bounds__(GS_NT) gs_split_count_##ft(gs_split_kparams p) \
    {                                                                                \
        gs_split_count_tiles(ft, &p);                                                \
    }
GS_SPLIT_FLAG_TYPES(GS_X_COUNT)
#undef GS_X_COUNT

#define GS_X_SCATTER(vt, bytes, min_blocks)                                                        \
    __global__ void __launch_bounds__(GS_NT, min_blocks) gs_split_scatter_##vt(gs_split_kparams p) \
    {                                                                                              \
        /* The tile in output order: GS_NV values of vt's width. */                                \
        __shared__ uint4 buf[GS_NV * (bytes) / 16];                                                \
        gs_split_scatter_tile(vt, buf, &p);                                                        \
    }
GS_SPLIT_VALUE_TYPES(GS_X_SCATTER)
#undef GS_X_SCATTER

typedef void (*gs_split_kernel)(gs_split_kparams);

static gs_split_kernel gs_split_count_kernel_for(gs_dtype ft)
{
    if (!gs_dtype_is_float(ft))
        ft = gs_unsigned_of(ft);
#define GS_X_MATCH(ft_) \
    if (ft == ft_)      \
        return gs_split_count_##ft_;
    GS_SPLIT_FLAG_TYPES(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

static gs_split_kernel gs_split_scatter_kernel_for(gs_dtype vt)
{
    vt = gs_unsigned_of(vt);
#define GS_X_MATCH(vt_, bytes, min_blocks) \
    if (vt == vt_)                         \
        return gs_split_scatter_##vt_;
    GS_SPLIT_VALUE_TYPES(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

/* The kernel parameters of d over `scratch` (carved as gs_split_scratch_bytes sized it). */
static gs_split_kparams gs_split_params(const gs_split_desc *d, void *scratch)
{
    gs_split_kparams p;
    p.in = d->in;
    p.flags = d->flags;
    p.out = d->out;
    p.n = d->n;
    /* Tag 0: the count pass writes every descriptor word the scatter (or the heads' passes)
     * reads before it reads it; no anchors: the counts are exact. */
    p.ts = gs_tile_state_carve(scratch, gs_scan_tiles(d->n), 0);
    p.total = (unsigned long long *)scratch;
    p.reply = NULL;
    p.mask = (uint32_t *)((char *)scratch + gs_split_mask_offset(d->n));
    p.compact = d->compact;
    p.vec_in = ((uintptr_t)d->in % 16) == 0;
    p.vec_flags = ((uintptr_t)d->flags % 16) == 0;
    return p;
}

/* The checks both launchers make; cudaErrorInvalidValue for a descriptor they cannot run. */
static cudaError_t gs_split_check(const gs_split_desc *d, gs_split_kernel kernel,
                                  size_t scratch_bytes)
{
    if (kernel == NULL || scratch_bytes < gs_split_scratch_bytes(d->n) ||
        gs_scan_tiles(d->n) > INT32_MAX)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* The count pass: a warp per tile.  A split's sums its total in the scratch's header, whose
 * running word it finds and leaves zero (gpuscan/config.h); the segment heads' (heads: total
 * NULL) writes every descriptor word it polls.  Neither needs a memset. */
static cudaError_t gs_split_count_launch(const gs_split_desc *d, void *scratch,
                                         size_t scratch_bytes, unsigned long long *reply, int heads,
                                         cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    const int64_t blocks = (tiles + GS_NWARPS - 1) / GS_NWARPS;
    gs_split_kernel kernel = gs_split_count_kernel_for(d->flag_type);
    gs_split_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    if ((err = gs_split_check(d, kernel, scratch_bytes)) != cudaSuccess)
        return err;
    /* every block counted in the running word's high bits (gpuscan/config.h) */
    if (!heads && blocks >= (int64_t)1 << (64 - GS_SPLIT_SUM_BITS))
        return cudaErrorInvalidValue;
    p = gs_split_params(d, scratch);
    p.reply = reply;
    if (heads)
        p.total = NULL;
    kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(p);
    return gs_launch_check(stream);
}

extern "C" cudaError_t gs_launch_split_count(const gs_split_desc *d, void *scratch,
                                             size_t scratch_bytes, unsigned long long *reply,
                                             cudaStream_t stream)
{
    return gs_split_count_launch(d, scratch, scratch_bytes, reply, 0, stream);
}

extern "C" cudaError_t gs_launch_split_count_heads(const gs_split_desc *d, void *scratch,
                                                   size_t scratch_bytes, cudaStream_t stream)
{
    return gs_split_count_launch(d, scratch, scratch_bytes, NULL, 1, stream);
}

extern "C" cudaError_t gs_launch_split_scatter(const gs_split_desc *d, void *scratch,
                                               size_t scratch_bytes, unsigned long long *reply,
                                               cudaStream_t stream)
{
    gs_split_kernel kernel = gs_split_scatter_kernel_for(d->in_type);
    gs_split_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    if ((err = gs_split_check(d, kernel, scratch_bytes)) != cudaSuccess)
        return err;
    /* ---- A block per tile, as the count pass's programmatic dependent: its blocks load their
     * values while the count pass ends, then wait for it (agent/split.cuh). ---- */
    p = gs_split_params(d, scratch);
    p.reply = reply;
    return gs_launch_dependent((const void *)kernel, gs_scan_tiles(d->n), &p, stream);
}
