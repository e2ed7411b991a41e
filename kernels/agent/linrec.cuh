/*
 * agent/linrec.cuh - a block's part in the linear recurrence h[t] = a[t] h[t-1] + b[t]: one tile
 * of the single-pass scan of pairs (gpuscan/linrec.h) with the anchored look-back
 * (device/pair_lookback.cuh).  Included once per floating type (GS_R float or double, GS_RS f32
 * or f64, GS_LR_DT its gs_dtype) after warp/warp_pair.cuh and block/block_pair.cuh.
 *
 * The steps are scanned in order (from the end when reversed: step g is memory index n - 1 - g,
 * which turns every row around and the rows' order with it), n / row_len rows one after the
 * other, a row's first step a head.  A step is the leaf (a, a*x + b): x is h0 of its row at a
 * head, else 0, so h0 needs no step of its own and a step from 0 is the loop's own a*0 + b.
 *
 * A tile is the scan's: GS_VT / C rows of GS_NT * C steps, C = 16 / sizeof(GS_R), thread t
 * holding steps t*C .. t*C+C-1 of every row (one 16-byte load of a and one of b per row).  Its
 * phases, as agent/scan.cuh's:
 *   aggregate  each thread composes its pieces, the block scans them (block_pair_scan), the
 *              rows' pairs compose into the tile's, which is published;
 *   look back  h just before the tile (tile 0: 0), from the anchored look-back in double and
 *              double-double;
 *   emit       each step's h = run.A * h_before + run.B (in double, rounded once), run being the
 *              composition from the row's start, h_before moving from row to row.
 * Accuracy: a step's path is at most C - 1 compositions in its piece, a warp scan, the warps'
 * scan, the rows before it in the tile, then one application of the carry, which holds the
 * earlier tiles' pairs composed in double-double: the error grows with log2 of the tile, not with
 * the number of tiles (the contract's bound: 4 (log2 n + 2) eps m).
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

/* A piece's C values of `src` at step g0 (a whole piece: memory g0 .., or reversed n-g0-C ..),
 * in step order. */
static __device__ __forceinline__ void GS_FN(lr_load_piece)(const gs_linrec_kparams *p,
                                                            const void *src, int64_t g0, GS_R *v)
{
    const int C = 16 / (int)sizeof(GS_R);
    uint32_t w[4];
    gs_load_piece(GS_LR_DT, C, src, p->reverse ? p->n - g0 - C : g0, w);
#pragma unroll
    for (int c = 0; c < C; ++c)
        v[c] = GS_FN(lr_of_bits)(gs_word_elem(GS_LR_DT, w, p->reverse ? C - 1 - c : c));
}

/*
 * This thread's leaves of `tile`: a[k*C + c] and B[k*C + c] = a*x + b (x: h0 at a row's first step,
 * else 0), and the head bits; past n the identity (1, 0).
 */
static __device__ __forceinline__ unsigned GS_FN(lr_gather)(const gs_linrec_kparams *p,
                                                            int64_t tile, GS_R *a, GS_R *lb)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_VT / C;
    const int64_t first = tile * GS_NV + (int64_t)threadIdx.x * C;
    const int vec = p->vec && (tile + 1) * GS_NV <= p->n;
    unsigned heads = 0;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int64_t g0 = first + (int64_t)k * GS_NT * C;
            GS_R b[16];
            if (vec) {
                GS_FN(lr_load_piece)(p, p->a, g0, a + k * C);
                GS_FN(lr_load_piece)(p, p->b, g0, b);
            } else {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int64_t g = g0 + c, m = p->reverse ? p->n - 1 - g : g;
                    a[k * C + c] =
                        g < p->n ? GS_FN(lr_of_bits)(gs_load_bits(GS_LR_DT, p->a, m)) : (GS_R)1;
                    b[c] = g < p->n ? GS_FN(lr_of_bits)(gs_load_bits(GS_LR_DT, p->b, m)) : (GS_R)0;
                }
            }
            /* ---- Row starts (one division per piece), and the leaves. ---- */
            const int64_t r = g0 % p->row_len;
            int64_t head = r ? g0 + (p->row_len - r) : g0;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                GS_R x = (GS_R)0;
                if (g0 + c == head && head < p->n) {
                    heads |= 1u << (k * C + c);
                    const int64_t row = head / p->row_len;
                    if (p->h0 != NULL)
                        x = GS_FN(lr_of_bits)(gs_load_bits(
                            GS_LR_DT, p->h0, p->reverse ? p->n / p->row_len - 1 - row : row));
                    head += p->row_len;
                }
                lb[k * C + c] = GS_FN(lr_leaf)(a[k * C + c], x, b[c]);
            }
        }
    }
    return heads;
}

/* Store this thread's h of `tile`, piece k (y in step order). */
static __device__ __forceinline__ void GS_FN(lr_store_piece)(const gs_linrec_kparams *p,
                                                             int64_t tile, int k, const GS_R *y)
{
    const int C = 16 / (int)sizeof(GS_R);
    const int64_t g0 = tile * GS_NV + (int64_t)k * GS_NT * C + (int64_t)threadIdx.x * C;
    if (p->vec && (tile + 1) * GS_NV <= p->n) {
        uint32_t w[4];
#pragma unroll
        for (int c = 0; c < C; ++c)
            gs_word_put(GS_LR_DT, w, p->reverse ? C - 1 - c : c, GS_FN(lr_to_bits)(y[c]));
        gs_store_piece(GS_LR_DT, C, p->h, p->reverse ? p->n - g0 - C : g0, w);
    } else {
#pragma unroll
        for (int c = 0; c < C; ++c)
            if (g0 + c < p->n)
                gs_store_bits(GS_LR_DT, p->h, p->reverse ? p->n - 1 - g0 - c : g0 + c,
                              GS_FN(lr_to_bits)(y[c]));
    }
}

typedef struct GS_FN(gs_linrec_smem) {
    GS_FN(gs_block_pair_smem) block;
    gs_lr_lookback_smem lookback;
    int64_t tile;
    double before; /* h just before the tile */
} GS_FN(gs_linrec_smem);

/* h = run applied to h_before, in double (the zero rule of gpuscan/linrec.h: from 0, run.B). */
static __device__ __forceinline__ double GS_FN(lr_apply)(int f, GS_R A, GS_R B, double before)
{
    return f || before == 0.0 ? (double)B : fma((double)A, before, (double)B);
}

/* One tile per block, in launch order (see the file's header). */
static __device__ __forceinline__ void GS_FN(linrec_tile)(const gs_linrec_kparams *p)
{
    __shared__ GS_FN(gs_linrec_smem) sm;
    const int C = 16 / (int)sizeof(GS_R);
    const int R = GS_VT / C;

    if (threadIdx.x == 0)
        sm.tile = atomicAdd(p->s.counter, 1u);
    __syncthreads();
    const int64_t tile = sm.tile;

    /* ---- Aggregate: the pieces, the block's scan of them, the tile's pair published. ---- */
    GS_R a[GS_VT], lb[GS_VT];
    const unsigned heads = GS_FN(lr_gather)(p, tile, a, lb);
    GS_FN(gs_pair_row) row[GS_ROWS_MAX];
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            row[k].f = 0;
            row[k].A = (GS_R)1;
            row[k].B = (GS_R)0;
#pragma unroll
            for (int c = 0; c < C; ++c)
                GS_FN(pair_append)(&row[k].f, &row[k].A, &row[k].B, (heads >> (k * C + c)) & 1u,
                                   a[k * C + c], lb[k * C + c]);
        }
    }
    GS_FN(block_pair_scan)(R, row, &sm.block);
    if (threadIdx.x == 0) {
        gs_dpair t = { 0, 1.0, 0.0 };
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                gs_dpair rk = { sm.block.f[k][GS_NWARPS - 1], (double)sm.block.A[k][GS_NWARPS - 1],
                                (double)sm.block.B[k][GS_NWARPS - 1] };
                gs_dpair_prepend(t, &rk);
                t = rk;
            }
        }
        gs_lr_publish(p->s, tile, t);
    }

    /* ---- Look back: h just before the tile. ---- */
    double before = 0.0;
    if (tile > 0)
        before = gs_lr_look_back(p->s, tile, &sm.lookback);
    if (threadIdx.x == 0)
        sm.before = before;
    __syncthreads();
    before = sm.before;

    /* ---- Emit: each step from the thread's prefix in its row, the row from h before it. ---- */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            GS_R y[16];
            int f = row[k].ef;
            GS_R A = row[k].eA, B = row[k].eB;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                GS_FN(pair_append)(&f, &A, &B, (heads >> (k * C + c)) & 1u, a[k * C + c],
                                   lb[k * C + c]);
                y[c] = (GS_R)GS_FN(lr_apply)(f, A, B, before);
            }
            GS_FN(lr_store_piece)(p, tile, k, y);
            before = GS_FN(lr_apply)(sm.block.f[k][GS_NWARPS - 1], sm.block.A[k][GS_NWARPS - 1],
                                     sm.block.B[k][GS_NWARPS - 1], before);
        }
    }
}
