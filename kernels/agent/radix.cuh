/*
 * agent/radix.cuh - a block's part in the radix sort (dispatch/sort.cu): stable, NumPy's order,
 * keys moved as their own bits, every comparison made on order keys (gpuscan/radix.h).
 * Included after stamp.cuh once per key register type, GS_R uint32_t (keys of 1 to 4 bytes) or
 * uint64_t (8 bytes), with GS_RS its suffix; the parameters and buffer choice once.
 *
 * Device-wide (rows longer than GS_SORT_BLOCK_NV), an LSD sort by 8-bit digits (Onesweep):
 *   hist   one block per chunk of GS_SORT_HIST_TILES tiles of a row: the chunk's counts of every
 *          digit at every position, added to (or, for a row of one chunk, stored as) the row's;
 *          the OR of every key's order key XOR its row's first, whose zero bytes are the passes
 *          no row needs; and the first descriptor array zeroed.
 *   pass   one launch per digit position, a block per tile (taken in launch order): load the
 *          tile's keys (warp-striped), count its digits and publish the counts (the look-back's
 *          aggregates, a row's first tile its prefix), rank the keys stably in shared memory
 *          (block/radix_rank.cuh), scatter them there in rank order, look back per digit
 *          (device/radix_lookback.cuh) for the count of the digit in the row's tiles before,
 *          then store slot s of digit d to row_start + (keys of the row with a smaller digit) +
 *          (keys of d in the row before this tile) + (s - the tile's first slot of d), index
 *          payload alike. A pass no row needs (gs_sort_live) leaves at once; the live ones
 *          alternate between buffers (gs_sort_key_dst) so none reads what it writes.
 * Rows of at most GS_SORT_THREAD_ROW_MAX keys: a thread per row, a sorting network over (order
 * key, position) pairs in registers, the warp's rows moved through shared memory in whole
 * coalesced spans (radix_thread_rows). Rows of at most GS_SORT_WARP_ROW_MAX keys: a group of
 * lanes per row, each key's rank counted against its row's keys through shuffles
 * (radix_warp_rows).
 * Short rows (at most GS_SORT_BLOCK_NV keys), the block sort: a block takes up to
 * GS_SORT_BLOCK_ROWS whole rows, keeps their order keys and positions in registers and runs the
 * same ranking per digit the tile needs (its keys' digits differ there), then once more by the
 * row's index in the block (the most significant digit, so that each row ends up in its own
 * place, sorted), and writes each slot's key (read again by its position) and position in its
 * row.
 */
#ifndef GS_RADIX_AGENT_ONCE
#define GS_RADIX_AGENT_ONCE

#include "gpuscan/radix.h"
#include "block/radix_rank.cuh"
#include "device/radix_lookback.cuh"
#include "device/tile_state.cuh"

/* The parameters of every sort kernel (passed by value; dispatch/sort.cu fills them from the
 * layout, gpuscan/config.h). */
typedef struct gs_sort_kparams {
    const void *keys;    /* rows * row_len keys, row after row */
    void *keys_out;      /* the sorted keys (NULL: none) */
    int64_t *index_out;  /* each sorted key's position in its row (NULL: none) */
    void *ktmp0, *ktmp1; /* keys between passes */
    void *itmp;          /* indices between passes */
    unsigned *counter;   /* the tile counter */
    unsigned long long *diff;
    unsigned *lossy;     /* nonzero: a key whose bits its order key does not give back */
    unsigned long long *hist;
    void *desc0, *desc1; /* look-back descriptors of 4 or 8 bytes (wide) */
    int64_t rows, row_len;
    int64_t nv, row_tiles, tiles, hist_tiles, row_chunks;
    int64_t block_rows; /* the block sort's rows per block */
    uint64_t flip;      /* gs_sort_flip */
    int pass;           /* a pass's digit position */
    int hist_store;     /* one histogram block per row: store its counts, no memset */
    int wide;           /* 8-byte descriptors (rows past GS_SORT_COUNT_MAX keys) */
} gs_sort_kparams;

static __device__ __forceinline__ void *gs_sort_key_buf(const gs_sort_kparams *p, gs_sort_buf b)
{
    switch (b) {
    case GS_SORT_IN:
        return (void *)p->keys;
    case GS_SORT_OUT:
        return p->keys_out;
    case GS_SORT_TMP0:
        return p->ktmp0;
    case GS_SORT_TMP1:
        return p->ktmp1;
    default:
        return NULL;
    }
}

static __device__ __forceinline__ void *gs_sort_idx_buf(const gs_sort_kparams *p, gs_sort_buf b)
{
    switch (b) {
    case GS_SORT_OUT:
        return p->index_out;
    case GS_SORT_TMP0:
        return p->itmp;
    default:
        return NULL;
    }
}

/* Keys a histogram thread loads before it counts them (loads in flight). */
#define GS_SORT_HIST_UNROLL 8

/* Bytes of the dynamic shared memory of a pass over keys in registers of r_bytes with an index of
 * idx_bytes: the tile's keys and indices in slot order, the warps' digit counters, the digits'
 * store bases. */
#define GS_SORT_PASS_SMEM(r_bytes, key_bytes, idx_bytes, is_float)                         \
    (GS_SORT_NT * GS_SORT_VT(key_bytes, idx_bytes, is_float) * ((r_bytes) + (idx_bytes)) + \
     GS_SORT_NWARPS * GS_SORT_DIGITS * 4 + GS_SORT_DIGITS * 8)
/* ... and of the block sort: the tile's order keys and positions (16 bits), the counters. */
#define GS_SORT_BLOCK_SMEM(r_bytes) \
    (GS_SORT_BLOCK_NV * ((r_bytes) + 2) + GS_SORT_BLOCK_NWARPS * GS_SORT_DIGITS * 4)

/* A pass's index payload of idx_bytes (4 or 8) as its words lo[j], hi[j] (hi: 8-byte), items
 * j < vt of a warp-striped tile from element `from`, those at or past `left` untouched: every
 * load issued before any is used, a whole tile's unconditionally. */
static __device__ __forceinline__ void gs_radix_load_index(int idx_bytes, int vt, const void *a,
                                                           int64_t from, int left, uint32_t *lo,
                                                           uint32_t *hi)
{
    const int whole = left >= vt * GS_WARP;
#pragma unroll
    for (int j = 0; j < GS_SORT_VT_MAX; ++j) {
        if (j < vt && (whole || j * GS_WARP < left)) {
            if (idx_bytes == 8) {
                const unsigned long long x = ((const unsigned long long *)a)[from + j * GS_WARP];
                lo[j] = (uint32_t)x;
                hi[j] = (uint32_t)(x >> 32);
            } else {
                lo[j] = ((const uint32_t *)a)[from + j * GS_WARP];
            }
        }
    }
}

/* Whether keys of kind t are integers, whose order key is their bits XOR the flip: their digit
 * is then the bits' digit XOR the flip's (one LOP3 a key, where the order key first cost a
 * constant load and a XOR). Not bool (its order key is b != 0) nor a float. */
#define GS_RADIX_XOR_KEYS(t) ((t) != GS_BOOL && !gs_dtype_is_float(t))

/* Tile `tile`'s index in its row, the row in *row (row may be NULL). A flat sort (one row)
 * divides nothing, and a division is a 32-bit one: tiles are counted in 32 bits (gs_take_tile).
 * The 64-bit division of the tile by p->row_tiles cost about 45 instructions a warp at each of
 * its three uses. */
static __device__ __forceinline__ unsigned gs_sort_in_row(const gs_sort_kparams *p, unsigned tile,
                                                          unsigned *row)
{
    if (p->row_tiles == p->tiles) {
        if (row != NULL)
            *row = 0;
        return tile;
    }
    const unsigned row_tiles = (unsigned)p->row_tiles, r = tile / row_tiles;
    if (row != NULL)
        *row = r;
    return tile - r * row_tiles;
}

static_assert(GS_SORT_NWARPS * GS_SORT_DIGITS % GS_SORT_NT == 0,
              "the warps' counters are a whole number of words a thread");

#endif /* GS_RADIX_AGENT_ONCE */

/* ================================ per key register type ================================ */

/* The order key of a key's bits. */
static __device__ __forceinline__ GS_R GS_FN(radix_key)(gs_dtype t, GS_R bits, uint64_t flip)
{
    if (sizeof(GS_R) == 8)
        return (GS_R)gs_sort_key64(t, (uint64_t)bits, flip);
    return (GS_R)gs_sort_key32(t, (uint32_t)bits, (uint32_t)flip);
}

/* The bits of a key from its order key, where the order key is one-to-one: every integer kind
 * (a XOR), a float that is neither zero nor NaN. */
static __device__ __forceinline__ GS_R GS_FN(radix_unkey)(gs_dtype t, GS_R key, uint64_t flip)
{
    const GS_R u = key ^ (GS_R)flip, top = (GS_R)1 << (8 * sizeof(GS_R) - 1);
    if (t == GS_FLOAT32 || t == GS_FLOAT64)
        return (u & top) ? u & ~top : ~u;
    return u;
}

/* Whether the bits b of a key are not given back by radix_unkey of its order key: -0.0 (its key
 * is +0.0's), a NaN (every NaN one key), a bool (bytes other than 0 and 1). */
static __device__ __forceinline__ int GS_FN(radix_lossy)(gs_dtype t, GS_R b)
{
    if (t == GS_FLOAT32)
        return (uint32_t)b == 0x80000000u || ((uint32_t)b & 0x7fffffffu) > 0x7f800000u;
    if (t == GS_FLOAT64)
        return (uint64_t)b == 0x8000000000000000ull ||
               ((uint64_t)b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    return t == GS_BOOL;
}

/* Items j < vt of a warp-striped tile, k[j] = element from + j * GS_WARP of a (dtype t), those
 * at or past `left` zero: every load issued before any is used (a test and a use per item would
 * wait a memory latency per item); a whole tile's are unconditional. */
static __device__ __forceinline__ void GS_FN(radix_load)(gs_dtype t, int vt, const void *a,
                                                         int64_t from, int left, GS_R *k)
{
    if (left >= vt * GS_WARP) {
#pragma unroll
        for (int j = 0; j < GS_SORT_VT_MAX; ++j)
            if (j < vt)
                k[j] = (GS_R)gs_load_bits(t, a, from + j * GS_WARP);
    } else {
#pragma unroll
        for (int j = 0; j < GS_SORT_VT_MAX; ++j)
            if (j < vt)
                k[j] = j * GS_WARP < left ? (GS_R)gs_load_bits(t, a, from + j * GS_WARP) : 0;
    }
}

/* Digit `pass` of an order key in the register type (gs_sort_digit's, without widening a 32-bit
 * key to 64 bits: a pass's position is known only at run time, and a 64-bit shift by it costs a
 * few instructions a key more). */
static __device__ __forceinline__ unsigned GS_FN(radix_digit)(gs_dtype t, GS_R k, int pass)
{
    /* A 4-byte float's digit is byte `pass` with zeros above: one PRMT for a shift and a mask.
     * Integer kinds keep the two: with the PRMT ptxas spilled more in their keys-alone pass and
     * int32 sorted slower (docs/performance-notes.md, "The row without a 64-bit division"). */
    if (sizeof(GS_R) == 4 && GS_SORT_DIGIT_BITS == 8 && gs_dtype_is_float(t))
        return __byte_perm((unsigned)k, 0u, 0x4440u | (unsigned)pass);
    return (unsigned)(k >> (GS_SORT_DIGIT_BITS * pass)) & (GS_SORT_DIGITS - 1u);
}

/* Lane 0's v in every lane of the warp. */
static __device__ __forceinline__ GS_R GS_FN(warp_bcast0)(GS_R v)
{
    if (sizeof(GS_R) == 8)
        return (GS_R)__shfl_sync(GS_FULL_MASK, (unsigned long long)v, 0);
    return (GS_R)__shfl_sync(GS_FULL_MASK, (unsigned)v, 0);
}

/* The OR of the warp's values of v, in every lane. */
static __device__ __forceinline__ GS_R GS_FN(warp_or)(GS_R v)
{
    GS_R w = (GS_R)__reduce_or_sync(GS_FULL_MASK, (unsigned)v);
    if (sizeof(GS_R) == 8)
        w |= (GS_R)((uint64_t)__reduce_or_sync(GS_FULL_MASK, (unsigned)((uint64_t)v >> 32)) << 32);
    return w;
}

/* The OR of a block's values of v (32 or 64 bits) in every thread; `sm` holds a value per warp.
 * One barrier, after which the caller's use of `sm` is done before it is written again. */
static __device__ __forceinline__ GS_R GS_FN(radix_block_or)(GS_R v, GS_R *sm, int nwarps)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const GS_R w = GS_FN(warp_or)(v);
    if (lane == 0)
        sm[threadIdx.x / GS_WARP] = w;
    __syncthreads();
    GS_R all = 0;
#pragma unroll
    for (int i = 0; i < GS_SORT_NT / GS_WARP; ++i)
        if (i < nwarps)
            all |= sm[i];
    return all;
}

/* ---- The histogram: block b counts chunk b % row_chunks of row b / row_chunks. ---- */
static __device__ __forceinline__ void GS_FN(radix_hist)(gs_dtype t, const gs_sort_kparams *p)
{
    __shared__ unsigned counts[8 * GS_SORT_DIGITS]; /* [pass][digit], at most 8 passes */
    __shared__ GS_R warp_diff[GS_SORT_NWARPS];
    const int passes = (int)gs_dtype_size(t);
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int64_t row = blockIdx.x / p->row_chunks;
    const int64_t chunk = blockIdx.x - row * p->row_chunks;
    const int64_t chunk_keys = p->hist_tiles * p->nv;
    const int64_t start = row * p->row_len + chunk * chunk_keys;
    const int64_t n =
        p->row_len - chunk * chunk_keys < chunk_keys ? p->row_len - chunk * chunk_keys : chunk_keys;

    /* ---- The first pass's descriptors zeroed, this block's share of them (16 bytes a store). */
    {
        const int64_t quads = p->tiles * GS_SORT_DIGITS * (p->wide ? 8 : 4) / 16;
        const int64_t per = (quads + gridDim.x - 1) / gridDim.x;
        uint4 *d = (uint4 *)p->desc0;
        const int64_t end = (blockIdx.x + 1) * per < quads ? (blockIdx.x + 1) * per : quads;
        for (int64_t i = blockIdx.x * per + threadIdx.x; i < end; i += GS_SORT_NT)
            d[i] = make_uint4(0u, 0u, 0u, 0u);
    }
    for (int i = threadIdx.x; i < passes * GS_SORT_DIGITS; i += GS_SORT_NT)
        counts[i] = 0u;
    const GS_R first =
        GS_FN(radix_key)(t, (GS_R)gs_load_bits(t, p->keys, row * p->row_len), p->flip);
    __syncthreads();

    /* ---- Count: every digit position of GS_SORT_HIST_UNROLL keys a thread at a time, one
     * shared atomic per key and position; where every key of the warp's batch shares a position's
     * digit (a position no row needs, runs of equal keys), lane 0 adds the batch's count at once,
     * since 32 lanes adding to one counter serialise. Whole batches first, then the chunk's tail
     * with a test per key. ---- */
    GS_R diff = 0;
    int lossy = 0; /* a key of the block's is lossy */
    const int64_t batch = GS_SORT_NT * GS_SORT_HIST_UNROLL;
    const int64_t whole = n / batch * batch;
    for (int64_t i0 = 0; i0 < whole; i0 += batch) {
        GS_R k[GS_SORT_HIST_UNROLL];
#pragma unroll
        for (int u = 0; u < GS_SORT_HIST_UNROLL; ++u)
            k[u] = (GS_R)gs_load_bits(t, p->keys, start + i0 + u * GS_SORT_NT + threadIdx.x);
        GS_R same = 0; /* the bits where a key of the thread's differs from lane 0's first */
        GS_R k0 = 0;
#pragma unroll
        for (int u = 0; u < GS_SORT_HIST_UNROLL; ++u) {
            lossy |= GS_FN(radix_lossy)(t, k[u]);
            k[u] = GS_FN(radix_key)(t, k[u], p->flip);
            if (u == 0)
                k0 = GS_FN(warp_bcast0)(k[0]);
            same |= k[u] ^ k0;
        }
        same = GS_FN(warp_or)(same); /* ... in any lane */
        diff |= same | (k0 ^ first);
#pragma unroll
        for (int pass = 0; pass < 8; ++pass) {
            if (pass < passes) {
                unsigned *c = counts + pass * GS_SORT_DIGITS;
                if (gs_sort_digit((uint64_t)same, pass) == 0u) {
                    if (lane == 0)
                        atomicAdd(&c[gs_sort_digit((uint64_t)k0, pass)],
                                  (unsigned)(GS_WARP * GS_SORT_HIST_UNROLL));
                } else {
#pragma unroll
                    for (int u = 0; u < GS_SORT_HIST_UNROLL; ++u)
                        atomicAdd(&c[gs_sort_digit((uint64_t)k[u], pass)], 1u);
                }
            }
        }
    }
    for (int64_t i = whole + threadIdx.x; i < n; i += GS_SORT_NT) {
        const GS_R bits = (GS_R)gs_load_bits(t, p->keys, start + i);
        lossy |= GS_FN(radix_lossy)(t, bits);
        const GS_R key = GS_FN(radix_key)(t, bits, p->flip);
        diff |= key ^ first;
#pragma unroll
        for (int pass = 0; pass < 8; ++pass)
            if (pass < passes)
                atomicAdd(&counts[pass * GS_SORT_DIGITS + gs_sort_digit((uint64_t)key, pass)], 1u);
    }

    /* ---- The block's counts into its row's, its differences into the call's mask
     * (an atomic only for bits the mask lacks when read). ---- */
    if (__syncthreads_or(lossy) && threadIdx.x == 0)
        atomicOr(p->lossy, 1u);
    diff = GS_FN(radix_block_or)(diff, warp_diff, GS_SORT_NWARPS);
    if (threadIdx.x == 0 && diff != 0) {
        const unsigned long long seen = *(volatile unsigned long long *)p->diff;
        if ((unsigned long long)diff & ~seen)
            atomicOr(p->diff, (unsigned long long)diff);
    }
    unsigned long long *h = p->hist + row * passes * GS_SORT_DIGITS;
    for (int i = threadIdx.x; i < passes * GS_SORT_DIGITS; i += GS_SORT_NT) {
        if (p->hist_store)
            h[i] = counts[i];
        else if (counts[i] != 0u)
            atomicAdd(&h[i], (unsigned long long)counts[i]);
    }
}

/* A pass's load: items j < vt of the thread's warp-striped share of a tile of tile_n keys at
 * element `base` of ksrc (position tile_start in its row), the thread's first at `lead`: the
 * keys' bits (ordered: their order keys), their digits at `pass`, their indices' words (read
 * from isrc, or the positions). */
static __device__ __forceinline__ void GS_FN(radix_load_tile)(gs_dtype t, int vt, int idx_bytes,
                                                              int ordered, int first_live,
                                                              uint64_t flip, int pass,
                                                              const void *ksrc,
                                                              const void *isrc, int64_t base,
                                                              int64_t tile_start, int lead,
                                                              int tile_n, GS_R *key, unsigned *dr,
                                                              uint32_t *ilo, uint32_t *ihi)
{
    GS_FN(radix_load)(t, vt, ksrc, base + lead, tile_n - lead, key);
    const unsigned flip_digit = GS_FN(radix_digit)(t, (GS_R)flip, pass);
#pragma unroll
    for (int j = 0; j < GS_SORT_VT_MAX; ++j) {
        if (j < vt) {
            const int at = lead + j * GS_WARP;
            if (GS_RADIX_XOR_KEYS(t)) {
                dr[j] = GS_FN(radix_digit)(t, key[j], pass) ^ flip_digit;
            } else {
                const GS_R ok =
                    ordered && !first_live ? key[j] : GS_FN(radix_key)(t, key[j], flip);
                if (ordered)
                    key[j] = ok;
                dr[j] = GS_FN(radix_digit)(t, ok, pass);
            }
            ilo[j] = (uint32_t)(tile_start + at);
            ihi[j] = (uint32_t)((uint64_t)(tile_start + at) >> 32);
        }
    }
    if (idx_bytes && isrc != NULL)
        gs_radix_load_index(idx_bytes, vt, isrc, base + lead, tile_n - lead, ilo, ihi);
}

/* A pass's keys ranked (gs_radix_rank_item, the digits in dr[]) and each put, with its index
 * words, in its slot in shared memory as soon as ranked (its rank is final then: the counters
 * hold the warp's offsets), so no rank waits in a register for the others; `checked` (a
 * compile-time constant): only the present keys are put, a tile that is not whole. */
static __device__ __forceinline__ void GS_FN(radix_rank_keys)(int vt, int checked, int idx_bytes,
                                                              int lead, int tile_n,
                                                              const GS_R *key, const unsigned *dr,
                                                              const uint32_t *ilo,
                                                              const uint32_t *ihi, gs_dtype it,
                                                              unsigned *whist, GS_R *skey,
                                                              unsigned char *sidx)
{
    const unsigned below = gs_lanes_below();
    unsigned *mine = whist + threadIdx.x / GS_WARP * GS_SORT_DIGITS;
#pragma unroll
    for (int j = 0; j < GS_SORT_VT_MAX; ++j) {
        if (j < vt) {
            const unsigned r = gs_radix_rank_item(dr[j], 1, 1, below, mine);
            if (!checked || lead + j * GS_WARP < tile_n) {
                skey[r] = key[j];
                if (idx_bytes)
                    gs_store_bits(it, sidx, r, (uint64_t)ilo[j] | ((uint64_t)ihi[j] << 32));
            }
        }
    }
}

/* ... every key ranked (a row's last tile's absent keys carry the top digit: ranked past the
 * tile's slots), a whole tile's keys put untested when `unchecked_whole` (a compile-time
 * constant). */
static __device__ __forceinline__ void GS_FN(radix_rank_scatter)(
    int vt, int unchecked_whole, int idx_bytes, int lead, int tile_n, const GS_R *key,
    const unsigned *dr, const uint32_t *ilo, const uint32_t *ihi, gs_dtype it, unsigned *whist,
    GS_R *skey, unsigned char *sidx)
{
    if (unchecked_whole && tile_n == GS_SORT_NT * vt)
        GS_FN(radix_rank_keys)(vt, 0, idx_bytes, lead, tile_n, key, dr, ilo, ihi, it, whist, skey,
                               sidx);
    else
        GS_FN(radix_rank_keys)(vt, 1, idx_bytes, lead, tile_n, key, dr, ilo, ihi, it, whist, skey,
                               sidx);
}

/* A pass's store: slot s of the tile in shared memory (consecutive threads, consecutive slots:
 * runs of one digit are contiguous in the output) to gbase[its digit] + s in kdst (none when
 * NULL), its index (it in sidx) alike as ot in idst. */
static __device__ __forceinline__ void GS_FN(radix_store_slots)(
    gs_dtype t, int vt, int checked, int idx_bytes, int ordered, int last_live, uint64_t flip,
    int tile_n, const GS_R *skey, const unsigned char *sidx, const unsigned long long *gbase,
    void *kdst, void *idst, gs_dtype it, gs_dtype ot, int pass)
{
    const unsigned flip_digit = GS_FN(radix_digit)(t, (GS_R)flip, pass);
#pragma unroll
    for (int i = 0; i < vt; ++i) {
        const int s = i * GS_SORT_NT + threadIdx.x;
        if (!checked || s < tile_n) {
            const GS_R k = skey[s];
            const unsigned d =
                GS_RADIX_XOR_KEYS(t)
                    ? GS_FN(radix_digit)(t, k, pass) ^ flip_digit
                    : GS_FN(radix_digit)(t, ordered ? k : GS_FN(radix_key)(t, k, flip), pass);
            const int64_t g = (int64_t)(gbase[d] + (unsigned long long)s);
            if (kdst != NULL)
                gs_store_bits(t, kdst, g,
                              (uint64_t)(ordered && last_live ? GS_FN(radix_unkey)(t, k, flip)
                                                              : k));
            if (idx_bytes)
                gs_store_bits(ot, idst, g, gs_load_bits(it, sidx, s));
        }
    }
}

/* ... each slot's presence tested only in a tile that is not whole. */
static __device__ __forceinline__ void GS_FN(radix_store)(gs_dtype t, int vt, int idx_bytes,
                                                          int ordered, int last_live,
                                                          uint64_t flip, int tile_n,
                                                          const GS_R *skey,
                                                          const unsigned char *sidx,
                                                          const unsigned long long *gbase,
                                                          void *kdst, void *idst, gs_dtype it,
                                                          gs_dtype ot, int pass)
{
    if (tile_n == GS_SORT_NT * vt)
        GS_FN(radix_store_slots)(t, vt, 0, idx_bytes, ordered, last_live, flip, tile_n, skey, sidx,
                                 gbase, kdst, idst, it, ot, pass);
    else
        GS_FN(radix_store_slots)(t, vt, 1, idx_bytes, ordered, last_live, flip, tile_n, skey, sidx,
                                 gbase, kdst, idst, it, ot, pass);
}

/* A pass's tile (radix_pass): keys of kind t (their order keys as they are: ordered 0 and a zero
 * flip with an unsigned t) in a kernel of float keys or not (kind_float), `before` and `after`
 * live passes around this one. */
static __device__ __forceinline__ void GS_FN(radix_pass_tile)(gs_dtype t, int idx_bytes,
                                                              int kind_float, int ordered,
                                                              uint64_t flip,
                                                              int before, int after,
                                                              const gs_sort_kparams *p)
{
    const int passes = (int)gs_dtype_size(t);
    /* The kernel's geometry (its kind's: a float kernel's middle passes run with t unsigned) and
     * where the tile's store bases wait through the ranking (GS_SORT_BASES_SHARED). */
    const int vt = GS_SORT_VT(passes, idx_bytes, kind_float);
    const int shared_bases = GS_SORT_BASES_SHARED(passes, idx_bytes, kind_float);
    const int nv = GS_SORT_NT * vt;
    const int tid = threadIdx.x;
    const int lane = tid & (GS_WARP - 1);
    const int warp = tid / GS_WARP;
    GS_R *skey = (GS_R *)gs_dynamic_smem;
    unsigned char *sidx = (unsigned char *)(skey + nv);
    unsigned *whist = (unsigned *)(sidx + (size_t)nv * idx_bytes);
    unsigned long long *gbase = (unsigned long long *)(whist + GS_SORT_NWARPS * GS_SORT_DIGITS);
    __shared__ gs_radix_scan_smem scan_sm;
    __shared__ unsigned tile_sm;
    __shared__ unsigned count_sm[GS_SORT_DIGITS];

    const int want_keys = p->keys_out != NULL;
    const void *ksrc = gs_sort_key_buf(p, gs_sort_key_src(before, after, want_keys));
    void *kdst = gs_sort_key_buf(p, gs_sort_key_dst(after, want_keys));
    const void *isrc = idx_bytes ? gs_sort_idx_buf(p, gs_sort_idx_src(before, after)) : NULL;
    void *idst = idx_bytes ? gs_sort_idx_buf(p, gs_sort_idx_dst(after)) : NULL;
    void *desc = before & 1 ? p->desc1 : p->desc0;
    void *next = before & 1 ? p->desc0 : p->desc1;
    const gs_dtype it = idx_bytes == 8 ? GS_UINT64 : GS_UINT32;
    const gs_dtype ot = after == 0 ? GS_UINT64 : it;

    /* ---- The tile, in launch order (a tile waits only for tiles taken before it). ---- */
#pragma unroll
    for (int k = 0; k < GS_SORT_NWARPS * GS_SORT_DIGITS / GS_SORT_NT; ++k)
        whist[k * GS_SORT_NT + tid] = 0u;
    if (tid == 0)
        tile_sm = gs_take_tile(p->counter, (unsigned)p->tiles);
    __syncthreads();
    const int64_t tile = tile_sm;
    unsigned row32;
    const int64_t in_row = gs_sort_in_row(p, tile_sm, &row32);
    const int64_t row = row32;
    const int first = in_row == 0; /* publishes its prefix at once */
    const int64_t row_start = row * p->row_len;
    const int64_t tile_start = in_row * nv; /* in the row */
    const int tile_n = p->row_len - tile_start < nv ? (int)(p->row_len - tile_start) : nv;
    const int64_t base = row_start + tile_start;

    /* ---- Digit thread d: the next live pass's descriptor of (tile, d) zeroed; the row's count
     * of d. ---- */
    unsigned long long row_count = 0;
    if (tid < GS_SORT_DIGITS) {
        gs_radix_clear(next, p->wide, tile * GS_SORT_DIGITS + tid);
        row_count = p->hist[(row * passes + p->pass) * GS_SORT_DIGITS + tid];
    }

    /* ---- Load: item j of lane l of warp w is the tile's key w*32*vt + j*32 + l. ---- */
    GS_R key[GS_SORT_VT_MAX];
    unsigned dr[GS_SORT_VT_MAX];                       /* digits, then ranks */
    uint32_t ilo[GS_SORT_VT_MAX], ihi[GS_SORT_VT_MAX]; /* the index's words (ihi: 8-byte) */
    const int lead = warp * GS_WARP * vt + lane;
    GS_FN(radix_load_tile)(t, vt, idx_bytes, ordered, before == 0, flip, p->pass, ksrc, isrc,
                           base, tile_start, lead, tile_n, key, dr, ilo, ihi);

    /* ---- Count, and publish the tile's counts at once (before any wait). ---- */
    gs_radix_count(vt, 1, nv, dr, tile_n, whist);
    __syncthreads();
    unsigned count = 0;
    if (tid < GS_SORT_DIGITS) {
        count = gs_radix_column(GS_SORT_NWARPS, whist, tid);
        gs_radix_publish(desc, p->wide, tile * GS_SORT_DIGITS + tid,
                         first ? GS_RADIX_PREFIX : GS_RADIX_AGGREGATE, count);
    }

    /* ---- Each digit's first slot in the tile and first place in the row. ---- */
    unsigned start;
    unsigned long long bin_start;
    gs_radix_digit_scan(count, row_count, &start, &bin_start, &scan_sm);
    if (tid < GS_SORT_DIGITS) {
        gs_radix_add_start(GS_SORT_NWARPS, whist, tid, start);
        if (shared_bases) {
            gbase[tid] = (unsigned long long)row_start + bin_start - start;
            count_sm[tid] = count;
        }
    }
    __syncthreads();

    /* ---- Rank (a row's last tile's absent keys with the top digit: ranked last, past the
     * tile's slots), and scatter the tile into shared memory in slot order. ---- */
    if (tile_n < nv) {
#pragma unroll
        for (int j = 0; j < GS_SORT_VT_MAX; ++j)
            if (j < vt && lead + j * GS_WARP >= tile_n)
                dr[j] = GS_SORT_DIGITS - 1u;
    }
    GS_FN(radix_rank_scatter)(vt, GS_SORT_UNCHECKED_SCATTER(passes, idx_bytes, kind_float),
                              idx_bytes, lead, tile_n, key, dr, ilo, ihi, it, whist, skey, sidx);

    /* ---- Look back: digit d's count in the row's tiles before this one; then where the
     * tile's slots of d go. ---- */
    if (tid < GS_SORT_DIGITS) {
        /* shared bases: the tile's number and count again from shared memory */
        const int64_t t2 = shared_bases ? (int64_t)*(volatile unsigned *)&tile_sm : tile;
        uint64_t excl = 0;
        if (shared_bases ? gs_sort_in_row(p, (unsigned)t2, NULL) != 0 : !first) {
            excl = gs_radix_look_back(desc, p->wide, t2, tid);
            gs_radix_publish(desc, p->wide, t2 * GS_SORT_DIGITS + tid, GS_RADIX_PREFIX,
                             excl + (shared_bases ? count_sm[tid] : count));
            if (shared_bases)
                gbase[tid] += excl;
        }
        if (!shared_bases)
            gbase[tid] = (unsigned long long)row_start + bin_start + excl - start;
    }
    __syncthreads();

    /* ---- Store: slot s to gbase[its digit] + s (with shared bases, the tile's length and
     * destinations taken again here). ---- */
    int store_n = tile_n;
    if (shared_bases) {
        const int64_t t3 = *(volatile unsigned *)&tile_sm;
        const int64_t start3 = (int64_t)gs_sort_in_row(p, (unsigned)t3, NULL) * nv;
        store_n = p->row_len - start3 < nv ? (int)(p->row_len - start3) : nv;
        kdst = gs_sort_key_buf(p, gs_sort_key_dst(after, want_keys));
        idst = idx_bytes ? gs_sort_idx_buf(p, gs_sort_idx_dst(after)) : NULL;
    }
    GS_FN(radix_store)(t, vt, idx_bytes, ordered, after == 0, flip, store_n, skey, sidx, gbase,
                       kdst, idst, it, ot, p->pass);
}

/* ---- A pass: the tile taken from the counter, by digit position p->pass, idx_bytes of index
 * payload (0: none).  Floats with no lossy key (radix_lossy): the first live pass writes order
 * keys, the passes between move them as they are (the pass of the unsigned kind of their width,
 * its own copy: the float's transform compiled beside it made a pass issue 8% more
 * instructions), the last gives back their bits; else every pass moves the bits and takes each
 * key's order key twice (an integer's is one XOR: its kernels keep the bits, which measured 2-4%
 * faster than order keys on an H200). ---- */
static __device__ __forceinline__ void GS_FN(radix_pass)(gs_dtype t, int idx_bytes,
                                                         const gs_sort_kparams *p)
{
    const unsigned live = gs_sort_live(*p->diff, (int)gs_dtype_size(t));
    if (!((live >> p->pass) & 1u))
        return;
    const int before = __popc(live & ((1u << p->pass) - 1u));
    const int after = __popc(live) - 1 - before;
    const int ordered = (t == GS_FLOAT32 || t == GS_FLOAT64) &&
                        *(volatile const unsigned *)p->lossy == 0u;
    const int kind_float = gs_dtype_is_float(t);
    if (ordered && before > 0 && after > 0)
        GS_FN(radix_pass_tile)(sizeof(GS_R) == 8 ? GS_UINT64 : GS_UINT32, idx_bytes, kind_float, 0,
                               0ull, before, after, p);
    else
        GS_FN(radix_pass_tile)(t, idx_bytes, kind_float, ordered, p->flip, before, after, p);
}

/* One ranking round of the block sort by the digits in dr[] (then clobbered): the tile's order
 * keys ok[] and positions ps[] move to their slots through shared memory and come back
 * warp-striped in slot order. The counters are zero at entry, after a barrier, and left so. */
static __device__ __forceinline__ void GS_FN(radix_block_round)(unsigned *dr, GS_R *ok,
                                                                unsigned *ps, int tile_n,
                                                                GS_R *skey, uint16_t *spos,
                                                                unsigned *whist,
                                                                gs_radix_scan_smem *scan_sm)
{
    const int tid = threadIdx.x;
    const int lead = tid / GS_WARP * GS_WARP * GS_SORT_BLOCK_VT + (tid & (GS_WARP - 1));
    unsigned start;
    unsigned long long unused;

    gs_radix_count(GS_SORT_BLOCK_VT, 0, GS_SORT_BLOCK_NV, dr, tile_n, whist);
    __syncthreads();
    const unsigned count = gs_radix_column(GS_SORT_BLOCK_NWARPS, whist, tid);
    gs_radix_digit_scan(count, 0u, &start, &unused, scan_sm);
    gs_radix_add_start(GS_SORT_BLOCK_NWARPS, whist, tid, start);
    __syncthreads();
    gs_radix_rank(GS_SORT_BLOCK_VT, dr, tile_n, whist);
#pragma unroll
    for (int j = 0; j < GS_SORT_BLOCK_VT; ++j) {
        if (lead + j * GS_WARP < tile_n) {
            skey[dr[j]] = ok[j];
            spos[dr[j]] = (uint16_t)ps[j];
        }
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < GS_SORT_BLOCK_VT; ++j) {
        const int s = lead + j * GS_WARP;
        if (s < tile_n) {
            ok[j] = skey[s];
            ps[j] = spos[s];
        }
    }
    for (int i = tid; i < GS_SORT_BLOCK_NWARPS * GS_SORT_DIGITS; i += GS_SORT_BLOCK_NT)
        whist[i] = 0u;
    __syncthreads();
}

/* ---- The block sort: block b sorts rows b * block_rows .. (at most block_rows of them). ---- */
static __device__ __forceinline__ void GS_FN(radix_block)(gs_dtype t, const gs_sort_kparams *p)
{
    const int passes = (int)gs_dtype_size(t);
    const int tid = threadIdx.x;
    const int lead = tid / GS_WARP * GS_WARP * GS_SORT_BLOCK_VT + (tid & (GS_WARP - 1));
    GS_R *skey = (GS_R *)gs_dynamic_smem;
    uint16_t *spos = (uint16_t *)(skey + GS_SORT_BLOCK_NV);
    unsigned *whist = (unsigned *)(spos + GS_SORT_BLOCK_NV);
    __shared__ gs_radix_scan_smem scan_sm;
    __shared__ GS_R warp_diff[GS_SORT_BLOCK_NWARPS];
    const int64_t row0 = (int64_t)blockIdx.x * p->block_rows;
    const int nrows = (int)(p->rows - row0 < p->block_rows ? p->rows - row0 : p->block_rows);
    const int row_len = (int)p->row_len;
    const int tile_n = nrows * row_len;
    const int64_t base = row0 * p->row_len;

    /* ---- Load: order keys and positions, warp-striped; the keys' differences. ---- */
    const GS_R first = GS_FN(radix_key)(t, (GS_R)gs_load_bits(t, p->keys, base), p->flip);
    GS_R ok[GS_SORT_BLOCK_VT];
    unsigned ps[GS_SORT_BLOCK_VT], dr[GS_SORT_BLOCK_VT];
    GS_R diff = 0;
    GS_FN(radix_load)(t, GS_SORT_BLOCK_VT, p->keys, base + lead, tile_n - lead, ok);
#pragma unroll
    for (int j = 0; j < GS_SORT_BLOCK_VT; ++j) {
        const int at = lead + j * GS_WARP;
        ps[j] = (unsigned)at;
        ok[j] = at < tile_n ? GS_FN(radix_key)(t, ok[j], p->flip) : first;
        diff |= ok[j] ^ first;
    }
    for (int i = tid; i < GS_SORT_BLOCK_NWARPS * GS_SORT_DIGITS; i += GS_SORT_BLOCK_NT)
        whist[i] = 0u;
    diff = GS_FN(radix_block_or)(diff, warp_diff, GS_SORT_BLOCK_NWARPS); /* a barrier */

    /* ---- A round per digit position where the tile's keys differ, least significant first;
     * then by row (rows of one block only), most significant. ---- */
#pragma unroll 1
    for (int pass = 0; pass < passes; ++pass) {
        if (gs_sort_digit((uint64_t)diff, pass) != 0u) {
#pragma unroll
            for (int j = 0; j < GS_SORT_BLOCK_VT; ++j)
                dr[j] = GS_FN(radix_digit)(t, ok[j], pass);
            GS_FN(radix_block_round)(dr, ok, ps, tile_n, skey, spos, whist, &scan_sm);
        }
    }
    if (nrows > 1) {
#pragma unroll
        for (int j = 0; j < GS_SORT_BLOCK_VT; ++j)
            dr[j] = ps[j] / (unsigned)row_len;
        GS_FN(radix_block_round)(dr, ok, ps, tile_n, skey, spos, whist, &scan_sm);
    }

    /* ---- Store slot s: its key's own bits (read again by position) and the position in its
     * row (the slot's row is the key's). ---- */
    if (p->keys_out != NULL) { /* every key gathered (ok[] is free) before any is stored */
#pragma unroll
        for (int j = 0; j < GS_SORT_BLOCK_VT; ++j)
            ok[j] = lead + j * GS_WARP < tile_n ? (GS_R)gs_load_bits(t, p->keys, base + ps[j]) : 0;
#pragma unroll
        for (int j = 0; j < GS_SORT_BLOCK_VT; ++j)
            if (lead + j * GS_WARP < tile_n)
                gs_store_bits(t, p->keys_out, base + lead + j * GS_WARP, (uint64_t)ok[j]);
    }
#pragma unroll
    for (int j = 0; j < GS_SORT_BLOCK_VT; ++j) {
        const int s = lead + j * GS_WARP;
        if (s < tile_n) {
            if (p->index_out != NULL)
                p->index_out[base + s] =
                    (int64_t)(ps[j] - (unsigned)s / (unsigned)row_len * (unsigned)row_len);
        }
    }
}

/* ---- Rows of at most GS_SORT_THREAD_ROW_MAX keys: a thread per row.  A warp's 32 rows are one
 * contiguous span of keys: the warp loads it in coalesced lane-strided loads (all issued before
 * any is used) into its part of shared memory, and each thread takes its row from there and
 * sorts it in registers by a bitonic network of N = 2, 4, 8 or 16 (the least power of two
 * holding the row; past the row, all-ones order keys, which sort last), then writes it back
 * through shared memory to the span's places, coalesced again.  A sort whose order keys are
 * one-to-one in every row of the warp (integers; floats with no zero and no NaN) sorts the order
 * keys alone and turns them back into bits; otherwise, and for an argsort, the network sorts
 * (order key, position) pairs, equal keys in their positions' order (the stable order), and
 * the keys' bits are read back by position.  No barrier but the warp's own. ---- */
#ifndef GS_SORT_THREAD_ONCE
#define GS_SORT_THREAD_ONCE
/* Shared words (of the key's register type) of a warp: its 32 rows' keys, then their positions,
 * one word per key, a word skipped every 16 (a lane's row of 16 keys then starts one word
 * further along the banks than the lane before's). */
#define GS_SORT_THREAD_SPAN (GS_WARP * GS_SORT_THREAD_ROW_MAX)
#define GS_SORT_THREAD_WORDS (GS_SORT_THREAD_SPAN + GS_SORT_THREAD_SPAN / 16)
static __device__ __forceinline__ int gs_sort_thread_at(int e)
{
    return e + (e >> 4);
}
#endif

/* Pairs (key, position) a and b in order: the smaller key first, of equal keys the earlier. */
static __device__ __forceinline__ void GS_FN(radix_pair_order)(GS_R *ka, unsigned *pa, GS_R *kb,
                                                              unsigned *pb)
{
    const int swap = *kb < *ka || (*kb == *ka && *pb < *pa);
    const GS_R k = swap ? *kb : *ka;
    const unsigned q = swap ? *pb : *pa;
    *kb = swap ? *ka : *kb;
    *pb = swap ? *pa : *pb;
    *ka = k;
    *pa = q;
}

/* The first n of k[] (n a power of two, at most GS_SORT_THREAD_ROW_MAX) sorted by a bitonic
 * network: with pos, (key, position) pairs (radix_pair_order); with pos NULL, the keys alone. */
static __device__ __forceinline__ void GS_FN(radix_network)(int n, GS_R *k, unsigned *pos)
{
#pragma unroll
    for (int size = 2; size <= GS_SORT_THREAD_ROW_MAX; size <<= 1) {
        if (size > n)
            break;
#pragma unroll
        for (int j = size >> 1; j > 0; j >>= 1) {
#pragma unroll
            for (int i = 0; i < GS_SORT_THREAD_ROW_MAX; ++i) {
                const int l = i ^ j, lo = (i & size) == 0 ? i : l, hi = lo == i ? l : i;
                if (i < n && l > i) {
                    if (pos != NULL) {
                        GS_FN(radix_pair_order)(&k[lo], &pos[lo], &k[hi], &pos[hi]);
                    } else {
                        const GS_R x = k[lo], y = k[hi];
                        k[lo] = x < y ? x : y;
                        k[hi] = x < y ? y : x;
                    }
                }
            }
        }
    }
}

/* A row of len keys (at most GS_SORT_THREAD_ROW_MAX) sorted by the least network that holds
 * it (past the row, all-ones order keys). */
static __device__ __forceinline__ void GS_FN(radix_row_network)(int len, GS_R *k, unsigned *pos)
{
    if (len > 8)
        GS_FN(radix_network)(16, k, pos);
    else if (len > 4)
        GS_FN(radix_network)(8, k, pos);
    else if (len > 2)
        GS_FN(radix_network)(4, k, pos);
    else if (len > 1)
        GS_FN(radix_network)(2, k, pos);
}

/* This lane's row v[0 .. len) (where it has one: mine) put in its places of the warp's span of
 * `span` values at `base`, through the warp's shared words w: the rows written there, then the
 * span stored in coalesced lane-strided order, as keys of type t into keys_out, or as positions
 * into index_out (when not NULL). Begins with the warp's barrier: every lane is done reading
 * w. */
static __device__ __forceinline__ void GS_FN(radix_rows_store)(gs_dtype t, GS_R *w, int mine,
                                                              int len, int span, int64_t base,
                                                              const GS_R *v, void *keys_out,
                                                              int64_t *index_out)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    __syncwarp();
#pragma unroll
    for (int j = 0; j < GS_SORT_THREAD_ROW_MAX; ++j)
        if (mine && j < len)
            w[gs_sort_thread_at(lane * len + j)] = v[j];
    __syncwarp();
#pragma unroll
    for (int i = 0; i < GS_SORT_THREAD_ROW_MAX; ++i) {
        const int e = i * GS_WARP + lane;
        if (e < span) {
            if (index_out != NULL)
                index_out[base + e] = (int64_t)w[gs_sort_thread_at(e)];
            else
                gs_store_bits(t, keys_out, base + e, (uint64_t)w[gs_sort_thread_at(e)]);
        }
    }
}

static __device__ __forceinline__ void GS_FN(radix_thread_rows)(gs_dtype t, const gs_sort_kparams *p)
{
    __shared__ GS_R words[GS_SORT_BLOCK_NT / GS_WARP][GS_SORT_THREAD_WORDS];
    const int len = (int)p->row_len;
    const int lane = threadIdx.x & (GS_WARP - 1);
    GS_R *const w = words[threadIdx.x / GS_WARP];
    const int64_t first = ((int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~(GS_WARP - 1)));
    if (first >= p->rows)
        return; /* the whole warp */
    const int64_t rows = p->rows - first < GS_WARP ? p->rows - first : GS_WARP;
    const int span = (int)rows * len;
    const int64_t base = first * len;
    const int mine = lane < rows;

    /* ---- The span into shared memory: every load in flight before the first store. ---- */
    GS_R in[GS_SORT_THREAD_ROW_MAX];
#pragma unroll
    for (int i = 0; i < GS_SORT_THREAD_ROW_MAX; ++i) {
        const int e = i * GS_WARP + lane;
        in[i] = e < span ? (GS_R)gs_load_bits(t, p->keys, base + e) : (GS_R)0;
    }
#pragma unroll
    for (int i = 0; i < GS_SORT_THREAD_ROW_MAX; ++i) {
        const int e = i * GS_WARP + lane;
        if (e < span)
            w[gs_sort_thread_at(e)] = in[i];
    }
    __syncwarp();

    /* ---- This thread's row: its order keys. ---- */
    GS_R k[GS_SORT_THREAD_ROW_MAX];
    int lossy = 0; /* a key of the warp's rows whose bits its order key does not give back */
#pragma unroll
    for (int j = 0; j < GS_SORT_THREAD_ROW_MAX; ++j) {
        k[j] = ~(GS_R)0;
        if (mine && j < len) {
            const GS_R b = w[gs_sort_thread_at(lane * len + j)];
            lossy |= GS_FN(radix_lossy)(t, b);
            k[j] = GS_FN(radix_key)(t, b, p->flip);
        }
    }

    /* ---- Keys alone, where equal order keys are equal bits in every row of the warp: the
     * network over the keys, their bits from the order keys, no positions. ---- */
    if (p->index_out == NULL && !__any_sync(GS_FULL_MASK, lossy)) {
        GS_FN(radix_row_network)(len, k, NULL);
#pragma unroll
        for (int j = 0; j < GS_SORT_THREAD_ROW_MAX; ++j)
            k[j] = GS_FN(radix_unkey)(t, k[j], p->flip);
        GS_FN(radix_rows_store)(t, w, mine, len, span, base, k, p->keys_out, NULL);
        return;
    }

    /* ---- Else (key, position) pairs, the stable order. ---- */
    unsigned pos[GS_SORT_THREAD_ROW_MAX];
#pragma unroll
    for (int j = 0; j < GS_SORT_THREAD_ROW_MAX; ++j)
        pos[j] = (unsigned)j;
    GS_FN(radix_row_network)(len, k, pos);

    /* ---- The sorted keys' bits (read back by position), then the positions. ---- */
    if (p->keys_out != NULL) {
#pragma unroll
        for (int j = 0; j < GS_SORT_THREAD_ROW_MAX; ++j)
            k[j] = mine && j < len ? w[gs_sort_thread_at(lane * len + (int)pos[j])] : 0;
        GS_FN(radix_rows_store)(t, w, mine, len, span, base, k, p->keys_out, NULL);
    }
    if (p->index_out != NULL) {
#pragma unroll
        for (int j = 0; j < GS_SORT_THREAD_ROW_MAX; ++j)
            k[j] = (GS_R)pos[j];
        GS_FN(radix_rows_store)(t, w, mine, len, span, base, k, NULL, p->index_out);
    }
}

/* ---- Rows of at most GS_SORT_WARP_ROW_MAX keys: a group of p->block_rows lanes (a power of two
 * at least the row's length) per row, lane i holding key i; its rank is the count of the row's
 * keys before it in the stable order (a smaller order key, or an equal one earlier), each key
 * read from its lane by a shuffle. ---- */
static __device__ __forceinline__ void GS_FN(radix_warp_rows)(gs_dtype t, const gs_sort_kparams *p)
{
    const int len = (int)p->row_len;
    const int w = (int)p->block_rows;
    const int sub = threadIdx.x & (w - 1);
    const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / w;
    const int present = row < p->rows && sub < len;
    const int64_t at = row * len + sub;
    const GS_R bits = present ? (GS_R)gs_load_bits(t, p->keys, at) : (GS_R)0;
    const GS_R ok = present ? GS_FN(radix_key)(t, bits, p->flip) : (GS_R)0;
    int rank = 0;
    for (int j = 0; j < len; ++j) { /* every lane, len alike in the block */
        const GS_R o = __shfl_sync(GS_FULL_MASK, ok, j, w);
        rank += o < ok || (o == ok && j < sub);
    }
    if (present) {
        if (p->keys_out != NULL)
            gs_store_bits(t, p->keys_out, row * len + rank, (uint64_t)bits);
        if (p->index_out != NULL)
            p->index_out[row * len + rank] = sub;
    }
}
