/*
 * warp/warp_scan.cuh - warp level: scans and reductions of (head flag, value) pairs with shuffles,
 * for one register type (included once per type after thread/thread_ops.cuh).
 * The segmented operator (f1, x1) . (f2, x2) = (f1 | f2, f2 ? x2 : x1 op x2) is associative for
 * any associative op, so one routine serves plain scans (all flags zero), row-wise scans (a row
 * start is a head) and segmented scans.
 */

/* Inclusive scan across the warp, lane order = element order. `seg` (a compile-time constant at
 * the call sites) says whether the flags can be set; without, they are neither read nor moved.
 * With, the flags do not travel either: one ballot gives every lane its span, the lanes since
 * the last head at or before it, and a level of distance d combines where d <= span (no head
 * among the d lanes ending at this one). On return *f says whether a head is among the lanes up
 * to this one; returns the ballot of the heads (0 without seg). */
static __device__ __forceinline__ unsigned GS_FN(warp_scan)(gs_op op, int seg, int *f, GS_R *v)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const unsigned heads = seg ? __ballot_sync(GS_FULL_MASK, *f) : 0u;
    const unsigned upto = heads & (0xffffffffu >> (GS_WARP - 1 - lane));
    const int span = upto ? lane - (GS_WARP - 1 - __clz(upto)) : lane;
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        GS_R ov = __shfl_up_sync(GS_FULL_MASK, *v, d);
        if (span >= d)
            *v = GS_FN(combine)(op, ov, *v);
    }
    *f = upto != 0u;
    return heads;
}

/* Reduction across the warp of carries where lane l holds an *earlier* element than lane l-1
 * (the look-back window: lane 0 is the nearest predecessor). Lane 0 receives the total. */
static __device__ __forceinline__ void GS_FN(warp_reduce_reversed)(gs_op op, int *f,
                                                                   GS_FN(gs_carry) *c)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        GS_FN(gs_carry) o;
        o.hi = __shfl_down_sync(GS_FULL_MASK, c->hi, d);
        o.lo = __shfl_down_sync(GS_FULL_MASK, c->lo, d);
        int of = __shfl_down_sync(GS_FULL_MASK, *f, d);
        if (lane + d < GS_WARP) {
            if (!*f)
                *c = GS_FN(carry_combine)(op, o, *c);
            *f |= of;
        }
    }
}

/* Reduction of carries across the warp in a fixed tree (lane order = element order); lane 0
 * receives the total. */
static __device__ __forceinline__ void GS_FN(warp_reduce)(gs_op op, GS_FN(gs_carry) *c)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        GS_FN(gs_carry) o;
        o.hi = __shfl_down_sync(GS_FULL_MASK, c->hi, d);
        o.lo = __shfl_down_sync(GS_FULL_MASK, c->lo, d);
        if (lane + d < GS_WARP)
            *c = GS_FN(carry_combine)(op, *c, o);
    }
}
