/*
 * dispatch/heads.cu - the positions of segment heads (segmented_reduce): element 0 and every
 * element whose flag is set, ascending, in one pass over the flags.  Its __global__ kernel and
 * extern "C" launcher.
 *
 * Level: device-wide algorithm (kernels + dispatch).  A stream compaction of indices with the
 * decoupled look-back: a block takes GS_NWARPS tiles of GS_NV one-byte flags in launch order
 * (its counter), a warp each; every warp turns its tile into bits (16 flags per lane per step,
 * whole 16-byte loads when aligned) and counts them; the block publishes its count, looks back
 * (warp 0) for the heads before it, and its warps write their heads' positions in order.  The
 * count is known only at the end, so the caller gives room for `room` positions: positions
 * from `room` on are not written, and the block holding the last tile leaves the count in the
 * scratch's bytes 8..15 for the host, which runs the pass again with room for them all when
 * they did not fit.
 *
 * Why one pass.  segmented_reduce took the split's count pass (the flags read, their bits
 * written), a host round trip for the count, two launches publishing every tile's prefix, and
 * a positions pass over the bits: 108 + 25 us at 2^28 on the H100 (the flags' n bytes, the bits'
 * n / 4 out and back).  Here the flags are read once and only the positions are written (8
 * bytes a segment).
 *
 * Flags are one byte (bool, int8, uint8: a nonzero byte is a head); ops hands wider ones as bool,
 * as it does for the segmented scan.
 */
#include "dispatch/launch.cuh"

/* The layers of every register type; the heads use u64 (the look-back over head counts). */
#include "stamp.cuh"

/* Kernel parameters (by value). */
typedef struct gs_heads_kparams {
    const uint8_t *flags;
    int64_t n;
    int64_t *positions; /* room for `room` of them */
    int64_t room;
    gs_tile_state ts;          /* the block counter and a descriptor per block */
    unsigned long long *count; /* the heads' number, written by the block holding the last tile */
    unsigned blocks;
    int vec; /* `flags` is 16-byte aligned */
} gs_heads_kparams;

/*
 * The heads before `block` (> 0), by warp 0 after the block's count is out: a look-back that
 * reads GS_HEADS_LB_READS descriptors a lane, GS_WARP * GS_HEADS_LB_READS blocks a round trip
 * (lane l reads the blocks l * READS + 1 .. (l + 1) * READS before the window's end).  Blocks
 * start at about 60 a microsecond at 2^28 on the H100, and a look-back resolves only from a
 * block that has its prefix out, which it publishes after its own look-back: one descriptor a
 * lane (32 blocks a round trip) fell behind, so that each look-back walked back over hundreds of
 * blocks still looking back, and every block lived ~13 us (the pass took 130 us, 63% of DRAM
 * bandwidth).  Counts are exact: the aggregates between the nearest prefix and the block are
 * summed in any order.
 */
#define GS_HEADS_LB_READS 4

static __device__ __forceinline__ unsigned long long gs_heads_look_back(gs_tile_state ts,
                                                                        int64_t block)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    unsigned long long before = 0;
    for (int64_t end = block - 1;; end -= GS_WARP * GS_HEADS_LB_READS) {
        for (;;) {
            /* This lane's descriptors, nearest first, all loads in flight at once (before
             * block 0: an empty prefix); `stop`: its first prefix (READS: none); `agg`: its
             * aggregates before the stop; `ready`: none of them unpublished. */
            gs_tile_word d[GS_HEADS_LB_READS];
#pragma unroll
            for (int k = 0; k < GS_HEADS_LB_READS; ++k) {
                const int64_t pred = end - (int64_t)lane * GS_HEADS_LB_READS - k;
                d[k] = gs_tile_load(ts.words + 2 * (pred >= 0 ? pred : 0), ts.tag);
                if (pred < 0) {
                    d[k].status = GS_ST_PREFIX;
                    d[k].value = 0;
                }
            }
            unsigned long long prefix = 0;
            unsigned agg = 0;
            int stop = GS_HEADS_LB_READS, ready = 1;
#pragma unroll
            for (int k = GS_HEADS_LB_READS - 1; k >= 0;
                 --k) { /* farthest first: the nearest stop wins */
                if (d[k].status == GS_ST_PREFIX) {
                    stop = k;
                    prefix = d[k].value;
                    agg = 0;
                    ready = 1;
                } else {
                    ready &= d[k].status != GS_ST_INVALID;
                    agg += (unsigned)d[k].value;
                }
            }
            const unsigned stops = __ballot_sync(GS_FULL_MASK, stop < GS_HEADS_LB_READS);
            const int first = stops ? __ffs(stops) - 1 : GS_WARP; /* the lane of the nearest */
            if (__all_sync(GS_FULL_MASK, lane > first || ready)) {
                before += __reduce_add_sync(GS_FULL_MASK, lane <= first ? agg : 0u);
                if (first < GS_WARP)
                    return before + __shfl_sync(GS_FULL_MASK, prefix, first);
                break; /* every block of the window has its count out: the window before */
            }
            __nanosleep(GS_LOOKBACK_NS);
        }
    }
}

/* Five blocks a multiprocessor: 48 registers, every load of a lane's tile in flight at once and
 * no spill (six: 40 registers, two loads after the first six, and the bits spilled around the
 * look-back). */
#define GS_HEADS_MIN_BLOCKS 5

__global__ void __launch_bounds__(GS_NT, GS_HEADS_MIN_BLOCKS) gs_heads_kernel(gs_heads_kparams p)
{
    __shared__ unsigned block_sm;
    __shared__ unsigned warp_count[GS_NWARPS];
    __shared__ unsigned long long before_sm;
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;

    if (threadIdx.x == 0)
        block_sm = gs_take_tile(p.ts.counter, p.blocks);
    __syncthreads();
    const int64_t block = block_sm;
    const int64_t tile = block * GS_NWARPS + warp;

    /* ---- The warp's tile as bits (gs_flag_tile_bits: bits[j] holds group lane + 32 j). ---- */
    const int64_t base = tile * GS_NV;
    unsigned bits[GS_FLAG_TILE_STEPS];
    unsigned count = 0;
    gs_flag_tile_bits(GS_UINT8, p.flags, base, p.n, p.vec, lane, bits);
#pragma unroll
    for (int j = 0; j < GS_FLAG_TILE_STEPS; ++j)
        count += __popc(bits[j]);
    count = __reduce_add_sync(GS_FULL_MASK, count);
    if (lane == 0)
        warp_count[warp] = count;
    __syncthreads();

    /* ---- The block's count out (block 0: as its prefix), the heads before the block from the
     * look-back, the block's prefix out.  Element 0 is a head whatever its flag: when the flag
     * is clear it comes first, before every flagged one (`forced`). ---- */
    const unsigned forced = p.flags[0] == 0;
    if (warp == 0) {
        const unsigned total =
            __reduce_add_sync(GS_FULL_MASK, lane < GS_NWARPS ? warp_count[lane] : 0u);
        unsigned long long before = 0;
        if (lane == 0)
            publish_u64(p.ts, block, block == 0 ? GS_ST_PREFIX : GS_ST_AGGREGATE, 0, total);
        if (block > 0)
            before = gs_heads_look_back(p.ts, block);
        if (lane == 0) {
            if (block > 0)
                publish_u64(p.ts, block, GS_ST_PREFIX, 0, before + total);
            if (block == p.blocks - 1)
                *p.count = before + total + forced;
            before_sm = before;
        }
    }
    __syncthreads();

    /* ---- The warp's heads at their places: the block's heads before it, the warp's steps
     * before j, the lanes before this one at step j. ---- */
    int64_t k = (int64_t)before_sm + forced;
    for (int w = 0; w < warp; ++w)
        k += warp_count[w];
    if (forced && block == 0 && threadIdx.x == 0 && p.room > 0)
        p.positions[0] = 0;
#pragma unroll
    for (int j = 0; j < GS_FLAG_TILE_STEPS; ++j) {
        const unsigned c = __popc(bits[j]);
        if (__ballot_sync(GS_FULL_MASK, c != 0) == 0)
            continue; /* no head in the warp's 512 flags: the usual case for long segments */
        unsigned incl = c;
#pragma unroll
        for (int d = 1; d < GS_WARP; d <<= 1) {
            const unsigned o = __shfl_up_sync(GS_FULL_MASK, incl, d);
            if (lane >= d)
                incl += o;
        }
        int64_t q = k + (incl - c);
        const int64_t at = base + (int64_t)(lane + GS_WARP * j) * GS_FLAG_GROUP;
        for (unsigned w = bits[j]; w != 0; w &= w - 1, ++q)
            if (q < p.room)
                p.positions[q] = at + (__ffs(w) - 1);
        k += __shfl_sync(GS_FULL_MASK, incl, GS_WARP - 1);
    }
}

extern "C" cudaError_t gs_launch_heads(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                       int64_t *positions, int64_t room, cudaStream_t stream)
{
    const int64_t blocks = gs_heads_blocks(d->n);
    gs_heads_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    if (gs_dtype_size(d->flag_type) != 1 || scratch_bytes < gs_heads_scratch_bytes(d->n) ||
        blocks > INT32_MAX || room < 0)
        return cudaErrorInvalidValue;
    p.flags = (const uint8_t *)d->flags;
    p.n = d->n;
    p.positions = positions;
    p.room = room;
    p.ts = gs_tile_state_carve(scratch, blocks, 0); /* zeroed below: tag 0, exact counts */
    p.count = (unsigned long long *)((char *)scratch + 8);
    p.blocks = (unsigned)blocks;
    p.vec = ((uintptr_t)d->flags % 16) == 0;
    /* ---- Zero the counter, the count and the descriptors. ---- */
    if ((err = cudaMemsetAsync(scratch, 0, gs_heads_scratch_bytes(d->n), stream)) != cudaSuccess)
        return err;
    gs_heads_kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(p);
    return gs_launch_check(stream);
}
