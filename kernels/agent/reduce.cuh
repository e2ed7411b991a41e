/*
 * agent/reduce.cuh - a block's part in a reduction: it reduces work items (one chunk of
 * p->chunk_len values of one row, gs_reduce_chunk_len).  Included once per register type after
 * device/lookback.cuh.
 * Each thread accumulates 16-byte pieces of the chunk, four loads in flight, consecutive
 * threads on consecutive pieces; the block combines the threads in a fixed tree.  A row of one
 * chunk is written at once; otherwise each chunk leaves a partial in the scratch, and the
 * partials of a row are combined in chunk order, by one of two launch shapes (dispatch/reduce.cu
 * picks, a kernel each):
 *  - reduce_items, one launch of at most the resident blocks, a grid-stride loop over the items:
 *    the chunk of the row to finish last (a per-row counter, after a fence) combines the row's
 *    partials with the whole block and sets the counter back to zero for the next reduction on
 *    the scratch. While a block combines one item, the first four pieces of its next item are
 *    already on their way into shared memory (cp.async), so the loads do not stop at its tail.
 *  - reduce_parts then reduce_combine, two launches for more items than resident blocks: a block
 *    per item (the hardware refills the multiprocessors as blocks finish), each leaving its
 *    partial with no fence, count or other work at its tail; then a block per row combines the
 *    partials, launched as the first one's dependent (gs_grid_wait) to overlap the last wave.
 * No floating-point atomics: the grouping depends on the row length only, so float results have
 * the same bits on every run, device and launch shape. Float add accumulates each round of a
 * thread's values with TwoSum's errors gathered apart (Sum2, see accumulate) into a double-word
 * carry; threads and chunks combine as parts (device/lookback.cuh). The error is within
 * eps * sum|x| plus second-order terms, well inside the contract's (log2(n) + 2) eps sum|x|.
 */

typedef struct GS_FN(gs_reduce_smem) {
    uint4 next[4][GS_NT]; /* the next item's first four pieces, thread t's in [u][t] */
    GS_FN(gs_part) part[GS_NWARPS];
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
    GS_FN(reduce_item)(const gs_reduce_kparams *p, int64_t item, int size, int step)
{
    GS_FN(gs_reduce_item) it;
    const int64_t row = p->rows == 1 ? 0 : item / p->chunks, chunk = item - row * p->chunks;
    const int64_t rest = p->row_len - chunk * p->chunk_len;
    it.src = (const char *)p->in + (row * p->row_len + chunk * p->chunk_len) * size;
    it.count = (int)(rest < p->chunk_len ? rest : p->chunk_len);
    it.whole = ((uintptr_t)it.src % 16) != 0 ? 0 : it.count / step * step;
    return it;
}

/* The block's carries combined as parts in a fixed tree (a part a warp in `slots`, seed's past
 * the block's warps); the total is valid in thread 0.  The caller synchronises before reusing
 * the slots. */
static __device__ __forceinline__ GS_FN(gs_part)
    GS_FN(block_reduce)(gs_op op, gs_dtype t, GS_FN(gs_part) x, GS_FN(gs_part) *slots)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;
    GS_FN(part_warp_reduce)(op, GS_WARP, &x);
    if (lane == 0)
        slots[warp] = x;
    __syncthreads();
    if (warp == 0) {
        x = lane < GS_NWARPS ? slots[lane]
                             : GS_FN(part_of)(op, GS_FN(carry_of)(GS_FN(seed)(op, t)));
        GS_FN(part_warp_reduce)(op, GS_NWARPS, &x);
    }
    return x;
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
        acc.lo += (x - t) - ((s - t) - acc.hi); /* TwoSum's error, -0.0 when zero: gs_carry */
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

/* A chunk's partial written to its part_words words at `slot` (L2 only: another block reads it). */
static __device__ __forceinline__ void GS_FN(store_partial)(gs_op op, unsigned long long *slot,
                                                            GS_FN(gs_part) x)
{
    if (GS_FN(part_double)(op)) {
        __stcg(slot, (unsigned long long)__double_as_longlong(x.d));
        return;
    }
    __stcg(slot, GS_FN(pack_carry)(x.c)); /* hi (and a four-byte lo) */
    if (GS_FN(part_words)(op) == 2)
        __stcg(slot + 1, GS_FN(bits_of)(x.c.lo));
}

/* The partial whose part_words words (as loaded) start at w. */
static __device__ __forceinline__ GS_FN(gs_part)
    GS_FN(partial_at)(gs_op op, const unsigned long long *w)
{
    GS_FN(gs_part) x;
    if (GS_FN(part_double)(op)) {
        x.d = __longlong_as_double((long long)w[0]);
        return x;
    }
    x.c = GS_FN(unpack_carry)(w[0]);
    if (GS_FN(part_words)(op) == 2)
        x.c.lo = GS_FN(of_bits)(w[1]);
    return x;
}

/* A row's result from its total: float add's sum from the row's first value (every carry and part
 * starts from seed's -0.0: a sum of -0.0 values alone is -0.0), then + 0.0 where the reduction
 * starts from +0.0 as NumPy's reduce does (gs_reduce_desc.plus_zero), which changes only the sign
 * of an exact zero. */
static __device__ __forceinline__ void GS_FN(store_result)(gs_op op, gs_dtype out_t,
                                                           const gs_reduce_kparams *p, int64_t row,
                                                           GS_FN(gs_part) x)
{
    GS_R v = GS_FN(carry_apply)(op, GS_FN(part_carry)(op, x), GS_FN(seed)(op, out_t));
    if (GS_FN(compensated)(op) && p->plus_zero)
        v += (GS_R)0;
    gs_store_bits(out_t, p->out, row, GS_FN(to_bits)(out_t, v));
}

/* The row's partials combined in chunk order by the whole block, thread t the partials t,
 * t + NT, ... (`inflight` words in flight, 8 or 16), then the block's tree; thread 0 writes the
 * row's result. */
static __device__ __forceinline__ void GS_FN(combine_row)(gs_op op, gs_dtype out_t,
                                                          const gs_reduce_kparams *p, int64_t row,
                                                          GS_FN(gs_part) *slots, int inflight)
{
    const int64_t chunks = p->chunks;
    const int W = GS_FN(part_words)(op);
    const int P = inflight / W; /* partials a thread has in flight */
    const unsigned long long *row_parts = p->partials + W * row * chunks;
    GS_FN(gs_part) x = GS_FN(part_of)(op, GS_FN(carry_of)(GS_FN(seed)(op, out_t)));
    int64_t k = threadIdx.x;
    for (; k + (P - 1) * GS_NT < chunks; k += P * GS_NT) {
        unsigned long long w[16];
#pragma unroll
        for (int u = 0; u < 16; ++u)
            if (u < inflight)
                w[u] = __ldcg(row_parts + W * (k + (u / W) * GS_NT) + u % W);
#pragma unroll
        for (int u = 0; u < 16; ++u)
            if (u < P)
                x = GS_FN(part_combine)(op, x, GS_FN(partial_at)(op, w + W * u));
    }
    for (; k < chunks; k += GS_NT) {
        unsigned long long w[2];
        w[0] = __ldcg(row_parts + W * k);
        if (W == 2)
            w[1] = __ldcg(row_parts + W * k + 1);
        x = GS_FN(part_combine)(op, x, GS_FN(partial_at)(op, w));
    }
    x = GS_FN(block_reduce)(op, out_t, x, slots);
    if (threadIdx.x == 0)
        GS_FN(store_result)(op, out_t, p, row, x);
}

/* The combining launch after reduce_parts' (its programmatic dependent): blocks take rows in a
 * grid-stride loop, sixteen words in flight a thread (a kernel of its own so that its register
 * bound is its own: the streaming kernels' would serialise the loads). */
static __device__ __forceinline__ void GS_FN(reduce_combine)(gs_op op, gs_dtype out_t,
                                                             const gs_reduce_kparams *p)
{
    __shared__ GS_FN(gs_part) slots[GS_NWARPS];
    gs_grid_wait(); /* the reduce_parts launch before this one has completed */
    for (int64_t row = blockIdx.x; row < p->rows; row += gridDim.x) {
        GS_FN(combine_row)(op, out_t, p, row, slots, 16);
        __syncthreads(); /* the slots are reused by the next row */
    }
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
 * first; every byte is read once; docs/performance-notes.md). */
static __device__ __forceinline__ void GS_FN(reduce_load_piece)(const char *src, int off, int size,
                                                                uint32_t *w)
{
    GS_FN(piece_words)(__ldcs((const uint4 *)(src + (int64_t)off * size)), w);
}

/* The values of `pieces` 16-byte pieces (reduce_load_piece's words) accumulated into a thread's
 * carry in order: for float add as one Sum2 run folded into the carry with TwoSum (the run's
 * second-order error stays negligible at any row length); other operators straight into the
 * carry. A piece of four-byte values summed in float32 enters the run as the pairwise sum of its
 * four values (error <= 2u * sum|x|, u = eps/2), which cuts the Sum2 steps by four: instruction
 * issue is what limits this kernel (docs/performance-notes.md). */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(accumulate_round)(gs_op op, gs_dtype in_t, GS_FN(gs_carry) acc, uint32_t (*w)[4],
                            int pieces)
{
    const int C = 16 / (int)gs_dtype_size(in_t);
    GS_FN(gs_carry) run = GS_FN(compensated)(op) ? GS_FN(carry_of)(GS_FN(seed)(op, in_t)) : acc;
    if (GS_FN(compensated)(op) && !GS_R_WIDE && C == 4) { /* four-byte values, float32 sums */
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (u < pieces) {
                const GS_R a = GS_FN(from_bits)(in_t, w[u][0]) + GS_FN(from_bits)(in_t, w[u][1]);
                const GS_R b = GS_FN(from_bits)(in_t, w[u][2]) + GS_FN(from_bits)(in_t, w[u][3]);
                run = GS_FN(accumulate)(op, run, a + b);
            }
        return GS_FN(carry_combine)(op, acc, run);
    }
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

/* A thread's values of item `it` from value offset `off` on (its first piece, or past the pieces
 * staged) accumulated into acc: whole steps of 16-byte pieces, four loads in flight, then one at a
 * time; then the rest (or an unaligned row) value by value, straight into the carry. */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(accumulate_item)(gs_op op, gs_dtype in_t, GS_FN(gs_carry) acc,
                           const GS_FN(gs_reduce_item) it, int off)
{
    const int size = (int)gs_dtype_size(in_t);
    const int step = GS_NT * (16 / size);
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
    for (int i = it.whole + (int)threadIdx.x; i < it.count; i += GS_NT)
        acc = GS_FN(carry_combine)(
            op, acc, GS_FN(carry_of)(GS_FN(from_bits)(in_t, gs_load_bits(in_t, it.src, i))));
    return acc;
}

/* The first of the two-launch shape: the block's item (the launcher checks that the items fit a
 * grid), its partial left in the scratch for reduce_combine; nothing else at the block's tail. */
static __device__ __forceinline__ void GS_FN(reduce_parts)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                           const gs_reduce_kparams *p)
{
    __shared__ GS_FN(gs_part) slots[GS_NWARPS];
    const int size = (int)gs_dtype_size(in_t);
    const int C = 16 / size;
    gs_grid_launch_dependents(); /* the combining launch may start once every block is here */
    const GS_FN(gs_reduce_item) it = GS_FN(reduce_item)(p, blockIdx.x, size, GS_NT * C);
    const GS_FN(gs_carry) acc = GS_FN(accumulate_item)(
        op, in_t, GS_FN(carry_of)(GS_FN(seed)(op, out_t)), it, (int)threadIdx.x * C);
    const GS_FN(gs_part) total = GS_FN(block_reduce)(op, out_t, GS_FN(part_of)(op, acc), slots);
    if (threadIdx.x == 0)
        GS_FN(store_partial)(op, p->partials + GS_FN(part_words)(op) * blockIdx.x, total);
}

static __device__ __forceinline__ void GS_FN(reduce_items)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                           const gs_reduce_kparams *p)
{
    __shared__ GS_FN(gs_reduce_smem) sm;
    const GS_R id = GS_FN(seed)(op, out_t);
    const int size = (int)gs_dtype_size(in_t);
    const int C = 16 / size; /* values per 16-byte piece */
    const int step = GS_NT * C;
    const int64_t chunks = p->chunks;
    const int64_t items = p->rows * chunks;
    const int W = GS_FN(part_words)(op);

    int staged = 0; /* this item's first four pieces are in sm.next (cp.async, this thread's) */
    GS_FN(gs_reduce_item) it = GS_FN(reduce_item)(p, blockIdx.x, size, step);

    for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        const int64_t row = p->rows == 1 ? 0 : item / chunks;
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
        acc = GS_FN(accumulate_item)(op, in_t, acc, it, off);

        /* ---- The next item's first four pieces staged while this block combines (the
         * tree, fence and count below). ---- */
        staged = 0;
        if (item + gridDim.x < items) {
            it = GS_FN(reduce_item)(p, item + gridDim.x, size, step);
            if (it.whole >= 4 * step) {
                const char *at = it.src + (int)threadIdx.x * 16;
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    gs_cp_async(&sm.next[u][threadIdx.x], at + u * step * size, 16);
                staged = 1;
            }
        }

        /* ---- The chunk's total; the row's result, or the chunk's partial (counted after a
         * fence: the partial is visible before the count says so). */
        const GS_FN(gs_part) total =
            GS_FN(block_reduce)(op, out_t, GS_FN(part_of)(op, acc), sm.part);
        if (threadIdx.x == 0) {
            if (chunks == 1) {
                GS_FN(store_result)(op, out_t, p, row, total);
            } else {
                GS_FN(store_partial)(op, p->partials + W * item, total);
                __threadfence();
                sm.last = atomicAdd(p->counters + row, 1u) == (unsigned)(chunks - 1);
            }
        }

        /* ---- The last chunk of a row to finish combines the row's partials (every other
         * chunk of the row has counted already) and resets the row's counter for the next
         * reduction on the scratch. ---- */
        if (chunks > 1) {
            __syncthreads();
            if (sm.last) { /* the same for the whole block */
                __threadfence();
                GS_FN(combine_row)(op, out_t, p, row, sm.part, 8);
                if (threadIdx.x == 0)
                    p->counters[row] = 0u;
            }
        }
        __syncthreads(); /* shared memory is reused by the next item */
    }
}
