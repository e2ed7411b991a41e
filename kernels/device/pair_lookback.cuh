/*
 * device/pair_lookback.cuh - device level: the linear recurrence's tile state and its anchored,
 * deterministic look-back over pairs (the pair operator of gpuscan/linrec.h), whatever the
 * recurrence's floating type.
 *
 * Every tile publishes its aggregate pair (A, B) as soon as it has it (two descriptor words, A
 * and B as doubles, a head bit in their status: the tile holds a row's first step).  The tiles
 * form groups of GS_LR_GROUP_TILES; the last tile of a group publishes the group's composite
 * (two words, from the group's aggregates alone), and the first tile of every group (an anchor)
 * its exclusive prefix (four words: A and B as double-double numbers).  The exclusive prefix of
 * tile T, in group g, is composed from
 *   - the aggregates of its own group's tiles before it and of the GS_LR_NEAR_GROUPS groups
 *     before that (tiles T-1 down to the first tile of group g - NEAR),
 *   - the composites of the GS_LR_LAG_GROUPS groups before those,
 *   - the prefix of the anchor of the group before those (tile 0's prefix is the identity),
 * in a tree fixed by T: the result is a function of the aggregates alone, so it has the same bits
 * on every run.  The tree composes in double (a float32 pair is exact in it), the anchor's prefix
 * and the tree's result in double-double: the chain of anchors adds a link every
 * (NEAR + LAG) groups, and double-double keeps its roundings (about 2^-106 each) from adding up
 * over the links.
 * Why groups: the anchor a tile waits for lies (NEAR + LAG) * 32 = 2176 tiles back, more than
 * the tiles in flight on a device (the lookahead driver's 660 blocks on an H100 hold two each),
 * so its prefix is out and the chain of anchors does not hold the tiles back; with the tiles'
 * aggregates alone, 224 tiles back (the scan's anchored look-back, device/lookback.cuh), half of
 * the tiles found their anchor's prefix not yet out and the block waited.  A group's composite
 * waits for nothing but its own tiles' aggregates (no chain), and the nearest one a tile reads
 * is NEAR groups old.  A tile reads at most 31 + 32 NEAR + LAG descriptors, one per thread.
 * Deadlock-free as the scan's: a tile waits for nothing but the aggregates of earlier tiles, the
 * composites of earlier groups (whose last tile publishes it before it waits for anything else)
 * and an anchor's prefix, whose blocks started before its own (tiles are taken in launch order).
 */
#ifndef GS_PAIR_LOOKBACK_CUH
#define GS_PAIR_LOOKBACK_CUH

#include "device/tile_state.cuh"
#include "gpuscan/linrec.h"

#ifndef GS_LOOKBACK_NS
#define GS_LOOKBACK_NS 20 /* ns between polls: let the tiles ahead publish, not hammer L2 */
#endif

/* The groups: tiles of a group, the groups before a tile's own read tile by tile, and the groups
 * read as composites (see the header). */
#define GS_LR_GROUP_TILES GS_ANCHOR_EVERY
#ifndef GS_LR_NEAR_GROUPS
#define GS_LR_NEAR_GROUPS 6
#endif
#ifndef GS_LR_LAG_GROUPS
#define GS_LR_LAG_GROUPS 32
#endif
/* Descriptors a tile reads at most: one per thread. */
#define GS_LR_ITEMS \
    (GS_LR_GROUP_TILES - 1 + GS_LR_NEAR_GROUPS * GS_LR_GROUP_TILES + GS_LR_LAG_GROUPS)
#if GS_LR_ITEMS > GS_NT || GS_LR_GROUP_TILES != GS_WARP
#error "a tile's look-back reads one descriptor a thread, and a warp folds a group"
#endif
/* Threads whose parts one lane of warp 0 folds, and the padded slot of thread i's part. */
#define GS_LR_GROUP (GS_NT / GS_WARP)
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
 * two words per tile, six per group (its first tile's prefix: four; its composite: two); zeroed
 * before the launch (tag 0). */
typedef struct gs_lr_state {
    unsigned *counter;
    ulonglong2 *tiles;
    ulonglong2 *groups;
} gs_lr_state;

static inline gs_lr_state gs_lr_state_carve(void *scratch, int64_t tiles)
{
    gs_lr_state s;
    s.counter = (unsigned *)scratch;
    s.tiles = (ulonglong2 *)((char *)scratch + GS_SCRATCH_ALIGN);
    s.groups = s.tiles + 2 * tiles;
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

/* Publish a pair at w (a tile's aggregate, a group's composite; B first: a reader needs both
 * words). */
static __device__ __forceinline__ void gs_lr_publish_at(ulonglong2 *w, gs_dpair p)
{
    const unsigned st = GS_ST_AGGREGATE | (p.f ? GS_ST_HEAD : 0u);
    gs_tile_store(w + 1, 0, st, gs_lr_bits(p.B));
    gs_tile_store(w, 0, st, gs_lr_bits(p.A));
}

/* The pair at w, or 0 while either word is unpublished. */
static __device__ __forceinline__ int gs_lr_read_at(const ulonglong2 *w, gs_dpair *p)
{
    const gs_tile_word a = gs_tile_load(w, 0);
    const gs_tile_word b = gs_tile_load(w + 1, 0);
    if (a.status == GS_ST_INVALID || b.status == GS_ST_INVALID)
        return 0;
    p->f = (a.status & GS_ST_HEAD) != 0;
    p->A = gs_lr_double(a.value);
    p->B = gs_lr_double(b.value);
    return 1;
}

static __device__ __forceinline__ void gs_lr_publish(gs_lr_state s, int64_t tile, gs_dpair p)
{
    gs_lr_publish_at(s.tiles + 2 * tile, p);
}

/* Group g's words: its first tile's prefix (four), then its composite (two). */
static __device__ __forceinline__ ulonglong2 *gs_lr_group_words(gs_lr_state s, int64_t g)
{
    return s.groups + 6 * g;
}

/* An anchor's exclusive prefix (double-double A and B), or 0 while any word is unpublished. */
static __device__ __forceinline__ int gs_lr_read_anchor(gs_lr_state s, int64_t anchor, int *f,
                                                        gs_dd *A, gs_dd *B)
{
    const ulonglong2 *w = gs_lr_group_words(s, anchor / GS_LR_GROUP_TILES);
    gs_tile_word v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = gs_tile_load(w + i, 0);
        if (v[i].status == GS_ST_INVALID)
            return 0;
    }
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
    ulonglong2 *w = gs_lr_group_words(s, anchor / GS_LR_GROUP_TILES);
    const unsigned st = GS_ST_PREFIX | (f ? GS_ST_HEAD : 0u);
    gs_tile_store(w + 3, 0, st, gs_lr_bits(B.lo));
    gs_tile_store(w + 2, 0, st, gs_lr_bits(B.hi));
    gs_tile_store(w + 1, 0, st, gs_lr_bits(A.lo));
    gs_tile_store(w, 0, st, gs_lr_bits(A.hi));
}

/* Shared memory of the look-back's cross-thread step. */
typedef struct gs_lr_lookback_smem {
    gs_dpair part[GS_LR_SLOT(GS_NT)];
} gs_lr_lookback_smem;

/* Warp 0 of the last tile of a group: the group's composite, from its tiles' aggregates (lane l
 * reads tile - l; lane 0 the latest), published before the tile waits for anything else. */
static __device__ __forceinline__ void gs_lr_publish_group(gs_lr_state s, int64_t tile)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    gs_dpair c;
    while (!gs_lr_read_at(s.tiles + 2 * (tile - lane), &c))
        __nanosleep(GS_LOOKBACK_NS);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        gs_dpair o;
        o.f = __shfl_down_sync(GS_FULL_MASK, c.f, d);
        o.A = __shfl_down_sync(GS_FULL_MASK, c.A, d);
        o.B = __shfl_down_sync(GS_FULL_MASK, c.B, d);
        if (lane + d < GS_WARP)
            gs_dpair_prepend(o, &c);
    }
    if (lane == 0)
        gs_lr_publish_at(gs_lr_group_words(s, tile / GS_LR_GROUP_TILES) + 4, c);
}

/*
 * The exclusive prefix of `tile` (> 0), called by every thread of the block after the tile's
 * aggregate is published; its B part (h just before the tile's first step) is returned in thread
 * 0, rounded to double.  The last tile of a group publishes the group's composite, the first
 * its prefix.
 */
static __device__ __forceinline__ double gs_lr_look_back(gs_lr_state s, int64_t tile,
                                                         gs_lr_lookback_smem *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t g = tile / GS_LR_GROUP_TILES;
    const int64_t near = g > GS_LR_NEAR_GROUPS ? g - GS_LR_NEAR_GROUPS : 0; /* read by tile */
    const int64_t ga = near > GS_LR_LAG_GROUPS ? near - GS_LR_LAG_GROUPS : 0; /* the anchor's */
    const int ntiles = (int)(tile - near * GS_LR_GROUP_TILES);
    const int nitems = ntiles + (int)(near - ga);
    const gs_dpair id = { 0, 1.0, 0.0 };

    if (tile % GS_LR_GROUP_TILES == GS_LR_GROUP_TILES - 1 && threadIdx.x < GS_WARP)
        gs_lr_publish_group(s, tile);

    /* ---- Thread i: item i, latest first: tiles tile-1 .. near's first, then the composites of
     * groups near-1 .. ga.  The anchor's prefix is waited for last, after the tree. ---- */
    gs_dpair c = id;
    if ((int)threadIdx.x < nitems) {
        const int i = (int)threadIdx.x;
        const ulonglong2 *w = i < ntiles ? s.tiles + 2 * (tile - 1 - i)
                                         : gs_lr_group_words(s, near - 1 - (i - ntiles)) + 4;
        while (!gs_lr_read_at(w, &c))
            __nanosleep(GS_LOOKBACK_NS);
    }

    /* ---- The tree: lane l of warp 0 folds the parts of threads G*l .. G*l+G-1 latest first,
     * then warp 0 reduces its lanes (lane 0 latest). ---- */
    sm->part[GS_LR_SLOT(threadIdx.x)] = c;
    __syncthreads();
    double b = 0.0;
    if (threadIdx.x < GS_WARP) {
        const int first = lane * GS_LR_GROUP;
        c = sm->part[GS_LR_SLOT(first)];
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
        /* ---- The anchor's prefix (group 0's is the identity; none needed when the tree
         * holds a row's first step), then the tree's result, in double-double. ---- */
        if (lane == 0) {
            const int64_t anchor = ga * GS_LR_GROUP_TILES;
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
            if (tile % GS_LR_GROUP_TILES == 0)
                gs_lr_publish_anchor(s, tile, af | c.f, aA, aB);
            b = aB.hi + aB.lo;
        }
    }
    return b;
}

#endif /* GS_PAIR_LOOKBACK_CUH */
