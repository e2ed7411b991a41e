/*
 * block/block_scan.cuh - block level: exclusive scans of (head flag, value) pairs over the GS_NT
 * threads of a block, for one register type (included once per type after warp/warp_scan.cuh).
 * A thread brings `rows` pairs (rows <= GS_ROWS_MAX, a compile-time constant at the call
 * sites) and the block scans each row independently, all rows at once: warp scans, the warp
 * totals scanned by warp 0 through shared memory, two barriers in all.  Every thread of the
 * block must call it; the caller synchronises before reusing the shared memory.
 */

typedef struct GS_FN(gs_block_scan_smem) {
    int f[GS_ROWS_MAX][GS_NWARPS];
    GS_R v[GS_ROWS_MAX][GS_NWARPS];
} GS_FN(gs_block_scan_smem);

/* On return, for each row k < rows: (ef[k], ev[k]) combines the pairs of the threads before
 * this one (flag 0 and seed's value of `op` for dtype t in thread 0: the identity, -0.0 for
 * float add), (af[k], av[k]) the row. */
static __device__ __forceinline__ void GS_FN(block_scan)(gs_op op, gs_dtype t, int rows, int seg,
                                                         int *f, GS_R *v, int *ef, GS_R *ev,
                                                         int *af, GS_R *av,
                                                         GS_FN(gs_block_scan_smem) *sm)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int warp = threadIdx.x / GS_WARP;
    const GS_R id = GS_FN(seed)(op, t);

    /* ---- Scan within each warp; the last lane holds the warp's total. ---- */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < rows) {
            const unsigned hb = GS_FN(warp_scan)(op, seg, &f[k], &v[k]);
            /* f[k] becomes the exclusive flag (a head among the lanes before this one), the
             * ballot's (0 without seg): no shuffle in the last phase. */
            f[k] = (hb & ((1u << lane) - 1u)) != 0u;
            if (lane == GS_WARP - 1) {
                if (seg)
                    sm->f[k][warp] = hb != 0u;
                sm->v[k][warp] = v[k];
            }
        }
    }
    __syncthreads();

    /* ---- Warp 0 scans the warp totals of every row in place. ---- */
    if (warp == 0) {
#pragma unroll
        for (int k = 0; k < GS_ROWS_MAX; ++k) {
            if (k < rows) {
                int wf = seg && lane < GS_NWARPS ? sm->f[k][lane] : 0;
                GS_R wv = lane < GS_NWARPS ? sm->v[k][lane] : id;
                GS_FN(warp_scan)(op, seg, &wf, &wv);
                if (lane < GS_NWARPS) {
                    if (seg)
                        sm->f[k][lane] = wf;
                    sm->v[k][lane] = wv;
                }
            }
        }
    }
    __syncthreads();

    /* ---- Each thread's exclusive prefix: the warps before it, then the lanes before it. ---- */
#pragma unroll
    for (int k = 0; k < GS_ROWS_MAX; ++k) {
        if (k < rows) {
            int lf = seg ? f[k] : 0; /* 0 in lane 0 */
            GS_R lv = __shfl_up_sync(GS_FULL_MASK, v[k], 1);
            if (lane == 0)
                lv = id;
            if (warp > 0) {
                const int pf = seg ? sm->f[k][warp - 1] : 0;
                const GS_R pv = sm->v[k][warp - 1];
                if (!lf)
                    lv = GS_FN(combine)(op, pv, lv);
                lf |= pf;
            }
            ef[k] = lf;
            ev[k] = lv;
            af[k] = seg ? sm->f[k][GS_NWARPS - 1] : 0;
            av[k] = sm->v[k][GS_NWARPS - 1];
        }
    }
}
