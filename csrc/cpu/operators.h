/*
 * cpu/operators.h - the operators of the CPU backend for one dtype: a op b, for every operator the
 * dtype has (the bitwise ones only for bool and integers), and their identities.  Included once
 * per dtype by each body (cpu/scan_body.h, cpu/reduce_body.h, cpu/teach_body.h), inside
 * cpu/stamp.h's parameters and the body's GS_FN; no include guard.
 *
 * Integers wrap in GS_U (unsigned: no undefined overflow); bool add/max/or are logical or,
 * mul/min/and logical and (NumPy's bool arithmetic); float min/max follow np.minimum and
 * np.maximum: a NaN `a` is kept, a NaN `b` wins over a number, and on ties (+0 against -0
 * included) `a`, the earlier value, is kept; fmin/fmax skip NaNs (a NaN wins only over a NaN) and
 * keep `a` on ties too; logaddexp and logaddexp2 are gpuscan/logaddexp.h's.  Float add takes the
 * compensated paths of the bodies; here it is the plain sum.  fmin, fmax and the logaddexps
 * reach floats only (gs_op_run()).
 */
#include "gpuscan/logaddexp.h"

static GS_ALWAYS_INLINE GS_T GS_FN(op)(const gs_op op, GS_T a, GS_T b)
{
#if GS_KIND == 'b'
    switch (op) {
    case GS_OP_ADD:
    case GS_OP_MAX:
    case GS_OP_OR:
        return a | b;
    case GS_OP_MUL:
    case GS_OP_MIN:
    case GS_OP_AND:
        return a & b;
    default:
        return a ^ b;
    }
#elif GS_KIND == 'f'
    switch (op) {
    case GS_OP_MUL:
        return a * b;
    /* NumPy's np.minimum/np.maximum: a NaN `a` is kept, a NaN `b` wins over a number, and on
     * ties (+0 against -0 included) `a`, the earlier value, is kept. */
    case GS_OP_MIN:
        return (a <= b || isnan(a)) ? a : b;
    case GS_OP_MAX:
        return (a >= b || isnan(a)) ? a : b;
    case GS_OP_FMIN:
        return (a <= b || isnan(b)) ? a : b;
    case GS_OP_FMAX:
        return (a >= b || isnan(b)) ? a : b;
    case GS_OP_LOGADDEXP:
        return (GS_T)gs_logaddexp(a, b, 0);
    case GS_OP_LOGADDEXP2:
        return (GS_T)gs_logaddexp(a, b, 1);
    default:
        return a + b;
    }
#else
    switch (op) {
    case GS_OP_ADD:
        return (GS_T)((GS_U)a + (GS_U)b);
    case GS_OP_MUL:
        return (GS_T)((GS_U)a * (GS_U)b);
    case GS_OP_MIN:
        return b < a ? b : a;
    case GS_OP_MAX:
        return b > a ? b : a;
    case GS_OP_AND:
        return (GS_T)(a & b);
    case GS_OP_OR:
        return (GS_T)(a | b);
    default:
        return (GS_T)(a ^ b);
    }
#endif
}

/* F(op, ...) for the operator op, with op a constant in each case: a switch that specialises an
 * always-inlined loop per operator (the bitwise ones only for bool and integers). */
#undef GS_OP_CASE
#undef GS_OP_CASES_ALL
#undef GS_OP_DISPATCH
#define GS_OP_CASE(o, F, ...) \
    case o:                   \
        F(o, __VA_ARGS__);    \
        break;
/* The operators every dtype has; then each kind's own, the last one the default. */
#define GS_OP_CASES_ALL(F, ...)               \
    GS_OP_CASE(GS_OP_ADD, F, __VA_ARGS__)     \
    GS_OP_CASE(GS_OP_MUL, F, __VA_ARGS__)     \
    GS_OP_CASE(GS_OP_MIN, F, __VA_ARGS__)     \
    GS_OP_CASE(GS_OP_MAX, F, __VA_ARGS__)
#if GS_KIND == 'f'
#define GS_OP_DISPATCH(op, F, ...)                  \
    switch (op) {                                   \
        GS_OP_CASES_ALL(F, __VA_ARGS__)             \
        GS_OP_CASE(GS_OP_FMIN, F, __VA_ARGS__)      \
        GS_OP_CASE(GS_OP_FMAX, F, __VA_ARGS__)      \
        GS_OP_CASE(GS_OP_LOGADDEXP, F, __VA_ARGS__) \
    default:                                        \
        F(GS_OP_LOGADDEXP2, __VA_ARGS__);           \
    }
#else
#define GS_OP_DISPATCH(op, F, ...)             \
    switch (op) {                              \
        GS_OP_CASES_ALL(F, __VA_ARGS__)        \
        GS_OP_CASE(GS_OP_AND, F, __VA_ARGS__)  \
        GS_OP_CASE(GS_OP_OR, F, __VA_ARGS__)   \
    default:                                   \
        F(GS_OP_XOR, __VA_ARGS__);             \
    }
#endif

/* The operator's identity (-0 for float add: -0 + x == x for every x, -0 included; NaN for
 * fmin and fmax, -inf for the logaddexps). */
static GS_ALWAYS_INLINE GS_T GS_FN(op_identity)(const gs_op op)
{
    switch (op) {
#if GS_KIND == 'f'
    case GS_OP_FMIN:
    case GS_OP_FMAX:
        return (GS_T)NAN;
    case GS_OP_LOGADDEXP:
    case GS_OP_LOGADDEXP2:
        return (GS_T)-INFINITY;
#endif
    case GS_OP_ADD:
        return (GS_T)-0.0;
    case GS_OP_MUL:
        return 1;
    case GS_OP_MIN:
        return GS_MAX;
    case GS_OP_MAX:
        return GS_MIN;
#if GS_KIND == 'b'
    case GS_OP_AND:
        return 1;
#elif GS_KIND != 'f'
    case GS_OP_AND:
        return (GS_T) ~(GS_U)0; /* all ones */
#endif
    default:
        return 0;
    }
}

#if GS_KIND == 'f'
/* (*hi, *lo) += (xhi, xlo): a compensated pair plus a compensated pair, x holding the values
 * after (hi, lo)'s.  TwoSum of the two his, the los added to its error, renormalised so that lo
 * stays below half an ulp of hi and the pairs' own roundings never build up.  An inf or NaN ends
 * the compensation: hi alone is then the IEEE answer.  A zero error leaves hi as it is and lo -0
 * (so a sum of -0s stays -0: -0 is the identity of add). */
static GS_ALWAYS_INLINE void GS_FN(pair_add)(GS_T *hi, GS_T *lo, GS_T xhi, GS_T xlo)
{
    GS_T s = *hi + xhi;
    if (!isfinite(s)) {
        *hi = s;
        *lo = (GS_T)-0.0;
        return;
    }
    GS_T bp = s - *hi;
    GS_T e = (*hi - (s - bp)) + (xhi - bp);
    e += (isfinite(*lo) ? *lo : 0) + (isfinite(xlo) ? xlo : 0);
    if (e == 0) {
        *hi = s;
        *lo = (GS_T)-0.0;
        return;
    }
    GS_T h = s + e;
    if (!isfinite(h)) {
        *hi = s; /* s + e overflowed: s is the sum rounded once already */
        *lo = (GS_T)-0.0;
        return;
    }
    bp = h - s;
    *lo = (s - (h - bp)) + (e - bp);
    *hi = h;
}
#endif
