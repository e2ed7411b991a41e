/*
 * scan.cu - the single-pass scan: its __global__ kernels and the extern "C" launcher.
 *
 * Level: device-wide algorithm (kernels + dispatch).  One kernel per row of GS_TYPED_KERNELS
 * (gs_dispatch.cuh) that runs a block per tile, and one that runs agent_scan.cuh's lookahead
 * driver on a persistent grid: the operator and the
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

/* The lookahead driver, for every row too. */
#define GS_X_KERNEL(op, in, out, rs)                                   \
    __global__ void __launch_bounds__(GS_NT, GS_AHEAD_MIN_BLOCKS_##rs) \
        GS_AHEAD_KERNEL_NAME(op, in, out)(gs_scan_kparams p)           \
    {                                                                  \
        scan_tiles_ahead_##rs(op, in, out, &p);                        \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_scan_kernel)(gs_scan_kparams);

/* The kernels for a (in, out, op) triple that gs_scan_pair_direct() accepts: one tile per
 * block and the lookahead one (both NULL if none). */
static void gs_scan_kernels_for(gs_dtype in, gs_dtype out, gs_op op, gs_scan_kernel *one,
                                gs_scan_kernel *ahead)
{
    *one = *ahead = NULL;
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)                 \
    if (op == op_ && in == in_ && out == out_) {       \
        *one = GS_SCAN_KERNEL_NAME(op_, in_, out_);    \
        *ahead = GS_AHEAD_KERNEL_NAME(op_, in_, out_); \
    }
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
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
    if (kernel == NULL || scratch_bytes < gs_scan_scratch_bytes(d->n) || tiles > INT32_MAX ||
        d->epoch >= GS_EPOCH_LIMIT)
        return cudaErrorInvalidValue;

    p.in = d->in;
    p.out = d->out;
    p.flags = d->flags;
    p.n = d->n;
    p.row_len = d->row_len;
    p.ts = gs_tile_state_carve(scratch, tiles, d->epoch);
    p.flag_type = d->flag_type;
    p.exclusive = d->exclusive;
    p.vec_in = ((uintptr_t)d->in % 16) == 0;
    p.vec_out = ((uintptr_t)d->out % 16) == 0;
    p.vec_flags = ((uintptr_t)d->flags % 16) == 0;

    /* ---- A scratch without an epoch: zero the tile counter and descriptors. ---- */
    if (d->epoch == 0 &&
        (err = cudaMemsetAsync(scratch, 0, gs_scan_scratch_bytes(d->n), stream)) != cudaSuccess)
        return err;

    /* ---- The one scan launch: the lookahead driver's persistent grid when the tiles fill
     * the device several times over, else a block per tile. ---- */
    int64_t blocks = tiles;
    size_t smem = 0;
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
    kernel<<<(unsigned)blocks, GS_NT, smem, stream>>>(p);
    err = cudaGetLastError();
    if (err == cudaSuccess && gs_cuda_debug_sync)
        err = cudaStreamSynchronize(stream);
    return err;
}
