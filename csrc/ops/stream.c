/*
 * ops/stream.c - host operands streamed through a backend's own memory (its streamed entries,
 * gpuscan/backend.h): each entry run without the GIL, and what the backend leaves to the host.
 * Level: ops.  The entries honour Ctrl-C between chunks through host/pool.h's stop check
 * (core's gs_interrupt_check, installed at import).  Left to the host here:
 *   - a reduction's rows longer than a chunk: the backend leaves one partial per chunk, combined
 *     in chunk order by the CPU backend's (compensated) reduction, so the result depends on the
 *     chunking alone, never on timing;
 *   - a split's result, made once the backend knows its length (the GIL taken for it).
 */
#include "ops/ops.h"

#include <errno.h>
#include <stdlib.h>

#include "host/pack.h"

int gs_stream_scan(const gs_backend_ops *be, const gs_scan_desc *d, const gs_view *in,
                   const gs_view *flags, const gs_view *out)
{
    gs_fail f = { 0 };
    int rc;

    GS_BEGIN_UNLOCKED
        rc = be->stream_scan(d, in, flags, out, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : 0;
}

/* ---- reductions --------------------------------------------------------------------------- */

/* Each of the nops operators' reduction of elements [base, base + n) of `in` into res (nops
 * values of d->out_type): the backend's partials, combined on the host.  No GIL. */
static int long_row(const gs_backend_ops *be, const gs_reduce_desc *d, const gs_op *ops, int nops,
                    const gs_view *in, int64_t base, int64_t n, char *res, gs_fail *f)
{
    const int64_t chunk = be->stream_chunk(n, d->in_type), k = (n + chunk - 1) / chunk;
    const size_t acc = gs_dtype_size(d->out_type);
    char *parts = malloc((size_t)(k * nops) * acc);
    int rc = -1;

    if (parts == NULL) {
        gs_fail_set(f, 'e', ENOMEM, "malloc", (size_t)(k * nops) * acc);
        goto done;
    }
    if (be->stream_partials(d, ops, nops, in, base, n, chunk, parts, f) < 0)
        goto done;
    for (int i = 0; i < nops; i++) {
        gs_reduce_desc c = *d;
        c.in = parts + (size_t)(i * k) * acc;
        c.out = res + (size_t)i * acc;
        c.in_type = d->out_type;
        c.rows = 1;
        c.row_len = k;
        c.inner = 0;
        c.op = ops[i];
        if (gs_cpu_backend.reduce(&c, f) < 0)
            goto done;
    }
    rc = 0;
done:
    free(parts);
    return rc;
}

/* d->rows reductions of `in` into `out`: whole rows per chunk, or row by row from partials. */
static int reduce_rows(const gs_backend_ops *be, const gs_reduce_desc *d, const gs_view *in,
                       const gs_view *out, gs_fail *f)
{
    char value[8];

    if (be->stream_chunk(d->row_len, d->in_type) == d->row_len) /* whole rows fit a chunk */
        return be->stream_reduce(d, in, out, f);
    for (int64_t r = 0; r < d->rows; r++) {
        if (long_row(be, d, &d->op, 1, in, r * d->row_len, d->row_len, value, f) < 0)
            return -1;
        gs_unpack(value, d->out_type, out, r, 1);
    }
    return 0;
}

int gs_stream_reduce(const gs_backend_ops *be, const gs_reduce_desc *d, const gs_view *in,
                     const gs_view *out)
{
    gs_fail f = { 0 };
    int rc;

    GS_BEGIN_UNLOCKED
        rc = reduce_rows(be, d, in, out, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : 0;
}

int gs_stream_min_max(const gs_backend_ops *be, const gs_view *in, uint64_t out[2])
{
    static const gs_op min_max[2] = { GS_OP_MIN, GS_OP_MAX };
    const size_t size = gs_dtype_size(in->dtype);
    gs_reduce_desc d;
    gs_fail f = { 0 };
    char res[16];
    int rc;

    memset(&d, 0, sizeof(d));
    d.in_type = d.out_type = in->dtype;
    d.rows = 1;
    d.row_len = gs_view_size(in);
    GS_BEGIN_UNLOCKED
        rc = long_row(be, &d, min_max, 2, in, 0, d.row_len, res, &f);
    GS_END_UNLOCKED
    if (rc < 0)
        return gs_raise(&f);
    out[0] = out[1] = 0;
    memcpy(&out[0], res, size); /* little-endian: the low bytes */
    memcpy(&out[1], res + size, size);
    return 0;
}

/* ---- histograms and splits ---------------------------------------------------------------- */

int gs_stream_hist(const gs_backend_ops *be, const gs_hist_desc *d, const gs_view *in,
                   const gs_view *weights, const gs_view *out)
{
    gs_fail f = { 0 };
    int rc;

    GS_BEGIN_UNLOCKED
        rc = be->stream_hist(d, in, weights, out, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : 0;
}

typedef struct split_result {
    const gs_backend_ops *be;
    gs_dtype dtype;
    PyObject *res;
} split_result;

/* The split's result, once its length is known: called by the backend without the GIL. */
static int make_result(void *ctx, int64_t len, gs_view *out)
{
    split_result *r = ctx;

    gs_gil_take();
    r->res = gs_result_streamed(r->be, 1, &len, r->dtype, out);
    gs_gil_give();
    return r->res != NULL ? 0 : -1;
}

int gs_stream_split(const gs_backend_ops *be, const gs_split_desc *d, const gs_view *in,
                    const gs_view *flags, PyObject **res, int64_t *total)
{
    split_result r = { be, d->in_type, NULL };
    gs_fail f = { 0 };
    int rc;

    GS_BEGIN_UNLOCKED
        rc = be->stream_split(d, in, flags, make_result, &r, total, &f);
    GS_END_UNLOCKED
    if (rc < 0) {
        Py_CLEAR(r.res);
        return gs_raise(&f);
    }
    *res = r.res;
    return 0;
}
