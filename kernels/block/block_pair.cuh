/*
 * block/block_pair.cuh - block level: the exclusive scan of the linear recurrence's segmented
 * pairs (warp/warp_pair.cuh) over the GS_NT threads of a block, one pair per thread, in one
 * floating type (included once per type after warp/warp_pair.cuh).
 * Raking: the threads' pairs go to shared memory; warp 0's lane l composes the GS_BP_PER pairs
 * of threads GS_BP_PER*l .. GS_BP_PER*l + GS_BP_PER - 1 in order, the lanes' runs are scanned
 * across warp 0, and lane l writes each of its threads' exclusive prefix back; two barriers.  A
 * pair is three words and its composition a multiply and an FMA: a warp scan in every warp (a
 * shuffle of three words and a select a level, five levels, then a scan of the warp totals) took
 * about 340 of a warp's 800 instructions a tile (ncu, H200); raking leaves the scan to one warp
 * (H200, 2^28 float32: 60 -> 64.5% of memcpy; docs/performance-notes.md).  The grouping is fixed
 * by the thread count alone: the same bits on every run, in both of agent/linrec.cuh's drivers.
 * Every thread must call it; the caller synchronises before reusing the shared memory.
 */

/* Pairs a raking lane composes, and the padded slot of thread i's pair: lane l's first slot is
 * (GS_BP_PER + 1) l, an odd stride, so warp 0's reads and writes of a step hit 32 banks. */
#define GS_BP_PER (GS_NT / GS_WARP)
#define GS_BP_SLOT(i) ((i) + (i) / GS_BP_PER)

typedef struct GS_FN(gs_block_pair_smem) {
    int f[GS_BP_SLOT(GS_NT)];
    GS_R A[GS_BP_SLOT(GS_NT)];
    GS_R B[GS_BP_SLOT(GS_NT)];
    int tf;
    GS_R tA, tB;
} GS_FN(gs_block_pair_smem);

/* A thread's pair: (f, A, B) on entry; on return (ef, eA, eB) combines the pairs of the threads
 * before it (the identity (0, 1, 0) in thread 0) and (tf, tA, tB) the whole block's, in every
 * thread. */
typedef struct GS_FN(gs_pair_part) {
    int f, ef, tf;
    GS_R A, B, eA, eB, tA, tB;
} GS_FN(gs_pair_part);

/* The scan's three steps, for a caller that runs other work between them (agent/linrec.cuh's
 * lookahead driver): put (every thread its pair into its slot), a barrier, rake (warp 0, the
 * whole warp: every slot's exclusive prefix; the block's pair returned in lane GS_WARP - 1), a
 * barrier, get (every thread its own slot).  A thread touches only its own slot in put and get,
 * so a put of the next tile needs no barrier after the last get. */
static __device__ __forceinline__ void GS_FN(block_pair_put)(const GS_FN(gs_pair_part) *r,
                                                             GS_FN(gs_block_pair_smem) *sm)
{
    const int me = GS_BP_SLOT(threadIdx.x);
    sm->f[me] = r->f;
    sm->A[me] = r->A;
    sm->B[me] = r->B;
}

static __device__ __forceinline__ void GS_FN(block_pair_rake)(GS_FN(gs_block_pair_smem) *sm,
                                                              int *tf, GS_R *tA, GS_R *tB)
{
    const int lane = threadIdx.x & (GS_WARP - 1);
    const int first = GS_BP_SLOT(lane * GS_BP_PER);
    /* ---- The lane's run: its threads' pairs composed in order. ---- */
    int f = sm->f[first];
    GS_R A = sm->A[first], B = sm->B[first];
#pragma unroll
    for (int j = 1; j < GS_BP_PER; ++j) {
        int xf = sm->f[first + j];
        GS_R xA = sm->A[first + j], xB = sm->B[first + j];
        GS_FN(pair_prepend)(1, f, A, B, &xf, &xA, &xB);
        f = xf;
        A = xA;
        B = xB;
    }
    /* ---- The runs scanned across the warp; the lane's exclusive prefix. ---- */
    GS_FN(warp_pair_scan)(&f, &A, &B, GS_WARP);
    int ef = __shfl_up_sync(GS_FULL_MASK, f, 1);
    GS_R eA = __shfl_up_sync(GS_FULL_MASK, A, 1);
    GS_R eB = __shfl_up_sync(GS_FULL_MASK, B, 1);
    if (lane == 0) {
        ef = 0;
        eA = (GS_R)1;
        eB = (GS_R)0;
    }
    *tf = f;
    *tA = A;
    *tB = B;
    /* ---- Each thread's exclusive prefix: the lane's, then its threads before it. ---- */
#pragma unroll
    for (int j = 0; j < GS_BP_PER; ++j) {
        int xf = sm->f[first + j];
        GS_R xA = sm->A[first + j], xB = sm->B[first + j];
        sm->f[first + j] = ef;
        sm->A[first + j] = eA;
        sm->B[first + j] = eB;
        if (j + 1 < GS_BP_PER) {
            GS_FN(pair_prepend)(1, ef, eA, eB, &xf, &xA, &xB);
            ef = xf;
            eA = xA;
            eB = xB;
        }
    }
}

static __device__ __forceinline__ void GS_FN(block_pair_get)(GS_FN(gs_pair_part) *r,
                                                             const GS_FN(gs_block_pair_smem) *sm)
{
    const int me = GS_BP_SLOT(threadIdx.x);
    r->ef = sm->f[me];
    r->eA = sm->A[me];
    r->eB = sm->B[me];
}

static __device__ __forceinline__ void GS_FN(block_pair_scan)(GS_FN(gs_pair_part) *r,
                                                              GS_FN(gs_block_pair_smem) *sm)
{
    GS_FN(block_pair_put)(r, sm);
    __syncthreads();
    if (threadIdx.x < GS_WARP) {
        int f;
        GS_R A, B;
        GS_FN(block_pair_rake)(sm, &f, &A, &B);
        if (threadIdx.x == GS_WARP - 1) {
            sm->tf = f;
            sm->tA = A;
            sm->tB = B;
        }
    }
    __syncthreads();
    GS_FN(block_pair_get)(r, sm);
    r->tf = sm->tf;
    r->tA = sm->tA;
    r->tB = sm->tB;
}

#undef GS_BP_PER
#undef GS_BP_SLOT
