/*
 * agent/reduce.cuh - a block's part in a reduction: it reduces work items (one chunk of
 * p->chunk_len values of one row, gs_reduce_chunk_len) in a grid-stride loop.  Included once per
 * register type after device/lookback.cuh.
 *
 * Each thread accumulates 16-byte pieces of the chunk, four loads in flight, consecutive
 * threads on consecutive pieces; the block combines the threads in a fixed tree.  A row of one
 * chunk is written at once; otherwise each chunk leaves a partial, and the chunk of the row to
 * finish last (a per-row counter) combines the row's partials with the whole block (thread t
 * the partials t, t + NT, ... in order, then the same tree), and sets the counter back to zero
 * for the next reduction on the scratch.  No
 * floating-point atomics anywhere: the grouping depends on the row length only, so float
 * results have the same bits on every run and every device.  Float add accumulates in
 * double-word carries (TwoSum), within the contract's bound at any length.
 */

typedef struct GS_FN(gs_reduce_smem) {
    GS_R hi[GS_NWARPS];
    GS_R lo[GS_NWARPS];
    int last;
} GS_FN(gs_reduce_smem);

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

/* One value accumulated into a carry. */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(accumulate)(gs_op op, GS_FN(gs_carry) acc, GS_R x)
{
    return GS_FN(carry_combine)(op, acc, GS_FN(carry_of)(x));
}

static __device__ __forceinline__ void GS_FN(reduce_items)(gs_op op, gs_dtype in_t, gs_dtype out_t,
                                                           const gs_reduce_kparams *p)
{
    __shared__ GS_FN(gs_reduce_smem) sm;
    const GS_R id = GS_FN(identity)(op, out_t);
    const int C = 16 / (int)gs_dtype_size(in_t); /* values per 16-byte piece */
    const int64_t step = (int64_t)GS_NT * C;
    const int64_t size = (int64_t)gs_dtype_size(in_t);
    const int64_t chunk_len = p->chunk_len;
    const int64_t chunks = (p->row_len + chunk_len - 1) / chunk_len;
    const int64_t items = p->rows * chunks;

    for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        const int64_t row = item / chunks, chunk = item % chunks;
        const int64_t base = row * p->row_len + chunk * chunk_len;
        const int64_t rest = p->row_len - chunk * chunk_len;
        const int64_t count = rest < chunk_len ? rest : chunk_len;
        const int aligned = ((uintptr_t)((const char *)p->in + base * size) % 16) == 0;
        const int64_t whole = aligned ? count / step * step : 0;
        GS_FN(gs_carry) acc = GS_FN(carry_of)(id);

        /* ---- Whole steps: 16-byte pieces, four loads in flight per thread. ---- */
        int64_t off = (int64_t)threadIdx.x * C;
        for (; off + 3 * step < whole; off += 4 * step) {
            uint32_t w[4][4];
#pragma unroll
            for (int u = 0; u < 4; ++u)
                gs_load_piece(in_t, C, p->in, base + off + u * step, w[u]);
#pragma unroll
            for (int u = 0; u < 4; ++u)
#pragma unroll
                for (int c = 0; c < 16; ++c)
                    if (c < C)
                        acc = GS_FN(accumulate)(
                            op, acc, GS_FN(from_bits)(in_t, gs_word_elem(in_t, w[u], c)));
        }
        for (; off < whole; off += step) {
            uint32_t w[4];
            gs_load_piece(in_t, C, p->in, base + off, w);
#pragma unroll
            for (int c = 0; c < 16; ++c)
                if (c < C)
                    acc = GS_FN(accumulate)(op, acc,
                                            GS_FN(from_bits)(in_t, gs_word_elem(in_t, w, c)));
        }
        /* ---- The rest (or an unaligned row) value by value. ---- */
        for (int64_t i = whole + threadIdx.x; i < count; i += GS_NT)
            acc = GS_FN(accumulate)(op, acc,
                                    GS_FN(from_bits)(in_t, gs_load_bits(in_t, p->in, base + i)));

        /* ---- The chunk's total; the row's result, or the chunk's partial. ---- */
        acc = GS_FN(block_reduce)(op, out_t, acc, &sm);
        if (threadIdx.x == 0) {
            if (chunks == 1) {
                gs_store_bits(out_t, p->out, row,
                              GS_FN(to_bits)(out_t, GS_FN(carry_apply)(op, acc, id)));
            } else {
                unsigned long long *slot = p->partials + 2 * item;
                __stcg(slot, GS_FN(bits_of)(acc.hi));
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
            const unsigned long long *row_parts = p->partials + 2 * row * chunks;
            int64_t k = threadIdx.x;
            for (; k + 3 * GS_NT < chunks; k += 4 * GS_NT) { /* four loads in flight */
                unsigned long long w[8];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    w[2 * u] = __ldcg(row_parts + 2 * (k + u * GS_NT));
                    w[2 * u + 1] = __ldcg(row_parts + 2 * (k + u * GS_NT) + 1);
                }
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    GS_FN(gs_carry) v;
                    v.hi = GS_FN(of_bits)(w[2 * u]);
                    v.lo = GS_FN(of_bits)(w[2 * u + 1]);
                    c = GS_FN(carry_combine)(op, c, v);
                }
            }
            for (; k < chunks; k += GS_NT) {
                GS_FN(gs_carry) v;
                v.hi = GS_FN(of_bits)(__ldcg(row_parts + 2 * k));
                v.lo = GS_FN(of_bits)(__ldcg(row_parts + 2 * k + 1));
                c = GS_FN(carry_combine)(op, c, v);
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
