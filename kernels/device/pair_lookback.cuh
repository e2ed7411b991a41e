/*
 * device/pair_lookback.cuh - device level: the linear recurrence's tile state and its anchored,
 * deterministic look-back over pairs (the pair operator of gpuscan/linrec.h), whatever the
 * recurrence's floating type.
 * As device/lookback.cuh's look_back_anchored does for float add: every tile publishes its
 * aggregate pair (A, B) as soon as it has it (A and B as doubles, a head bit in their status: the
 * tile holds a row's first step; two descriptor words, or float32's one, gs_lr_publish); every
 * GS_ANCHOR_EVERY-th tile (an anchor) also publishes its exclusive prefix (four words: A and B as
 * double-double numbers). The exclusive prefix of tile T is the prefix of its anchor a(T), the last
 * anchor at least GS_ANCHOR_LAG tiles before T (tile 0's prefix is the identity), composed with the
 * aggregates of tiles a(T) .. T-1 in a tree fixed by T - a(T): the result is a function of the
 * aggregates alone, so it has the same bits on every run.  The tree composes in double (a float32
 * pair is exact in it), the anchor's prefix and the tree's result in double-double: the chain of
 * anchors adds a link every LAG tiles, and double-double keeps its roundings (about 2^-106 each)
 * from adding up over the links.  Deadlock-free as the scan's: a tile waits for nothing but the
 * aggregates of earlier tiles and an anchor's prefix LAG tiles back, whose blocks started before
 * its own (tiles are taken in launch order).
 */
#ifndef GS_PAIR_LOOKBACK_CUH
#define GS_PAIR_LOOKBACK_CUH

#include "device/tile_state.cuh"
#include "gpuscan/linrec.h"

#ifndef GS_LOOKBACK_NS
#define GS_LOOKBACK_NS 20 /* ns between polls: let the tiles ahead publish, not hammer L2 */
#endif

/* Aggregates each thread reads: enough for LAG + EVERY - 1. */
#define GS_LR_PER_THREAD ((GS_ANCHOR_LAG + GS_ANCHOR_EVERY - 1 + GS_NT - 1) / GS_NT)
#if GS_NT < 2 * GS_WARP || GS_NT % (2 * GS_WARP) != 0
#error "GS_NT: the look-back's tree folds the same whole number of two threads' parts a lane"
#endif
#if GS_LR_PER_THREAD > 31
#error "GS_ANCHOR_LAG too large: a thread's pending reads are bits of one word"
#endif
/* Parts (of two threads each) one lane of the tree's warp folds, and the padded slot of part
 * i. */
#define GS_LR_PARTS (GS_NT / 2)
#define GS_LR_GROUP (GS_LR_PARTS / GS_WARP)
#define GS_LR_SLOT(i) ((i) + (i) / GS_LR_GROUP)

/* A segmented pair in double: (f, A, B), f set when the run holds a row's first step. */
typedef struct gs_dpair {
    int f;
    double A;
    double B;
} gs_dpair;

/* earlier . *later into *later (a head in *later discards what precedes it). */
static __device__ __forceinline__ void gs_dpair_prepend(gs_dpair earlier, gs_dpair *later)
{
    if (!later->f) {
        gs_lr_compose_f64(&earlier.A, &earlier.B, later->A, later->B);
        later->A = earlier.A;
        later->B = earlier.B;
    }
    later->f |= earlier.f;
}

/* The scratch of one recurrence, carved as gs_linrec_scratch_bytes() sized it: the tile counter,
 * two words per tile, four per anchor; zeroed before the launch (tag 0). */
typedef struct gs_lr_state {
    unsigned *counter;
    ulonglong2 *tiles;
    ulonglong2 *anchors;
} gs_lr_state;

static inline gs_lr_state gs_lr_state_carve(void *scratch, int64_t tiles)
{
    gs_lr_state s;
    s.counter = (unsigned *)scratch;
    s.tiles = (ulonglong2 *)((char *)scratch + GS_SCRATCH_ALIGN);
    s.anchors = s.tiles + 2 * tiles;
    return s;
}

static __device__ __forceinline__ unsigned long long gs_lr_bits(double v)
{
    return (unsigned long long)__double_as_longlong(v);
}

static __device__ __forceinline__ double gs_lr_double(unsigned long long b)
{
    return __longlong_as_double((long long)b);
}

/* A tile's aggregate: two descriptor words (A, B), or with `compact` (float32, whose aggregates
 * are floats widened, their low 29 bits zero) one 16-byte word of A and B, the low two bits of
 * each half its status: bit 0 set once published (a zeroed scratch reads as unpublished), bit 1
 * of A's the head bit. Clearing those bits gives the doubles back exactly (an infinity too: its
 * bits with the status set read as a NaN only until cleared). Each 8-byte half is single-copy
 * atomic and carries its own status, so a reader takes the word when both halves show bit 0:
 * one load a tile instead of two. */
static __device__ __forceinline__ void gs_lr_publish(gs_lr_state s, int64_t tile, gs_dpair p,
                                                     int compact)
{
    if (compact) {
        gs_word_store(s.tiles + tile, gs_lr_bits(p.A) | (p.f ? 3ull : 1ull),
                      gs_lr_bits(p.B) | 1ull);
        return;
    }
    const unsigned st = GS_ST_AGGREGATE | (p.f ? GS_ST_HEAD : 0u);
    gs_tile_store(s.tiles + 2 * tile + 1, 0, st, gs_lr_bits(p.B)); /* B first: both are needed */
    gs_tile_store(s.tiles + 2 * tile, 0, st, gs_lr_bits(p.A));
}

/* A tile's aggregate, or 0 while it is unpublished (either word, or either half). */
static __device__ __forceinline__ int gs_lr_read(gs_lr_state s, int64_t tile, gs_dpair *p,
                                                 int compact)
{
    if (compact) {
        unsigned long long a, b;
        gs_word_load(s.tiles + tile, &a, &b);
        if ((a & b & 1ull) == 0)
            return 0;
        p->f = (int)(a >> 1) & 1;
        p->A = gs_lr_double(a & ~3ull);
        p->B = gs_lr_double(b & ~3ull);
        return 1;
    }
    const gs_tile_word a = gs_tile_load(s.tiles + 2 * tile, 0);
    const gs_tile_word b = gs_tile_load(s.tiles + 2 * tile + 1, 0);
    if (a.status == GS_ST_INVALID || b.status == GS_ST_INVALID)
        return 0;
    p->f = (a.status & GS_ST_HEAD) != 0;
    p->A = gs_lr_double(a.value);
    p->B = gs_lr_double(b.value);
    return 1;
}

/* An anchor's exclusive prefix (double-double A and B), or 0 while any word is unpublished. The
 * four words are read at once and checked after: one L2 round trip on the anchors' chain. */
static __device__ __forceinline__ int gs_lr_read_anchor(gs_lr_state s, int64_t anchor, int *f,
                                                        gs_dd *A, gs_dd *B)
{
    const ulonglong2 *w = s.anchors + 4 * gs_anchor_index(anchor);
    gs_tile_word v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        v[i] = gs_tile_load(w + i, 0);
#pragma unroll
    for (int i = 0; i < 4; ++i)
        if (v[i].status == GS_ST_INVALID)
            return 0;
    *f = (v[0].status & GS_ST_HEAD) != 0;
    A->hi = gs_lr_double(v[0].value);
    A->lo = gs_lr_double(v[1].value);
    B->hi = gs_lr_double(v[2].value);
    B->lo = gs_lr_double(v[3].value);
    return 1;
}

static __device__ __forceinline__ void gs_lr_publish_anchor(gs_lr_state s, int64_t anchor, int f,
                                                            gs_dd A, gs_dd B)
{
    ulonglong2 *w = s.anchors + 4 * gs_anchor_index(anchor);
    const unsigned st = GS_ST_PREFIX | (f ? GS_ST_HEAD : 0u);
    gs_tile_store(w + 3, 0, st, gs_lr_bits(B.lo));
    gs_tile_store(w + 2, 0, st, gs_lr_bits(B.hi));
    gs_tile_store(w + 1, 0, st, gs_lr_bits(A.lo));
    gs_tile_store(w, 0, st, gs_lr_bits(A.hi));
}

/* Shared memory of the look-back's cross-thread step. */
typedef struct gs_lr_lookback_smem {
    gs_dpair part[GS_LR_SLOT(GS_LR_PARTS)];
} gs_lr_lookback_smem;

/* The look-back of `tile` (> 0) in two steps, for a caller that runs other work beside the
 * second (agent/linrec.cuh's lookahead driver):
 *   gs_lr_look_back_part   every thread: tiles T-1-i*K .. T-i*K-K (thread i, K per thread, down
 *                          to the anchor) read at once, waited for and composed; threads 2m and
 *                          2m+1 into slot m;
 *   (a barrier)
 *   gs_lr_look_back_tree   one whole warp: the slots' tree, then the anchor's prefix, waited for
 *                          last (so a link of the chain of anchors costs one read and one
 *                          composition); B of the exclusive prefix (h just before the tile's
 *                          first step) returned in lane 0, rounded to double. An anchor
 *                          publishes its prefix. */
/* This thread's tile k of the look-back of `tile`, or -1 past the anchor. */
static __device__ __forceinline__ int64_t gs_lr_look_back_tile(int64_t tile, int k)
{
    const int64_t q = tile - 1 - (int64_t)threadIdx.x * GS_LR_PER_THREAD - k;
    return q >= gs_anchor_of(tile) ? q : -1;
}

static __device__ __forceinline__ void gs_lr_look_back_part(gs_lr_state s, int64_t tile,
                                                            gs_lr_lookback_smem *sm, int compact)
{
    const gs_dpair id = { 0, 1.0, 0.0 };
    gs_dpair x[GS_LR_PER_THREAD];
    unsigned pending = 0;
#pragma unroll
    for (int k = 0; k < GS_LR_PER_THREAD; ++k) {
        x[k] = id;
        if (gs_lr_look_back_tile(tile, k) >= 0)
            pending |= 1u << k;
    }
    while (pending) {
#pragma unroll
        for (int k = 0; k < GS_LR_PER_THREAD; ++k)
            if (((pending >> k) & 1u) &&
                gs_lr_read(s, gs_lr_look_back_tile(tile, k), &x[k], compact))
                pending &= ~(1u << k);
        if (pending)
            __nanosleep(GS_LOOKBACK_NS);
    }
    gs_dpair c = x[0];
#pragma unroll
    for (int k = 1; k < GS_LR_PER_THREAD; ++k)
        gs_dpair_prepend(x[k], &c);
    /* ---- Threads 2m (later) and 2m+1 make part m. ---- */
    gs_dpair o;
    o.f = __shfl_down_sync(GS_FULL_MASK, c.f, 1);
    o.A = __shfl_down_sync(GS_FULL_MASK, c.A, 1);
    o.B = __shfl_down_sync(GS_FULL_MASK, c.B, 1);
    if ((threadIdx.x & 1u) == 0) {
        gs_dpair_prepend(o, &c);
        sm->part[GS_LR_SLOT(threadIdx.x / 2)] = c;
    }
}

static __device__ __forceinline__ double gs_lr_look_back_tree(gs_lr_state s, int64_t tile,
                                                              const gs_lr_lookback_smem *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t anchor = gs_anchor_of(tile);
    /* ---- Lane l folds parts G*l .. G*l+G-1 latest first, then the warp reduces its lanes
     * (lane 0 latest). ---- */
    const int first = lane * GS_LR_GROUP;
    gs_dpair c = sm->part[GS_LR_SLOT(first)];
#pragma unroll
    for (int j = 1; j < GS_LR_GROUP; ++j)
        gs_dpair_prepend(sm->part[GS_LR_SLOT(first + j)], &c);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        gs_dpair o;
        o.f = __shfl_down_sync(GS_FULL_MASK, c.f, d);
        o.A = __shfl_down_sync(GS_FULL_MASK, c.A, d);
        o.B = __shfl_down_sync(GS_FULL_MASK, c.B, d);
        if (lane + d < GS_WARP)
            gs_dpair_prepend(o, &c);
    }
    /* ---- The anchor's prefix (anchor 0's is the identity; none needed when the tree holds a
     * row's first step), then the tree's result, in double-double. ---- */
    double b = 0.0;
    if (lane == 0) {
        int af = 0;
        gs_dd aA = gs_dd_of(1.0), aB = gs_dd_of(0.0);
        if (anchor > 0 && !c.f)
            while (!gs_lr_read_anchor(s, anchor, &af, &aA, &aB))
                __nanosleep(GS_LOOKBACK_NS);
        if (c.f) {
            aA = gs_dd_of(c.A);
            aB = gs_dd_of(c.B);
        } else {
            gs_lr_compose_dd(&aA, &aB, gs_dd_of(c.A), gs_dd_of(c.B));
        }
        if (gs_is_anchor(tile))
            gs_lr_publish_anchor(s, tile, af | c.f, aA, aB);
        b = aB.hi + aB.lo;
    }
    return b;
}

/* The whole look-back of `tile` (> 0), called by every thread of the block after the tile's
 * aggregate is published: h just before the tile in thread 0. */
static __device__ __forceinline__ double gs_lr_look_back(gs_lr_state s, int64_t tile,
                                                         gs_lr_lookback_smem *sm, int compact)
{
    gs_lr_look_back_part(s, tile, sm, compact);
    __syncthreads();
    return threadIdx.x < GS_WARP ? gs_lr_look_back_tree(s, tile, sm) : 0.0;
}

#endif /* GS_PAIR_LOOKBACK_CUH */
