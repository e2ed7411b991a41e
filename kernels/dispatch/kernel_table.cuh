/*
 * dispatch/kernel_table.cuh - host side of every typed kernel family: the one table of (op, in,
 * out, register type) combinations, how a requested (in, out, op) maps onto a row of it, the
 * register budget per register type, and the resident-grid size.
 *
 * Level: device-wide dispatch (host code in the .cu files).  Dtypes whose bits behave the same
 * under an operator share a kernel (signed and unsigned integers of one width under add, mul
 * and the bitwise ops), so the table stays small.
 */
#ifndef GS_DISPATCH_CUH
#define GS_DISPATCH_CUH

#include "device/common.cuh"

/*
 * X(op, in, out, rs): one kernel that takes `in` values to `out` values under `op` in
 * registers of suffix rs; every primitive with a typed accumulation (scan, reduce) stamps one
 * kernel per row.
 * add/mul: unsigned same-width (signed shares them) and the widening of narrow integers to 64
 * bits (the input's signedness decides its extension); min/max: every dtype; bitwise: bool
 * and unsigned widths.  Bool under add/mul/min/max runs as or/and (NumPy's bool arithmetic).
 */
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
    X(op, GS_UINT32, GS_UINT64, u64)
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
/* The rows whose operator is exact (integers, min/max, bitwise): any grouping gives the same
 * bits, so their scans may combine from the nearest published prefix (device/lookback.cuh); float
 * add and mul take the anchored look-back. */
#ifdef GS_TUNING_SUBSET /* tools/kernel_check.cu: only the rows it times, a quicker build */
#define GS_EXACT_KERNELS(X)                 \
    X(GS_OP_ADD, GS_UINT32, GS_UINT32, u32) \
    X(GS_OP_ADD, GS_INT32, GS_UINT64, u64)  \
    X(GS_OP_ADD, GS_UINT64, GS_UINT64, u64) \
    X(GS_OP_MAX, GS_INT32, GS_INT32, i32)   \
    X(GS_OP_MIN, GS_FLOAT32, GS_FLOAT32, f32)
#else
#define GS_EXACT_KERNELS(X)       \
    GS_KT_ARITH_INT(X, GS_OP_ADD) \
    GS_KT_ARITH_INT(X, GS_OP_MUL) \
    GS_KT_ORDER(X, GS_OP_MIN)     \
    GS_KT_ORDER(X, GS_OP_MAX)     \
    GS_KT_BITS(X, GS_OP_AND)      \
    GS_KT_BITS(X, GS_OP_OR)       \
    GS_KT_BITS(X, GS_OP_XOR)
#endif
#define GS_TYPED_KERNELS(X)         \
    GS_EXACT_KERNELS(X)             \
    GS_KT_ARITH_FLOAT(X, GS_OP_ADD) \
    GS_KT_ARITH_FLOAT(X, GS_OP_MUL)

/* Blocks per multiprocessor the register budget must allow, by register type: 4-byte
 * registers leave room for more resident blocks than 8-byte ones. */
#ifndef GS_MIN_BLOCKS_4
#define GS_MIN_BLOCKS_4 5 /* measured best for one tile per block (H200) */
#endif
#ifndef GS_MIN_BLOCKS_8
#define GS_MIN_BLOCKS_8 2
#endif
#define GS_MIN_BLOCKS_u32 GS_MIN_BLOCKS_4
#define GS_MIN_BLOCKS_i32 GS_MIN_BLOCKS_4
/* float32 runs add and mul with double-word carries: under the 5-block budget its one-tile
 * kernel spilled (ptxas: 120 bytes), and 4 blocks measured faster (H200, float32 add in the
 * three passes that preceded the anchored look-back: 46% of memcpy at 2^28 against 40%). */
#ifndef GS_MIN_BLOCKS_f32
#define GS_MIN_BLOCKS_f32 4
#endif
#define GS_MIN_BLOCKS_u64 GS_MIN_BLOCKS_8
#define GS_MIN_BLOCKS_i64 GS_MIN_BLOCKS_8
#define GS_MIN_BLOCKS_f64 GS_MIN_BLOCKS_8

/* The lookahead driver holds three input tiles in shared memory: 4-byte inputs leave room for
 * four blocks per multiprocessor (H100/H200), 8-byte ones for two. */
#ifndef GS_AHEAD_MIN_BLOCKS_4 /* overridable for tuning (tools/kernel_check.cu) */
#define GS_AHEAD_MIN_BLOCKS_4 4
#endif
#ifndef GS_AHEAD_MIN_BLOCKS_8
#define GS_AHEAD_MIN_BLOCKS_8 2
#endif
#define GS_AHEAD_MIN_BLOCKS_u32 GS_AHEAD_MIN_BLOCKS_4
#define GS_AHEAD_MIN_BLOCKS_i32 GS_AHEAD_MIN_BLOCKS_4
#define GS_AHEAD_MIN_BLOCKS_f32 GS_AHEAD_MIN_BLOCKS_4
#define GS_AHEAD_MIN_BLOCKS_u64 GS_AHEAD_MIN_BLOCKS_8
#define GS_AHEAD_MIN_BLOCKS_i64 GS_AHEAD_MIN_BLOCKS_8
#define GS_AHEAD_MIN_BLOCKS_f64 GS_AHEAD_MIN_BLOCKS_8

/*
 * Blocks of `kernel` (launched with `dynamic_smem` bytes of dynamic shared memory, always the
 * same for one kernel) that fit on the current device at once (a persistent or grid-stride
 * grid), computed once per kernel and device: the occupancy query costs microseconds, a
 * launch's own budget.  Shared memory past 48 KiB needs an opt-in, set here once per kernel.
 * Calls may race (the GIL is released around device work): a slot is cleared, then written
 * blocks first and kernel last, and a reader re-checks the kernel after reading the blocks, so
 * a racing reader queries again rather than take another kernel's count.  (Even a wrong count
 * would only size a grid: every driver takes its tiles or chunks dynamically.)
 */
#define GS_MAX_DEVICES 64
#define GS_RESIDENT_SLOTS 256
static cudaError_t gs_resident_blocks(const void *kernel, size_t dynamic_smem, int *blocks)
{
    static const void *cached_kernel[GS_MAX_DEVICES][GS_RESIDENT_SLOTS];
    static int cached_blocks[GS_MAX_DEVICES][GS_RESIDENT_SLOTS];
    int device, sms, per_sm;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess)
        return err;
    const unsigned slot = (unsigned)(((uintptr_t)kernel >> 4) % GS_RESIDENT_SLOTS);
    if (device < GS_MAX_DEVICES &&
        __atomic_load_n(&cached_kernel[device][slot], __ATOMIC_ACQUIRE) == kernel) {
        const int cached = __atomic_load_n(&cached_blocks[device][slot], __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&cached_kernel[device][slot], __ATOMIC_ACQUIRE) == kernel) {
            *blocks = cached;
            return cudaSuccess;
        }
    }
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess && dynamic_smem > 0)
        err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)dynamic_smem);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, GS_NT, dynamic_smem);
    if (err != cudaSuccess)
        return err;
    *blocks = sms * (per_sm > 0 ? per_sm : 1);
    if (device < GS_MAX_DEVICES) {
        __atomic_store_n(&cached_kernel[device][slot], (const void *)NULL, __ATOMIC_RELEASE);
        __atomic_store_n(&cached_blocks[device][slot], *blocks, __ATOMIC_RELEASE);
        __atomic_store_n(&cached_kernel[device][slot], kernel, __ATOMIC_RELEASE);
    }
    return cudaSuccess;
}

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

/*
 * The table row for a (in, out, op) triple that gs_scan_pair_direct() accepts: NumPy's bool
 * arithmetic (+ is or, * is and; min/max likewise), and signedness dropped where the bits do
 * not see it (only a narrower input's extension does).
 */
static void gs_kernel_key(gs_dtype *in, gs_dtype *out, gs_op *op)
{
    if (*out == GS_BOOL) {
        if (*op == GS_OP_ADD || *op == GS_OP_MAX)
            *op = GS_OP_OR;
        else if (*op == GS_OP_MUL || *op == GS_OP_MIN)
            *op = GS_OP_AND;
    } else if (!gs_dtype_is_float(*out) && *op != GS_OP_MIN && *op != GS_OP_MAX) {
        if (*in == *out || *in == GS_BOOL)
            *in = gs_unsigned_of(*in);
        *out = gs_unsigned_of(*out);
    }
}

#endif /* GS_DISPATCH_CUH */
