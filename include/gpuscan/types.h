/*
 * gpuscan/types.h - the one dtype table and the one operator table.
 * Level: shared by the host layer (csrc/, plain C) and the device layer (kernels/, CUDA C).
 * Nothing here depends on Python, NumPy or the CUDA runtime, so both sides and both backends
 * agree on what a dtype code and an op code mean.  Everything that is generic over dtypes is
 * stamped out from GS_DTYPES; everything generic over operators from GS_OPS.
 */
#ifndef GS_TYPES_H
#define GS_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Small helpers below are callable from host and device code alike. */
#ifdef __CUDACC__
#define GS_HD __host__ __device__
#else
#define GS_HD
#endif

/* X(CODE, ctype, sfx, kind, npy_typenum)
 *   CODE   enumerator of gs_dtype
 *   ctype  C storage type (bool is stored as one byte holding 0 or 1, as NumPy does)
 *   sfx    short suffix used to name generated functions and kernels
 *   kind   'b' bool, 'i' signed integer, 'u' unsigned integer, 'f' IEEE float
 *   npy    NumPy type number (a bare token: only csrc/, which includes NumPy, expands it)
 * The order is the order of gs_dtype and must not change without rebuilding everything. */
#define GS_DTYPES(X)                             \
    X(GS_BOOL, uint8_t, b1, 'b', NPY_BOOL)       \
    X(GS_INT8, int8_t, i8, 'i', NPY_INT8)        \
    X(GS_INT16, int16_t, i16, 'i', NPY_INT16)    \
    X(GS_INT32, int32_t, i32, 'i', NPY_INT32)    \
    X(GS_INT64, int64_t, i64, 'i', NPY_INT64)    \
    X(GS_UINT8, uint8_t, u8, 'u', NPY_UINT8)     \
    X(GS_UINT16, uint16_t, u16, 'u', NPY_UINT16) \
    X(GS_UINT32, uint32_t, u32, 'u', NPY_UINT32) \
    X(GS_UINT64, uint64_t, u64, 'u', NPY_UINT64) \
    X(GS_FLOAT32, float, f32, 'f', NPY_FLOAT32)  \
    X(GS_FLOAT64, double, f64, 'f', NPY_FLOAT64)

typedef enum gs_dtype {
#define GS_X_ENUM(code, ctype, sfx, kind, npy) code,
    GS_DTYPES(GS_X_ENUM)
#undef GS_X_ENUM
        GS_NDTYPES
} gs_dtype;

/* X(CODE, name, ufunc) - the contract's operators, by their string name and matching ufunc.
 * The backends run the first eleven; fmax and fmin on bool and integers run as max and min,
 * the logical ops as the bitwise ones on bool (gs_op_run). */
#define GS_OPS(X)                                      \
    X(GS_OP_ADD, "add", "add")                         \
    X(GS_OP_MUL, "mul", "multiply")                    \
    X(GS_OP_MIN, "min", "minimum")                     \
    X(GS_OP_MAX, "max", "maximum")                     \
    X(GS_OP_AND, "and", "bitwise_and")                 \
    X(GS_OP_OR, "or", "bitwise_or")                    \
    X(GS_OP_XOR, "xor", "bitwise_xor")                 \
    X(GS_OP_FMAX, "fmax", "fmax")                      \
    X(GS_OP_FMIN, "fmin", "fmin")                      \
    X(GS_OP_LOGADDEXP, "logaddexp", "logaddexp")       \
    X(GS_OP_LOGADDEXP2, "logaddexp2", "logaddexp2")    \
    X(GS_OP_LOGICAL_AND, "logical_and", "logical_and") \
    X(GS_OP_LOGICAL_OR, "logical_or", "logical_or")    \
    X(GS_OP_LOGICAL_XOR, "logical_xor", "logical_xor")

typedef enum gs_op {
#define GS_X_ENUM(code, name, ufunc) code,
    GS_OPS(GS_X_ENUM)
#undef GS_X_ENUM
        GS_NOPS
} gs_op;

/* Storage size in bytes of each dtype. */
static inline GS_HD size_t gs_dtype_size(gs_dtype t)
{
    switch (t) {
#define GS_X_SIZE(code, ctype, sfx, kind, npy) \
    case code:                                 \
        return sizeof(ctype);
        GS_DTYPES(GS_X_SIZE)
#undef GS_X_SIZE
    default:
        return 0;
    }
}

/* The kind letter of each dtype ('b', 'i', 'u', 'f'). */
static inline GS_HD char gs_dtype_kind(gs_dtype t)
{
    switch (t) {
#define GS_X_KIND(code, ctype, sfx, kind, npy) \
    case code:                                 \
        return kind;
        GS_DTYPES(GS_X_KIND)
#undef GS_X_KIND
    default:
        return 0;
    }
}

/* The kind a value is read as: bool reads as an unsigned integer (its bits are 0 or 1). */
static inline GS_HD char gs_dtype_read_kind(gs_dtype t)
{
    const char k = gs_dtype_kind(t);
    return k == 'b' ? 'u' : k;
}

static inline GS_HD int gs_dtype_is_float(gs_dtype t)
{
    return gs_dtype_kind(t) == 'f';
}

/* Bitwise operators are defined on bool and integers only (NumPy raises TypeError on floats). */
static inline GS_HD int gs_op_is_bitwise(gs_op op)
{
    return op == GS_OP_AND || op == GS_OP_OR || op == GS_OP_XOR;
}

/* The logical ops: bool results, their input read as bool (nonzero is True). */
static inline GS_HD int gs_op_is_logical(gs_op op)
{
    return op == GS_OP_LOGICAL_AND || op == GS_OP_LOGICAL_OR || op == GS_OP_LOGICAL_XOR;
}

/* logaddexp and logaddexp2 are defined on floats only (integer input gives a float result). */
static inline GS_HD int gs_op_is_log(gs_op op)
{
    return op == GS_OP_LOGADDEXP || op == GS_OP_LOGADDEXP2;
}

/* The operator a backend runs for `op` with results of dtype t: the logical ops are the bitwise
 * ones on bool (their input already cast to bool), fmax and fmin on bool and integers are max
 * and min (no NaN to skip); every other op is itself. */
static inline GS_HD gs_op gs_op_run(gs_op op, gs_dtype t)
{
    if (gs_op_is_logical(op))
        return op == GS_OP_LOGICAL_AND ? GS_OP_AND : op == GS_OP_LOGICAL_OR ? GS_OP_OR : GS_OP_XOR;
    if ((op == GS_OP_FMAX || op == GS_OP_FMIN) && !gs_dtype_is_float(t))
        return op == GS_OP_FMAX ? GS_OP_MAX : GS_OP_MIN;
    return op;
}

/* Whether a float result under op depends on how the values are grouped (add, mul and logaddexp
 * round; min, max, fmax and fmin select): such scans and reductions combine in a fixed order. */
static inline GS_HD int gs_op_rounds(gs_op op, gs_dtype t)
{
    return gs_dtype_is_float(t) &&
           (op == GS_OP_ADD || op == GS_OP_MUL || gs_op_is_log(op));
}

/* Whether a backend scans `in` straight into `out` under `op` without a separate cast pass:
 * the same dtype, or the widening that NumPy's add/mul accumulate rules ask for (bool and
 * integers narrower than 64 bits into a 64-bit integer; each input value is first converted
 * value-preservingly, then taken modulo 2^64).  For every other (in, out) pair the host layer
 * casts the input to `out`'s dtype first. */
static inline GS_HD int gs_scan_pair_direct(gs_dtype in, gs_dtype out, gs_op op)
{
    if (in == out)
        return 1;
    if (op != GS_OP_ADD && op != GS_OP_MUL)
        return 0;
    if (out != GS_INT64 && out != GS_UINT64)
        return 0;
    return gs_dtype_kind(in) != 'f' && gs_dtype_size(in) < 8;
}

#endif /* GS_TYPES_H */
