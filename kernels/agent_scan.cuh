/*
 * agent_scan.cuh - a block's part in the single-pass scan.  Included once per register type
 * after gs_lookback.cuh.
 *
 * The grid is persistent (as many blocks as fit on the device at once).  Each block takes
 * tiles of GS_NV values in launch order from an atomic counter and, for each: reads it, scans
 * it in registers and shared memory, learns its exclusive prefix by decoupled look-back and
 * writes it out.  While it does so, the block's next tile streams into shared memory with
 * asynchronous copies, so the memory system stays busy while the block waits in its look-back.
 *
 * Layout: a tile is GS_VT / C rows of GS_NT * C consecutive values, C the values in 16 bytes
 * of the wider of the input and output dtypes.  Thread t holds values t*C .. t*C+C-1 of every
 * row, so each load and store instruction of a warp covers one contiguous span with whole
 * sectors.  The threads scan their rows' partials across the block all at once (the same two
 * barriers as one scan), and the rows' totals chain the rows together.
 *
 * Float add accuracy: a value's path is a sequential sum of at most C values, a tree over the
 * threads of its row, a chain over the rows of its tile (at most GS_VT/2) and a carry from the
 * earlier tiles kept as a double-word number, so the error grows with log2 of the tile size and
 * not with the number of tiles.
 */

typedef struct GS_FN(gs_scan_smem) {
    uint4 next[GS_NV * 8 / 16]; /* the next tile's input (up to 8-byte values) */
    GS_FN(gs_block_scan_smem) block;
    unsigned after; /* the tile after the next one */
    unsigned first[2];
    GS_R excl_hi;
    GS_R excl_lo;
} GS_FN(gs_scan_smem);

/* Start copying this thread's pieces of a whole tile into shared memory. */
static __device__ __forceinline__ void GS_FN(prefetch)(gs_dtype in_t, int c, int rows,
                                                       const void *in, int64_t tile, void *buf)
{
    const int64_t size = (int64_t)gs_dtype_size(in_t);
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < rows) {
            const int64_t at = (int64_t)k * GS_NT * c + (int64_t)threadIdx.x * c;
            gs_cp_async((char *)buf + at * size, (const char *)in + (tile * GS_NV + at) * size,
                        c * (int)size);
        }
    }
}

static __device__ __forceinline__ void GS_FN(scan_tiles)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                         const gs_scan_kparams *p)
{
    __shared__ GS_FN(gs_scan_smem) sm;
    const GS_R id = GS_FN(identity)(op, out_t);
    const int C = GS_PIECE(in_t, out_t);
    const int R = GS_VT / C;
    const int64_t row_stride = (int64_t)GS_NT * C;
    const int64_t ntiles = gs_scan_tiles(p->n);
    const int64_t whole_tiles = p->n / GS_NV;
    /* Pieces of the input smaller than 4 bytes (int8 widened to 64 bits) are read directly. */
    const int can_prefetch = GS_PERSISTENT && p->vec_in && C * (int)gs_dtype_size(in_t) >= 4;

    /* ---- The first tile of this block and, for a persistent grid, the next one, in launch
     * order (a tile index past the end means none). ---- */
    if (threadIdx.x == 0) {
        sm.first[0] = atomicAdd(p->ts.counter, 1u);
        sm.first[1] = GS_PERSISTENT ? atomicAdd(p->ts.counter, 1u) : 0xffffffffu;
    }
    __syncthreads();
    int64_t tile = sm.first[0], next = sm.first[1];
    if (tile >= ntiles)
        return;
    int prefetched = can_prefetch && tile < whole_tiles;
    if (prefetched)
        GS_FN(prefetch)(in_t, C, R, p->in, tile, sm.next);

    for (;;) {
        const int64_t tile_base = tile * GS_NV;
        const int whole = tile < whole_tiles;
        const int64_t first = tile_base + (int64_t)threadIdx.x * C; /* row 0 of this thread */
        unsigned after = 0xffffffffu;
        if (GS_PERSISTENT && threadIdx.x == 0)
            after = atomicAdd(p->ts.counter, 1u); /* used at the end: its latency is hidden */

        /* ---- Load: one C-value piece per row, from the prefetch or from memory. ---- */
        GS_R x[GS_VT];
        if (prefetched || (whole && p->vec_in)) {
            if (prefetched)
                gs_cp_async_wait();
#pragma unroll
            for (int k = 0; k < GS_ROWS_MAX; ++k) {
                if (k < R) {
                    uint32_t w[4];
                    if (prefetched)
                        gs_load_piece(in_t, C, sm.next, k * row_stride + threadIdx.x * C, w);
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

        /* ---- Segment heads, one bit per value held (a row start: one division per piece). */
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
        } else if (p->flags != NULL) {
            /* Flags at their own width: whole pieces of an aligned flag array in one access
             * (a uint8 flag costs one byte per value). */
            const int fbytes = C * (int)gs_dtype_size(p->flag_type);
            const int vec_flags = whole && p->vec_flags && fbytes >= 4 && fbytes <= 16;
#pragma unroll
            for (int k = 0; k < GS_ROWS_MAX; ++k) {
                if (k < R) {
                    uint32_t fw[4];
                    if (vec_flags)
                        gs_load_piece(p->flag_type, C, p->flags, first + k * row_stride, fw);
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        const int64_t g = first + k * row_stride + c;
                        const uint64_t fb =
                            vec_flags ? gs_word_elem(p->flag_type, fw, c)
                                      : (g < p->n ? gs_load_bits(p->flag_type, p->flags, g) : 0);
                        if (g < p->n && (g == 0 || gs_flag_set(p->flag_type, fb)))
                            heads |= 1u << (k * C + c);
                    }
                }
            }
        }

        /* ---- Reduce each piece: its value since its last head, and whether it has one. ---- */
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

        /* ---- Scan the pieces of every row across the block at once. ---- */
        int ef[GS_ROWS_MAX], af[GS_ROWS_MAX];
        GS_R ev[GS_ROWS_MAX], av[GS_ROWS_MAX];
        GS_FN(block_scan)(op, out_t, R, pf, pv, ef, ev, af, av, &sm.block);

        /* ---- The tile's aggregate: its rows in order. ---- */
        int tf = af[0];
        GS_R tv = av[0];
#pragma unroll
        for (int k = 1; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                tv = af[k] ? av[k] : GS_FN(combine)(op, tv, av[k]);
                tf |= af[k];
            }
        }
        /* ---- Start streaming in the next tile (this thread has consumed its pieces). ---- */
        prefetched = can_prefetch && next < whole_tiles;
        if (prefetched)
            GS_FN(prefetch)(in_t, C, R, p->in, next, sm.next);

            /* ---- Publish the aggregate, look back for the tile's prefix, publish it. ---- */
#ifdef GS_NO_LOOKBACK /* tuning only: the data movement alone (wrong results) */
        if (threadIdx.x == 0) {
            sm.excl_hi = id;
            sm.excl_lo = (GS_R)0;
        }
#else
        if (!GS_FN(exact)(op)) {
            if (threadIdx.x < GS_WARP) {
                GS_FN(gs_carry) excl = GS_FN(look_back_tree)(op, out_t, p->ts, tile, tf, tv);
                if (threadIdx.x == 0) {
                    sm.excl_hi = excl.hi;
                    sm.excl_lo = excl.lo;
                }
            }
        } else {
            if (threadIdx.x == 0)
                GS_FN(publish)(p->ts, tile, tile == 0 ? GS_ST_PREFIX : GS_ST_AGGREGATE, tf, tv);
            if (tile == 0) {
                if (threadIdx.x == 0) {
                    sm.excl_hi = id;
                    sm.excl_lo = (GS_R)0;
                }
            } else if (threadIdx.x < GS_WARP) {
                GS_FN(gs_carry) excl = GS_FN(look_back)(op, out_t, p->ts, tile);
                if (threadIdx.x == 0) {
                    GS_FN(publish)
                    (p->ts, tile, GS_ST_PREFIX, tf, tf ? tv : GS_FN(combine)(op, excl.hi, tv));
                    sm.excl_hi = excl.hi;
                    sm.excl_lo = excl.lo;
                }
            }
        }
#endif
        if (threadIdx.x == 0)
            sm.after = after;
        __syncthreads();

        /* ---- Scan each piece from its prefix: the tile's carry, the rows before, the
         * threads before in its row; a running value since the piece start or its last head. */
        GS_FN(gs_carry) row_carry;
        row_carry.hi = sm.excl_hi;
        row_carry.lo = sm.excl_lo;
        GS_R y[GS_VT];
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                GS_R base = ef[k] ? ev[k] : GS_FN(carry_apply)(op, row_carry, ev[k]);
                GS_R run = id;
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    if ((heads >> (k * C + c)) & 1u) {
                        base = id;
                        run = id;
                    }
                    if (p->exclusive)
                        y[k * C + c] = GS_FN(combine)(op, base, run);
                    run = GS_FN(combine)(op, run, x[k * C + c]);
                    if (!p->exclusive)
                        y[k * C + c] = GS_FN(combine)(op, base, run);
                }
                row_carry = af[k] ? GS_FN(carry_of)(av[k])
                                  : GS_FN(carry_combine)(op, row_carry, GS_FN(carry_of)(av[k]));
            }
        }

        /* ---- Store: one piece per row. ---- */
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < R) {
                if (whole && p->vec_out) {
                    uint32_t w[4];
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        gs_word_put(out_t, w, c, GS_FN(to_bits)(out_t, y[k * C + c]));
                    gs_store_piece(out_t, C, p->out, first + k * row_stride, w);
                } else {
#pragma unroll
                    for (int c = 0; c < C; ++c) {
                        const int64_t g = first + k * row_stride + c;
                        if (g < p->n)
                            gs_store_bits(out_t, p->out, g, GS_FN(to_bits)(out_t, y[k * C + c]));
                    }
                }
            }
        }

        tile = next;
        next = sm.after;
        if (tile >= ntiles)
            break;
    }
}
