/*
 * scan.cu - the single-pass scan: its __global__ kernels and the extern "C" launcher.
 *
 * Level: device-wide algorithm (kernels + dispatch).  One kernel per row of GS_TYPED_KERNELS
 * (gs_dispatch.cuh), which runs a block per tile, and one per row of GS_EXACT_KERNELS, which
 * runs agent_scan.cuh's lookahead driver on a persistent grid: the operator and the
 * input/output dtypes are compile-time constants; inclusive/exclusive, row length and segment
 * flags are run-time parameters, and the launcher picks the driver from the operator and n.
 */
#include "gs_dispatch.cuh"

#define GS_AGENT "agent_scan.cuh"
#include "gs_stamp.cuh"

#define GS_SCAN_KERNEL_NAME(op, in, out) gs_scan_##op##_##in##_##out
#define GS_AHEAD_KERNEL_NAME(op, in, out) gs_scan_ahead_##op##_##in##_##out

/* One tile per block, for every row of the table. */
#define GS_X_KERNEL(op, in, out, rs)                             \
    __global__ void __launch_bounds__(GS_NT, GS_MIN_BLOCKS_##rs) \
        GS_SCAN_KERNEL_NAME(op, in, out)(gs_scan_kparams p)      \
    {                                                            \
        scan_tiles_##rs(op, in, out, &p);                        \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

/* The lookahead driver, for the exact operators only: float add and mul keep their
 * deterministic tree look-back, which a persistent block's chained waits would serialise. */
#define GS_X_KERNEL(op, in, out, rs)                                   \
    __global__ void __launch_bounds__(GS_NT, GS_AHEAD_MIN_BLOCKS_##rs) \
        GS_AHEAD_KERNEL_NAME(op, in, out)(gs_scan_kparams p)           \
    {                                                                  \
        scan_tiles_ahead_##rs(op, in, out, &p);                        \
    }
GS_EXACT_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

/* The three-pass scan of float add and mul (agent_scan.cuh): its aggregate and carry passes
 * (the emit pass is the one-tile kernel). */
#define GS_FLOAT_KERNELS(X)         \
    GS_KT_ARITH_FLOAT(X, GS_OP_ADD) \
    GS_KT_ARITH_FLOAT(X, GS_OP_MUL)
#define GS_AGG_KERNEL_NAME(op, in, out) gs_scan_aggs_##op##_##in##_##out
#define GS_CARRY_KERNEL_NAME(op, in, out) gs_scan_carries_##op##_##in##_##out
#define GS_X_KERNEL(op, in, out, rs)                                                               \
    __global__ void __launch_bounds__(GS_NT, GS_MIN_BLOCKS_##rs)                                   \
        GS_AGG_KERNEL_NAME(op, in, out)(gs_scan_kparams p)                                         \
    {                                                                                              \
        tile_aggregates_##rs(op, in, out, &p);                                                     \
    }                                                                                              \
    __global__ void __launch_bounds__(GS_CARRY_NT)                                                 \
        GS_CARRY_KERNEL_NAME(op, in, out)(const void *aggs, void *carries, int64_t tiles)          \
    {                                                                                              \
        carry_scan_##rs(op, out, (const gs_tile_agg_##rs *)aggs, (gs_carry_##rs *)carries, tiles); \
    }
GS_FLOAT_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_scan_kernel)(gs_scan_kparams);

/* The kernels for a (in, out, op) triple that gs_scan_pair_direct() accepts: one tile per
 * block (NULL if none) and the lookahead one (NULL for float add and mul). */
static void gs_scan_kernels_for(gs_dtype in, gs_dtype out, gs_op op, gs_scan_kernel *one,
                                gs_scan_kernel *ahead)
{
    *one = *ahead = NULL;
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)         \
    if (op == op_ && in == in_ && out == out_) \
        *one = GS_SCAN_KERNEL_NAME(op_, in_, out_);
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
#define GS_X_MATCH(op_, in_, out_, rs)         \
    if (op == op_ && in == in_ && out == out_) \
        *ahead = GS_AHEAD_KERNEL_NAME(op_, in_, out_);
    GS_EXACT_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
}

typedef void (*gs_agg_kernel)(gs_scan_kparams);
typedef void (*gs_carry_kernel)(const void *, void *, int64_t);

/*
 * The three-pass scan (agent_scan.cuh): aggregates into the scratch's descriptor area (at most
 * 16 bytes per tile), the carries after them (at most 16 more), then the emit pass with the
 * one-tile kernel `kernel`.  No memset: every aggregate and carry read is written first.
 */
static cudaError_t gs_scan_three_pass(const gs_scan_desc *d, gs_scan_kparams *p,
                                      gs_scan_kernel kernel, void *scratch, int64_t tiles,
                                      cudaStream_t stream)
{
    gs_dtype in = d->in_type, out = d->out_type;
    gs_op op = d->op;
    gs_agg_kernel agg = NULL;
    gs_carry_kernel carry = NULL;
    cudaError_t err;

    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)                \
    if (op == op_ && in == in_ && out == out_) {      \
        agg = GS_AGG_KERNEL_NAME(op_, in_, out_);     \
        carry = GS_CARRY_KERNEL_NAME(op_, in_, out_); \
    }
    GS_FLOAT_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
    if (agg == NULL)
        return cudaErrorInvalidValue;
    p->aggs = (char *)scratch + GS_SCRATCH_ALIGN;
    p->carries = (char *)p->aggs + 16 * tiles;

    /* ---- Pass 1: the aggregates of every tile but the last (whole tiles). ---- */
    if (tiles > 1) {
        agg<<<(unsigned)(tiles - 1), GS_NT, 0, stream>>>(*p);
        if ((err = cudaGetLastError()) != cudaSuccess)
            return err;
    }
    /* ---- Pass 2: the carries, in one block. ---- */
    carry<<<1, GS_CARRY_NT, 0, stream>>>(p->aggs, (void *)p->carries, tiles);
    if ((err = cudaGetLastError()) != cudaSuccess)
        return err;
    /* ---- Pass 3: every tile from its carry. ---- */
    kernel<<<(unsigned)tiles, GS_NT, 0, stream>>>(*p);
    err = cudaGetLastError();
    if (err == cudaSuccess && gs_cuda_debug_sync)
        err = cudaStreamSynchronize(stream);
    return err;
}

extern "C" cudaError_t gs_cuda_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                                    cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    gs_scan_kernel kernel, ahead;
    gs_scan_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    gs_scan_kernels_for(d->in_type, d->out_type, d->op, &kernel, &ahead);
    p.aggs = NULL;
    p.carries = NULL;
    if (kernel == NULL || scratch_bytes < gs_scan_scratch_bytes(d->n) || tiles > INT32_MAX)
        return cudaErrorInvalidValue;

    p.in = d->in;
    p.out = d->out;
    p.flags = d->flags;
    p.n = d->n;
    p.row_len = d->row_len;
    p.ts = gs_tile_state_carve(scratch);
    p.flag_type = d->flag_type;
    p.exclusive = d->exclusive;
    p.vec_in = ((uintptr_t)d->in % 16) == 0;
    p.vec_out = ((uintptr_t)d->out % 16) == 0;
    p.vec_flags = ((uintptr_t)d->flags % 16) == 0;

    /* ---- Float add and mul over many tiles: the three-pass scan. ---- */
    if (ahead == NULL && tiles >= GS_THREE_PASS_MIN_TILES)
        return gs_scan_three_pass(d, &p, kernel, scratch, tiles, stream);

    /* ---- The tiny init: zero the tile counter and descriptors. ---- */
    err = cudaMemsetAsync(scratch, 0, gs_scan_scratch_bytes(d->n), stream);
    if (err != cudaSuccess)
        return err;

    /* ---- The one scan launch: the lookahead driver's persistent grid when its operator is
     * exact and the tiles fill the device several times over, else a block per tile. ---- */
    int64_t blocks = tiles;
    size_t smem = 0;
    if (ahead != NULL) {
        int resident;
        const size_t ahead_smem = (size_t)3 * GS_NV * gs_dtype_size(d->in_type);
        err = gs_resident_blocks((const void *)ahead, ahead_smem, &resident);
        if (err != cudaSuccess)
            return err;
        if (tiles >= (int64_t)GS_AHEAD_MIN_WAVES * resident) {
            kernel = ahead;
            blocks = resident;
            smem = ahead_smem;
        }
    }
    kernel<<<(unsigned)blocks, GS_NT, smem, stream>>>(p);
    err = cudaGetLastError();
    if (err == cudaSuccess && gs_cuda_debug_sync)
        err = cudaStreamSynchronize(stream);
    return err;
}
