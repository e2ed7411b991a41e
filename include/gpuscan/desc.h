/*
 * gpuscan/desc.h - the descriptors of one call of each primitive: what a backend is asked to do.
 * Level: include (plain C, read by both compilers: the CUDA kernels, the CPU backend and the
 * host layers).  A backend sees only flat, C-contiguous buffers of known dtypes described by the
 * structs below; everything about Python objects, strides, byte order, `out=` and result dtypes
 * is settled before the call.  The host-only table that takes them is gpuscan/backend.h; the
 * CUDA launchers that run them are gpuscan/launch.h.
 */
#ifndef GS_DESC_H
#define GS_DESC_H

#include "gpuscan/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most dimensions a strided device copy handles (NumPy 2's NPY_MAXDIMS). */
#define GS_MAX_NDIM 64

/* Which scan algorithm a call runs: the production single-pass scan, or one of the teaching
 * variants (kernels/dispatch/teach.cu, csrc/cpu/teach.c). */
typedef enum gs_algorithm { GS_ALGO_AUTO, GS_ALGO_HILLIS_STEELE, GS_ALGO_BLELLOCH } gs_algorithm;

/* One scan call.  `in` and `out` hold n contiguous elements; `out` may equal `in` (in place)
 * when in_type == out_type.  The pair (in_type, out_type, op) satisfies gs_scan_pair_direct().
 *   row_len > 0: the n elements are n / row_len consecutive rows, each scanned independently
 *                (a row start is a segment head); row_len == 0: one scan over all n.
 *   inner > 1:   (with row_len > 0; a backend whose table sets inner_axes) the n elements are
 *                n / (row_len * inner) blocks, each row_len x inner in C order, and each of a
 *                block's inner columns is scanned down its row_len values (the scanned axis is
 *                not the last one, and is read in place, with no transposed copy); out has the
 *                same layout.  0 or 1: the layout above (a zeroed descriptor keeps it).
 *   flags != NULL: segmented scan, flags[i] != 0 (in flag_type) marks a segment head;
 *                  element 0 always starts a segment.  Not combined with row_len.  The
 *                  single-pass CUDA kernels read 1-byte flags only (bool, int8, uint8: a
 *                  compile-time width, so the flag test costs one byte and no branch); the
 *                  ops layer hands every backend wider flags as bool (nonzero, NaN too).
 *   exclusive: out[i] combines the elements before i in its segment (the identity at a head).
 *   algorithm: GS_ALGO_AUTO, or a teaching variant (Hillis-Steele: not with flags).
 *   epoch (GS_ALGO_AUTO, CUDA): in [1, GS_EPOCH_LIMIT); the scratch was zeroed once and every
 *                  scan over it since had a distinct epoch, so it needs no zeroing
 *                  (csrc/cuda/scan_scratch.c keeps the epochs).
 *   carry_in, carry_out (GS_ALGO_AUTO, row_len == 0; NULL for none): GS_CARRY_BYTES each, in
 *                  the backend's memory.  The scan runs as the continuation of an earlier one:
 *                  carry_in holds the running value before element 0 (element 0 is then no
 *                  head unless its flag says so), and the scan leaves its own running value
 *                  in carry_out (the value since its last head, for a segmented scan). The
 *                  bytes are the backend's wide form of the value (a float add keeps its
 *                  rounding error beside it), written only by a carry_out of a scan with the
 *                  same (op, in_type, out_type); a chunked scan ping-pongs two of them.
 *   unpadded (GS_ALGO_BLELLOCH, CUDA): the tiles' shared memory without its bank-conflict
 *                  padding (the same results; the tests run both layouts).  0: padded. */
#define GS_CARRY_BYTES 16         /* a double-word carry of two 8-byte values */
#define GS_EPOCH_LIMIT (1u << 29) /* epochs fit the status word's tag bits (tile_state.cuh) */
typedef struct gs_scan_desc {
    const void *in;
    void *out;
    const void *flags;
    int64_t n;
    int64_t row_len;
    int64_t inner;
    gs_dtype in_type;
    gs_dtype out_type;
    gs_dtype flag_type;
    gs_op op;
    int exclusive;
    gs_algorithm algorithm;
    unsigned epoch;
    const void *carry_in;
    void *carry_out;
    int unpadded;
} gs_scan_desc;

/* One reduction: `rows` independent reductions of `row_len` contiguous values each (the
 * reduced axes are last and contiguous; axis=None is rows = 1).  out receives `rows` values of
 * out_type; (in_type, out_type, op) satisfies gs_scan_pair_direct() (the same widening rules as
 * accumulate).  row_len >= 1: empty reductions are settled by the host (identity or
 * ValueError) and never reach a backend.  Float results are deterministic (a fixed grouping
 * that depends on rows, row_len and inner only, never on the device or the thread count) and
 * float add stays within (log2(row_len)+2)*eps*sum|x|; float min/max return the first NaN.
 *   inner > 1: (a backend whose table sets inner_axes) the input is rows x row_len x inner in
 *              C order, reduced over the middle: out receives rows x inner values, out[r][c]
 *              the reduction of in[r][0..row_len)[c] (the reduced axes are a block of axes
 *              followed by kept ones, read in place with no transposed copy).  0 or 1: the
 *              layout above (a zeroed descriptor keeps it).
 *   plus_zero: float add starts from +0.0, as NumPy's reduce does: a sum that is an exact zero
 *              is +0.0.  0 (a zeroed descriptor): from the row's first value, so that a sum of
 *              -0.0 values alone is -0.0 and any other exact zero +0.0 (reduceat's rule, and
 *              reduce's with initial=, which the host combines afterwards).  Applied where the
 *              row's result is written: no other bit of any result depends on it. */
typedef struct gs_reduce_desc {
    const void *in;
    void *out;
    int64_t rows;
    int64_t row_len;
    int64_t inner;
    gs_dtype in_type;
    gs_dtype out_type;
    gs_op op;
    int plus_zero;
} gs_reduce_desc;

/* One segmented reduction over n contiguous values `in`: out[s] = in[starts[s]] op ... op
 * in[ends[s] - 1] for each of the nseg segments (out_type values), with (in_type, out_type,
 * op) as gs_reduce_desc has them.  starts and ends (int64, in the backend's memory) hold
 * 0 <= starts[s] < ends[s] <= n; the host settles that (and the empty cases) first.
 *   ends != NULL: any segments, in any order, overlapping or not (reduceat's general case);
 *   ends == NULL: starts strictly increase, and segment s ends where s + 1 starts, the last one
 *                 at n (a sorted partition of [starts[0], n): segmented_reduce, and reduceat
 *                 with increasing indices).  Values before starts[0] are in no segment.
 * Float results are deterministic (a grouping fixed by the segments alone, never by the
 * device or the thread count); float add stays within (log2(len)+2)*eps*sum|x| per segment of
 * len values and starts from the segment's first value (a segment of -0.0 values alone sums to
 * -0.0, as NumPy's reduceat), float min/max give the segment's first NaN.
 *   guard: NULL, or (a sorted partition, CUDA) the device words of an index check that has not
 *          answered yet (gs_index_answer.guard): the reduction is enqueued behind the check and
 *          does nothing, writing neither `out` nor anything else, when the words report an index
 *          outside [0, n) or indices that do not strictly increase.  Level 0 is launched as
 *          the check's programmatic dependent, so it is enqueued right after the check with no
 *          kernel between them: it reads `in` and the starts (within [0, nseg)) while the check
 *          may still run, and uses none of them when the guard is set.
 *   many_tiles, per_warp (CUDA; 0: the launcher's defaults): a level of a sorted partition's
 *          reduction with at least many_tiles tiles gives each warp per_warp tiles as one range
 *          (the tests set many_tiles to reach that path at small sizes); many_tiles 0 chooses
 *          from the device's resident warps, at most per_warp tiles a warp. */
typedef struct gs_segreduce_desc {
    const void *in;
    void *out;
    const int64_t *starts;
    const int64_t *ends;
    int64_t n;
    int64_t nseg;
    gs_dtype in_type;
    gs_dtype out_type;
    gs_op op;
    const void *guard;
    int64_t many_tiles;
    int per_warp;
} gs_segreduce_desc;

/* What reduceat's index check answers (the backend's index_check and index_wait). */
typedef struct gs_index_answer {
    int64_t first_bad; /* the first i whose index lies outside [0, n), or -1 */
    int increasing;    /* whether the indices strictly increase */
    /* Until index_wait: where the answer is still on its way (CUDA), the device words that a
     * segreduce descriptor's guard reads; NULL when first_bad and increasing hold already. */
    const void *guard;
    void *state; /* the backend's, until index_wait */
} gs_index_answer;

/* One first-order linear recurrence per row: the n values of `a` and `b` (`type`: GS_FLOAT32
 * or GS_FLOAT64) are n / row_len rows of row_len values (row_len >= 1 divides n), and
 *   h[t] = a[t] * h[t-1] + b[t] along each row, h[-1] = h0[row] (h0: n / row_len values of
 *   `type`, or NULL for 0);
 *   reverse: from the row's end instead, h[t] = a[t] * h[t+1] + b[t], h[row_len] = h0[row].
 * `h` (n values of `type`) may be `a` or `b` themselves (in place), and overlaps neither
 * otherwise.  Deterministic (a grouping fixed by n and row_len), and within
 * 4 (log2(row_len) + 2) eps m[t] of the exact h[t], m being the same recurrence on |a|, |b|
 * and |h0|. */
typedef struct gs_linrec_desc {
    const void *a;
    const void *b;
    const void *h0;
    void *h;
    int64_t n;
    int64_t row_len;
    gs_dtype type;
    int reverse;
} gs_linrec_desc;

/* The largest value a selection moves, in bytes: an Operator's T (GS_USER_MAX_SIZE). */
#define GS_SELECT_MAX_SIZE 256

/* A selection, where= of a reduction: out[i] = mask[i] != 0 ? in[i] : fill, for n contiguous
 * values of `size` bytes each (a dtype's, or an Operator's T: any size up to
 * GS_SELECT_MAX_SIZE; mask: n bytes; fill: one value's bytes, held in words so that it is
 * aligned for any of them).  out may be in. */
typedef struct gs_select_desc {
    const void *in;
    const unsigned char *mask;
    void *out;
    int64_t n;
    int64_t size;
    uint64_t fill[GS_SELECT_MAX_SIZE / 8];
} gs_select_desc;

/* A strided element-wise copy with a dtype conversion (C casts, as NumPy's unsafe astype):
 * dst[idx] = (dst_type) src[idx] for every index of `shape`.  Strides are in bytes and may be
 * negative or zero (broadcast source). */
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
 * One sort or argsort: `rows` rows of `row_len` contiguous keys of `type` (bool, an integer,
 * float32 or float64) at `keys`, each row sorted on its own, stable, in NumPy's order: ascending
 * (descending: largest first), equal keys in input order, -0.0 and +0.0 equal, NaNs (of either
 * sign) last in input order in both directions.
 *   keys_out:  rows * row_len keys, each row's keys in sorted order, moved bit for bit (NULL:
 *              none, an argsort alone);
 *   index_out: rows * row_len int64, for each sorted place the position in its row of the key
 *              that lands there (NULL: none, a sort alone).
 * Neither output overlaps `keys` or the other.  row_len >= 1, rows >= 1.
 */
typedef struct gs_sort_desc {
    const void *keys;
    void *keys_out;
    int64_t *index_out;
    int64_t rows;
    int64_t row_len;
    gs_dtype type;
    int descending;
} gs_sort_desc;

/* One split (stable partition) or compact: the n values of `in` (moved as bits of in_type's
 * width: any dtype, NaN payloads kept) whose flag is nonzero (flags[i] in flag_type: for floats
 * -0.0 is zero and NaN nonzero) go first, in order, then (split only) the others, in order.
 * `out` holds n values (split) or the flagged count (compact) and never overlaps `in` or
 * `flags`. */
typedef struct gs_split_desc {
    const void *in;
    const void *flags;
    void *out;
    int64_t n;
    gs_dtype in_type;
    gs_dtype flag_type;
    int compact;
} gs_split_desc;

/* One parallel step of a teaching algorithm over a working array (kernels/dispatch/teach.cu runs it
 * as one kernel launch, csrc/cpu/teach.c as one parallel loop).  The array is `rows` rows of `m`
 * values of `type`, row r at buf + r*m; each step below acts on every row. GS_STEP_HS
 * Hillis-Steele: buf[i] = src[i - s] op src[i] where i's place in its row is
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
 * happen. */
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

/* How a histogram finds the bin of a value (see gpuscan/hist_bin.h). */
typedef enum gs_hist_mode {
    GS_HIST_UNIFORM, /* equal-width bins: arithmetic, then a check against `edges` near an edge */
    GS_HIST_SEARCH,  /* any increasing edges: binary search */
    GS_HIST_INDEX,   /* bincount: the (integer) value is its bin */
    GS_HIST_TABLE    /* 1-byte input: edges holds the bin (or -1) of each of the 256 values */
} gs_hist_mode;

/* Where a CUDA histogram accumulates: auto picks; global: one device-memory atomic per value;
 * shared: per-block histograms in shared memory, merged at the end.  The CPU backend takes all
 * three and does the same (per-thread histograms, merged). */
typedef enum gs_hist_method { GS_HIST_AUTO, GS_HIST_GLOBAL, GS_HIST_SHARED } gs_hist_method;

/* A value of the input's kind, widened: `i` for signed integers, `u` for bool and unsigned
 * integers, `f` for floats (every value of those types is exact in the wide one). */
typedef struct gs_hist_bound {
    int64_t i;
    uint64_t u;
    double f;
} gs_hist_bound;

/* One histogram (or bincount) of n contiguous values `in` into `nbins` accumulators `out`,
 * zeroed by the backend first (unless `accumulate`): int64 counts, or with `weights` (n values of
 * w_type) their sums, in double for float weights and in int64 (wrapping) for bool and integer
 * weights. UNIFORM: a value x is kept when lo <= x <= hi (compared in its own type: NaN never is);
 *            its bin is that of xe = (edge_type) x among `edges` (nbins + 1 values of
 *            edge_type, GS_FLOAT32 or GS_FLOAT64): the i with edges[i] <= xe < edges[i + 1],
 *            the last bin closed.  p = (xe - edges[0]) * scale, computed in edge_type, gives it
 *            as floor(p) directly when frac(p) lies in (fast_lo, fast_hi) (the host settles
 *            these so that this never differs from the edge comparisons); first = edges[0].
 *   SEARCH:  edges (nbins + 1 values of edge_type: GS_INT64, GS_UINT64, GS_FLOAT32 or
 *            GS_FLOAT64, the type both are compared in) increasing; x is kept when
 *            edges[0] <= x <= edges[nbins], its bin the largest i < nbins with edges[i] <= x.
 *   INDEX:   integer input; x is kept when 0 <= x < nbins, and x is its bin.
 *   TABLE:   1-byte input; edges holds 256 int32: the bin of each byte value (its bits), -1
 *            for one that is dropped (the host fills it with UNIFORM's or SEARCH's rule). */
typedef struct gs_hist_desc {
    const void *in;
    int64_t n;
    gs_dtype in_type;
    const void *weights;
    gs_dtype w_type;
    void *out;
    int64_t nbins;
    gs_hist_mode mode;
    gs_dtype edge_type;
    const void *edges;
    gs_hist_bound lo, hi;
    double first, scale, fast_lo, fast_hi;
    /* UNIFORM with float32 edges: first (edges[0]), scale, fast_lo, fast_hi and, for float32
     * input, lo.f and hi.f as float (all exact), so that nothing is converted per value. */
    float first_f, scale_f, fast_lo_f, fast_hi_f, lo_f, hi_f;
    gs_hist_method method;
    int accumulate; /* add to `out` as it is, not zeroed: a streamed chunk after the first
                     * (streamed entries only, so never on the CPU backend) */
    int probe;      /* INDEX without weights, not streamed: `out` holds nbins + 1 accumulators,
                     * and the last one, zeroed with the others, receives the largest key of all
                     * n values (gs_hist_index_key), kept or not: bincount's one pass, which
                     * counts into a guessed number of bins and learns whether it was enough */
} gs_hist_desc;

/* The accumulator dtype of a histogram: int64 counts, double sums of float weights, int64
 * sums of bool and integer weights. */
static inline GS_HD gs_dtype gs_hist_acc_type(const gs_hist_desc *d)
{
    return d->weights != NULL && gs_dtype_is_float(d->w_type) ? GS_FLOAT64 : GS_INT64;
}

/* Bytes of a histogram's `edges`: nbins + 1 values of edge_type, the 256-entry int32 table, or
 * none for bincount. */
static inline GS_HD size_t gs_hist_edge_bytes(const gs_hist_desc *d)
{
    if (d->mode == GS_HIST_INDEX)
        return 0;
    if (d->mode == GS_HIST_TABLE)
        return 256 * sizeof(int32_t);
    return (size_t)(d->nbins + 1) * gs_dtype_size(d->edge_type);
}

#ifdef __cplusplus
}
#endif

#endif /* GS_DESC_H */
