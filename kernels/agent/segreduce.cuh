/*
 * agent/segreduce.cuh - a warp's part in a segmented reduction (reduceat, segmented_reduce).
 * Included once per register type by stamp.cuh.
 *   segreduce_tiles  a sorted partition (segment s is [starts[s], starts[s+1]), the last to n):
 *                    one level of a tree of segmented reductions, a WARP per tile of GS_SEG_W
 *                    values, no look-back and no block barrier (no warp waits for another; a
 *                    block per tile stalled at its barriers, docs/performance-notes.md). Lane l
 *                    holds, in row k of the tile, the C values at k * 32 C + l C (one 16-byte
 *                    access). The tile's head bits go to the warp's shared words (level 0: the
 *                    starts found by a 32-way search of the warp; above: the ids of the level
 *                    below); each row is reduced per lane, scanned across the lanes segmented at
 *                    the heads (flags by ballot, values by shuffles) and chained to the rows
 *                    before; a value followed by a head or the run's end settles its segment.
 *                    Level 0 takes the common tiles shorter ways: one before its next start (no
 *                    head, no end) is one lane sum and a tree, its head words not made; one with
 *                    at most GS_SEG_FEW heads is reduced as runs (seg_few); and it copies each
 *                    next tile into the warp's shared buffer (cp.async) while it works on one. A
 *                    warp takes per_warp consecutive tiles as one RANGE w (a run open at a tile's
 *                    end is carried into the next in seg_carry), and the range writes
 *                    - a segment whose head lies in the range: out[its id];
 *                    - the range's open run (no head before it in the range): part[2 w];
 *                    - at its last value, a run that started in it and goes on: part[2 w + 1],
 *                      its id in part_ids[w].
 *                    The next level reduces the partials the same way, segmented at the odd
 *                    partials of ranges with heads (part_ids[w] != GS_SEG_NO_HEAD), until one
 *                    warp holds the run (dispatch/segreduce.cu); a tile of it where every pair
 *                    holds a head (segments of two partials, the common case) by pairs
 *                    (seg_pairs). Float add and mul group a segment by a tree fixed by the
 *                    positions alone (piece, lanes, rows and tiles - the last two in double for
 *                    float32 add - or a lane's values and a tree across the lanes in a tile of
 *                    few heads; then the levels): deterministic.
 *   segreduce_warps  any segments (overlapping or out of order): a warp per segment, lanes
 *                    striding over it, a fixed tree across the lanes; deterministic, slow only
 *                    for a long segment.
 */
#ifndef GS_SEGREDUCE_ONCE
#define GS_SEGREDUCE_ONCE
/* Words of a warp tile's head bits: one bit per value and one for the value after the tile. */
#define GS_SEG_WORDS (GS_SEG_W / 32 + 1)
/* Words of the head bits each lane counts for the prefix counts. */
#define GS_SEG_WORDS_PER_LANE ((GS_SEG_WORDS + GS_WARP - 1) / GS_WARP)
#if GS_SEG_WORDS > 64
#error "a warp tile's head words must fit a 64-bit mask"
#endif
/* part_ids of a tile: its last run ended inside it (its result is written: no id to carry), or
 * it holds no head at all (its partials continue the run before it). */
#define GS_SEG_NO_ID (-1)
#define GS_SEG_NO_HEAD (-2)

/* The head bits of a warp tile in shared memory, and the heads in the words before each word.
 * Above level 0 the warp also keeps the ids of the tile's pairs in shared memory (GS_SEG_W / 2
 * of them: segreduce_tiles' `ids`), where a settle finds its segment. */
typedef struct gs_seg_bits {
    unsigned word[GS_SEG_WORDS];
    unsigned before[GS_SEG_WORDS];
} gs_seg_bits;

/* Set the bit of tile offset `off` (0 .. GS_SEG_W). */
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

/* The c bits of offsets at .. at+c-1 (c <= 16, at a multiple of c and c a divisor of 32). */
static __device__ __forceinline__ unsigned gs_seg_at(const gs_seg_bits *b, int at, int c)
{
    return (b->word[at >> 5] >> (at & 31)) & ((1u << c) - 1u);
}

/* The bits of offsets at+1 .. at+c: the heads after each of the c values from `at`. */
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

/* Probes 32 apart in the search's first round, around where a uniform partition puts the
 * rank: 1024 starts a window. */
#define GS_SEG_GUESS_STEP 32

/* The number of starts below `at` (starts strictly ascending; n values in all), the same in
 * every lane, and in *first the start at that rank (INT64_MAX past the last): a search of the
 * whole warp, 32 probes a round. The first round probes a window of GS_SEG_GUESS_STEP-spaced
 * starts centred on the rank of equal segments (at * nseg / n), so a partition whose starts are
 * near even is found in two rounds, not log32(nseg) + 1 (each an L2 round trip at every warp's
 * start); a window that misses leaves one side to search as before. */
static __device__ __forceinline__ int64_t gs_seg_rank(const int64_t *starts, int64_t nseg,
                                                      int64_t n, int64_t at, int64_t *first)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    int64_t lo = 0, hi = nseg; /* the rank lies in [lo, hi] */
    if (nseg >= GS_WARP * GS_SEG_GUESS_STEP) {
        const int64_t s = GS_SEG_GUESS_STEP;
        int64_t base = (int64_t)((double)at / (double)n * (double)nseg) - GS_WARP / 2 * s;
        base = base < 0 ? 0 : base > nseg - GS_WARP * s ? nseg - GS_WARP * s : base;
        const int64_t probe = base + (lane + 1) * s - 1; /* < nseg */
        /* The probes below `at` are a prefix of the lanes, c of them. */
        const int c = __popc(__ballot_sync(GS_FULL_MASK, __ldg(starts + probe) < at));
        if (c > 0)
            lo = base + c * s; /* just past the last probe below */
        if (c < GS_WARP)
            hi = base + (c + 1) * s - 1; /* the first probe not below */
    }
    while (hi - lo >= GS_WARP) {
        const int64_t step = (hi - lo + GS_WARP - 1) / GS_WARP;
        const int64_t probe = lo + (lane + 1) * step - 1;
        /* The probes below `at` are a prefix of the lanes, c of them (all 32 only when
         * 32 step == hi - lo: then lo reaches hi and the rank is hi). */
        const int c = __popc(__ballot_sync(GS_FULL_MASK, probe < hi && __ldg(starts + probe) < at));
        const int64_t next = lo + (c + 1) * step - 1; /* the first probe not below, if any */
        lo += c * step;
        hi = next < hi ? next : hi;
    }
    /* The last round reads starts lo .. hi (at most 32; hi is nseg or a start not below `at`),
     * so the start at the rank is among them unless the rank is nseg. */
    const int64_t j = lo + lane;
    const int64_t v = j <= hi && j < nseg ? __ldg(starts + j) : INT64_MAX;
    const int c = __popc(__ballot_sync(GS_FULL_MASK, v < at));
    *first = __shfl_sync(GS_FULL_MASK, v, c & (GS_WARP - 1));
    return lo + c;
}

/* The start at index k (level 0), or past every value when there is none. */
static __device__ __forceinline__ int64_t gs_seg_start_at(const gs_segreduce_kparams *sp, int64_t k)
{
    return k < sp->nseg ? __ldg(sp->starts + k) : INT64_MAX;
}

/* The head bits of the warp tile at `start` and their prefix counts, with the run's end (offset
 * n - start, if at most GS_SEG_W) marked as a head; called by the whole warp. Level 0: the starts
 * from *k (the starts below the tile) that fall in [start, start + GS_SEG_W]; *k becomes the next
 * tile's, and *next its start (gs_seg_start_at). Above: value 2j + 1 is a head unless pair j's
 * tile held none (ids[j] == GS_SEG_NO_HEAD). Returns the words that hold a bit (bit w: word w),
 * the same in every lane; with none, the prefix counts are not made. */
static __device__ __forceinline__ unsigned long long gs_seg_bits_of(const gs_segreduce_kparams *sp,
                                                                    int64_t start, int64_t *k,
                                                                    int64_t *next, gs_seg_bits *b,
                                                                    int64_t *ids)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t n = sp->scan.n;
    /* (Every lane is done with the warp's previous tile's words: segreduce_tiles' __syncwarp.) */
    for (int i = lane; i < GS_SEG_WORDS; i += GS_WARP)
        b->word[i] = 0;
    __syncwarp();
    if (ids != NULL) { /* above level 0 */
        /* All of the lane's ids in flight at once (one latency, not eight), then the marks. */
        unsigned head = 0;
#pragma unroll
        for (int r = 0; r < GS_SEG_W / 2 / GS_WARP; ++r) {
            const int i = r * GS_WARP + lane;
            const int64_t id =
                start + 2 * i + 1 < n ? __ldg(sp->ids + start / 2 + i) : (int64_t)GS_SEG_NO_HEAD;
            ids[i] = id;
            head |= (unsigned)(id != GS_SEG_NO_HEAD) << r;
        }
        for (; head != 0; head &= head - 1)
            gs_seg_mark(b, 2 * ((__ffs(head) - 1) * GS_WARP + lane) + 1);
    } else {
        /* The starts from *k on, 32 at a time, until one lies past the value after the tile;
         * the first not inside the tile is the next tile's first: in the round that ends the
         * search (`in`, a prefix of its lanes), unless none of it is inside and the round before
         * ended on the value after the tile. */
        int64_t inside = 0, after = -1;
        for (int64_t j = *k + lane;; j += GS_WARP) {
            const int64_t at = gs_seg_start_at(sp, j);
            const int64_t off = at - start; /* (at most INT64_MAX - start: no overflow) */
            if (off <= GS_SEG_W)
                gs_seg_mark(b, off);
            const unsigned in = __ballot_sync(GS_FULL_MASK, off < GS_SEG_W);
            inside += __popc(in);
            if (__ballot_sync(GS_FULL_MASK, off <= GS_SEG_W) != GS_FULL_MASK) {
                *next = in == 0 && after >= 0 ? after : __shfl_sync(GS_FULL_MASK, at, __popc(in));
                break;
            }
            after = in == GS_FULL_MASK ? -1 : start + GS_SEG_W; /* lane 31 on the value after */
        }
        *k += inside;
    }
    if (lane == 0 && n - start <= GS_SEG_W)
        gs_seg_mark(b, n - start); /* the run ends: its last value ends a segment */
    __syncwarp();
    unsigned long long nz = 0;
#pragma unroll
    for (int w0 = 0; w0 < GS_SEG_WORDS; w0 += GS_WARP)
        nz |= (unsigned long long)__ballot_sync(GS_FULL_MASK,
                                                lane + w0 < GS_SEG_WORDS && b->word[lane + w0] != 0)
              << w0;
    if (nz == 0)
        return 0;
    /* ---- The heads in the words before each word (lane l counts a run of words). ---- */
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
    __syncwarp();
    return nz;
}
#endif /* GS_SEGREDUCE_ONCE */

/* Where a run starts from past the end of the values: seed's -0.0 for float add (a segment's
 * sum starts from its first value, as NumPy's reduceat), the identity for every other op. */
static __device__ __forceinline__ GS_R GS_FN(seg_seed)(gs_op op, gs_dtype out_t)
{
    return GS_FN(seed)(op, out_t);
}

/* The segment of value `off` of warp tile `tile` when a head of the tile at or before it opened
 * its run: level 0 counts the heads (`first`: the segments before the tile), a level above reads
 * the id its head's pair carried up (GS_SEG_NO_ID: a run already written). */
static __device__ __forceinline__ int64_t GS_FN(seg_id)(const gs_segreduce_kparams *sp,
                                                        int64_t tile, int64_t first,
                                                        const gs_seg_bits *b, const int64_t *ids,
                                                        int off)
{
    return ids != NULL ? ids[gs_seg_last_head(b, off) >> 1] /* (the tile's start is even) */
                       : first - 1 + (int64_t)gs_seg_count(b, off);
}

/* A warp's open run carried from one of its tiles to the next (in shared memory: the registers
 * hold the values in flight): its value (in double too for float32 add), its segment (as
 * seg_id), whether it holds anything yet, and whether a head came before in the warp's tiles
 * (else it is the range's open run, part[2 w]). */
typedef struct GS_FN(seg_carry) {
    GS_R v;
    double d;
    int64_t sid;
    int live;
    int head;
} GS_FN(seg_carry);

/* What value `off` of warp tile `tile` (its segmented prefix y; `opened`: a head of the tile at
 * or before it, of segment sid) settles when followed by a head or the run's end (`ends`) or
 * when it is the tile's last (`off == last`). cr: this tile's carry; *cout: the next tile's,
 * written by the lane of the tile's last value; only the range's last tile writes partials:
 *   - a run that ends: out[its segment], or part[2 w] for the range's open run;
 *   - at the range's last value: part[2 w + 1] and part_ids[w] for a run that goes on past it
 *     and has a head in the range, or part[2 w] (and no head) for the open run. */
static __device__ __forceinline__ void GS_FN(seg_store)(gs_op op, gs_dtype out_t,
                                                        const gs_segreduce_kparams *sp, int64_t w,
                                                        int range_last, int off, int last, int ends,
                                                        int opened, int64_t sid, GS_R y,
                                                        const GS_FN(seg_carry) *cr,
                                                        GS_FN(seg_carry) *cout)
{
    const int dbl = GS_R_KIND == 'f' && sizeof(GS_R) == 4 && op == GS_OP_ADD;
    const GS_R seed = GS_FN(seg_seed)(op, out_t);
    double yd = (double)y;
    if (!opened && cr->live) { /* the tile's open run goes on from the tile before */
        if (dbl) {
            yd = gs_f32_prefix(cr->d + yd);
            y = (GS_R)yd;
        } else {
            y = GS_FN(combine)(op, cr->v, y);
        }
    }
    const int64_t rid = opened ? sid : cr->sid;
    const int ro = !opened && !cr->head; /* the range's open run */
    if (ends) {
        if (ro && sp->part != NULL)
            gs_store_bits(out_t, sp->part, 2 * w, GS_FN(to_bits)(out_t, y));
        else if (!ro && rid >= 0)
            gs_store_bits(out_t, sp->out, rid, GS_FN(to_bits)(out_t, y));
    }
    if (off != last)
        return;
    const int on = !ends; /* the run goes on past the tile */
    const int head = cr->head || opened;
    if (!range_last) {
        cout->live = on;
        cout->v = on ? y : seed;
        cout->d = on ? yd : 0.0;
        cout->sid = rid;
        cout->head = head;
    } else if (sp->part != NULL) {
        if (ro && on)
            gs_store_bits(out_t, sp->part, 2 * w, GS_FN(to_bits)(out_t, y));
        gs_store_bits(out_t, sp->part, 2 * w + 1, GS_FN(to_bits)(out_t, on && !ro ? y : seed));
        sp->part_ids[w] = !head ? GS_SEG_NO_HEAD : on ? rid : GS_SEG_NO_ID;
    }
}

/* seg_store with the segment looked up (a value settled alone). */
static __device__ __forceinline__ void GS_FN(seg_settle)(
    gs_op op, gs_dtype out_t, const gs_segreduce_kparams *sp, int64_t tile, int64_t first,
    const gs_seg_bits *b, const int64_t *ids, int64_t w, int range_last, int off, int last,
    int ends, int opened, GS_R y, const GS_FN(seg_carry) *cr, GS_FN(seg_carry) *cout)
{
    const int64_t sid = opened ? GS_FN(seg_id)(sp, tile, first, b, ids, off) : GS_SEG_NO_ID;
    GS_FN(seg_store)(op, out_t, sp, w, range_last, off, last, ends, opened, sid, y, cr, cout);
}

/* The reduction of a row's pieces across the lanes in a fixed tree, in element order, in every
 * lane. */
static __device__ __forceinline__ GS_R GS_FN(seg_row_total)(gs_op op, GS_R v)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        const GS_R o = __shfl_down_sync(GS_FULL_MASK, v, d);
        if (lane + d < GS_WARP)
            v = GS_FN(combine)(op, v, o);
    }
    return __shfl_sync(GS_FULL_MASK, v, 0);
}

/* Lane l's values of the warp tile whose first value is element `start` of `src` (`left` values
 * from it on, > 0; `vec`: src is 16-byte aligned): a whole aligned tile as pieces, a last
 * partial one value by value, `seed` past the end. */
static __device__ __forceinline__ void GS_FN(seg_load)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                       const void *src, int64_t start,
                                                       int64_t left, int vec, GS_R *x)
{
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int lane = threadIdx.x & (GS_WARP - 1);
    if (left >= GS_SEG_W && vec) {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                uint32_t w[4];
                gs_load_piece(in_t, C, src, start + k * GS_WARP * C + lane * C, w);
#pragma unroll
                for (int c = 0; c < C; ++c)
                    x[k * C + c] = GS_FN(from_bits)(in_t, gs_word_elem(in_t, w, c));
            }
        }
    } else {
        const GS_R seed = GS_FN(seg_seed)(op, out_t);
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int off = k * GS_WARP * C + lane * C + c;
                    x[k * C + c] =
                        off < left ? GS_FN(from_bits)(in_t, gs_load_bits(in_t, src, start + off))
                                   : seed;
                }
            }
        }
    }
}

/* Level 0: start copying warp tile `tile` into the warp's buffer `slot` (GS_SEG_W values of the
 * input; its 16-byte chunks, lane l the l-th of every 32) when it is whole and aligned; returns
 * whether it did (else the tile is read from memory where it is used). */
static __device__ __forceinline__ int GS_FN(seg_fetch)(gs_dtype in_t,
                                                       const gs_segreduce_kparams *sp,
                                                       int64_t tile, void *slot)
{
    const int size = (int)gs_dtype_size(in_t);
    const int lane = threadIdx.x & (GS_WARP - 1);
    if (slot == NULL || !sp->scan.vec_in || sp->scan.n - tile * GS_SEG_W < GS_SEG_W ||
        size > (int)sizeof(GS_R))
        return 0;
    const char *from = (const char *)sp->scan.in + tile * GS_SEG_W * size;
#pragma unroll
    for (int j = 0; j < (int)sizeof(GS_R); ++j)
        if (j < size)
            gs_cp_async((char *)slot + 16 * (j * GS_WARP + lane),
                        from + 16 * (j * GS_WARP + lane), 16);
    return 1;
}

/* Row k of warp tile `tile` (as GS_FN(segreduce_tile)) when its words or the next row's hold a
 * bit: each lane's piece, the lanes' segmented scan, the values that settle something, and the
 * rows' chain carried on (*cf: a head in the rows so far, *cv: their run's value, *cd: the same
 * in double, for dbl). */
static __device__ __forceinline__ void GS_FN(seg_row)(
    gs_op op, gs_dtype in_t, gs_dtype out_t, const gs_segreduce_kparams *sp, int64_t tile, int k,
    const GS_R *x, int64_t first, gs_seg_bits *b, int64_t *ids, int64_t w, int range_last, int last,
    int dbl, const GS_FN(seg_carry) *cr, GS_FN(seg_carry) *cout, int *cf, GS_R *cv, double *cd)
{
    const int C = GS_PIECE(in_t, out_t);
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int at = k * GS_WARP * C + lane * C;
    const unsigned h = gs_seg_at(b, at, C);
    const unsigned ends = gs_seg_after(b, at, C);
    unsigned todo = last >= at + C ? ends
                    : last >= at   ? (ends | 1u << (last - at)) & ((2u << (last - at)) - 1u)
                                   : 0u;
    /* The piece's value from its last head (or its start). */
    GS_R v = x[k * C];
#pragma unroll
    for (int c = 1; c < C; ++c)
        v = (h >> c) & 1u ? x[k * C + c] : GS_FN(combine)(op, v, x[k * C + c]);
    const unsigned F = __ballot_sync(GS_FULL_MASK, h != 0);
    /* Across the lanes: after the step of distance d, a lane's value covers lanes
     * lane-2d+1 .. lane back to the nearest head; F holds the pieces with heads. */
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        const GS_R o = __shfl_up_sync(GS_FULL_MASK, v, d);
        if (lane >= d && ((F >> (lane - d + 1)) & ((1u << d) - 1u)) == 0)
            v = GS_FN(combine)(op, o, v);
    }
    const GS_R ev = __shfl_up_sync(GS_FULL_MASK, v, 1); /* the lanes before, inclusive */
    const GS_R tv = __shfl_sync(GS_FULL_MASK, v, GS_WARP - 1);
    const int ef = (F & ((1u << lane) - 1u)) != 0;

    /* What comes before this lane's piece: the lanes before from their last head, else
     * also the rows before (none before row 0's lane 0). */
    int fe = ef || *cf;
    GS_R pre = ev;
    if (!ef && k > 0) {
        if (lane == 0)
            pre = dbl ? (GS_R)*cd : *cv;
        else
            pre = dbl ? (GS_R)(*cd + (double)ev) : GS_FN(combine)(op, *cv, ev);
    }
    GS_R y[16];
    unsigned opened = 0;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        const GS_R xv = x[k * C + c];
        if ((h >> c) & 1u) {
            y[c] = xv;
            fe = 1;
        } else if (k == 0 && c == 0 && lane == 0) {
            y[c] = xv;
        } else {
            y[c] = GS_FN(combine)(op, c == 0 ? pre : y[c - 1], xv);
        }
        opened |= (unsigned)fe << c;
    }
    /* The rows' chain. */
    if (F != 0 || k == 0) {
        *cv = tv;
        *cd = (double)tv;
    } else {
        *cv = GS_FN(combine)(op, *cv, tv);
        *cd = gs_f32_prefix(*cd + (double)tv);
    }
    *cf |= F != 0;

    /* The values of the piece that settle something (few: a loop over their bits). */
    while (todo != 0) {
        const int c = __ffs(todo) - 1;
        todo &= todo - 1;
        GS_R v = y[0];
#pragma unroll
        for (int i = 1; i < C; ++i)
            v = i == c ? y[i] : v;
        GS_FN(seg_settle)(op, out_t, sp, tile, first, b, ids, w, range_last, at + c, last,
                          (ends >> c) & 1u, (opened >> c) & 1u, v, cr, cout);
    }
}

/* Level 0's tile with m <= GS_SEG_FEW heads inside it, at offsets h1 < h2 (m is a constant
 * where it is called: one copy a count), split into runs: run 0 from the tile's start to h1, run
 * i from head i to the next head or the tile's end (offset `end`: the run's end or GS_SEG_W).
 * Each lane combines its values of each run in element order (one accumulator a run), a fixed
 * tree across the lanes makes each run's total, and lane i settles run i at its last value as
 * seg_store says (`ends_last`: a head or the run's end follows the tile's last run). For the
 * operators whose result does not depend on the order of combination beyond the tree fixed by
 * the positions (as the tile with no head). */
#define GS_SEG_FEW 2
static __device__ __forceinline__ void GS_FN(seg_few)(
    gs_op op, gs_dtype in_t, gs_dtype out_t, const gs_segreduce_kparams *sp, const GS_R *x,
    const int m, int h1, int h2, int end, int ends_last, int64_t first, int64_t w,
    int range_first, int range_last, const GS_FN(seg_carry) *cr, GS_FN(seg_carry) *cout)
{
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int lane = threadIdx.x & (GS_WARP - 1);
    const GS_R seed = GS_FN(seg_seed)(op, out_t);
    /* Value (k, c) of the lane lies at offset k * 32 C + lane * C + c: its run from the heads
     * made relative to the lane (a compare with a constant a value). */
    const int b1 = h1 - lane * C, b2 = h2 - lane * C;
    GS_R acc0 = seed, acc1 = seed, acc2 = seed;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const int o = k * GS_WARP * C + c;
                const GS_R v = x[k * C + c];
                if (m == 0 || o < b1)
                    acc0 = GS_FN(combine)(op, acc0, v);
                else if (m == 1 || o < b2)
                    acc1 = GS_FN(combine)(op, acc1, v);
                else
                    acc2 = GS_FN(combine)(op, acc2, v);
            }
        }
    }
    const GS_R y0 = GS_FN(seg_row_total)(op, acc0);
    const GS_R y1 = m >= 1 ? GS_FN(seg_row_total)(op, acc1) : seed;
    const GS_R y2 = m >= 2 ? GS_FN(seg_row_total)(op, acc2) : seed;
    /* The range starts with a head: its open run is empty (as segreduce_tile). */
    if (lane == 0 && range_first && sp->part != NULL && m >= 1 && h1 == 0)
        gs_store_bits(out_t, sp->part, 2 * w, GS_FN(to_bits)(out_t, seed));
    if (lane <= m) {
        const int begin = lane == 0 ? 0 : lane == 1 ? h1 : h2;
        const int stop = lane == m ? end : lane == 0 ? h1 : h2;
        if (stop > begin)
            GS_FN(seg_store)(op, out_t, sp, w, range_last, stop - 1, end - 1,
                             lane < m ? 1 : ends_last, lane > 0, first - 1 + lane,
                             lane == 0 ? y0 : lane == 1 ? y1 : y2, cr, cout);
    }
}

/* Level 0's tile `start` when it has at most GS_SEG_FEW heads: seg_few, *k and *next moved on to
 * the next tile's; returns 0 (nothing done) when it has more. */
static __device__ __forceinline__ int GS_FN(seg_try_few)(
    gs_op op, gs_dtype in_t, gs_dtype out_t, const gs_segreduce_kparams *sp, int64_t start,
    const GS_R *x, int64_t *k, int64_t *next, int64_t w, int range_first, int range_last,
    const GS_FN(seg_carry) *cr, GS_FN(seg_carry) *cout)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t n = sp->scan.n;
    const int64_t at = gs_seg_start_at(sp, *k + lane);
    const int64_t off = at - start;
    const unsigned in = __ballot_sync(GS_FULL_MASK, off < GS_SEG_W); /* a prefix of lanes */
    const int m = __popc(in);
    if (m > GS_SEG_FEW)
        return 0;
    /* The lanes past m hold later starts (or none): this round saw every head of the tile. */
    const int ends_last =
        n - start <= GS_SEG_W || __ballot_sync(GS_FULL_MASK, off == GS_SEG_W) != 0;
    const int end = (int)(n - start < GS_SEG_W ? n - start : GS_SEG_W);
    const int h1 = __shfl_sync(GS_FULL_MASK, (int)off, 0);
    const int h2 = __shfl_sync(GS_FULL_MASK, (int)off, 1);
    const int64_t first = *k;
    *next = __shfl_sync(GS_FULL_MASK, at, m);
    *k += m;
    if (m == 0)
        GS_FN(seg_few)(op, in_t, out_t, sp, x, 0, h1, h2, end, ends_last, first, w, range_first,
                       range_last, cr, cout);
    else if (m == 1)
        GS_FN(seg_few)(op, in_t, out_t, sp, x, 1, h1, h2, end, ends_last, first, w, range_first,
                       range_last, cr, cout);
    else
        GS_FN(seg_few)(op, in_t, out_t, sp, x, 2, h1, h2, end, ends_last, first, w, range_first,
                       range_last, cr, cout);
    return 1;
}

/* Warp tile `tile` of one level (see the file's header), its first head's segment *k (level 0;
 * *k becomes the next tile's), the warp's head bits in b. */
static __device__ __forceinline__ void GS_FN(segreduce_tile)(
    gs_op op, gs_dtype in_t, gs_dtype out_t, const gs_segreduce_kparams *sp, int64_t tile,
    const GS_R *x, int64_t *k_io, int64_t *next, gs_seg_bits *b, int64_t *ids, int64_t w,
    int range_first, int range_last, const GS_FN(seg_carry) *cr, GS_FN(seg_carry) *cout)
{
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t n = sp->scan.n;
    const int64_t start = tile * GS_SEG_W;
    const int last = (int)(n - start < GS_SEG_W ? n - start : GS_SEG_W) - 1;
    const GS_R seed = GS_FN(seg_seed)(op, out_t);
    /* float32 add chains the rows in double (as the scan's rows), made infinite once past
     * float32's range as NumPy's float32 sum would be. */
    const int dbl = GS_R_KIND == 'f' && sizeof(GS_R) == 4 && op == GS_OP_ADD;

    /* ---- The heads (the values are in flight: loaded before the previous tile's work). Level
     * 0 knows its next start: a tile before it that does not hold the run's end has no bit (most
     * tiles of long segments), and its words are not made. ---- */
    const int64_t first = *k_io;
    /* Float min, max, fmin and fmax pick the first of NaN and signed-zero ties: they take the
     * rows in element order (below), not a lane's values first. */
    const int any_order = !(GS_R_KIND == 'f' && (op == GS_OP_MIN || op == GS_OP_MAX ||
                                                  op == GS_OP_FMIN || op == GS_OP_FMAX));
    if (ids == NULL && any_order && !(*next - start > GS_SEG_W && n - start > GS_SEG_W) &&
        GS_FN(seg_try_few)(op, in_t, out_t, sp, start, x, k_io, next, w, range_first, range_last,
                           cr, cout))
        return; /* level 0, at most GS_SEG_FEW heads */
    const unsigned long long nz =
        ids == NULL && *next - start > GS_SEG_W && n - start > GS_SEG_W
            ? 0ull
            : gs_seg_bits_of(sp, start, k_io, next, b, ids);
    /* The range starts with a head: its open run is empty (a later tile that does has settled
     * the run before it at the tile before's last value). */
    if (lane == 0 && range_first && sp->part != NULL && nz != 0 && (b->word[0] & 1u))
        gs_store_bits(out_t, sp->part, 2 * w, GS_FN(to_bits)(out_t, seed));

    /* ---- No head and no end in the tile (most tiles of long segments): its total, settled by
     * the lane of its last value; the lanes' values, then a tree across the lanes. That leaves
     * element order, so float min, max, fmin and fmax (whose NaN and signed-zero ties pick the
     * first) take the rows in order below. ---- */
    if (nz == 0 && any_order) {
        GS_R v = x[0];
#pragma unroll
        for (int i = 1; i < GS_VT; ++i)
            v = GS_FN(combine)(op, v, x[i]);
        v = GS_FN(seg_row_total)(op, v);
        if (lane == GS_WARP - 1) /* holds the tile's last value (a tile with no end is whole) */
            GS_FN(seg_settle)(op, out_t, sp, tile, first, b, ids, w, range_last, last, last, 0, 0,
                              v, cr, cout);
        return;
    }

    /* ---- Row by row: each lane's piece, the lanes' segmented scan, the chain of rows. ---- */
    int cf = 0;      /* a head in the rows before */
    GS_R cv = seed;  /* their run's value (from the last head, or the tile's start) */
    double cd = 0.0; /* ... in double (dbl) */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            /* ---- A row with no bit in its words or the next one (no head, nothing ends;
             * its last value is the tile's only in a whole tile): only its total goes on. ---- */
            if (((nz >> (k * C)) & ((2ull << C) - 1ull)) == 0) {
                GS_R v = x[k * C];
#pragma unroll
                for (int c = 1; c < C; ++c)
                    v = GS_FN(combine)(op, v, x[k * C + c]);
                const GS_R tv = GS_FN(seg_row_total)(op, v);
                if (k == 0) {
                    cv = tv;
                    cd = (double)tv;
                } else {
                    cv = GS_FN(combine)(op, cv, tv);
                    cd = gs_f32_prefix(cd + (double)tv);
                }
                if (k == R - 1 && last == GS_SEG_W - 1 && lane == GS_WARP - 1) /* its last */
                    GS_FN(seg_settle)(op, out_t, sp, tile, first, b, ids, w, range_last, last, last,
                                      0, cf, dbl ? (GS_R)cd : cv, cr, cout);
                continue;
            }
            GS_FN(seg_row)(op, in_t, out_t, sp, tile, k, x, first, b, ids, w, range_last, last, dbl,
                           cr, cout, &cf, &cv, &cd);
        }
    }
}

/* Above level 0, a warp's one tile `tile` (range w) of pairs (value 2j: range j's open run, 2j + 1
 * its last run, a head unless range j held none: ids[j] == GS_SEG_NO_HEAD, value 2j + 1 then the
 * seed). A segment that starts in the tile is value 2j + 1 of a range with a head, then the
 * values up to the next such range's open run: the next value alone for the common segment
 * (ranges with heads in a row), more past ranges with none (a chain). Lane l settles pairs l,
 * l + 32, ... as seg_store would: the segments that end in the tile into out, the run that goes
 * on past its last value into part[2 w + 1] (its id in part_ids[w]), and lane 0 the tile's open
 * run into part[2 w]. Each segment is combined in element order (float32 add in double, as the
 * rows, rounded once): the same bits as segreduce_tile for two values; a chain groups
 * differently. float64 add leaves tiles with a chain to segreduce_tile, whose tree keeps the
 * contract's error bound (a chain of k ranges adds k roundings in a row). Returns 1 when done:
 * so, or with nothing written when the guard is set (bad: level 0 wrote no partial); 0 (nothing
 * done) for such a float64 tile. The guard, the ids and the values are read at once, one round
 * trip instead of three in a row (a level above 0 is latency: its launch, then these reads and
 * the writes); a chain's further ids and values come from L1. */
static __device__ __forceinline__ int GS_FN(seg_pairs)(gs_op op, gs_dtype out_t,
                                                       const gs_segreduce_kparams *sp, int64_t tile,
                                                       int64_t w)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t n = sp->scan.n, start = tile * GS_SEG_W; /* n even above level 0 */
    const int pairs = (int)((n - start < GS_SEG_W ? n - start : GS_SEG_W) / 2);
    const int64_t *const ids = sp->ids + start / 2;
    const GS_R seed = GS_FN(seg_seed)(op, out_t);
    const int dbl = GS_R_KIND == 'f' && sizeof(GS_R) == 4 && op == GS_OP_ADD;
    const int no_chain = GS_R_KIND == 'f' && sizeof(GS_R) == 8 && op == GS_OP_ADD;
    int64_t id[GS_SEG_W / 2 / GS_WARP];
    GS_R a[GS_SEG_W / 2 / GS_WARP], b[GS_SEG_W / 2 / GS_WARP];
#pragma unroll
    for (int r = 0; r < GS_SEG_W / 2 / GS_WARP; ++r) {
        const int j = r * GS_WARP + lane;
        const int64_t at = start + 2 * j + 1;
        id[r] = j < pairs ? __ldg(ids + j) : (int64_t)GS_SEG_NO_ID;
        a[r] = j < pairs ? GS_FN(from_bits)(out_t, gs_load_bits(out_t, sp->scan.in, at)) : seed;
        b[r] = j + 1 < pairs ? GS_FN(from_bits)(out_t, gs_load_bits(out_t, sp->scan.in, at + 1))
                             : seed;
    }
    const GS_R open = GS_FN(from_bits)(out_t, gs_load_bits(out_t, sp->scan.in, start));
    if (sp->guard != NULL && (__ldg(sp->guard) | __ldg(sp->guard + 1)) != 0)
        return 1;
    if (no_chain) {
        int none = 0;
#pragma unroll
        for (int r = 0; r < GS_SEG_W / 2 / GS_WARP; ++r)
            none |= id[r] == GS_SEG_NO_HEAD;
        if (__any_sync(GS_FULL_MASK, none))
            return 0;
    }
    const int last_ends = start + 2 * pairs == n; /* the tile's last pair ends the values */
    /* The run from value `first` (of pair m - 1, or the tile's first) through the open runs of
     * the ranges with no head from pair m on; *m becomes the pair with the next head (pairs
     * when the run reaches the tile's end). */
#define GS_SEG_CHAIN(first, m, v)                                                         \
    do {                                                                                  \
        double d_ = (double)(first);                                                      \
        v = (first);                                                                      \
        for (; m < pairs; ++m) {                                                          \
            const GS_R x_ =                                                               \
                GS_FN(from_bits)(out_t, gs_load_bits(out_t, sp->scan.in, start + 2 * m)); \
            if (dbl) {                                                                    \
                d_ = gs_f32_prefix(d_ + (double)x_);                                      \
                v = (GS_R)d_;                                                             \
            } else {                                                                      \
                v = GS_FN(combine)(op, v, x_);                                            \
            }                                                                             \
            if (__ldg(ids + m) != GS_SEG_NO_HEAD)                                         \
                break;                                                                    \
        }                                                                                 \
    } while (0)
#pragma unroll
    for (int r = 0; r < GS_SEG_W / 2 / GS_WARP; ++r) {
        const int j = r * GS_WARP + lane;
        if (j >= pairs || id[r] == GS_SEG_NO_HEAD)
            continue;
        GS_R v;
        int m = j + 1;
        if (m < pairs && __ldg(ids + m) != GS_SEG_NO_HEAD) { /* the common segment: a, b */
            v = dbl ? (GS_R)((double)a[r] + (double)b[r]) : GS_FN(combine)(op, a[r], b[r]);
        } else {
            GS_SEG_CHAIN(a[r], m, v);
        }
        if (m < pairs || last_ends) { /* ended at the next head, or with the values */
            if (id[r] >= 0)
                gs_store_bits(out_t, sp->out, id[r], GS_FN(to_bits)(out_t, v));
            if (m >= pairs && sp->part != NULL) {
                gs_store_bits(out_t, sp->part, 2 * w + 1, GS_FN(to_bits)(out_t, seed));
                sp->part_ids[w] = GS_SEG_NO_ID;
            }
        } else if (sp->part != NULL) { /* goes on into the next tile */
            gs_store_bits(out_t, sp->part, 2 * w + 1, GS_FN(to_bits)(out_t, v));
            sp->part_ids[w] = id[r];
        }
    }
    /* The tile's open run: its first value, and the open runs of the ranges with no head after
     * it, up to the first head (none: the tile holds no head, and carries none up). */
    if (lane == 0 && sp->part != NULL) {
        GS_R v = open;
        int m = 0; /* the pair whose head ends the open run */
        if (__ldg(ids) == GS_SEG_NO_HEAD) {
            m = 1;
            GS_SEG_CHAIN(open, m, v);
        }
        gs_store_bits(out_t, sp->part, 2 * w, GS_FN(to_bits)(out_t, v));
        if (m >= pairs) {
            gs_store_bits(out_t, sp->part, 2 * w + 1, GS_FN(to_bits)(out_t, seed));
            sp->part_ids[w] = GS_SEG_NO_HEAD;
        }
    }
#undef GS_SEG_CHAIN
    return 1;
}

/* Warp w of the grid: warp tiles w * per_warp .. of one level, in order. ids_all: NULL at
 * level 0 (compiled without the ids' code), else the block's shared room for its warps' ids
 * (GS_NWARPS * GS_SEG_W / 2). bufs: level 0's shared buffers, a warp tile's values for each
 * warp: the next tile is copied there (cp.async) while the warp works on one from its
 * registers; NULL above level 0 (its few tiles read where they are used). */
static __device__ __forceinline__ void GS_FN(segreduce_tiles)(gs_op op, gs_dtype in_t,
                                                              gs_dtype out_t,
                                                              const gs_segreduce_kparams *sp,
                                                              int64_t *ids_all, void *bufs)
{
    __shared__ gs_seg_bits bits[GS_NWARPS];
    int64_t *const ids = ids_all != NULL ? ids_all + threadIdx.x / GS_WARP * (GS_SEG_W / 2) : NULL;
    void *const slot =
        bufs != NULL ? (char *)bufs + threadIdx.x / GS_WARP * GS_SEG_W * sizeof(GS_R) : NULL;
    const int64_t n = sp->scan.n;
    const int64_t tiles = gs_segreduce_tiles(n);
    const int64_t t0 = ((int64_t)blockIdx.x * GS_NWARPS + threadIdx.x / GS_WARP) * sp->per_warp;
    const int64_t t1 = t0 + sp->per_warp < tiles ? t0 + sp->per_warp : tiles;
    if (t0 >= tiles)
        return; /* the whole warp: no barrier below involves another warp */
    /* Indices that the index check enqueued before found bad (or not increasing): nothing is
     * written, on every level (the host raises or takes the general way). A level above uses
     * the partials only after it (level 0 wrote none when it is set): seg_pairs reads the guard
     * with its ids and values, the general way after it. Level 0, the check's programmatic
     * dependent, copies its first tile and searches the starts (in bounds either way) while the
     * check may still run, then waits for the check and reads the guard it wrote (a plain load:
     * it was written while this kernel ran). */
    if (ids != NULL && sp->per_warp == 1 && GS_FN(seg_pairs)(op, out_t, sp, t0, t0))
        return;
    if (ids != NULL && sp->guard != NULL && (__ldg(sp->guard) | __ldg(sp->guard + 1)) != 0)
        return;
    int landed = GS_FN(seg_fetch)(in_t, sp, t0, slot);
    /* Level 0: the rank k of the tile's first start, and the start. */
    int64_t head = 0;
    int64_t k = ids == NULL ? gs_seg_rank(sp->starts, sp->nseg, n, t0 * GS_SEG_W, &head) : 0;
    if (ids == NULL && sp->guard != NULL) {
        gs_grid_wait();
        const volatile unsigned long long *const g = sp->guard;
        if ((g[0] | g[1]) != 0) {
            gs_cp_async_wait();
            return;
        }
    }
    const int64_t w = t0 / sp->per_warp; /* the warp's range */
    /* The warp's carry, two slots in turn: tile t reads slot t % 2 and its last value's lane
     * writes the other for tile t + 1 (another lane may still read this one); the __syncwarp
     * at the start of each tile orders the two, the tile's shared words after the last tile's
     * reads, and the next tile's copies after the reads of this one's. */
    __shared__ GS_FN(seg_carry) carry[GS_NWARPS][2];
    GS_FN(seg_carry) *const cr = carry[threadIdx.x / GS_WARP];
    if ((threadIdx.x & (GS_WARP - 1)) == 0) {
        cr[t0 & 1].v = GS_FN(seg_seed)(op, out_t);
        cr[t0 & 1].d = 0.0;
        cr[t0 & 1].sid = GS_SEG_NO_ID;
        cr[t0 & 1].live = cr[t0 & 1].head = 0;
    }
    for (int64_t t = t0; t < t1; ++t) {
        GS_R x[GS_VT];
        if (landed) {
            gs_cp_async_wait();
            __syncwarp(); /* every lane's copies seen by all */
            GS_FN(seg_load)(op, in_t, out_t, slot, 0, GS_SEG_W, 1, x);
        } else {
            GS_FN(seg_load)(op, in_t, out_t, sp->scan.in, t * GS_SEG_W, n - t * GS_SEG_W,
                            sp->scan.vec_in, x);
        }
        __syncwarp();
        landed = t + 1 < t1 && GS_FN(seg_fetch)(in_t, sp, t + 1, slot);
        GS_FN(segreduce_tile)(op, in_t, out_t, sp, t, x, &k, &head, &bits[threadIdx.x / GS_WARP],
                              ids, w, t == t0, t + 1 == t1, &cr[t & 1], &cr[(t + 1) & 1]);
    }
}

/* Any segments: warp w of the grid takes segments w, w + warps, ... (see the file's header). */
static __device__ __forceinline__ void GS_FN(segreduce_warps)(gs_op op, gs_dtype in_t,
                                                              gs_dtype out_t,
                                                              const gs_segreduce_kparams *sp)
{
    const GS_R id = GS_FN(seed)(op, out_t); /* a segment's sum from its first value */
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
