/*
 * dispatch/teach.cu - the teaching scans on CUDA: their __global__ kernels and extern "C"
 * launchers.
 * Level: device-wide algorithm (kernels + dispatch), as dispatch/scan.cu.  One kernel of each
 * family per row of GS_TYPED_KERNELS (dispatch/kernel_table.cuh), so the operator layer
 * (thread/thread_ops.cuh) and the dtype table are the production scan's own.
 *   Hillis-Steele  one launch per step d = 0 .. ceil(log2 row_len) - 1, each thread making
 *                  next[i] = prev[i - 2^d] op prev[i]; the output and one scratch buffer swap
 *                  roles so the last step lands in the output (a copy only for rows of at most
 *                  two values scanned in place). An exclusive scan reads the input shifted
 *                  right by one with the identity in front.
 *   Blelloch       each block scans a tile of GS_TEACH_TILE values in shared memory (up-sweep,
 *                  root, down-sweep); rows of several tiles take three passes: the tiles'
 *                  totals (up-sweep only), the inclusive scan of the totals by this same
 *                  launcher (recursively), and the tiles again, each root seeded with the total
 *                  of the tiles before it.  Segmented: the flagged sweeps, each tile also
 *                  reporting whether it holds a head, which the recursion takes as its flags.
 *   steps          gs_launch_step: one step of either algorithm over a working array, for the
 *                  traces (gpuscan.trace), counting operator applications with an atomic.
 */
#include "dispatch/kernel_table.cuh"
#include "gpuscan/teach_config.h"

#define GS_AGENT "agent/teach.cuh"
#include "stamp.cuh"

#define GS_HS_NAME(op, in, out) gs_hs_##op##_##in##_##out
#define GS_TREE_NAME(op, in, out) gs_tree_##op##_##in##_##out
#define GS_TILE_NAME(op, in, out) gs_tile_##op##_##in##_##out

/* The tile kernel builds both shared-memory layouts (padded and not) from one body; which one
 * runs is the descriptor's (gs_scan_desc.unpadded), so the tests run the unpadded path too. */
#define GS_X_KERNEL(op, in, out, rs)                                                            \
    __global__ void __launch_bounds__(GS_TEACH_NT) GS_HS_NAME(op, in, out)(gs_hs_kparams p)     \
    {                                                                                           \
        hs_step_##rs(op, in, out, &p);                                                          \
    }                                                                                           \
    __global__ void __launch_bounds__(GS_TEACH_NT) GS_TREE_NAME(op, in, out)(gs_tree_kparams p) \
    {                                                                                           \
        tree_step_##rs(op, out, &p);                                                            \
    }                                                                                           \
    __global__ void __launch_bounds__(GS_TEACH_NT)                                              \
        GS_TILE_NAME(op, in, out)(gs_tile_kparams p, int padded)                                \
    {                                                                                           \
        if (padded)                                                                             \
            blelloch_tile_##rs(op, in, out, &p, 1);                                             \
        else                                                                                    \
            blelloch_tile_##rs(op, in, out, &p, 0);                                             \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_hs_kernel)(gs_hs_kparams);
typedef void (*gs_tree_kernel)(gs_tree_kparams);
typedef void (*gs_tile_kernel)(gs_tile_kparams, int);

/* The kernels of a (in, out, op) triple that gs_scan_pair_direct() accepts; 0 if none. */
static int gs_teach_kernels_for(gs_dtype in, gs_dtype out, gs_op op, gs_hs_kernel *hs,
                                gs_tree_kernel *tree, gs_tile_kernel *tile)
{
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)           \
    if (op == op_ && in == in_ && out == out_) { \
        *hs = GS_HS_NAME(op_, in_, out_);        \
        *tree = GS_TREE_NAME(op_, in_, out_);    \
        *tile = GS_TILE_NAME(op_, in_, out_);    \
        return 1;                                \
    }
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
    return 0;
}

/* ---- Hillis-Steele ---------------------------------------------------------------------- */

static cudaError_t gs_hillis_steele(const gs_scan_desc *d, gs_hs_kernel kernel, char *scratch,
                                    cudaStream_t stream)
{
    const int64_t row_len = d->row_len > 0 ? d->row_len : d->n;
    const int64_t one = gs_round_up(d->n * (int64_t)gs_dtype_size(d->out_type), GS_SCRATCH_ALIGN);
    const int in_place = d->in == d->out;
    const int steps = row_len > 1 ? gs_ceil_log2(row_len) : 1;
    void *tmp = scratch, *tmp2 = in_place ? scratch + one : NULL;
    gs_hs_kparams p;
    cudaError_t err;

    p.src = d->in;
    p.n = d->n;
    p.row_len = row_len;
    p.work = NULL;
    for (int k = 0; k < steps; k++) {
        /* The destination: the output last; before, the buffer the output is not, so that the
         * roles alternate and the last step lands in the output.  The first step of an
         * in-place scan writes to the third buffer (it reads the output's memory). */
        if (k == steps - 1)
            p.dst = in_place && steps == 1 ? tmp : d->out;
        else if ((steps - 1 - k) & 1)
            p.dst = tmp;
        else
            p.dst = k == 0 && in_place ? tmp2 : d->out;
        p.s = (int64_t)1 << k;
        p.first = k == 0;
        p.shift = k == 0 && d->exclusive;
        kernel<<<gs_teach_blocks((d->n + GS_TEACH_NT - 1) / GS_TEACH_NT), GS_TEACH_NT, 0, stream>>>(
            p);
        if ((err = gs_launch_check(stream)) != cudaSuccess)
            return err;
        p.src = p.dst;
    }
    if (p.dst != d->out) /* rows of at most two values, in place */
        return cudaMemcpyAsync(d->out, p.dst, (size_t)d->n * gs_dtype_size(d->out_type),
                               cudaMemcpyDeviceToDevice, stream);
    return cudaSuccess;
}

/* ---- Blelloch, tiled -------------------------------------------------------------------- */

/* Scan n values (rows of row_len) of in_t into out_t, segmented when `flags` is set, with the
 * tiles' shared memory `padded` or not; `scratch` holds this level's and the deeper levels'
 * tile totals, laid out as gs_teach_scratch_bytes() counts them. */
static cudaError_t gs_blelloch_level(const void *in, gs_dtype in_t, void *out, gs_dtype out_t,
                                     gs_op op, const void *flags, gs_dtype flag_t, int64_t n,
                                     int64_t row_len, int exclusive, int padded, char *scratch,
                                     cudaStream_t stream)
{
    const int64_t size = (int64_t)gs_dtype_size(out_t);
    const int64_t rows = n / row_len, tiles = (row_len + GS_TEACH_TILE - 1) / GS_TEACH_TILE;
    const unsigned blocks = gs_teach_blocks(rows * tiles);
    gs_hs_kernel hs;
    gs_tree_kernel tree;
    gs_tile_kernel tile;
    gs_tile_kparams p;
    cudaError_t err;

    if (!gs_teach_kernels_for(in_t, out_t, op, &hs, &tree, &tile))
        return cudaErrorInvalidValue;
    memset(&p, 0, sizeof(p));
    p.in = in;
    p.out = out;
    p.flags = flags;
    p.n = n;
    p.row_len = row_len;
    p.tiles_per_row = tiles;
    p.flag_type = flag_t;
    p.exclusive = exclusive;
    if (tiles > 1) {
        /* ---- Pass 1: every tile's total (and whether it holds a head). ---- */
        p.totals = scratch;
        scratch += gs_round_up(rows * tiles * size, GS_SCRATCH_ALIGN);
        if (flags != NULL) {
            p.tflags = (unsigned char *)scratch;
            scratch += gs_round_up(rows * tiles, GS_SCRATCH_ALIGN);
        }
        p.reduce = 1;
        tile<<<blocks, GS_TEACH_NT, 0, stream>>>(p, padded);
        if ((err = gs_launch_check(stream)) != cudaSuccess)
            return err;
        /* ---- Pass 2: the totals' inclusive scan, per row (segmented by the tiles' heads). */
        err = gs_blelloch_level(p.totals, out_t, p.totals, out_t, op, p.tflags, GS_UINT8,
                                rows * tiles, tiles, 0, padded, scratch, stream);
        if (err != cudaSuccess)
            return err;
        p.carries = p.totals;
        p.reduce = 0;
    }
    /* ---- Pass 3 (or the only pass): every tile scanned from its carry. ---- */
    tile<<<blocks, GS_TEACH_NT, 0, stream>>>(p, padded);
    return gs_launch_check(stream);
}

extern "C" cudaError_t gs_launch_teach_scan(const gs_scan_desc *d, void *scratch,
                                            size_t scratch_bytes, cudaStream_t stream)
{
    gs_hs_kernel hs;
    gs_tree_kernel tree;
    gs_tile_kernel tile;

    if (d->n == 0)
        return cudaSuccess;
    if (!gs_teach_kernels_for(d->in_type, d->out_type, d->op, &hs, &tree, &tile) ||
        scratch_bytes < gs_teach_scratch_bytes(d) || (d->row_len > 0 && d->n % d->row_len) ||
        (d->algorithm == GS_ALGO_HILLIS_STEELE && d->flags != NULL))
        return cudaErrorInvalidValue;
    if (d->algorithm == GS_ALGO_HILLIS_STEELE)
        return gs_hillis_steele(d, hs, (char *)scratch, stream);
    if (d->algorithm != GS_ALGO_BLELLOCH)
        return cudaErrorInvalidValue;
    return gs_blelloch_level(d->in, d->in_type, d->out, d->out_type, d->op, d->flags, d->flag_type,
                             d->n, d->row_len > 0 ? d->row_len : d->n, d->exclusive, !d->unpadded,
                             (char *)scratch, stream);
}

/* ---- One step, for the traces ------------------------------------------------------------ */

extern "C" cudaError_t gs_launch_step(const gs_step_desc *d, cudaStream_t stream)
{
    gs_hs_kernel hs;
    gs_tree_kernel tree;
    gs_tile_kernel tile;
    int64_t units;

    if (!gs_teach_kernels_for(d->type, d->type, d->op, &hs, &tree, &tile) || d->rows < 0 ||
        d->m <= 0 || d->s <= 0)
        return cudaErrorInvalidValue;
    if (d->kind == GS_STEP_HS) {
        gs_hs_kparams p;
        p.src = d->src;
        p.dst = d->buf;
        p.n = d->rows * d->m;
        p.row_len = d->m;
        p.s = d->s;
        p.first = 0;
        p.shift = 0;
        p.work = d->work;
        units = p.n;
        hs<<<gs_teach_blocks((units + GS_TEACH_NT - 1) / GS_TEACH_NT), GS_TEACH_NT, 0, stream>>>(p);
    } else {
        gs_tree_kparams p;
        p.buf = d->buf;
        p.src = d->src;
        p.fup = d->fup;
        p.forig = d->forig;
        p.rows = d->rows;
        p.m = d->m;
        p.s = d->s;
        p.len = d->len;
        p.kind = d->kind;
        p.clear_root = d->clear_root;
        p.work = d->work;
        units = d->kind == GS_STEP_INCL ? d->rows * d->m : d->rows * (d->m / (2 * d->s));
        tree<<<gs_teach_blocks((units + GS_TEACH_NT - 1) / GS_TEACH_NT), GS_TEACH_NT, 0, stream>>>(
            p);
    }
    return gs_launch_check(stream);
}
