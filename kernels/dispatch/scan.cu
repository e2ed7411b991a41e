/*
 * dispatch/scan.cu - the single-pass scan's extern "C" launcher.
 * Level: device-wide algorithm (dispatch).  The kernels are stamped in four files of their own
 * (dispatch/instances/scan_kernels.cuh: one tile per block or the lookahead driver's persistent
 * grid, each for plain scans and for row-wise and segmented ones); the launcher picks the family
 * from the scan's heads and n, and the kernel from the (op, in, out) row.
 */
#include "dispatch/instances/scan_kernels.cuh"

typedef void (*gs_scan_kernel)(gs_scan_kparams);

/* The kernels for a (in, out, op) triple that gs_scan_pair_direct() accepts: one tile per
 * block and the lookahead one, for plain scans or (seg) ones with row starts or flags (both
 * NULL if none). */
static void gs_scan_kernels_for(gs_dtype in, gs_dtype out, gs_op op, int seg, gs_scan_kernel *one,
                                gs_scan_kernel *ahead)
{
    *one = *ahead = NULL;
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)                                                           \
    if (op == op_ && in == in_ && out == out_) {                                                 \
        *one = seg ? GS_SCAN_NAME(one_seg, op_, in_, out_) : GS_SCAN_NAME(one, op_, in_, out_);  \
        *ahead =                                                                                 \
            seg ? GS_SCAN_NAME(ahead_seg, op_, in_, out_) : GS_SCAN_NAME(ahead, op_, in_, out_); \
    }
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
}

extern "C" cudaError_t gs_launch_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                                      cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    gs_scan_kernel kernel, ahead;
    gs_scan_kparams p;

    if (d->n == 0)
        return cudaSuccess;
    gs_scan_kernels_for(d->in_type, d->out_type, d->op, d->row_len > 0 || d->flags != NULL, &kernel,
                        &ahead);
    if (kernel == NULL || scratch_bytes < gs_scan_scratch_bytes(d->n) || tiles > INT32_MAX ||
        d->epoch == 0 || d->epoch >= GS_EPOCH_LIMIT ||
        (d->flags != NULL && gs_dtype_size(d->flag_type) != 1) || /* 1-byte flags only */
        (d->row_len > 0 && (d->carry_in != NULL || d->carry_out != NULL)))
        return cudaErrorInvalidValue;

    p.in = d->in;
    p.out = d->out;
    p.flags = d->flags;
    p.n = d->n;
    p.row_len = d->row_len;
    p.ts = gs_tile_state_carve(scratch, tiles, d->epoch);
    p.exclusive = d->exclusive;
    p.vec_in = ((uintptr_t)d->in % 16) == 0;
    p.vec_out = ((uintptr_t)d->out % 16) == 0;
    p.vec_flags = ((uintptr_t)d->flags % 16) == 0;
    p.carry_in = d->carry_in;
    p.carry_out = d->carry_out;

    /* ---- The one scan launch: the lookahead driver's persistent grid when the tiles fill
     * the device several times over, else a block per tile. ---- */
    return gs_launch_tiles((const void *)kernel, (const void *)ahead,
                           (size_t)3 * GS_NV * gs_dtype_size(d->in_type), tiles, &p, stream);
}
