/*
 * block/block_pair.cuh - block level: the exclusive scan of the linear recurrence's segmented
 * pairs (warp/warp_pair.cuh) over the GS_NT threads of a block, one pair per thread, in one
 * floating type (included once per type after warp/warp_pair.cuh).  Warp scans, the warp totals
 * through shared memory, one barrier: then every warp scans the GS_NWARPS totals itself (a scan
 * of GS_NWARPS lanes, the same tree in every warp, so the same bits) rather than waiting at a
 * second barrier while warp 0 does it.  Every thread must call it; the caller synchronises
 * before reusing the shared memory.
 */

typedef struct GS_FN(gs_block_pair_smem) {
    int f[GS_NWARPS];
    GS_R A[GS_NWARPS];
    GS_R B[GS_NWARPS];
} GS_FN(gs_block_pair_smem);

/* A thread's pair: (f, A, B) on entry; on return (ef, eA, eB) combines the pairs of the threads
 * before it (the identity (0, 1, 0) in thread 0) and (tf, tA, tB) the whole block's, in every
 * thread. */
typedef struct GS_FN(gs_pair_part) {
    int f, ef, tf;
    GS_R A, B, eA, eB, tA, tB;
} GS_FN(gs_pair_part);

static __device__ __forceinline__ void GS_FN(block_pair_scan)(GS_FN(gs_pair_part) *r,
                                                              GS_FN(gs_block_pair_smem) *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;

    /* ---- Scan within each warp; the last lane holds the warp's total. ---- */
    r->ef = r->f;
    r->eA = r->A;
    r->eB = r->B;
    GS_FN(warp_pair_scan)(&r->ef, &r->eA, &r->eB, GS_WARP);
    if (lane == GS_WARP - 1) {
        sm->f[warp] = r->ef;
        sm->A[warp] = r->eA;
        sm->B[warp] = r->eB;
    }
    __syncthreads();

    /* ---- Every warp scans the warp totals (lanes past GS_NWARPS hold the identity and take no
     * part: a level of distance GS_NWARPS or more changes none of the first lanes). ---- */
    int wf = lane < GS_NWARPS ? sm->f[lane] : 0;
    GS_R wA = lane < GS_NWARPS ? sm->A[lane] : (GS_R)1;
    GS_R wB = lane < GS_NWARPS ? sm->B[lane] : (GS_R)0;
    GS_FN(warp_pair_scan)(&wf, &wA, &wB, GS_NWARPS);
    r->tf = __shfl_sync(GS_FULL_MASK, wf, GS_NWARPS - 1);
    r->tA = __shfl_sync(GS_FULL_MASK, wA, GS_NWARPS - 1);
    r->tB = __shfl_sync(GS_FULL_MASK, wB, GS_NWARPS - 1);
    const int src = warp > 0 ? warp - 1 : 0;
    const int pf = __shfl_sync(GS_FULL_MASK, wf, src);
    const GS_R pA = __shfl_sync(GS_FULL_MASK, wA, src);
    const GS_R pB = __shfl_sync(GS_FULL_MASK, wB, src);

    /* ---- Each thread's exclusive prefix: the warps before it, then the lanes before it. ---- */
    int lf = __shfl_up_sync(GS_FULL_MASK, r->ef, 1);
    GS_R lA = __shfl_up_sync(GS_FULL_MASK, r->eA, 1);
    GS_R lB = __shfl_up_sync(GS_FULL_MASK, r->eB, 1);
    if (lane == 0) {
        lf = 0;
        lA = (GS_R)1;
        lB = (GS_R)0;
    }
    GS_FN(pair_prepend)(warp > 0, pf, pA, pB, &lf, &lA, &lB);
    r->ef = lf;
    r->eA = lA;
    r->eB = lB;
}
