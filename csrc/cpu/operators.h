/*
 * cpu/operators.h - the operators of the CPU backend for one dtype: a op b, for every operator the
 * dtype has (the bitwise ones only for bool and integers), and their identities.  Included once
 * per dtype by each body (cpu/scan_body.h, cpu/reduce_body.h, cpu/teach_body.h), inside
 * cpu/stamp.h's parameters and the body's GS_FN; no include guard.
 *
 * Integers wrap in GS_U (unsigned: no undefined overflow); bool add/max/or are logical or,
 * mul/min/and logical and (NumPy's bool arithmetic); float min/max follow np.minimum and
 * np.maximum: a NaN `a` is kept, a NaN `b` wins over a number, and on ties (+0 against -0
 * included) `a`, the earlier value, is kept.  Float add takes the compensated paths of the
 * bodies; here it is the plain sum.
 */
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

/* The operator's identity (-0 for float add: -0 + x == x for every x, -0 included). */
static GS_ALWAYS_INLINE GS_T GS_FN(op_identity)(const gs_op op)
{
    switch (op) {
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
