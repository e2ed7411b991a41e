/*
 * thread/thread_ops.cuh - thread level: the operators, their identities and the conversions between
 * a dtype's bits and the register type, for one register type.
 *
 * Included once per register type (no include guard) with
 *   GS_R       the register type: uint32_t, int32_t, uint64_t, int64_t, float or double
 *   GS_RS      its suffix for GS_FN: u32, i32, u64, i64, f32, f64
 *   GS_R_KIND  'u', 'i' or 'f'
 * Integers narrower than 32 bits compute in 32-bit registers: add, mul and the bitwise ops are
 * exact modulo 2^32 and so modulo 2^8 and 2^16 after the store truncates; min and max see
 * values already sign- or zero-extended from their dtype.  Signed types appear only under min
 * and max; wrapping arithmetic always runs on unsigned registers (no undefined overflow).
 * Every `op` and dtype argument is a compile-time constant at the call sites.
 */
#include "gpuscan/logaddexp.h"

/* The identity of `op` for results of dtype t (exclusive scans, empty reductions). */
static __device__ __forceinline__ GS_R GS_FN(identity)(gs_op op, gs_dtype t)
{
    switch (op) {
    case GS_OP_MUL:
        return (GS_R)1;
#if GS_R_KIND == 'f'
    case GS_OP_MIN:
        return (GS_R)__int_as_float(0x7f800000); /* +inf, exact in double too */
    case GS_OP_MAX:
    case GS_OP_LOGADDEXP:
    case GS_OP_LOGADDEXP2:
        return (GS_R)__int_as_float((int)0xff800000u); /* -inf */
    case GS_OP_FMAX:
    case GS_OP_FMIN:
        return (GS_R)__int_as_float(0x7fc00000); /* NaN: fmax(NaN, x) is x */
#else
    case GS_OP_AND:
        return t == GS_BOOL ? (GS_R)1 : (GS_R) ~(GS_R)0;
    case GS_OP_MIN:
        switch (t) {
        case GS_BOOL:
            return (GS_R)1;
        case GS_INT8:
            return (GS_R)INT8_MAX;
        case GS_INT16:
            return (GS_R)INT16_MAX;
        case GS_INT32:
            return (GS_R)INT32_MAX;
        case GS_INT64:
            return (GS_R)INT64_MAX;
        case GS_UINT8:
            return (GS_R)UINT8_MAX;
        case GS_UINT16:
            return (GS_R)UINT16_MAX;
        case GS_UINT32:
            return (GS_R)UINT32_MAX;
        default:
            return (GS_R)UINT64_MAX;
        }
    case GS_OP_MAX:
        switch (t) {
        case GS_INT8:
            return (GS_R)INT8_MIN;
        case GS_INT16:
            return (GS_R)INT16_MIN;
        case GS_INT32:
            return (GS_R)INT32_MIN;
        case GS_INT64:
            return (GS_R)INT64_MIN;
        default:
            return (GS_R)0;
        }
#endif
    default: /* add, or, xor */
        return (GS_R)0;
    }
}

/* Where a sum from its first value starts: the identity, but -0.0 for float add (-0.0 + x is x
 * for every x, where +0.0 + -0.0 is +0.0), so that a sum of -0.0 values alone is -0.0 and any
 * other exact zero +0.0 (reduceat's, segmented_reduce's and the inclusive scans' sums, as
 * NumPy's; see gs_carry for how a compensated sum keeps that sign). */
static __device__ __forceinline__ GS_R GS_FN(seed)(gs_op op, gs_dtype t)
{
#if GS_R_KIND == 'f'
    if (op == GS_OP_ADD)
        return (GS_R)-0.0;
#endif
    return GS_FN(identity)(op, t);
}

#if GS_R_KIND == 'f'
/*
 * a if take_a else b, chosen by a PTX selp the compiler cannot see through: it turns a float
 * select that propagates NaN (even one written on the bits) into min.NaN/max.NaN, which
 * return the canonical NaN instead of the operand's own bits.
 */
static __device__ __forceinline__ GS_R GS_FN(select_bits)(int take_a, GS_R a, GS_R b)
{
    if (sizeof(GS_R) == 8) {
        unsigned long long r;
        asm("{ .reg .pred p; setp.ne.s32 p, %3, 0; selp.b64 %0, %1, %2, p; }"
            : "=l"(r)
            : "l"((unsigned long long)__double_as_longlong((double)a)),
              "l"((unsigned long long)__double_as_longlong((double)b)), "r"(take_a));
        return (GS_R)__longlong_as_double((long long)r);
    }
    unsigned r;
    asm("{ .reg .pred p; setp.ne.s32 p, %3, 0; selp.b32 %0, %1, %2, p; }"
        : "=r"(r)
        : "r"(__float_as_uint((float)a)), "r"(__float_as_uint((float)b)), "r"(take_a));
    return (GS_R)__uint_as_float(r);
}
#endif

/*
 * a (earlier) combined with b (later).  Float min/max follow np.minimum/np.maximum: the first
 * operand wins ties and NaN propagates, so a scan returns the first NaN it meets, bit for bit;
 * fmax/fmin skip NaNs (a NaN wins only over a NaN), the first operand winning ties too;
 * logaddexp in double (gpuscan/logaddexp.h), rounded once.
 */
static __device__ __forceinline__ GS_R GS_FN(combine)(gs_op op, GS_R a, GS_R b)
{
    switch (op) {
    case GS_OP_ADD:
        return a + b;
    case GS_OP_MUL:
        return a * b;
#if GS_R_KIND == 'f'
    case GS_OP_MIN:
        return GS_FN(select_bits)(a <= b || a != a, a, b);
    case GS_OP_MAX:
        return GS_FN(select_bits)(a >= b || a != a, a, b);
    case GS_OP_FMIN:
        return GS_FN(select_bits)(a <= b || b != b, a, b);
    case GS_OP_FMAX:
        return GS_FN(select_bits)(a >= b || b != b, a, b);
    case GS_OP_LOGADDEXP:
        return (GS_R)gs_logaddexp((double)a, (double)b, 0);
    case GS_OP_LOGADDEXP2:
        return (GS_R)gs_logaddexp((double)a, (double)b, 1);
#else
    case GS_OP_MIN:
        return a <= b ? a : b;
    case GS_OP_MAX:
        return a >= b ? a : b;
    case GS_OP_AND:
        return a & b;
    case GS_OP_OR:
        return a | b;
    case GS_OP_XOR:
        return a ^ b;
#endif
    default:
        return a;
    }
}

/* The value of an element of dtype t held as zero-extended bits: a bool is 1 for any nonzero
 * byte, as NumPy reads it (a bool array may hold other bytes than 0 and 1: a view of uint8). */
static __device__ __forceinline__ GS_R GS_FN(from_bits)(gs_dtype t, uint64_t bits)
{
    switch (t) {
    case GS_BOOL:
        return (GS_R)(bits != 0);
#if GS_R_KIND == 'f'
    case GS_FLOAT32:
        return (GS_R)__uint_as_float((unsigned)bits);
    case GS_FLOAT64:
        return (GS_R)__longlong_as_double((long long)bits);
#endif
    case GS_INT8:
        return (GS_R)(int8_t)bits;
    case GS_INT16:
        return (GS_R)(int16_t)bits;
    case GS_INT32:
        return (GS_R)(int32_t)bits;
    case GS_INT64:
        return (GS_R)(int64_t)bits;
    default:
        return (GS_R)bits;
    }
}

/* The bits of a result stored as dtype t (the store keeps the low bytes: wrap-around). */
static __device__ __forceinline__ uint64_t GS_FN(to_bits)(gs_dtype t, GS_R v)
{
#if GS_R_KIND == 'f'
    if (t == GS_FLOAT32)
        return __float_as_uint((float)v);
    return (uint64_t)__double_as_longlong((double)v);
#else
    (void)t;
    return (uint64_t)v;
#endif
}

/*
 * A carry: a value plus, for floating-point add only, a compensation term holding the rounding
 * error of the carry so far (a double-word number, hi + lo).  Carries between tiles are summed
 * this way so their error does not grow with the number of tiles.
 * Signs of zero: a zero lo is -0.0 (carry_of's, and an exact rounding error as carry_combine
 * computes it), so adding it changes nothing, -0.0 included; a carry is (-0.0, -0.0) exactly
 * when every value in it is -0.0 (seed's start included), and hi + lo is then -0.0.  The
 * operations are those of a +0.0 lo, in another order: no value but a zero's sign differs.
 */
typedef struct GS_FN(gs_carry) {
    GS_R hi;
    GS_R lo;
} GS_FN(gs_carry);

static __device__ __forceinline__ int GS_FN(compensated)(gs_op op)
{
    return GS_R_KIND == 'f' && op == GS_OP_ADD;
}

static __device__ __forceinline__ GS_FN(gs_carry) GS_FN(carry_of)(GS_R v)
{
    GS_FN(gs_carry) c;
    c.hi = v;
    c.lo = GS_R_KIND == 'f' ? (GS_R)-0.0 : (GS_R)0; /* no error: -0.0 (see gs_carry) */
    return c;
}

/* a (earlier) combined with b (later); for float add an error-free TwoSum of the high parts
 * with the low parts and the rounding error gathered in lo, then renormalised.  TwoSum's error
 * (a - (s - bv)) + (b - bv) is taken as (b - bv) - ((s - bv) - a): the same value, but -0.0
 * when a and b are -0.0, so that the sum of two (-0.0, -0.0) carries is one (see gs_carry). */
static __device__ __forceinline__ GS_FN(gs_carry)
    GS_FN(carry_combine)(gs_op op, GS_FN(gs_carry) a, GS_FN(gs_carry) b)
{
    GS_FN(gs_carry) c;
    if (GS_FN(compensated)(op)) {
        GS_R s = a.hi + b.hi;
        GS_R bv = s - a.hi;
        GS_R err = (b.hi - bv) - ((s - bv) - a.hi);
        GS_R lo = (a.lo + b.lo) + err;
        c.hi = s + lo;
        c.lo = lo - (c.hi - s);
        if (s - s != (GS_R)0) { /* inf or NaN: no rounding error to carry (and inf - inf) */
            c.hi = s;
            c.lo = (GS_R)0;
        }
    } else {
        c.hi = GS_FN(combine)(op, a.hi, b.hi);
        c.lo = (GS_R)0;
    }
    return c;
}

/*
 * A carry as the 64-bit value of a tile descriptor.  Four-byte registers pack hi and lo
 * together; eight-byte ones hold hi, and a float64 add publishes lo in a second word.
 */
#define GS_R_WIDE (sizeof(GS_R) == 8)

static __device__ __forceinline__ unsigned long long GS_FN(bits_of)(GS_R v)
{
#if GS_R_KIND == 'f'
    if (GS_R_WIDE)
        return (unsigned long long)__double_as_longlong((double)v);
    return __float_as_uint((float)v);
#else
    return GS_R_WIDE ? (unsigned long long)v : (unsigned long long)(uint32_t)v;
#endif
}

static __device__ __forceinline__ GS_R GS_FN(of_bits)(unsigned long long b)
{
#if GS_R_KIND == 'f'
    if (GS_R_WIDE)
        return (GS_R)__longlong_as_double((long long)b);
    return (GS_R)__uint_as_float((unsigned)b);
#else
    return GS_R_WIDE ? (GS_R)b : (GS_R)(uint32_t)b;
#endif
}

static __device__ __forceinline__ unsigned long long GS_FN(pack_carry)(GS_FN(gs_carry) c)
{
    if (GS_R_WIDE)
        return GS_FN(bits_of)(c.hi);
    return GS_FN(bits_of)(c.hi) | (GS_FN(bits_of)(c.lo) << 32);
}

static __device__ __forceinline__ GS_FN(gs_carry) GS_FN(unpack_carry)(unsigned long long b)
{
    GS_FN(gs_carry) c;
    c.hi = GS_FN(of_bits)(GS_R_WIDE ? b : b & 0xffffffffull);
    /* (a wide carry's lo travels in a word of its own, read apart: none here, -0.0 as carry_of) */
    c.lo = GS_R_WIDE ? (GS_R_KIND == 'f' ? (GS_R)-0.0 : (GS_R)0) : GS_FN(of_bits)(b >> 32);
    return c;
}

/* The carry rounded to one register value, with v (later) combined in: hi + (lo + v). */
static __device__ __forceinline__ GS_R GS_FN(carry_apply)(gs_op op, GS_FN(gs_carry) c, GS_R v)
{
    if (GS_FN(compensated)(op))
        return c.hi + (c.lo + v);
    return GS_FN(combine)(op, c.hi, v);
}
