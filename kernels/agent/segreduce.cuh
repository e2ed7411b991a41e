/*
 * agent/segreduce.cuh - a block's part in a segmented reduction (reduceat, segmented_reduce).
 * Included once per register type by stamp.cuh; it brings in agent/scan.cuh first, whose phases
 * it reuses.
 *
 * Two agents:
 *   segreduce_tiles  a sorted partition (segment s is [starts[s], starts[s+1]), the last one to
 *                    n): one level of a tree of segmented reductions, a block per tile and no
 *                    look-back (no block ever waits for another).  The tile's head bits go to
 *                    shared memory (level 0: from the starts that fall in it, first[tile] ..
 *                    first[tile+1]; a higher level: from the ids of the level below), the tile
 *                    is scanned, segmented at its heads, from the identity (the scan's aggregate
 *                    and emit phases), and each value followed by a head or by the end of the
 *                    run settles what it ends:
 *                    - a segment whose head lies in the tile: its result, out[its id];
 *                    - the tile's open run (no head before it in the tile): part[2 tile];
 *                    - at the tile's last value, a run that goes on past the tile and started in
 *                      it: part[2 tile + 1], and its id in part_ids[tile].
 *                    The next level reduces the 2 partials per tile the same way, segmented at
 *                    the odd partials of tiles with heads (part_ids[tile] != GS_SEG_NO_HEAD), and
 *                    writes the segments that crossed tiles; levels follow until one tile holds
 *                    the run (dispatch/segreduce.cu).  The values are read once; float add and
 *                    mul group a segment by a tree fixed by the positions alone (a segment inside
 *                    one tile exactly as the scan groups it), so every result is deterministic
 *                    and, per segment, within the scan's bound plus a rounding per level.
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
/* part_ids of a tile: its last run ended inside it (its result is written: no id to carry), or
 * it holds no head at all (its partials continue the run before it). */
#define GS_SEG_NO_ID (-1)
#define GS_SEG_NO_HEAD (-2)

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

/* The bits of offsets at+1 .. at+c (c <= 16), at a multiple of c and c a divisor of 32: the
 * heads after each of the c values from `at`. */
static __device__ __forceinline__ unsigned gs_seg_after(const gs_seg_bits *b, int at, int c)
{
    const unsigned long long w = b->word[at >> 5] | (unsigned long long)b->word[(at >> 5) + 1]
                                                        << 32;
    return (unsigned)(w >> ((at & 31) + 1)) & ((1u << c) - 1u);
}

/* The offset of the last head at or before `off` (the tile has one there: gs_seg_count > 0). */
static __device__ __forceinline__ int gs_seg_last_head(const gs_seg_bits *b, int off)
{
    int w = off >> 5;
    unsigned m = b->word[w] & ((2u << (off & 31)) - 1u);
    while (m == 0 && w > 0)
        m = b->word[--w];
    return w * 32 + 31 - __clz(m);
}

/*
 * The head bits of `tile` and their prefix counts, with the end of the run (offset n - start,
 * when it is at most GS_NV) marked as a head; called by every thread, ends with a barrier.
 * Level 0: the starts first[tile] .. first[tile+1] that fall in [start, start + GS_NV] (the
 * return value: first[tile], the segments before the tile).  A higher level: value 2j + 1 is a
 * head unless pair j's tile held none (ids[j] == GS_SEG_NO_HEAD); returns 0.
 */
static __device__ __forceinline__ int64_t gs_seg_bits_of(const gs_segreduce_kparams *sp,
                                                         int64_t tile, gs_seg_bits *b)
{
    const int64_t start = tile * GS_NV;
    int64_t k0 = 0;
    for (int i = threadIdx.x; i < GS_SEG_WORDS; i += GS_NT)
        b->word[i] = 0;
    __syncthreads();
    if (sp->ids != NULL) {
        for (int i = threadIdx.x; i < GS_NV / 2; i += GS_NT) {
            if (start + 2 * i + 1 < sp->scan.n && sp->ids[start / 2 + i] != GS_SEG_NO_HEAD)
                gs_seg_mark(b, 2 * i + 1);
        }
    } else {
        k0 = sp->first[tile];
        const int64_t k1 = sp->first[tile + 1];
        /* starts[k1], if any, is the first start past the tile: it may start the value after it. */
        for (int64_t j = k0 + threadIdx.x; j <= k1 && j < sp->nseg; j += GS_NT) {
            const int64_t off = sp->starts[j] - start;
            if (off <= GS_NV)
                gs_seg_mark(b, off);
        }
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
    return k0;
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

/* What value `off` of `tile` (its scan y) settles, when it is followed by a head or the end of
 * the run (`ends`) or is the tile's last (`off == last`): see the file's header.  `first`:
 * gs_seg_bits_of's. */
static __device__ __forceinline__ void GS_FN(seg_settle)(gs_op op, gs_dtype out_t,
                                                         const gs_segreduce_kparams *sp,
                                                         int64_t tile, int64_t first,
                                                         const gs_seg_bits *b, int off, int last,
                                                         int ends, GS_R y)
{
    const int opened = gs_seg_count(b, off) > 0; /* a head of this tile starts y's run */
    int64_t sid = GS_SEG_NO_ID;
    if (opened)
        sid = sp->ids != NULL ? sp->ids[(tile * GS_NV + gs_seg_last_head(b, off)) >> 1]
                              : first - 1 + (int64_t)gs_seg_count(b, off);
    if (!opened && sp->part != NULL)
        gs_store_bits(out_t, sp->part, 2 * tile, GS_FN(to_bits)(out_t, y));
    else if (opened && ends && sid >= 0)
        gs_store_bits(out_t, sp->out, sid, GS_FN(to_bits)(out_t, y));
    if (off == last && sp->part != NULL) {
        const int on = opened && !ends; /* a run of this tile goes on past it */
        const GS_R last_part = on ? y : GS_FN(identity)(op, out_t);
        gs_store_bits(out_t, sp->part, 2 * tile + 1, GS_FN(to_bits)(out_t, last_part));
        sp->part_ids[tile] = !opened ? GS_SEG_NO_HEAD : on ? sid : GS_SEG_NO_ID;
    }
}

/* Block b: tile b of one level (see the file's header). */
static __device__ __forceinline__ void GS_FN(segreduce_tiles)(gs_op op, gs_dtype in_t,
                                                              gs_dtype out_t,
                                                              const gs_segreduce_kparams *sp)
{
    __shared__ GS_FN(gs_block_scan_smem) bsm;
    __shared__ gs_seg_bits b;
    const gs_scan_kparams *p = &sp->scan;
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int64_t tile = blockIdx.x;
    const int last = (int)(p->n - tile * GS_NV < GS_NV ? p->n - tile * GS_NV : GS_NV) - 1;

    /* ---- The values (in flight while the heads are found), then the heads. ---- */
    GS_R x[GS_VT];
    GS_FN(gather)(op, in_t, out_t, p, tile, NULL, x);
    const int64_t first = gs_seg_bits_of(sp, tile, &b);
    if (threadIdx.x == 0 && sp->part != NULL && (b.word[0] & 1u)) /* no open run: empty piece */
        gs_store_bits(out_t, sp->part, 2 * tile, GS_FN(to_bits)(out_t, GS_FN(identity)(op, out_t)));

    /* ---- The tile's segmented scan from the identity, and what each value settles. ---- */
    GS_FN(gs_tile_mine) mine;
    GS_FN(gs_tile_totals) tot;
    GS_FN(aggregate)
    (op, in_t, out_t, 1, x, GS_FN(seg_heads)(in_t, out_t, &b), &mine, &tot, &bsm);
    GS_FN(gs_carry) row_carry = GS_FN(carry_of)(GS_FN(identity)(op, out_t));
    double row_d = 0.0;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            GS_R y[16];
            GS_FN(emit_piece)(op, in_t, out_t, 1, 0, k, x + k * C, &mine, &tot, &row_carry, &row_d,
                              y);
            /* The values of the piece that settle something (few: a loop over their bits). */
            const int at = k * GS_NT * C + (int)threadIdx.x * C;
            const unsigned ends = gs_seg_after(&b, at, C);
            unsigned todo = last >= at + C ? ends
                            : last >= at   ? (ends | 1u << (last - at)) & ((2u << (last - at)) - 1u)
                                           : 0u;
            while (todo != 0) {
                const int c = __ffs(todo) - 1;
                todo &= todo - 1;
                GS_R v = y[0];
#pragma unroll
                for (int i = 1; i < C; ++i)
                    v = i == c ? y[i] : v;
                GS_FN(seg_settle)(op, out_t, sp, tile, first, &b, at + c, last, (ends >> c) & 1u,
                                  v);
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
