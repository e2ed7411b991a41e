/*
 * agent/linrec.cuh - a block's part in the linear recurrence h[t] = a[t] h[t-1] + b[t]: the tiles
 * of the single-pass scan of pairs (gpuscan/linrec.h) with the anchored look-back
 * (device/pair_lookback.cuh). Included once per floating type (GS_R float or double, GS_RS f32
 * or f64, GS_LR_DT its gs_dtype) after warp/warp_pair.cuh and block/block_pair.cuh.
 * The steps are scanned in order (reversed: step g is memory index n - 1 - g, which turns every
 * row and the rows' order around), n / row_len rows one after the other, a row's first step a
 * head. A step is the leaf (a, a*x + b): x is h0 of its row at a head, else 0, so h0 needs no
 * step of its own.
 * A tile is GS_LR_NV steps, thread t holding steps t*VT .. t*VT+VT-1: R = VT / C pieces of
 * C = 16 / sizeof(GS_R) values, one 16-byte access each (a warp moves whole 512-byte spans,
 * lr_move_at). A run per thread, not a piece of each of R rows, makes one block scan a tile
 * instead of R. Its phases, as agent/scan.cuh's:
 *   aggregate  each thread composes its steps into one pair, the block scans them
 *              (block_pair_scan), and the tile's pair is published;
 *   look back  h just before the tile (tile 0: 0), from the anchored look-back in double and
 *              double-double;
 *   emit       h before the thread's steps = e.A * h_before + e.B (e its exclusive prefix) in
 *              double, then its VT steps as the loop runs them, one FMA a step in the type.
 * Two drivers, as the scan's, with the same arithmetic in the same order (the same bits):
 * - linrec_tile: one tile per block, a and the leaves kept in registers across the look-back.
 * - linrec_tiles_ahead (many tiles; dispatch/linrec.cu decides): agent/scan.cuh's lookahead
 *   driver for pairs, with tile slots (a and b) in dynamic shared memory: an iteration composes
 *   its current tile's steps and its previous tile's look-back parts, then scans and publishes
 *   the current tile (warp 0) beside the previous tile's look-back tree (warp 1), then emits the
 *   previous tile. The aggregate phase leaves a and the leaves (over b) in the tile's slot, so no
 *   register holds a tile across a look-back. With three slots (float32: four blocks a
 *   multiprocessor) the next tile streams into the third (cp.async) for a whole iteration; with
 *   two (float64: three blocks) into the previous tile's once it is emitted. A block waits in an
 *   iteration only on the aggregates of tiles before its previous one and on an anchor further
 *   back, whose blocks took them earlier and wait on earlier tiles still: deadlock-free as the
 *   scan's (agent/scan.cuh).
 * Accuracy: h before a thread's steps comes from the tile's warp and block scans applied to the
 * carry (the earlier tiles' pairs composed in double-double); the VT steps then run in the type:
 * the error grows with log2 of the tile, not with the number of tiles (bound: gpuscan/desc.h).
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
 * is within one of the quotient (a 64-bit division is a call of ~100 instructions). */
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

/* Step g0 of this thread's piece k of `tile`, where the piece lies in memory (its first
 * element; reversed, n - g0 - C), and where in a tile buffer (at its step: step order). */
static __device__ __forceinline__ int64_t GS_FN(lr_piece_step)(int64_t tile, int k)
{
    const int C = 16 / (int)sizeof(GS_R);
    return tile * GS_LR_NV + (int64_t)threadIdx.x * GS_LR_VT + (int64_t)k * C;
}

static __device__ __forceinline__ int64_t GS_FN(lr_piece_at)(const gs_linrec_kparams *p, int64_t g0)
{
    const int C = 16 / (int)sizeof(GS_R);
    return p->reverse ? p->n - g0 - C : g0;
}

static __device__ __forceinline__ int GS_FN(lr_buf_at)(int k)
{
    const int C = 16 / (int)sizeof(GS_R);
    return (int)threadIdx.x * GS_LR_VT + k * C;
}

/* The step (in its tile) of the k-th piece this lane moves between memory and a buffer: its
 * warp's GS_WARP * VT steps, the lanes on adjacent pieces, so each access of the warp is 512
 * contiguous bytes.  A warp moves only its own threads' pieces: a __syncwarp orders the moves
 * and the threads' own reads and writes. */
static __device__ __forceinline__ int GS_FN(lr_move_at)(int k)
{
    const int C = 16 / (int)sizeof(GS_R);
    return (int)(threadIdx.x / GS_WARP) * GS_WARP * GS_LR_VT + k * GS_WARP * C
           + (int)(threadIdx.x & (GS_WARP - 1)) * C;
}

/* Whether `tile` is read and written as whole 16-byte pieces. */
static __device__ __forceinline__ int GS_FN(lr_whole)(const gs_linrec_kparams *p, int64_t tile)
{
    return tile < p->whole;
}

/* Tile buffers of the lookahead driver: slot i holds a tile's a (GS_LR_NV values), then its b
 * (the leaves once its aggregate phase is done), each piece where lr_buf_at puts it. */
#define GS_LR_SLOTS (sizeof(GS_R) == 4 ? GS_LR_SLOTS_f32 : GS_LR_SLOTS_f64)
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
            const int s = GS_FN(lr_move_at)(k);
            const int64_t at = GS_FN(lr_piece_at)(p, tile * GS_LR_NV + s);
            gs_cp_async((GS_R *)GS_LR_BUF_A(i) + s, (const GS_R *)p->a + at, 16);
            gs_cp_async((GS_R *)GS_LR_BUF_B(i) + s, (const GS_R *)p->b + at, 16);
        }
    }
}

/* Where lr_gather finds a tile's a and b, and whether it leaves them in a slot (the callers pass
 * a constant: no piece tests it). Once for both types. */
#ifndef GS_LR_FROM_MEMORY_KEEP
#define GS_LR_FROM_MEMORY_KEEP GS_LR_FROM_MEMORY_KEEP
enum {
    GS_LR_FROM_MEMORY,     /* from memory, nothing kept (one tile per block) */
    GS_LR_FROM_SLOT,       /* from the slot (cp.async filled it), the leaves put back over b */
    GS_LR_FROM_MEMORY_KEEP /* from memory, a and the leaves put into the slot */
};
#endif

/* This thread's leaves of `tile`: a[k*C + c] and lb[k*C + c] = a*x + b (x: h0 at a row's first
 * step, else 0), and the head bits returned; past n the identity (1, 0).  a and b come from
 * tile buffer slot `slot` or from memory, as `from` says (a GS_LR_FROM_ constant); a and the
 * leaves are left in the slot for the emit phase unless it is GS_LR_FROM_MEMORY. */
static __device__ __forceinline__ unsigned GS_FN(lr_gather)(const gs_linrec_kparams *p,
                                                            int64_t tile, int from, int slot,
                                                            GS_R *a, GS_R *lb)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
    const int vec = GS_FN(lr_whole)(p, tile);
    /* Steps from the thread's first to the next row start (0: it is one), found once; a piece
     * past that start finds its own (rows shorter than a thread's steps). */
    const int64_t r0 = GS_FN(lr_row_offset)(p, GS_FN(lr_piece_step)(tile, 0));
    const int64_t next0 = r0 ? p->row_len - r0 : 0;
    const int first0 = next0 > GS_LR_VT ? GS_LR_VT + 1 : (int)next0;
    unsigned heads = 0;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int64_t g0 = GS_FN(lr_piece_step)(tile, k);
            GS_R *ak = a + k * C;
            GS_R b[4];
            if (from == GS_LR_FROM_SLOT) {
                GS_FN(lr_load_piece)(p, GS_LR_BUF_A(slot), GS_FN(lr_buf_at)(k), ak);
                GS_FN(lr_load_piece)(p, GS_LR_BUF_B(slot), GS_FN(lr_buf_at)(k), b);
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
            /* ---- Row starts, and the leaves: a piece with none, the usual case, is C fused
             * a*0 + b and no test per step. ---- */
            int64_t first = first0 - k * C; /* steps to the next row start */
            if (first < 0) {
                const int64_t r = GS_FN(lr_row_offset)(p, g0);
                first = r ? p->row_len - r : 0;
            }
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
            if (from == GS_LR_FROM_MEMORY_KEEP)
                GS_FN(lr_put_piece)(p, GS_LR_BUF_A(slot), GS_FN(lr_buf_at)(k), ak);
            if (from != GS_LR_FROM_MEMORY)
                GS_FN(lr_put_piece)(p, GS_LR_BUF_B(slot), GS_FN(lr_buf_at)(k), lb + k * C);
        }
    }
    return heads;
}

/* Store this thread's h of `tile` (y: its GS_LR_VT steps in step order).  A whole tile goes
 * through `stage` (a tile buffer of shared memory): each thread puts its pieces there, then its
 * warp stores its part as lr_move_at lays it out (a thread's own pieces side by side would make
 * each store of the warp half of every sector it touches). */
static __device__ __forceinline__ void GS_FN(lr_store)(const gs_linrec_kparams *p, int64_t tile,
                                                       const GS_R *y, void *stage)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
    if (GS_FN(lr_whole)(p, tile)) {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k)
            if (k < R)
                GS_FN(lr_put_piece)(p, stage, GS_FN(lr_buf_at)(k), y + k * C);
        __syncwarp();
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                const int s = GS_FN(lr_move_at)(k);
                *(uint4 *)((GS_R *)p->h + GS_FN(lr_piece_at)(p, tile * GS_LR_NV + s)) =
                    *(const uint4 *)((const GS_R *)stage + s);
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                const int64_t g0 = GS_FN(lr_piece_step)(tile, k);
#pragma unroll
                for (int c = 0; c < C; ++c)
                    if (g0 + c < p->n)
                        gs_store_bits(GS_LR_DT, p->h, p->reverse ? p->n - 1 - g0 - c : g0 + c,
                                      GS_FN(lr_to_bits)(y[k * C + c]));
            }
        }
    }
}

/* What a thread keeps of a tile between its aggregate and emit phases: its pair and exclusive
 * prefix (run) and its head bits. */
typedef struct GS_FN(gs_lr_mine) {
    GS_FN(gs_pair_part) run;
    unsigned heads;
} GS_FN(gs_lr_mine);

typedef struct GS_FN(gs_linrec_smem) {
    GS_FN(gs_block_pair_smem) block;
    gs_lr_lookback_smem lookback;
    unsigned tiles[2];
    unsigned after[2]; /* the lookahead driver's tile taken in an iteration, by its parity */
    double before;     /* h just before the tile */
} GS_FN(gs_linrec_smem);

/* This thread's steps composed into one pair, into mine->run (a, the leaves lb, the head bits
 * in mine->heads).  Steps with no row start, the usual case, are composed without the zero rule
 * (a product and an FMA a step) when the product of their a's is finite and not zero, which
 * says that every a is: the rule on A then never applies, and the rule on B (the leaf where B
 * is a zero) differs from the FMA (a zero added to the leaf) only when the leaf is a zero too,
 * in the zero's sign. So the two runs of B are equal, or both zeros, at every step, and the
 * rule's last B is the last leaf where the B before it is a zero, else the FMA's B (a NaN leaf
 * met by a zero B earlier gives the FMA's NaN, not the leaf's: a NaN either way).  Else (an a
 * zero, infinite or NaN) the steps with the rule. */
static __device__ __forceinline__ void GS_FN(lr_compose_mine)(const GS_R *a, const GS_R *lb,
                                                              GS_FN(gs_lr_mine) *mine)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
    mine->run.f = 0;
    if (mine->heads == 0) {
        GS_R A = (GS_R)1, B = (GS_R)0, before_last = (GS_R)0;
#pragma unroll
        for (int i = 0; i < GS_LR_VT; ++i) {
            before_last = B;
            B = GS_FN(lr_leaf)(a[i], B, lb[i]); /* a * B + lb, fused */
            A = A * a[i];
        }
        if (A != (GS_R)0 && isfinite(A)) {
            mine->run.A = A;
            mine->run.B = before_last == (GS_R)0 ? lb[GS_LR_VT - 1] : B;
            return;
        }
    }
    mine->run.A = (GS_R)1;
    mine->run.B = (GS_R)0;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const unsigned heads = (mine->heads >> (k * C)) & ((1u << C) - 1u);
            if (heads == 0) { /* no row start in the piece, the usual case: no test a step */
#pragma unroll
                for (int c = 0; c < C; ++c)
                    GS_CAT2(gs_lr_compose, GS_RS)(&mine->run.A, &mine->run.B, a[k * C + c],
                                                  lb[k * C + c]);
            } else {
#pragma unroll
                for (int c = 0; c < C; ++c)
                    GS_FN(pair_append)(&mine->run.f, &mine->run.A, &mine->run.B,
                                       (heads >> c) & 1u, a[k * C + c], lb[k * C + c]);
            }
        }
    }
}

/* A tile's pair published. */
static __device__ __forceinline__ void GS_FN(lr_publish)(const gs_linrec_kparams *p, int64_t tile,
                                                         int f, GS_R A, GS_R B)
{
    const gs_dpair t = { f, (double)A, (double)B };
    gs_lr_publish(p->s, tile, t, sizeof(GS_R) == 4);
}

/* Aggregate phase: this thread's steps composed into one pair, the block's scan of them (each
 * thread's exclusive prefix into mine->run), and the tile's pair published (thread 0). */
static __device__ __forceinline__ void GS_FN(lr_aggregate)(const gs_linrec_kparams *p, int64_t tile,
                                                           const GS_R *a, const GS_R *lb,
                                                           GS_FN(gs_lr_mine) *mine,
                                                           GS_FN(gs_block_pair_smem) *sm)
{
    GS_FN(lr_compose_mine)(a, lb, mine);
    GS_FN(block_pair_scan)(&mine->run, sm);
    if (threadIdx.x == 0)
        GS_FN(lr_publish)(p, tile, mine->run.tf, mine->run.tA, mine->run.tB);
}

/* Look-back phase: h just before `tile`, to every thread (called by all; ends with a
 * barrier). */
static __device__ __forceinline__ double GS_FN(lr_before)(const gs_linrec_kparams *p, int64_t tile,
                                                          GS_FN(gs_linrec_smem) *sm)
{
    double before = 0.0;
    if (tile > 0)
        before = gs_lr_look_back(p->s, tile, &sm->lookback, sizeof(GS_R) == 4);
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

/* One step of the loop in the type: h after the step (a, leaf lb; head: a row's first step,
 * whose leaf already holds h0) from h before it, with the same zero rule. */
static __device__ __forceinline__ GS_R GS_FN(lr_step)(unsigned head, GS_R a, GS_R lb, GS_R h)
{
    if (head || h == (GS_R)0)
        return lb;
    if (sizeof(GS_R) == 4)
        return (GS_R)fmaf((float)a, (float)h, (float)lb);
    return (GS_R)fma((double)a, (double)h, (double)lb);
}

/* Emit phase (a, lb: the thread's GS_LR_VT steps): h before them from the thread's exclusive
 * prefix applied to h before the tile, in double, rounded to the type once; then the steps as
 * the loop runs them, in the type (one FMA a step), with the zero rule of gpuscan/linrec.h; then
 * the store (lr_store, through `stage`). A piece with no row start tests no head bit. */
static __device__ __forceinline__ void GS_FN(lr_emit)(const gs_linrec_kparams *p, int64_t tile,
                                                      const GS_R *a, const GS_R *lb,
                                                      const GS_FN(gs_lr_mine) *mine,
                                                      double before, void *stage)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
    GS_R y[GS_LR_VT];
    GS_R h = (GS_R)GS_FN(lr_apply)(mine->run.ef, mine->run.eA, mine->run.eB, before);
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const unsigned heads = (mine->heads >> (k * C)) & ((1u << C) - 1u);
            if (heads == 0) {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    h = GS_FN(lr_step)(0u, a[k * C + c], lb[k * C + c], h);
                    y[k * C + c] = h;
                }
            } else {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    h = GS_FN(lr_step)((heads >> c) & 1u, a[k * C + c], lb[k * C + c], h);
                    y[k * C + c] = h;
                }
            }
        }
    }
    GS_FN(lr_store)(p, tile, y, stage);
}

/* One tile per block, in launch order (see the file's header). */
static __device__ __forceinline__ void GS_FN(linrec_tile)(const gs_linrec_kparams *p)
{
    __shared__ GS_FN(gs_linrec_smem) sm;
    __shared__ __align__(16) GS_R stage[GS_LR_NV];

    if (threadIdx.x == 0)
        sm.tiles[0] = gs_take_tile(p->s.counter, gridDim.x);
    __syncthreads();
    const int64_t tile = sm.tiles[0];

    GS_R a[GS_LR_VT], lb[GS_LR_VT];
    GS_FN(gs_lr_mine) mine;
    mine.heads = GS_FN(lr_gather)(p, tile, GS_LR_FROM_MEMORY, 0, a, lb);
    GS_FN(lr_aggregate)(p, tile, a, lb, &mine, &sm.block);
    const double before = GS_FN(lr_before)(p, tile, &sm);
    GS_FN(lr_emit)(p, tile, a, lb, &mine, before, stage);
}

/* Emit phase of a tile whose a and leaves are in buffer slot i (the h staged over the leaves). */
static __device__ __forceinline__ void GS_FN(lr_emit_kept)(const gs_linrec_kparams *p, int64_t tile,
                                                           int i, const GS_FN(gs_lr_mine) *mine,
                                                           double before)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_LR_VT / C;
    GS_R a[GS_LR_VT], lb[GS_LR_VT];
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            GS_FN(lr_load_piece)(p, GS_LR_BUF_A(i), GS_FN(lr_buf_at)(k), a + k * C);
            GS_FN(lr_load_piece)(p, GS_LR_BUF_B(i), GS_FN(lr_buf_at)(k), lb + k * C);
        }
    }
    GS_FN(lr_emit)(p, tile, a, lb, mine, before, GS_LR_BUF_B(i));
}

/* The lookahead driver (see the file's header): dynamic shared memory of GS_LR_SLOTS slots of a
 * tile's a and b (2 * GS_LR_SLOTS * GS_LR_NV * sizeof(GS_R) bytes).  An iteration has two block
 * barriers:
 *   1. every thread: cur's steps gathered and composed (block_pair_put), then its parts of
 *      prev's look-back (gs_lr_look_back_part); barrier;
 *   2. warp 0 rakes cur's scan and publishes its pair while warp 1 folds prev's look-back tree
 *      (the anchor last) into sm.before; barrier;
 *   3. every thread: its prefix of cur (block_pair_get), then prev's emit from its slot.
 * The two serial parts of a tile, the scan's rake and the look-back's tree, run side by side
 * (H200, 2^28: float64 45 -> 60% of memcpy, float32 64 -> 66% with the third slot;
 * docs/performance-notes.md).  A thread touches only its own slots of the scan and of the
 * look-back outside step 2, and the tile taken in step 1 goes through one of two words by the
 * iteration's parity, so no other barrier is needed.  A warp reads and writes only its own
 * threads' part of a tile slot: a __syncwarp after the copies land, and one after the emit has
 * used a slot, before the next tile's copies refill it. */
static __device__ __forceinline__ void GS_FN(linrec_tiles_ahead)(const gs_linrec_kparams *p)
{
    __shared__ GS_FN(gs_linrec_smem) sm;
    const int64_t ntiles = gs_linrec_tiles(p->n);

    gs_ahead_tiles t;
    if (!gs_ahead_start(p->s.counter, (unsigned)ntiles + gridDim.x, ntiles, sm.tiles, &t))
        return;
    if (GS_LR_SLOTS == 2)
        t.bp = t.bn; /* two slots: cur's, and prev's, which the next tile streams into */
    t.pre_c = GS_FN(lr_whole)(p, t.cur);
    if (t.pre_c)
        GS_FN(lr_prefetch)(p, t.cur, t.bc);
    GS_FN(gs_lr_mine) mine_p, mine_c;

    for (unsigned it = 0;; ++it) {
        const int has_cur = t.cur < ntiles;
        unsigned after = 0xffffffffu;
        if (has_cur) {
            after = gs_ahead_take(p->s.counter, (unsigned)ntiles + gridDim.x, ntiles, &t);
            if (t.pre_c)
                __syncwarp(); /* cur's copies, made by the warp's lanes, seen by all of them */
        }
        if (threadIdx.x == 0)
            sm.after[it & 1u] = after;
        /* three slots: the next tile streams into the third while this iteration works */
        const int pre_n = has_cur && t.next < ntiles && GS_FN(lr_whole)(p, t.next);
        if (GS_LR_SLOTS == 3 && pre_n) {
            __syncwarp(); /* the warp's reads of that slot (the emit before) are done */
            GS_FN(lr_prefetch)(p, t.next, t.bn);
        }

        /* ---- 1: cur's steps composed, then prev's look-back parts. ---- */
        if (has_cur) {
            GS_R a[GS_LR_VT], lb[GS_LR_VT];
            mine_c.heads = t.pre_c
                               ? GS_FN(lr_gather)(p, t.cur, GS_LR_FROM_SLOT, t.bc, a, lb)
                               : GS_FN(lr_gather)(p, t.cur, GS_LR_FROM_MEMORY_KEEP, t.bc, a, lb);
            GS_FN(lr_compose_mine)(a, lb, &mine_c);
            GS_FN(block_pair_put)(&mine_c.run, &sm.block);
        }
        if (t.prev > 0)
            gs_lr_look_back_part(p->s, t.prev, &sm.lookback, sizeof(GS_R) == 4);
        __syncthreads();

        /* ---- 2: cur's rake and publication beside prev's look-back tree. ---- */
        const int warp = (int)(threadIdx.x / GS_WARP);
        if (warp == 0 && has_cur) {
            int f;
            GS_R A, B;
            GS_FN(block_pair_rake)(&sm.block, &f, &A, &B);
            if (threadIdx.x == GS_WARP - 1)
                GS_FN(lr_publish)(p, t.cur, f, A, B);
        }
        if (warp == 1 && t.prev >= 0) {
            const double before = t.prev > 0 ? gs_lr_look_back_tree(p->s, t.prev, &sm.lookback)
                                             : 0.0;
            if ((threadIdx.x & (GS_WARP - 1)) == 0)
                sm.before = before;
        }
        __syncthreads();

        /* ---- 3: cur's prefixes, prev's emit (two slots: then the next tile into prev's
         * slot). ---- */
        if (has_cur)
            GS_FN(block_pair_get)(&mine_c.run, &sm.block);
        if (t.prev >= 0)
            GS_FN(lr_emit_kept)(p, t.prev, t.bp, &mine_p, sm.before);
        if (!has_cur)
            break;
        if (GS_LR_SLOTS == 2) {
            /* The warp's reads of prev's slot (the emit's staged stores) are done before the
             * slot is refilled: by the next tile's copies here, or, a tile not copied whole, by
             * its gather's writes next iteration. */
            __syncwarp();
            if (pre_n)
                GS_FN(lr_prefetch)(p, t.next, t.bn);
        }

        /* ---- Rotate: cur becomes prev, next becomes cur (two slots: in prev's old one). ---- */
        mine_p.run.ef = mine_c.run.ef; /* what prev's emit reads */
        mine_p.run.eA = mine_c.run.eA;
        mine_p.run.eB = mine_c.run.eB;
        mine_p.heads = mine_c.heads;
        gs_ahead_rotate(&t, pre_n, sm.after[it & 1u]);
        if (GS_LR_SLOTS == 2)
            t.bn = t.bp;
    }
}

#undef GS_LR_SLOTS
#undef GS_LR_BUF_A
#undef GS_LR_BUF_B
