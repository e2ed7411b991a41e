/*
 * cuda/stream.c - the primitives streamed through the pipeline (cuda/pipeline.h): the CUDA
 * backend's streamed entries (gpuscan/backend.h), for host operands and results.
 * Level: backend (CUDA), host side; a build with CUDA only.
 *   scan      chunk by chunk, each chunk continuing the one before through a carry kept on the
 *             device in the kernels' wide form (gs_scan_desc.carry_in/out: two of them, used in
 *             turn); a head resets it.  Rows no longer than a chunk travel whole, several per
 *             chunk, without carries; a longer row is scanned as a flat scan of its own.
 *   reduce    whole rows per chunk, each chunk's row results written to the device result; a
 *             row longer than a chunk leaves one partial per chunk, which the caller combines
 *             (ops/stream.c: in chunk order, with the CPU backend's compensated reduction).
 *   hist      every chunk counted into the same device accumulators (the first one zeroes).
 *   split     two passes: the flags' counts per chunk, then each chunk partitioned on the
 *             device and its two groups unpacked at their places in the host result.
 * Float results are deterministic: the chunks are a fixed function of the size and dtypes.
 */
#ifdef GS_HAVE_CUDA

#include "cuda/pipeline.h"

#include <errno.h>
#include <stdlib.h>

#include "gpuscan/config.h"

/* The largest chunk (in elements) a pipeline over arrays of `bytes` bytes per element gets. */
static int64_t capacity(int64_t bytes)
{
    return gs_pipe_chunk(INT64_MAX / 2, bytes, 1);
}

/* ---- scan --------------------------------------------------------------------------------- */

typedef struct scan_ctx {
    gs_scan_desc d; /* types, op, exclusive, row_len */
    int64_t n;      /* elements of the current pipeline */
    int has_flags;
    char *carries; /* 2 x GS_CARRY_BYTES on the device (flat scans) */
} scan_ctx;

static int scan_chunk(void *ctx, int64_t k, int64_t e0, int64_t len, void *const *dev_in,
                      void *const *dev_out, gs_fail *f)
{
    scan_ctx *c = ctx;
    gs_scan_desc d = c->d;
    cudaError_t err;

    d.in = dev_in[0];
    d.flags = c->has_flags ? dev_in[1] : NULL;
    d.out = dev_out[0];
    d.n = len;
    if (d.row_len == 0) { /* chunk k continues chunk k - 1 */
        d.carry_in = k > 0 ? c->carries + ((k - 1) % 2) * GS_CARRY_BYTES : NULL;
        d.carry_out = e0 + len < c->n ? c->carries + (k % 2) * GS_CARRY_BYTES : NULL;
    }
    if ((err = gs_cuda_scan_shared(&d)) != cudaSuccess)
        return gs_fail_set(f, 'c', (int)err, "gs_launch_scan", 0);
    return 0;
}

/* One pipeline of a scan over elements [base, base + n) of the views (rows of row_len, or
 * flat). */
static int scan_pipe(scan_ctx *c, int64_t base, int64_t n, const gs_view *in, const gs_view *flags,
                     const gs_view *out, gs_fail *f)
{
    gs_pipe p;

    memset(&p, 0, sizeof(p));
    p.base = base;
    p.n = c->n = n;
    p.nin = flags != NULL ? 2 : 1;
    p.nout = 1;
    p.in[0].view = in;
    p.in[0].dtype = c->d.in_type;
    if (flags != NULL) {
        p.in[1].view = flags;
        p.in[1].dtype = c->d.flag_type;
    }
    p.out[0].view = out;
    p.out[0].dtype = c->d.out_type;
    p.chunk_align = c->d.row_len > 0 ? c->d.row_len : 1;
    p.run = scan_chunk;
    p.ctx = c;
    c->has_flags = flags != NULL;
    return gs_pipe_run(&p, f);
}

int gs_cuda_stream_scan(const gs_scan_desc *d, const gs_view *in, const gs_view *flags,
                        const gs_view *out, gs_fail *f)
{
    const int64_t n = gs_view_size(in);
    const size_t in_bytes = gs_dtype_size(d->in_type) + (flags ? gs_dtype_size(d->flag_type) : 0);
    const size_t out_bytes = gs_dtype_size(d->out_type);
    scan_ctx c;
    int rc = 0;

    memset(&c, 0, sizeof(c));
    c.d = *d;
    if (gs_cuda_alloc((void **)&c.carries, 2 * GS_CARRY_BYTES, f) < 0)
        return -1;
    if (d->row_len == 0 ||
        d->row_len <= capacity((int64_t)(in_bytes > out_bytes ? in_bytes : out_bytes))) {
        rc = scan_pipe(&c, 0, n, in, flags, out, f);
    } else {
        /* Rows longer than a chunk (never segmented): each a flat scan of its own, continued
         * across its chunks. */
        c.d.row_len = 0;
        for (int64_t r = 0; rc == 0 && r < n / d->row_len; r++)
            rc = scan_pipe(&c, r * d->row_len, d->row_len, in, NULL, out, f);
    }
    gs_cuda_free(c.carries);
    return rc;
}

/* ---- reduce ------------------------------------------------------------------------------- */

typedef struct reduce_ctx {
    gs_reduce_desc d; /* types, op, row_len */
    int whole_rows;   /* chunks of whole rows (else: chunks of one row, one partial each) */
    int nops;         /* partials: one per operator (min and max at once for bincount) */
    gs_op ops[2];
    char *dev_res[2]; /* the rows' results, or each operator's partials */
} reduce_ctx;

static int reduce_chunk(void *ctx, int64_t k, int64_t e0, int64_t len, void *const *dev_in,
                        void *const *dev_out, gs_fail *f)
{
    reduce_ctx *c = ctx;
    const size_t acc = gs_dtype_size(c->d.out_type);
    gs_fail sub = { 0 };

    (void)dev_out;
    for (int i = 0; i < c->nops; i++) {
        gs_reduce_desc d = c->d;
        d.in = dev_in[0];
        d.op = c->ops[i];
        if (c->whole_rows) {
            d.rows = len / d.row_len;
            d.out = c->dev_res[i] + (size_t)(e0 / d.row_len) * acc;
        } else {
            d.rows = 1;
            d.row_len = len;
            d.out = c->dev_res[i] + (size_t)k * acc;
        }
        if (gs_cuda_backend.reduce(&d, &sub) < 0) {
            *f = sub;
            return -1;
        }
    }
    return 0;
}

/* The reduction of elements [base, base + n) of `in` as c describes it, in chunks of `chunk`
 * (0: the pipeline's own), its results left on the device. */
static int reduce_pipe(reduce_ctx *c, int64_t base, int64_t n, int64_t chunk, const gs_view *in,
                       gs_fail *f)
{
    gs_pipe p;

    memset(&p, 0, sizeof(p));
    p.base = base;
    p.n = n;
    p.chunk = chunk;
    p.nin = 1;
    p.in[0].view = in;
    p.in[0].dtype = c->d.in_type;
    p.chunk_align = c->whole_rows ? c->d.row_len : 1;
    p.run = reduce_chunk;
    p.ctx = c;
    return gs_pipe_run(&p, f);
}

int64_t gs_cuda_stream_chunk(int64_t n, gs_dtype type)
{
    return gs_pipe_chunk(n, (int64_t)gs_dtype_size(type), 1);
}

int gs_cuda_stream_partials(const gs_reduce_desc *d, const gs_op *ops, int nops, const gs_view *in,
                            int64_t base, int64_t n, int64_t chunk, void *parts, gs_fail *f)
{
    const size_t bytes = (size_t)((n + chunk - 1) / chunk) * gs_dtype_size(d->out_type);
    reduce_ctx c;

    memset(&c, 0, sizeof(c));
    c.d = *d;
    c.d.plus_zero = 0; /* partials: the host's combination of them starts where d says */
    c.nops = nops;
    for (int i = 0; i < nops; i++) {
        c.ops[i] = ops[i];
        if (gs_cuda_alloc((void **)&c.dev_res[i], bytes, f) < 0)
            goto done;
    }
    if (reduce_pipe(&c, base, n, chunk, in, f) < 0)
        goto done;
    for (int i = 0; i < nops; i++)
        GS_CUDA_TRY(
            f, cudaMemcpy((char *)parts + i * bytes, c.dev_res[i], bytes, cudaMemcpyDeviceToHost));
done:
    for (int i = 0; i < nops; i++)
        gs_cuda_free(c.dev_res[i]);
    return f->kind ? -1 : 0;
}

int gs_cuda_stream_reduce(const gs_reduce_desc *d, const gs_view *in, const gs_view *out,
                          gs_fail *f)
{
    gs_view res;
    reduce_ctx c;

    /* Whole rows per chunk: the rows' results straight into a device result. */
    memset(&c, 0, sizeof(c));
    c.d = *d;
    c.nops = 1;
    c.ops[0] = d->op;
    c.whole_rows = 1;
    if (gs_cuda_alloc((void **)&c.dev_res[0], (size_t)d->rows * gs_dtype_size(d->out_type), f) < 0)
        return -1;
    gs_view_contiguous(&res, out, c.dev_res[0], GS_MEM_DEVICE, d->out_type);
    if (reduce_pipe(&c, 0, d->rows * d->row_len, 0, in, f) == 0)
        (void)gs_xfer_copy(&res, out, f);
    gs_cuda_free(c.dev_res[0]);
    return f->kind ? -1 : 0;
}

/* ---- hist --------------------------------------------------------------------------------- */

typedef struct hist_ctx {
    gs_hist_desc d; /* mode, bins, edges (host), types */
    int has_weights;
} hist_ctx;

static int hist_chunk(void *ctx, int64_t k, int64_t e0, int64_t len, void *const *dev_in,
                      void *const *dev_out, gs_fail *f)
{
    hist_ctx *c = ctx;
    gs_hist_desc d = c->d;

    (void)e0, (void)dev_out;
    d.in = dev_in[0];
    d.weights = c->has_weights ? dev_in[1] : NULL;
    d.n = len;
    d.accumulate = k > 0;
    return gs_cuda_backend.hist(&d, f);
}

int gs_cuda_stream_hist(const gs_hist_desc *d, const gs_view *in, const gs_view *weights,
                        const gs_view *out, gs_fail *f)
{
    hist_ctx c;
    gs_pipe p;
    gs_view acc;
    const gs_dtype at = gs_hist_acc_type(d);

    memset(&c, 0, sizeof(c));
    c.d = *d;
    c.has_weights = weights != NULL;
    if (gs_cuda_alloc((void **)&c.d.out, (size_t)d->nbins * gs_dtype_size(at), f) < 0)
        return -1;
    memset(&p, 0, sizeof(p));
    p.n = gs_view_size(in);
    p.nin = weights != NULL ? 2 : 1;
    p.in[0].view = in;
    p.in[0].dtype = d->in_type;
    if (weights != NULL) {
        p.in[1].view = weights;
        p.in[1].dtype = d->w_type;
    }
    p.chunk_align = 1;
    p.run = hist_chunk;
    p.ctx = &c;
    gs_view_contiguous(&acc, out, c.d.out, GS_MEM_DEVICE, at);
    /* No chunk: the accumulators are zero. */
    if ((p.n == 0 ? hist_chunk(&c, 0, 0, 0, (void *[]){ NULL, NULL }, NULL, f)
                  : gs_pipe_run(&p, f)) == 0)
        (void)gs_xfer_copy(&acc, out, f);
    gs_cuda_free(c.d.out);
    return f->kind ? -1 : 0;
}

/* ---- split -------------------------------------------------------------------------------- */

typedef struct split_ctx {
    gs_split_desc d; /* types, compact */
    char *scratch;   /* the count pass's scratch for one chunk, reused */
    size_t scratch_bytes;
    unsigned long long *dev_counts; /* pass 1: each chunk's flagged count */
    int64_t *before; /* pass 2: flagged values before each chunk (host), then the total */
    int64_t chunk, nchunks, total;
    gs_view out; /* the result */
} split_ctx;

/* The count pass of one chunk; with `keep`, its flagged count into dev_counts[k] (written by
 * the pass's last block, as a compact's reply is). */
static int split_count_chunk(split_ctx *c, int64_t k, int64_t len, const void *in,
                             const void *flags, int keep, gs_fail *f)
{
    gs_split_desc d = c->d;

    d.in = in;
    d.flags = flags;
    d.n = len;
    GS_CUDA_TRY(f, gs_launch_split_count(&d, c->scratch, c->scratch_bytes,
                                         keep ? c->dev_counts + k : NULL, gs_cuda_stream));
done:
    return f->kind ? -1 : 0;
}

static int split_pass1(void *ctx, int64_t k, int64_t e0, int64_t len, void *const *dev_in,
                       void *const *dev_out, gs_fail *f)
{
    (void)e0, (void)dev_out;
    return split_count_chunk(ctx, k, len, NULL, dev_in[0], 1, f);
}

static int split_pass2(void *ctx, int64_t k, int64_t e0, int64_t len, void *const *dev_in,
                       void *const *dev_out, gs_fail *f)
{
    split_ctx *c = ctx;
    gs_split_desc d = c->d;

    (void)e0;
    if (split_count_chunk(c, k, len, dev_in[0], dev_in[1], 0, f) < 0)
        return -1;
    d.in = dev_in[0];
    d.flags = dev_in[1];
    d.out = dev_out[0];
    d.n = len;
    GS_CUDA_TRY(f, gs_launch_split_scatter(&d, c->scratch, c->scratch_bytes, NULL, gs_cuda_stream));
done:
    return f->kind ? -1 : 0;
}

/* Where chunk k's partition (its flagged values, then the others) goes in the result: the
 * flagged ones after those of the chunks before, the others after every flagged one and the
 * others of the chunks before (a compact keeps the flagged ones alone). */
static int split_pieces(void *ctx, int64_t k, int64_t e0, int64_t len, gs_pipe_piece *pc)
{
    const split_ctx *c = ctx;
    const int64_t flagged = c->before[k + 1] - c->before[k];
    int n = 0;

    if (flagged > 0) {
        pc[n].from = 0;
        pc[n].to = c->before[k];
        pc[n++].count = flagged;
    }
    if (!c->d.compact && len > flagged) {
        pc[n].from = flagged;
        pc[n].to = c->total + (e0 - c->before[k]);
        pc[n++].count = len - flagged;
    }
    return n;
}

/* A pass over the c->d.n elements in chunks of c->chunk: the first reads the flags, the second
 * the values and flags and sends each chunk's partition to its two places. */
static int split_pipe(split_ctx *c, const gs_view *in, const gs_view *flags, int second, gs_fail *f)
{
    gs_pipe p;

    memset(&p, 0, sizeof(p));
    p.n = c->d.n;
    p.chunk = c->chunk;
    p.ctx = c;
    if (!second) {
        p.nin = 1;
        p.in[0].view = flags;
        p.in[0].dtype = c->d.flag_type;
        p.run = split_pass1;
        return gs_pipe_run(&p, f);
    }
    p.nin = 2;
    p.in[0].view = in;
    p.in[0].dtype = c->d.in_type;
    p.in[1].view = flags;
    p.in[1].dtype = c->d.flag_type;
    p.nout = 1;
    p.out[0].view = &c->out;
    p.out[0].dtype = c->d.in_type;
    p.run = split_pass2;
    p.pieces = split_pieces;
    return gs_pipe_run(&p, f);
}

int gs_cuda_stream_split(const gs_split_desc *d, const gs_view *in, const gs_view *flags,
                         int (*result)(void *ctx, int64_t len, gs_view *out), void *ctx,
                         int64_t *total, gs_fail *f)
{
    /* Both passes chunk the same way: by the bytes of a value and its flag, the larger pass. */
    const int64_t chunk =
        gs_pipe_chunk(d->n, (int64_t)(gs_dtype_size(d->in_type) + gs_dtype_size(d->flag_type)), 1);
    split_ctx c;
    gs_split_scratch *scratch = NULL;
    unsigned long long *counts = NULL;

    memset(&c, 0, sizeof(c));
    c.d = *d;
    c.chunk = chunk;
    c.nchunks = chunk > 0 ? (d->n + chunk - 1) / chunk : 0;
    if (gs_split_scratch_take(gs_split_scratch_bytes(chunk), &scratch, f) < 0 ||
        gs_cuda_alloc((void **)&c.dev_counts, (size_t)c.nchunks * 8, f) < 0)
        goto done;
    if (scratch != NULL) {
        c.scratch = scratch->dev;
        c.scratch_bytes = scratch->cap;
    }
    counts = malloc((size_t)c.nchunks * 8 + 1);
    c.before = malloc(((size_t)c.nchunks + 1) * sizeof(int64_t));
    if (counts == NULL || c.before == NULL) {
        gs_fail_set(f, 'e', ENOMEM, "malloc", (size_t)c.nchunks * 16 + 9);
        goto done;
    }
    /* Pass 1: each chunk's flagged count, so every value's place is known before pass 2. */
    if (split_pipe(&c, in, flags, 0, f) < 0)
        goto done;
    if (c.nchunks > 0)
        GS_CUDA_TRY(
            f, cudaMemcpy(counts, c.dev_counts, (size_t)c.nchunks * 8, cudaMemcpyDeviceToHost));
    c.before[0] = 0;
    for (int64_t k = 0; k < c.nchunks; k++)
        c.before[k + 1] = c.before[k] + (int64_t)counts[k];
    c.total = *total = c.before[c.nchunks];
    /* Pass 2: the result, then each chunk partitioned and delivered. */
    if (result(ctx, d->compact ? c.total : d->n, &c.out) < 0) {
        gs_fail_set(f, 'p', 0, "the split's result", 0);
        goto done;
    }
    (void)split_pipe(&c, in, flags, 1, f);
done:
    free(counts);
    free(c.before);
    gs_split_scratch_give(scratch);
    gs_cuda_free(c.dev_counts);
    return f->kind ? -1 : 0;
}

#endif /* GS_HAVE_CUDA */
