/*
 * agent/scan.cuh - a block's part in the single-pass scan.  Included once per register type
 * after device/lookback.cuh.
 * Layout: a tile is GS_VT / C rows of GS_NT * C consecutive values, C the values in 16 bytes
 * of the wider of the input and output dtypes.  Thread t holds values t*C .. t*C+C-1 of every
 * row, so each load and store instruction of a warp covers one contiguous span with whole
 * sectors.  The threads scan their rows' partials across the block all at once (the same two
 * barriers as one scan), and the rows' totals chain the rows together.
 * A tile goes through three phases: aggregate (read it, scan it within the block, publish its
 * aggregate), look back (learn its exclusive prefix from the tiles before it, device/lookback.cuh)
 * and emit (scan each piece from its prefix, write the tile).  Two drivers:
 * - scan_tiles: one tile per block, the phases back to back.
 * - scan_tiles_ahead (many tiles; dispatch/scan.cu decides): a persistent grid whose blocks hold
 *   three tiles: they publish the aggregate of their current tile before waiting on the look-back
 *   of their previous one, while the next streams into shared memory (cp.async, 16 bytes per copy
 *   even where a piece of the input is narrower). Over many iterations a block also asks L2 for
 *   the tile a grid's width after its next, which some block takes about an iteration later.
 *   Deadlock-free: a block's tiles are taken in launch order (previous < current < next), and
 *   the earliest tile still waiting is some block's previous tile, whose predecessors have all
 *   published their aggregates (and, for float add and mul, the anchors before it their
 *   prefixes: their look-backs are done).
 * Float add accuracy: a value's path is a sequential sum of at most C values, a tree over the
 * threads of its row, a chain over the rows of its tile (at most GS_VT/2) and a carry from the
 * earlier tiles kept as a double-word number (float32: a double, which also chains the rows), so
 * the error grows with log2 of the tile size and not with the number of tiles.
 */

/* The lookahead driver's L2 prefetch (H200, the notes): from the grid's iteration
 * GS_SCAN_L2_FROM on (its next tile past that many grids' widths), when the grid runs at least
 * GS_SCAN_L2_ITERS iterations (2^26 4-byte values and up; over fewer, the early requests delay
 * the tiles in use more than they give). */
#define GS_SCAN_L2_FROM 2
#define GS_SCAN_L2_ITERS 24

/* What the aggregate phase leaves for the emit phase that all threads share. */
typedef struct GS_FN(gs_tile_totals) {
    int af[GS_ROWS_MAX];
    GS_R av[GS_ROWS_MAX];
    int tf;
    GS_R tv;
} GS_FN(gs_tile_totals);

/* What a thread keeps of a tile between its aggregate and emit phases. */
typedef struct GS_FN(gs_tile_mine) {
    int ef[GS_ROWS_MAX];
    GS_R ev[GS_ROWS_MAX];
    unsigned heads;
} GS_FN(gs_tile_mine);

typedef struct GS_FN(gs_scan_smem) {
    GS_FN(gs_block_scan_smem) block;
    GS_FN(gs_tile_totals) totals[3]; /* per buffer slot, written by thread 0 */
    unsigned tiles[3];
    GS_R excl_hi; /* the tile's exclusive prefix as a carry */
    GS_R excl_lo;
    double excl_d;   /* ... or as a double (float32 add: part_double) */
#if GS_R_KIND == 'f' /* the anchored look-back's (float add and mul) */
    GS_FN(gs_lookback_smem) lookback;
#endif
} GS_FN(gs_scan_smem);

/* Start copying a whole tile into shared memory, in memory order: each thread its own pieces
 * when they are 16 bytes, else (a narrow input widened: int32 -> int64 pieces of 8 bytes,
 * uint8 -> uint64 of 2) the tile's bytes in 16-byte copies spread over the threads, so the
 * input is still read in 16-byte accesses; the threads then read each other's copies (a
 * barrier once they are done: GS_FN(linear_copy)). */
static __device__ __forceinline__ int GS_FN(linear_copy)(gs_dtype in_t, int c)
{
    return c * (int)gs_dtype_size(in_t) < 16;
}

static __device__ __forceinline__ void GS_FN(prefetch)(gs_dtype in_t, int c, int rows,
                                                       const void *in, int64_t tile, void *buf)
{
    const int64_t size = (int64_t)gs_dtype_size(in_t);
    if (GS_FN(linear_copy)(in_t, c)) {
        const int chunks = GS_NV * (int)size / 16;
        const char *src = (const char *)in + tile * GS_NV * size;
#pragma unroll
        for (int j = 0; j < GS_VT; ++j)
            if (j * GS_NT < chunks)
                gs_cp_async((char *)buf + 16 * (j * GS_NT + threadIdx.x),
                            src + 16 * (j * GS_NT + threadIdx.x), 16);
        return;
    }
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < rows) {
            const int64_t at = (int64_t)k * GS_NT * c + (int64_t)threadIdx.x * c;
            gs_cp_async((char *)buf + at * size, (const char *)in + (tile * GS_NV + at) * size,
                        c * (int)size);
        }
    }
}

/* This thread's values of `tile`: from its prefetched pieces in buf, else from memory (whole
 * aligned tiles as pieces, the tail value by value, seed's past the end). */
static __device__ __forceinline__ void GS_FN(gather)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                     const gs_scan_kparams *p, int64_t tile,
                                                     const void *buf, GS_R *x)
{
    const GS_R id = GS_FN(seed)(op, out_t);
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int64_t row_stride = (int64_t)GS_NT * C;
    const int64_t first = tile * GS_NV + (int64_t)threadIdx.x * C;
    if (buf != NULL || (tile < p->n / GS_NV && p->vec_in)) {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                uint32_t w[4];
                if (buf != NULL)
                    gs_load_piece(in_t, C, buf, k * row_stride + threadIdx.x * C, w);
                else
                    gs_load_piece(in_t, C, p->in, first + k * row_stride, w);
#pragma unroll
                for (int c = 0; c < C; ++c)
                    x[k * C + c] = GS_FN(from_bits)(in_t, gs_word_elem(in_t, w, c));
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int64_t g = first + k * row_stride + c;
                    x[k * C + c] =
                        g < p->n ? GS_FN(from_bits)(in_t, gs_load_bits(in_t, p->in, g)) : id;
                }
            }
        }
    }
}

/* Whether `tile`'s 1-byte flags are read as whole pieces (a piece's flags in one access of 4 to
 * 16 bytes: the array aligned, the tile whole), so that flags_load and flags_heads can read them
 * ahead of the tile (the lookahead driver). */
static __device__ __forceinline__ int GS_FN(flag_pieces)(gs_dtype in_t, gs_dtype out_t,
                                                         const gs_scan_kparams *p, int64_t tile)
{
    const int C = GS_PIECE(in_t, out_t);
    return p->row_len <= 0 && p->flags != NULL && tile < p->n / GS_NV && p->vec_flags && C >= 4;
}

/* This thread's GS_VT flags of `tile` (flag_pieces holds) into GS_VT / 4 words: piece k's C
 * flags at bytes k*C .. k*C+C-1. */
static __device__ __forceinline__ void GS_FN(flags_load)(gs_dtype in_t, gs_dtype out_t,
                                                         const gs_scan_kparams *p, int64_t tile,
                                                         uint32_t *fw)
{
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int64_t first = tile * GS_NV + (int64_t)threadIdx.x * C;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k)
        if (k < R)
            gs_load_piece(GS_UINT8, C, p->flags, first + (int64_t)k * GS_NT * C, fw + k * C / 4);
}

/* The head bits of flags_load's words (bool and int8 alike: a nonzero byte is a head; the
 * scan's first value is one unless it continues another scan). */
static __device__ __forceinline__ unsigned GS_FN(flags_heads)(const gs_scan_kparams *p,
                                                              int64_t tile, const uint32_t *fw)
{
    unsigned heads = 0;
#pragma unroll
    for (int i = 0; i < GS_VT / 4; ++i) {
        /* A byte's top bit set where the byte is nonzero (its low 7 bits plus 0x7f carry into
         * it, without reaching the next byte), then the four top bits (7, 15, 23, 31) gathered
         * into bits 28..31 by one multiply: the products land on distinct bits, so no carry. */
        const uint32_t top = (((fw[i] & 0x7f7f7f7fu) + 0x7f7f7f7fu) | fw[i]) & 0x80808080u;
        heads |= ((top * 0x00204081u) >> 28) << (4 * i);
    }
    if (tile == 0 && threadIdx.x == 0 && p->carry_in == NULL)
        heads |= 1u;
    return heads;
}

/* Segment heads among this thread's values of `tile`, one bit each: row starts (one division
 * per piece) or 1-byte flags (a piece's flags in one access when the array is aligned). The
 * flags' width is a compile-time constant: a run-time dtype costs a switch in every piece and
 * many times the compile time. */
static __device__ __forceinline__ unsigned GS_FN(tile_heads)(gs_dtype in_t, gs_dtype out_t,
                                                             const gs_scan_kparams *p, int64_t tile)
{
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int64_t row_stride = (int64_t)GS_NT * C;
    const int64_t first = tile * GS_NV + (int64_t)threadIdx.x * C;
    unsigned heads = 0;
    if (p->row_len > 0) {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                const int64_t g = first + k * row_stride;
                const int64_t r = g % p->row_len;
                int64_t head = r ? g + (p->row_len - r) : g;
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    if (g + c == head) {
                        heads |= 1u << (k * C + c);
                        head += p->row_len;
                    }
                }
            }
        }
    } else if (GS_FN(flag_pieces)(in_t, out_t, p, tile)) {
        uint32_t fw[GS_VT / 4];
        GS_FN(flags_load)(in_t, out_t, p, tile, fw);
        heads = GS_FN(flags_heads)(p, tile, fw);
    } else if (p->flags != NULL) {
        const gs_dtype flag_t = GS_UINT8; /* bool and int8 alike: nonzero is a head */
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int64_t g = first + k * row_stride + c;
                    const uint64_t fb = g < p->n ? gs_load_bits(flag_t, p->flags, g) : 0;
                    if (g < p->n && ((g == 0 && p->carry_in == NULL) || gs_flag_set(flag_t, fb)))
                        heads |= 1u << (k * C + c);
                }
            }
        }
    }
    return heads;
}

/* Aggregate phase: scan this thread's pieces across the block; this thread's prefixes into
 * *mine, the rows' and the tile's totals into *tot (every thread gets them).  `seg` (a
 * compile-time constant, as in every phase) says whether the scan has segment heads at all:
 * a plain scan passes heads 0 and neither computes, moves nor tests a flag. */
static __device__ __forceinline__ void GS_FN(aggregate)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                        int seg, const GS_R *x, unsigned heads,
                                                        GS_FN(gs_tile_mine) *mine,
                                                        GS_FN(gs_tile_totals) *tot,
                                                        GS_FN(gs_block_scan_smem) *sm)
{
    const GS_R id = GS_FN(seed)(op, out_t);
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    int pf[GS_ROWS_MAX];
    GS_R pv[GS_ROWS_MAX];
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            pf[k] = (heads >> (k * C)) & ((1u << C) - 1u) ? 1 : 0;
            pv[k] = id;
#pragma unroll
            for (int c = 0; c < C; ++c)
                pv[k] = (heads >> (k * C + c)) & 1u ? x[k * C + c]
                                                    : GS_FN(combine)(op, pv[k], x[k * C + c]);
        }
    }
    GS_FN(block_scan)(op, out_t, R, seg, pf, pv, mine->ef, mine->ev, tot->af, tot->av, sm);
    mine->heads = heads;
    tot->tf = tot->af[0];
    tot->tv = tot->av[0];
#pragma unroll
    for (int k = 1; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            tot->tv = seg && tot->af[k] ? tot->av[k] : GS_FN(combine)(op, tot->tv, tot->av[k]);
            tot->tf |= tot->af[k];
        }
    }
}

/* The exclusive prefix of tile 0: the running value of the scan this one continues (its
 * carry_in: two words, the carry's high and low parts), else seed's (float add: -0.0, so that
 * the prefixes of -0.0 values alone stay -0.0). */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(carry_before)(gs_op op, gs_dtype out_t, const gs_scan_kparams *p)
{
    if (p->carry_in == NULL)
        return GS_FN(carry_of)(GS_FN(seed)(op, out_t));
    const unsigned long long *w = (const unsigned long long *)p->carry_in;
    GS_FN(gs_carry) c;
    c.hi = GS_FN(of_bits)(w[0]);
    c.lo = GS_FN(of_bits)(w[1]);
    return c;
}

/* The last tile leaves the scan's running value (its inclusive prefix) in carry_out. */
static __device__ __forceinline__ void GS_FN(carry_after)(const gs_scan_kparams *p, int64_t tile,
                                                          GS_FN(gs_carry) c)
{
    if (p->carry_out != NULL && threadIdx.x == 0 && tile == gs_scan_tiles(p->n) - 1) {
        unsigned long long *w = (unsigned long long *)p->carry_out;
        w[0] = GS_FN(bits_of)(c.hi);
        w[1] = GS_FN(bits_of)(c.lo);
    }
}

/* A tile publishes its aggregate as soon as it has it (tile 0: its inclusive prefix, the
 * carry-in combined for an exact operator; a rounding one's look-back starts from the carry). */
static __device__ __forceinline__ void GS_FN(publish_aggregate)(gs_op op, gs_dtype out_t,
                                                                const gs_scan_kparams *p,
                                                                int64_t tile,
                                                                const GS_FN(gs_tile_totals) *t)
{
    if (threadIdx.x != 0)
        return;
    GS_R v = t->tv;
    if (tile == 0 && p->carry_in != NULL && !t->tf && GS_FN(exact)(op))
        v = GS_FN(combine)(op, GS_FN(carry_before)(op, out_t, p).hi, v);
    GS_FN(publish)(p->ts, tile, tile == 0 ? GS_ST_PREFIX : GS_ST_AGGREGATE, t->tf, v);
}

/* Look-back phase: the tile's exclusive prefix into sm->excl_*, published for the tiles after
 * it (an exact operator's inclusive prefix; an anchor's exclusive one).  Ends with a
 * barrier. */
static __device__ __forceinline__ void GS_FN(learn_prefix)(gs_op op, gs_dtype out_t, int seg,
                                                           const gs_scan_kparams *p, int64_t tile,
                                                           const GS_FN(gs_tile_totals) *t,
                                                           GS_FN(gs_scan_smem) *sm)
{
    const GS_R id = GS_FN(identity)(op, out_t);
#if GS_R_KIND == 'f'
    if (!GS_FN(exact)(op)) {
        GS_FN(gs_part) excl;
        excl = GS_FN(look_back_anchored)(op, out_t, seg, p->ts, tile,
                                         GS_FN(carry_before)(op, out_t, p), &sm->lookback);
        if (threadIdx.x == 0) {
            if (GS_FN(part_double)(op)) {
                sm->excl_d = gs_f32_prefix(excl.d);
            } else {
                sm->excl_hi = excl.c.hi;
                sm->excl_lo = excl.c.lo;
            }
        }
        __syncthreads();
        return;
    }
#endif
    if (tile == 0) {
        if (threadIdx.x == 0) {
            const GS_FN(gs_carry) first = GS_FN(carry_before)(op, out_t, p);
            sm->excl_hi = first.hi;
            sm->excl_lo = first.lo;
        }
    } else if (threadIdx.x < GS_WARP) {
        GS_FN(gs_carry) excl = GS_FN(look_back)(op, out_t, p->ts, tile);
        if (threadIdx.x == 0) {
            GS_FN(publish)
            (p->ts, tile, GS_ST_PREFIX, t->tf, t->tf ? t->tv : GS_FN(combine)(op, excl.hi, t->tv));
            sm->excl_hi = excl.hi;
            sm->excl_lo = excl.lo;
        }
    }
    __syncthreads();
}

/* The scan's values y[0, C) of this thread's piece in row k (x: its C values) from the row's
 * prefix: a carry, or for float32 add a double (row_d: one DADD per row); the prefix then moves
 * past the row.  A running value since the piece's start or its last head. */
static __device__ __forceinline__ void GS_FN(emit_piece)(
    gs_op op, gs_dtype in_t, gs_dtype out_t, int seg, int exclusive, int k, const GS_R *x,
    const GS_FN(gs_tile_mine) *mine, const GS_FN(gs_tile_totals) *t, GS_FN(gs_carry) *row_carry,
    double *row_d, GS_R *y)
{
    const GS_R id = GS_FN(identity)(op, out_t);
    const int C = GS_PIECE(in_t, out_t);
    const unsigned heads = seg ? mine->heads : 0u;
    GS_R base = mine->ev[k];
    if (!(seg && mine->ef[k]))
        base = GS_FN(part_double)(op) ? (GS_R)(*row_d + (double)base)
                                      : GS_FN(carry_apply)(op, *row_carry, base);
    if (GS_FN(exact)(op)) {
        /* Any grouping gives the same bits: one running value from the piece's prefix, one
         * operation per value. */
        GS_R run = base;
#pragma unroll
        for (int c = 0; c < C; ++c) {
            if ((heads >> (k * C + c)) & 1u)
                run = id;
            if (exclusive)
                y[c] = run;
            run = GS_FN(combine)(op, run, x[c]);
            if (!exclusive)
                y[c] = run;
        }
    } else {
        /* A rounding operator: the piece's own running value, then the prefix combined with it
         * (the grouping of every scan of this driver, segmented or not).  Float add's inclusive
         * values start from seed's -0.0 (a slice's sum from its first value, as np.cumsum: -0.0
         * for -0.0 values alone), its exclusive ones from the identity's +0.0 (every exact zero
         * +0.0, the empty sum at a head included); either way only a zero's sign differs. */
        const GS_R start = exclusive ? id : GS_FN(seed)(op, out_t);
        GS_R run = start;
#pragma unroll
        for (int c = 0; c < C; ++c) {
            if ((heads >> (k * C + c)) & 1u) {
                base = start;
                run = start;
            }
            /* one combine with the prefix a value, of the running value before or after it
             * (exclusive is a run-time flag: two combines and a select otherwise) */
            const GS_R before = run;
            run = GS_FN(combine)(op, run, x[c]);
            y[c] = GS_FN(combine)(op, base, exclusive ? before : run);
        }
    }
    if (GS_FN(part_double)(op))
        *row_d = seg && t->af[k] ? (double)t->av[k] : gs_f32_prefix(*row_d + (double)t->av[k]);
    else
        *row_carry = seg && t->af[k]
                         ? GS_FN(carry_of)(t->av[k])
                         : GS_FN(carry_combine)(op, *row_carry, GS_FN(carry_of)(t->av[k]));
}

/* Emit phase: scan each piece from its prefix (the tile's carry, the rows before, the threads
 * before in its row) and store it. */
static __device__ __forceinline__ void GS_FN(emit)(gs_op op, gs_dtype in_t, gs_dtype out_t, int seg,
                                                   const gs_scan_kparams *p, int64_t tile,
                                                   const GS_R *x, const GS_FN(gs_tile_mine) *mine,
                                                   const GS_FN(gs_tile_totals) *t,
                                                   const GS_FN(gs_scan_smem) *sm)
{
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int64_t row_stride = (int64_t)GS_NT * C;
    const int64_t first = tile * GS_NV + (int64_t)threadIdx.x * C;
    const int whole = tile < p->n / GS_NV;
    /* The prefix of each row: a carry, or for float32 add a double (one DADD per row). */
    GS_FN(gs_carry) row_carry;
    row_carry.hi = sm->excl_hi;
    row_carry.lo = sm->excl_lo;
    double row_d = sm->excl_d;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            GS_R y[16];
            GS_FN(emit_piece)
            (op, in_t, out_t, seg, p->exclusive, k, x + k * C, mine, t, &row_carry, &row_d, y);
            if (whole && p->vec_out) {
                uint32_t w[4];
#pragma unroll
                for (int c = 0; c < C; ++c)
                    gs_word_put(out_t, w, c, GS_FN(to_bits)(out_t, y[c]));
                gs_store_piece(out_t, C, p->out, first + k * row_stride, w);
            } else {
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const int64_t g = first + k * row_stride + c;
                    if (g < p->n)
                        gs_store_bits(out_t, p->out, g, GS_FN(to_bits)(out_t, y[c]));
                }
            }
        }
    }
    /* The running value after the tile's last row: the scan's, after its last tile. */
    if (GS_FN(part_double)(op)) {
        GS_FN(gs_part) last;
        last.d = row_d;
        row_carry = GS_FN(part_carry)(op, last);
    }
    GS_FN(carry_after)(p, tile, row_carry);
}

/* One tile per block, in launch order. */
static __device__ __forceinline__ void GS_FN(scan_tiles)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                         int seg, const gs_scan_kparams *p)
{
    __shared__ GS_FN(gs_scan_smem) sm;
    /* Tiles in launch order for the look-back; the block that takes the last one puts the
     * counter back to zero for the next scan over this scratch (every block has taken its). */
    if (threadIdx.x == 0)
        sm.tiles[0] = gs_take_tile(p->ts.counter, gridDim.x);
    __syncthreads();
    const int64_t tile = sm.tiles[0];
    GS_R x[GS_VT];
    GS_FN(gs_tile_mine) mine;
    GS_FN(gs_tile_totals) tot;
    GS_FN(gather)(op, in_t, out_t, p, tile, NULL, x);
    GS_FN(aggregate)
    (op, in_t, out_t, seg, x, seg ? GS_FN(tile_heads)(in_t, out_t, p, tile) : 0u, &mine, &tot,
     &sm.block);
    GS_FN(publish_aggregate)(op, out_t, p, tile, &tot);
    GS_FN(learn_prefix)(op, out_t, seg, p, tile, &tot, &sm);
    GS_FN(emit)(op, in_t, out_t, seg, p, tile, x, &mine, &tot, &sm);
}

/* The lookahead driver (see the file's header); its dynamic shared memory (gs_dynamic_smem)
 * holds three tiles of input (3 * GS_NV * sizeof(input)). */
static __device__ __forceinline__ void GS_FN(scan_tiles_ahead)(gs_op op, gs_dtype in_t,
                                                               gs_dtype out_t, int seg,
                                                               const gs_scan_kparams *p)
{
    __shared__ GS_FN(gs_scan_smem) sm;
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int64_t ntiles = gs_scan_tiles(p->n);
    const int64_t whole_tiles = p->n / GS_NV;
    const size_t buf_bytes = (size_t)GS_NV * gs_dtype_size(in_t);
    const int can_prefetch = p->vec_in; /* whole 16-byte copies (prefetch) */
#define GS_BUF(i) ((void *)((char *)gs_dynamic_smem + (size_t)(i)*buf_bytes))

    gs_ahead_tiles t;
    if (!gs_ahead_start(p->ts.counter, (unsigned)ntiles + gridDim.x, ntiles, sm.tiles, &t))
        return;
    t.pre_c = can_prefetch && t.cur < whole_tiles;
    if (t.pre_c)
        GS_FN(prefetch)(in_t, C, R, p->in, t.cur, GS_BUF(t.bc));
    /* A segmented scan's flags are read one iteration ahead too, into registers (cp.async
     * would need shared memory that a fourth block does not leave), off the aggregate's path. */
    uint32_t fl_c[GS_VT / 4], fl_n[GS_VT / 4];
    int flc = seg && GS_FN(flag_pieces)(in_t, out_t, p, t.cur);
    if (flc)
        GS_FN(flags_load)(in_t, out_t, p, t.cur, fl_c);
    GS_FN(gs_tile_mine) mine_p;

    for (;;) {
        /* ---- The next tile streams in while this iteration works. ---- */
        const int pre_n = can_prefetch && t.next < whole_tiles;
        const unsigned after =
            gs_ahead_take(p->ts.counter, (unsigned)ntiles + gridDim.x, ntiles, &t);
        if (t.pre_c && GS_FN(linear_copy)(in_t, C))
            __syncthreads(); /* cur's copies, done in every thread, seen by all */
        if (pre_n)
            GS_FN(prefetch)(in_t, C, R, p->in, t.next, GS_BUF(t.bn));
        /* The tile a grid's width after next, asked of L2 (prefetch.global.L2: a hint, no
         * register or shared memory held), a 128-byte line a thread (a tile has at most
         * GS_NT: GS_NV values of at most 8 bytes): each tile by one block. Inputs of 4 and 8
         * bytes (a narrower one's tiles are small, and its kernels short of registers). */
        if (gs_dtype_size(in_t) >= 4 && can_prefetch &&
            p->n >= (int64_t)GS_SCAN_L2_ITERS * GS_NV * gridDim.x &&
            t.next >= (int64_t)GS_SCAN_L2_FROM * gridDim.x && t.next + gridDim.x < whole_tiles &&
            threadIdx.x * 128 < buf_bytes)
            asm volatile(
                "prefetch.global.L2 [%0];"
                :
                : "l"((const char *)p->in + (t.next + gridDim.x) * buf_bytes + threadIdx.x * 128));
        const int fln = seg && t.next < ntiles && GS_FN(flag_pieces)(in_t, out_t, p, t.next);
        if (fln)
            GS_FN(flags_load)(in_t, out_t, p, t.next, fl_n);

        /* ---- Aggregate phase of cur: its aggregate goes out before we wait on prev. ---- */
        GS_FN(gs_tile_mine) mine_c;
        {
            GS_R x[GS_VT];
            GS_FN(gs_tile_totals) tot;
            GS_FN(gather)(op, in_t, out_t, p, t.cur, t.pre_c ? GS_BUF(t.bc) : NULL, x);
            const unsigned heads = !seg  ? 0u
                                   : flc ? GS_FN(flags_heads)(p, t.cur, fl_c)
                                         : GS_FN(tile_heads)(in_t, out_t, p, t.cur);
            GS_FN(aggregate)(op, in_t, out_t, seg, x, heads, &mine_c, &tot, &sm.block);
            GS_FN(publish_aggregate)(op, out_t, p, t.cur, &tot);
            if (threadIdx.x == 0) {
                sm.totals[t.bc] = tot;
                sm.tiles[2] = after;
            }
        }

        /* ---- Look-back and emit phases of prev. ---- */
        if (t.prev >= 0) {
            GS_FN(learn_prefix)(op, out_t, seg, p, t.prev, &sm.totals[t.bp], &sm);
            GS_R x[GS_VT];
            GS_FN(gather)(op, in_t, out_t, p, t.prev, t.pre_p ? GS_BUF(t.bp) : NULL, x);
            GS_FN(emit)(op, in_t, out_t, seg, p, t.prev, x, &mine_p, &sm.totals[t.bp], &sm);
        }
        __syncthreads(); /* sm.tiles[2] is read below; totals[bp] is rewritten later */

        /* ---- Rotate: cur becomes prev, next becomes cur. ---- */
        mine_p = mine_c;
        flc = fln;
#pragma unroll
        for (int i = 0; i < GS_VT / 4; ++i)
            fl_c[i] = fl_n[i];
        gs_ahead_rotate(&t, pre_n, sm.tiles[2]);
        if (t.cur >= ntiles)
            break;
    }

    /* ---- The last tile's look-back and emit. ---- */
    GS_FN(learn_prefix)(op, out_t, seg, p, t.prev, &sm.totals[t.bp], &sm);
    GS_R x[GS_VT];
    GS_FN(gather)(op, in_t, out_t, p, t.prev, t.pre_p ? GS_BUF(t.bp) : NULL, x);
    GS_FN(emit)(op, in_t, out_t, seg, p, t.prev, x, &mine_p, &sm.totals[t.bp], &sm);
#undef GS_BUF
}
