/*
 * device/lookback.cuh - device level: the decoupled look-back of a single-pass scan (Merrill &
 * Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016), made
 * deterministic, for one register type (included once per type after warp/warp_scan.cuh).
 * Exact operators: each tile publishes its aggregate A_T as soon as it has it, then its
 * inclusive prefix L_T. Tile T reads the descriptors of 32 tiles at once (one per lane), sliding
 * back until it finds a stop (the nearest tile k with a published prefix, or whose aggregate
 * holds a segment head) with every tile after it aggregated, and combines them:
 * L_{T-1} = ((L_k + A_{k+1}) + A_{k+2}) + ... + A_{T-1}.
 * - Deterministic: integers wrap exactly, min and max select and bitwise ops are exact, so
 *   the result does not depend on which stop a tile found.  Float add and mul round, and a
 *   grouping that depends on which tiles published first would round differently from run to
 *   run (as CUB's and PyTorch's float scans do): they use look_back_anchored() instead, whose
 *   grouping is fixed.  A head is an exact stop: the segmented operator discards what precedes
 *   it.
 * - Deadlock-free: tiles are handed out in launch order by an atomic counter, so every tile a
 *   block waits for belongs to a block that is already running.
 */
#include "device/tile_state.cuh"

#define GS_LOOKBACK_NS 20 /* ns between polls: let the tiles ahead publish, not hammer L2 */

/* Publish a tile's aggregate (every operator) or its inclusive prefix (exact operators). */
static __device__ __forceinline__ void GS_FN(publish)(gs_tile_state ts, int64_t tile,
                                                      unsigned state, int head, GS_R v)
{
    gs_tile_store(ts.words + 2 * tile, ts.tag, state | (head ? GS_ST_HEAD : 0u),
                  GS_FN(pack_carry)(GS_FN(carry_of)(v)));
}

/* Whether combining in any grouping gives the same bits: integers wrap exactly, min, max, fmax
 * and fmin select, bitwise ops are exact; float add, mul and logaddexp round (gs_op_rounds). */
static __device__ __forceinline__ int GS_FN(exact)(gs_op op)
{
    return !gs_op_rounds(op, GS_R_KIND == 'f' ? GS_FLOAT64 : GS_UINT64);
}

/* Wait until the window of 32 tiles ending at tile `window` (lane l reads window - l) is
 * complete up to its first stop: returns the stop's lane, or GS_WARP if it has none (then
 * every tile of the window has its aggregate out); *d is this lane's descriptor. */
static __device__ __forceinline__ int GS_FN(await_window)(gs_tile_state ts, int64_t window,
                                                          gs_tile_word *d)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t pred = window - lane;
    for (;;) {
        if (pred >= 0) {
            *d = gs_tile_load(ts.words + 2 * pred, ts.tag);
        } else { /* before tile 0: an empty prefix */
            d->status = GS_ST_PREFIX;
            d->value = 0;
        }
        const unsigned stops =
            __ballot_sync(GS_FULL_MASK, (d->status & (GS_ST_PREFIX | GS_ST_HEAD)) != 0);
        const int last = stops ? __ffs(stops) - 1 : GS_WARP;
        if (__all_sync(GS_FULL_MASK, lane > last || d->status != GS_ST_INVALID))
            return last;
        __nanosleep(GS_LOOKBACK_NS);
    }
}

/* Exact operators: the exclusive prefix of `tile` (> 0) as a carry.  Called by all 32 lanes of
 * one warp after the tile's aggregate is published; every lane returns the same carry.  The
 * window slides back 32 tiles at a time until it holds a stop, so a tile far from the tiles
 * that have their prefix still resolves in a few round trips. */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(look_back)(gs_op op, gs_dtype t, gs_tile_state ts, int64_t tile)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const GS_FN(gs_carry) none = GS_FN(carry_of)(GS_FN(identity)(op, t));
    int64_t window = tile - 1;
    gs_tile_word d;
    int last;

    /* ---- Combine each window in a tree as it arrives; it precedes what we have. ---- */
    GS_FN(gs_carry) excl = none;
    for (;; window -= GS_WARP) {
        last = GS_FN(await_window)(ts, window, &d);
        GS_FN(gs_carry) c = none;
        int f = 0;
        if (lane <= last && window - lane >= 0) {
            c = GS_FN(unpack_carry)(d.value);
            f = (d.status & (GS_ST_PREFIX | GS_ST_HEAD)) != 0;
        }
        GS_FN(warp_reduce_reversed)(op, &f, &c);
        GS_FN(gs_carry) w;
        w.hi = __shfl_sync(GS_FULL_MASK, c.hi, 0);
        w.lo = __shfl_sync(GS_FULL_MASK, c.lo, 0);
        excl = GS_FN(carry_combine)(op, w, excl);
        if (last < GS_WARP)
            return excl;
    }
}

/* Rounding operators (float add, float mul): an anchored look-back, one fixed grouping on every
 * run. Every tile publishes its aggregate as soon as it has it; every GS_ANCHOR_EVERY-th tile (an
 * anchor) also publishes its exclusive prefix. Tile T's exclusive prefix is that of its anchor
 * a(T), the last anchor at least GS_ANCHOR_LAG tiles before T (0 while there is none), combined
 * with the aggregates of tiles a(T) .. T-1. The block reads those (at most LAG + EVERY - 1, one
 * per thread by default) and combines them in a tree fixed by T - a(T) (each thread's reads, then
 * groups of GS_ANCHOR_GROUP threads through shared memory, then the groups across warp 0): the
 * result is a function of the aggregates alone. A tile waits for nothing younger than the
 * aggregate of T-1 and the prefix of a tile LAG tiles back (its look-back long done when LAG
 * exceeds the tiles started during one look-back). Deadlock-free as above: everything waited for
 * belongs to an earlier tile. Float add combines double-word (compensated) carries, float32 add
 * in double, so the grouping costs no accuracy; float mul rounds each product, as NumPy's does. */
/* Aggregates each thread reads: enough for LAG + EVERY - 1. */
#define GS_ANCHOR_PER_THREAD ((GS_ANCHOR_LAG + GS_ANCHOR_EVERY - 1 + GS_NT - 1) / GS_NT)
#if GS_ANCHOR_PER_THREAD > 31
#error "GS_ANCHOR_LAG too large: a thread's pending reads are bits of one word"
#endif

/* A carry from one descriptor word (two when `split` holds a float64 add's compensation in the
 * next word: both read before either is checked, one L2 round trip, not two); 0 while
 * unpublished. */
static __device__ __forceinline__ int GS_FN(read_carry)(gs_op op, unsigned tag, const ulonglong2 *w,
                                                        int split, GS_FN(gs_carry) *c, int *head)
{
    const int two = split && GS_R_WIDE && GS_FN(compensated)(op);
    const gs_tile_word d = gs_tile_load(w, tag);
    const gs_tile_word lo = two ? gs_tile_load(w + 1, tag) : d;
    if (d.status == GS_ST_INVALID || lo.status == GS_ST_INVALID)
        return 0;
    *c = GS_FN(unpack_carry)(d.value);
    *head = (d.status & GS_ST_HEAD) != 0;
    if (two)
        c->lo = GS_FN(of_bits)(lo.value);
    return 1;
}

/* A partial sum of the anchored look-back's tree: a double for float32 add (one DADD, 53 bits,
 * against a chain of eleven float operations for a double-float), a carry for every other
 * rounding operator (part_double decides). Either way the grouping alone decides the bits. */
typedef union GS_FN(gs_part) {
    double d;
    GS_FN(gs_carry) c;
} GS_FN(gs_part);

static __device__ __forceinline__ int GS_FN(part_double)(gs_op op)
{
    return GS_FN(compensated)(op) && !GS_R_WIDE;
}

static __device__ __forceinline__ GS_FN(gs_part) GS_FN(part_of)(gs_op op, GS_FN(gs_carry) c)
{
    GS_FN(gs_part) p;
    if (GS_FN(part_double)(op))
        p.d = (double)c.hi + (double)c.lo;
    else
        p.c = c;
    return p;
}

/* The part's value as a carry: for float32 add the double rounded to a double-float (an
 * infinite or NaN high part carries no low part; an exact one a lo of -0.0, as gs_carry's). */
static __device__ __forceinline__ GS_FN(gs_carry) GS_FN(part_carry)(gs_op op, GS_FN(gs_part) p)
{
    if (!GS_FN(part_double)(op))
        return p.c;
    GS_FN(gs_carry) c;
    c.hi = (GS_R)p.d;
    c.lo = -(GS_R)((double)c.hi - p.d); /* p.d - hi, exactly as it rounds, -0.0 when zero */
    if (c.hi - c.hi != (GS_R)0)
        c.lo = (GS_R)0;
    return c;
}

/* An earlier part a combined with a later one b. */
static __device__ __forceinline__ GS_FN(gs_part)
    GS_FN(part_combine)(gs_op op, GS_FN(gs_part) a, GS_FN(gs_part) b)
{
    if (GS_FN(part_double)(op))
        b.d = a.d + b.d;
    else
        b.c = GS_FN(carry_combine)(op, a.c, b.c);
    return b;
}

/* The segmented combination of an earlier part (fa, a) with a later one (*f, *b), into the
 * later. */
static __device__ __forceinline__ void GS_FN(part_prepend)(gs_op op, int fa, GS_FN(gs_part) a,
                                                           int *f, GS_FN(gs_part) *b)
{
    if (!*f)
        *b = GS_FN(part_combine)(op, a, *b);
    *f |= fa;
}

/* A part moved down the warp by d lanes (__shfl_down_sync). */
static __device__ __forceinline__ GS_FN(gs_part)
    GS_FN(part_shfl_down)(gs_op op, GS_FN(gs_part) p, int d)
{
    GS_FN(gs_part) o;
    if (GS_FN(part_double)(op)) {
        o.d = __shfl_down_sync(GS_FULL_MASK, p.d, d);
    } else {
        o.c.hi = __shfl_down_sync(GS_FULL_MASK, p.c.hi, d);
        o.c.lo = __shfl_down_sync(GS_FULL_MASK, p.c.lo, d);
    }
    return o;
}

/* Reduction of the parts of lanes 0 .. lanes-1 (a power of two up to the warp) in a fixed tree,
 * lane order = element order; lane 0 gets the total.  Called by the whole warp. */
static __device__ __forceinline__ void GS_FN(part_warp_reduce)(gs_op op, int lanes,
                                                               GS_FN(gs_part) *p)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        if (d >= lanes)
            break;
        const GS_FN(gs_part) o = GS_FN(part_shfl_down)(op, *p, d);
        if (lane + d < lanes)
            *p = GS_FN(part_combine)(op, *p, o);
    }
}

/* Reduction across the warp where lane l holds an earlier part than lane l-1; lane 0 gets the
 * total.  Without `seg` the flags are all zero and stay in place. */
static __device__ __forceinline__ void GS_FN(part_reduce_reversed)(gs_op op, int seg, int *f,
                                                                   GS_FN(gs_part) *p)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        const GS_FN(gs_part) o = GS_FN(part_shfl_down)(op, *p, d);
        int of = seg ? __shfl_down_sync(GS_FULL_MASK, *f, d) : 0;
        if (lane + d < GS_WARP)
            GS_FN(part_prepend)(op, of, o, f, p);
    }
}

/* Threads whose parts one lane of warp 0 folds in the cross-thread step, and the padded slot
 * of thread i's part (one spare slot per group: warp 0's reads of a group apiece fall in
 * different banks). */
#define GS_ANCHOR_GROUP (GS_NT / GS_WARP)
#define GS_ANCHOR_SLOT(i) ((i) + (i) / GS_ANCHOR_GROUP)
#if GS_WARP % GS_ANCHOR_GROUP != 0
#error "a group's head bits come from one warp's ballot: GS_NT / GS_WARP must divide GS_WARP"
#endif

/* Shared memory of the look-back's cross-thread step: every thread's part, and each warp's
 * head flags as the bits of a ballot. */
typedef struct GS_FN(gs_lookback_smem) {
    GS_FN(gs_part) part[GS_ANCHOR_SLOT(GS_NT)];
    unsigned heads[GS_NWARPS];
} GS_FN(gs_lookback_smem);

/* The exclusive prefix of `tile` for a rounding operator as a part (float32 add: a double),
 * called by every thread of the block after the tile's aggregate is published; valid in thread
 * 0.  An anchor publishes it (as a carry).  `first` is tile 0's exclusive prefix: seed's (float
 * add: -0.0), or the carry of the scan this one continues. */
static __device__ __forceinline__ GS_FN(gs_part)
    GS_FN(look_back_anchored)(gs_op op, gs_dtype t, int seg, gs_tile_state ts, int64_t tile,
                              GS_FN(gs_carry) first, GS_FN(gs_lookback_smem) *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t anchor = gs_anchor_of(tile);
    const GS_FN(gs_carry) id = GS_FN(carry_of)(GS_FN(seed)(op, t)); /* float add: -0.0 */

    /* ---- Thread i: tiles T-1-i*K .. T-i*K-K (K per thread) down to the anchor, read at
     * once and folded latest first. The anchor's prefix is waited for last, after the tree,
     * so a link of the chain of anchors costs one read and one combination. ---- */
    GS_FN(gs_carry) x[GS_ANCHOR_PER_THREAD], a = anchor > 0 ? id : first;
    int xf[GS_ANCHOR_PER_THREAD];
    unsigned pending = 0;
#pragma unroll
    for (int k = 0; k < GS_ANCHOR_PER_THREAD; ++k) {
        const int64_t q = tile - 1 - (int64_t)threadIdx.x * GS_ANCHOR_PER_THREAD - k;
        xf[k] = 0;
        x[k] = id;
        if (q >= anchor)
            pending |= 1u << k;
    }
    while (pending) {
#pragma unroll
        for (int k = 0; k < GS_ANCHOR_PER_THREAD; ++k) {
            const int64_t q = tile - 1 - (int64_t)threadIdx.x * GS_ANCHOR_PER_THREAD - k;
            if (((pending >> k) & 1u) &&
                GS_FN(read_carry)(op, ts.tag, ts.words + 2 * q, 0, &x[k], &xf[k]))
                pending &= ~(1u << k);
        }
        if (pending)
            __nanosleep(GS_LOOKBACK_NS);
    }
    GS_FN(gs_part) c = GS_FN(part_of)(op, x[0]);
    int f = seg && xf[0];
#pragma unroll
    for (int k = 1; k < GS_ANCHOR_PER_THREAD; ++k)
        GS_FN(part_prepend)(op, seg && xf[k], GS_FN(part_of)(op, x[k]), &f, &c);

    /* ---- The tree: lane l of warp 0 folds the parts of threads G*l .. G*l+G-1 latest first
     * (G = GS_ANCHOR_GROUP), then warp 0 reduces its lanes (lane 0 latest). ---- */
    sm->part[GS_ANCHOR_SLOT(threadIdx.x)] = c;
    if (seg) {
        const unsigned b = __ballot_sync(GS_FULL_MASK, f);
        if (lane == 0)
            sm->heads[threadIdx.x / GS_WARP] = b;
    }
    __syncthreads();
    if (threadIdx.x < GS_WARP) {
        const int first = lane * GS_ANCHOR_GROUP;
        const unsigned hb = seg ? sm->heads[first / GS_WARP] >> (first % GS_WARP) : 0u;
        c = sm->part[GS_ANCHOR_SLOT(first)];
        f = hb & 1u;
#pragma unroll
        for (int j = 1; j < GS_ANCHOR_GROUP; ++j)
            GS_FN(part_prepend)(op, (hb >> j) & 1u, sm->part[GS_ANCHOR_SLOT(first + j)], &f, &c);
        GS_FN(part_reduce_reversed)(op, seg, &f, &c);
        if (lane == 0) {
            /* ---- The anchor's prefix (anchor 0's is `first`, the scan's exclusive prefix of
             * tile 0; none needed when the tree holds a head). ---- */
            int af = 0;
            if (anchor > 0 && !(seg && f))
                while (!GS_FN(read_carry)(op, ts.tag, gs_anchor_words(ts, anchor), 1, &a, &af))
                    __nanosleep(GS_LOOKBACK_NS);
            GS_FN(part_prepend)(op, seg && af, GS_FN(part_of)(op, a), &f, &c);
            if (gs_is_anchor(tile)) {
                const GS_FN(gs_carry) excl = GS_FN(part_carry)(op, c);
                ulonglong2 *w = gs_anchor_words(ts, tile);
                if (GS_R_WIDE && GS_FN(compensated)(op))
                    gs_tile_store(w + 1, ts.tag, GS_ST_PREFIX, GS_FN(bits_of)(excl.lo));
                gs_tile_store(w, ts.tag, GS_ST_PREFIX | (f ? GS_ST_HEAD : 0u),
                              GS_FN(pack_carry)(excl));
            }
        }
    }
    return c;
}
