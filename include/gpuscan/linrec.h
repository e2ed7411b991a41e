/*
 * gpuscan/linrec.h - the pair operator of the linear recurrence h[t] = a[t] h[t-1] + b[t], and
 * the double-double arithmetic its long carries use: one definition for both backends (the CPU
 * backend's C, csrc/cpu/linrec.c, and the CUDA kernels, kernels/agent/linrec.cuh).
 * Level: shared by the host layer and the device layer, as gpuscan/types.h.
 * A run of steps maps h to A h + B (A the product of its a, B the run's h from 0); one run then
 * another is the pair
 *     (A1, B1) . (A2, B2) = (A1 A2, A2 B1 + B2),
 * associative, with identity (1, 0), so the recurrence is a scan of pairs.  Two rules keep a
 * product that overflowed (or an infinite a) from turning an exact zero into NaN where the step
 * by step loop has none: A2 B1 is 0 when B1 is 0 (h from 0 gained nothing to carry), and A1 A2
 * is 0 when either is 0 (an a of 0 cuts every earlier h off).  A NaN or infinite h still meets
 * the 0 of a later a as the loop meets it, since that product is A2 B1 with B1 not 0.
 */
#ifndef GS_LINREC_H
#define GS_LINREC_H

#include <math.h>

#include "gpuscan/types.h"

/* The pair operator in one floating type, suffix sfx (f32, f64); fm is its fused multiply-add.
 * (*A, *B) becomes (*A, *B) . (a2, b2). */
#define GS_LINREC_COMPOSE(T, sfx, fm)                                    \
    static inline GS_HD void gs_lr_compose_##sfx(T *A, T *B, T a2, T b2) \
    {                                                                    \
        *B = *B == (T)0 ? b2 : fm(a2, *B, b2);                           \
        *A = *A == (T)0 || a2 == (T)0 ? (T)0 : *A * a2;                  \
    }
GS_LINREC_COMPOSE(float, f32, fmaf)
GS_LINREC_COMPOSE(double, f64, fma)
#undef GS_LINREC_COMPOSE

/* A double-double number hi + lo, |lo| <= ulp(hi)/2 (lo is 0 once hi is not finite). */
typedef struct gs_dd {
    double hi;
    double lo;
} gs_dd;

static inline GS_HD gs_dd gs_dd_of(double x)
{
    gs_dd r;
    r.hi = x;
    r.lo = 0.0;
    return r;
}

/* s + e as a double-double, s the larger (Fast2Sum); a non-finite sum carries no low part. */
static inline GS_HD gs_dd gs_dd_renorm(double s, double e)
{
    gs_dd r;
    r.hi = s + e;
    r.lo = e - (r.hi - s);
    if (r.hi - r.hi != 0.0 || s - s != 0.0) {
        r.hi = s - s != 0.0 ? s : r.hi;
        r.lo = 0.0;
    }
    return r;
}

/* x + y, with the exact error of the high parts' sum (TwoSum). */
static inline GS_HD gs_dd gs_dd_add(gs_dd x, gs_dd y)
{
    const double s = x.hi + y.hi;
    const double bv = s - x.hi;
    const double e = (x.hi - (s - bv)) + (y.hi - bv);
    return gs_dd_renorm(s, e + (x.lo + y.lo));
}

/* x * y, with the exact error of the high parts' product (TwoProd by fma). */
static inline GS_HD gs_dd gs_dd_mul(gs_dd x, gs_dd y)
{
    const double p = x.hi * y.hi;
    return gs_dd_renorm(p, fma(x.hi, y.hi, -p) + (x.hi * y.lo + x.lo * y.hi));
}

/* The pair operator in double-double: (*A, *B) becomes (*A, *B) . (a2, b2), with the rules
 * above. */
static inline GS_HD void gs_lr_compose_dd(gs_dd *A, gs_dd *B, gs_dd a2, gs_dd b2)
{
    *B = B->hi == 0.0 ? b2 : gs_dd_add(gs_dd_mul(a2, *B), b2);
    *A = A->hi == 0.0 || a2.hi == 0.0 ? gs_dd_of(0.0) : gs_dd_mul(*A, a2);
}

#endif /* GS_LINREC_H */
