/*
 * agent/segreduce.cuh - a block's part in a segmented reduction (reduceat, segmented_reduce).
 * Included once per register type by stamp.cuh; it brings in agent/scan.cuh first, whose phases
 * it reuses.
 *
 * Two agents:
 *   segreduce_tiles  a sorted partition (segment s is [starts[s], starts[s+1]), the last one to
 *                    n): the single-pass scan, segmented at the starts, that stores only each
 *                    segment's last value.  One tile per block, in launch order: the tile's head
 *                    bits in shared memory (from the starts that fall in it: first[tile] ..
 *                    first[tile+1], and whether the value after it starts a segment or ends the
 *                    run), then the scan's phases (gather, aggregate, publish, look back), then
 *                    each value followed by a head writes out[its segment], the segment being
 *                    first[tile] - 1 plus the heads up to it.  The values are read once, as a
 *                    scan reads them; float add and mul look back in the scan's fixed grouping, so
 *                    every result is deterministic and, per segment, as accurate as the scan.
 *   segreduce_warps  any segments (starts and ends, overlapping or out of order): a warp per
 *                    segment, lanes striding over it, a fixed tree across the lanes.  Simple and
 *                    deterministic; a long segment is slow (one warp), which only reduceat's
 *                    indices that do not increase reach.
 */
#include "agent/scan.cuh"

#ifndef GS_SEGREDUCE_ONCE
#define GS_SEGREDUCE_ONCE
/* Words of a tile's head bits: one bit per value and one for the value after the tile. */
#define GS_SEG_WORDS (GS_NV / 32 + 1)
/* Words of the head bits each lane of warp 0 counts for the prefix counts. */
#define GS_SEG_WORDS_PER_LANE ((GS_SEG_WORDS + GS_WARP - 1) / GS_WARP)

/* The head bits of a tile in shared memory, and the heads in the words before each word. */
typedef struct gs_seg_bits {
    unsigned word[GS_SEG_WORDS];
    unsigned before[GS_SEG_WORDS];
} gs_seg_bits;

/* Set the bit of tile offset `off` (0 .. GS_NV). */
static __device__ __forceinline__ void gs_seg_mark(gs_seg_bits *b, int64_t off)
{
    atomicOr(&b->word[off >> 5], 1u << (off & 31));
}

/* The heads at tile offsets <= off. */
static __device__ __forceinline__ unsigned gs_seg_count(const gs_seg_bits *b, int off)
{
    const unsigned upto = (2u << (off & 31)) - 1u; /* bits 0 .. off % 32 (all 32 for 31) */
    return b->before[off >> 5] + __popc(b->word[off >> 5] & upto);
}

/*
 * The head bits of `tile` (the starts first[tile] .. first[tile+1] that fall in [start, start +
 * GS_NV], and n when it does) and their prefix counts; called by every thread, ends with a
 * barrier.
 */
static __device__ __forceinline__ void gs_seg_bits_of(const gs_segreduce_kparams *sp, int64_t tile,
                                                      gs_seg_bits *b)
{
    const int64_t start = tile * GS_NV;
    const int64_t k0 = sp->first[tile], k1 = sp->first[tile + 1];
    for (int i = threadIdx.x; i < GS_SEG_WORDS; i += GS_NT)
        b->word[i] = 0;
    __syncthreads();
    /* starts[k1], if any, is the first start past the tile: it may start the value after it. */
    for (int64_t j = k0 + threadIdx.x; j <= k1 && j < sp->nseg; j += GS_NT) {
        const int64_t off = sp->starts[j] - start;
        if (off <= GS_NV)
            gs_seg_mark(b, off);
    }
    if (threadIdx.x == 0 && sp->scan.n - start <= GS_NV)
        gs_seg_mark(b, sp->scan.n - start); /* the run ends: its last value ends a segment */
    __syncthreads();
    /* ---- Warp 0: the heads in the words before each word (lane l counts a run of words). ---- */
    if (threadIdx.x < GS_WARP) {
        const int lane = threadIdx.x;
        unsigned count[GS_SEG_WORDS_PER_LANE], total = 0;
#pragma unroll
        for (int i = 0; i < GS_SEG_WORDS_PER_LANE; ++i) {
            const int w = lane * GS_SEG_WORDS_PER_LANE + i;
            count[i] = w < GS_SEG_WORDS ? __popc(b->word[w]) : 0u;
            total += count[i];
        }
        unsigned incl = total;
#pragma unroll
        for (int d = 1; d < GS_WARP; d <<= 1) {
            const unsigned o = __shfl_up_sync(GS_FULL_MASK, incl, d);
            if (lane >= d)
                incl += o;
        }
        unsigned run = incl - total;
#pragma unroll
        for (int i = 0; i < GS_SEG_WORDS_PER_LANE; ++i) {
            const int w = lane * GS_SEG_WORDS_PER_LANE + i;
            if (w < GS_SEG_WORDS)
                b->before[w] = run;
            run += count[i];
        }
    }
    __syncthreads();
}
#endif /* GS_SEGREDUCE_ONCE */

/* This thread's head bits (bit k*C + c: value c of its piece in row k), as tile_heads has them. */
static __device__ __forceinline__ unsigned GS_FN(seg_heads)(gs_dtype in_t, gs_dtype out_t,
                                                            const gs_seg_bits *b)
{
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    unsigned heads = 0;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int off = k * GS_NT * C + (int)threadIdx.x * C; /* a multiple of C, C | 32 */
            heads |= ((b->word[off >> 5] >> (off & 31)) & ((1u << C) - 1u)) << (k * C);
        }
    }
    return heads;
}

/* One tile per block, in launch order (see the file's header). */
static __device__ __forceinline__ void GS_FN(segreduce_tiles)(gs_op op, gs_dtype in_t,
                                                              gs_dtype out_t,
                                                              const gs_segreduce_kparams *sp)
{
    __shared__ GS_FN(gs_scan_smem) sm;
    __shared__ gs_seg_bits b;
    const gs_scan_kparams *p = &sp->scan;
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;

    /* ---- The tile, and its heads. ---- */
    if (threadIdx.x == 0)
        sm.tiles[0] = gs_take_tile(p->ts.counter, gridDim.x);
    __syncthreads();
    const int64_t tile = sm.tiles[0];
    gs_seg_bits_of(sp, tile, &b);

    /* ---- The scan's phases: load, aggregate, publish, look back. ---- */
    GS_R x[GS_VT];
    GS_FN(gs_tile_mine) mine;
    GS_FN(gs_tile_totals) tot;
    GS_FN(gather)(op, in_t, out_t, p, tile, NULL, x);
    GS_FN(aggregate)
    (op, in_t, out_t, 1, x, GS_FN(seg_heads)(in_t, out_t, &b), &mine, &tot, &sm.block);
    GS_FN(publish_aggregate)(op, out_t, p, tile, &tot);
    GS_FN(learn_prefix)(op, out_t, 1, p, tile, &tot, &sm);

    /* ---- Each value followed by a head is its segment's last: store its scan. ---- */
    GS_FN(gs_carry) row_carry;
    row_carry.hi = sm.excl_hi;
    row_carry.lo = sm.excl_lo;
    double row_d = sm.excl_d;
    const int64_t before = sp->first[tile] - 1; /* the segment open at the tile's start */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            GS_R y[16];
            GS_FN(emit_piece)(op, in_t, out_t, 1, 0, k, x + k * C, &mine, &tot, &row_carry, &row_d,
                              y);
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const int off = k * GS_NT * C + (int)threadIdx.x * C + c;
                const int64_t s = before + (int64_t)gs_seg_count(&b, off);
                if (((b.word[(off + 1) >> 5] >> ((off + 1) & 31)) & 1u) && s >= 0 &&
                    tile * GS_NV + off < p->n)
                    gs_store_bits(out_t, sp->out, s, GS_FN(to_bits)(out_t, y[c]));
            }
        }
    }
}

/* Any segments: warp w of the grid takes segments w, w + warps, ... (see the file's header). */
static __device__ __forceinline__ void GS_FN(segreduce_warps)(gs_op op, gs_dtype in_t,
                                                              gs_dtype out_t,
                                                              const gs_segreduce_kparams *sp)
{
    const GS_R id = GS_FN(identity)(op, out_t);
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t warps = (int64_t)gridDim.x * GS_NWARPS;

    for (int64_t s = (int64_t)blockIdx.x * GS_NWARPS + threadIdx.x / GS_WARP; s < sp->nseg;
         s += warps) {
        const int64_t end = sp->ends[s];
        GS_FN(gs_carry) acc = GS_FN(carry_of)(id);
        for (int64_t i = sp->starts[s] + lane; i < end; i += GS_WARP)
            acc = GS_FN(carry_combine)(
                op, acc,
                GS_FN(carry_of)(GS_FN(from_bits)(in_t, gs_load_bits(in_t, sp->scan.in, i))));
        GS_FN(warp_reduce)(op, &acc);
        if (lane == 0)
            gs_store_bits(out_t, sp->out, s,
                          GS_FN(to_bits)(out_t, GS_FN(carry_apply)(op, acc, id)));
    }
}
