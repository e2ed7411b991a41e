/*
 * ops/sort.c - gpuscan.sort() and gpuscan.argsort(): np.sort and np.argsort with kind="stable".
 * Level: ops.  Settled first: `kind` and `stable` (any of NumPy's kinds, always stable), the
 * input (bool, integers, float16, float32, float64; masked arrays refused), the axis (None: the
 * C-order flattening; an int, negative too: each row along it on its own).  Then the steps of
 * ops/ops.h with the axis last: the input placed as rows x row_len contiguous keys (a copy when
 * the axis is not the last), one call of the backend's `sort` for every row at once, and the
 * result moved back to its axis when it is not the last.  Host input gives NumPy arrays, device
 * input DeviceArrays.  A float16 NumPy input is argsorted as its float32 widening (exact and
 * monotone: the same order), and sort() gathers the float16 values by those indices (bit for
 * bit, NaN payloads too).
 */
#include "ops/ops.h"

/* Everything settled about one call before any data moves. */
typedef struct sort_call {
    gs_backend backend;
    gs_operand in;
    gs_dtype type; /* the keys' dtype (float32 for float16 input) */
    int ndim;      /* the input's */
    int64_t shape[GS_MAX_NDIM];
    int flat; /* axis=None (or a 0-d argsort): the flattening, one row */
    int axis;
    int arg; /* argsort */
    int descending;
    PyObject *half; /* float16 input: the array itself (its float32 widening is in `in`) */
} sort_call;

/* kind: None, or a str (or bytes) that NumPy takes: its first letter q, h, m or s (quicksort,
 * heapsort, mergesort, stable), in either case.  Every kind gives the stable sort.  As NumPy's,
 * kind and stable together are a ValueError. */
static int sort_kind(PyObject *kind, PyObject *stable)
{
    const char *s;
    Py_ssize_t len;

    if (kind == Py_None)
        return 0;
    if (PyUnicode_Check(kind)) {
        if ((s = PyUnicode_AsUTF8AndSize(kind, &len)) == NULL)
            return -1;
    } else if (PyBytes_Check(kind)) {
        s = PyBytes_AS_STRING(kind);
        len = PyBytes_GET_SIZE(kind);
    } else {
        PyErr_Format(PyExc_TypeError, "sort kind must be str, not %.100s", Py_TYPE(kind)->tp_name);
        return -1;
    }
    if (len < 1 || s[0] == '\0' || strchr("qQhHmMsS", s[0]) == NULL) {
        PyErr_Format(PyExc_ValueError,
                     "sort kind must be one of 'quick', 'heap', or 'stable' (got %R)", kind);
        return -1;
    }
    if (stable != Py_None) {
        PyErr_SetString(PyExc_ValueError, "`kind` and keyword parameters can't be provided at "
                                          "the same time. Use only one of them.");
        return -1;
    }
    return 0;
}

/* The input: an operand of the backends' dtypes, float16 NumPy input widened to float32
 * (c->half keeps it); any other dtype a TypeError naming the supported ones. */
static int sort_input(sort_call *c, PyObject *a)
{
    PyArray_Descr *descr;
    gs_dtype t;

    if (gs_operand_get(a, &c->in) < 0)
        return -1;
    if (!c->in.on_device) {
        descr = PyArray_DESCR(c->in.host);
        if (descr->type_num == NPY_HALF) {
            PyObject *wide = PyArray_Cast(c->in.host, NPY_FLOAT32);
            if (wide == NULL)
                return -1;
            c->half = (PyObject *)c->in.host; /* the reference moves to c->half */
            c->in.host = (PyArrayObject *)wide;
        } else if (PyDataType_HASFIELDS(descr) || PyDataType_HASSUBARRAY(descr) ||
                   gs_dtype_from_kind(descr->kind, (int)PyDataType_ELSIZE(descr), &t) < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s: input dtype %S is not supported; supported dtypes: %s, and float16 "
                         "for NumPy input",
                         c->arg ? "argsort" : "sort", (PyObject *)descr, gs_supported_dtypes());
            return -1;
        }
    }
    return gs_operand_info(&c->in, "input", &c->type, &c->ndim, c->shape);
}

/* The axis: None flattens; an int counts from the end when negative (AxisError out of range).
 * A 0-d input is NumPy's: sort() takes it with axis=None only, argsort() as one value along
 * axis 0 or -1. */
static int sort_axis(sort_call *c, PyObject *axis)
{
    if (axis == Py_None) {
        c->flat = 1;
        return 0;
    }
    if (c->ndim == 0) {
        c->flat = c->arg;
        return gs_normalize_axis(axis, c->arg ? 1 : 0, &c->axis);
    }
    return gs_normalize_axis(axis, c->ndim, &c->axis);
}

/* The backend's sort of the placed rows into `dst` (keys or indices). */
static int sort_backend(const gs_backend_ops *be, const sort_call *c, const gs_view *src,
                        const gs_view *dst, int64_t rows, int64_t row_len)
{
    gs_sort_desc d;
    gs_fail f = { 0 };
    int rc;

    if (be->sort == NULL) { /* a backend built without its sort (kernels of another build) */
        PyErr_SetString(PyExc_NotImplementedError,
                        "sort/argsort: this build's CUDA backend has no sort kernels");
        return -1;
    }
    memset(&d, 0, sizeof(d));
    d.keys = src->ptr;
    if (c->arg || c->half != NULL)
        d.index_out = (int64_t *)dst->ptr;
    else
        d.keys_out = dst->ptr;
    d.rows = rows;
    d.row_len = row_len;
    d.type = c->type;
    d.descending = c->descending;
    GS_BEGIN_UNLOCKED
        rc = be->sort(&d, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : PyErr_CheckSignals();
}

/* Place, target, run, deliver: the settled call into the result `res` (of c's result shape). */
static int sort_run(const sort_call *c, const gs_backend_ops *be, gs_view res, gs_bag *bag)
{
    gs_view v = c->in.view, src, dst;
    const int64_t n = gs_view_size(&v);
    const gs_dtype out_type = res.dtype;
    int64_t row_len;

    if (n == 0)
        return 0;
    if (c->flat) {
        row_len = n; /* placed in C order: the flattening */
    } else {
        row_len = c->shape[c->axis];
        gs_view_move_axis_last(&v, c->axis);
        gs_view_move_axis_last(&res, c->axis);
    }
    if (gs_place(&v, be->mem, c->type, bag, &src) < 0)
        return -1;
    dst = res;
    if (!gs_view_ready(&res, be->mem, out_type) &&
        gs_temp_like(bag, &res, be->mem, out_type, &dst) < 0)
        return -1;
    if (sort_backend(be, c, &src, &dst, n / row_len, row_len) < 0)
        return -1;
    return dst.ptr == res.ptr ? 0 : gs_move(&dst, &res, bag);
}

/* float16 sort: the values of c->half gathered by the indices `idx` (stolen), along the axis. */
static PyObject *half_gather(const sort_call *c, PyObject *idx)
{
    PyObject *np, *res = NULL;

    if (c->flat) {
        PyObject *flat = PyArray_Ravel((PyArrayObject *)c->half, NPY_CORDER);
        if (flat != NULL)
            res = PyArray_TakeFrom((PyArrayObject *)flat, idx, 0, NULL, NPY_RAISE);
        Py_XDECREF(flat);
    } else if ((np = PyImport_ImportModule("numpy")) != NULL) {
        res = PyObject_CallMethod(np, "take_along_axis", "OOi", c->half, idx, c->axis);
        Py_DECREF(np);
    }
    Py_DECREF(idx);
    if (res != NULL && PyArray_Check(res) &&
        !PyArray_ISNBO(PyArray_DESCR((PyArrayObject *)res)->byteorder)) {
        PyArray_Descr *native = PyArray_DescrFromType(NPY_HALF);
        Py_SETREF(res, PyArray_CastToType((PyArrayObject *)res, native, 0));
    }
    return res;
}

static PyObject *sort_entry(PyObject *args, PyObject *kwargs, int arg)
{
    static char *kwlist[] = { "a", "axis", "kind", "stable", "descending", NULL };
    PyObject *a, *axis_obj = NULL, *kind = Py_None, *stable = Py_None, *ret = NULL;
    PyObject *minus_one = PyLong_FromLong(-1);
    gs_bag bag = { 0 };
    sort_call c;
    gs_view res;

    memset(&c, 0, sizeof(c));
    c.arg = arg;
    if (minus_one == NULL ||
        !PyArg_ParseTupleAndKeywords(args, kwargs, arg ? "O|OO$Op:argsort" : "O|OO$Op:sort", kwlist,
                                     &a, &axis_obj, &kind, &stable, &c.descending))
        goto done;
    if (sort_kind(kind, stable) < 0 || gs_backend_get(&c.backend) < 0 || sort_input(&c, a) < 0 ||
        sort_axis(&c, axis_obj != NULL ? axis_obj : minus_one) < 0)
        goto done;
    {
        const int device = c.in.on_device;
        const gs_backend_ops *be = gs_backend_for(c.backend, device);
        gs_operand *const used[] = { &c.in };
        const int64_t n = gs_shape_size(c.ndim, c.shape);
        const int rnd = c.flat ? 1 : c.ndim;
        const gs_dtype out_type = c.arg || c.half != NULL ? GS_INT64 : c.type;

        if ((ret = device ? gs_result_new(GS_MEM_DEVICE, rnd, c.flat ? &n : c.shape, out_type, &res)
                          : gs_result_streamed(be, rnd, c.flat ? &n : c.shape, out_type, &res)) ==
            NULL)
            goto done;
        const int failed = sort_run(&c, be, res, &bag) < 0;
        if (gs_release_operands(used, 1) < 0 || failed) {
            Py_CLEAR(ret);
            goto done;
        }
        if (c.half != NULL && !c.arg)
            ret = half_gather(&c, ret);
    }
done:
    gs_bag_free(&bag);
    gs_operand_release(&c.in);
    Py_XDECREF(c.half);
    Py_XDECREF(minus_one);
    return ret;
}

PyObject *gs_sort(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return sort_entry(args, kwargs, 0);
}

PyObject *gs_argsort(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return sort_entry(args, kwargs, 1);
}
