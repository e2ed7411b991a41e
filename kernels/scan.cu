/*
 * scan.cu - the single-pass scan: its __global__ kernels and the extern "C" launcher.
 *
 * Level: device-wide algorithm (kernels + dispatch).  One kernel per row of GS_SCAN_KERNELS:
 * the operator and the input/output dtypes are compile-time constants, inclusive/exclusive,
 * row length and segment flags are run-time parameters.  Dtypes whose bits behave the same
 * under an operator share a kernel (signed and unsigned integers of one width under add, mul
 * and the bitwise ops), so the table is small.
 */
#include "gs_common.cuh"

#define GS_AGENT "agent_scan.cuh"
#include "gs_stamp.cuh"


/*
 * X(op, in, out, rs): scan `in` values into `out` values under `op` in registers of suffix rs.
 * add/mul: unsigned same-width (signed shares them) and the widening of narrow integers to 64
 * bits (the input's signedness decides its extension); min/max: every dtype; bitwise: bool
 * and unsigned widths.  Bool under add/mul/min/max runs as or/and (NumPy's bool arithmetic).
 */
#define GS_SCAN_ARITH(X, op)                                                                   \
    X(op, GS_UINT8, GS_UINT8, u32)                                                             \
    X(op, GS_UINT16, GS_UINT16, u32)                                                           \
    X(op, GS_UINT32, GS_UINT32, u32)                                                           \
    X(op, GS_UINT64, GS_UINT64, u64)                                                           \
    X(op, GS_FLOAT32, GS_FLOAT32, f32)                                                         \
    X(op, GS_FLOAT64, GS_FLOAT64, f64)                                                         \
    X(op, GS_INT8, GS_UINT64, u64)                                                             \
    X(op, GS_INT16, GS_UINT64, u64)                                                            \
    X(op, GS_INT32, GS_UINT64, u64)                                                            \
    X(op, GS_UINT8, GS_UINT64, u64)                                                            \
    X(op, GS_UINT16, GS_UINT64, u64)                                                           \
    X(op, GS_UINT32, GS_UINT64, u64)
#define GS_SCAN_ORDER(X, op)                                                                   \
    X(op, GS_INT8, GS_INT8, i32)                                                               \
    X(op, GS_INT16, GS_INT16, i32)                                                             \
    X(op, GS_INT32, GS_INT32, i32)                                                             \
    X(op, GS_INT64, GS_INT64, i64)                                                             \
    X(op, GS_UINT8, GS_UINT8, u32)                                                             \
    X(op, GS_UINT16, GS_UINT16, u32)                                                           \
    X(op, GS_UINT32, GS_UINT32, u32)                                                           \
    X(op, GS_UINT64, GS_UINT64, u64)                                                           \
    X(op, GS_FLOAT32, GS_FLOAT32, f32)                                                         \
    X(op, GS_FLOAT64, GS_FLOAT64, f64)
#define GS_SCAN_BITS(X, op)                                                                    \
    X(op, GS_BOOL, GS_BOOL, u32)                                                               \
    X(op, GS_UINT8, GS_UINT8, u32)                                                             \
    X(op, GS_UINT16, GS_UINT16, u32)                                                           \
    X(op, GS_UINT32, GS_UINT32, u32)                                                           \
    X(op, GS_UINT64, GS_UINT64, u64)
#define GS_SCAN_KERNELS(X)                                                                     \
    GS_SCAN_ARITH(X, GS_OP_ADD)                                                                \
    GS_SCAN_ARITH(X, GS_OP_MUL)                                                                \
    GS_SCAN_ORDER(X, GS_OP_MIN)                                                                \
    GS_SCAN_ORDER(X, GS_OP_MAX)                                                                \
    GS_SCAN_BITS(X, GS_OP_AND)                                                                 \
    GS_SCAN_BITS(X, GS_OP_OR)                                                                  \
    GS_SCAN_BITS(X, GS_OP_XOR)

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
#define GS_MIN_BLOCKS_f32 GS_MIN_BLOCKS_4
#define GS_MIN_BLOCKS_u64 GS_MIN_BLOCKS_8
#define GS_MIN_BLOCKS_i64 GS_MIN_BLOCKS_8
#define GS_MIN_BLOCKS_f64 GS_MIN_BLOCKS_8

#define GS_SCAN_KERNEL_NAME(op, in, out) gs_scan_##op##_##in##_##out

#define GS_X_KERNEL(op, in, out, rs)                                                           \
    __global__ void __launch_bounds__(GS_NT, GS_MIN_BLOCKS_##rs) GS_SCAN_KERNEL_NAME(op, in, out)(gs_scan_kparams p) \
    {                                                                                          \
        scan_tiles_##rs(op, in, out, &p);                                                       \
    }
GS_SCAN_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

typedef void (*gs_scan_kernel)(gs_scan_kparams);

/*
 * Blocks of `kernel` that fit on the current device at once (the persistent grid), computed
 * once per kernel and device: the occupancy query costs microseconds, a launch's own budget.
 */
#define GS_MAX_DEVICES 64
static cudaError_t gs_resident_blocks(gs_scan_kernel kernel, int *blocks)
{
    static gs_scan_kernel cached_kernel[GS_MAX_DEVICES][128];
    static int cached_blocks[GS_MAX_DEVICES][128];
    int device, sms, per_sm;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess)
        return err;
    const unsigned slot = (unsigned)(((uintptr_t)kernel >> 4) % 128);
    if (device < GS_MAX_DEVICES && cached_kernel[device][slot] == kernel) {
        *blocks = cached_blocks[device][slot];
        return cudaSuccess;
    }
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, GS_NT, 0);
    if (err != cudaSuccess)
        return err;
    *blocks = sms * (per_sm > 0 ? per_sm : 1);
    if (device < GS_MAX_DEVICES) {
        cached_blocks[device][slot] = *blocks;
        cached_kernel[device][slot] = kernel;
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

/* The kernel for a (in, out, op) triple that gs_scan_pair_direct() accepts, or NULL. */
static gs_scan_kernel gs_scan_kernel_for(gs_dtype in, gs_dtype out, gs_op op)
{
    if (out == GS_BOOL) { /* NumPy's bool arithmetic: + is or, * is and; min/max likewise */
        if (op == GS_OP_ADD || op == GS_OP_MAX)
            op = GS_OP_OR;
        else if (op == GS_OP_MUL || op == GS_OP_MIN)
            op = GS_OP_AND;
    } else if (!gs_dtype_is_float(out) && op != GS_OP_MIN && op != GS_OP_MAX) {
        /* Wrapping and bitwise arithmetic does not see signedness, except in how a narrower
         * input is extended. */
        if (in == out || in == GS_BOOL)
            in = gs_unsigned_of(in);
        out = gs_unsigned_of(out);
    }
#define GS_X_MATCH(op_, in_, out_, rs)                                                         \
    if (op == op_ && in == in_ && out == out_)                                                 \
        return GS_SCAN_KERNEL_NAME(op_, in_, out_);
    GS_SCAN_KERNELS(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

extern "C" cudaError_t gs_cuda_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                                    cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    gs_scan_kernel kernel = gs_scan_kernel_for(d->in_type, d->out_type, d->op);
    gs_scan_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    if (kernel == NULL || scratch_bytes < gs_scan_scratch_bytes(d->n) || tiles > INT32_MAX)
        return cudaErrorInvalidValue;

    p.in = d->in;
    p.out = d->out;
    p.flags = d->flags;
    p.n = d->n;
    p.row_len = d->row_len;
    p.ts = gs_tile_state_carve(scratch);
    p.flag_type = d->flag_type;
    p.exclusive = d->exclusive;
    p.vec_in = ((uintptr_t)d->in % 16) == 0;
    p.vec_out = ((uintptr_t)d->out % 16) == 0;

    /* ---- The tiny init: zero the tile counter and descriptors. ---- */
    err = cudaMemsetAsync(scratch, 0, gs_scan_scratch_bytes(d->n), stream);
    if (err != cudaSuccess)
        return err;

    /* ---- The one scan launch: a persistent grid, as many blocks as fit at once. ---- */
    int64_t blocks = tiles;
    if (GS_PERSISTENT) {
        int resident;
        err = gs_resident_blocks(kernel, &resident);
        if (err != cudaSuccess)
            return err;
        if (blocks > resident)
            blocks = resident;
    }
    kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(p);
    err = cudaGetLastError();
    if (err == cudaSuccess && gs_cuda_debug_sync)
        err = cudaStreamSynchronize(stream);
    return err;
}
