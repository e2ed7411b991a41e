/*
 * block/block_pair.cuh - block level: exclusive scans of the linear recurrence's segmented pairs
 * (warp/warp_pair.cuh) over the GS_NT threads of a block, `rows` rows at once (rows <=
 * GS_ROWS_MAX, a compile-time constant at the call sites), in one floating type (included once
 * per type after warp/warp_pair.cuh).  As block/block_scan.cuh: warp scans, the warp totals
 * scanned by warp 0 through shared memory, two barriers.  Every thread must call it; the caller
 * synchronises before reusing the shared memory.
 */

typedef struct GS_FN(gs_block_pair_smem) {
    int f[GS_ROWS_MAX][GS_NWARPS];
    GS_R A[GS_ROWS_MAX][GS_NWARPS];
    GS_R B[GS_ROWS_MAX][GS_NWARPS];
} GS_FN(gs_block_pair_smem);

/* A row's pair: this thread's in (f, A, B) on entry; on return (ef, eA, eB) combines the pairs
 * of the threads before it (the identity (0, 1, 0) in thread 0).  The whole row's pair stays in
 * the shared memory (sm->f, A, B [k][GS_NWARPS - 1]) until the caller reuses it. */
typedef struct GS_FN(gs_pair_row) {
    int f, ef;
    GS_R A, B, eA, eB;
} GS_FN(gs_pair_row);

static __device__ __forceinline__ void GS_FN(block_pair_scan)(int rows, GS_FN(gs_pair_row) *r,
                                                              GS_FN(gs_block_pair_smem) *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;

    /* ---- Scan within each warp; the last lane holds the warp's total. ---- */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < rows) {
            r[k].ef = r[k].f;
            r[k].eA = r[k].A;
            r[k].eB = r[k].B;
            GS_FN(warp_pair_scan)(&r[k].ef, &r[k].eA, &r[k].eB);
            if (lane == GS_WARP - 1) {
                sm->f[k][warp] = r[k].ef;
                sm->A[k][warp] = r[k].eA;
                sm->B[k][warp] = r[k].eB;
            }
        }
    }
    __syncthreads();

    /* ---- Warp 0 scans the warp totals of every row in place. ---- */
    if (warp == 0) {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < rows) {
                int wf = lane < GS_NWARPS ? sm->f[k][lane] : 0;
                GS_R wA = lane < GS_NWARPS ? sm->A[k][lane] : (GS_R)1;
                GS_R wB = lane < GS_NWARPS ? sm->B[k][lane] : (GS_R)0;
                GS_FN(warp_pair_scan)(&wf, &wA, &wB);
                if (lane < GS_NWARPS) {
                    sm->f[k][lane] = wf;
                    sm->A[k][lane] = wA;
                    sm->B[k][lane] = wB;
                }
            }
        }
    }
    __syncthreads();

    /* ---- Each thread's exclusive prefix: the warps before it, then the lanes before it. ---- */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < rows) {
            int lf = __shfl_up_sync(GS_FULL_MASK, r[k].ef, 1);
            GS_R lA = __shfl_up_sync(GS_FULL_MASK, r[k].eA, 1);
            GS_R lB = __shfl_up_sync(GS_FULL_MASK, r[k].eB, 1);
            if (lane == 0) {
                lf = 0;
                lA = (GS_R)1;
                lB = (GS_R)0;
            }
            if (warp > 0)
                GS_FN(pair_prepend)
            (sm->f[k][warp - 1], sm->A[k][warp - 1], sm->B[k][warp - 1], &lf, &lA, &lB);
            r[k].ef = lf;
            r[k].eA = lA;
            r[k].eB = lB;
        }
    }
}
