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

/* ---- The device-wide sort: its state, the kernels' steps on it. ---- */
typedef struct model {
    const void *keys;
    void *keys_out;
    int64_t *index_out;
    int64_t rows, row_len, nv;
    gs_dtype t;
    int kb, nwarps, vt, wide, want_keys, want_index;
    uint64_t flip;
    gs_sort_layout l;
    char *scratch, *itmp8;
    unsigned *dig, *rank;
    unsigned char *written;
    int64_t *order;
    uint64_t *skey, *sidx, *diff, *hist;
    void *desc[2];
    bufs b;
} model;

/* A live pass's buffers (gpuscan/radix.h's plan) and descriptor arrays. */
typedef struct model_pass {
    int pass, after, ib;
    const void *ksrc, *isrc;
    void *kdst, *idst, *dc, *next;
} model_pass;

static void model_free(model *m)
{
    free(m->scratch);
    free(m->itmp8);
    free(m->dig);
    free(m->rank);
    free(m->skey);
    free(m->sidx);
    free(m->written);
    free(m->order);
}

/* The layout, the scratch (poisoned, its head zeroed as the launcher does) and the buffers. */
static int model_setup(model *m, int nt, int64_t hist_tiles, int idx8)
{
    int rc = 0;
    const int64_t nv = m->nv;
    gs_sort_layout *l = &m->l;
    gs_sort_layout_for(m->rows, m->row_len, m->kb, m->want_keys, m->want_index, nv, hist_tiles,
                       m->wide ? 8 : gs_sort_desc_bytes(m->row_len), l);
    m->wide = l->desc_bytes == 8;
    m->nwarps = nt / WARP;
    if (!m->wide && m->row_len > (int64_t)GS_SORT_COUNT_MAX)
        FAIL("rows of %lld keys with 32-bit descriptors", (long long)m->row_len);
    /* pool memory holds anything: the launcher's memset and the kernels must make it right */
    m->scratch = malloc((size_t)l->bytes);
    m->dig = malloc(sizeof(unsigned) * (size_t)nv);
    m->rank = malloc(sizeof(unsigned) * (size_t)nv);
    m->skey = malloc(sizeof(uint64_t) * (size_t)nv);
    m->sidx = malloc(sizeof(uint64_t) * (size_t)nv);
    m->written = malloc((size_t)(m->rows * m->row_len));
    m->order = malloc(sizeof(int64_t) * (size_t)l->tiles);
    if (!m->scratch || !m->dig || !m->rank || !m->skey || !m->sidx || !m->written || !m->order)
        FAIL("out of memory");
    memset(m->scratch, 0xa5, (size_t)l->bytes);
    memset(m->scratch, 0, (size_t)l->zero_bytes);
    m->diff = (uint64_t *)(m->scratch + l->diff);
    m->hist = (uint64_t *)(m->scratch + l->hist);
    m->desc[0] = m->scratch + l->desc0;
    m->desc[1] = m->scratch + l->desc1;
    if (l->ktmp0 < 0 && l->passes >= 2)
        FAIL("no ktmp0 for %d passes", l->passes);
    m->b.key[GS_SORT_IN] = (void *)m->keys;
    m->b.key[GS_SORT_OUT] = m->keys_out;
    m->b.key[GS_SORT_TMP0] = l->ktmp0 >= 0 ? m->scratch + l->ktmp0 : NULL;
    m->b.key[GS_SORT_TMP1] = l->ktmp1 >= 0 ? m->scratch + l->ktmp1 : NULL;
    m->b.idx[GS_SORT_OUT] = m->index_out;
    m->b.idx[GS_SORT_TMP0] = l->itmp >= 0 ? m->scratch + l->itmp : NULL;
    if (idx8 && m->want_index) { /* an index carried in 8 bytes, as for rows past 2^32 keys */
        l->idx_bytes = 8;
        if (l->itmp >= 0) {
            if ((m->itmp8 = malloc((size_t)(8 * m->rows * m->row_len))) == NULL)
                FAIL("out of memory");
            m->b.idx[GS_SORT_TMP0] = m->itmp8;
        }
    }
done:
    return rc;
}

/* The histogram kernel: a block per (row, chunk of hist_tiles tiles). */
static void model_hist(model *m)
{
    const gs_sort_layout *l = &m->l;
    const int64_t blocks = m->rows * l->row_chunks;
    const int64_t quads = l->tiles * NDIG * l->desc_bytes / 16, per = (quads + blocks - 1) / blocks;
    for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t row = blk / l->row_chunks, chunk = blk - row * l->row_chunks;
        const int64_t chunk_keys = l->hist_tiles * m->nv;
        const int64_t start = row * m->row_len + chunk * chunk_keys;
        const int64_t n = m->row_len - chunk * chunk_keys < chunk_keys
                              ? m->row_len - chunk * chunk_keys
                              : chunk_keys;
        const int64_t end = (blk + 1) * per < quads ? (blk + 1) * per : quads;
        for (int64_t i = blk * per; i < end; ++i)
            memset((char *)m->desc[0] + 16 * i, 0, 16);
        unsigned counts[8 * NDIG];
        memset(counts, 0, sizeof counts);
        const uint64_t first =
            order_key(m->t, load_bits(m->kb, m->keys, row * m->row_len), m->flip);
        uint64_t d = 0;
        for (int64_t i = 0; i < n; ++i) {
            const uint64_t k = order_key(m->t, load_bits(m->kb, m->keys, start + i), m->flip);
            d |= k ^ first;
            for (int p = 0; p < l->passes; ++p)
                counts[p * NDIG + gs_sort_digit(k, p)]++;
        }
        *m->diff |= d;
        uint64_t *h = m->hist + row * l->passes * NDIG;
        for (int i = 0; i < l->passes * NDIG; ++i) {
            if (l->row_chunks == 1)
                h[i] = counts[i];
            else
                h[i] += counts[i];
        }
    }
}

/* Pass `pass`'s buffers into *mp, checked against what the last live pass wrote; 1 when no row
 * needs the pass, 0 when it runs, -1 on a wrong plan. */
static int model_plan(model *m, int pass, const void *last_keys, const void *last_idx,
                      model_pass *mp)
{
    int rc = 0;
    const unsigned live = gs_sort_live(*m->diff, m->l.passes);
    if (!((live >> pass) & 1u))
        return 1;
    const int before = __builtin_popcount(live & ((1u << pass) - 1u));
    const int after = __builtin_popcount(live) - 1 - before;
    const gs_sort_buf ks = gs_sort_key_src(before, after, m->want_keys);
    const gs_sort_buf kd = gs_sort_key_dst(after, m->want_keys);
    if (ks == GS_SORT_NONE)
        FAIL("pass %d reads no keys", pass);
    mp->pass = pass;
    mp->after = after;
    mp->ib = m->l.idx_bytes;
    mp->ksrc = m->b.key[ks];
    mp->kdst = kd == GS_SORT_NONE ? NULL : m->b.key[kd];
    const gs_sort_buf is = gs_sort_idx_src(before, after);
    mp->isrc = mp->ib && is != GS_SORT_NONE ? m->b.idx[is] : NULL;
    mp->idst = mp->ib ? m->b.idx[gs_sort_idx_dst(after)] : NULL;
    mp->dc = m->desc[before & 1];
    mp->next = m->desc[(before + 1) & 1];
    if (mp->ksrc == NULL || mp->ksrc != last_keys)
        FAIL("pass %d reads keys from buffer %d, not the last pass's", pass, (int)ks);
    if (mp->kdst == mp->ksrc || (kd != GS_SORT_NONE && mp->kdst == NULL))
        FAIL("pass %d writes keys to buffer %d (reads %d)", pass, (int)kd, (int)ks);
    if (after == 0 && m->want_keys && mp->kdst != m->keys_out)
        FAIL("the last pass writes keys elsewhere than keys_out");
    if (mp->ib && (mp->isrc != last_idx || (before > 0 && mp->isrc == NULL) ||
                   mp->idst == mp->isrc || mp->idst == NULL ||
                   (after == 0 && mp->idst != m->index_out)))
        FAIL("pass %d: index buffers wrong", pass);
    for (int64_t i = 0; i < m->l.tiles * NDIG; ++i) {
        unsigned status;
        if (word_get(mp->dc, m->wide, i, &status) != 0u || status != 0u)
            FAIL("pass %d: descriptor %lld not zero", pass, (long long)i);
    }
done:
    return rc;
}

/* Tile `tile`'s digits at the pass ranked (rank_tile): its keys' slots, each digit's count and
 * first slot. */
static int model_rank(const model *m, const model_pass *mp, int64_t tile, unsigned *count,
                      unsigned *start)
{
    const int64_t row = tile / m->l.row_tiles, in_row = tile - row * m->l.row_tiles;
    const int64_t base = row * m->row_len + in_row * m->nv;
    const int64_t left = m->row_len - in_row * m->nv;
    const int tile_n = left < m->nv ? (int)left : (int)m->nv;
    for (int at = 0; at < tile_n; ++at)
        m->dig[at] = gs_sort_digit(
            order_key(m->t, load_bits(m->kb, mp->ksrc, base + at), m->flip), mp->pass);
    return rank_tile(m->nwarps, m->vt, tile_n, m->dig, m->rank, count, start);
}

/* A tile's first steps: the next pass's words zeroed, its counts published. */
static int model_publish(model *m, const model_pass *mp, int64_t tile)
{
    unsigned count[NDIG], start[NDIG];
    const int64_t in_row = tile % m->l.row_tiles;
    for (int d = 0; d < NDIG; ++d)
        word_put(mp->next, m->wide, tile * NDIG + d, 0u, 0u);
    if (model_rank(m, mp, tile, count, start) < 0) {
        snprintf(error_text, sizeof error_text, "out of memory");
        return -1;
    }
    for (int d = 0; d < NDIG; ++d)
        word_put(mp->dc, m->wide, tile * NDIG + d, in_row == 0 ? ST_PREFIX : ST_AGGREGATE,
                 count[d]);
    return 0;
}

/* Digit d's store base of a tile: its look-back over the row's tiles before it (publishing the
 * tile's prefix), then the row's keys of smaller digits (bin) and the tile's first slot. */
static int model_look_back(model *m, const model_pass *mp, int64_t tile, int d, unsigned count,
                           uint64_t *excl)
{
    int rc = 0;
    const int64_t row = tile / m->l.row_tiles;
    *excl = 0;
    if (tile == row * m->l.row_tiles)
        return 0;
    for (int64_t k = tile - 1;; --k) {
        unsigned status;
        if (k < row * m->l.row_tiles)
            FAIL("look-back of tile %lld left its row", (long long)tile);
        const uint64_t c = word_get(mp->dc, m->wide, k * NDIG + d, &status);
        if (status == 0u)
            FAIL("look-back of tile %lld waits on tile %lld, which has not published (a deadlock)",
                 (long long)tile, (long long)k);
        *excl += c;
        if (status & ST_PREFIX)
            break;
    }
    if (!m->wide && *excl + count > GS_SORT_COUNT_MAX)
        FAIL("prefix past 30 bits");
    word_put(mp->dc, m->wide, tile * NDIG + d, ST_PREFIX, *excl + count);
done:
    return rc;
}

/* A tile's last steps: look back per digit, scatter through shared memory, store by slot. */
static int model_store(model *m, const model_pass *mp, int64_t tile)
{
    int rc = 0;
    const int64_t row = tile / m->l.row_tiles, in_row = tile - row * m->l.row_tiles;
    const int64_t row_start = row * m->row_len, tile_start = in_row * m->nv;
    const int64_t base = row_start + tile_start;
    const int tile_n =
        m->row_len - tile_start < m->nv ? (int)(m->row_len - tile_start) : (int)m->nv;
    unsigned count[NDIG], start[NDIG];
    uint64_t gbase[NDIG], bin = 0; /* bin: the digit scan of the row's counts */
    if (model_rank(m, mp, tile, count, start) < 0)
        FAIL("out of memory");
    for (int d = 0; d < NDIG; ++d) {
        uint64_t excl;
        if (model_look_back(m, mp, tile, d, count[d], &excl) < 0)
            return -1;
        gbase[d] = (uint64_t)row_start + bin + excl - start[d];
        bin += m->hist[(row * m->l.passes + mp->pass) * NDIG + d];
    }
    for (int at = 0; at < tile_n; ++at) {
        m->skey[m->rank[at]] = load_bits(m->kb, mp->ksrc, base + at);
        m->sidx[m->rank[at]] = mp->ib ? (mp->isrc == NULL ? (uint64_t)(tile_start + at)
                                                          : load_bits(mp->ib, mp->isrc, base + at))
                                      : 0u;
    }
    for (int s = 0; s < tile_n; ++s) {
        const unsigned d = gs_sort_digit(order_key(m->t, m->skey[s], m->flip), mp->pass);
        const int64_t g = (int64_t)(gbase[d] + (uint64_t)s);
        if (g < row_start || g >= row_start + m->row_len || m->written[g])
            FAIL("pass %d tile %lld slot %d stores to %lld (row %lld..%lld, or twice)", mp->pass,
                 (long long)tile, s, (long long)g, (long long)row_start,
                 (long long)(row_start + m->row_len));
        m->written[g] = 1;
        if (mp->kdst != NULL)
            store_bits(m->kb, mp->kdst, g, m->skey[s]);
        if (mp->ib)
            store_bits(mp->after == 0 ? 8 : mp->ib, mp->idst, g, m->sidx[s]);
    }
done:
    return rc;
}

/* One live pass: tiles taken in order, processed in waves: every tile of a wave publishes its
 * counts, then their look-backs and stores run in a random order. */
static int model_pass_run(model *m, const model_pass *mp)
{
    memset(m->written, 0, (size_t)(m->rows * m->row_len));
    for (int64_t w0 = 0; w0 < m->l.tiles;) {
        const int64_t wave = 1 + (int64_t)(rng() % 6);
        const int64_t w1 = w0 + wave < m->l.tiles ? w0 + wave : m->l.tiles;
        for (int64_t tile = w0; tile < w1; ++tile) {
            m->order[tile] = tile;
            if (model_publish(m, mp, tile) < 0)
                return -1;
        }
        for (int64_t i = w1 - 1; i > w0; --i) { /* a random order of the wave */
            const int64_t j = w0 + (int64_t)(rng() % (uint64_t)(i - w0 + 1));
            const int64_t x = m->order[i];
            m->order[i] = m->order[j];
            m->order[j] = x;
        }
        for (int64_t oi = w0; oi < w1; ++oi)
            if (model_store(m, mp, m->order[oi]) < 0)
                return -1;
        w0 = w1;
    }
    return 0;
}

static int model_device(const void *keys, void *keys_out, int64_t *index_out, int64_t rows,
                        int64_t row_len, gs_dtype t, int descending, int nt, int vt,
                        int64_t hist_tiles, int wide, int idx8)
{
    model m;
    int rc = 0;
    memset(&m, 0, sizeof m);
    m.keys = keys;
    m.keys_out = keys_out;
    m.index_out = index_out;
    m.rows = rows;
    m.row_len = row_len;
    m.t = t;
    m.kb = (int)gs_dtype_size(t);
    m.vt = vt;
    m.nv = (int64_t)nt * vt;
    m.wide = wide;
    m.want_keys = keys_out != NULL;
    m.want_index = index_out != NULL;
    m.flip = gs_sort_flip(t, descending);
    if ((rc = model_setup(&m, nt, hist_tiles, idx8)) < 0)
        goto done;
    model_hist(&m);
    const void *last_keys = keys; /* what the last live pass wrote (the input before any) */
    const void *last_idx = NULL;
    for (int pass = 0; pass < m.l.passes; ++pass) {
        model_pass mp;
        const int skip = model_plan(&m, pass, last_keys, last_idx, &mp);
        if (skip < 0 || (!skip && model_pass_run(&m, &mp) < 0)) {
            rc = -1;
            goto done;
        }
        if (!skip) {
            last_keys = mp.kdst;
            last_idx = mp.idst;
        }
    }
done:
    model_free(&m);
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
