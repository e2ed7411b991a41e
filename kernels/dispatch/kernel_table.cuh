/*
 * dispatch/kernel_table.cuh - the one table of typed kernels: the (op, in, out, register type)
 * combinations every primitive with a typed accumulation stamps (scan, reduce, the teaching
 * scans), and how a requested (in, out, op) maps onto a row of it.
 * Level: dispatch (read by the kernel stamps and the launchers of kernels/dispatch/).  Dtypes
 * whose bits behave the same under an operator share a kernel (signed and unsigned integers of
 * one width under add, mul and the bitwise ops), so the table stays small.
 */
#ifndef GS_KERNEL_TABLE_CUH
#define GS_KERNEL_TABLE_CUH

#include "dispatch/launch.cuh"
#include "dispatch/tuning.h"

/* X(op, in, out, rs): one kernel that takes `in` values to `out` values under `op` in
 * registers of suffix rs; every primitive with a typed accumulation (scan, reduce) stamps one
 * kernel per row.
 * add/mul: unsigned same-width (signed shares them) and the widening of narrow integers and
 * bool to 64 bits (the input's signedness decides its extension; a bool's value is 0 or 1,
 * whatever its byte: not uint8's row); min/max: every dtype; bitwise: bool and unsigned widths.
 * Bool under add/mul/min/max runs as or/and (NumPy's bool arithmetic).  fmax, fmin, logaddexp
 * and logaddexp2 have float rows only (gs_op_run() makes integer fmax and fmin max and min). */
#define GS_KT_ARITH_INT(X, op)       \
    X(op, GS_UINT8, GS_UINT8, u32)   \
    X(op, GS_UINT16, GS_UINT16, u32) \
    X(op, GS_UINT32, GS_UINT32, u32) \
    X(op, GS_UINT64, GS_UINT64, u64) \
    X(op, GS_INT8, GS_UINT64, u64)   \
    X(op, GS_INT16, GS_UINT64, u64)  \
    X(op, GS_INT32, GS_UINT64, u64)  \
    X(op, GS_UINT8, GS_UINT64, u64)  \
    X(op, GS_UINT16, GS_UINT64, u64) \
    X(op, GS_UINT32, GS_UINT64, u64) \
    X(op, GS_BOOL, GS_UINT64, u64)
#define GS_KT_ARITH_FLOAT(X, op)       \
    X(op, GS_FLOAT32, GS_FLOAT32, f32) \
    X(op, GS_FLOAT64, GS_FLOAT64, f64)
#define GS_KT_ORDER(X, op)             \
    X(op, GS_INT8, GS_INT8, i32)       \
    X(op, GS_INT16, GS_INT16, i32)     \
    X(op, GS_INT32, GS_INT32, i32)     \
    X(op, GS_INT64, GS_INT64, i64)     \
    X(op, GS_UINT8, GS_UINT8, u32)     \
    X(op, GS_UINT16, GS_UINT16, u32)   \
    X(op, GS_UINT32, GS_UINT32, u32)   \
    X(op, GS_UINT64, GS_UINT64, u64)   \
    X(op, GS_FLOAT32, GS_FLOAT32, f32) \
    X(op, GS_FLOAT64, GS_FLOAT64, f64)
#define GS_KT_BITS(X, op)            \
    X(op, GS_BOOL, GS_BOOL, u32)     \
    X(op, GS_UINT8, GS_UINT8, u32)   \
    X(op, GS_UINT16, GS_UINT16, u32) \
    X(op, GS_UINT32, GS_UINT32, u32) \
    X(op, GS_UINT64, GS_UINT64, u64)
/* The rows whose operator is exact (integers, min/max, fmax/fmin, bitwise): any grouping gives
 * the same bits, so their scans may combine from the nearest published prefix
 * (device/lookback.cuh); float add, mul and logaddexp take the anchored look-back. */
#define GS_EXACT_KERNELS(X)          \
    GS_KT_ARITH_INT(X, GS_OP_ADD)    \
    GS_KT_ARITH_INT(X, GS_OP_MUL)    \
    GS_KT_ORDER(X, GS_OP_MIN)        \
    GS_KT_ORDER(X, GS_OP_MAX)        \
    GS_KT_ARITH_FLOAT(X, GS_OP_FMIN) \
    GS_KT_ARITH_FLOAT(X, GS_OP_FMAX) \
    GS_KT_BITS(X, GS_OP_AND)         \
    GS_KT_BITS(X, GS_OP_OR)          \
    GS_KT_BITS(X, GS_OP_XOR)
#define GS_TYPED_KERNELS(X)                \
    GS_EXACT_KERNELS(X)                    \
    GS_KT_ARITH_FLOAT(X, GS_OP_ADD)        \
    GS_KT_ARITH_FLOAT(X, GS_OP_MUL)        \
    GS_KT_ARITH_FLOAT(X, GS_OP_LOGADDEXP) \
    GS_KT_ARITH_FLOAT(X, GS_OP_LOGADDEXP2)

/* The unsigned dtype of the same width as an integer dtype t. */
static gs_dtype gs_unsigned_of(gs_dtype t)
{
    switch (gs_dtype_size(t)) {
    case 1:
        return GS_UINT8;
    case 2:
        return GS_UINT16;
    case 4:
        return GS_UINT32;
    default:
        return GS_UINT64;
    }
}

/* The table row for a (in, out, op) triple that gs_scan_pair_direct() accepts: NumPy's bool
 * arithmetic (+ is or, * is and; min/max likewise), and signedness dropped where the bits do
 * not see it (only a narrower input's extension does; a bool input keeps its own row, which
 * reads any nonzero byte as 1). */
static void gs_kernel_key(gs_dtype *in, gs_dtype *out, gs_op *op)
{
    if (*out == GS_BOOL) {
        if (*op == GS_OP_ADD || *op == GS_OP_MAX)
            *op = GS_OP_OR;
        else if (*op == GS_OP_MUL || *op == GS_OP_MIN)
            *op = GS_OP_AND;
    } else if (!gs_dtype_is_float(*out) && *op != GS_OP_MIN && *op != GS_OP_MAX) {
        if (*in == *out)
            *in = gs_unsigned_of(*in);
        *out = gs_unsigned_of(*out);
    }
}

#endif /* GS_KERNEL_TABLE_CUH */
