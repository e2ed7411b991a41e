/*
 * agent/reduce.cuh - a block's part in a reduction: it reduces work items (one chunk of
 * p->chunk_len values of one row, gs_reduce_chunk_len) in a grid-stride loop.  Included once per
 * register type after device/lookback.cuh.
 *
 * Each thread accumulates 16-byte pieces of the chunk, four loads in flight, consecutive
 * threads on consecutive pieces; the block combines the threads in a fixed tree.  A row of one
 * chunk is written at once; otherwise each chunk leaves a partial (one 8-byte word: a four-byte
 * carry's hi and lo packed, float64 add's lo in a second word), and the chunk of the row to
 * finish last (a per-row counter) combines the row's partials with the whole block (thread t
 * the partials t, t + NT, ... in order, then the same tree), and sets the counter back to zero
 * for the next reduction on the scratch.  While a block combines one item (its tree, the
 * partial's fence and count), the first four pieces of its next item are already on their way
 * into shared memory (cp.async), so that the device's loads do not stop at every block's tail.
 *
 * No floating-point atomics anywhere: the grouping depends on the row length only, so float
 * results have the same bits on every run and every device.  Float add accumulates each round
 * of a thread's values (16 at most) with TwoSum's errors gathered apart (Sum2, see accumulate)
 * and combines rounds, threads and chunks in double-word carries: within the contract's bound
 * at any length, in practice correctly rounded.
 */

typedef struct GS_FN(gs_reduce_smem) {
    uint4 next[4][GS_NT]; /* the next item's first four pieces, thread t's in [u][t] */
    GS_R hi[GS_NWARPS];
    GS_R lo[GS_NWARPS];
    int last;
} GS_FN(gs_reduce_smem);

/* Work item `item` (one chunk of one row): where its values start, how many there are
 * (chunk_len, or fewer in a row's last chunk), and how many of them whole 16-byte steps of the
 * block cover (none when the start is not 16-byte aligned: the item is then read value by
 * value).  Counts within an item fit an int (the launcher checks chunk_len). */
typedef struct GS_FN(gs_reduce_item) {
    const char *src;
    int count;
    int whole;
} GS_FN(gs_reduce_item);

static __device__ __forceinline__ GS_FN(gs_reduce_item)
    GS_FN(reduce_item)(const gs_reduce_kparams *p, int64_t chunks, int64_t item, int size, int step)
{
    GS_FN(gs_reduce_item) it;
    const int64_t row = item / chunks, chunk = item % chunks;
    const int64_t rest = p->row_len - chunk * p->chunk_len;
    it.src = (const char *)p->in + (row * p->row_len + chunk * p->chunk_len) * size;
    it.count = (int)(rest < p->chunk_len ? rest : p->chunk_len);
    it.whole = ((uintptr_t)it.src % 16) != 0 ? 0 : it.count / step * step;
    return it;
}

/* The block's carries combined in a fixed tree; the total is valid in thread 0.  The caller
 * synchronises before reusing the shared memory. */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(block_reduce)(gs_op op, gs_dtype t, GS_FN(gs_carry) c, GS_FN(gs_reduce_smem) *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;
    GS_FN(warp_reduce)(op, &c);
    if (lane == 0) {
        sm->hi[warp] = c.hi;
        sm->lo[warp] = c.lo;
    }
    __syncthreads();
    if (warp == 0) {
        c = GS_FN(carry_of)(GS_FN(identity)(op, t));
        if (lane < GS_NWARPS) {
            c.hi = sm->hi[lane];
            c.lo = sm->lo[lane];
        }
        GS_FN(warp_reduce)(op, &c);
    }
    return c;
}

/* One value accumulated into a run of at most one round's values (accumulate_round).  Float
 * add keeps hi the plain running sum and gathers TwoSum's exact rounding errors in lo: the chain
 * from one value to the next is one add, not TwoSum's six (Ogita, Rump and Oishi's Sum2: error
 * <= eps |sum| + (n eps)^2 sum|x| for a run of n values, n <= 16 here).  Once hi is inf or NaN,
 * lo may be NaN: carry_combine drops it when the run is folded. */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(accumulate)(gs_op op, GS_FN(gs_carry) acc, GS_R x)
{
    if (GS_FN(compensated)(op)) {
        const GS_R s = acc.hi + x;
        const GS_R t = s - acc.hi;
        acc.lo += (acc.hi - (s - t)) + (x - t);
        acc.hi = s;
        return acc;
    }
    return GS_FN(carry_combine)(op, acc, GS_FN(carry_of)(x));
}

/* Words of a chunk's partial in the scratch: a four-byte carry packs hi and lo into one, an
 * eight-byte one needs a second word only for float add's lo. */
static __device__ __forceinline__ int GS_FN(part_words)(gs_op op)
{
    return GS_R_WIDE && GS_FN(compensated)(op) ? 2 : 1;
}

/* The partial whose part_words words start at w. */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(part_of)(gs_op op, const unsigned long long *w)
{
    GS_FN(gs_carry) c = GS_FN(unpack_carry)(w[0]);
    if (GS_FN(part_words)(op) == 2)
        c.lo = GS_FN(of_bits)(w[1]);
    return c;
}

/* A 16-byte piece as the four words accumulate_round reads. */
static __device__ __forceinline__ void GS_FN(piece_words)(uint4 q, uint32_t *w)
{
    w[0] = q.x;
    w[1] = q.y;
    w[2] = q.z;
    w[3] = q.w;
}

/* The 16-byte piece of an item at value offset `off`, read as a stream (ld.global.cs: evict
 * first; every byte is read once): at 2^28 values 1-2% faster than a plain load (an H200,
 * results/nvidia-h200-2026-11-27-reduce-staged.txt). */
static __device__ __forceinline__ void GS_FN(reduce_load_piece)(const char *src, int off, int size,
                                                                uint32_t *w)
{
    GS_FN(piece_words)(__ldcs((const uint4 *)(src + (int64_t)off * size)), w);
}

/* The values of `pieces` 16-byte pieces (reduce_load_piece's words) accumulated into a thread's
 * carry in order: for float add as one Sum2 run (at most 16 values) folded into the carry with
 * TwoSum, so that the run's second-order error stays negligible at any row length; for the
 * other operators straight into the carry. */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(accumulate_round)(gs_op op, gs_dtype in_t, GS_FN(gs_carry) acc, uint32_t (*w)[4],
                            int pieces)
{
    const int C = 16 / (int)gs_dtype_size(in_t);
    GS_FN(gs_carry) run = GS_FN(compensated)(op) ? GS_FN(carry_of)((GS_R)0) : acc;
#pragma unroll
    for (int u = 0; u < 4; ++u)
        if (u < pieces)
#pragma unroll
            for (int c = 0; c < 16; ++c)
                if (c < C)
                    run = GS_FN(accumulate)(op, run,
                                            GS_FN(from_bits)(in_t, gs_word_elem(in_t, w[u], c)));
    return GS_FN(compensated)(op) ? GS_FN(carry_combine)(op, acc, run) : run;
}

static __device__ __forceinline__ void GS_FN(reduce_items)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                           const gs_reduce_kparams *p)
{
    __shared__ GS_FN(gs_reduce_smem) sm;
    const GS_R id = GS_FN(identity)(op, out_t);
    const int size = (int)gs_dtype_size(in_t);
    const int C = 16 / size; /* values per 16-byte piece */
    const int step = GS_NT * C;
    const int64_t chunks = (p->row_len + p->chunk_len - 1) / p->chunk_len;
    const int64_t items = p->rows * chunks;
    const int W = GS_FN(part_words)(op);

    int staged = 0; /* this item's first four pieces are in sm.next (cp.async, this thread's) */
    GS_FN(gs_reduce_item) it = GS_FN(reduce_item)(p, chunks, blockIdx.x, size, step);

    for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        const int64_t row = item / chunks;
        GS_FN(gs_carry) acc = GS_FN(carry_of)(id);

        /* ---- Whole steps: 16-byte pieces, four loads in flight per thread; the first four
         * come from shared memory when the previous item staged them. ---- */
        int off = (int)threadIdx.x * C;
        if (staged) {
            uint32_t w[4][4];
            gs_cp_async_wait();
#pragma unroll
            for (int u = 0; u < 4; ++u)
                GS_FN(piece_words)(sm.next[u][threadIdx.x], w[u]);
            acc = GS_FN(accumulate_round)(op, in_t, acc, w, 4);
            off += 4 * step;
        }
        for (; off + 3 * step < it.whole; off += 4 * step) {
            uint32_t w[4][4];
#pragma unroll
            for (int u = 0; u < 4; ++u)
                GS_FN(reduce_load_piece)(it.src, off + u * step, size, w[u]);
            acc = GS_FN(accumulate_round)(op, in_t, acc, w, 4);
        }
        for (; off < it.whole; off += step) {
            uint32_t w[1][4];
            GS_FN(reduce_load_piece)(it.src, off, size, w[0]);
            acc = GS_FN(accumulate_round)(op, in_t, acc, w, 1);
        }
        /* ---- The rest (or an unaligned row) value by value, straight into the carry. ---- */
        for (int i = it.whole + (int)threadIdx.x; i < it.count; i += GS_NT)
            acc = GS_FN(carry_combine)(
                op, acc, GS_FN(carry_of)(GS_FN(from_bits)(in_t, gs_load_bits(in_t, it.src, i))));

        /* ---- The next item's first four pieces staged while this block combines (the
         * block tree, the partial's fence and count below), so that its loads are in flight
         * through them. ---- */
        staged = 0;
        if (item + gridDim.x < items) {
            it = GS_FN(reduce_item)(p, chunks, item + gridDim.x, size, step);
            if (it.whole >= 4 * step) {
                const char *at = it.src + (int)threadIdx.x * 16;
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    gs_cp_async(&sm.next[u][threadIdx.x], at + u * step * size, 16);
                staged = 1;
            }
        }

        /* ---- The chunk's total; the row's result, or the chunk's partial. ---- */
        acc = GS_FN(block_reduce)(op, out_t, acc, &sm);
        if (threadIdx.x == 0) {
            if (chunks == 1) {
                gs_store_bits(out_t, p->out, row,
                              GS_FN(to_bits)(out_t, GS_FN(carry_apply)(op, acc, id)));
            } else {
                unsigned long long *slot = p->partials + W * item;
                __stcg(slot, GS_FN(pack_carry)(acc)); /* hi (and a four-byte lo) */
                if (W == 2)
                    __stcg(slot + 1, GS_FN(bits_of)(acc.lo));
                __threadfence(); /* the partial is visible before the count says so */
                sm.last = atomicAdd(p->counters + row, 1u) == (unsigned)(chunks - 1);
            }
        }
        __syncthreads();

        /* ---- The last chunk of a row to finish combines the row's partials and resets
         * the row's counter (every other chunk of the row has counted already). ---- */
        if (chunks > 1 && sm.last) { /* the same for the whole block */
            __threadfence();
            GS_FN(gs_carry) c = GS_FN(carry_of)(id);
            const unsigned long long *row_parts = p->partials + W * row * chunks;
            const int P = 8 / W; /* partials a thread has in flight: eight words */
            int64_t k = threadIdx.x;
            for (; k + (P - 1) * GS_NT < chunks; k += P * GS_NT) {
                unsigned long long w[8];
#pragma unroll
                for (int u = 0; u < 8; ++u)
                    w[u] = __ldcg(row_parts + W * (k + (u / W) * GS_NT) + u % W);
#pragma unroll
                for (int u = 0; u < 8; ++u)
                    if (u < P)
                        c = GS_FN(carry_combine)(op, c, GS_FN(part_of)(op, w + W * u));
            }
            for (; k < chunks; k += GS_NT) {
                unsigned long long w[2];
                w[0] = __ldcg(row_parts + W * k);
                if (W == 2)
                    w[1] = __ldcg(row_parts + W * k + 1);
                c = GS_FN(carry_combine)(op, c, GS_FN(part_of)(op, w));
            }
            c = GS_FN(block_reduce)(op, out_t, c, &sm);
            if (threadIdx.x == 0) {
                gs_store_bits(out_t, p->out, row,
                              GS_FN(to_bits)(out_t, GS_FN(carry_apply)(op, c, id)));
                p->counters[row] = 0u;
            }
        }
        __syncthreads(); /* shared memory is reused by the next item */
    }
}
