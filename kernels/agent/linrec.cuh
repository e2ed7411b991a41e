/*
 * agent/linrec.cuh - a block's part in the linear recurrence h[t] = a[t] h[t-1] + b[t]: the tiles
 * of the single-pass scan of pairs (gpuscan/linrec.h) with the anchored look-back
 * (device/pair_lookback.cuh).  Included once per floating type (GS_R float or double, GS_RS f32
 * or f64, GS_LR_DT its gs_dtype) after warp/warp_pair.cuh and block/block_pair.cuh.
 *
 * The steps are scanned in order (from the end when reversed: step g is memory index n - 1 - g,
 * which turns every row around and the rows' order with it), n / row_len rows one after the
 * other, a row's first step a head.  A step is the leaf (a, a*x + b): x is h0 of its row at a
 * head, else 0, so h0 needs no step of its own and a step from 0 is the loop's own a*0 + b.
 *
 * A tile is GS_LR_NV steps (gpuscan/config.h): GS_LR_VT / C rows of GS_NT * C steps, C = 16 /
 * sizeof(GS_R), thread t holding steps t*C .. t*C+C-1 of every row (one 16-byte load of a and
 * one of b per row).  Its phases, as agent/scan.cuh's:
 *   aggregate  each thread composes its pieces, the block scans them (block_pair_scan), the
 *              rows' pairs compose into the tile's, which is published;
 *   look back  h just before the tile (tile 0: 0), from the anchored look-back in double and
 *              double-double;
 *   emit       h before each piece = e.A * h_before + e.B, e the thread's exclusive prefix in
 *              its row and h_before moving from row to row; then the piece's steps as the loop
 *              runs them, in double, each h rounded once (one FMA a step: the run's pair
 *              composed again for every step cost four times as many instructions).
 * Two drivers, as the scan's, with the same arithmetic in the same order (the same bits):
 * - linrec_tile: one tile per block, a and the leaves kept in registers across the look-back.
 * - linrec_tiles_ahead (many tiles; dispatch/linrec.cu decides): agent/scan.cuh's lookahead
 *   driver for pairs.  A persistent grid whose blocks hold three tiles in dynamic shared memory
 *   (a and b each): a block publishes the aggregate of its current tile before it waits on the
 *   look-back of its previous one, while the next streams in (cp.async).  The aggregate phase
 *   leaves a and the leaves in the tile's buffer (the leaves over b), so the emit reads them
 *   back from there and no register holds a tile across a look-back.  Deadlock-free as the
 *   scan's: tiles are taken in launch order (previous < current < next), and the earliest tile
 *   still waiting is some block's previous tile, whose predecessors have all published their
 *   aggregates (and the anchors before it their prefixes: their look-backs are done).
 * Accuracy: h before a piece comes from a warp scan, the warps' scan and the rows before it in
 * the tile, applied to the carry, which holds the earlier tiles' pairs composed in double-double;
 * the piece's steps then run in double (a rounding of 2^-53 each): the error grows with log2 of
 * the tile, not with the number of tiles (the contract's bound: 4 (log2 n + 2) eps m).
 */

/* A float of the type from its bits. */
static __device__ __forceinline__ GS_R GS_FN(lr_of_bits)(uint64_t bits)
{
    if (sizeof(GS_R) == 4)
        return (GS_R)__uint_as_float((unsigned)bits);
    return (GS_R)__longlong_as_double((long long)bits);
}

static __device__ __forceinline__ uint64_t GS_FN(lr_to_bits)(GS_R v)
{
    if (sizeof(GS_R) == 4)
        return __float_as_uint((float)v);
    return (uint64_t)__double_as_longlong((double)v);
}

/* The 16-byte piece at element `at` of `src` (global or shared memory; reversed: the piece's
 * values in memory order are its steps backwards) as C values in step order. */
static __device__ __forceinline__ void GS_FN(lr_load_piece)(const gs_linrec_kparams *p,
                                                            const void *src, int64_t at, GS_R *v)
{
    const int C = 16 / (int)sizeof(GS_R);
    uint32_t w[4];
    gs_load_piece(GS_LR_DT, C, src, at, w);
#pragma unroll
    for (int c = 0; c < C; ++c)
        v[c] = GS_FN(lr_of_bits)(gs_word_elem(GS_LR_DT, w, p->reverse ? C - 1 - c : c));
}

/* C values in step order into the 16-byte piece at element `at` of `dst`, as lr_load_piece
 * reads them. */
static __device__ __forceinline__ void GS_FN(lr_put_piece)(const gs_linrec_kparams *p, void *dst,
                                                           int64_t at, const GS_R *v)
{
    const int C = 16 / (int)sizeof(GS_R);
    uint32_t w[4];
#pragma unroll
    for (int c = 0; c < C; ++c)
        gs_word_put(GS_LR_DT, w, p->reverse ? C - 1 - c : c, GS_FN(lr_to_bits)(v[c]));
    gs_store_piece(GS_LR_DT, C, dst, at, w);
}

/* g % row_len: from the host's 1 / row_len (p->inv_row) below 2^40, where the double product
 * is within one of the quotient; a 64-bit integer division is a call of about a hundred
 * instructions, and the gather asks once per piece (with one row, the 1-D case, never). */
static __device__ __forceinline__ int64_t GS_FN(lr_row_offset)(const gs_linrec_kparams *p,
                                                               int64_t g)
{
    if (g < p->row_len)
        return g;
    if (g >= ((int64_t)1 << 40))
        return g % p->row_len;
    int64_t r = g - (int64_t)((double)g * p->inv_row) * p->row_len; /* the quotient +-1 */
    if (r < 0)
        r += p->row_len;
    else if (r >= p->row_len)
        r -= p->row_len;
    return r;
}

/* Step g0 of this thread's piece k of `tile`, where the piece lies in memory (its first element;
 * reversed, n - g0 - C), and where in a tile buffer of shared memory. */
static __device__ __forceinline__ int64_t GS_FN(lr_piece_step)(int64_t tile, int k)
{
    const int C = 16 / (int)sizeof(GS_R);
    return tile * GS_LR_NV + (int64_t)k * GS_NT * C + (int64_t)threadIdx.x * C;
}

static __device__ __forceinline__ int64_t GS_FN(lr_piece_at)(const gs_linrec_kparams *p, int64_t g0)
{
    const int C = 16 / (int)sizeof(GS_R);
    return p->reverse ? p->n - g0 - C : g0;
}

static __device__ __forceinline__ int GS_FN(lr_buf_at)(int k)
{
    const int C = 16 / (int)sizeof(GS_R);
    return k * GS_NT * C + (int)threadIdx.x * C;
}

/* Whether `tile` is read and written as whole 16-byte pieces. */
static __device__ __forceinline__ int GS_FN(lr_whole)(const gs_linrec_kparams *p, int64_t tile)
{
    return p->vec && (tile + 1) * GS_LR_NV <= p->n;
}

/* Tile buffers of the lookahead driver: slot i holds a tile's a (GS_LR_NV values), then its b
 * (the leaves once its aggregate phase is done), each piece where lr_buf_at puts it. */
#define GS_LR_BUF_A(i) \
    ((void *)((char *)gs_dynamic_smem + (size_t)(2 * (i)) * GS_LR_NV * sizeof(GS_R)))
#define GS_LR_BUF_B(i) \
    ((void *)((char *)gs_dynamic_smem + (size_t)(2 * (i) + 1) * GS_LR_NV * sizeof(GS_R)))

/* Start copying this thread's pieces of a and b of a whole `tile` into slot i. */
static __device__ __forceinline__ void GS_FN(lr_prefetch)(const gs_linrec_kparams *p, int64_t tile,
                                                          int i)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int64_t at = GS_FN(lr_piece_at)(p, GS_FN(lr_piece_step)(tile, k));
            const int s = GS_FN(lr_buf_at)(k);
            gs_cp_async((GS_R *)GS_LR_BUF_A(i) + s, (const GS_R *)p->a + at, 16);
            gs_cp_async((GS_R *)GS_LR_BUF_B(i) + s, (const GS_R *)p->b + at, 16);
        }
    }
}

/*
 * This thread's leaves of `tile`: a[k*C + c] and lb[k*C + c] = a*x + b (x: h0 at a row's first
 * step, else 0), and the head bits returned; past n the identity (1, 0).  a and b come from
 * `pre` (a tile buffer slot cp.async filled) when pre >= 0, else from memory; with keep >= 0 a
 * and the leaves are left in that slot for the emit phase.
 */
static __device__ __forceinline__ unsigned GS_FN(lr_gather)(const gs_linrec_kparams *p,
                                                            int64_t tile, int pre, int keep,
                                                            GS_R *a, GS_R *lb)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
    const int vec = GS_FN(lr_whole)(p, tile);
    unsigned heads = 0;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int64_t g0 = GS_FN(lr_piece_step)(tile, k);
            GS_R *ak = a + k * C;
            GS_R b[4];
            if (pre >= 0) {
                GS_FN(lr_load_piece)(p, GS_LR_BUF_A(pre), GS_FN(lr_buf_at)(k), ak);
                GS_FN(lr_load_piece)(p, GS_LR_BUF_B(pre), GS_FN(lr_buf_at)(k), b);
            } else if (vec) {
                GS_FN(lr_load_piece)(p, p->a, GS_FN(lr_piece_at)(p, g0), ak);
                GS_FN(lr_load_piece)(p, p->b, GS_FN(lr_piece_at)(p, g0), b);
            } else {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int64_t g = g0 + c, m = p->reverse ? p->n - 1 - g : g;
                    ak[c] = g < p->n ? GS_FN(lr_of_bits)(gs_load_bits(GS_LR_DT, p->a, m)) : (GS_R)1;
                    b[c] = g < p->n ? GS_FN(lr_of_bits)(gs_load_bits(GS_LR_DT, p->b, m)) : (GS_R)0;
                }
            }
            /* ---- Row starts (one remainder per piece), and the leaves: a piece with none,
             * the usual case, is C fused a*0 + b and no test per step (a test per step, with
             * the row's division in its branch, was a branch per step). ---- */
            const int64_t r = GS_FN(lr_row_offset)(p, g0);
            const int64_t first = r ? p->row_len - r : 0; /* steps to the next row start */
            if (first >= C) {
#pragma unroll
                for (int c = 0; c < C; ++c)
                    lb[k * C + c] = GS_FN(lr_leaf)(ak[c], (GS_R)0, b[c]);
            } else {
                int64_t head = g0 + first;
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    GS_R x = (GS_R)0;
                    if (g0 + c == head && head < p->n) {
                        heads |= 1u << (k * C + c);
                        const int64_t row = head / p->row_len;
                        if (p->h0 != NULL)
                            x = GS_FN(lr_of_bits)(gs_load_bits(
                                GS_LR_DT, p->h0,
                                p->reverse ? p->n / p->row_len - 1 - row : row));
                        head += p->row_len;
                    }
                    lb[k * C + c] = GS_FN(lr_leaf)(ak[c], x, b[c]);
                }
            }
            if (keep >= 0 && keep != pre)
                GS_FN(lr_put_piece)(p, GS_LR_BUF_A(keep), GS_FN(lr_buf_at)(k), ak);
            if (keep >= 0)
                GS_FN(lr_put_piece)(p, GS_LR_BUF_B(keep), GS_FN(lr_buf_at)(k), lb + k * C);
        }
    }
    return heads;
}

/* Store this thread's h of `tile`, piece k (y in step order). */
static __device__ __forceinline__ void GS_FN(lr_store_piece)(const gs_linrec_kparams *p,
                                                             int64_t tile, int k, const GS_R *y)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int64_t g0 = GS_FN(lr_piece_step)(tile, k);
    if (GS_FN(lr_whole)(p, tile)) {
        GS_FN(lr_put_piece)(p, p->h, GS_FN(lr_piece_at)(p, g0), y);
    } else {
#pragma unroll
        for (int c = 0; c < C; ++c)
            if (g0 + c < p->n)
                gs_store_bits(GS_LR_DT, p->h, p->reverse ? p->n - 1 - g0 - c : g0 + c,
                              GS_FN(lr_to_bits)(y[c]));
    }
}

/* The pairs of a tile's rows, kept from its aggregate phase to its emit phase (thread 0 writes
 * them; every thread reads them after the look-back's barrier). */
typedef struct GS_FN(gs_lr_totals) {
    int f[GS_ROWS_MAX];
    GS_R A[GS_ROWS_MAX];
    GS_R B[GS_ROWS_MAX];
} GS_FN(gs_lr_totals);

/* What a thread keeps of a tile between its aggregate and emit phases: its exclusive prefix in
 * each row (row[k].ef, eA, eB) and its head bits. */
typedef struct GS_FN(gs_lr_mine) {
    GS_FN(gs_pair_row) row[GS_ROWS_MAX];
    unsigned heads;
} GS_FN(gs_lr_mine);

typedef struct GS_FN(gs_linrec_smem) {
    GS_FN(gs_block_pair_smem) block;
    gs_lr_lookback_smem lookback;
    GS_FN(gs_lr_totals) totals[3]; /* per tile buffer slot (one tile per block: [0]) */
    unsigned tiles[3];
    double before; /* h just before the tile */
} GS_FN(gs_linrec_smem);

/* Aggregate phase: this thread's pieces composed per row (a, the leaves lb, the head bits in
 * *mine), the block's scan of them (each thread's exclusive prefix into mine->row), the rows'
 * pairs into *tot and the tile's pair published (thread 0). */
static __device__ __forceinline__ void GS_FN(lr_aggregate)(const gs_linrec_kparams *p, int64_t tile,
                                                           const GS_R *a, const GS_R *lb,
                                                           GS_FN(gs_lr_mine) *mine,
                                                           GS_FN(gs_lr_totals) *tot,
                                                           GS_FN(gs_block_pair_smem) *sm)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            mine->row[k].f = 0;
            mine->row[k].A = (GS_R)1;
            mine->row[k].B = (GS_R)0;
#pragma unroll
            for (int c = 0; c < C; ++c)
                GS_FN(pair_append)(&mine->row[k].f, &mine->row[k].A, &mine->row[k].B,
                                   (mine->heads >> (k * C + c)) & 1u, a[k * C + c], lb[k * C + c]);
        }
    }
    GS_FN(block_pair_scan)(R, mine->row, sm);
    if (threadIdx.x == 0) {
        gs_dpair t = { 0, 1.0, 0.0 };
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                tot->f[k] = sm->f[k][GS_NWARPS - 1];
                tot->A[k] = sm->A[k][GS_NWARPS - 1];
                tot->B[k] = sm->B[k][GS_NWARPS - 1];
                gs_dpair rk = { tot->f[k], (double)tot->A[k], (double)tot->B[k] };
                gs_dpair_prepend(t, &rk);
                t = rk;
            }
        }
        gs_lr_publish(p->s, tile, t);
    }
}

/* Look-back phase: h just before `tile`, to every thread (called by all; ends with a barrier,
 * after which the totals thread 0 wrote in the aggregate phase are visible too). */
static __device__ __forceinline__ double GS_FN(lr_before)(const gs_linrec_kparams *p, int64_t tile,
                                                          GS_FN(gs_linrec_smem) *sm)
{
    double before = 0.0;
    if (tile > 0)
        before = gs_lr_look_back(p->s, tile, &sm->lookback);
    if (threadIdx.x == 0)
        sm->before = before;
    __syncthreads();
    return sm->before;
}

/* h = run applied to h_before, in double (the zero rule of gpuscan/linrec.h: from 0, run.B). */
static __device__ __forceinline__ double GS_FN(lr_apply)(int f, GS_R A, GS_R B, double before)
{
    return f || before == 0.0 ? (double)B : fma((double)A, before, (double)B);
}

/* Emit phase, piece k (a, lb: its C steps): h before the piece from the thread's prefix in its
 * row applied to h before the row (*before, then moved past the row), then the piece's steps
 * one after the other as the loop runs them, in double (the zero rule of gpuscan/linrec.h: from
 * 0, a step's h is its leaf), each rounded once. */
static __device__ __forceinline__ void GS_FN(lr_emit_piece)(
    const gs_linrec_kparams *p, int64_t tile, int k, const GS_R *a, const GS_R *lb,
    const GS_FN(gs_lr_mine) *mine, const GS_FN(gs_lr_totals) *tot, double *before)
{
    const int C = 16 / (int)sizeof(GS_R);
    GS_R y[4];
    double h = GS_FN(lr_apply)(mine->row[k].ef, mine->row[k].eA, mine->row[k].eB, *before);
#pragma unroll
    for (int c = 0; c < C; ++c) {
        h = (mine->heads >> (k * C + c)) & 1u || h == 0.0 ? (double)lb[c]
                                                          : fma((double)a[c], h, (double)lb[c]);
        y[c] = (GS_R)h;
    }
    GS_FN(lr_store_piece)(p, tile, k, y);
    *before = GS_FN(lr_apply)(tot->f[k], tot->A[k], tot->B[k], *before);
}

/* One tile per block, in launch order (see the file's header). */
static __device__ __forceinline__ void GS_FN(linrec_tile)(const gs_linrec_kparams *p)
{
    __shared__ GS_FN(gs_linrec_smem) sm;
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;

    if (threadIdx.x == 0)
        sm.tiles[0] = gs_take_tile(p->s.counter, gridDim.x);
    __syncthreads();
    const int64_t tile = sm.tiles[0];

    GS_R a[GS_LR_VT], lb[GS_LR_VT];
    GS_FN(gs_lr_mine) mine;
    mine.heads = GS_FN(lr_gather)(p, tile, -1, -1, a, lb);
    GS_FN(lr_aggregate)(p, tile, a, lb, &mine, &sm.totals[0], &sm.block);
    double before = GS_FN(lr_before)(p, tile, &sm);
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k)
        if (k < R)
            GS_FN(lr_emit_piece)(p, tile, k, a + k * C, lb + k * C, &mine, &sm.totals[0], &before);
}

/* Look-back and emit phases of a tile whose a and leaves are in buffer slot i. */
static __device__ __forceinline__ void GS_FN(lr_finish_kept)(const gs_linrec_kparams *p,
                                                             int64_t tile, int i,
                                                             const GS_FN(gs_lr_mine) *mine,
                                                             GS_FN(gs_linrec_smem) *sm)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
    double before = GS_FN(lr_before)(p, tile, sm);
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            GS_R a[4], lb[4];
            GS_FN(lr_load_piece)(p, GS_LR_BUF_A(i), GS_FN(lr_buf_at)(k), a);
            GS_FN(lr_load_piece)(p, GS_LR_BUF_B(i), GS_FN(lr_buf_at)(k), lb);
            GS_FN(lr_emit_piece)(p, tile, k, a, lb, mine, &sm->totals[i], &before);
        }
    }
}

/* The lookahead driver (see the file's header): dynamic shared memory of three slots of a tile's
 * a and b (6 * GS_LR_NV * sizeof(GS_R) bytes).  Each thread reads back only the pieces it
 * copied or wrote itself, so the slots need no barrier of their own. */
static __device__ __forceinline__ void GS_FN(linrec_tiles_ahead)(const gs_linrec_kparams *p)
{
    __shared__ GS_FN(gs_linrec_smem) sm;
    const int64_t ntiles = gs_linrec_tiles(p->n);

    gs_ahead_tiles t;
    if (!gs_ahead_start(p->s.counter, (unsigned)ntiles + gridDim.x, ntiles, sm.tiles, &t))
        return;
    t.pre_c = GS_FN(lr_whole)(p, t.cur);
    if (t.pre_c)
        GS_FN(lr_prefetch)(p, t.cur, t.bc);
    GS_FN(gs_lr_mine) mine_p;

    for (;;) {
        /* ---- The next tile streams in while this iteration works. ---- */
        const int pre_n = t.next < ntiles && GS_FN(lr_whole)(p, t.next);
        const unsigned after =
            gs_ahead_take(p->s.counter, (unsigned)ntiles + gridDim.x, ntiles, &t);
        if (pre_n)
            GS_FN(lr_prefetch)(p, t.next, t.bn);

        /* ---- Aggregate phase of cur: its aggregate goes out before we wait on prev. ---- */
        GS_FN(gs_lr_mine) mine_c;
        {
            GS_R a[GS_LR_VT], lb[GS_LR_VT];
            mine_c.heads = GS_FN(lr_gather)(p, t.cur, t.pre_c ? t.bc : -1, t.bc, a, lb);
            GS_FN(lr_aggregate)(p, t.cur, a, lb, &mine_c, &sm.totals[t.bc], &sm.block);
            if (threadIdx.x == 0)
                sm.tiles[2] = after;
        }

        /* ---- Look-back and emit phases of prev (its a and leaves in its slot). ---- */
        if (t.prev >= 0)
            GS_FN(lr_finish_kept)(p, t.prev, t.bp, &mine_p, &sm);
        __syncthreads(); /* sm.tiles[2] is read below; totals[bp] is rewritten later */

        /* ---- Rotate: cur becomes prev, next becomes cur. ---- */
        mine_p = mine_c;
        gs_ahead_rotate(&t, pre_n, sm.tiles[2]);
        if (t.cur >= ntiles)
            break;
    }

    /* ---- The last tile's look-back and emit. ---- */
    GS_FN(lr_finish_kept)(p, t.prev, t.bp, &mine_p, &sm);
}

#undef GS_LR_BUF_A
#undef GS_LR_BUF_B
