/*
 * gpuscan/config.h - tile geometry of the device-wide kernels, defined once.
 * Level: configuration, shared by kernels/ and csrc/ (csrc reports it to the tests, which pick
 * their sizes from it: NV-1, NV, NV+1, many tiles).  Vocabulary as in moderngpu: NT threads per
 * block, VT values per thread, NV = NT*VT values per tile.  Everything else is derived.
 */
#ifndef GS_CONFIG_H
#define GS_CONFIG_H

#include "gpuscan/types.h"

/* Threads per block: 8 warps, enough to hide the look-back of one block behind the loads of
 * the other blocks resident on the same multiprocessor. */
#define GS_NT 256
/* Values per thread: 16 four-byte values are four 16-byte loads in flight per thread, 16 KiB
 * per tile, which amortises one tile's look-back over enough bytes to run at memory speed. */
#define GS_VT 16
#define GS_NV (GS_NT * GS_VT)
#define GS_WARP 32
#define GS_NWARPS (GS_NT / GS_WARP)

#if (GS_NT % GS_WARP) != 0 || GS_NWARPS > GS_WARP
#error "GS_NT must be a multiple of the warp size and at most 32 warps"
#endif
#if (GS_VT & (GS_VT - 1)) != 0 || GS_VT < 2 || GS_VT > 32
#error \
    "GS_VT must be a power of two in [2, 32] (one head bit per value in a word; whole 16-byte vectors per thread for every dtype)"
#endif

/* Alignment of each region of the scan scratch, in bytes (a full L2 line). */
#define GS_SCRATCH_ALIGN 128

static inline GS_HD int64_t gs_round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* Tiles a device-wide pass over n values uses. */
static inline GS_HD int64_t gs_scan_tiles(int64_t n)
{
    return (n + GS_NV - 1) / GS_NV;
}

/* Bytes of one tile's look-back descriptor: two 16-byte words (value, compensation). */
#define GS_TILE_DESC_BYTES 32
/* The anchored look-back of float add and mul (device/lookback.cuh): every GS_ANCHOR_EVERY-th
 * tile publishes its exclusive prefix in two more 16-byte words (value, compensation), and a tile
 * starts from the last anchor at least GS_ANCHOR_LAG tiles back: more tiles than start during one
 * look-back, so that anchor's prefix is out. A tile then reads LAG to LAG + EVERY - 1 aggregates,
 * 224 + 31 = 255: one per thread of a block (measured, docs/performance-notes.md). */
#define GS_ANCHOR_EVERY 32
#define GS_ANCHOR_LAG 224
#if GS_ANCHOR_LAG < 1 || GS_ANCHOR_EVERY < 1
#error "an anchor lies at least one tile back (a tile would wait on its own prefix)"
#endif
#define GS_ANCHOR_DESC_BYTES 32

/* Scratch of one decoupled look-back scan over n values: the tile counter (padded to a line),
 * one descriptor per tile and one per anchor; zeroed once and reused by scans with distinct
 * epochs (gs_scan_desc). Pure, so the tests can check it. */
static inline size_t gs_scan_scratch_bytes(int64_t n)
{
    int64_t tiles = gs_scan_tiles(n);
    if (tiles == 0)
        return 0;
    return (size_t)(GS_SCRATCH_ALIGN + GS_TILE_DESC_BYTES * tiles +
                    GS_ANCHOR_DESC_BYTES * ((tiles + GS_ANCHOR_EVERY - 1) / GS_ANCHOR_EVERY));
}

/* Scratch of one split or compact over n values (kernels/dispatch/split.cu): a header line of
 * 64-bit words (below), one look-back descriptor per tile, then the flags as one bit per value
 * (GS_NV / 8 bytes per tile); the count pass writes every descriptor and mask word it reads. The
 * header's running word is zero when a count pass starts and it leaves it zero, so a scratch is
 * zeroed once, when allocated (cuda/scan_scratch.c). Pure, so the tests can check it. */
#define GS_SPLIT_TOTAL 0   /* header word: the flagged count, written by the count pass */
#define GS_SPLIT_RUNNING 1 /* header word: the count pass's running sum and finished blocks */
/* The running word: the flagged count so far in its low GS_SPLIT_SUM_BITS bits, the finished
 * blocks above them, so one atomic per block adds both and tells the last block (no fence: one
 * address). More blocks than the high 24 bits hold (2^39 values) are refused. */
#define GS_SPLIT_SUM_BITS 40
static inline GS_HD int64_t gs_split_mask_offset(int64_t n)
{
    return GS_SCRATCH_ALIGN + gs_round_up(GS_TILE_DESC_BYTES * gs_scan_tiles(n), GS_SCRATCH_ALIGN);
}

static inline size_t gs_split_scratch_bytes(int64_t n)
{
    int64_t tiles = gs_scan_tiles(n);
    if (tiles == 0)
        return 0;
    return (size_t)(gs_split_mask_offset(n) + tiles * (GS_NV / 8));
}

/* The chunks of a reduction's row: one block reduces one chunk into a partial, and the row's
 * partials are combined in chunk order. A chunk holds GS_REDUCE_MIN_CHUNK values, or for rows of
 * more than GS_REDUCE_SPLIT of those, a multiple of it that cuts the row into about
 * GS_REDUCE_SPLIT chunks, up to GS_REDUCE_MAX_CHUNK values. Small rows thus spread over many
 * blocks; long ones over several waves of short-lived blocks (so that every multiprocessor
 * finishes at about the same time; docs/performance-notes.md, reduce). The chunks depend on
 * row_len only, so a float sum is grouped the same way on every run, device and thread count. A
 * multiple of 16 values keeps every chunk as aligned as the row's first, and of 4096 matches the
 * CPU backend's blocks (cpu/reduce.c). */
#define GS_REDUCE_MIN_CHUNK 4096
#define GS_REDUCE_SPLIT 4096
#define GS_REDUCE_MAX_CHUNK (4 * GS_REDUCE_MIN_CHUNK)

/* Values per chunk of a row of row_len values (>= 1). */
static inline GS_HD int64_t gs_reduce_chunk_len(int64_t row_len)
{
    const int64_t per = (row_len + GS_REDUCE_SPLIT - 1) / GS_REDUCE_SPLIT;
    const int64_t m = (per + GS_REDUCE_MIN_CHUNK - 1) / GS_REDUCE_MIN_CHUNK;
    const int64_t most = GS_REDUCE_MAX_CHUNK / GS_REDUCE_MIN_CHUNK;
    return (m < 1 ? 1 : m > most ? most : m) * GS_REDUCE_MIN_CHUNK;
}

static inline GS_HD int64_t gs_reduce_chunks(int64_t row_len)
{
    const int64_t c = gs_reduce_chunk_len(row_len);
    return (row_len + c - 1) / c;
}

/* Scratch of one reduction: a partial (two 8-byte words: value and compensation) per chunk of
 * every row of more than one chunk, and one counter per row (in a one-launch reduction the chunk
 * to finish last combines the row's partials). The counters are zero when a reduction starts and
 * when it ends, so one zeroed scratch serves every reduction in stream order. Pure (tests). */
static inline size_t gs_reduce_scratch_bytes(int64_t rows, int64_t row_len)
{
    int64_t chunks = gs_reduce_chunks(row_len);
    if (rows == 0 || chunks <= 1)
        return 0;
    return (size_t)(gs_round_up(4 * rows, GS_SCRATCH_ALIGN) + 16 * rows * chunks);
}

/* The segmented reductions' tile (dispatch/segreduce.cu): a warp's, GS_VT values per lane. */
#define GS_SEG_W (GS_WARP * GS_VT)

static inline GS_HD int64_t gs_segreduce_tiles(int64_t n)
{
    return (n + GS_SEG_W - 1) / GS_SEG_W;
}

/* Scratch of one segmented reduction over n values in nseg segments (dispatch/segreduce.cu): a
 * sorted partition's levels write two buffers in turn (level 0 the first, level 1 the second,
 * sized for its 2 * tiles values; later levels are smaller), 24 bytes per tile: 2 partials of at
 * most 8 bytes and an int64 id. Any other segments need none. Pure, so the tests can check it. */
static inline int64_t gs_segreduce_part_bytes(int64_t tiles)
{
    return gs_round_up(24 * tiles, GS_SCRATCH_ALIGN);
}

/* Where the partials buffer `which` (0 or 1) starts in the scratch. */
static inline int64_t gs_segreduce_part_offset(int64_t n, int which)
{
    return which == 0 ? 0 : gs_segreduce_part_bytes(gs_segreduce_tiles(n));
}

static inline size_t gs_segreduce_scratch_bytes(int64_t n, int64_t nseg, int sorted)
{
    if (n == 0 || nseg == 0 || !sorted)
        return 0;
    return (size_t)(gs_segreduce_part_offset(n, 1) +
                    gs_segreduce_part_bytes(gs_segreduce_tiles(2 * gs_segreduce_tiles(n))));
}

/* The linear recurrence's tile (dispatch/linrec.cu): GS_LR_VT steps per thread. Half the
 * scan's, since a step reads two values (a and b): a float32 tile of both is 16 KiB as an int32
 * scan tile is, and the lookahead driver's three tiles in shared memory leave room for four blocks
 * per multiprocessor. Both drivers use it, so they give the same bits. */
#define GS_LR_VT 8
#define GS_LR_NV (GS_NT * GS_LR_VT)
#if (GS_LR_VT & (GS_LR_VT - 1)) != 0 || GS_LR_VT < 4 || GS_LR_VT > GS_VT
#error "GS_LR_VT must be a power of two in [4, GS_VT]: whole float32 pieces, the scan's row count"
#endif

/* Tiles of a linear recurrence over n steps. */
static inline GS_HD int64_t gs_linrec_tiles(int64_t n)
{
    return (n + GS_LR_NV - 1) / GS_LR_NV;
}

/* Scratch of one linear recurrence over n values (dispatch/linrec.cu): the tile counter (a
 * line), one look-back descriptor per tile and one per anchor, zeroed before the launch. Pure,
 * so the tests can check it. */
#define GS_LINREC_TILE_BYTES 32   /* two 16-byte words: the tile's pair (A, B) as doubles */
#define GS_LINREC_ANCHOR_BYTES 64 /* four: the anchor's exclusive prefix, double-double A, B */

static inline size_t gs_linrec_scratch_bytes(int64_t n)
{
    int64_t tiles = gs_linrec_tiles(n);
    if (tiles == 0)
        return 0;
    return (size_t)(GS_SCRATCH_ALIGN + GS_LINREC_TILE_BYTES * tiles +
                    GS_LINREC_ANCHOR_BYTES * ((tiles + GS_ANCHOR_EVERY - 1) / GS_ANCHOR_EVERY));
}

/* ---- the radix sort (dispatch/sort.cu; gpuscan/radix.h: its keys, digits and plan) ----
 * Two paths (gs_sort_in_block): rows of at most GS_SORT_BLOCK_NV keys are sorted inside one
 * block each, several short rows to a block; longer rows by the device-wide LSD sort (Onesweep,
 * Adinets & Merrill 2022): one histogram kernel counts every digit position of every row at
 * once, then one kernel per digit position moves every tile of every row, a 2^8-way stable
 * split with a per-digit decoupled look-back along its row. */

/* Bits of a digit: a pass is a 2^8-way stable split, so bool and one-byte keys take one pass,
 * four-byte keys four, and a tile's per-digit counts are 256 words a thread each can publish. */
#define GS_SORT_DIGIT_BITS 8
#define GS_SORT_DIGITS (1 << GS_SORT_DIGIT_BITS)
/* Threads of a device-wide pass and of the histogram: 12 warps, CUB's Hopper tuning of its
 * Onesweep pass; the first GS_SORT_DIGITS threads own one digit each (counts, look-back). */
#define GS_SORT_NT 384
#define GS_SORT_NWARPS (GS_SORT_NT / GS_WARP)
/* Keys per thread of a pass from a register budget: a key takes one 32-bit word (two for an
 * 8-byte key), its digit and then its rank one, an index payload one or two. Keys of at most 4
 * bytes without an index run three blocks of 384 threads a multiprocessor (56 registers a
 * thread) with 44 words, 22 keys (float32: 40 words, 20 keys); every other pass two blocks (80
 * registers) with 54 words: 18 four-byte keys with a 32-bit index, 18 eight-byte keys, 10 with a
 * 64-bit index. A compile-time constant at every use (-D overrides them for tuning builds).
 * Measured on an H200, ms at 2^28:
 * two blocks and 40 / 46 / 54 words (2026-11-29, tools/sort_check.cu --bench): u32 7.55 / 7.05 /
 * 6.66, f32 8.27 / 7.83 / 7.38, f64 21.6 / 20.5 / 18.5, argsort u32 10.6 / 9.63 / 9.18; then
 * (2026-11-30, one job) two blocks and 54 words against three and 32 / 36 / 40: u32 6.47 against
 * 6.78 / 6.51 / 6.43, f32 6.68 against 6.88 / 6.62 / 6.43, argsort u32 8.97 against 9.93 / 9.31 /
 * 9.29 (at 2^24 u32 0.468 against 0.459, f32 0.485 against 0.469). CUB's Onesweep (384 threads)
 * compiles to 56 registers for int32 and float32 keys and 74 for uint32, and sorts the first two
 * 1.19x as fast as the third, which their occupancy (three blocks an SM against two) explains. */
#ifndef GS_SORT_REG_WORDS
#define GS_SORT_REG_WORDS 54
#endif
#ifndef GS_SORT_KEYS_REG_WORDS
#define GS_SORT_KEYS_REG_WORDS 44
#endif
#ifndef GS_SORT_FLOAT_KEYS_REG_WORDS
#define GS_SORT_FLOAT_KEYS_REG_WORDS 40
#endif
/* Whether a pass of keys of key_bytes with an index of idx_bytes is a keys-alone pass of at most
 * 4-byte keys (three blocks a multiprocessor: GS_SORT_KEYS_REG_WORDS, or
 * GS_SORT_FLOAT_KEYS_REG_WORDS for float32 keys). */
#define GS_SORT_KEYS_ALONE(key_bytes, idx_bytes) ((key_bytes) <= 4 && (idx_bytes) == 0)
/* Whether a pass keeps each digit's store base and count in shared memory through the ranking
 * and takes the tile's length and destinations again after it, rather than holding them in
 * registers across it (is_float: the kernel's keys are floats): fewer registers live, which
 * measured faster for 4-byte integer keys alone (and let them take 44 words) and for every pass
 * with an index, slower for 8-byte and float32 keys alone (docs/performance-notes.md, "Store
 * bases in shared memory"). */
#define GS_SORT_BASES_SHARED(key_bytes, idx_bytes, is_float) \
    ((idx_bytes) > 0 || ((key_bytes) <= 4 && !(is_float)))
/* Whether a pass scatters a whole tile's keys into shared memory without testing each one's
 * presence (a partial tile always tests; every pass counts a whole tile untested): every pass but
 * those of integer keys alone, whose pass measured slower so, with the scatter after the whole
 * tile's ranking (docs/performance-notes.md, "The pass's instructions"; not measured again since
 * each key is put as ranked). */
#define GS_SORT_UNCHECKED_SCATTER(key_bytes, idx_bytes, is_float) \
    (!GS_SORT_KEYS_ALONE(key_bytes, idx_bytes) || (is_float))
#define GS_SORT_PASS_BLOCKS(key_bytes, idx_bytes) (GS_SORT_KEYS_ALONE(key_bytes, idx_bytes) ? 3 : 2)
#define GS_SORT_VT(key_bytes, idx_bytes, is_float)                                      \
    ((!GS_SORT_KEYS_ALONE(key_bytes, idx_bytes) ? GS_SORT_REG_WORDS                     \
      : (is_float)                              ? GS_SORT_FLOAT_KEYS_REG_WORDS           \
                                                : GS_SORT_KEYS_REG_WORDS) /              \
     (((key_bytes) > 4 ? 2 : 1) + 1 + (idx_bytes) / 4))
#define GS_SORT_VT_MAX \
    (GS_SORT_VT(1, 0, 0) > GS_SORT_VT(1, 4, 0) ? GS_SORT_VT(1, 0, 0) : GS_SORT_VT(1, 4, 0))
/* A look-back descriptor: a 32-bit word, a status in its two top bits and a count below (so a
 * reader sees a count and its status from one access), for rows of at most GS_SORT_COUNT_MAX keys;
 * a 64-bit word (a 62-bit count) for longer rows. */
#define GS_SORT_COUNT_MAX ((1u << 30) - 1u)
/* Tiles a histogram block counts, at most: 8 tiles, about 70k four-byte keys, so a block's
 * 256-bin counters (one set per digit position) are added to the row's once per 70k keys; fewer
 * where that would leave fewer than GS_SORT_HIST_MIN_BLOCKS blocks (gs_sort_hist_tiles). */
#define GS_SORT_HIST_TILES 8
#define GS_SORT_HIST_MIN_BLOCKS 512
/* The short rows' block sort (agent/radix.cuh): 8 warps of 16 keys, a tile of 4096 keys; its
 * rows of at most that many keys each sit whole in one block, at most GS_SORT_DIGITS rows to a
 * block (a row's index in the block is one more 8-bit digit, sorted last). */
#define GS_SORT_BLOCK_NT 256
#define GS_SORT_BLOCK_VT 16
#define GS_SORT_BLOCK_NV (GS_SORT_BLOCK_NT * GS_SORT_BLOCK_VT)
#define GS_SORT_BLOCK_NWARPS (GS_SORT_BLOCK_NT / GS_WARP)
#define GS_SORT_BLOCK_ROWS GS_SORT_DIGITS
/* Rows of more than GS_SORT_THREAD_ROW_MAX and at most this many keys are sorted by a group of
 * lanes each (agent/radix.cuh's radix_warp_rows: a key's rank counted against its row's keys),
 * GS_SORT_BLOCK_NT threads a block. */
#define GS_SORT_WARP_ROW_MAX 32
/* Rows of at most this many keys are sorted by a thread each (agent/radix.cuh's
 * radix_thread_rows: a sorting network in registers), GS_SORT_BLOCK_NT threads a block. */
#define GS_SORT_THREAD_ROW_MAX 16

#if GS_SORT_NT % GS_WARP != 0 || GS_SORT_NT < GS_SORT_DIGITS || GS_SORT_NT > 1024
#error "GS_SORT_NT: whole warps, at least one thread per digit"
#endif
#if GS_SORT_BLOCK_NT != GS_SORT_DIGITS
#error "the block sort's digit scan takes one digit per thread: GS_SORT_BLOCK_NT == GS_SORT_DIGITS"
#endif
#if GS_SORT_BLOCK_NV > 65536
#error "the block sort keeps a key's position in its tile in 16 bits"
#endif
#if GS_SORT_VT(8, 8, 0) < 1
#error "GS_SORT_REG_WORDS leaves an 8-byte key with a 64-bit index no key per thread"
#endif

/* Whether rows of row_len keys are sorted inside one block each. */
static inline GS_HD int gs_sort_in_block(int64_t row_len)
{
    return row_len <= GS_SORT_BLOCK_NV;
}

/* The lanes of a row sorted by radix_warp_rows (row_len <= GS_SORT_WARP_ROW_MAX): the least
 * power of two at least row_len. */
static inline GS_HD int64_t gs_sort_row_lanes(int64_t row_len)
{
    int64_t w = 1;
    while (w < row_len)
        w *= 2;
    return w;
}

/* Rows of row_len (<= GS_SORT_BLOCK_NV) keys that one block sorts. */
static inline GS_HD int64_t gs_sort_block_rows(int64_t row_len)
{
    const int64_t fit = GS_SORT_BLOCK_NV / row_len;
    return fit < GS_SORT_BLOCK_ROWS ? fit : GS_SORT_BLOCK_ROWS;
}

/* Bytes of an index payload as a pass carries it: 0 without one, 4 while every position in a
 * row fits 32 bits, else 8 (the last pass writes int64 either way). */
static inline GS_HD int gs_sort_index_bytes(int64_t row_len, int want_index)
{
    return !want_index ? 0 : row_len <= ((int64_t)1 << 32) ? 4 : 8;
}

/* Bytes of a look-back descriptor for rows of row_len keys. */
static inline GS_HD int gs_sort_desc_bytes(int64_t row_len)
{
    return row_len <= (int64_t)GS_SORT_COUNT_MAX ? 4 : 8;
}

/* The geometry and scratch of one device-wide sort, every size a function of its arguments
 * (gs_sort_layout_for takes the tile, the histogram chunk and the descriptor's width, so that the
 * C model, tools/sort_model.c, runs the same arithmetic on small tiles). Scratch, in this order,
 * each region aligned to GS_SCRATCH_ALIGN:
 *   header  the tile counter (a uint32 at 0: zero when a pass starts, and left so by the block
 *           that takes the last tile), whether a key's bits are not given back by its order key
 *           (a uint32 at 4: -0.0, a NaN, a bool; else the passes between the first and the last
 *           move order keys) and the keys' difference mask (a uint64 at 8: the OR over
 *           every key of key ^ its row's first key, as order keys; digit positions where it is 0
 *           need no pass);
 *   hist    uint64 counts [rows][passes][GS_SORT_DIGITS]: the histogram blocks add theirs, or
 *           where one block counts a whole row (row_chunks == 1) store them;
 *   desc    two arrays of tiles * GS_SORT_DIGITS look-back descriptors of desc_bytes, used by
 *           the live passes in turn (each pass zeroes the other's for the pass after it; the
 *           histogram kernel zeroes the first);
 *   ktmp0, ktmp1  keys between passes (ktmp1 only when no keys are wanted: the passes then
 *           alternate between the two scratch arrays, and the last writes none);
 *   itmp    indices between passes (idx_bytes each).
 * The launcher zeroes the header, and hist unless its blocks store it whole (zero_bytes), before
 * the histogram kernel. An offset of -1 marks a region the sort does not need. */
typedef struct gs_sort_layout {
    int passes;         /* digit positions: the key's bytes */
    int idx_bytes;      /* gs_sort_index_bytes */
    int desc_bytes;     /* gs_sort_desc_bytes */
    int64_t nv;         /* keys per tile */
    int64_t row_tiles;  /* tiles per row (the last one partial) */
    int64_t tiles;      /* rows * row_tiles */
    int64_t hist_tiles; /* tiles a histogram block counts */
    int64_t row_chunks; /* histogram blocks per row */
    int64_t counter, lossy, diff, hist, desc0, desc1, ktmp0, ktmp1, itmp;
    int64_t zero_bytes; /* the header, and hist where blocks add to it */
    int64_t bytes;      /* the whole scratch */
} gs_sort_layout;

static inline GS_HD int64_t gs_sort_region(int64_t *at, int64_t bytes)
{
    const int64_t start = *at;
    *at += gs_round_up(bytes, GS_SCRATCH_ALIGN);
    return start;
}

static inline GS_HD void gs_sort_layout_for(int64_t rows, int64_t row_len, int key_bytes,
                                            int want_keys, int want_index, int64_t nv,
                                            int64_t hist_tiles, int desc_bytes, gs_sort_layout *l)
{
    const int64_t n = rows * row_len;
    int64_t at = 0;
    l->passes = key_bytes;
    l->idx_bytes = gs_sort_index_bytes(row_len, want_index);
    l->desc_bytes = desc_bytes;
    l->nv = nv;
    l->row_tiles = (row_len + nv - 1) / nv;
    l->tiles = rows * l->row_tiles;
    l->hist_tiles = hist_tiles;
    l->row_chunks = (l->row_tiles + hist_tiles - 1) / hist_tiles;
    l->counter = gs_sort_region(&at, 16);
    l->lossy = l->counter + 4;
    l->diff = l->counter + 8;
    l->zero_bytes = at;
    l->hist = gs_sort_region(&at, 8 * rows * l->passes * GS_SORT_DIGITS);
    if (l->row_chunks > 1)
        l->zero_bytes = at;
    l->desc0 = gs_sort_region(&at, desc_bytes * l->tiles * GS_SORT_DIGITS);
    l->desc1 = gs_sort_region(&at, desc_bytes * l->tiles * GS_SORT_DIGITS);
    /* keys_out, when wanted, is one of the two buffers a key pass alternates between */
    l->ktmp0 = l->passes >= 2 ? gs_sort_region(&at, n * key_bytes) : -1;
    l->ktmp1 = !want_keys && l->passes >= 3 ? gs_sort_region(&at, n * key_bytes) : -1;
    l->itmp = l->idx_bytes && l->passes >= 2 ? gs_sort_region(&at, n * l->idx_bytes) : -1;
    l->bytes = at;
}

/* Keys per tile of a device-wide pass over keys of key_bytes (floats: is_float) with an index of
 * idx_bytes. */
static inline GS_HD int64_t gs_sort_nv(int key_bytes, int is_float, int idx_bytes)
{
    return (int64_t)GS_SORT_NT * GS_SORT_VT(key_bytes, idx_bytes, is_float);
}

/* Tiles a histogram block counts for `tiles` tiles in all: GS_SORT_HIST_TILES, or fewer so
 * that a small sort still has GS_SORT_HIST_MIN_BLOCKS blocks counting it (one tile at least). */
static inline GS_HD int64_t gs_sort_hist_tiles(int64_t tiles)
{
    const int64_t per = tiles / GS_SORT_HIST_MIN_BLOCKS;
    return per < 1 ? 1 : per > GS_SORT_HIST_TILES ? GS_SORT_HIST_TILES : per;
}

/* The device-wide sort's layout with the kernels' geometry. */
static inline GS_HD void gs_sort_layout_of(int64_t rows, int64_t row_len, int key_bytes,
                                           int is_float, int want_keys, int want_index,
                                           gs_sort_layout *l)
{
    const int64_t nv = gs_sort_nv(key_bytes, is_float, gs_sort_index_bytes(row_len, want_index));
    gs_sort_layout_for(rows, row_len, key_bytes, want_keys, want_index, nv,
                       gs_sort_hist_tiles(rows * ((row_len + nv - 1) / nv)),
                       gs_sort_desc_bytes(row_len), l);
}

/* Scratch of one sort or argsort (gs_sort_desc) of rows x row_len keys of key_bytes each: none
 * for rows sorted inside a block, else the layout's. Pure, so the tests can check it. */
static inline size_t gs_sort_scratch_bytes(int64_t rows, int64_t row_len, int key_bytes,
                                           int is_float, int want_keys, int want_index)
{
    gs_sort_layout l;
    if (rows <= 0 || row_len <= 0 || (!want_keys && !want_index) || gs_sort_in_block(row_len))
        return 0;
    gs_sort_layout_of(rows, row_len, key_bytes, is_float, want_keys, want_index, &l);
    return (size_t)l.bytes;
}

/* ---- histogram kernels (dispatch/hist.cu) ---- */

/* Threads per histogram block: 32 warps, one block per multiprocessor (measured best on an
 * H200, docs/performance-notes.md): a single block may take all of its shared memory, so large
 * bin counts split into fewer slices, and fewer blocks merge into the device result. */
#define GS_HIST_NT 1024
/* 16-byte loads in flight per thread: 1024 threads x 4 x 16 B = 64 KiB per multiprocessor per
 * step, above what HBM3's latency x bandwidth per SM asks (~25 KiB). */
#define GS_HIST_UNROLL 4
/* Blocks per multiprocessor the kernels are compiled and their shared memory planned for: one
 * lets ptxas use the registers the unrolled loads need, with no spills. */
#define GS_HIST_MIN_BLOCKS 1
/* Most bin slices (blocks that each count a part of the bin range over the same values) the
 * "auto" method takes before global atomics are faster: each slice reads the values again
 * (from L2 when the slices of one part run together). */
#define GS_HIST_MAX_SLICES 8
/* Shared memory of a block's copy of a 1-byte dtype's table of bins (256 int32). */
#define GS_HIST_TABLE_BYTES 1024

#if (GS_HIST_NT % GS_WARP) != 0
#error "GS_HIST_NT must be a multiple of the warp size"
#endif

/* How a shared-memory histogram of nbins accumulators of acc_bytes each splits to fit
 * `budget` bytes of shared memory per block: `slices` blocks each take slice_bins bins (the
 * last one fewer), with `replicas` copies of the slice (one per group of warps, cutting
 * contention) when acc_bytes == 4 and they fit.  Pure, so the tests can check it. */
static inline GS_HD void gs_hist_plan(int64_t nbins, int acc_bytes, int64_t budget, int64_t *slices,
                                      int64_t *slice_bins, int *replicas)
{
    int64_t per_slice = budget / acc_bytes;
    if (per_slice < 1)
        per_slice = 1;
    *slices = (nbins + per_slice - 1) / per_slice;
    if (*slices < 1)
        *slices = 1;
    *slice_bins = (nbins + *slices - 1) / *slices;
    *slices = (nbins + *slice_bins - 1) / *slice_bins; /* no empty slice */
    *replicas = 1;
    if (acc_bytes == 4) {
        int64_t r = budget / (*slice_bins * 4);
        *replicas = r >= GS_HIST_NT / GS_WARP ? GS_HIST_NT / GS_WARP : r < 1 ? 1 : (int)r;
    }
}

#endif /* GS_CONFIG_H */
