/*
 * scan.cu - the single-pass scan: its __global__ kernels and the extern "C" launcher.
 *
 * Level: device-wide algorithm (kernels + dispatch).  One kernel per row of GS_TYPED_KERNELS
 * (gs_dispatch.cuh): the operator and the input/output dtypes are compile-time constants;
 * inclusive/exclusive, row length and segment flags are run-time parameters.
 */
#include "gs_dispatch.cuh"

#define GS_AGENT "agent_scan.cuh"
#include "gs_stamp.cuh"

#define GS_SCAN_KERNEL_NAME(op, in, out) gs_scan_##op##_##in##_##out

#define GS_X_KERNEL(op, in, out, rs)                             \
    __global__ void __launch_bounds__(GS_NT, GS_MIN_BLOCKS_##rs) \
        GS_SCAN_KERNEL_NAME(op, in, out)(gs_scan_kparams p)      \
    {                                                            \
        scan_tiles_##rs(op, in, out, &p);                        \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_scan_kernel)(gs_scan_kparams);

/* The kernel for a (in, out, op) triple that gs_scan_pair_direct() accepts, or NULL. */
static gs_scan_kernel gs_scan_kernel_for(gs_dtype in, gs_dtype out, gs_op op)
{
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)         \
    if (op == op_ && in == in_ && out == out_) \
        return GS_SCAN_KERNEL_NAME(op_, in_, out_);
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

extern "C" cudaError_t gs_cuda_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                                    cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    gs_scan_kernel kernel = gs_scan_kernel_for(d->in_type, d->out_type, d->op);
    gs_scan_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
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

    /* ---- The tiny init: zero the tile counter and descriptors. ---- */
    err = cudaMemsetAsync(scratch, 0, gs_scan_scratch_bytes(d->n), stream);
    if (err != cudaSuccess)
        return err;

    /* ---- The one scan launch: a block per tile (or a persistent grid, GS_PERSISTENT). ---- */
    int64_t blocks = tiles;
    if (GS_PERSISTENT) {
        int resident;
        err = gs_resident_blocks((const void *)kernel, &resident);
        if (err != cudaSuccess)
            return err;
        if (blocks > resident)
            blocks = resident;
    }
    kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(p);
    err = cudaGetLastError();
    if (err == cudaSuccess && gs_cuda_debug_sync)
        err = cudaStreamSynchronize(stream);
    return err;
}
