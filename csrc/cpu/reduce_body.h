/*
 * cpu/reduce_body.h - the reduction loops of one dtype: written once, included once per dtype by
 * cpu/reduce.c (no include guard on purpose).
 *
 * Level: backend (CPU), the innermost level of the CPU reduction: folds one run of
 * contiguous values (at most one chunk of a row) into a partial, combines two partials, and
 * rounds a partial to the output value.  cpu/reduce.c cuts rows into chunks and hands them to
 * threads; this file never sees a row or a thread.
 *
 * The includer defines:
 *   GS_T     the element type, which is also the accumulator type
 *   GS_U     the unsigned type integer add and mul wrap in: as wide as GS_T and at least as wide
 *            as unsigned int, so that no operand is promoted to (signed, overflowing) int
 *   GS_SFX   the dtype's suffix in GS_DTYPES: names the functions and the gs_val member
 *   GS_KIND  the dtype's kind letter in GS_DTYPES ('b', 'i', 'u', 'f')
 *   GS_MIN, GS_MAX  the dtype's smallest and largest value (-inf and +inf for floats)
 * and finds gs_val, gs_part, GS_ALWAYS_INLINE, GS_NAME, GS_CPU_BLOCK and GS_CPU_LANE_BYTES
 * already defined.
 *
 * Guarantees: integers wrap modulo 2^k, so any grouping gives NumPy's bits; bool add/max/or are
 * logical or, mul/min/and logical and, xor parity; float min/max give the first NaN of the run
 * (its bits), else the first value equal to the extremum (so +0 and -0 come out as the earlier
 * one, as the scan's last value); float add and mul use a fixed grouping that depends on the
 * run's length only: lanes of GS_CPU_LANE_BYTES within blocks of GS_CPU_BLOCK values, the lanes
 * then folded into the partial in lane order.  Float add is compensated throughout: each lane
 * keeps TwoSum's exact errors, and partials are (hi, lo) pairs.
 */

#define GS_FN(name) GS_NAME(name, GS_SFX)

#include "cpu/operators.h"

#if GS_KIND == 'f'
#define GS_L (GS_CPU_LANE_BYTES / (int)sizeof(GS_T))

/* (*hi, *lo) += (xhi, xlo), a compensated pair plus a compensated pair: TwoSum of the two his,
 * the los added to its error, renormalised so that lo stays below half an ulp of hi and the
 * pairs' own roundings never build up.  An inf or NaN ends the compensation: hi alone is then
 * the IEEE answer.  A zero error leaves hi as it is (so -0 stays -0 until `value`). */
static GS_ALWAYS_INLINE void GS_FN(pair_add)(GS_T *hi, GS_T *lo, GS_T xhi, GS_T xlo)
{
    GS_T s = *hi + xhi;
    if (!isfinite(s)) {
        *hi = s;
        *lo = 0;
        return;
    }
    GS_T bp = s - *hi;
    GS_T e = (*hi - (s - bp)) + (xhi - bp);
    e += (isfinite(*lo) ? *lo : 0) + (isfinite(xlo) ? xlo : 0);
    if (e == 0) {
        *hi = s;
        *lo = 0;
        return;
    }
    GS_T h = s + e;
    if (!isfinite(h)) {
        *hi = s; /* s + e overflowed: s is the sum rounded once already */
        *lo = 0;
        return;
    }
    bp = h - s;
    *lo = (s - (h - bp)) + (e - bp);
    *hi = h;
}

/* The first NaN of p[0, len), which holds one. */
static GS_T GS_FN(first_nan)(const GS_T *p, int64_t len)
{
    int64_t i = 0;
    while (i < len - 1 && !isnan(p[i]))
        i++;
    return p[i];
}

/* The first zero (+0 or -0) of p[0, len), which holds one. */
static GS_T GS_FN(first_zero)(const GS_T *p, int64_t len)
{
    int64_t i = 0;
    while (i < len - 1 && p[i] != 0)
        i++;
    return p[i];
}

/* One step of a lane (hi, lo, nan) on the value x: add keeps TwoSum's exact error in lo; min
 * and max skip a NaN x (the comparison is false) and keep it in nan instead. */
static GS_ALWAYS_INLINE void GS_FN(lane_step)(const gs_op op, GS_T *hi, GS_T *lo, GS_T *nan, GS_T x)
{
    if (op == GS_OP_ADD) {
        GS_T s = *hi + x;
        GS_T bp = s - *hi;
        *lo += (*hi - (s - bp)) + (x - bp);
        *hi = s;
    } else if (op == GS_OP_MUL) {
        *hi *= x;
    } else {
        *nan = x != x ? x : *nan;
        if (op == GS_OP_MIN)
            *hi = x < *hi ? x : *hi;
        else
            *hi = x > *hi ? x : *hi;
    }
}

/*
 * Fold p[0, len) into the partial *acc, GS_CPU_BLOCK values at a time: within a block, lane k
 * takes the values at positions k, k + GS_L, k + 2 GS_L, ... (vectorisable, and independent
 * chains hide the add latency); the lanes then join *acc in lane order.  Always inlined with a
 * constant op.
 */
static GS_ALWAYS_INLINE void GS_FN(fold_float)(const gs_op op, const GS_T *in, int64_t len,
                                               gs_part *acc)
{
    GS_T ahi = acc->hi.GS_SFX, alo = acc->lo.GS_SFX;

    for (int64_t b = 0; b < len; b += GS_CPU_BLOCK) {
        const GS_T *p = in + b;
        const int64_t blen = len - b < GS_CPU_BLOCK ? len - b : GS_CPU_BLOCK;
        GS_T hi[GS_L], lo[GS_L], nan[GS_L];
        int64_t i;
        int k;

        for (k = 0; k < GS_L; k++) {
            hi[k] = GS_FN(op_identity)(op);
            lo[k] = 0;
            nan[k] = 0;
        }
        for (i = 0; i + GS_L <= blen; i += GS_L)
            for (k = 0; k < GS_L; k++)
                GS_FN(lane_step)(op, &hi[k], &lo[k], &nan[k], p[i + k]);
        if (i < blen) {
            /* The tail fills a last round, padded with the identity, which leaves every lane as
             * it is; the lanes are only ever indexed by constants, so they stay in registers. */
            GS_T t[GS_L];
            for (k = 0; k < GS_L; k++)
                t[k] = i + k < blen ? p[i + k] : GS_FN(op_identity)(op);
            for (k = 0; k < GS_L; k++)
                GS_FN(lane_step)(op, &hi[k], &lo[k], &nan[k], t[k]);
        }

        if (op == GS_OP_ADD) {
            for (k = 0; k < GS_L; k++)
                GS_FN(pair_add)(&ahi, &alo, hi[k], lo[k]);
        } else if (op == GS_OP_MUL) {
            for (k = 0; k < GS_L; k++)
                ahi *= hi[k];
        } else {
            int has_nan = 0;
            GS_T v = hi[0];
            for (k = 0; k < GS_L; k++) {
                has_nan |= isnan(nan[k]);
                v = GS_FN(op)(op, v, hi[k]); /* no NaN in hi[]: any order gives the value */
            }
            /* The block's answer is its first NaN, else its first value equal to v: only +0
             * and -0 are equal with other bits, so that matters for zeros alone. */
            if (has_nan)
                v = GS_FN(first_nan)(p, blen);
            else if (v == 0)
                v = GS_FN(first_zero)(p, blen);
            ahi = GS_FN(op)(op, ahi, v);
        }
    }
    acc->hi.GS_SFX = ahi;
    acc->lo.GS_SFX = alo;
}
#undef GS_L

#else
/* Fold in[0, len) into the partial *acc in order (any grouping gives the same bits: the ops are
 * associative and commutative modulo 2^k).  Always inlined with a constant op, so each operator
 * gets a loop of its own for the compiler to vectorise. */
static GS_ALWAYS_INLINE void GS_FN(fold_int)(const gs_op op, const GS_T *in, int64_t len,
                                             gs_part *acc)
{
    GS_T a = acc->hi.GS_SFX;
    for (int64_t i = 0; i < len; i++) {
#if GS_KIND == 'b'
        a = GS_FN(op)(op, a, in[i] != 0); /* any nonzero byte is True, as NumPy reads it */
#else
        a = GS_FN(op)(op, a, in[i]);
#endif
    }
    acc->hi.GS_SFX = a;
}
#endif

/* The partial of in[0, len) (gs_reduce_kernels.fold): *p starts at the identity. */
static void GS_FN(fold)(gs_op op, const void *in, int64_t len, gs_part *p)
{
    p->hi.GS_SFX = GS_FN(op_identity)(op);
    p->lo.GS_SFX = 0;
#if GS_KIND == 'f'
#define GS_FOLD(o) GS_FN(fold_float)(o, in, len, p)
#else
#define GS_FOLD(o) GS_FN(fold_int)(o, in, len, p)
#endif
    switch (op) {
    case GS_OP_ADD:
        GS_FOLD(GS_OP_ADD);
        break;
    case GS_OP_MUL:
        GS_FOLD(GS_OP_MUL);
        break;
    case GS_OP_MIN:
        GS_FOLD(GS_OP_MIN);
        break;
    case GS_OP_MAX:
        GS_FOLD(GS_OP_MAX);
        break;
#if GS_KIND != 'f'
    case GS_OP_AND:
        GS_FOLD(GS_OP_AND);
        break;
    case GS_OP_OR:
        GS_FOLD(GS_OP_OR);
        break;
    case GS_OP_XOR:
        GS_FOLD(GS_OP_XOR);
        break;
#endif
    default:
        break;
    }
#undef GS_FOLD
}

/* acc = acc op x, x being the partial of the values after acc's (gs_reduce_kernels.combine). */
static void GS_FN(combine)(gs_op op, gs_part *acc, const gs_part *x)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_FN(pair_add)(&acc->hi.GS_SFX, &acc->lo.GS_SFX, x->hi.GS_SFX, x->lo.GS_SFX);
        return;
    }
#endif
    acc->hi.GS_SFX = GS_FN(op)(op, acc->hi.GS_SFX, x->hi.GS_SFX);
}

/* Write the value the partial stands for, rounded once (gs_reduce_kernels.store).  Float add:
 * hi + lo (lo is zero or finite by then), then + 0 as NumPy's reduction starts from +0, so an
 * all -0 sum is +0. */
static void GS_FN(store)(gs_op op, const gs_part *p, void *out)
{
    GS_T v = p->hi.GS_SFX;
#if GS_KIND == 'f'
    if (op == GS_OP_ADD)
        v = (v + p->lo.GS_SFX) + (GS_T)0;
#else
    (void)op;
#endif
    *(GS_T *)out = v;
}

/* Ties the dtype's kind letter to the kernel table's entry, checked by cpu/reduce.c. */
enum { GS_FN(kind_letter) = GS_KIND };

#undef GS_FN
