/*
 * gs_api.h - what the host layer asks of a backend.
 *
 * Level: the seam between csrc/ (parsing, dispatch, memory) and the two backends: the CUDA
 * launchers in the kernels folder (.cu files) and the multi-threaded C of the CPU backend
 * (csrc/cpu_pool.c, csrc/cpu_scan.c).  A backend sees only
 * flat, C-contiguous buffers of known dtypes described by the structs below; everything about
 * Python objects, strides, byte order, `out=` and result dtypes is settled before the call.
 */
#ifndef GS_API_H
#define GS_API_H

#include "gs_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most dimensions a strided device copy handles (NumPy 2's NPY_MAXDIMS). */
#define GS_MAX_NDIM 64

/* Which scan algorithm a call runs: the production single-pass scan, or one of the teaching
 * variants (kernels/teach.cu, csrc/cpu_teach.c). */
typedef enum gs_algorithm { GS_ALGO_AUTO, GS_ALGO_HILLIS_STEELE, GS_ALGO_BLELLOCH } gs_algorithm;

/*
 * One scan call.  `in` and `out` hold n contiguous elements; `out` may equal `in` (in place)
 * when in_type == out_type.  The pair (in_type, out_type, op) satisfies gs_scan_pair_direct().
 *   row_len > 0: the n elements are n / row_len consecutive rows, each scanned independently
 *                (a row start is a segment head); row_len == 0: one scan over all n.
 *   flags != NULL: segmented scan, flags[i] != 0 (in flag_type) marks a segment head;
 *                  element 0 always starts a segment.  Not combined with row_len.
 *   exclusive: out[i] combines the elements before i in its segment (the identity at a head).
 *   algorithm: GS_ALGO_AUTO, or a teaching variant (Hillis-Steele: not with flags).
 */
typedef struct gs_scan_desc {
    const void *in;
    void *out;
    const void *flags;
    int64_t n;
    int64_t row_len;
    gs_dtype in_type;
    gs_dtype out_type;
    gs_dtype flag_type;
    gs_op op;
    int exclusive;
    gs_algorithm algorithm;
} gs_scan_desc;

/*
 * One reduction: `rows` independent reductions of `row_len` contiguous values each (the
 * reduced axes are last and contiguous; axis=None is rows = 1).  out receives `rows` values of
 * out_type; (in_type, out_type, op) satisfies gs_scan_pair_direct() (the same widening rules as
 * accumulate).  row_len >= 1: empty reductions are settled by the host (identity or
 * ValueError) and never reach a backend.  Float results are deterministic (a fixed grouping
 * that depends on rows and row_len only, never on the device or the thread count) and float
 * add stays within (log2(row_len)+2)*eps*sum|x|; float min/max return the first NaN.
 */
typedef struct gs_reduce_desc {
    const void *in;
    void *out;
    int64_t rows;
    int64_t row_len;
    gs_dtype in_type;
    gs_dtype out_type;
    gs_op op;
} gs_reduce_desc;

/*
 * A strided element-wise copy with a dtype conversion (C casts, as NumPy's unsafe astype):
 * dst[idx] = (dst_type) src[idx] for every index of `shape`.  Strides are in bytes and may be
 * negative or zero (broadcast source).
 */
typedef struct gs_copy_desc {
    const void *src;
    void *dst;
    gs_dtype src_type;
    gs_dtype dst_type;
    int ndim;
    int64_t shape[GS_MAX_NDIM];
    int64_t src_strides[GS_MAX_NDIM];
    int64_t dst_strides[GS_MAX_NDIM];
} gs_copy_desc;

/*
 * One split (stable partition) or compact: the n values of `in` (moved as bits of in_type's
 * width: any dtype, NaN payloads kept) whose flag is nonzero (flags[i] in flag_type: for floats
 * -0.0 is zero and NaN nonzero) go first, in order, then (split only) the others, in order.
 * `out` holds n values (split) or the flagged count (compact) and never overlaps `in` or
 * `flags`.
 */
typedef struct gs_split_desc {
    const void *in;
    const void *flags;
    void *out;
    int64_t n;
    gs_dtype in_type;
    gs_dtype flag_type;
    int compact;
} gs_split_desc;

/*
 * One parallel step of a teaching algorithm over a working array (kernels/teach.cu runs it as one
 * kernel launch, csrc/cpu_teach.c as one parallel loop).  The array is `rows` rows of `m` values
 * of `type`, row r at buf + r*m; each step below acts on every row.
 *   GS_STEP_HS    Hillis-Steele: buf[i] = src[i - s] op src[i] where i's place in its row is
 *                 >= s, else src[i] (buf and src distinct: double buffering);
 *   GS_STEP_UP    up-sweep at stride s (m a power of two): for each node, x[k+2s-1] =
 *                 x[k+s-1] op x[k+2s-1]; flagged (fup != NULL): only where fup[k+2s-1] is
 *                 clear, and fup[k+2s-1] |= fup[k+s-1];
 *   GS_STEP_DOWN  down-sweep at stride s: t = x[k+s-1]; x[k+s-1] = x[k+2s-1]; x[k+2s-1] = x[k+2s-1]
 *                 op t (the parent's value first: it comes earlier).  With clear_root the parent's
 *                 value is taken as the identity (the root reset).  Flagged: the right child is
 *                 the identity where forig[k+s] is set, else t where fup[k+s-1] is set, else as
 *                 above; then fup[k+s-1] is cleared;
 *   GS_STEP_INCL  buf[i] = buf[i] op src[i] (the exclusive scan made inclusive) for the first
 *                 `len` values of each row (the rest is padding and is left alone).
 * `work` (may be NULL) is increased by the operator applications performed, counted as they
 * happen.
 */
typedef enum gs_step_kind { GS_STEP_HS, GS_STEP_UP, GS_STEP_DOWN, GS_STEP_INCL } gs_step_kind;

typedef struct gs_step_desc {
    void *buf;
    const void *src;
    unsigned char *fup;
    const unsigned char *forig;
    int64_t rows;
    int64_t m;
    int64_t s;
    int64_t len;
    gs_dtype type;
    gs_op op;
    gs_step_kind kind;
    int clear_root;
    unsigned long long *work;
} gs_step_desc;

#ifdef GS_HAVE_CUDA
#include <cuda_runtime_api.h>

/* A teaching scan (d->algorithm != GS_ALGO_AUTO) on `stream`; `scratch` holds at least
 * gs_teach_scratch_bytes(d) bytes (gs_teach.h). */
cudaError_t gs_cuda_teach_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                               cudaStream_t stream);

/* Enqueue one teaching step on `stream` (device pointers; work a device counter or NULL). */
cudaError_t gs_cuda_step(const gs_step_desc *d, cudaStream_t stream);

/* Nonzero: the Blelloch tiles run without their bank-conflict padding (a test switch). */
extern int gs_teach_unpadded;

/* Enqueue the scan on `stream`: one memset of the scratch and one kernel launch.  `scratch`
 * holds at least gs_scan_scratch_bytes(d->n) bytes (gs_config.h).  Returns the first CUDA
 * error. */
cudaError_t gs_cuda_scan(const gs_scan_desc *d, void *scratch, size_t scratch_bytes,
                         cudaStream_t stream);

/* Enqueue the reduction on `stream`: the row partials and the deterministic final combine, in
 * one launch.  `scratch` holds at least gs_reduce_scratch_bytes(rows, row_len) bytes. */
cudaError_t gs_cuda_reduce(const gs_reduce_desc *d, void *scratch, size_t scratch_bytes,
                           cudaStream_t stream);

/* Enqueue the strided converting copy on `stream`. */
cudaError_t gs_cuda_copy(const gs_copy_desc *d, cudaStream_t stream);

/* The split in two launches on `stream`, with `scratch` of gs_split_scratch_bytes(d->n) bytes
 * (gs_config.h) kept between them.  gs_cuda_split_count zeroes the descriptors and runs the
 * count pass (d->out unused): afterwards the scratch's first 8 bytes hold the flagged count as a
 * uint64, which a compact downloads to size its output.  gs_cuda_split_scatter then writes
 * d->out.  Both return the first CUDA error. */
cudaError_t gs_cuda_split_count(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                cudaStream_t stream);
cudaError_t gs_cuda_split_scatter(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                  cudaStream_t stream);

/* Synchronize after every launch when set (GPUSCAN_DEBUG_SYNC=1): errors then surface at the
 * launch that caused them. */
extern int gs_cuda_debug_sync;
#endif

#ifdef __cplusplus
}
#endif

#endif /* GS_API_H */
