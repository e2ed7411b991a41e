/*
 * gpuscan/backend.h - what the host layer asks of a backend: arrays as views, the failure
 * record, and the table of a backend's entries.
 * Level: include, host only (C; never compiled for the device).  The tables are
 * csrc/cpu/backend.c's and csrc/cuda/backend.c's (a build without CUDA links
 * csrc/cuda/stubs.c's); csrc/core/ picks one per call.  Nothing here knows Python.
 */
#ifndef GS_BACKEND_H
#define GS_BACKEND_H

#include "gpuscan/desc.h"
#include "gpuscan/user_params.h"

/* Where an array's memory is. */
typedef enum gs_mem { GS_MEM_HOST, GS_MEM_DEVICE } gs_mem;

/* An array: element 0 at `ptr`, byte strides (any sign, 0 for broadcast), in host or device
 * memory; `swapped`: host values in non-native byte order (NumPy's '>' on this machine). */
typedef struct gs_view {
    char *ptr;
    gs_dtype dtype;
    gs_mem mem;
    int swapped;
    int ndim;
    int64_t shape[GS_MAX_NDIM];
    int64_t strides[GS_MAX_NDIM];
} gs_view;

/* The first failure of a call, recorded where it happens (often without the GIL) and raised as
 * a Python exception once the GIL is held again (csrc/core/raise.c gs_raise: the one converter).
 *   kind 'c': code is a cudaError_t (GpuscanError naming `call`, or MemoryError with `bytes`);
 *   kind 'e': code is an errno value (ENOMEM: MemoryError; others: RuntimeError);
 *   kind 'p': a Python exception is already set. */
typedef struct gs_fail {
    char kind; /* 0 while nothing failed */
    int code;
    const char *call; /* the failed call or expression; its function name is reported */
    size_t bytes;     /* bytes requested, for allocation failures */
} gs_fail;

/* Record a failure; the first one wins.  Returns -1. */
static inline int gs_fail_set(gs_fail *f, char kind, int code, const char *call, size_t bytes)
{
    if (f->kind == 0) {
        f->kind = kind;
        f->code = code;
        f->call = call;
        f->bytes = bytes;
    }
    return -1;
}

/* ---- Operators you write (gpuscan.Operator) --------------------------------------------- */

/* An operator as the binding describes it to a backend, which compiles it (its own way, cached
 * in the process and on disk: csrc/host/jitcache.h) into the kernels that run it.  `type_decl`
 * is C that declares the value type T (a typedef of a scalar, or a struct with the dtype's
 * fields in order, followed by _Static_asserts of its size and offsets against NumPy's aligned
 * layout); `combine` is the user's source over T x (earlier) and T y (later): one expression
 * (expression != 0) or statements ending in a return; `name` names it in the compiler's log
 * (#line), so that the user's line numbers are its own.  `key_extra` enters the cache key
 * beside the source and the compiler (gpuscan's version).  `family` names the kernels the call
 * needs (gpuscan/user_params.h's GS_USER_SCAN, GS_USER_SCAN_SEG, GS_USER_FOLD): a backend may
 * compile those alone (CUDA does; the CPU compiles every kernel at once).  `lib_dirs`: folders
 * (':' separated, "" for none) where the binding found a compiler's libraries beside the system's
 * (the nvidia-cuda-nvrtc wheel's, for CUDA). */
#define GS_USER_MAX_SIZE 256 /* bytes of T at most: a 4x4 matrix of doubles, a carry on the stack */
typedef struct gs_user_spec {
    const char *type_decl;
    const char *combine;
    int expression;
    const char *name;
    size_t size; /* sizeof(T): NumPy's itemsize of the aligned dtype */
    const char *key_extra;
    int family;
    const char *lib_dirs;
} gs_user_spec;

/* A compiled operator: the backend's, opaque, loaded once per process and never unloaded (the
 * binding keeps the pointer on its Operator). */
typedef struct gs_user_prog gs_user_prog;

/* What a backend's user_load says besides its result: `error` (malloc'd; the caller frees it)
 * with error_kind 'c' (the operator did not compile: the compiler's log) or 'm' (no compiler:
 * what to install); `warning` (malloc'd) for something the caller should show (a cache folder
 * refused). */
typedef struct gs_user_msg {
    char *error;
    char error_kind;
    char *warning;
} gs_user_msg;

/* Work for an operator you write, over contiguous values of its T in the backend's memory, as
 * every entry's (`size` bytes each, aligned for T; ops/userop.c moves NumPy's there and back).
 * scan: n values as rows of row_len (0: one row), each scanned alone, in place when
 * out == in; flags (1 byte each, nonzero: a segment head; NULL: none; not with row_len) restart
 * it.  reduce: `rows` rows of row_len values (0 allowed: the start alone) into `rows` values,
 * each the start (initial, else the first value) combined with the row's values left to right.
 * segreduce: out[s] = in[starts[s]] combine ... in[ends[s] - 1] for each of nseg segments of
 * each of `rows` rows of n values (0 <= starts < ends <= n, settled by the caller), out rows x
 * nseg.  identity: one T.  Results depend on the shapes alone (never on the threads). */
typedef struct gs_user_desc {
    const gs_user_prog *prog;
    const void *in;
    void *out;
    const unsigned char *flags;
    const int64_t *starts, *ends;
    int64_t n, row_len, rows, nseg;
    int exclusive;
    const void *identity;
    const void *initial; /* reduce: NULL for none */
} gs_user_desc;

/* One table per backend (see the file's header). Every entry works on flat, C-contiguous
 * buffers in the backend's memory (`mem`) described by the descriptors above, is called WITHOUT
 * the GIL, and returns 0, or -1 with the failure in *f. Work may be left enqueued (CUDA): a
 * later move to the host waits for it. */
typedef struct gs_backend_ops {
    const char *name; /* "cpu" or "cuda" */
    gs_mem mem;       /* where its buffers live */
    int inner_axes;   /* takes scan and reduce descriptors with inner > 1 */
    int (*scan)(const gs_scan_desc *d, gs_fail *f);
    int (*reduce)(const gs_reduce_desc *d, gs_fail *f);
    /* A split in two phases.  count: reads the flags (d->out unused) and, when `total` is not
     * NULL, stores the flagged count there (waiting for it); *state keeps what the count left
     * for the scatter.  scatter: writes d->out, then stores the count in *total when not NULL.
     * split_end releases *state on every path (NULL is fine). */
    int (*split_count)(const gs_split_desc *d, void **state, int64_t *total, gs_fail *f);
    int (*split_scatter)(const gs_split_desc *d, void *state, int64_t *total, gs_fail *f);
    void (*split_end)(void *state);
    /* d->edges is host memory (gs_hist_edge_bytes of it); the backend reads it where it needs
     * it.  The other pointers are the backend's. */
    int (*hist)(const gs_hist_desc *d, gs_fail *f);
    /* One parallel step of a teaching algorithm (gpuscan.trace). */
    int (*step)(const gs_step_desc *d, gs_fail *f);
    /* A segmented reduction (reduceat, segmented_reduce). */
    int (*segreduce)(const gs_segreduce_desc *d, gs_fail *f);
    /* The segment heads of d->flags (element 0, and every element whose flag is nonzero) in
     * two phases, as a split's. heads_count: their number into *count (waiting for it), and
     * when it is at most `room` their positions, ascending, into `positions` (the backend's
     * memory; CUDA enqueues them before it waits), *placed set; *state keeps what the positions
     * need. heads: the positions (*count int64), for a count over the room. split_end releases
     * *state on every path. */
    int (*heads_count)(const gs_split_desc *d, void **state, int64_t *positions, int64_t room,
                       int64_t *count, int *placed, gs_fail *f);
    int (*heads)(const gs_split_desc *d, void *state, int64_t *positions, gs_fail *f);
    /* reduceat's indices: the m int64 at idx (the backend's memory) against [0, n), in two
     * phases.  index_check starts the check: the CPU answers at once (a->guard NULL); CUDA
     * enqueues it and leaves a->guard, so that a reduction guarded by it can be enqueued before
     * the host waits.  index_wait waits for the answer (a->first_bad, a->increasing) and
     * releases what the check holds: call it once after every index_check that succeeded, after
     * the launches that read the guard, on every path. */
    int (*index_check)(const int64_t *idx, int64_t m, int64_t n, gs_index_answer *a, gs_fail *f);
    int (*index_wait)(gs_index_answer *a, gs_fail *f);
    /* First-order linear recurrences (linear_recurrence). */
    int (*linrec)(const gs_linrec_desc *d, gs_fail *f);
    /* The values a reduction's where= leaves out replaced by its start. */
    int (*select)(const gs_select_desc *d, gs_fail *f);
    /* A sort or argsort (sort, argsort). */
    int (*sort)(const gs_sort_desc *d, gs_fail *f);
    /* Operators you write (gs_user_spec above); NULL on a backend that cannot run them yet.
     * user_load compiles (or finds in its caches) the operator: 0 with *prog, or -1 with the
     * failure in *f, or -1 with msg->error set (f unused).  It may take long (a compile). */
    int (*user_load)(const gs_user_spec *s, const gs_user_prog **prog, gs_user_msg *msg,
                     gs_fail *f);
    int (*user_scan)(const gs_user_desc *d, gs_fail *f);
    int (*user_reduce)(const gs_user_desc *d, gs_fail *f);
    int (*user_segreduce)(const gs_user_desc *d, gs_fail *f);

    /* Streamed entries (NULL for the CPU, whose memory is the host's): the same work with
     * operands and results in host memory, views of any strides, byte order and dtype (converted
     * as NumPy's unsafe casting does), moved through the backend's memory chunk by chunk, so
     * that arrays larger than it work and the copies overlap the work. The descriptors' pointers
     * are unused; their dtypes are the ones computed in. They return when the host results hold
     * their values; between chunks they ask gs_stop_requested() (host/pool.h) and stop with a
     * failure of kind 'p' when it says so. */
    /* A scan (row_len 0: one over every element in C order; else rows of row_len) of `in` (and
     * `flags`, NULL for none) into `out`, each of the same shape. */
    int (*stream_scan)(const gs_scan_desc *d, const gs_view *in, const gs_view *flags,
                       const gs_view *out, gs_fail *f);
    /* The elements of a chunk of n values of `type` (n itself when they fit one). */
    int64_t (*stream_chunk)(int64_t n, gs_dtype type);
    /* d->rows reductions of d->row_len values, each row no longer than a chunk: `in` has
     * d->rows * d->row_len elements in C order (the rows consecutive), `out` d->rows. */
    int (*stream_reduce)(const gs_reduce_desc *d, const gs_view *in, const gs_view *out,
                         gs_fail *f);
    /* Elements [base, base + n) of `in` (as d->in_type) reduced in chunks of `chunk` by each of
     * the nops operators: parts (host memory) receives, operator after operator, the k =
     * ceil(n / chunk) partials of each (d->out_type values, in chunk order), which the caller
     * combines. */
    int (*stream_partials)(const gs_reduce_desc *d, const gs_op *ops, int nops, const gs_view *in,
                           int64_t base, int64_t n, int64_t chunk, void *parts, gs_fail *f);
    /* A histogram of `in` (as d->in_type) and `weights` (as d->w_type; NULL for none) into
     * `out` (d->nbins accumulators of gs_hist_acc_type). */
    int (*stream_hist)(const gs_hist_desc *d, const gs_view *in, const gs_view *weights,
                       const gs_view *out, gs_fail *f);
    /* A split or compact of `in` by `flags` (both d->n elements in C order): once the flagged
     * count is known, `result` makes the 1-D result of the length it is given (d->n, or the
     * count for a compact) and views it (0; -1 fails the call with kind 'p': the caller's own
     * record of why); *total receives the flagged count. */
    int (*stream_split)(const gs_split_desc *d, const gs_view *in, const gs_view *flags,
                        int (*result)(void *ctx, int64_t len, gs_view *out), void *ctx,
                        int64_t *total, gs_fail *f);
    /* Host memory the streamed entries' copies reach fastest (CUDA: page-locked), for the
     * host results they fill (NULL for none): host_take gives `bytes` of it, or NULL when it
     * has none to give (the result is then ordinary memory); host_give takes it back when the
     * result is freed. */
    void *(*host_take)(size_t bytes);
    void (*host_give)(void *ptr);
    /* The same speed for memory the caller owns (NULL for none): host_hold makes `bytes` at
     * `ptr` such memory in place (CUDA: registers it) and says 1, or says 0 and leaves it as it
     * was (the limit of host_take's memory reached, or refused); host_unhold undoes it, before
     * the memory is freed. */
    int (*host_hold)(void *ptr, size_t bytes);
    void (*host_unhold)(void *ptr);
} gs_backend_ops;

extern const gs_backend_ops gs_cpu_backend;
extern const gs_backend_ops gs_cuda_backend;

#endif /* GS_BACKEND_H */
