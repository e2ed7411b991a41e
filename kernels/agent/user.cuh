/*
 * agent/user.cuh - the kernels of an operator you write (gpuscan.Operator), compiled at run time
 * by NVRTC (csrc/cuda/nvrtc.c) after the operator's T and `static T gs_user_combine(T x, T y)`,
 * one family per program (GS_USER_FAMILY, gpuscan/user_params.h), so that a call compiles only
 * the kernel it runs:
 *   GS_USER_SCAN      gs_user_scan, the single-pass scan with decoupled look-back, plain
 *   GS_USER_SCAN_SEG  gs_user_scan_seg, the same over rows or 1-byte flags (segment heads)
 *   GS_USER_FOLD      gs_user_fold, an ordered fold of segments, one block per segment (reduce,
 *                     reduceat, segmented_reduce; a long row as chunks, then their partials)
 * Level: agent, with its block, warp and look-back parts, for one T that is a whole struct of
 * up to 256 bytes: values move through shuffles and shared memory as 32-bit words.  Never
 * compiled by nvcc into the extension: its text is embedded at build time (setup.py).
 * The operator need not be commutative: every combine takes the earlier value on the left.
 * The scan is the built-in's design (agent/scan.cuh) for a T of any size: a persistent grid whose
 * blocks hold three tiles in shared memory (cp.async brings the next in while the block works),
 * each block publishing its current tile's aggregate before the look-back of its previous one.
 * The look-back publishes each T as 8-byte cells that carry the status beside 4 bytes of the
 * value (no fence on either side, as device/tile_state.cuh's descriptors), and is anchored: a
 * tile's prefix has the same grouping on every run (gs_u_look_back).  The identity is used only
 * where an exclusive scan emits nothing (element 0, a head); every other value is a combine of
 * input values, so the results depend on the input and the shapes alone.
 */
#include "gpuscan/user_params.h"

#define GS_U_VT GS_USER_VT((int)sizeof(T))
#define GS_U_WARP 32
#define GS_U_NWARPS (GS_USER_NT / GS_U_WARP)
#define GS_U_WORDS ((int)((sizeof(T) + 3) / 4))
/* Blocks per multiprocessor the registers must allow: as many as the scan's three tiles of
 * shared memory leave room for on a Hopper (228 KiB), at most 4. */
#define GS_U_SMEM GS_USER_SMEM(GS_USER_SCAN, (int)sizeof(T))
#define GS_U_MIN_BLOCKS \
    (GS_U_SMEM <= 52 * 1024 ? 4 : GS_U_SMEM <= 72 * 1024 ? 3 : GS_U_SMEM <= 110 * 1024 ? 2 : 1)

typedef union gs_u_words {
    T t;
    unsigned w[GS_U_WORDS];
} gs_u_words;

/* ---- warp level -------------------------------------------------------------------------- */

/* A T moved across the warp as 32-bit words: gs_u_shfl_up(v, d) from the lane d below,
 * gs_u_shfl(v, lane) from `lane`. */
#define GS_U_SHFL(name, shfl)                                  \
    static __device__ __forceinline__ T name(T v, int a)       \
    {                                                          \
        gs_u_words u;                                          \
        u.t = v;                                               \
        _Pragma("unroll") for (int i = 0; i < GS_U_WORDS; ++i) \
            u.w[i] = shfl(0xffffffffu, u.w[i], a);             \
        return u.t;                                            \
    }
GS_U_SHFL(gs_u_shfl_up, __shfl_up_sync)
GS_U_SHFL(gs_u_shfl, __shfl_sync)
#undef GS_U_SHFL

/* Inclusive scan of (f, v) pairs across the warp, lane order = element order: the segmented
 * operator (f1, v1) . (f2, v2) = (f1 | f2, f2 ? v2 : v1 combine v2), `seg` a compile-time
 * constant (0: no flag is moved).  Lanes with has 0 hold no value yet (a reduction's empty
 * lanes, a tail tile's): (has, v) pairs combine as a value or nothing.  `all`, a compile-time
 * constant, says every lane holds a value (a whole tile): no has is moved or tested (a float32
 * add's scan issued a third more instructions than the built-in's, most of them the has and
 * flag tests). */
static __device__ __forceinline__ void gs_u_warp_scan(int seg, int all, int *f, int *has, T *v,
                                                      int width)
{
    const int lane = threadIdx.x & (GS_U_WARP - 1);
#pragma unroll
    for (int d = 1; d < width; d <<= 1) {
        const T ov = gs_u_shfl_up(*v, d);
        const int of = seg ? __shfl_up_sync(0xffffffffu, *f, d) : 0;
        const int oh = all ? 1 : __shfl_up_sync(0xffffffffu, *has, d);
        if (lane >= d) {
            if (!(seg && *f) && oh)
                *v = all || *has ? gs_user_combine(ov, *v) : ov;
            if (!all)
                *has |= oh;
            *f |= of;
        }
    }
}

/* ---- block level ------------------------------------------------------------------------- */

typedef struct gs_u_block_smem {
    int f[GS_U_NWARPS], has[GS_U_NWARPS];
    T v[GS_U_NWARPS];
} gs_u_block_smem;

/* Exclusive scan of the threads' (f, has, v) across the block: on return (*ef, *eh, *ev) the
 * threads before this one, (*tf, *th, *tv) the block's total.  `all` (a compile-time constant):
 * every thread's has is 1.  One barrier; every thread calls it; the caller synchronises before
 * reusing sm.  For every width: a raking scan (warp 0 folding 8 values a lane, then scanning
 * 32), once kept for T of 16 to 64 bytes, was slower with the tiles 128-byte aligned (H200,
 * 2^24, the kernels alone: Kadane's 32-byte records 0.465 -> 0.419 ms without it, 2x2 uint32
 * matrices 0.167 -> 0.159, two such records 2.42 -> 1.39, its shared memory then one block an
 * SM). */
static __device__ __forceinline__ void gs_u_block_scan(int seg, int all, int f, int has, T v,
                                                       int *ef, int *eh, T *ev, int *tf, int *th,
                                                       T *tv, gs_u_block_smem *sm)
{
    const int lane = threadIdx.x & (GS_U_WARP - 1);
    const int warp = threadIdx.x / GS_U_WARP;
    int wf = f, wh = all ? 1 : has;
    T wv = v;
    gs_u_warp_scan(seg, all, &wf, &wh, &wv, GS_U_WARP);
    if (lane == GS_U_WARP - 1) {
        sm->f[warp] = wf;
        sm->has[warp] = wh;
        sm->v[warp] = wv;
    }
    /* The lanes before this one: the inclusive value one lane up. */
    int lf = seg ? __shfl_up_sync(0xffffffffu, wf, 1) : 0;
    int lh = all ? 1 : __shfl_up_sync(0xffffffffu, wh, 1);
    T lv = gs_u_shfl_up(wv, 1);
    if (lane == 0)
        lf = lh = 0;
    __syncthreads();
    /* Every warp scans the warp totals itself (the same tree in each: the same bits). */
    int pf = 0, ph = 0;
    T pv = v;
    {
        int sf = lane < GS_U_NWARPS && seg ? sm->f[lane] : 0;
        int sh = all ? 1 : lane < GS_U_NWARPS ? sm->has[lane] : 0;
        T sv = sm->v[lane < GS_U_NWARPS ? lane : 0];
        gs_u_warp_scan(seg, all, &sf, &sh, &sv, GS_U_NWARPS); /* lanes < NWARPS: exact */
        *tf = seg ? __shfl_sync(0xffffffffu, sf, GS_U_NWARPS - 1) : 0;
        *th = all ? 1 : __shfl_sync(0xffffffffu, sh, GS_U_NWARPS - 1);
        *tv = gs_u_shfl(sv, GS_U_NWARPS - 1);
        const int src = warp > 0 ? warp - 1 : 0;
        pf = seg ? __shfl_sync(0xffffffffu, sf, src) : 0;
        ph = all ? 1 : __shfl_sync(0xffffffffu, sh, src);
        pv = gs_u_shfl(sv, src);
    }
    if (warp > 0 && ph && !(seg && lf))
        lv = lh ? gs_user_combine(pv, lv) : pv;
    if (warp > 0) {
        lh |= ph;
        lf |= pf;
    }
    *ef = lf;
    *eh = lh;
    *ev = lv;
}

/* ---- tiles in shared memory ------------------------------------------------------------- */

/* A thread's values are GS_U_TB consecutive bytes of the tile: thread t holds values
 * t*VT .. t*VT+VT-1.  A tile moves between memory and a shared buffer in 16-byte chunks in
 * memory order (coalesced; cp.async on the way in), and each thread takes its values from the
 * buffer.  When a thread's bytes are whole chunks the buffer is swizzled (chunk c at c ^ (c/8 %
 * 8)): a quarter warp's 16-byte accesses then hit distinct banks both ways. */
#define GS_U_TB (GS_U_VT * (int)sizeof(T))
#define GS_U_TILE (GS_USER_NT * GS_U_TB) /* bytes: a multiple of 256 */
#define GS_U_SWZ (GS_U_TB % 16 == 0)

/* The tiles in transit (dynamic shared memory), aligned to 128 bytes whatever the size of the
 * static shared memory before it, as the built-in scan's (thread/load_store.cuh): the swizzle's
 * rows of eight chunks are then the banks' 128-byte rows.  H200, float32 add at 2^28: 80% of
 * memcpy with the tiles 16 bytes off, 87% aligned; affine float32 pairs at 2^24 0.0847 -> 0.0809
 * ms, Kadane's records 0.509 -> 0.464 ms. */
extern __shared__ __align__(128) uint4 gs_u_dyn[];

static __device__ __forceinline__ int gs_u_at(int byte)
{
    const int c = byte >> 4;
    return GS_U_SWZ ? ((c ^ ((c >> 3) & 7)) << 4) | (byte & 15) : byte;
}

static __device__ __forceinline__ void gs_u_cp_async(void *smem, const void *gmem)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(s), "l"(gmem) : "memory");
}

/* The 16-byte chunk of a whole tile that this thread moves in its j-th copy.  GS_U_OWN_SPANS:
 * each warp moves the chunks of its own threads' values (a warp's span, 512 bytes an
 * instruction), so that a __syncwarp, not the block's barrier, lets the warp read them after the
 * copy in and write them out after the emit; else the chunks are spread over the block.  Kept
 * for a T wider than 4 bytes (whole chunks a thread): Kadane's 32-byte records 0.564 -> 0.532
 * ms at 2^24 on an H200, float32 add 1-2% slower, so not there. */
#define GS_U_OWN_SPANS (GS_U_SWZ && (int)sizeof(T) > 4)
#define GS_U_COPIES \
    (GS_U_OWN_SPANS ? GS_U_TB / 16 : (GS_U_TILE / 16 + GS_USER_NT - 1) / GS_USER_NT)

static __device__ __forceinline__ int gs_u_chunk(int j)
{
    const int lane = threadIdx.x & (GS_U_WARP - 1), warp = threadIdx.x / GS_U_WARP;
    return GS_U_OWN_SPANS ? (warp * GS_U_TB / 16 + j) * GS_U_WARP + lane
                          : j * GS_USER_NT + threadIdx.x;
}

/* Start copying a whole tile (16-byte aligned in memory) into buf. */
static __device__ __forceinline__ void gs_u_prefetch(const char *src, char *buf)
{
#pragma unroll
    for (int j = 0; j < GS_U_COPIES; ++j) {
        const int c = gs_u_chunk(j);
        if (GS_U_TILE % (16 * GS_USER_NT) == 0 || c < GS_U_TILE / 16)
            gs_u_cp_async(buf + gs_u_at(16 * c), src + 16 * c);
    }
}

/* Copy the first `bytes` of a tile into buf (a tail, or input not 16-byte aligned). */
static __device__ __forceinline__ void gs_u_fill(const char *src, int bytes, char *buf)
{
    if ((((size_t)src | (size_t)bytes) & 3) == 0)
        for (int i = 4 * threadIdx.x; i < bytes; i += 4 * GS_USER_NT)
            *(unsigned *)(buf + gs_u_at(i)) = *(const unsigned *)(src + i);
    else
        for (int i = threadIdx.x; i < bytes; i += GS_USER_NT)
            buf[gs_u_at(i)] = src[i];
}

/* Whether a tile of `bytes` goes to dst by each warp's chunks alone (gs_u_chunk): whole, aligned
 * and GS_U_OWN_SPANS.  Then a warp writes it out after a __syncwarp, else after the block's
 * barrier. */
static __device__ __forceinline__ int gs_u_own_span(const char *dst, int bytes)
{
    return GS_U_OWN_SPANS && bytes == GS_U_TILE && ((size_t)dst & 15) == 0;
}

/* Write the first `bytes` of buf to the tile at dst: whole chunks when it is all there and dst
 * is 16-byte aligned.  Ordinary stores, as the built-in scan's: streaming ones (st.global.cs)
 * made Kadane's records 2.5% slower at 2^24 on an H200 (0.402 against 0.392 ms), the others the
 * same. */
static __device__ __forceinline__ void gs_u_drain(char *dst, int bytes, const char *buf)
{
    if (bytes == GS_U_TILE && ((size_t)dst & 15) == 0) {
#pragma unroll
        for (int j = 0; j < GS_U_COPIES; ++j) {
            const int c = gs_u_chunk(j);
            if (GS_U_TILE % (16 * GS_USER_NT) == 0 || c < GS_U_TILE / 16)
                *(uint4 *)(dst + 16 * c) = *(const uint4 *)(buf + gs_u_at(16 * c));
        }
    } else if ((((size_t)dst | (size_t)bytes) & 3) == 0) {
        for (int i = 4 * threadIdx.x; i < bytes; i += 4 * GS_USER_NT)
            *(unsigned *)(dst + i) = *(const unsigned *)(buf + gs_u_at(i));
    } else {
        for (int i = threadIdx.x; i < bytes; i += GS_USER_NT)
            dst[i] = buf[gs_u_at(i)];
    }
}

/* This thread's values from buf, or into it. */
static __device__ __forceinline__ void gs_u_get(const char *buf, T *x)
{
    if (GS_U_SWZ) {
        uint4 w[GS_U_TB / 16 > 0 ? GS_U_TB / 16 : 1];
#pragma unroll
        for (int q = 0; q < GS_U_TB / 16; ++q)
            w[q] = *(const uint4 *)(buf + gs_u_at(threadIdx.x * GS_U_TB + 16 * q));
        memcpy(x, w, GS_U_TB);
    } else {
        memcpy(x, buf + threadIdx.x * GS_U_TB, GS_U_TB);
    }
}

static __device__ __forceinline__ void gs_u_put(char *buf, const T *y)
{
    if (GS_U_SWZ) {
        uint4 w[GS_U_TB / 16 > 0 ? GS_U_TB / 16 : 1];
        memcpy(w, y, GS_U_TB);
#pragma unroll
        for (int q = 0; q < GS_U_TB / 16; ++q)
            *(uint4 *)(buf + gs_u_at(threadIdx.x * GS_U_TB + 16 * q)) = w[q];
    } else {
        memcpy(buf + threadIdx.x * GS_U_TB, y, GS_U_TB);
    }
}

/* ---- the look-back ----------------------------------------------------------------------- */

/* A published T: its words, each in an 8-byte cell beside the status it was published with
 * (the scan's tag, epoch << GS_USER_TAG_SHIFT, | GS_USER_AGG or GS_USER_PREFIX | GS_USER_HEAD),
 * the cells written and read 16 bytes at a time through L2.  PTX makes an aligned 8-byte access
 * single-copy atomic, and a slot is written once per scan: a reader that sees the same status in
 * every cell of a slot has the whole T of that publication, with no fence on either side (as
 * device/tile_state.cuh's descriptors).  A cell another scan left carries another tag. */
#define GS_U_CELLS ((GS_U_WORDS + 1) & ~1) /* 8-byte cells of a slot: whole 16-byte pairs */

static __device__ __forceinline__ void gs_u_publish(unsigned long long *slot, unsigned status, T v)
{
    gs_u_words u;
    u.t = v;
    const unsigned long long st = (unsigned long long)status << 32;
#pragma unroll
    for (int i = 0; i < GS_U_CELLS; i += 2)
        asm volatile("st.global.cg.v2.u64 [%0], {%1, %2};"
                     :
                     : "l"(slot + i), "l"(st | u.w[i]),
                       "l"(st | (i + 1 < GS_U_WORDS ? u.w[i + 1] : 0u))
                     : "memory");
}

/* Whether the slot holds a T published with the tag and `bit`: then *st its status, *v the T. */
static __device__ __forceinline__ int gs_u_read(const unsigned long long *slot, unsigned tag,
                                                unsigned bit, unsigned *st, T *v)
{
    gs_u_words u;
    unsigned s0 = 0, same = 1;
#pragma unroll
    for (int i = 0; i < GS_U_CELLS; i += 2) {
        unsigned long long a, b;
        asm volatile("ld.global.cg.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(slot + i) : "memory");
        if (i == 0)
            s0 = (unsigned)(a >> 32);
        same &= (unsigned)(a >> 32) == s0 && (unsigned)(b >> 32) == s0;
        u.w[i] = (unsigned)a;
        if (i + 1 < GS_U_WORDS)
            u.w[i + 1] = (unsigned)b;
    }
    if (!same || (s0 & ~((1u << GS_USER_TAG_SHIFT) - 1u)) != tag || (s0 & bit) == 0)
        return 0;
    *st = s0;
    *v = u.t;
    return 1;
}

/* Wait until the slot holds a T published with the tag and `bit`: its status, *v the T. */
static __device__ __forceinline__ unsigned gs_u_await(const unsigned long long *slot, unsigned tag,
                                                      unsigned bit, T *v)
{
    unsigned st;
    while (!gs_u_read(slot, tag, bit, &st, v))
        __nanosleep(20);
    return st;
}

/* The anchors: every GS_U_EVERY-th tile (but tile 0) publishes its exclusive prefix.  A tile
 * composes the prefix of its anchor, the last one at least GS_U_LAG tiles back (none while
 * fewer precede it), with the aggregates of the tiles from there on: at most
 * GS_U_LAG + GS_U_EVERY - 1 of them, GS_U_PER a thread, read at once by the whole block and
 * combined in a tree fixed by the distance alone.  So the prefix is a function of the
 * aggregates, with the same grouping on every run (deterministic for float operators too), and
 * the chain of anchors advances GS_U_LAG tiles a link, off the tiles' path. */
#define GS_U_LAG GS_USER_LAG((int)sizeof(T))
#define GS_U_EVERY GS_USER_EVERY((int)sizeof(T))
#define GS_U_PER ((GS_U_LAG + GS_U_EVERY - 1 + GS_USER_NT - 1) / GS_USER_NT)
static_assert(GS_U_PER <= 32, "a thread's pending reads are the bits of one word");

/* The look-back's shared memory is its own, so that it needs no barrier before it (the
 * aggregate phase's scan may still be reading its own) nor after it (the next look-back writes
 * it after this one's last barrier).  Every thread reads its slots at once and folds them into
 * a part in shared memory; after one barrier lane l of warp 0 folds the parts of threads G*l ..
 * G*l+G-1 in order, warp 0 scans its lanes, and lane 31 awaits the anchor, combines it and
 * publishes an anchor's prefix at once: a link of the chain of anchors costs one read, one
 * combine and one write, as the built-in scan's (device/lookback.cuh).  H200, the kernels
 * alone: with the anchor awaited before a block scan of the aggregates instead, float32 add ran
 * at 67% of memcpy at 2^28, 79% so, affine float32 pairs 63 -> 84%.  The tree in warp 0 rather
 * than every warp scanning 32 parts and thread 0 folding the 8 warps' totals (a thread's five
 * combines become a lane's G + 5 in one warp): Kadane's records at 2^24 66.0 -> 68.3% of memcpy,
 * two such records 42.7 -> 44.0%, float32 add 81 -> 83% (87% at 2^28 either way), where 2x2
 * uint32 matrices fell 83.6 -> 81.5% at 2^28 and affine pairs 88.3 -> 84.7% (90.0% with an
 * anchor every 32 tiles, user_params.h).
 * The tree's parts: the first GS_U_LBT threads can hold slots (the window, in whole warps);
 * thread i's fold at slot i + i / G (G = LBT / 32 threads a lane of warp 0 folds; a spare slot
 * a group spreads the lanes' reads over the banks). */
#define GS_U_LBT \
    (((GS_U_LAG + GS_U_EVERY - 1 + GS_U_PER - 1) / GS_U_PER + GS_U_WARP - 1) / GS_U_WARP * GS_U_WARP)
#define GS_U_G (GS_U_LBT / GS_U_WARP)
#define GS_U_SLOT(i) ((i) + (i) / GS_U_G)
typedef struct gs_u_lb_smem {
    T part[GS_U_SLOT(GS_U_LBT)];
    unsigned char f[GS_U_LBT], has[GS_U_LBT];
    T excl;
} gs_u_lb_smem;

/* The exclusive prefix of `tile` (> 0), every thread of the block taking part and getting it;
 * an anchor's published. */
static __device__ __forceinline__ T gs_u_look_back(const gs_user_scan_params *p, int64_t tile,
                                                   int seg, gs_u_lb_smem *sm)
{
    const int lane = threadIdx.x & (GS_U_WARP - 1);
    const int warp = threadIdx.x / GS_U_WARP;
    const unsigned tag = p->epoch << GS_USER_TAG_SHIFT;
    const int64_t a = tile < GS_U_LAG ? 0 : (tile - GS_U_LAG) / GS_U_EVERY * GS_U_EVERY;
    const int64_t t0 = a + (int64_t)threadIdx.x * GS_U_PER;
    const unsigned long long *const slots = (const unsigned long long *)p->aggregates;
    T g[GS_U_PER];
    unsigned st[GS_U_PER], pending = 0;
#pragma unroll
    for (int k = 0; k < GS_U_PER; ++k) {
        st[k] = 0;
        if (t0 + k < tile)
            pending |= 1u << k;
    }
    while (pending) {
#pragma unroll
        for (int k = 0; k < GS_U_PER; ++k)
            if (((pending >> k) & 1u) &&
                gs_u_read(slots + (t0 + k) * GS_U_CELLS, tag, GS_USER_AGG, &st[k], &g[k]))
                pending &= ~(1u << k);
        if (pending)
            __nanosleep(20);
    }
    int f = 0, has = 0;
    T v;
    memset(&v, 0, sizeof(T));
#pragma unroll
    for (int k = 0; k < GS_U_PER; ++k) {
        if (t0 + k < tile) {
            if (seg && (st[k] & GS_USER_HEAD)) {
                v = g[k];
                f = 1;
            } else {
                v = has ? gs_user_combine(v, g[k]) : g[k];
            }
            has = 1;
        }
    }
    /* ---- The tree: lane l of warp 0 folds the parts of threads G*l .. G*l+G-1 in order, then
     * warp 0 scans its lanes; lane 31 awaits the anchor. ---- */
    if (threadIdx.x < GS_U_LBT) {
        sm->part[GS_U_SLOT(threadIdx.x)] = v;
        sm->f[threadIdx.x] = (unsigned char)f;
        sm->has[threadIdx.x] = (unsigned char)has;
    }
    __syncthreads();
    if (warp == 0) {
        f = has = 0;
#pragma unroll
        for (int j = 0; j < GS_U_G; ++j) {
            const int i = lane * GS_U_G + j;
            if (sm->has[i]) {
                const T x = sm->part[GS_U_SLOT(i)];
                v = has && !(seg && sm->f[i]) ? gs_user_combine(v, x) : x;
                has = 1;
            }
            f |= seg ? sm->f[i] : 0;
        }
        gs_u_warp_scan(seg, 0, &f, &has, &v, GS_U_WARP);
        if (lane == GS_U_WARP - 1) {
            if (a > 0 && !(seg && f)) {
                T anchor;
                gs_u_await((const unsigned long long *)p->prefixes + a / GS_U_EVERY * GS_U_CELLS,
                           tag, GS_USER_PREFIX, &anchor);
                v = gs_user_combine(anchor, v);
            }
            if (tile % GS_U_EVERY == 0)
                gs_u_publish((unsigned long long *)p->prefixes + tile / GS_U_EVERY * GS_U_CELLS,
                             tag | GS_USER_PREFIX, v);
            sm->excl = v;
        }
    }
    __syncthreads();
    return sm->excl;
}

/* ---- the scan ---------------------------------------------------------------------------- */

/* What a thread keeps of a tile between its aggregate and emit phases: the heads among its
 * values, and the scan of the threads before it in the tile (f: a head among them; has: any). */
typedef struct gs_u_mine {
    unsigned heads;
    int ef, eh;
    T ev;
} gs_u_mine;

/* The aggregate phase of the tile at `start` (valid values of it) in buf: this thread's heads,
 * its exclusive scan across the block (*m), the tile's total (*tf: a head in it, *tv). */
static __device__ __forceinline__ void gs_u_aggregate(const gs_user_scan_params *p, int seg,
                                                      int64_t start, int64_t valid,
                                                      const char *buf, gs_u_mine *m, int *tf,
                                                      T *tv, gs_u_block_smem *bs)
{
    const int64_t first = start + (int64_t)threadIdx.x * GS_U_VT;
    const int whole = valid == (int64_t)GS_USER_NT * GS_U_VT;
    T x[GS_U_VT];
    gs_u_get(buf, x);
    unsigned heads = 0;
    if (seg && p->row_len > 0) {
        int64_t r = first % p->row_len;
#pragma unroll
        for (int i = 0; i < GS_U_VT; ++i) {
            if (r == 0 && first + i < p->n)
                heads |= 1u << i;
            r = r + 1 == p->row_len ? 0 : r + 1;
        }
    } else if (seg && p->flags != NULL) {
#pragma unroll
        for (int i = 0; i < GS_U_VT; ++i)
            if (first + i < p->n && (first + i == 0 || p->flags[first + i] != 0))
                heads |= 1u << i;
    }
    int f = 0, has = 0;
    T acc = x[0];
    if (whole) { /* every value present: no test a value (the compiler does not unswitch it) */
        has = 1;
        if (seg && (heads & 1u))
            f = 1;
#pragma unroll
        for (int i = 1; i < GS_U_VT; ++i) {
            if (seg && ((heads >> i) & 1u)) {
                acc = x[i];
                f = 1;
            } else {
                acc = gs_user_combine(acc, x[i]);
            }
        }
    } else {
#pragma unroll
        for (int i = 0; i < GS_U_VT; ++i) {
            if (first + i < p->n) {
                if (seg && ((heads >> i) & 1u)) {
                    acc = x[i];
                    f = 1;
                } else if (has) {
                    acc = gs_user_combine(acc, x[i]);
                } else {
                    acc = x[i];
                }
                has = 1;
            }
        }
    }
    int th;
    m->heads = heads;
    if (whole) /* every thread holds values: no has to move */
        gs_u_block_scan(seg, 1, f, 1, acc, &m->ef, &m->eh, &m->ev, tf, &th, tv, bs);
    else
        gs_u_block_scan(seg, 0, f, has, acc, &m->ef, &m->eh, &m->ev, tf, &th, tv, bs);
}

/* The emit phase: each value of this thread from its prefix (excl: the tiles' before, when
 * tile > 0), back into buf. */
static __device__ __forceinline__ void gs_u_emit(const gs_user_scan_params *p, int seg,
                                                 int64_t tile, T excl, const gs_u_mine *m,
                                                 char *buf)
{
    T x[GS_U_VT];
    gs_u_get(buf, x);
    int hp = m->eh;
    T run = m->ev;
    if (tile > 0 && !(seg && m->ef)) {
        run = m->eh ? gs_user_combine(excl, m->ev) : excl;
        hp = 1;
    }
    T id;
    memcpy(&id, p->identity, sizeof(T));
#pragma unroll
    for (int i = 0; i < GS_U_VT; ++i) {
        const T xi = x[i];
        if (seg && ((m->heads >> i) & 1u))
            hp = 0;
        if (p->exclusive)
            x[i] = hp ? run : id;
        run = hp ? gs_user_combine(run, xi) : xi;
        hp = 1;
        if (!p->exclusive)
            x[i] = run;
    }
    gs_u_put(buf, x);
}

/* The look-back and emit phases of `tile` (its values in buf, *m this thread's part of its
 * aggregate phase): its exclusive prefix (an anchor publishes it), its values from there,
 * written out. */
static __device__ __forceinline__ void gs_u_finish(const gs_user_scan_params *p, int seg,
                                                   int64_t tile, const gs_u_mine *m,
                                                   char *buf, gs_u_lb_smem *lb)
{
    const int64_t nv = (int64_t)GS_USER_NT * GS_U_VT;
    const int64_t valid = p->n - tile * nv < nv ? p->n - tile * nv : nv;
    T excl;
    memset(&excl, 0, sizeof(T));
    if (tile > 0)
        excl = gs_u_look_back(p, tile, seg, lb);
    gs_u_emit(p, seg, tile, excl, m, buf);
    char *const dst = (char *)p->out + tile * GS_U_TILE;
    const int bytes = (int)(valid * (int64_t)sizeof(T));
    if (gs_u_own_span(dst, bytes))
        __syncwarp(); /* the warp's values are in the buffer: it writes out its own span */
    else
        __syncthreads(); /* the block's values are in the buffer */
    gs_u_drain(dst, bytes, buf);
}

/* A tile index from the counter: a launch takes exactly `takes` of them, and the block that
 * takes the last one puts the counter back to zero for the next scan. */
static __device__ __forceinline__ unsigned gs_u_take(unsigned *counter, unsigned takes)
{
    const unsigned t = atomicAdd(counter, 1u);
    if (t == takes - 1u)
        atomicExch(counter, 0u);
    return t;
}

/* The scan: a persistent grid whose blocks hold three tiles, in three shared buffers (the
 * dynamic shared memory): they publish the aggregate of their current tile before the look-back
 * of their previous one, while the next streams in (cp.async).  Tiles are taken in launch order
 * (previous < current < next): the earliest tile still waiting is some block's previous tile,
 * whose predecessors have all published their aggregates, and the anchors before it their
 * prefixes.  `seg` is a compile-time constant: a plain scan computes no heads. */
static __device__ __forceinline__ void gs_u_scan_tile(const gs_user_scan_params *p, int seg)
{
    __shared__ gs_u_block_smem bs;
    __shared__ unsigned taken[3];
    __shared__ gs_u_lb_smem lb;
    const int64_t nv = (int64_t)GS_USER_NT * GS_U_VT;
    const int64_t ntiles = (p->n + nv - 1) / nv;
    const unsigned takes = (unsigned)ntiles + gridDim.x;
    const unsigned tag = p->epoch << GS_USER_TAG_SHIFT;
    const int vec_in = ((size_t)p->in & 15) == 0;
    char *const bufs = (char *)gs_u_dyn;
#define GS_U_BUF(i) (bufs + (i) * GS_U_TILE)
#define GS_U_VALID(t) (p->n - (t) * nv < nv ? p->n - (t) * nv : nv)

    if (threadIdx.x == 0) {
        taken[0] = gs_u_take(p->counter, takes);
        taken[1] = taken[0] < ntiles ? gs_u_take(p->counter, takes) : 0xffffffffu;
    }
    __syncthreads();
    int64_t prev = -1, cur = taken[0], next = taken[1];
    if (cur >= ntiles)
        return;
    /* Buffer slots: prev's, cur's, next's (with two buffers next is not prefetched: it goes where
     * prev was, once prev is written out). */
    int bp = p->nbuf - 1, bc = 0, bn = 1;
    int pre_c = vec_in && GS_U_VALID(cur) == nv;
    if (pre_c)
        gs_u_prefetch((const char *)p->in + cur * GS_U_TILE, GS_U_BUF(bc));
    gs_u_mine mine_p;
    memset(&mine_p, 0, sizeof(mine_p));

    for (;;) {
        /* ---- The next tile streams in while this iteration works. ---- */
        unsigned after = 0xffffffffu;
        if (threadIdx.x == 0 && next < ntiles)
            after = gs_u_take(p->counter, takes);
        const int copied = vec_in && GS_U_VALID(cur) == nv; /* by gs_u_prefetch */
        if (!pre_c && copied)
            gs_u_prefetch((const char *)p->in + cur * GS_U_TILE, GS_U_BUF(bc));
        else if (!pre_c)
            gs_u_fill((const char *)p->in + cur * GS_U_TILE, (int)(GS_U_VALID(cur) * sizeof(T)),
                      GS_U_BUF(bc));
        asm volatile("cp.async.wait_all;" : : : "memory");
        if (copied && GS_U_OWN_SPANS)
            __syncwarp(); /* cur's copies, each warp's its own span, seen by the warp */
        else
            __syncthreads(); /* cur's copies, done by every thread, seen by all */
        const int pre_n = p->nbuf > 2 && vec_in && next < ntiles && GS_U_VALID(next) == nv;
        if (pre_n)
            gs_u_prefetch((const char *)p->in + next * GS_U_TILE, GS_U_BUF(bn));

        /* ---- Aggregate phase of cur: its aggregate goes out before we wait on prev. ---- */
        gs_u_mine mine_c;
        {
            int tf;
            T tv;
            gs_u_aggregate(p, seg, cur * nv, GS_U_VALID(cur), GS_U_BUF(bc), &mine_c, &tf, &tv,
                           &bs);
            if (threadIdx.x == 0) {
                gs_u_publish((unsigned long long *)p->aggregates + cur * GS_U_CELLS,
                             tag | GS_USER_AGG | (seg && tf ? GS_USER_HEAD : 0u), tv);
                taken[2] = after;
            }
        }

        /* ---- Look-back and emit phases of prev. ---- */
        if (prev >= 0)
            gs_u_finish(p, seg, prev, &mine_p, GS_U_BUF(bp), &lb);
        /* With GS_U_OWN_SPANS, no barrier where none is needed: taken[2] was written, and bs last
         * read, before the look-back's barriers (prev > 0); prev's buffer, drained by
         * gs_u_chunk's chunks (out aligned), becomes next's: either the tile after next is
         * copied into it by the same threads' same chunks right after the next copy-in's
         * __syncwarp (each thread's cp.async after its own reads of that chunk: program order,
         * no barrier), or it is filled two iterations on, after the next aggregate's barrier.
         * Else a barrier: bs is the next aggregate's, or prev's buffer is cur's (two buffers)
         * or was drained byte by byte. */
        if (!GS_U_OWN_SPANS || prev <= 0 || p->nbuf < 3 || ((size_t)p->out & 15) != 0)
            __syncthreads();

        /* ---- Rotate: cur becomes prev, next becomes cur, the tile taken becomes next. ---- */
        const int b = bp;
        mine_p = mine_c;
        prev = cur;
        cur = next;
        next = taken[2];
        pre_c = pre_n;
        bp = bc;
        bc = p->nbuf > 2 ? bn : b;
        bn = b;
        if (cur >= ntiles)
            break;
    }

    /* ---- The last tile's look-back and emit. ---- */
    gs_u_finish(p, seg, prev, &mine_p, GS_U_BUF(bp), &lb);
#undef GS_U_BUF
#undef GS_U_VALID
}

#if GS_USER_FAMILY == GS_USER_SCAN
extern "C" __global__ void __launch_bounds__(GS_USER_NT, GS_U_MIN_BLOCKS)
    gs_user_scan(gs_user_scan_params p)
{
    gs_u_scan_tile(&p, 0);
}
#elif GS_USER_FAMILY == GS_USER_SCAN_SEG
extern "C" __global__ void __launch_bounds__(GS_USER_NT, GS_U_MIN_BLOCKS)
    gs_user_scan_seg(gs_user_scan_params p)
{
    gs_u_scan_tile(&p, 1);
}
#endif

/* ---- the ordered fold -------------------------------------------------------------------- */

/* One block per segment (a grid-stride loop over them): the segment's tiles in order, each
 * folded by its threads and across the block, the tiles' totals chained left to right. */
#if GS_USER_FAMILY == GS_USER_FOLD
extern "C" __global__ void __launch_bounds__(GS_USER_NT, GS_U_MIN_BLOCKS)
    gs_user_fold(gs_user_fold_params p)
{
    char *const buf = (char *)gs_u_dyn;
    __shared__ gs_u_block_smem bs;
    const int64_t nv = (int64_t)GS_USER_NT * GS_U_VT;
    for (int64_t i = blockIdx.x; i < p.rows * p.nseg; i += gridDim.x) {
        const int64_t row = i / p.nseg, s = i % p.nseg;
        int64_t b, e;
        if (p.starts != NULL) {
            b = p.starts[s];
            e = p.ends != NULL ? p.ends[s] : s + 1 < p.nseg ? p.starts[s + 1] : p.len;
        } else {
            b = s * p.chunk;
            e = b + p.chunk < p.len ? b + p.chunk : p.len;
        }
        const char *base = (const char *)p.in + (row * p.stride + b) * (int64_t)sizeof(T);
        int have = 0;
        T acc;
        memset(&acc, 0, sizeof(T));
        for (int64_t off = 0; off < e - b; off += nv) {
            const int64_t valid = e - b - off < nv ? e - b - off : nv;
            T x[GS_U_VT];
            const char *src = base + off * (int64_t)sizeof(T);
            if (valid == nv && ((size_t)src & 15) == 0) {
                gs_u_prefetch(src, buf);
                asm volatile("cp.async.wait_all;" : : : "memory");
            } else {
                gs_u_fill(src, (int)(valid * (int64_t)sizeof(T)), buf);
            }
            __syncthreads();
            gs_u_get(buf, x);
            int has = 0, ef, eh, tf, th;
            T v = x[0], ev, tv;
            if (valid == nv) { /* every value present: no test a value (as gs_u_aggregate) */
#pragma unroll
                for (int k = 1; k < GS_U_VT; ++k)
                    v = gs_user_combine(v, x[k]);
                gs_u_block_scan(0, 1, 0, 1, v, &ef, &eh, &ev, &tf, &th, &tv, &bs);
            } else {
#pragma unroll
                for (int k = 0; k < GS_U_VT; ++k) {
                    if ((int64_t)threadIdx.x * GS_U_VT + k < valid) {
                        v = has ? gs_user_combine(v, x[k]) : x[k];
                        has = 1;
                    }
                }
                gs_u_block_scan(0, 0, 0, has, v, &ef, &eh, &ev, &tf, &th, &tv, &bs);
            }
            acc = have ? gs_user_combine(acc, tv) : tv;
            have = 1;
            __syncthreads(); /* bs is rewritten by the next tile */
        }
        if (threadIdx.x == 0) {
            if (p.has_init) {
                T init;
                memcpy(&init, p.init, sizeof(T));
                acc = gs_user_combine(init, acc);
            }
            ((T *)p.out)[i] = acc;
        }
    }
}
#endif
