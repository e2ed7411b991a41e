/*
 * agent/split.cuh - a block's part in the split (stable partition) and compact.  Included once,
 * after the u32 layers (block/block_scan.cuh: the block scan of per-piece counts) and the u64
 * layers (device/lookback.cuh: the look-back over flagged counts) are stamped.
 * Two passes over a tile of GS_NV values (the scan's tiles):
 *   count   a warp per tile reads the tile's flags at their own width (16 flags per lane per
 *           step, whole 16-byte vectors when aligned), writes them back as one bit per value
 *           (GS_NV / 8 bytes per tile), publishes the tile's flagged count as its look-back
 *           aggregate (tile 0: as its prefix) and adds it to the total; its last block also
 *           writes the total to `reply` for a compact. The segment heads'
 *           count pass (total NULL: dispatch/segreduce.cu) adds to no total and clears the
 *           tile's second descriptor word instead (no memset: the heads' prefix pass polls it).
 *   scatter a block per tile loads its values as whole 16-byte pieces (agent_scan's layout: rows
 *           of GS_NT * C values, C = 16 / value size, thread t holding values t*C .. t*C+C-1 of
 *           every row) and their bits, block-scans the per-piece counts, looks back for the
 *           flagged count before the tile, ranks every value within its group, scatters the
 *           values through shared memory into output order and writes two coalesced runs:
 *           flagged ones at out[flagged_before + rank], unflagged ones at
 *           out[total + unflagged_before + rank], unflagged_before = tile_start - flagged_before.
 *           Tile 0's block also writes the total to `reply` (a page-locked host word,
 *           cuda/reply.c), so the host learns split's count without a launch to copy it.
 * Values are moved as bits of their width (any dtype, NaN payloads kept).
 */
#include "device/tile_state.cuh"

/* Kernel parameters of both passes (passed by value). */
typedef struct gs_split_kparams {
    const void *in;
    const void *flags;
    void *out;
    int64_t n;
    gs_tile_state ts;          /* ts.words: the look-back descriptors */
    unsigned long long *total; /* the scratch's header words (GS_SPLIT_TOTAL ...; heads: NULL) */
    unsigned long long *reply; /* where the count also goes (NULL: nowhere): the count pass's
                                  last block writes it there (compact), or the scatter's tile 0
                                  (split) */
    uint32_t *mask;            /* one bit per value, bit i of word i / 32 for value i */
    int compact;               /* write the flagged group only */
    int vec_in;                /* `in` is 16-byte aligned */
    int vec_flags;             /* `flags` is 16-byte aligned */
} gs_split_kparams;

/* Flags per mask group: 16 bits, stored as one uint16 (a warp writes 64 contiguous bytes). */
#define GS_SPLIT_GROUP GS_FLAG_GROUP
#define GS_SPLIT_GROUPS (GS_NV / GS_SPLIT_GROUP)

#if GS_VT < 16
#error \
    "the split needs GS_VT >= 16: every row of a thread is a whole 16-byte piece, 16 one-byte values"
#endif

/* ---- The count pass: warp w of block b counts tile b * GS_NWARPS + w. ----
 * Every group of every tile is written, zeros past n, so the scatter pass reads whole words. The
 * scatter reads the aggregates after this pass completes, so its look-back never waits. */
static __device__ __forceinline__ void gs_split_count_tiles(gs_dtype ft, const gs_split_kparams *p)
{
    __shared__ unsigned warp_count[GS_NWARPS];
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;
    const int64_t tile = (int64_t)blockIdx.x * GS_NWARPS + warp;
    unsigned count = 0;

    /* The scatter (this pass's programmatic dependent) may start as soon as every block of this
     * one has: it loads its values, which this pass does not write, while this pass ends. */
    gs_grid_launch_dependents();
    if (tile < gs_scan_tiles(p->n)) {
        uint16_t *mask16 = (uint16_t *)p->mask + tile * GS_SPLIT_GROUPS;
        unsigned bits[GS_FLAG_TILE_STEPS];
        gs_flag_tile_bits(ft, p->flags, tile * GS_NV, p->n, p->vec_flags, lane, bits);
#pragma unroll
        for (int j = 0; j < GS_FLAG_TILE_STEPS; ++j) {
            mask16[lane + GS_WARP * j] = (uint16_t)bits[j];
            count += __popc(bits[j]);
        }
        count = __reduce_add_sync(GS_FULL_MASK, count);
        if (lane == 0) {
            publish_u64(p->ts, tile, tile == 0 ? GS_ST_PREFIX : GS_ST_AGGREGATE, 0,
                        (uint64_t)count);
            if (p->total == NULL) /* the heads' pass: the second word cleared (its header) */
                gs_tile_store(p->ts.words + 2 * tile + 1, p->ts.tag, GS_ST_INVALID, 0);
        }
    }

    /* ---- The total (none for the heads): one atomic per block adds its count and itself to
     * the running word (gpuscan/config.h); the block that finds every other block there
     * publishes the sum and leaves the word zero, as every split finds it (no memset). ---- */
    if (p->total == NULL)
        return;
    if (lane == 0)
        warp_count[warp] = count;
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned long long low = (1ull << GS_SPLIT_SUM_BITS) - 1u;
        unsigned long long sum = 0;
#pragma unroll
        for (int w = 0; w < GS_NWARPS; ++w)
            sum += warp_count[w];
        const unsigned long long seen =
            atomicAdd(p->total + GS_SPLIT_RUNNING, (1ull << GS_SPLIT_SUM_BITS) | sum);
        if (seen >> GS_SPLIT_SUM_BITS == gridDim.x - 1u) { /* the last block: no add after it */
            const unsigned long long total = (seen + sum) & low;
            atomicExch(p->total + GS_SPLIT_RUNNING, 0ull);
            p->total[GS_SPLIT_TOTAL] = total;
            if (p->reply != NULL)
                *p->reply = total;
        }
    }
}

/* The scatter's load of its tile (tile_n values from tile_base; this thread's first value in
 * row 0 at `lead`): one 16-byte piece per row in w (element by element in a partial tile or an
 * unaligned array), then, once the count pass has completed (the scatter is its programmatic
 * dependent, dispatch/split.cu), each piece's flag bits from the mask, their count in pc, and
 * pf zeroed (no piece is a head: the block scan's flags). */
static __device__ __forceinline__ void gs_split_load(gs_dtype vt, const gs_split_kparams *p,
                                                     int64_t tile_base, int tile_n, int lead,
                                                     uint32_t (*w)[4], unsigned *bits, int *pf,
                                                     uint32_t *pc)
{
    const int C = 16 / (int)gs_dtype_size(vt);
    const int R = GS_VT / C;
    const int64_t row_stride = (int64_t)GS_NT * C;
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int64_t li = k * row_stride + lead;
            if (tile_n == GS_NV && p->vec_in) {
                gs_load_piece(vt, C, p->in, tile_base + li, w[k]);
            } else {
#pragma unroll
                for (int c = 0; c < C; ++c)
                    gs_word_put(vt, w[k], c,
                                li + c < tile_n ? gs_load_bits(vt, p->in, tile_base + li + c) : 0);
            }
        }
    }
    gs_grid_wait(); /* the mask, the descriptors and the total are the count pass's */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int64_t li = k * row_stride + lead;
            const uint32_t m = __ldg(p->mask + ((tile_base + li) >> 5));
            bits[k] = (m >> ((tile_base + li) & 31)) & ((1u << C) - 1u);
            pf[k] = 0;
            pc[k] = (uint32_t)__popc(bits[k]);
        }
    }
}

/* ---- The scatter pass: block b moves tile b. ----
 * `buf` is shared memory for GS_NV values of vt's width (the tile in output order). */
static __device__ __forceinline__ void gs_split_scatter_tile(gs_dtype vt, void *buf,
                                                             const gs_split_kparams *p)
{
    __shared__ gs_block_scan_smem_u32 bsm;
    __shared__ unsigned long long before_sm, total_sm;
    const int C = 16 / (int)gs_dtype_size(vt);
    const int R = GS_VT / C;
    const int64_t row_stride = (int64_t)GS_NT * C;
    const int64_t tile = blockIdx.x;
    const int64_t tile_base = tile * GS_NV;
    const int tile_n = p->n - tile_base < GS_NV ? (int)(p->n - tile_base) : GS_NV;
    const int lead = threadIdx.x * C; /* this thread's first value in row 0 */

    /* ---- Load: one 16-byte piece per row, then its flag bits. ---- */
    uint32_t w[GS_ROWS_MAX][4];
    unsigned bits[GS_ROWS_MAX];
    int pf[GS_ROWS_MAX];
    uint32_t pc[GS_ROWS_MAX];
    gs_split_load(vt, p, tile_base, tile_n, lead, w, bits, pf, pc);

    /* ---- Flagged values before each piece in its row, and each row's total. ---- */
    int ef[GS_ROWS_MAX], af[GS_ROWS_MAX];
    uint32_t ev[GS_ROWS_MAX], av[GS_ROWS_MAX];
    block_scan_u32(GS_OP_ADD, GS_UINT32, R, 0, pf, pc, ef, ev, af, av, &bsm);
    uint32_t flagged = 0; /* the tile's flagged count; first: the rows before row k */
    uint32_t row_base[GS_ROWS_MAX];
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            row_base[k] = flagged;
            flagged += av[k];
        }
    }

    /* ---- Look back for the flagged count before the tile (the count pass published every
     * aggregate and tile 0's prefix), publish this tile's prefix. ---- */
    if (threadIdx.x < GS_WARP) {
        unsigned long long before = 0;
        if (tile > 0)
            before = look_back_u64(GS_OP_ADD, GS_UINT64, p->ts, tile).hi;
        if (threadIdx.x == 0) {
            if (tile > 0)
                publish_u64(p->ts, tile, GS_ST_PREFIX, 0, before + flagged);
            before_sm = before;
            total_sm = p->total[GS_SPLIT_TOTAL];
            if (tile == 0 && p->reply != NULL)
                *p->reply = total_sm;
        }
    }

    /* ---- Rank and scatter into shared memory: the flagged values first, then the rest. ---- */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < R) {
            const int li = k * (int)row_stride + lead;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                if (li + c < tile_n) {
                    const int rank =
                        (int)(row_base[k] + ev[k]) + __popc(bits[k] & ((1u << c) - 1u));
                    const int slot = (bits[k] >> c) & 1u ? rank : (int)flagged + (li + c - rank);
                    gs_store_bits(vt, buf, slot, gs_word_elem(vt, w[k], c));
                }
            }
        }
    }
    __syncthreads();

    /* ---- Store: the tile's flagged run, then (split) its unflagged run, each contiguous in
     * `out`, consecutive threads at consecutive addresses. ---- */
    const int64_t before = (int64_t)before_sm;
    /* out index = base + slot: flagged slots [0, flagged), unflagged ones [flagged, tile_n) */
    const int64_t unflagged_base = (int64_t)total_sm + (tile_base - before) - (int64_t)flagged;
    const int limit = p->compact ? (int)flagged : tile_n;
#pragma unroll
    for (int i = 0; i < GS_VT; ++i) {
        const int j = i * GS_NT + (int)threadIdx.x;
        if (j < limit)
            gs_store_bits(vt, p->out, (j < (int)flagged ? before : unflagged_base) + j,
                          gs_load_bits(vt, buf, j));
    }
}
