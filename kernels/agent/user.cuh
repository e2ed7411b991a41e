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
 * The look-back keeps a status word beside the payload (as device/pair_lookback.cuh does): the
 * payload is written, a fence, then the status; a reader sees the status, fences, then reads the
 * payload through L2.  It is anchored, as pair_lookback's: a tile's prefix has the same grouping
 * on every run (gs_u_look_back).  The identity is used only where an exclusive scan emits nothing
 * (element 0, a head); every other value is a combine of input values, so the results depend on
 * the input and the shapes alone.
 */
#include "gpuscan/user_params.h"

#define GS_U_VT GS_USER_VT((int)sizeof(T))
#define GS_U_WARP 32
#define GS_U_NWARPS (GS_USER_NT / GS_U_WARP)
#define GS_U_WORDS ((int)((sizeof(T) + 3) / 4))
/* Blocks per multiprocessor the registers must allow: one tile per block, so occupancy hides
 * the look-back's and the barriers' latency (a staged tile's 33 KiB of shared memory leaves
 * room for 6; 32-byte T: 3 fit without spills). */
#define GS_U_MIN_BLOCKS (sizeof(T) <= 4 ? 6 : sizeof(T) <= 8 ? 4 : sizeof(T) <= 32 ? 3 : 1)

typedef union gs_u_words {
    T t;
    unsigned w[GS_U_WORDS];
} gs_u_words;

/* ---- warp level -------------------------------------------------------------------------- */

static __device__ __forceinline__ T gs_u_shfl_up(T v, int d)
{
    gs_u_words u;
    u.t = v;
#pragma unroll
    for (int i = 0; i < GS_U_WORDS; ++i)
        u.w[i] = __shfl_up_sync(0xffffffffu, u.w[i], d);
    return u.t;
}

static __device__ __forceinline__ T gs_u_shfl_down(T v, int d)
{
    gs_u_words u;
    u.t = v;
#pragma unroll
    for (int i = 0; i < GS_U_WORDS; ++i)
        u.w[i] = __shfl_down_sync(0xffffffffu, u.w[i], d);
    return u.t;
}

static __device__ __forceinline__ T gs_u_shfl(T v, int lane)
{
    gs_u_words u;
    u.t = v;
#pragma unroll
    for (int i = 0; i < GS_U_WORDS; ++i)
        u.w[i] = __shfl_sync(0xffffffffu, u.w[i], lane);
    return u.t;
}

/* Inclusive scan of (f, v) pairs across the warp, lane order = element order: the segmented
 * operator (f1, v1) . (f2, v2) = (f1 | f2, f2 ? v2 : v1 combine v2), `seg` a compile-time
 * constant (0: no flag is moved).  Lanes with has 0 hold no value yet (a reduction's empty
 * lanes): (has, v) pairs combine as a value or nothing. */
static __device__ __forceinline__ void gs_u_warp_scan(int seg, int *f, int *has, T *v)
{
    const int lane = threadIdx.x & (GS_U_WARP - 1);
#pragma unroll
    for (int d = 1; d < GS_U_WARP; d <<= 1) {
        const T ov = gs_u_shfl_up(*v, d);
        const int of = seg ? __shfl_up_sync(0xffffffffu, *f, d) : 0;
        const int oh = __shfl_up_sync(0xffffffffu, *has, d);
        if (lane >= d) {
            if (!(seg && *f) && oh)
                *v = *has ? gs_user_combine(ov, *v) : ov;
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
 * threads before this one, (*tf, *th, *tv) the block's total.  Two barriers; every thread calls
 * it; the caller synchronises before reusing sm. */
static __device__ __forceinline__ void gs_u_block_scan(int seg, int f, int has, T v, int *ef,
                                                       int *eh, T *ev, int *tf, int *th, T *tv,
                                                       gs_u_block_smem *sm)
{
    const int lane = threadIdx.x & (GS_U_WARP - 1);
    const int warp = threadIdx.x / GS_U_WARP;
    int wf = f, wh = has;
    T wv = v;
    gs_u_warp_scan(seg, &wf, &wh, &wv);
    if (lane == GS_U_WARP - 1) {
        sm->f[warp] = wf;
        sm->has[warp] = wh;
        sm->v[warp] = wv;
    }
    /* The lanes before this one: the inclusive value one lane up. */
    int lf = seg ? __shfl_up_sync(0xffffffffu, wf, 1) : 0;
    int lh = __shfl_up_sync(0xffffffffu, wh, 1);
    T lv = gs_u_shfl_up(wv, 1);
    if (lane == 0)
        lf = lh = 0;
    __syncthreads();
    /* Every warp scans the warp totals itself (the same tree in each: the same bits). */
    int pf = 0, ph = 0;
    T pv = v;
    {
        int sf = lane < GS_U_NWARPS && seg ? sm->f[lane] : 0;
        int sh = lane < GS_U_NWARPS ? sm->has[lane] : 0;
        T sv = sm->v[lane < GS_U_NWARPS ? lane : 0];
        gs_u_warp_scan(seg, &sf, &sh, &sv);
        *tf = seg ? __shfl_sync(0xffffffffu, sf, GS_U_NWARPS - 1) : 0;
        *th = __shfl_sync(0xffffffffu, sh, GS_U_NWARPS - 1);
        *tv = gs_u_shfl(sv, GS_U_NWARPS - 1);
        const int src = warp > 0 ? warp - 1 : 0;
        pf = seg ? __shfl_sync(0xffffffffu, sf, src) : 0;
        ph = __shfl_sync(0xffffffffu, sh, src);
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

/* ---- tiles in and out -------------------------------------------------------------------- */

/* A whole tile goes through shared memory as words (coalesced loads and stores: each thread
 * then takes its consecutive values) when a thread's values are whole words and fit 128 bytes;
 * else each thread moves its values itself.  The block calls these together. */
#define GS_U_STAGE ((GS_U_VT * (int)sizeof(T)) % 4 == 0 && GS_U_VT * (int)sizeof(T) <= 128)
#define GS_U_TW (GS_U_VT * (int)sizeof(T) / 4)    /* words of a thread's values */
#define GS_U_PAD(i) ((i) + (i) / 32)              /* a word of padding per 32: no bank conflicts */
#define GS_U_SMEM_WORDS GS_U_PAD(GS_USER_NT * 32) /* a staged tile: 128 bytes a thread */

/* This thread's values of the tile at base, the first `valid` of it, into x (past the end:
 * zero bytes, never combined into an emitted value). */
static __device__ __forceinline__ void gs_u_load(const char *base, int64_t valid, T *x,
                                                 unsigned *words)
{
    if (GS_U_STAGE && valid >= (int64_t)GS_USER_NT * GS_U_VT && ((size_t)base & 3) == 0) {
        const unsigned *src = (const unsigned *)base;
        unsigned w[GS_U_TW > 0 ? GS_U_TW : 1];
#pragma unroll
        for (int j = 0; j < GS_U_TW; ++j)
            words[GS_U_PAD(j * GS_USER_NT + threadIdx.x)] = src[j * GS_USER_NT + threadIdx.x];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < GS_U_TW; ++j)
            w[j] = words[GS_U_PAD(threadIdx.x * GS_U_TW + j)];
        memcpy(x, w, sizeof(T) * GS_U_VT);
        __syncthreads();
        return;
    }
    const T *mine = (const T *)base + (int64_t)threadIdx.x * GS_U_VT;
#pragma unroll
    for (int i = 0; i < GS_U_VT; ++i) {
        if ((int64_t)threadIdx.x * GS_U_VT + i < valid)
            x[i] = mine[i];
        else
            memset(&x[i], 0, sizeof(T));
    }
}

/* y (this thread's values) into the tile at base, the first `valid` of it. */
static __device__ __forceinline__ void gs_u_store(char *base, int64_t valid, const T *y,
                                                  unsigned *words)
{
    if (GS_U_STAGE && valid >= (int64_t)GS_USER_NT * GS_U_VT && ((size_t)base & 3) == 0) {
        unsigned *dst = (unsigned *)base, w[GS_U_TW > 0 ? GS_U_TW : 1];
        memcpy(w, y, sizeof(T) * GS_U_VT);
#pragma unroll
        for (int j = 0; j < GS_U_TW; ++j)
            words[GS_U_PAD(threadIdx.x * GS_U_TW + j)] = w[j];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < GS_U_TW; ++j)
            dst[j * GS_USER_NT + threadIdx.x] = words[GS_U_PAD(j * GS_USER_NT + threadIdx.x)];
        __syncthreads();
        return;
    }
    T *mine = (T *)base + (int64_t)threadIdx.x * GS_U_VT;
#pragma unroll
    for (int i = 0; i < GS_U_VT; ++i)
        if ((int64_t)threadIdx.x * GS_U_VT + i < valid)
            mine[i] = y[i];
}

/* ---- the look-back ----------------------------------------------------------------------- */

/* A T through L2 (another block's payload, published before its status). */
static __device__ __forceinline__ T gs_u_read_l2(const T *p)
{
    gs_u_words u;
    const unsigned *w = (const unsigned *)p;
#pragma unroll
    for (int i = 0; i < GS_U_WORDS; ++i)
        u.w[i] = __ldcg(w + i);
    return u.t;
}

static __device__ __forceinline__ void gs_u_publish(const gs_user_scan_params *p, int64_t tile,
                                                    unsigned what, unsigned head, T v)
{
    T *slot = (T *)(what == GS_USER_PREFIX ? p->prefixes : p->aggregates) + tile;
    gs_u_words u;
    u.t = v;
#pragma unroll
    for (int i = 0; i < GS_U_WORDS; ++i)
        __stcg((unsigned *)slot + i, u.w[i]);
    __threadfence();
    atomicOr(p->status + tile, what | head);
}

/* The anchors: every GS_U_EVERY-th tile (but tile 0) publishes its exclusive prefix.  A tile
 * composes the prefix of its anchor, the last one at least GS_U_LAG tiles back (none while
 * fewer precede it), with the aggregates of the tiles from there on: at most
 * GS_U_LAG + GS_U_EVERY - 1 of them, GS_U_PER a thread, read at once by the whole block and
 * combined in a tree fixed by the distance alone.  So the prefix is a function of the
 * aggregates, with the same grouping on every run (deterministic for float operators too), and
 * the chain of anchors advances GS_U_LAG tiles a link, off the tiles' path. */
#define GS_U_LAG 256
#define GS_U_EVERY 128
#define GS_U_PER ((GS_U_LAG + GS_U_EVERY - 1 + GS_USER_NT - 1) / GS_USER_NT)

/* The exclusive prefix of `tile` (> 0), every thread of the block taking part and getting it.
 * Starts and ends with a barrier (sm is the block scan's). */
static __device__ __forceinline__ T gs_u_look_back(const gs_user_scan_params *p, int64_t tile,
                                                   int seg, gs_u_block_smem *sm, T *anchor_s)
{
    const int64_t a = tile < GS_U_LAG ? 0 : (tile - GS_U_LAG) / GS_U_EVERY * GS_U_EVERY;
    int f = 0, has = 0;
    T v;
    memset(&v, 0, sizeof(T));
    __syncthreads(); /* sm: the aggregate phase's scan is done with it */
#pragma unroll
    for (int k = 0; k < GS_U_PER; ++k) {
        const int64_t t = a + (int64_t)threadIdx.x * GS_U_PER + k;
        if (t < tile) {
            unsigned st;
            while (((st = *(volatile unsigned *)(p->status + t)) & GS_USER_AGG) == 0)
                __nanosleep(20);
            __threadfence();
            const T g = gs_u_read_l2((const T *)p->aggregates + t);
            if (seg && (st & GS_USER_HEAD)) {
                v = g;
                f = 1;
            } else {
                v = has ? gs_user_combine(v, g) : g;
            }
            has = 1;
        }
    }
    if (a > 0 && threadIdx.x == 0) {
        while ((*(volatile unsigned *)(p->status + a) & GS_USER_PREFIX) == 0)
            __nanosleep(20);
        __threadfence();
        *anchor_s = gs_u_read_l2((const T *)p->prefixes + a);
    }
    int ef, eh, tf, th;
    T ev, tv;
    gs_u_block_scan(seg, f, has, v, &ef, &eh, &ev, &tf, &th, &tv, sm); /* a barrier: anchor_s */
    if (a > 0 && !(seg && tf))
        tv = gs_user_combine(*anchor_s, tv);
    __syncthreads(); /* sm and anchor_s free again */
    return tv;
}

/* ---- the scan ---------------------------------------------------------------------------- */

/* One tile per block, tiles taken in launch order: aggregate (load, fold each thread's values,
 * scan the threads across the block), look back (publish the aggregate, learn the prefix of the
 * tiles before, publish the inclusive prefix), emit (each value from its prefix, store).
 * `seg` is a compile-time constant: a plain scan computes no heads. */
static __device__ __forceinline__ void gs_u_scan_tile(const gs_user_scan_params *p, int seg)
{
    __shared__ gs_u_block_smem bs;
    __shared__ unsigned tile_s;
    __shared__ unsigned words[GS_U_STAGE ? GS_U_SMEM_WORDS : 1];
    __shared__ T anchor_s;
    const int64_t nv = (int64_t)GS_USER_NT * GS_U_VT;
    if (threadIdx.x == 0)
        tile_s = atomicAdd(p->counter, 1u);
    __syncthreads();
    const int64_t tile = tile_s;
    const int64_t start = tile * nv;
    const int64_t valid = p->n - start < nv ? p->n - start : nv;
    const int whole = valid == nv;
    const int64_t first = start + (int64_t)threadIdx.x * GS_U_VT;
    T x[GS_U_VT];
    gs_u_load((const char *)p->in + start * (int64_t)sizeof(T), valid, x, words);

    /* ---- Aggregate: the heads, each thread's fold, the block's scan of the folds. ---- */
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
#pragma unroll
    for (int i = 0; i < GS_U_VT; ++i) {
        if (whole || first + i < p->n) {
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
    int ef, eh, tf, th;
    T ev, tv;
    gs_u_block_scan(seg, f, has, acc, &ef, &eh, &ev, &tf, &th, &tv, &bs);

    /* ---- Look back: publish the aggregate, learn the exclusive prefix (tile 0 has none);
     * an anchor publishes it. ---- */
    if (threadIdx.x == 0)
        gs_u_publish(p, tile, GS_USER_AGG, seg && tf ? GS_USER_HEAD : 0u, tv);
    T excl = tv;
    if (tile > 0) {
        excl = gs_u_look_back(p, tile, seg, &bs, &anchor_s);
        if (tile % GS_U_EVERY == 0 && threadIdx.x == 0)
            gs_u_publish(p, tile, GS_USER_PREFIX, 0u, excl);
    }

    /* ---- Emit: each value from this thread's prefix, then the store. ---- */
    int hp = eh;
    T run = ev;
    if (tile > 0 && !(seg && ef)) {
        run = eh ? gs_user_combine(excl, ev) : excl;
        hp = 1;
    }
    T id;
    memcpy(&id, p->identity, sizeof(T));
#pragma unroll
    for (int i = 0; i < GS_U_VT; ++i) {
        const T xi = x[i];
        if (seg && ((heads >> i) & 1u))
            hp = 0;
        if (p->exclusive)
            x[i] = hp ? run : id;
        run = hp ? gs_user_combine(run, xi) : xi;
        hp = 1;
        if (!p->exclusive)
            x[i] = run;
    }
    gs_u_store((char *)p->out + start * (int64_t)sizeof(T), valid, x, words);
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
    __shared__ unsigned words[GS_U_STAGE ? GS_U_SMEM_WORDS : 1];
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
            gs_u_load(base + off * (int64_t)sizeof(T), valid, x, words);
            int has = 0;
            T v = x[0];
#pragma unroll
            for (int k = 0; k < GS_U_VT; ++k) {
                if ((int64_t)threadIdx.x * GS_U_VT + k < valid) {
                    v = has ? gs_user_combine(v, x[k]) : x[k];
                    has = 1;
                }
            }
            int ef, eh, tf, th;
            T ev, tv;
            gs_u_block_scan(0, 0, has, v, &ef, &eh, &ev, &tf, &th, &tv, &bs);
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
