/*
 * gs_lookback.cuh - device level: the decoupled look-back of a single-pass scan (Merrill &
 * Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016), for one
 * register type (included once per type after gs_warp.cuh).
 *
 * Each tile publishes its aggregate as soon as it has it, then its inclusive prefix once it
 * knows its exclusive one; a tile's look-back reads the descriptors of the tiles before it, a
 * whole window per poll.  Tiles are handed out in launch order by an atomic counter, so every tile a
 * block waits for belongs to a block that is already running: no deadlock at any grid size.
 */

#ifndef GS_LOOKBACK_NS
#define GS_LOOKBACK_NS 20 /* ns between polls: let the tiles ahead publish, not hammer L2 */
#endif
#ifndef GS_LB_PER_LANE
#define GS_LB_PER_LANE 4 /* descriptors each lane reads per poll */
#endif
#define GS_LB_WINDOW (GS_WARP * GS_LB_PER_LANE) /* tiles between anchors */

/* Publish a tile's aggregate (and, for tile 0, which has no predecessor, its prefix). */
static __device__ __forceinline__ void GS_FN(publish_aggregate)(gs_tile_state ts, int64_t tile,
                                                                int head, GS_R agg)
{
    const unsigned h = head ? GS_ST_HEAD : 0u;
    if (tile == 0) {
        gs_tile_store(ts.words + 2 * tile + 1, GS_ST_PREFIX, 0ull);
        gs_tile_store(ts.words + 2 * tile, GS_ST_PREFIX | h,
                      GS_FN(pack_carry)(GS_FN(carry_of)(agg)));
    } else {
        gs_tile_store(ts.words + 2 * tile, GS_ST_AGGREGATE | h,
                      GS_FN(pack_carry)(GS_FN(carry_of)(agg)));
    }
}

static __device__ __forceinline__ void GS_FN(publish_prefix)(gs_op op, gs_tile_state ts,
                                                             int64_t tile, int head,
                                                             GS_FN(gs_carry) incl)
{
    if (GS_R_WIDE && GS_FN(compensated)(op))
        gs_tile_store(ts.words + 2 * tile + 1, GS_ST_PREFIX, GS_FN(bits_of)(incl.lo));
    gs_tile_store(ts.words + 2 * tile, GS_ST_PREFIX | (head ? GS_ST_HEAD : 0u),
                  GS_FN(pack_carry)(incl));
}

/*
 * The exclusive prefix of `tile` (> 0), as a carry.  Called by all 32 lanes of one warp; every
 * lane returns the same carry.
 *
 * Deterministic: the prefix is always the anchor's inclusive prefix combined with the
 * aggregates of the tiles between the anchor and this tile, in a fixed tree, where the anchor
 * is the last multiple of GS_LB_WINDOW below the tile.  The anchors' prefixes are themselves
 * built that way, so every tile's prefix has the same bits on every run, whichever tiles
 * happened to publish first (a look-back that stops at the nearest published prefix rounds
 * differently from run to run).  Lane l covers the GS_LB_PER_LANE tiles at
 * tile-1-l*GS_LB_PER_LANE-j, so the window advances GS_LB_WINDOW tiles per round trip.
 */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(look_back)(gs_op op, gs_dtype t, gs_tile_state ts, int64_t tile)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t anchor = (tile - 1) / GS_LB_WINDOW * GS_LB_WINDOW;
    gs_tile_word d[GS_LB_PER_LANE];

    /* ---- Wait until every tile of the window has its aggregate out, and the anchor its
     * prefix (unless a segment head after the anchor makes the anchor irrelevant). ---- */
    for (;;) {
        int ready = 1, head = 0;
#pragma unroll
        for (int j = 0; j < GS_LB_PER_LANE; ++j) {
            const int64_t idx = tile - 1 - lane * GS_LB_PER_LANE - j;
            if (idx >= anchor) {
                d[j] = gs_tile_load(ts.words + 2 * idx);
                ready &= d[j].status != GS_ST_INVALID;
                head |= idx > anchor && (d[j].status & GS_ST_HEAD);
            }
        }
        head = __any_sync(GS_FULL_MASK, head);
#pragma unroll
        for (int j = 0; j < GS_LB_PER_LANE; ++j) {
            const int64_t idx = tile - 1 - lane * GS_LB_PER_LANE - j;
            if (idx == anchor && !head)
                ready &= (d[j].status & GS_ST_PREFIX) != 0;
        }
        if (__all_sync(GS_FULL_MASK, ready))
            break;
        __nanosleep(GS_LOOKBACK_NS);
    }

    /* ---- Combine, earliest first within a lane, then across lanes (lane l+1 is earlier). */
    GS_FN(gs_carry) c = GS_FN(carry_of)(GS_FN(identity)(op, t));
    int f = 0;
#pragma unroll
    for (int j = GS_LB_PER_LANE - 1; j >= 0; --j) {
        const int64_t idx = tile - 1 - lane * GS_LB_PER_LANE - j;
        if (idx >= anchor) {
            GS_FN(gs_carry) v = GS_FN(unpack_carry)(d[j].value);
            const int fj = idx == anchor || (d[j].status & GS_ST_HEAD) != 0;
            if (idx == anchor && GS_R_WIDE && GS_FN(compensated)(op) &&
                (d[j].status & GS_ST_PREFIX)) {
                gs_tile_word lo;
                do
                    lo = gs_tile_load(ts.words + 2 * idx + 1);
                while (lo.status != GS_ST_PREFIX);
                v.lo = GS_FN(of_bits)(lo.value);
            }
            c = fj ? v : GS_FN(carry_combine)(op, c, v);
            f |= fj;
        }
    }
    GS_FN(warp_reduce_reversed)(op, &f, &c);
    GS_FN(gs_carry) w;
    w.hi = __shfl_sync(GS_FULL_MASK, c.hi, 0);
    w.lo = __shfl_sync(GS_FULL_MASK, c.lo, 0);
    return w;
}
