/*
 * gs_lookback.cuh - device level: the decoupled look-back of a single-pass scan (Merrill &
 * Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016), made
 * deterministic, for one register type (included once per type after gs_warp.cuh).
 *
 * Exact operators: each tile publishes its aggregate A_T as soon as it has it, then its
 * inclusive prefix L_T.
 * Tile T reads the descriptors of 32 tiles at once (one per lane), sliding back until it
 * finds a stop (the nearest tile k with a published prefix, or whose aggregate holds a segment
 * head) with every tile after it aggregated, and combines them:
 * L_{T-1} = ((L_k + A_{k+1}) + A_{k+2}) + ... + A_{T-1}.
 *
 * - Deterministic: integers wrap exactly, min and max select and bitwise ops are exact, so
 *   the result does not depend on which stop a tile found.  Float add and mul round, and a
 *   grouping that depends on which tiles published first would round differently from run to
 *   run (as CUB's and PyTorch's float scans do): they use look_back_tree() instead, whose
 *   grouping is fixed.  A head is an exact stop: the segmented operator discards what precedes
 *   it.
 * - Deadlock-free: tiles are handed out in launch order by an atomic counter, so every tile a
 *   block waits for belongs to a block that is already running.
 */

#ifndef GS_LOOKBACK_NS
#define GS_LOOKBACK_NS 20 /* ns between polls: let the tiles ahead publish, not hammer L2 */
#endif

/* Exact operators: publish a tile's aggregate or its inclusive prefix. */
static __device__ __forceinline__ void GS_FN(publish)(gs_tile_state ts, int64_t tile,
                                                      unsigned state, int head, GS_R v)
{
    gs_tile_store(ts.words + 2 * tile, state | (head ? GS_ST_HEAD : 0u),
                  GS_FN(pack_carry)(GS_FN(carry_of)(v)));
}

/* Whether combining in any grouping gives the same bits: integers wrap exactly, min and max
 * select, bitwise ops are exact; float add and mul round. */
static __device__ __forceinline__ int GS_FN(exact)(gs_op op)
{
    return GS_R_KIND != 'f' || (op != GS_OP_ADD && op != GS_OP_MUL);
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
            *d = gs_tile_load(ts.words + 2 * pred);
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

/*
 * Exact operators: the exclusive prefix of `tile` (> 0) as a carry.  Called by all 32 lanes of
 * one warp after the tile's aggregate is published; every lane returns the same carry.  The
 * window slides back 32 tiles at a time until it holds a stop, so a tile far from the tiles
 * that have their prefix still resolves in a few round trips.
 */
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

/*
 * Rounding operators (float add, float mul): a look-back over a Fenwick tree of tile
 * aggregates, whose every value is combined in the same fixed tree on every run.  With tiles
 * numbered from 1 (node i is tile i-1), tile i publishes node N_i, the combination of the
 * aggregates of tiles (i - lowbit(i), i]: its children's nodes i - lowbit(i)/2, ..., i-2, i-1,
 * then its own aggregate; its exclusive prefix combines the nodes of i-1's Fenwick
 * decomposition (i-1, then i-1 without its lowest set bit, ...).  A node depends only on
 * aggregates, never on a prefix, so there is no chain of prefixes to wait along, and a tile
 * publishes its node before it waits for its prefix, so the earliest unpublished node always
 * belongs to a block that can progress (tiles start in launch order).  One warp reads up to
 * 32 children and 32 prefix nodes per poll (one of each per lane): enough for 2^32 tiles.
 * Returns the tile's exclusive prefix on every lane.
 */
static __device__ __forceinline__ int GS_FN(read_node)(gs_op op, gs_tile_state ts, int64_t node,
                                                       GS_FN(gs_carry) * c, int *head)
{
    const ulonglong2 *w = ts.words + 2 * (node - 1);
    gs_tile_word d = gs_tile_load(w);
    if (d.status == GS_ST_INVALID)
        return 0;
    *c = GS_FN(unpack_carry)(d.value);
    *head = (d.status & GS_ST_HEAD) != 0;
    if (GS_R_WIDE && GS_FN(compensated)(op)) {
        gs_tile_word lo = gs_tile_load(w + 1);
        if (lo.status == GS_ST_INVALID)
            return 0;
        c->lo = GS_FN(of_bits)(lo.value);
    }
    return 1;
}

static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(look_back_tree)(gs_op op, gs_dtype t, gs_tile_state ts, int64_t tile, int agg_head,
                          GS_R agg)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const GS_FN(gs_carry) none = GS_FN(carry_of)(GS_FN(identity)(op, t));
    const int64_t node = tile + 1;
    const int64_t low = node & -node;

    /* ---- This lane's child: node - 2^lane, while 2^lane < lowbit(node). ---- */
    const int64_t child = ((int64_t)1 << lane) < low ? node - ((int64_t)1 << lane) : 0;
    /* ---- This lane's prefix node: tile with its `lane` lowest set bits cleared. ---- */
    int64_t pre = tile;
    for (int k = 0; k < lane && pre != 0; ++k)
        pre &= pre - 1;

    GS_FN(gs_carry) cc = none, pc = none;
    int cf = 0, pf = 0;
    int have_child = child == 0, have_pre = pre == 0, published = 0;
    for (;;) {
        if (!have_child)
            have_child = GS_FN(read_node)(op, ts, child, &cc, &cf);
        if (!have_pre)
            have_pre = GS_FN(read_node)(op, ts, pre, &pc, &pf);

        /* ---- Every child in: combine them (lane k+1 is the earlier node), add the
         * aggregate, publish the node. ---- */
        if (!published && __all_sync(GS_FULL_MASK, have_child)) {
            GS_FN(gs_carry) c = cc;
            int f = cf;
            GS_FN(warp_reduce_reversed)(op, &f, &c);
            if (lane == 0) {
                GS_FN(gs_carry)
                n = agg_head ? GS_FN(carry_of)(agg)
                             : GS_FN(carry_combine)(op, c, GS_FN(carry_of)(agg));
                ulonglong2 *w = ts.words + 2 * tile;
                if (GS_R_WIDE && GS_FN(compensated)(op))
                    gs_tile_store(w + 1, GS_ST_AGGREGATE, GS_FN(bits_of)(n.lo));
                gs_tile_store(w, GS_ST_AGGREGATE | ((f | agg_head) ? GS_ST_HEAD : 0u),
                              GS_FN(pack_carry)(n));
            }
            published = 1;
        }
        if (published && __all_sync(GS_FULL_MASK, have_pre))
            break;
        __nanosleep(GS_LOOKBACK_NS);
    }

    /* ---- The prefix: the decomposition's nodes (lane k+1 is the earlier node). ---- */
    GS_FN(warp_reduce_reversed)(op, &pf, &pc);
    GS_FN(gs_carry) w;
    w.hi = __shfl_sync(GS_FULL_MASK, pc.hi, 0);
    w.lo = __shfl_sync(GS_FULL_MASK, pc.lo, 0);
    return w;
}
