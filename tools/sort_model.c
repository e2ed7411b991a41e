/*
 * tools/sort_model.c - a host model of the CUDA radix sort's data flow (kernels/dispatch/sort.cu,
 * kernels/agent/radix.cuh), in plain C, for tests/test_sort_model.py to run against NumPy on a
 * machine without a GPU.
 *
 * It shares with the kernels the arithmetic of gpuscan/radix.h (order keys, digits, live passes,
 * the buffer plan) and gpuscan/config.h (the layout of the scratch), and mirrors step for step
 * what each block does: the histogram blocks (their chunks, counts and difference mask, the first
 * descriptor array zeroed), each pass's tiles (warp-striped items,
 * the warps' digit counters, the digit scans, the rank of each item as the warp match gives it,
 * the descriptors' words with their status bits, the look-back, the store addresses) and the
 * block sort's rounds. Tiles run in waves of random size whose look-backs run in random order
 * (so a look-back meets aggregates, prefixes and the start of a row), on tiles, chunks and blocks
 * as small as the caller asks, with descriptors of 32 or 64 bits. Besides the result, it checks
 * what the GPU could only get wrong silently: a look-back that reaches a word no tile has written
 * yet (a deadlock on the device) or leaves its row, a count past its word's bits, a pass reading
 * the buffer it writes or not the one the pass before wrote, a store outside its row or a slot
 * stored twice, a descriptor not zeroed before its pass.
 *
 * Built as a shared library (cc -O2 -shared -fPIC -Iinclude) and called through ctypes:
 *   int gs_model_sort(keys, keys_out, index_out, rows, row_len, dtype, descending,
 *                     path, nt, vt, hist_tiles, wide, block_nt, block_vt, idx8, seed)
 * path: 0 as the launcher chooses (with the kernels' block size), 1 the device-wide sort, 2 the
 * block sort; nt, vt: a pass's threads (a multiple of 32) and keys per thread; hist_tiles: tiles of
 * a histogram chunk; wide: 64-bit descriptors (else as the kernels choose); block_nt, block_vt: the
 * block sort's; idx8: carry the index in 8 bytes between passes (the kernels do past 2^32 keys a
 * row). Returns 0, or a negative code with a message in gs_model_error().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuscan/radix.h"

#define WARP 32
#define NDIG GS_SORT_DIGITS

static char error_text[512];

const char *gs_model_error(void)
{
    return error_text;
}

#define FAIL(...)                                             \
    do {                                                      \
        snprintf(error_text, sizeof error_text, __VA_ARGS__); \
        rc = -1;                                              \
        goto done;                                            \
    } while (0)

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A key's bits (zero-extended) and the store of bits, by width. */
static uint64_t load_bits(int bytes, const void *p, int64_t i)
{
    switch (bytes) {
    case 1:
        return ((const uint8_t *)p)[i];
    case 2:
        return ((const uint16_t *)p)[i];
    case 4:
        return ((const uint32_t *)p)[i];
    default:
        return ((const uint64_t *)p)[i];
    }
}

static void store_bits(int bytes, void *p, int64_t i, uint64_t v)
{
    switch (bytes) {
    case 1:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)p)[i] = v;
        break;
    }
}

/* The order key as the kernels compute it (agent/radix.cuh: radix_key). */
static uint64_t order_key(gs_dtype t, uint64_t bits, uint64_t flip)
{
    if (gs_dtype_size(t) == 8)
        return gs_sort_key64(t, bits, flip);
    return gs_sort_key32(t, (uint32_t)bits, (uint32_t)flip);
}

/* ---- The block level (block/radix_rank.cuh) for a block of nwarps warps of vt items. ----
 * dig[w][j][l]: item j of lane l of warp w (tile position w*32*vt + j*32 + l); present when that
 * position is below tile_n. On return rank[] holds each present item's slot. */
static int rank_tile(int nwarps, int vt, int tile_n, const unsigned *dig, unsigned *rank,
                     unsigned *tile_count, unsigned *tile_start)
{
    unsigned *whist = calloc((size_t)nwarps * NDIG, sizeof(unsigned));
    if (whist == NULL)
        return -1;
    /* count: each present item adds one to its warp's counter of its digit */
    for (int w = 0; w < nwarps; ++w)
        for (int j = 0; j < vt; ++j)
            for (int l = 0; l < WARP; ++l) {
                const int at = w * WARP * vt + j * WARP + l;
                if (at < tile_n)
                    whist[w * NDIG + dig[at]]++;
            }
    /* column: each warp's counter becomes the count before it; the tile's count of d */
    for (int d = 0; d < NDIG; ++d) {
        unsigned total = 0;
        for (int w = 0; w < nwarps; ++w) {
            const unsigned c = whist[w * NDIG + d];
            whist[w * NDIG + d] = total;
            total += c;
        }
        tile_count[d] = total;
    }
    /* the digit scan (exclusive), added to each column */
    unsigned run = 0;
    for (int d = 0; d < NDIG; ++d) {
        tile_start[d] = run;
        run += tile_count[d];
        for (int w = 0; w < nwarps; ++w)
            whist[w * NDIG + d] += tile_start[d];
    }
    /* rank: per item, the warp's match (lanes with the same digit among the present ones); the
     * highest lane of each group moves the counter by the group's size */
    for (int w = 0; w < nwarps; ++w)
        for (int j = 0; j < vt; ++j) {
            unsigned among = 0, old[WARP];
            const int base = w * WARP * vt + j * WARP;
            for (int l = 0; l < WARP; ++l)
                if (base + l < tile_n)
                    among |= 1u << l;
            unsigned peers[WARP];
            for (int l = 0; l < WARP; ++l) {
                peers[l] = 0;
                if (!((among >> l) & 1u))
                    continue;
                for (int m = 0; m < WARP; ++m)
                    if (((among >> m) & 1u) && dig[base + m] == dig[base + l])
                        peers[l] |= 1u << m;
            }
            for (int l = 0; l < WARP; ++l) {
                old[l] = 0;
                if (((among >> l) & 1u) && 31 - __builtin_clz(peers[l]) == l) {
                    old[l] = whist[w * NDIG + dig[base + l]];
                    whist[w * NDIG + dig[base + l]] =
                        old[l] + (unsigned)__builtin_popcount(peers[l]);
                }
            }
            for (int l = 0; l < WARP; ++l) {
                if (!((among >> l) & 1u))
                    continue;
                const int leader = 31 - __builtin_clz(peers[l]);
                rank[base + l] =
                    old[leader] + (unsigned)__builtin_popcount(peers[l] & ((1u << l) - 1u));
            }
        }
    free(whist);
    return 0;
}

/* ---- The model's buffers: the plan's names to memory. ---- */
typedef struct bufs {
    void *key[GS_SORT_NONE]; /* IN, OUT, TMP0, TMP1 */
    void *idx[GS_SORT_NONE]; /* -, OUT, TMP0, - */
} bufs;

/* ---- The look-back's words (device/radix_lookback.cuh): status in the two top bits. ---- */
#define ST_AGGREGATE 1u
#define ST_PREFIX 2u

static uint64_t word_get(const void *desc, int wide, int64_t i, unsigned *status)
{
    if (wide) {
        const uint64_t w = ((const uint64_t *)desc)[i];
        *status = (unsigned)(w >> 62);
        return w & ((1ull << 62) - 1u);
    }
    const uint32_t w = ((const uint32_t *)desc)[i];
    *status = w >> 30;
    return w & GS_SORT_COUNT_MAX;
}

static void word_put(void *desc, int wide, int64_t i, unsigned status, uint64_t count)
{
    if (wide)
        ((uint64_t *)desc)[i] = (uint64_t)status << 62 | count;
    else
        ((uint32_t *)desc)[i] = status << 30 | (uint32_t)count;
}

/* ---- The device-wide sort. ---- */
static int model_device(const void *keys, void *keys_out, int64_t *index_out, int64_t rows,
                        int64_t row_len, gs_dtype t, int descending, int nt, int vt,
                        int64_t hist_tiles, int wide, int idx8)
{
    const int kb = (int)gs_dtype_size(t);
    const int want_keys = keys_out != NULL, want_index = index_out != NULL;
    const uint64_t flip = gs_sort_flip(t, descending);
    const int nwarps = nt / WARP;
    const int64_t nv = (int64_t)nt * vt;
    gs_sort_layout l;
    char *scratch = NULL, *itmp8 = NULL;
    unsigned *dig = NULL, *rank = NULL;
    unsigned char *written = NULL;
    int64_t *order = NULL;
    uint64_t *skey = NULL, *sidx = NULL;
    bufs b;
    int rc = 0;

    memset(&b, 0, sizeof b);
    gs_sort_layout_for(rows, row_len, kb, want_keys, want_index, nv, hist_tiles,
                       wide ? 8 : gs_sort_desc_bytes(row_len), &l);
    wide = l.desc_bytes == 8;
    if (!wide && row_len > (int64_t)GS_SORT_COUNT_MAX)
        FAIL("rows of %lld keys with 32-bit descriptors", (long long)row_len);
    /* pool memory holds anything: the launcher's memset and the kernels must make it right */
    scratch = malloc((size_t)l.bytes);
    dig = malloc(sizeof(unsigned) * (size_t)nv);
    rank = malloc(sizeof(unsigned) * (size_t)nv);
    skey = malloc(sizeof(uint64_t) * (size_t)nv);
    sidx = malloc(sizeof(uint64_t) * (size_t)nv);
    written = malloc((size_t)(rows * row_len));
    order = malloc(sizeof(int64_t) * (size_t)l.tiles);
    if (!scratch || !dig || !rank || !skey || !sidx || !written || !order)
        FAIL("out of memory");
    memset(scratch, 0xa5, (size_t)l.bytes);
    memset(scratch, 0, (size_t)l.zero_bytes);
    uint64_t *diff = (uint64_t *)(scratch + l.diff);
    uint64_t *hist = (uint64_t *)(scratch + l.hist);
    void *desc[2] = { scratch + l.desc0, scratch + l.desc1 };
    if (l.ktmp0 < 0 && l.passes >= 2)
        FAIL("no ktmp0 for %d passes", l.passes);
    b.key[GS_SORT_IN] = (void *)keys;
    b.key[GS_SORT_OUT] = keys_out;
    b.key[GS_SORT_TMP0] = l.ktmp0 >= 0 ? scratch + l.ktmp0 : NULL;
    b.key[GS_SORT_TMP1] = l.ktmp1 >= 0 ? scratch + l.ktmp1 : NULL;
    b.idx[GS_SORT_OUT] = index_out;
    b.idx[GS_SORT_TMP0] = l.itmp >= 0 ? scratch + l.itmp : NULL;
    if (idx8 && want_index) { /* an index carried in 8 bytes, as for rows past 2^32 keys */
        l.idx_bytes = 8;
        if (l.itmp >= 0) {
            if ((itmp8 = malloc((size_t)(8 * rows * row_len))) == NULL)
                FAIL("out of memory");
            b.idx[GS_SORT_TMP0] = itmp8;
        }
    }

    /* ---- The histogram kernel: a block per (row, chunk of hist_tiles tiles). ---- */
    const int64_t blocks = rows * l.row_chunks;
    const int64_t quads = l.tiles * NDIG * l.desc_bytes / 16, per = (quads + blocks - 1) / blocks;
    for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t row = blk / l.row_chunks, chunk = blk - row * l.row_chunks;
        const int64_t chunk_keys = l.hist_tiles * nv;
        const int64_t start = row * row_len + chunk * chunk_keys;
        const int64_t n =
            row_len - chunk * chunk_keys < chunk_keys ? row_len - chunk * chunk_keys : chunk_keys;
        const int64_t end = (blk + 1) * per < quads ? (blk + 1) * per : quads;
        for (int64_t i = blk * per; i < end; ++i)
            memset((char *)desc[0] + 16 * i, 0, 16);
        unsigned counts[8 * NDIG];
        memset(counts, 0, sizeof counts);
        const uint64_t first = order_key(t, load_bits(kb, keys, row * row_len), flip);
        uint64_t d = 0;
        for (int64_t i = 0; i < n; ++i) {
            const uint64_t k = order_key(t, load_bits(kb, keys, start + i), flip);
            d |= k ^ first;
            for (int p = 0; p < l.passes; ++p)
                counts[p * NDIG + gs_sort_digit(k, p)]++;
        }
        *diff |= d;
        uint64_t *h = hist + row * l.passes * NDIG;
        for (int i = 0; i < l.passes * NDIG; ++i) {
            if (l.row_chunks == 1)
                h[i] = counts[i];
            else
                h[i] += counts[i];
        }
    }

    /* ---- The passes. ---- */
    const void *last_keys = keys; /* what the last live pass wrote (the input before any) */
    const void *last_idx = NULL;
    for (int pass = 0; pass < l.passes; ++pass) {
        const unsigned live = gs_sort_live(*diff, l.passes);
        if (!((live >> pass) & 1u))
            continue;
        const int before = __builtin_popcount(live & ((1u << pass) - 1u));
        const int after = __builtin_popcount(live) - 1 - before;
        const gs_sort_buf ks = gs_sort_key_src(before, after, want_keys);
        const gs_sort_buf kd = gs_sort_key_dst(after, want_keys);
        if (ks == GS_SORT_NONE)
            FAIL("pass %d reads no keys", pass);
        const void *ksrc = b.key[ks];
        void *kdst = kd == GS_SORT_NONE ? NULL : b.key[kd];
        const int ib = l.idx_bytes;
        const gs_sort_buf is = gs_sort_idx_src(before, after);
        const void *isrc = ib && is != GS_SORT_NONE ? b.idx[is] : NULL;
        void *idst = ib ? b.idx[gs_sort_idx_dst(after)] : NULL;
        void *dc = desc[before & 1], *next = desc[(before + 1) & 1];
        if (ksrc == NULL || ksrc != last_keys)
            FAIL("pass %d reads keys from buffer %d, not the last pass's", pass, (int)ks);
        if (kdst == ksrc || (kd != GS_SORT_NONE && kdst == NULL))
            FAIL("pass %d writes keys to buffer %d (reads %d)", pass, (int)kd, (int)ks);
        if (after == 0 && want_keys && kdst != keys_out)
            FAIL("the last pass writes keys elsewhere than keys_out");
        if (ib && (isrc != last_idx || (before > 0 && isrc == NULL) || idst == isrc ||
                   idst == NULL || (after == 0 && idst != index_out)))
            FAIL("pass %d: index buffers wrong", pass);
        for (int64_t i = 0; i < l.tiles * NDIG; ++i) {
            unsigned status;
            if (word_get(dc, wide, i, &status) != 0u || status != 0u)
                FAIL("pass %d: descriptor %lld not zero", pass, (long long)i);
        }
        memset(written, 0, (size_t)(rows * row_len));

        /* tiles taken in order, processed in waves: every tile of a wave publishes its counts,
         * then their look-backs and stores run in a random order */
        for (int64_t w0 = 0; w0 < l.tiles;) {
            const int64_t wave = 1 + (int64_t)(rng() % 6);
            const int64_t w1 = w0 + wave < l.tiles ? w0 + wave : l.tiles;
            for (int64_t tile = w0; tile < w1; ++tile) {
                order[tile] = tile;
                const int64_t row = tile / l.row_tiles, in_row = tile - row * l.row_tiles;
                const int64_t base = row * row_len + in_row * nv;
                const int tile_n =
                    row_len - in_row * nv < nv ? (int)(row_len - in_row * nv) : (int)nv;
                unsigned count[NDIG], start[NDIG];
                for (int d = 0; d < NDIG; ++d)
                    word_put(next, wide, tile * NDIG + d, 0u, 0u);
                for (int at = 0; at < tile_n; ++at)
                    dig[at] =
                        gs_sort_digit(order_key(t, load_bits(kb, ksrc, base + at), flip), pass);
                if (rank_tile(nwarps, vt, tile_n, dig, rank, count, start) < 0)
                    FAIL("out of memory");
                for (int d = 0; d < NDIG; ++d)
                    word_put(dc, wide, tile * NDIG + d, in_row == 0 ? ST_PREFIX : ST_AGGREGATE,
                             count[d]);
            }
            for (int64_t i = w1 - 1; i > w0; --i) { /* a random order of the wave */
                const int64_t j = w0 + (int64_t)(rng() % (uint64_t)(i - w0 + 1));
                const int64_t x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
            for (int64_t oi = w0; oi < w1; ++oi) {
                const int64_t tile = order[oi];
                const int64_t row = tile / l.row_tiles, in_row = tile - row * l.row_tiles;
                const int64_t row_start = row * row_len, tile_start = in_row * nv;
                const int64_t base = row_start + tile_start;
                const int tile_n =
                    row_len - tile_start < nv ? (int)(row_len - tile_start) : (int)nv;
                unsigned count[NDIG], start[NDIG];
                uint64_t gbase[NDIG];
                for (int at = 0; at < tile_n; ++at)
                    dig[at] =
                        gs_sort_digit(order_key(t, load_bits(kb, ksrc, base + at), flip), pass);
                if (rank_tile(nwarps, vt, tile_n, dig, rank, count, start) < 0)
                    FAIL("out of memory");
                uint64_t bin = 0; /* the digit scan of the row's counts */
                for (int d = 0; d < NDIG; ++d) {
                    const uint64_t row_count = hist[(row * l.passes + pass) * NDIG + d];
                    uint64_t excl = 0;
                    if (in_row > 0) {
                        for (int64_t k = tile - 1;; --k) {
                            unsigned status;
                            if (k < row * l.row_tiles)
                                FAIL("look-back of tile %lld left its row", (long long)tile);
                            const uint64_t c = word_get(dc, wide, k * NDIG + d, &status);
                            if (status == 0u)
                                FAIL("look-back of tile %lld waits on tile %lld, which has not "
                                     "published (a deadlock)",
                                     (long long)tile, (long long)k);
                            excl += c;
                            if (status & ST_PREFIX)
                                break;
                        }
                        if (!wide && excl + count[d] > GS_SORT_COUNT_MAX)
                            FAIL("prefix past 30 bits");
                        word_put(dc, wide, tile * NDIG + d, ST_PREFIX, excl + count[d]);
                    }
                    gbase[d] = (uint64_t)row_start + bin + excl - start[d];
                    bin += row_count;
                }
                /* the scatter through shared memory, then the stores by slot */
                for (int at = 0; at < tile_n; ++at) {
                    skey[rank[at]] = load_bits(kb, ksrc, base + at);
                    sidx[rank[at]] = ib ? (isrc == NULL ? (uint64_t)(tile_start + at)
                                                        : load_bits(ib, isrc, base + at))
                                        : 0u;
                }
                for (int s = 0; s < tile_n; ++s) {
                    const unsigned d = gs_sort_digit(order_key(t, skey[s], flip), pass);
                    const int64_t g = (int64_t)(gbase[d] + (uint64_t)s);
                    if (g < row_start || g >= row_start + row_len || written[g])
                        FAIL("pass %d tile %lld slot %d stores to %lld (row %lld..%lld, or twice)",
                             pass, (long long)tile, s, (long long)g, (long long)row_start,
                             (long long)(row_start + row_len));
                    written[g] = 1;
                    if (kdst != NULL)
                        store_bits(kb, kdst, g, skey[s]);
                    if (ib)
                        store_bits(after == 0 ? 8 : ib, idst, g, sidx[s]);
                }
            }
            w0 = w1;
        }
        last_keys = kdst;
        last_idx = idst;
    }
done:
    free(scratch);
    free(itmp8);
    free(dig);
    free(rank);
    free(skey);
    free(sidx);
    free(written);
    free(order);
    return rc;
}

/* ---- The block sort: block_nt threads of block_vt keys, rows of at most that many. ---- */
static int model_block(const void *keys, void *keys_out, int64_t *index_out, int64_t rows,
                       int64_t row_len, gs_dtype t, int descending, int block_nt, int block_vt)
{
    const int kb = (int)gs_dtype_size(t);
    const uint64_t flip = gs_sort_flip(t, descending);
    const int nwarps = block_nt / WARP, nvb = block_nt * block_vt;
    int64_t fit = nvb / row_len;
    const int64_t block_rows = fit < GS_SORT_BLOCK_ROWS ? fit : GS_SORT_BLOCK_ROWS;
    uint64_t *ok = malloc(sizeof(uint64_t) * (size_t)nvb),
             *sk = malloc(sizeof(uint64_t) * (size_t)nvb);
    unsigned *ps = malloc(sizeof(unsigned) * (size_t)nvb),
             *sp = malloc(sizeof(unsigned) * (size_t)nvb);
    unsigned *dig = malloc(sizeof(unsigned) * (size_t)nvb),
             *rank = malloc(sizeof(unsigned) * (size_t)nvb);
    unsigned count[NDIG], start[NDIG];
    int rc = 0;

    if (!ok || !sk || !ps || !sp || !dig || !rank)
        FAIL("out of memory");
    if (row_len > nvb || block_rows < 1)
        FAIL("rows of %lld keys do not fit a block of %d", (long long)row_len, nvb);
    for (int64_t row0 = 0; row0 < rows; row0 += block_rows) {
        const int nrows = (int)(rows - row0 < block_rows ? rows - row0 : block_rows);
        const int tile_n = nrows * (int)row_len;
        const int64_t base = row0 * row_len;
        const uint64_t first = order_key(t, load_bits(kb, keys, base), flip);
        uint64_t diff = 0;
        for (int at = 0; at < tile_n; ++at) {
            ok[at] = order_key(t, load_bits(kb, keys, base + at), flip);
            ps[at] = (unsigned)at;
            diff |= ok[at] ^ first;
        }
        /* a round per digit position where the keys differ, then by row */
        for (int round = 0; round <= kb; ++round) {
            if (round < kb && gs_sort_digit(diff, round) == 0u)
                continue;
            if (round == kb && nrows == 1)
                continue;
            for (int at = 0; at < tile_n; ++at)
                dig[at] = round < kb ? gs_sort_digit(ok[at], round) : ps[at] / (unsigned)row_len;
            if (rank_tile(nwarps, block_vt, tile_n, dig, rank, count, start) < 0)
                FAIL("out of memory");
            for (int at = 0; at < tile_n; ++at) {
                sk[rank[at]] = ok[at];
                sp[rank[at]] = ps[at];
            }
            memcpy(ok, sk, sizeof(uint64_t) * (size_t)tile_n);
            memcpy(ps, sp, sizeof(unsigned) * (size_t)tile_n);
        }
        for (int s = 0; s < tile_n; ++s) {
            if (keys_out != NULL)
                store_bits(kb, keys_out, base + s, load_bits(kb, keys, base + ps[s]));
            if (index_out != NULL)
                index_out[base + s] =
                    (int64_t)(ps[s] - (unsigned)s / (unsigned)row_len * (unsigned)row_len);
        }
    }
done:
    free(ok);
    free(sk);
    free(ps);
    free(sp);
    free(dig);
    free(rank);
    return rc;
}

int gs_model_sort(const void *keys, void *keys_out, int64_t *index_out, int64_t rows,
                  int64_t row_len, int dtype, int descending, int path, int nt, int vt,
                  int64_t hist_tiles, int wide, int block_nt, int block_vt, int idx8, uint64_t seed)
{
    const gs_dtype t = (gs_dtype)dtype;
    int rc = 0;
    error_text[0] = 0;
    rng_state = seed;
    if (rows <= 0 || row_len <= 0 || (keys_out == NULL && index_out == NULL))
        return 0;
    if (dtype < 0 || dtype >= GS_NDTYPES || nt % WARP != 0 || block_nt % WARP != 0 || nt < WARP ||
        block_nt < WARP || vt < 1 || block_vt < 1 || hist_tiles < 1)
        FAIL("bad arguments");
    if (path == 0)
        path = gs_sort_in_block(row_len) ? 2 : 1;
    if (path == 2)
        return model_block(keys, keys_out, index_out, rows, row_len, t, descending, block_nt,
                           block_vt);
    return model_device(keys, keys_out, index_out, rows, row_len, t, descending, nt, vt, hist_tiles,
                        wide, idx8);
done:
    return rc;
}
