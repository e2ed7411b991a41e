/*
 * dispatch/segreduce.cu - segmented reductions (reduceat, segmented_reduce) and reduceat's index
 * check: their __global__ kernels and extern "C" launchers.
 *
 * Level: device-wide algorithm (kernels + dispatch).
 *   gs_launch_segreduce  a sorted partition: levels of segreduce_tiles (agent/segreduce.cuh), a
 *                        warp per tile of GS_SEG_W values and no look-back: level 0 reads the
 *                        values once, finds its tile's starts itself (a search of the warp),
 *                        writes every segment that lies inside one warp's tiles and 2 partials
 *                        per warp; each next level (tiles_up) reduces the partials of the one
 *                        before and writes the segments that crossed warps, until one warp holds
 *                        them all (2^28 values: 2^19 tiles by 65536 warps, then 256 tiles and
 *                        1).  Any other segments: a warp per segment, no scratch.  All stamped
 *                        for every row of GS_TYPED_KERNELS (dispatch/kernel_table.cuh); a level
 *                        above 0 runs the (out, out) row's tiles_up, so the widening rows'
 *                        tiles_up are never launched (a table of same-type rows would drop
 *                        them).
 * Bytes for segmented_reduce of float32 values with uint8 flags and K segments: n (flags, the
 * heads' pass: dispatch/heads.cu) + 8K (positions out) + 4n (values) + 16K (positions in, K
 * results), about 5 n + 24 K against the 5 n read once.
 */
#include "dispatch/kernel_table.cuh"

#include "agent/scan_params.cuh"

/* Kernel parameters of both segmented-reduction kernels (by value). */
typedef struct gs_segreduce_kparams {
    gs_scan_kparams scan; /* the values (in, n, vec_in) and the look-back (ts): a plain scan's */
    void *out;
    const int64_t *starts;
    const int64_t *ends; /* any segments: their ends; a sorted partition: NULL */
    int64_t nseg;
    const int64_t *ids;   /* above level 0: the level below's part_ids (a head's segment) */
    void *part;           /* 2 partials per range (a warp's tiles) for the next level; NULL on
                             the last level */
    int64_t *part_ids;    /* per range w: the id of part[2 w + 1]'s segment, or GS_SEG_NO_* */
    int per_warp;         /* consecutive tiles a warp takes */
    const unsigned long long *guard; /* an index check's words: nonzero, nothing to do */
} gs_segreduce_kparams;

#define GS_AGENT "agent/segreduce.cuh"
#include "stamp.cuh"

#define GS_SEGREDUCE_NAME(kind, op, in, out) gs_segreduce_##kind##_##op##_##in##_##out

/* Blocks per multiprocessor a level's kernel is compiled for: a lane holds GS_VT values of its
 * warp's tile and GS_VT of the next one in registers; 4-byte ones fit three blocks with no
 * spill at level 0 (76-78 registers; four spill up to 148 bytes), 8-byte ones two (up to 128).
 * The levels above (tiles_up, latency-bound) spill a few bytes in some rows.  A run carried
 * from tile to tile in registers cost level 0 ~7 registers and 8-24 bytes of spill and 5% of
 * its speed: it lives in shared memory (agent/segreduce.cuh). */
#define GS_SEG_MIN_BLOCKS_4 3
#define GS_SEG_MIN_BLOCKS_8 2
/* Tiles per warp from gs_segreduce_many tiles on (default GS_SEG_MANY, 2^25 values of 512-value
 * tiles: 16 blocks per multiprocessor of the H100 at one tile per warp).  A warp's tiles are
 * one range for the partials (a run carried from tile to tile): the next level
 * reduces GS_SEG_PER_WARP times fewer (2^28 values: levels of 2^19 tiles, then 256 and 1). */
#define GS_SEG_PER_WARP 8
#define GS_SEG_MANY 65536
extern "C" int64_t gs_segreduce_many = GS_SEG_MANY;
extern "C" int gs_segreduce_per_warp = GS_SEG_PER_WARP;
#define GS_SEG_MIN_BLOCKS_u32 GS_SEG_MIN_BLOCKS_4
#define GS_SEG_MIN_BLOCKS_i32 GS_SEG_MIN_BLOCKS_4
#define GS_SEG_MIN_BLOCKS_f32 GS_SEG_MIN_BLOCKS_4
#define GS_SEG_MIN_BLOCKS_u64 GS_SEG_MIN_BLOCKS_8
#define GS_SEG_MIN_BLOCKS_i64 GS_SEG_MIN_BLOCKS_8
#define GS_SEG_MIN_BLOCKS_f64 GS_SEG_MIN_BLOCKS_8

#define GS_X_KERNEL(op, in, out, rs)                                     \
    __global__ void __launch_bounds__(GS_NT, GS_SEG_MIN_BLOCKS_##rs)     \
        GS_SEGREDUCE_NAME(tiles, op, in, out)(gs_segreduce_kparams p)    \
    {                                                                    \
        segreduce_tiles_##rs(op, in, out, &p, NULL);                     \
    }                                                                    \
    __global__ void __launch_bounds__(GS_NT, GS_SEG_MIN_BLOCKS_##rs)     \
        GS_SEGREDUCE_NAME(tiles_up, op, in, out)(gs_segreduce_kparams p) \
    {                                                                    \
        __shared__ int64_t ids[GS_NWARPS * GS_SEG_W / 2];                \
        segreduce_tiles_##rs(op, in, out, &p, ids);                      \
    }                                                                    \
    __global__ void __launch_bounds__(GS_NT)                          \
        GS_SEGREDUCE_NAME(warps, op, in, out)(gs_segreduce_kparams p) \
    {                                                                 \
        segreduce_warps_##rs(op, in, out, &p);                        \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_segreduce_kernel)(gs_segreduce_kparams);

/* The kernels for a (in, out, op) triple that gs_scan_pair_direct() accepts (NULL if none):
 * level 0's, the levels' above (run for the (out, out) row only), any segments'. */
static void gs_segreduce_kernels_for(gs_dtype in, gs_dtype out, gs_op op,
                                     gs_segreduce_kernel *tiles, gs_segreduce_kernel *up,
                                     gs_segreduce_kernel *warps)
{
    *tiles = *up = *warps = NULL;
    gs_kernel_key(&in, &out, &op);
#define GS_X_MATCH(op_, in_, out_, rs)                      \
    if (op == op_ && in == in_ && out == out_) {            \
        *tiles = GS_SEGREDUCE_NAME(tiles, op_, in_, out_);  \
        *up = GS_SEGREDUCE_NAME(tiles_up, op_, in_, out_);  \
        *warps = GS_SEGREDUCE_NAME(warps, op_, in_, out_);  \
    }
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
}

extern "C" cudaError_t gs_launch_segreduce(const gs_segreduce_desc *d, void *scratch,
                                           size_t scratch_bytes, cudaStream_t stream)
{
    const int sorted = d->ends == NULL;
    const int64_t tiles = gs_segreduce_tiles(d->n);
    gs_segreduce_kernel tiles_kernel, warps_kernel, unused;
    gs_segreduce_kparams p;
    cudaError_t err;

    if (d->nseg == 0 || d->n == 0)
        return cudaSuccess;
    gs_segreduce_kernels_for(d->in_type, d->out_type, d->op, &tiles_kernel, &unused,
                             &warps_kernel);
    if (tiles_kernel == NULL || tiles > INT32_MAX || (d->guard != NULL && !sorted) ||
        scratch_bytes < gs_segreduce_scratch_bytes(d->n, d->nseg, sorted))
        return cudaErrorInvalidValue;
    memset(&p, 0, sizeof(p));
    p.scan.in = d->in;
    p.scan.n = d->n;
    p.scan.vec_in = ((uintptr_t)d->in % 16) == 0;
    p.out = d->out;
    p.starts = d->starts;
    p.ends = d->ends;
    p.nseg = d->nseg;
    p.guard = (const unsigned long long *)d->guard;

    /* ---- Any segments: a warp each, a grid-stride loop over them. ---- */
    if (!sorted) {
        int resident;
        if ((err = gs_resident_blocks((const void *)warps_kernel, 0, &resident)) != cudaSuccess)
            return err;
        const int64_t blocks = (d->nseg + GS_NWARPS - 1) / GS_NWARPS;
        warps_kernel<<<(unsigned)(blocks < resident ? blocks : resident), GS_NT, 0, stream>>>(p);
        return gs_launch_check(stream);
    }

    /* ---- A sorted partition in levels (the file's header): level 0 over the values, each next
     * level over the 2 partials per tile of the one before (read as the output dtype), parts
     * written to two buffers in turn. ---- */
    gs_segreduce_kernel kernel = tiles_kernel, up_kernel, up_tiles, up_warps;
    gs_segreduce_kernels_for(d->out_type, d->out_type, d->op, &up_tiles, &up_kernel, &up_warps);
    if (up_kernel == NULL)
        return cudaErrorInvalidValue;
    for (int level = 0;; ++level) {
        const int64_t level_tiles = gs_segreduce_tiles(p.scan.n);
        /* A warp takes GS_SEG_PER_WARP tiles where there are many: one search of the starts, and
         * their latency, for several tiles, and 2 partials for them all. */
        p.per_warp = level_tiles >= gs_segreduce_many ? gs_segreduce_per_warp : 1;
        const int64_t warps = (level_tiles + p.per_warp - 1) / p.per_warp;
        const int64_t offset = gs_segreduce_part_offset(d->n, level & 1);
        p.part = warps > 1 ? (char *)scratch + offset : NULL;
        p.part_ids = warps > 1 ? (int64_t *)((char *)scratch + offset) + 2 * warps : NULL;
        kernel<<<(unsigned)((warps + GS_NWARPS - 1) / GS_NWARPS), GS_NT, 0, stream>>>(p);
        if ((err = gs_launch_check(stream)) != cudaSuccess || warps == 1)
            return err;
        p.scan.in = p.part;
        p.scan.n = 2 * warps;
        p.scan.vec_in = 1; /* the scratch's parts start on GS_SCRATCH_ALIGN */
        p.ids = p.part_ids;
        kernel = up_kernel;
    }
}

/* ---- reduceat's indices -------------------------------------------------------------------- */

/* result[0]: m minus the first position whose index lies outside [0, n) (0: none, so that one
 * memset clears both words); result[1]: set when some index is not above the one before it.
 * A grid-stride loop. */
__global__ void __launch_bounds__(GS_NT)
    gs_index_check_kernel(const int64_t *idx, int64_t m, int64_t n, unsigned long long *result)
{
    int down = 0;
    for (int64_t i = (int64_t)blockIdx.x * GS_NT + threadIdx.x; i < m;
         i += (int64_t)gridDim.x * GS_NT) {
        const int64_t v = __ldg(idx + i);
        if (v < 0 || v >= n)
            atomicMax(result, (unsigned long long)(m - i));
        down |= i > 0 && v <= __ldg(idx + i - 1);
    }
    if (__any_sync(GS_FULL_MASK, down) && (threadIdx.x & (GS_WARP - 1)) == 0)
        atomicOr(result + 1, 1ull);
}

extern "C" cudaError_t gs_launch_index_check(const int64_t *idx, int64_t m, int64_t n,
                                             unsigned long long *result, cudaStream_t stream)
{
    /* Enough blocks to stream the indices at full speed, a few per multiprocessor's worth. */
    const int64_t blocks = (m + GS_NT - 1) / GS_NT < 1024 ? (m + GS_NT - 1) / GS_NT : 1024;
    cudaError_t err;

    if ((err = cudaMemsetAsync(result, 0, 16, stream)) != cudaSuccess || m == 0)
        return err;
    gs_index_check_kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(idx, m, n, result);
    return gs_launch_check(stream);
}
