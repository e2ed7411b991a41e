/*
 * cpu/scan_body.h - the scan loops of one dtype: written once, included once per dtype by
 * cpu/scan.c (no include guard on purpose).
 *
 * Level: backend (CPU), the innermost level of the CPU scan: loops over a contiguous run
 * of values with no segment head inside.  cpu/scan.c splits a scan into chunks and runs, and
 * combines the chunks' carries; this file only folds values into a carry.
 *
 * The includer defines:
 *   GS_T     the element type, which is also the accumulator type
 *   GS_U     the unsigned type integer add and mul wrap in: as wide as GS_T and at least as wide
 *            as unsigned int, so that no operand is promoted to (signed, overflowing) int
 *   GS_SFX   the dtype's suffix in GS_DTYPES: names the functions and the gs_val member
 *   GS_KIND  the dtype's kind letter in GS_DTYPES ('b', 'i', 'u', 'f')
 *   GS_MIN, GS_MAX  the dtype's smallest and largest value (-inf and +inf for floats)
 * and finds gs_val, gs_carry, GS_ALWAYS_INLINE and GS_NAME already defined.
 *
 * Guarantees: integers wrap modulo 2^k (bit-identical to NumPy); bool add/max/or are logical or,
 * mul/min/and logical and; float min/max return the first NaN met, else NumPy's operand on ties;
 * float add keeps a compensation term (TwoSum), so a run's result is its exact sum rounded once
 * up to a second-order term; float mul is the plain running product.
 */

#define GS_FN(name) GS_NAME(name, GS_SFX)

#include "cpu/operators.h"

/* Fold x into the running state (hi, lo).  lo is float add's compensation term: the exact
 * rounding error of each addition (TwoSum, 6 flops, exact in round-to-nearest), summed. */
static GS_ALWAYS_INLINE void GS_FN(step)(const gs_op op, GS_T *hi, GS_T *lo, GS_T x)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_T s = *hi + x;
        GS_T bp = s - *hi;
        *lo += (*hi - (s - bp)) + (x - bp);
        *hi = s;
        return;
    }
#elif GS_KIND == 'b'
    x = x != 0;
#endif
    (void)lo;
    *hi = GS_FN(op)(op, *hi, x);
}

/*
 * The value the state (hi, lo) stands for, rounded once.  For float add: lo is left out when it
 * is zero (adding -0 keeps hi's sign, so a sum of -0s stays -0 as in NumPy) or not finite (hi
 * overflowed or met an inf or NaN: then hi alone is the IEEE answer).  An exclusive scan writes
 * the empty sum as +0, as np.add.reduce([]) is.
 */
static GS_ALWAYS_INLINE GS_T GS_FN(value)(const gs_op op, GS_T hi, GS_T lo, const int exclusive)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_T v = hi + ((lo != 0 && isfinite(lo)) ? lo : (GS_T)-0.0);
        return exclusive ? v + (GS_T)0 : v;
    }
#endif
    (void)op;
    (void)lo;
    (void)exclusive;
    return hi;
}

/*
 * The one loop: fold in[0, len) into the carry *c; with out != NULL also write the scan,
 * inclusive or exclusive (out may equal in: each value is read before its slot is written).
 * Always inlined with a constant op, so each operator gets a loop of its own.
 */
static GS_ALWAYS_INLINE void GS_FN(loop)(const gs_op op, const GS_T *in, GS_T *out, int64_t len,
                                         int exclusive, gs_carry *c)
{
    GS_T hi = c->hi.GS_SFX;
    GS_T lo = c->lo.GS_SFX;
    int64_t i;

    if (out == NULL) {
        for (i = 0; i < len; i++)
            GS_FN(step)(op, &hi, &lo, in[i]);
    } else if (exclusive) {
        for (i = 0; i < len; i++) {
            GS_T x = in[i];
            out[i] = GS_FN(value)(op, hi, lo, 1);
            GS_FN(step)(op, &hi, &lo, x);
        }
    } else {
        for (i = 0; i < len; i++) {
            GS_FN(step)(op, &hi, &lo, in[i]);
            out[i] = GS_FN(value)(op, hi, lo, 0);
        }
    }
    c->hi.GS_SFX = hi;
    c->lo.GS_SFX = lo;
}

/* The loop, specialised per operator (gs_kernels.apply). */
static void GS_FN(apply)(gs_op op, const void *in, void *out, int64_t len, int exclusive,
                         gs_carry *c)
{
    switch (op) {
    case GS_OP_ADD:
        GS_FN(loop)(GS_OP_ADD, in, out, len, exclusive, c);
        break;
    case GS_OP_MUL:
        GS_FN(loop)(GS_OP_MUL, in, out, len, exclusive, c);
        break;
    case GS_OP_MIN:
        GS_FN(loop)(GS_OP_MIN, in, out, len, exclusive, c);
        break;
    case GS_OP_MAX:
        GS_FN(loop)(GS_OP_MAX, in, out, len, exclusive, c);
        break;
#if GS_KIND != 'f'
    case GS_OP_AND:
        GS_FN(loop)(GS_OP_AND, in, out, len, exclusive, c);
        break;
    case GS_OP_OR:
        GS_FN(loop)(GS_OP_OR, in, out, len, exclusive, c);
        break;
    case GS_OP_XOR:
        GS_FN(loop)(GS_OP_XOR, in, out, len, exclusive, c);
        break;
#endif
    default:
        break;
    }
}

/* The operator's identity as a carry (gs_kernels.identity). */
static void GS_FN(identity)(gs_op op, gs_carry *c)
{
    GS_T v;
    switch (op) {
    case GS_OP_ADD:
#if GS_KIND == 'f'
        /* -0, not +0: -0 + x == x for every x, -0 included, so sums keep NumPy's signs. */
        v = (GS_T)-0.0;
#else
        v = 0;
#endif
        break;
    case GS_OP_MUL:
        v = 1;
        break;
    case GS_OP_MIN:
        v = GS_MAX;
        break;
    case GS_OP_MAX:
        v = GS_MIN;
        break;
#if GS_KIND == 'b'
    case GS_OP_AND:
        v = 1;
        break;
#elif GS_KIND != 'f'
    case GS_OP_AND:
        v = (GS_T) ~(GS_U)0; /* all ones */
        break;
#endif
    default:
        v = 0;
        break;
    }
    c->hi.GS_SFX = v;
    c->lo.GS_SFX = 0;
}

/* acc = acc op x, for two carries (gs_kernels.combine).  For float add both are (hi, lo) pairs
 * and so is the result: TwoSum of the two his, the los added to its error, then renormalised so
 * that lo stays below half an ulp of hi and the pairs' own rounding never builds up. */
static void GS_FN(combine)(gs_op op, gs_carry *acc, const gs_carry *x)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_T ahi = acc->hi.GS_SFX, alo = acc->lo.GS_SFX;
        GS_T xhi = x->hi.GS_SFX, xlo = x->lo.GS_SFX;
        GS_T s = ahi + xhi;
        if (!isfinite(s)) {
            /* inf or NaN: the compensation has nothing left to say */
            acc->hi.GS_SFX = s;
            acc->lo.GS_SFX = 0;
            return;
        }
        GS_T bp = s - ahi;
        GS_T e = (ahi - (s - bp)) + (xhi - bp);
        e += (isfinite(alo) ? alo : 0) + (isfinite(xlo) ? xlo : 0);
        if (e == 0) { /* nothing to carry: keep s as it is (a sum of -0s stays -0) */
            acc->hi.GS_SFX = s;
            acc->lo.GS_SFX = 0;
            return;
        }
        GS_T hi = s + e;
        bp = hi - s;
        GS_T lo = (s - (hi - bp)) + (e - bp);
        acc->hi.GS_SFX = isfinite(hi) ? hi : s;
        acc->lo.GS_SFX = isfinite(hi) ? lo : 0;
        return;
    }
#endif
    acc->hi.GS_SFX = GS_FN(op)(op, acc->hi.GS_SFX, x->hi.GS_SFX);
}

/* Ties the dtype's kind letter to the kernel table's entry, checked by cpu/scan.c. */
enum { GS_FN(kind_letter) = GS_KIND };

#undef GS_FN
