/*
 * device/tile_state.cuh - the device-wide state of a single-pass scan: the tile counter and the
 * tiles' look-back descriptors, how they are published and read, and how a scratch buffer is
 * carved into them.
 * Level: device (below the look-back, device/lookback.cuh, and the agents).  The epoch tags of
 * the descriptors are explained once, in csrc/cuda/scan_scratch.c.
 */
#ifndef GS_TILE_STATE_CUH
#define GS_TILE_STATE_CUH

#include "thread/load_store.cuh"

/* Tile descriptors of the look-back (device/lookback.cuh). A tile publishes a value as one 16-byte
 * word written and read by a single vector access of two 8-byte halves: {status:32 | value bits
 * 0-31} and {status:32 | value bits 32-63}. PTX makes each aligned 8-byte access single-copy
 * atomic but not the 16-byte pair, so a reader accepts a word only when both halves show the same
 * status: a tile's status only moves forward (INVALID, AGGREGATE, PREFIX), so equal statuses mean
 * both halves come from the same publication, and no fence is needed on either side. A second
 * word carries the compensation of a float64 add, validated the same way. Accesses use .cg (L2):
 * a word read early from a stale L1 line would never change.
 * The status's bits from GS_ST_TAG_SHIFT up hold the scan's tag (its epoch, gs_scan_desc): a
 * word written by another scan over the same scratch reads as INVALID, so a scratch reused by
 * scans with distinct epochs needs no zeroing between them.  Tag 0 is a zeroed scratch's (or one
 * whose every polled word was written first: the split's and the segment heads' count passes,
 * agent/split.cuh). */
#define GS_ST_INVALID 0u
#define GS_ST_AGGREGATE 1u /* the tile's aggregate is published */
#define GS_ST_PREFIX 2u    /* the tile's inclusive prefix is published */
#define GS_ST_HEAD 4u      /* the tile's aggregate contains a segment head */
#define GS_ST_TAG_SHIFT 3
static_assert(GS_EPOCH_LIMIT == 1u << (32 - GS_ST_TAG_SHIFT), "an epoch fills the tag's bits");

typedef struct gs_tile_word {
    unsigned status; /* GS_ST_INVALID while the two halves disagree or carry another tag */
    unsigned long long value;
} gs_tile_word;

/* One 16-byte word's two 8-byte halves, read or written by one vector access through L2 (each
 * half single-copy atomic, not the pair). */
static __device__ __forceinline__ void gs_word_load(const ulonglong2 *p, unsigned long long *a,
                                                    unsigned long long *b)
{
    asm volatile("ld.global.cg.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}

static __device__ __forceinline__ void gs_word_store(ulonglong2 *p, unsigned long long a,
                                                     unsigned long long b)
{
    asm volatile("st.global.cg.v2.u64 [%0], {%1, %2};" : : "l"(p), "l"(a), "l"(b) : "memory");
}

static __device__ __forceinline__ gs_tile_word gs_tile_load(const ulonglong2 *p, unsigned tag)
{
    unsigned long long a, b;
    gs_word_load(p, &a, &b);
    gs_tile_word w;
    const unsigned st = (unsigned)(a >> 32);
    w.status = st == (unsigned)(b >> 32) && (st >> GS_ST_TAG_SHIFT) << GS_ST_TAG_SHIFT == tag
                   ? st & ((1u << GS_ST_TAG_SHIFT) - 1u)
                   : GS_ST_INVALID;
    w.value = (a & 0xffffffffull) | (b << 32);
    return w;
}

static __device__ __forceinline__ void gs_tile_store(ulonglong2 *p, unsigned tag, unsigned status,
                                                     unsigned long long value)
{
    const unsigned long long st = (unsigned long long)(tag | status) << 32;
    gs_word_store(p, st | (value & 0xffffffffull), st | (value >> 32));
}

/* The scratch of one look-back over `tiles` tiles, carved as gs_scan_scratch_bytes() sized it:
 * the tile counter, two descriptor words per tile (value, compensation), then two per anchor
 * (every GS_ANCHOR_EVERY-th tile: its exclusive prefix, value and compensation) for the
 * anchored look-back of float add and mul (device/lookback.cuh).  The counter is zero when a
 * scan starts, and the block that takes the scan's last index (gs_take_tile below)
 * puts it back to zero. */
typedef struct gs_tile_state {
    unsigned *counter;   /* next tile to hand out: tiles start in launch order */
    ulonglong2 *words;   /* 2 per tile */
    ulonglong2 *anchors; /* 2 per anchor */
    unsigned tag;        /* the scan's epoch << GS_ST_TAG_SHIFT (0: a zeroed scratch) */
} gs_tile_state;

static inline gs_tile_state gs_tile_state_carve(void *scratch, int64_t tiles, unsigned epoch)
{
    gs_tile_state s;
    s.counter = (unsigned *)scratch;
    s.words = (ulonglong2 *)((char *)scratch + GS_SCRATCH_ALIGN);
    s.anchors = s.words + 2 * tiles;
    s.tag = epoch << GS_ST_TAG_SHIFT;
    return s;
}

/* The anchor of the anchored look-backs (device/lookback.cuh, device/pair_lookback.cuh) for
 * `tile`: the last anchor at least GS_ANCHOR_LAG tiles before it, or tile 0.  Tiles are not
 * negative, so unsigned: a shift, where a signed 64-bit division rounds toward zero in about 15
 * instructions a thread. */
static __device__ __forceinline__ int64_t gs_anchor_of(int64_t tile)
{
    return tile >= GS_ANCHOR_LAG
               ? (int64_t)((uint64_t)(tile - GS_ANCHOR_LAG) / GS_ANCHOR_EVERY * GS_ANCHOR_EVERY)
               : 0;
}

/* Anchor tile `anchor`'s number among the anchors; whether `tile` is an anchor. */
static __device__ __forceinline__ int64_t gs_anchor_index(int64_t anchor)
{
    return (int64_t)((uint64_t)anchor / GS_ANCHOR_EVERY);
}

static __device__ __forceinline__ int gs_is_anchor(int64_t tile)
{
    return (uint64_t)tile % GS_ANCHOR_EVERY == 0;
}

/* An anchor tile's prefix words (value, compensation). */
static __device__ __forceinline__ ulonglong2 *gs_anchor_words(gs_tile_state ts, int64_t anchor)
{
    return ts.anchors + 2 * gs_anchor_index(anchor);
}

/* The next tile index from a scratch's counter.  A launch takes exactly `takes` indices (one
 * per block for one tile per block; the tiles plus one index past the end per block for a
 * lookahead driver, whose blocks stop asking after the first); the one that takes the last
 * index resets the counter, after every other take.  So a scratch that starts with a zero
 * counter ends with one, and scans with distinct epochs need no zeroing in between. */
static __device__ __forceinline__ unsigned gs_take_tile(unsigned *counter, unsigned takes)
{
    const unsigned t = atomicAdd(counter, 1u);
    if (t == takes - 1u)
        atomicExch(counter, 0u);
    return t;
}

/* A lookahead driver block's three tiles (agent/scan.cuh, agent/linrec.cuh), taken in this
 * order: the previous (emitted this iteration, -1 before the first), the current (aggregated
 * this iteration) and the next (streaming in); whether the first two were prefetched; the
 * buffer slot (0, 1, 2) of each. */
typedef struct gs_ahead_tiles {
    int64_t prev, cur, next;
    int pre_p, pre_c;
    int bp, bc, bn;
} gs_ahead_tiles;

/* The block's first two tiles (thread 0 takes them through `taken`, shared memory; a barrier):
 * 0 when the block has none. */
static __device__ __forceinline__ int gs_ahead_start(unsigned *counter, unsigned takes,
                                                     int64_t ntiles, unsigned *taken,
                                                     gs_ahead_tiles *t)
{
    if (threadIdx.x == 0) {
        taken[0] = gs_take_tile(counter, takes);
        taken[1] = taken[0] < ntiles ? gs_take_tile(counter, takes) : 0xffffffffu;
    }
    __syncthreads();
    t->prev = -1;
    t->cur = taken[0];
    t->next = taken[1];
    t->pre_p = t->pre_c = 0;
    t->bp = 2;
    t->bc = 0;
    t->bn = 1;
    return t->cur < ntiles;
}

/* An iteration's start: thread 0 takes the tile after next (returned; 0xffffffff once next is
 * past the end, and in the other threads), and this thread waits for its copies of cur (issued
 * before next's). */
static __device__ __forceinline__ unsigned gs_ahead_take(unsigned *counter, unsigned takes,
                                                         int64_t ntiles, const gs_ahead_tiles *t)
{
    unsigned after = 0xffffffffu;
    if (threadIdx.x == 0 && t->next < ntiles)
        after = gs_take_tile(counter, takes);
    if (t->pre_c)
        gs_cp_async_wait();
    return after;
}

/* Rotate: cur becomes prev, next becomes cur (pre_n: whether it was prefetched), `after` (the
 * tile taken this iteration, or 0xffffffff) becomes next, in prev's old slot. */
static __device__ __forceinline__ void gs_ahead_rotate(gs_ahead_tiles *t, int pre_n, unsigned after)
{
    const int b = t->bp;
    t->prev = t->cur;
    t->pre_p = t->pre_c;
    t->cur = t->next;
    t->pre_c = pre_n;
    t->next = after;
    t->bp = t->bc;
    t->bc = t->bn;
    t->bn = b;
}

#endif /* GS_TILE_STATE_CUH */
