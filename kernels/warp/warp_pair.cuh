/*
 * warp/warp_pair.cuh - warp level: the inclusive scan, across a warp, of the linear recurrence's
 * segmented pairs (f, A, B) in one floating type (included once per type, GS_R float or double,
 * GS_RS f32 or f64, by dispatch/linrec.cu, after thread/pair_ops.cuh).  The segmented pair
 * operator is associative, so one routine scans the steps of one recurrence and of many rows
 * alike.
 */

/* Inclusive scan across the first `width` lanes of the warp (a power of two, constant at the
 * call site; GS_WARP for the whole warp), lane order = step order.  A lane past `width` is
 * combined with the lanes before it too, as it would be in a longer scan; lanes below `width`
 * are the same as in a scan of the whole warp. */
static __device__ __forceinline__ void GS_FN(warp_pair_scan)(int *f, GS_R *A, GS_R *B, int width)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
#pragma unroll
    for (int d = 1; d < GS_WARP; d <<= 1) {
        if (d < width) {
            const int of = __shfl_up_sync(GS_FULL_MASK, *f, d);
            const GS_R oA = __shfl_up_sync(GS_FULL_MASK, *A, d);
            const GS_R oB = __shfl_up_sync(GS_FULL_MASK, *B, d);
            GS_FN(pair_prepend)(lane >= d, of, oA, oB, f, A, B);
        }
    }
}
