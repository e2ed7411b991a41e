/*
 * dispatch/linrec.cu - the linear recurrence h[t] = a[t] h[t-1] + b[t]: its __global__ kernels
 * (float32, float64; one tile per block and the lookahead driver) and the extern "C" launcher.
 * Level: device-wide algorithm (kernels + dispatch).  One launch after zeroing the scratch: the
 * tiles, taken in launch order, each read a and b once and write h once (12 n bytes for
 * float32), chained by the anchored look-back over pairs (device/pair_lookback.cuh).  A block
 * per tile, or, once the tiles fill the device GS_AHEAD_MIN_WAVES times over, the lookahead
 * driver's persistent grid (agent/linrec.cuh); both give the same bits.  Rows (the other axes of
 * the array) are a run-time parameter, the direction a constant of each kernel: four kernels per
 * floating type.
 */
#include "device/pair_lookback.cuh"
#include "dispatch/launch.cuh"
#include "dispatch/tuning.h"

/* Kernel parameters (by value). */
typedef struct gs_linrec_kparams {
    const void *a;
    const void *b;
    const void *h0; /* n / row_len values, or NULL */
    void *h;
    int64_t n;
    int64_t row_len;
    double inv_row; /* 1 / row_len (agent/linrec.cuh lr_row_offset) */
    int64_t whole;  /* the tiles before it are read and written as whole 16-byte pieces: n / the
                       tile's steps where a, b and h are 16-byte aligned and the pieces whole in
                       either direction, else 0 */
    int reverse;
    gs_lr_state s;
} gs_linrec_kparams;

#define GS_R float
#define GS_RS f32
#define GS_LR_DT GS_FLOAT32
#include "thread/pair_ops.cuh"
#include "warp/warp_pair.cuh"
#include "block/block_pair.cuh"
#include "agent/linrec.cuh"
#undef GS_R
#undef GS_RS
#undef GS_LR_DT

#define GS_R double
#define GS_RS f64
#define GS_LR_DT GS_FLOAT64
#include "thread/pair_ops.cuh"
#include "warp/warp_pair.cuh"
#include "block/block_pair.cuh"
#include "agent/linrec.cuh"
#undef GS_R
#undef GS_RS
#undef GS_LR_DT

/* Four kernels a type: a block per tile or the lookahead driver, each forwards and reversed.
 * The direction is set in the kernel as a constant, so that no step tests it: a piece's values
 * come in step order without a select each (H200, 2^28 float32: 3% faster; the notes). */
#define GS_LR_KERNELS(rs, dir, rev)                                       \
    __global__ void __launch_bounds__(GS_NT, GS_LR_MIN_BLOCKS_##rs)       \
        gs_linrec_##rs##dir(gs_linrec_kparams p)                          \
    {                                                                     \
        p.reverse = rev;                                                  \
        linrec_tile_##rs(&p);                                             \
    }                                                                     \
    __global__ void __launch_bounds__(GS_NT, GS_LR_AHEAD_MIN_BLOCKS_##rs) \
        gs_linrec_ahead_##rs##dir(gs_linrec_kparams p)                    \
    {                                                                     \
        p.reverse = rev;                                                  \
        linrec_tiles_ahead_##rs(&p);                                      \
    }
GS_LR_KERNELS(f32, _fwd, 0)
GS_LR_KERNELS(f32, _rev, 1)
GS_LR_KERNELS(f64, _fwd, 0)
GS_LR_KERNELS(f64, _rev, 1)
#undef GS_LR_KERNELS

extern "C" cudaError_t gs_launch_linrec(const gs_linrec_desc *d, void *scratch,
                                        size_t scratch_bytes, cudaStream_t stream)
{
    const int64_t tiles = gs_linrec_tiles(d->n);
    const int64_t C = 16 / (int64_t)gs_dtype_size(d->type);
    gs_linrec_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    if ((d->type != GS_FLOAT32 && d->type != GS_FLOAT64) || d->row_len < 1 ||
        d->n % d->row_len != 0 || tiles > INT32_MAX ||
        scratch_bytes < gs_linrec_scratch_bytes(d->n))
        return cudaErrorInvalidValue;
    p.a = d->a;
    p.b = d->b;
    p.h0 = d->h0;
    p.h = d->h;
    p.n = d->n;
    p.row_len = d->row_len;
    p.inv_row = 1.0 / (double)d->row_len;
    p.reverse = d->reverse;
    p.whole = ((uintptr_t)d->a % 16) == 0 && ((uintptr_t)d->b % 16) == 0 &&
                      ((uintptr_t)d->h % 16) == 0 && (!d->reverse || d->n % C == 0)
                  ? d->n / GS_LR_NV
                  : 0;
    p.s = gs_lr_state_carve(scratch, tiles);

    /* ---- Zero the tile counter and the descriptors. ---- */
    if ((err = cudaMemsetAsync(scratch, 0, gs_linrec_scratch_bytes(d->n), stream)) != cudaSuccess)
        return err;

    /* ---- The one launch: the lookahead driver's persistent grid when the tiles fill the
     * device several times over (its tile slots of a and b in shared memory, tuning.h), else a
     * block per tile. ---- */
    static const void *const kernels[2][2][2] = {
        { { (const void *)gs_linrec_f64_fwd, (const void *)gs_linrec_ahead_f64_fwd },
          { (const void *)gs_linrec_f64_rev, (const void *)gs_linrec_ahead_f64_rev } },
        { { (const void *)gs_linrec_f32_fwd, (const void *)gs_linrec_ahead_f32_fwd },
          { (const void *)gs_linrec_f32_rev, (const void *)gs_linrec_ahead_f32_rev } }
    };
    const int f32 = d->type == GS_FLOAT32;
    const void *const *k = kernels[f32][d->reverse != 0];
    return gs_launch_tiles(k[0], k[1],
                           (size_t)2 * (f32 ? GS_LR_SLOTS_f32 : GS_LR_SLOTS_f64) * GS_LR_NV *
                               gs_dtype_size(d->type),
                           tiles, &p, stream);
}
