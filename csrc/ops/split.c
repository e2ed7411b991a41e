/*
 * ops/split.c - gpuscan.split() and gpuscan.compact().
 * Level: ops. Both take `a` and `flags` of the same shape (any supported dtypes), read in C
 * order, and move a's values as bits (every dtype, NaN payloads kept). The steps of ops/ops.h,
 * with the run in two passes: the count (a compact learns its length from it) and the scatter
 * (which also hands back split's count). Ctrl-C is honoured when the passes return.
 */
#include "ops/ops.h"

/* One split or compact call as it is settled. */
typedef struct split_call {
    gs_backend backend;
    gs_operand in, flags;
    gs_dtype in_type, flag_type;
    int64_t n;
    int compact;
} split_call;

/* What the call returns: `out` (compact) or (out, count) (split); steals `out`. */
static PyObject *split_result(PyObject *out, int64_t count, int compact)
{
    if (out == NULL || compact)
        return out;
    return Py_BuildValue("(NL)", out, (long long)count);
}

/* The backend's two passes: count (the total now when `total_first`), then, once `prepare`
 * has made d->out, scatter; *total the flagged count.  The state between them is released on
 * every path. */
static int split_backend(const gs_backend_ops *be, gs_split_desc *d, int64_t *total,
                         int (*prepare)(gs_split_desc *d, int64_t total, void *ctx), void *ctx)
{
    gs_fail f = { 0 };
    void *state = NULL;
    int rc;

    GS_BEGIN_UNLOCKED
        rc = be->split_count(d, &state, d->compact ? total : NULL, &f);
    GS_END_UNLOCKED
    if (rc == 0 && prepare(d, *total, ctx) < 0)
        f.kind = 'p';
    if (rc == 0 && f.kind == 0) {
        GS_BEGIN_UNLOCKED
            rc = be->split_scatter(d, state, d->compact ? NULL : total, &f);
        GS_END_UNLOCKED
    }
    be->split_end(state);
    return f.kind ? gs_raise(&f) : PyErr_CheckSignals();
}

/* Where the scatter writes: the result (made here, now that its length is known) or a
 * temporary in the backend's memory. */
typedef struct split_target {
    const gs_backend_ops *be;
    gs_mem mem; /* the result's memory */
    PyObject *res;
    gs_view view; /* the result */
    gs_view dst;  /* where the backend writes */
    gs_bag *bag;
} split_target;

static int split_prepare(gs_split_desc *d, int64_t total, void *ctx)
{
    split_target *t = ctx;
    int64_t len = d->compact ? total : d->n;

    t->res = gs_result_new(t->mem, 1, &len, d->in_type, &t->view);
    if (t->res == NULL)
        return -1;
    t->dst = t->view;
    if (!gs_view_ready(&t->view, t->be->mem, d->in_type) &&
        gs_temp_like(t->bag, &t->view, t->be->mem, d->in_type, &t->dst) < 0)
        return -1;
    d->out = t->dst.ptr;
    return 0;
}

/* Host operands streamed through a backend with its own memory. */
static PyObject *split_stream(split_call *c, split_target *t)
{
    gs_split_desc d;
    int64_t total = 0;

    memset(&d, 0, sizeof(d));
    d.n = c->n;
    d.in_type = c->in_type;
    d.flag_type = c->flag_type;
    d.compact = c->compact;
    if (gs_stream_split(t->be, &d, &c->in.view, &c->flags.view, &t->res, &total) < 0)
        return NULL;
    return split_result(t->res, total, c->compact);
}

/* Place, count, target, scatter, deliver. */
static PyObject *split_run(split_call *c)
{
    const int device = c->in.on_device || c->flags.on_device;
    gs_operand *const used[] = { &c->in, &c->flags };
    gs_bag bag = { 0 };
    split_target t = { gs_backend_for(c->backend, device), device ? GS_MEM_DEVICE : GS_MEM_HOST,
                       NULL };
    gs_view src, heads;
    gs_split_desc d;
    int64_t total = 0;
    PyObject *ret = NULL;

    t.bag = &bag;
    if (!device && t.be->stream_split != NULL)
        return split_stream(c, &t);
    if (gs_place(&c->in.view, t.be->mem, c->in_type, &bag, &src) < 0 ||
        gs_place(&c->flags.view, t.be->mem, c->flag_type, &bag, &heads) < 0)
        goto done;
    memset(&d, 0, sizeof(d));
    d.in = src.ptr;
    d.flags = heads.ptr;
    d.n = c->n;
    d.in_type = c->in_type;
    d.flag_type = c->flag_type;
    d.compact = c->compact;
    const int failed = split_backend(t.be, &d, &total, split_prepare, &t) < 0 ||
                       (t.dst.ptr != t.view.ptr && gs_move(&t.dst, &t.view, &bag) < 0);
    if (gs_release_operands(used, 2) < 0 || failed)
        goto done;
    ret = split_result(t.res, total, c->compact);
    t.res = NULL;
done:
    Py_XDECREF(t.res);
    gs_bag_free(&bag);
    return ret;
}

/* ---- values of any fixed-size dtype ---------------------------------------------------- */

/* A split moves values without reading them, so a host array of a dtype the table lacks
 * (float16, complex, datetime, bytes and str, structured; not one holding Python objects) is
 * split as its bits: viewed as unsigned integers of its item size when that is 1, 2, 4 or 8
 * bytes (the result viewed back, byte order and all), else as the indices 0..n-1 (split by the
 * backend, then the values gathered by NumPy). Device operands come with table dtypes only. */
typedef struct bits_plan {
    PyArray_Descr *descr; /* the input's dtype (a new reference), NULL: no bits path */
    PyObject *values;     /* the input, for the gather of the indices path, else NULL */
} bits_plan;

/* *stand_in = what the backend splits in place of the host array `arr` when its dtype is not
 * in the table (a new reference; bp filled), else NULL. */
static int bits_stand_in(PyArrayObject *arr, bits_plan *bp, PyObject **stand_in)
{
    PyArray_Descr *descr = PyArray_DESCR(arr);
    const int itemsize = (int)PyDataType_ELSIZE(descr);
    const int word = itemsize == 1   ? NPY_UINT8
                     : itemsize == 2 ? NPY_UINT16
                     : itemsize == 4 ? NPY_UINT32
                     : itemsize == 8 ? NPY_UINT64
                                     : -1;
    PyArray_Dims dims = { PyArray_DIMS(arr), PyArray_NDIM(arr) };
    PyObject *indices;
    gs_dtype t;

    *stand_in = NULL;
    if ((!PyDataType_HASFIELDS(descr) && !PyDataType_HASSUBARRAY(descr) &&
         gs_dtype_from_kind(descr->kind, itemsize, &t) == 0) ||
        PyDataType_REFCHK(descr) || itemsize <= 0)
        return 0; /* the table's, or refused later with the supported dtypes named */
    bp->descr = (PyArray_Descr *)Py_NewRef(descr);
    if (word >= 0) {
        *stand_in = PyArray_View(arr, PyArray_DescrFromType(word), &PyArray_Type);
        return *stand_in != NULL ? 0 : -1;
    }
    if ((bp->values = PyArray_Ravel(arr, NPY_CORDER)) == NULL)
        return -1;
    indices = PyArray_Arange(0, (double)PyArray_SIZE(arr), 1, NPY_INT64);
    if (indices == NULL)
        return -1;
    *stand_in = PyArray_Newshape((PyArrayObject *)indices, &dims, NPY_CORDER); /* a's shape */
    Py_DECREF(indices);
    return *stand_in != NULL ? 0 : -1;
}

/* The values of the stand-in's 1-D result `out` (stolen) in the input's dtype. */
static PyObject *bits_back(const bits_plan *bp, PyObject *out)
{
    PyObject *res;

    if (bp->values != NULL) {
        res = PyArray_TakeFrom((PyArrayObject *)bp->values, out, 0, NULL, NPY_RAISE);
        Py_DECREF(out);
        return res;
    }
    Py_INCREF(bp->descr); /* PyArray_View steals it */
    res = PyArray_View((PyArrayObject *)out, bp->descr, &PyArray_Type);
    Py_DECREF(out);
    return res;
}

/* ---- split(), compact() ------------------------------------------------------------------- */

static PyObject *split_call_run(PyObject *args, PyObject *kwargs, int compact)
{
    static char *kwlist[] = { "a", "flags", NULL };
    PyObject *a, *flags_obj, *ret = NULL, *stand_in = NULL;
    int64_t shape[GS_MAX_NDIM], fshape[GS_MAX_NDIM];
    int ndim, fnd;
    bits_plan bp = { 0 };
    split_call c;

    memset(&c, 0, sizeof(c));
    c.compact = compact;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, compact ? "OO:compact" : "OO:split", kwlist, &a,
                                     &flags_obj))
        return NULL;
    if (gs_backend_get(&c.backend) < 0 || gs_operand_get(a, &c.in) < 0 ||
        (!c.in.on_device && bits_stand_in(c.in.host, &bp, &stand_in) < 0))
        goto done;
    if (stand_in != NULL) {
        gs_operand_release(&c.in);
        if (gs_operand_get(stand_in, &c.in) < 0)
            goto done;
    }
    if (gs_operand_get(flags_obj, &c.flags) < 0 ||
        gs_operand_info(&c.in, "input", &c.in_type, &ndim, shape) < 0 ||
        gs_operand_info(&c.flags, "flags", &c.flag_type, &fnd, fshape) < 0)
        goto done;
    /* Exactly a's shape (no broadcasting); both flattened in C order. */
    if (gs_check_same_shape("flags", fnd, fshape, "a", ndim, shape) < 0)
        goto done;
    c.n = gs_shape_size(ndim, shape);
    ret = split_run(&c);
    if (ret != NULL && bp.descr != NULL) {
        if (compact) {
            ret = bits_back(&bp, ret);
        } else {
            PyObject *values = bits_back(&bp, Py_NewRef(PyTuple_GET_ITEM(ret, 0)));
            Py_SETREF(ret, values == NULL
                               ? NULL
                               : Py_BuildValue("(NO)", values, PyTuple_GET_ITEM(ret, 1)));
        }
    }
done:
    gs_operand_release(&c.in);
    gs_operand_release(&c.flags);
    Py_XDECREF(stand_in);
    Py_XDECREF(bp.descr);
    Py_XDECREF(bp.values);
    return ret;
}

PyObject *gs_split(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return split_call_run(args, kwargs, 0);
}

PyObject *gs_compact(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return split_call_run(args, kwargs, 1);
}
