/*
 * block/radix_rank.cuh - block level: the stable rank of every key of a tile by one 8-bit digit,
 * in three phases around the caller's barriers (CUB's BlockRadixRankMatchEarlyCounts):
 *   count   each warp adds its keys to its own row of counters, whist[w * 256 + d]
 *           (gs_radix_count);
 *   offsets thread d sums digit d's column over the warps, leaving in it each warp's count of d
 *           before it (gs_radix_column: the tile's count of d, which a device-wide pass publishes
 *           at once); the counts scanned over the digits (gs_radix_digit_scan) give each digit's
 *           first slot in the tile, added to its column (gs_radix_add_start);
 *   rank    each warp walks its keys in tile order, finds the lanes holding the same digit
 *           (warp/warp_match.cuh), and the highest of them takes the group's slots from the
 *           warp's counter (gs_radix_rank).
 * The layout is warp-striped: item j of lane l of warp w is the tile's key w * 32 * vt + j * 32
 * + l (keys at or past tile_n are absent), so walking j, then lanes, then warps is tile order,
 * and equal digits keep it: the ranks are a stable counting sort of the tile.
 * `vt` is a compile-time constant at every call (<= GS_SORT_VT_MAX); the caller zeroes the
 * counters before the count and puts a barrier between phases. Included after stamp.cuh (the
 * u32 and u64 warp scans).
 * Level: block.
 */
#ifndef GS_RADIX_RANK_CUH
#define GS_RADIX_RANK_CUH

#include "warp/warp_match.cuh"

/* Count: each present key adds one to its warp's counter of its digit; `checked` (a
 * compile-time constant) tests each key's presence. */
static __device__ __forceinline__ void gs_radix_count_keys(int vt, int checked,
                                                           const unsigned *dig, int tile_n,
                                                           unsigned *whist)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;
    const int lead = warp * GS_WARP * vt + lane;
    unsigned *mine = whist + warp * GS_SORT_DIGITS;
#pragma unroll
    for (int j = 0; j < GS_SORT_VT_MAX; ++j)
        if (j < vt && (!checked || lead + j * GS_WARP < tile_n))
            atomicAdd(&mine[dig[j]], 1u);
}

/* ... of a tile of tile_n keys out of nv, a whole tile's not tested when `unchecked_whole` (a
 * compile-time constant). */
static __device__ __forceinline__ void gs_radix_count(int vt, int unchecked_whole, int nv,
                                                      const unsigned *dig, int tile_n,
                                                      unsigned *whist)
{
    if (unchecked_whole && tile_n == nv)
        gs_radix_count_keys(vt, 0, dig, tile_n, whist);
    else
        gs_radix_count_keys(vt, 1, dig, tile_n, whist);
}

/* Offsets, thread d (< GS_SORT_DIGITS) of a block of `nwarps` warps: digit d's counter of each
 * warp becomes the count of d in the warps before it; returns the tile's count of d. */
static __device__ __forceinline__ unsigned gs_radix_column(int nwarps, unsigned *whist, int d)
{
    unsigned total = 0;
#pragma unroll
    for (int w = 0; w < GS_SORT_NT / GS_WARP; ++w) {
        if (w < nwarps) {
            const unsigned c = whist[w * GS_SORT_DIGITS + d];
            whist[w * GS_SORT_DIGITS + d] = total;
            total += c;
        }
    }
    return total;
}

/* Offsets: digit d's first slot in the tile added to its column (thread d). */
static __device__ __forceinline__ void gs_radix_add_start(int nwarps, unsigned *whist, int d,
                                                          unsigned start)
{
#pragma unroll
    for (int w = 0; w < GS_SORT_NT / GS_WARP; ++w)
        if (w < nwarps)
            whist[w * GS_SORT_DIGITS + d] += start;
}

/* The digit scan's shared memory: each digit warp's totals. */
#define GS_RADIX_DIGIT_WARPS (GS_SORT_DIGITS / GS_WARP)
typedef struct gs_radix_scan_smem {
    unsigned c[GS_RADIX_DIGIT_WARPS];
    unsigned long long t[GS_RADIX_DIGIT_WARPS];
} gs_radix_scan_smem;

/* Exclusive sums over the digits of two counts per digit, thread d holding digit d's (c: a
 * tile's, t: a row's): *ce = sum of c over the digits below d, *te likewise. Every thread of the
 * block calls it (threads past the digits with anything: their results are not used); one
 * barrier, after which the caller barriers again before calling it anew. */
static __device__ __forceinline__ void gs_radix_digit_scan(unsigned c, unsigned long long t,
                                                           unsigned *ce, unsigned long long *te,
                                                           gs_radix_scan_smem *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;
    int f = 0;
    unsigned ci = c;
    uint64_t ti = t;
    warp_scan_u32(GS_OP_ADD, 0, &f, &ci);
    warp_scan_u64(GS_OP_ADD, 0, &f, &ti);
    if (lane == GS_WARP - 1 && warp < GS_RADIX_DIGIT_WARPS) {
        sm->c[warp] = ci;
        sm->t[warp] = ti;
    }
    __syncthreads();
    unsigned cb = 0;
    unsigned long long tb = 0;
#pragma unroll
    for (int w = 0; w < GS_RADIX_DIGIT_WARPS; ++w) {
        if (w < warp) {
            cb += sm->c[w];
            tb += sm->t[w];
        }
    }
    *ce = cb + ci - c;
    *te = tb + ti - t;
}

/* Rank of one item of the warp: the slot of this lane's key, whose digit is d, in the tile
 * (`present`: the lane holds a key; `all`, a compile-time constant: every lane does). The
 * warp's counters (mine) must hold the offsets (its count of each digit before this item, plus
 * the digit's start). The highest lane of each group of equal digits moves the counter by the
 * group's size (its own rank in the group plus one: an atomic whose result the group reads by a
 * shuffle, so the next item's move follows it). */
static __device__ __forceinline__ unsigned gs_radix_rank_item(unsigned d, int present, int all,
                                                              unsigned below, unsigned *mine)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const unsigned among = all ? GS_FULL_MASK : __ballot_sync(GS_FULL_MASK, present);
    const unsigned peers = gs_warp_match_digit(d, among);
    const int leader = 31 - __clz(peers); /* -1 for an absent key: no group */
    const unsigned in_group = (unsigned)__popc(peers & below);
    unsigned old = 0;
    if (present && lane == leader)
        old = atomicAdd(&mine[d], in_group + 1u);
    old = __shfl_sync(GS_FULL_MASK, old, leader & (GS_WARP - 1));
    return old + in_group;
}

/* Rank: each present key's slot in the tile, in place of its digit in dr[]
 * (gs_radix_rank_item); a tile's absent keys are left out (the block sort's rounds; a pass ranks
 * each key as it puts it in its slot, agent/radix.cuh). */
static __device__ __forceinline__ void gs_radix_rank(int vt, unsigned *dr, int tile_n,
                                                     unsigned *whist)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;
    const int lead = warp * GS_WARP * vt + lane;
    const unsigned below = gs_lanes_below();
    unsigned *mine = whist + warp * GS_SORT_DIGITS;
#pragma unroll
    for (int j = 0; j < GS_SORT_VT_MAX; ++j)
        if (j < vt)
            dr[j] = gs_radix_rank_item(dr[j], lead + j * GS_WARP < tile_n, 0, below, mine);
}

#endif /* GS_RADIX_RANK_CUH */
