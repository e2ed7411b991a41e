/*
 * thread/pair_ops.cuh - thread level: the linear recurrence's segmented pairs (f, A, B) in one
 * floating type (included once per type, GS_R float or double, GS_RS f32 or f64, by
 * dispatch/linrec.cu): a step's leaf, and one pair composed before or after another.
 * (f1, A1, B1) . (f2, A2, B2) = f2 ? (1, A2, B2) : (f1, (A1, B1) . (A2, B2)): the pair operator
 * of gpuscan/linrec.h restarted at a head (a row's first step), associative.
 */

/* a * x + b, fused: a step's leaf B (x: h0 at a row's first step, else 0). */
static __device__ __forceinline__ GS_R GS_FN(lr_leaf)(GS_R a, GS_R x, GS_R b)
{
    if (sizeof(GS_R) == 4)
        return (GS_R)fmaf((float)a, (float)x, (float)b);
    return (GS_R)fma((double)a, (double)x, (double)b);
}

/* earlier . (*f, *A, *B) into (*f, *A, *B) where `on` (else nothing): the later pair keeps its
 * place. The composition is made either way and kept by selects, not a branch (a warp scan's
 * every step: the same bits, fewer instructions). */
static __device__ __forceinline__ void GS_FN(pair_prepend)(int on, int ef, GS_R eA, GS_R eB,
                                                           int *f, GS_R *A, GS_R *B)
{
    GS_CAT2(gs_lr_compose, GS_RS)(&eA, &eB, *A, *B);
    const int take = on && !*f;
    *A = take ? eA : *A;
    *B = take ? eB : *B;
    *f |= on ? ef : 0;
}

/* (*f, *A, *B) . (head, a, lb): one step appended to a run. */
static __device__ __forceinline__ void GS_FN(pair_append)(int *f, GS_R *A, GS_R *B, int head,
                                                          GS_R a, GS_R lb)
{
    if (head) {
        *f = 1;
        *A = a;
        *B = lb;
    } else {
        GS_CAT2(gs_lr_compose, GS_RS)(A, B, a, lb);
    }
}
