/*
 * dispatch/segreduce.cu - segmented reductions (reduceat, segmented_reduce) and the positions of
 * segment heads: their __global__ kernels and extern "C" launchers.
 * Level: device-wide algorithm (kernels + dispatch).
 *   gs_launch_segreduce    a sorted partition: levels of segreduce_tiles (agent/segreduce.cuh), a
 *                          warp per tile of GS_SEG_W values, no look-back. Level 0 reads the values
 *                          once, writes every segment inside one warp's tiles and 2 partials per
 *                          warp; each next level (tiles_up) reduces the partials of the one before,
 *                          until one warp holds them all, each launched as the programmatic
 *                          dependent of the one below (its launch overlaps that one's last
 *                          blocks); level 0 of reduceat's indices, the index check's (it starts
 *                          while the check runs and waits for it to read the guard). Any other
 *                          segments: a warp per segment.
 *                          Levels above 0 run the (out, out) row's tiles_up, so the widening rows'
 *                          tiles_up have empty bodies (never launched).
 *   gs_launch_heads_count  the split's count pass (its heads' variant), then one launch that
 *                          publishes every tile's prefix and writes the heads' count (element 0
 *                          always one) into the host's reply.
 *   gs_launch_heads        a block per GS_HEADS_TILES tiles writes their heads' positions that fit
 *                          in `room`; its look-back stops at the tile before it. Both are enqueued
 *                          before the host waits for the count.
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
    const int64_t *ids; /* above level 0: the level below's part_ids (a head's segment) */
    void *part;         /* 2 partials per range (a warp's tiles) for the next level; NULL on
                           the last level */
    int64_t *part_ids;  /* per range w: the id of part[2 w + 1]'s segment, or GS_SEG_NO_* */
    int per_warp;       /* consecutive tiles a warp takes */
    const unsigned long long *guard; /* an index check's words: nonzero, nothing to do */
} gs_segreduce_kparams;

#define GS_AGENT "agent/segreduce.cuh"
#include "stamp.cuh"

/* Mask groups (of 16 flags, agent/split.cuh); the count pass's tiles a heads block takes (a
 * block per tile has too little to do); the groups each of its threads takes, 8 to a 16-byte
 * load. */
#define GS_HEADS_GROUP GS_FLAG_GROUP
#define GS_HEADS_TILES 32
#define GS_HEADS_PER_THREAD (GS_HEADS_TILES * GS_NV / GS_HEADS_GROUP / GS_NT)
/* ... as 32-bit words of two groups each. */
#define GS_HEADS_WORDS (GS_HEADS_PER_THREAD / 2)
#if (GS_NV / GS_HEADS_GROUP) % 8 != 0 || GS_HEADS_PER_THREAD % 8 != 0 || \
    GS_HEADS_TILES * GS_NV % (GS_HEADS_GROUP * GS_NT) != 0 || GS_HEADS_GROUP != 16
#error "a heads block's groups must be whole 16-byte loads per thread, two to a 32-bit word"
#endif

#define GS_SEGREDUCE_NAME(kind, op, in, out) gs_segreduce_##kind##_##op##_##in##_##out

/* Blocks per multiprocessor a level's kernel is compiled for: a lane holds GS_VT values of its
 * warp's tile in registers (the next one lands in shared memory); 4-byte values fit four blocks
 * with no spill at level 0, 8-byte ones two (three spill; docs/performance-notes.md, segmented
 * reductions). Level 0's buffers: a warp tile of the register type for each warp. */
#define GS_SEG_MIN_BLOCKS_4 4
#define GS_SEG_MIN_BLOCKS_8 2
/* Tiles per warp: the most, up to GS_SEG_PER_WARP and doubling from 1, that leaves the level at
 * least half a wave of the device's resident warps (keyed on the device the call runs on, not
 * the compile target: on an H200 8 from 2^24 values, 4 at 2^23, 2 at 2^22, each within the
 * spread of the fastest of 1, 2, 4, 8 and 16 from 2^21 to 2^28). A warp's tiles are one range for
 * the partials: the next level reduces per_warp times fewer, and one search of the starts serves
 * them all (docs/performance-notes.md). The tests set gs_segreduce_desc.many_tiles instead:
 * GS_SEG_PER_WARP (or .per_warp) tiles a warp from that many tiles on. */
#define GS_SEG_PER_WARP 8
#define GS_SEG_SIZE_u32 4
#define GS_SEG_SIZE_i32 4
#define GS_SEG_SIZE_f32 4
#define GS_SEG_SIZE_u64 8
#define GS_SEG_SIZE_i64 8
#define GS_SEG_SIZE_f64 8
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
        __shared__ __align__(16) char bufs[GS_NWARPS * GS_SEG_W * GS_SEG_SIZE_##rs]; \
        gs_grid_launch_dependents(); /* the level above waits for all of this one */ \
        segreduce_tiles_##rs(op, in, out, &p, NULL, bufs);               \
    }                                                                    \
    __global__ void __launch_bounds__(GS_NT, GS_SEG_MIN_BLOCKS_##rs)     \
        GS_SEGREDUCE_NAME(tiles_up, op, in, out)(gs_segreduce_kparams p) \
    {                                                                    \
        __shared__ int64_t ids[GS_NWARPS * GS_SEG_W / 2];                \
        gs_grid_launch_dependents();                                     \
        gs_grid_wait(); /* the level below has completed */              \
        if ((in) == (out)) /* the rows whose tiles_up is launched */     \
            segreduce_tiles_##rs(op, in, out, &p, ids, NULL);            \
    }                                                                    \
    __global__ void __launch_bounds__(GS_NT)                             \
        GS_SEGREDUCE_NAME(warps, op, in, out)(gs_segreduce_kparams p)    \
    {                                                                    \
        segreduce_warps_##rs(op, in, out, &p);                           \
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
#define GS_X_MATCH(op_, in_, out_, rs)                     \
    if (op == op_ && in == in_ && out == out_) {           \
        *tiles = GS_SEGREDUCE_NAME(tiles, op_, in_, out_); \
        *up = GS_SEGREDUCE_NAME(tiles_up, op_, in_, out_); \
        *warps = GS_SEGREDUCE_NAME(warps, op_, in_, out_); \
    }
    GS_TYPED_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
    if (in != out) /* a widening row's tiles_up has an empty body */
        *up = NULL;
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
    gs_segreduce_kernels_for(d->in_type, d->out_type, d->op, &tiles_kernel, &unused, &warps_kernel);
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

    /* ---- A sorted partition in levels: level 0 over the values, each next level over the
     * partials of the one before (read as the output dtype), in two buffers in turn. ---- */
    gs_segreduce_kernel kernel = tiles_kernel, up_kernel, up_tiles, up_warps;
    const int per_warp = d->per_warp > 0 ? d->per_warp : GS_SEG_PER_WARP;
    gs_segreduce_kernels_for(d->out_type, d->out_type, d->op, &up_tiles, &up_kernel, &up_warps);
    if (up_kernel == NULL)
        return cudaErrorInvalidValue;
    int resident;
    if ((err = gs_resident_blocks((const void *)tiles_kernel, 0, &resident)) != cudaSuccess)
        return err;
    const int64_t half_wave = (int64_t)resident * GS_NWARPS / 2; /* warps */
    for (int level = 0;; ++level) {
        const int64_t level_tiles = gs_segreduce_tiles(p.scan.n);
        p.per_warp = 1;
        if (d->many_tiles > 0)
            p.per_warp = level_tiles >= d->many_tiles ? per_warp : 1;
        else
            while (2 * p.per_warp <= per_warp && level_tiles >= 2 * p.per_warp * half_wave)
                p.per_warp *= 2;
        const int64_t warps = (level_tiles + p.per_warp - 1) / p.per_warp;
        const int64_t offset = gs_segreduce_part_offset(d->n, level & 1);
        p.part = warps > 1 ? (char *)scratch + offset : NULL;
        p.part_ids = warps > 1 ? (int64_t *)((char *)scratch + offset) + 2 * warps : NULL;
        const int64_t blocks = (warps + GS_NWARPS - 1) / GS_NWARPS;
        if (level == 0 && p.guard == NULL) {
            kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(p);
            err = gs_launch_check(stream);
        } else { /* launched while the kernel before runs (gs_grid_wait): the level below, or
                  * the index check that level 0 waits for before it reads the guard */
            err = gs_launch_dependent((const void *)kernel, blocks, &p, stream);
        }
        if (err != cudaSuccess || warps == 1)
            return err;
        p.scan.in = p.part;
        p.scan.n = 2 * warps;
        p.scan.vec_in = 1; /* the scratch's parts start on GS_SCRATCH_ALIGN */
        p.ids = p.part_ids;
        kernel = up_kernel;
    }
}

/* ---- reduceat's indices -------------------------------------------------------------------- */

/* words[0]: m minus the first position whose index lies outside [0, n) (0: none); words[1]: set
 * when some index is not above the one before it; words[2]: the blocks done. The words are zero
 * at the start (kept so: zeroed when made, and by each check's last block), so no memset goes
 * before the check. A grid-stride loop; the last block to finish writes the two into `guard`
 * (which the reduction enqueued behind the check reads) and into the host's reply (no copy's
 * launch between the check and the host), and zeroes the words. */
__global__ void __launch_bounds__(GS_NT)
    gs_index_check_kernel(const int64_t *idx, int64_t m, int64_t n, unsigned long long *words,
                          unsigned long long *guard, unsigned long long *reply)
{
    __shared__ int last;
    int down = 0;
    gs_grid_launch_dependents(); /* the reduction behind waits for the whole check */
    for (int64_t i = (int64_t)blockIdx.x * GS_NT + threadIdx.x; i < m;
         i += (int64_t)gridDim.x * GS_NT) {
        const int64_t v = __ldg(idx + i);
        if (v < 0 || v >= n)
            atomicMax(words, (unsigned long long)(m - i));
        down |= i > 0 && v <= __ldg(idx + i - 1);
    }
    if (__any_sync(GS_FULL_MASK, down) && (threadIdx.x & (GS_WARP - 1)) == 0)
        atomicOr(words + 1, 1ull);
    __threadfence(); /* this thread's words before the block counts itself done */
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(words + 2, 1ull) == gridDim.x - 1u;
    __syncthreads();
    if (last && threadIdx.x < 2) {
        const unsigned long long w = atomicExch(words + threadIdx.x, 0ull); /* where made */
        guard[threadIdx.x] = w;
        reply[threadIdx.x] = w;
    }
    if (last && threadIdx.x == 0)
        words[2] = 0ull; /* every block has counted itself */
}

extern "C" cudaError_t gs_launch_index_check(const int64_t *idx, int64_t m, int64_t n,
                                             unsigned long long *words, unsigned long long *guard,
                                             unsigned long long *reply, cudaStream_t stream)
{
    /* Enough blocks to stream the indices at full speed, a few per multiprocessor's worth. */
    const int64_t blocks = (m + GS_NT - 1) / GS_NT < 1024 ? (m + GS_NT - 1) / GS_NT : 1024;

    if (m == 0)
        return cudaSuccess;
    gs_index_check_kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(idx, m, n, words, guard, reply);
    return gs_launch_check(stream);
}

/* ---- Segment heads ------------------------------------------------------------------------ */

/* Kernel parameters of the heads kernel (by value): the split's scratch after its count pass. */
typedef struct gs_heads_kparams {
    int64_t n;
    gs_tile_state ts;     /* the count pass's descriptors: every tile's flagged count */
    const uint16_t *mask; /* one bit per value, in groups of 16 */
    int64_t *positions;
    int64_t room; /* positions below it are written */
} gs_heads_kparams;

/* Block b: the heads of tiles b GS_HEADS_TILES .. (GS_HEADS_TILES of them), in order, at
 * positions[heads before them]. */
__global__ void __launch_bounds__(GS_NT) gs_heads_tile(gs_heads_kparams p)
{
    __shared__ gs_block_scan_smem_u32 bsm;
    __shared__ unsigned long long before_sm;
    const int64_t tile = (int64_t)blockIdx.x * GS_HEADS_TILES; /* the block's first */
    const int64_t group0 =
        tile * (GS_NV / GS_HEADS_GROUP) + (int64_t)threadIdx.x * GS_HEADS_PER_THREAD;
    /* The mask covers whole tiles: groups below this many are in it. */
    const int64_t groups = gs_scan_tiles(p.n) * (GS_NV / GS_HEADS_GROUP);
    /* Element 0 is a head whatever its flag: when the flag is clear, it comes first, before
     * every flagged one. */
    const unsigned forced = (__ldg(p.mask) & 1u) == 0;

    /* ---- This thread's flags (its groups' 16-byte loads, none past the mask), as 32-bit
     * words of two groups each: word j holds the flags of values first + 32 j .. + 31. ---- */
    const int64_t first = group0 * GS_HEADS_GROUP;
    uint32_t words[GS_HEADS_WORDS];
    /* All of a thread's loads in flight at once (a test per load serialises them). */
    uint4 m[GS_HEADS_WORDS / 4];
    if (group0 + GS_HEADS_PER_THREAD <= groups) {
#pragma unroll
        for (int v = 0; v < GS_HEADS_WORDS / 4; ++v)
            m[v] = __ldg((const uint4 *)(p.mask + group0 + 8 * v));
    } else {
#pragma unroll
        for (int v = 0; v < GS_HEADS_WORDS / 4; ++v)
            m[v] = group0 + 8 * v < groups ? __ldg((const uint4 *)(p.mask + group0 + 8 * v))
                                           : make_uint4(0u, 0u, 0u, 0u);
    }
    /* ---- The flagged count before the block: the prefix of the tile before it, which
     * gs_heads_prefix published (the look-back reads one window and waits for nothing), read
     * while the mask's loads are in flight.  The block scan's barriers order before_sm. ---- */
    if (threadIdx.x < GS_WARP) {
        unsigned long long before = 0;
        if (tile > 0)
            before = look_back_u64(GS_OP_ADD, GS_UINT64, p.ts, tile).hi;
        if (threadIdx.x == 0)
            before_sm = before;
    }
#pragma unroll
    for (int v = 0; v < GS_HEADS_WORDS / 4; ++v) {
        words[4 * v] = m[v].x;
        words[4 * v + 1] = m[v].y;
        words[4 * v + 2] = m[v].z;
        words[4 * v + 3] = m[v].w;
    }
    if (first + 32 * GS_HEADS_WORDS > p.n) { /* the last values: no bit past n */
#pragma unroll
        for (int j = 0; j < GS_HEADS_WORDS; ++j) {
            const int64_t left = p.n - (first + 32 * j);
            words[j] = left <= 0 ? 0u : left >= 32 ? words[j] : words[j] & ((1u << left) - 1u);
        }
    }

    /* ---- Their count, and the count before them in the block. ---- */
    unsigned mine = 0;
#pragma unroll
    for (int j = 0; j < GS_HEADS_WORDS; ++j)
        mine += __popc(words[j]);
    int pf[1] = { 0 }, ef[1], af[1];
    uint32_t pc[1] = { mine }, ev[1], av[1];
    block_scan_u32(GS_OP_ADD, GS_UINT32, 1, 0, pf, pc, ef, ev, af, av, &bsm);

    /* ---- The positions, in order (most threads have none). ---- */
    int64_t k = (int64_t)before_sm + ev[0] + forced;
    if (forced && tile == 0 && threadIdx.x == 0)
        p.positions[0] = 0; /* the room holds one at least */
    if (mine != 0) {
#pragma unroll
        for (int j = 0; j < GS_HEADS_WORDS; ++j) {
            for (unsigned w = words[j]; w != 0; w &= w - 1, ++k)
                if (k < p.room)
                    p.positions[k] = first + 32 * j + (__ffs(w) - 1);
        }
    }
}

/* Every tile's inclusive flagged count published as its prefix, from the count pass's
 * aggregates, so that a heads block's look-back stops at the tile before it (rather than walking
 * back over every tile in flight). One launch, a block per group of GS_HP_NT tiles: the group's
 * sum published (in the unused second word of its first tile's descriptor, tagged: a count has
 * no compensation), the sums of the groups before it read as they are published, then each
 * tile's prefix from them and a block scan of its group. A block waits only for blocks of lower
 * index: it relies on blocks starting in index order, as CUB's single-pass scan does, when they
 * are not all resident at once (the scan's own look-backs take tiles from a counter instead). */
#define GS_HP_NT 1024 /* tiles a block sums: the most threads a block may have */

/* The inclusive scan of v across the block of GS_HP_NT threads; *total: the block's sum. */
static __device__ __forceinline__ unsigned long long gs_hp_block_scan(unsigned long long v,
                                                                      unsigned long long *total)
{
    __shared__ unsigned long long warp_sum[GS_HP_NT / GS_WARP];
    const int lane = threadIdx.x & (GS_WARP - 1), warp = threadIdx.x / GS_WARP;
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        const unsigned long long o = __shfl_up_sync(GS_FULL_MASK, v, d);
        if (lane >= d)
            v += o;
    }
    if (lane == GS_WARP - 1)
        warp_sum[warp] = v;
    __syncthreads();
    unsigned long long w = warp_sum[lane], before = 0;
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        const unsigned long long o = __shfl_up_sync(GS_FULL_MASK, w, d);
        if (lane >= d)
            w += o;
    }
    *total = __shfl_sync(GS_FULL_MASK, w, GS_WARP - 1);
    before = __shfl_sync(GS_FULL_MASK, w, warp > 0 ? warp - 1 : 0);
    __syncthreads(); /* warp_sum read by every warp before a next call writes it */
    return v + (warp > 0 ? before : 0);
}

/* The descriptor word that holds group g's sum. */
static __device__ __forceinline__ ulonglong2 *gs_hp_group_sum(gs_tile_state ts, int64_t g)
{
    return ts.words + 2 * g * GS_HP_NT + 1;
}

/* The last block also writes the heads' count (the flagged count, plus element 0 when its flag,
 * bit 0 of the mask, is clear: it is a head whatever its flag) into *total and into *reply (the
 * host's reply, cuda/reply.c) unless NULL. */
__global__ void __launch_bounds__(GS_HP_NT)
    gs_heads_prefix(gs_tile_state ts, int64_t tiles, const uint16_t *mask,
                    unsigned long long *total, unsigned long long *reply)
{
    const int64_t t = (int64_t)blockIdx.x * GS_HP_NT + threadIdx.x;
    const unsigned long long v = t < tiles ? gs_tile_load(ts.words + 2 * t, ts.tag).value : 0;
    unsigned long long group, groups = 0, before;
    const unsigned long long incl = gs_hp_block_scan(v, &group);
    /* The count pass cleared the words: a group's reads INVALID until published. */
    if (threadIdx.x == 0 && blockIdx.x + 1 < gridDim.x)
        gs_tile_store(gs_hp_group_sum(ts, blockIdx.x), ts.tag, GS_ST_AGGREGATE, group);
    /* The poll sleeps between reads, as every look-back's: without the call nvcc may drop the
     * loop (docs/performance-notes.md, "A poll must sleep"). */
    for (int64_t g = threadIdx.x; g < blockIdx.x; g += GS_HP_NT) {
        gs_tile_word w = gs_tile_load(gs_hp_group_sum(ts, g), ts.tag);
        while (w.status == GS_ST_INVALID) {
            __nanosleep(GS_LOOKBACK_NS);
            w = gs_tile_load(gs_hp_group_sum(ts, g), ts.tag);
        }
        groups += w.value;
    }
    (void)gs_hp_block_scan(groups, &before);
    if (t > 0 && t < tiles)
        gs_tile_store(ts.words + 2 * t, ts.tag, GS_ST_PREFIX, before + incl);
    if (threadIdx.x == 0 && blockIdx.x + 1 == gridDim.x) {
        const unsigned long long count = before + group + ((mask[0] & 1u) == 0);
        *total = count;
        if (reply != NULL)
            *reply = count;
    }
}

extern "C" cudaError_t gs_launch_heads_count(const gs_split_desc *d, void *scratch,
                                             size_t scratch_bytes, unsigned long long *reply,
                                             cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    const gs_tile_state ts = gs_tile_state_carve(scratch, tiles, 0); /* as the count pass's */
    cudaError_t err = gs_launch_split_count_heads(d, scratch, scratch_bytes, stream);

    if (err != cudaSuccess || d->n == 0)
        return err;
    if (tiles > INT32_MAX)
        return cudaErrorInvalidValue;
    /* Every tile's prefix, also where one heads block takes them all and looks back at
     * nothing: a few stores, and one way to the count. */
    gs_heads_prefix<<<(unsigned)((tiles + GS_HP_NT - 1) / GS_HP_NT), GS_HP_NT, 0, stream>>>(
        ts, tiles, (const uint16_t *)((char *)scratch + gs_split_mask_offset(d->n)),
        (unsigned long long *)scratch, reply);
    return gs_launch_check(stream);
}

extern "C" cudaError_t gs_launch_heads(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                       int64_t *positions, int64_t room, cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    gs_heads_kparams p;

    if (d->n == 0)
        return cudaSuccess;
    if (scratch_bytes < gs_split_scratch_bytes(d->n) || tiles > INT32_MAX || room < 1)
        return cudaErrorInvalidValue;
    p.n = d->n;
    p.ts = gs_tile_state_carve(scratch, tiles, 0); /* as the count pass carved it */
    p.mask = (const uint16_t *)((char *)scratch + gs_split_mask_offset(d->n));
    p.positions = positions;
    p.room = room;
    gs_heads_tile<<<(unsigned)((tiles + GS_HEADS_TILES - 1) / GS_HEADS_TILES), GS_NT, 0, stream>>>(
        p);
    return gs_launch_check(stream);
}
