/*
 * ops/hist.c - gpuscan.histogram() and gpuscan.bincount(): settling, then the run on the
 * backend.
 *
 * Level: ops.  As np.histogram and np.bincount, with NumPy's results and errors.  The edges are
 * NumPy's own (np.histogram_bin_edges) and every decision about bins is made from them, before
 * any data moves (ops/hist_edges.c); for a device input the autodetected range is the device's
 * min and max (ops/reduce.c's reduction) and NumPy sees only those two values (a string
 * estimator needs the data: it is copied to the host).  Then one path for every backend
 * (ops/ops.h): the input (and weights) placed where the backend reads them, the counts (or
 * sums) accumulated by the backend into the result or a temporary, delivered, cast to the
 * weights' dtype, made a density.  Device inputs give a DeviceArray of counts (the edges are
 * NumPy).
 */
#include "ops/hist.h"

#include <math.h>

/* ---- operands ------------------------------------------------------------------------------- */

/* One input (a, weights, x) and where the backend reads it: `placed`, n contiguous values of
 * `type` in the backend's memory. */
typedef struct hist_input {
    gs_operand op;
    gs_dtype type; /* what the backend reads (bool input of histogram: uint8) */
    gs_view placed;
    int is_placed;
} hist_input;

/* The operand's view, read as `type` (bool as uint8: the same bits, no conversion). */
static gs_view input_view(const hist_input *in)
{
    gs_view v = in->op.view;

    if (gs_dtype_size(v.dtype) == gs_dtype_size(in->type) &&
        gs_dtype_read_kind(v.dtype) == gs_dtype_read_kind(in->type))
        v.dtype = in->type;
    return v;
}

/* in->placed: the operand where `be` reads it, as `type` (once). */
static int input_place(hist_input *in, const gs_backend_ops *be, gs_bag *bag)
{
    gs_view v = input_view(in);
    if (in->is_placed)
        return 0;
    in->is_placed = 1;
    return gs_place(&v, be->mem, in->type, bag, &in->placed);
}

/* Whether a call streams its host operands through the backend's memory. */
static int streamed(const gs_backend_ops *be, const hist_input *in)
{
    return !in->op.on_device && be->stream_hist != NULL;
}

/* ---- running -------------------------------------------------------------------------------- */

/* What a weighted histogram's descriptor points at until its weights are placed. */
static const double no_weights_yet;

/* Run d (its edges on the host) on `be` into a new result of nbins accumulators: a NumPy
 * array for host operands, streamed through the backend's memory where it has its own, or a
 * DeviceArray; `in` and `w` (NULL: no weights) placed where the backend reads them first
 * unless streamed. */
static PyObject *hist_run(const gs_backend_ops *be, gs_hist_desc *d, hist_input *in, hist_input *w,
                          gs_bag *bag)
{
    const gs_dtype acc = gs_hist_acc_type(d);
    int64_t nbins = d->nbins;
    gs_view res, dst, vin, vw;
    gs_fail f = { 0 };
    PyObject *ret =
        gs_result_new(in->op.on_device ? GS_MEM_DEVICE : GS_MEM_HOST, 1, &nbins, acc, &res);
    int rc;

    if (ret == NULL)
        return NULL;
    if (streamed(be, in)) {
        vin = input_view(in);
        if (w != NULL)
            vw = input_view(w);
        if (gs_stream_hist(be, d, &vin, w != NULL ? &vw : NULL, &res) < 0)
            goto fail;
        return ret;
    }
    if (input_place(in, be, bag) < 0 || (w != NULL && input_place(w, be, bag) < 0))
        goto fail;
    d->in = in->placed.ptr;
    if (w != NULL && w->placed.ptr != NULL) /* (none for an empty input: nothing reads them) */
        d->weights = w->placed.ptr;
    dst = res;
    if (!gs_view_ready(&res, be->mem, acc) && gs_temp_like(bag, &res, be->mem, acc, &dst) < 0)
        goto fail;
    d->out = dst.ptr;
    GS_BEGIN_UNLOCKED
        rc = be->hist(d, &f);
    GS_END_UNLOCKED
    if (rc < 0) {
        gs_raise(&f);
        goto fail;
    }
    if (PyErr_CheckSignals() < 0 || (dst.ptr != res.ptr && gs_move(&dst, &res, bag) < 0))
        goto fail;
    return ret;
fail:
    Py_DECREF(ret);
    return NULL;
}

/* res.astype(t), where res is (host or device), as C casts: integers wrap, bool is nonzero. */
static PyObject *cast_result(PyObject *res, gs_dtype t)
{
    const int device = gs_DeviceArray_Check(res);
    gs_view src, dst;
    gs_bag bag = { 0 };
    PyObject *out;
    int64_t len;

    if (!device) {
        PyArray_Descr *descr = gs_descr(t);
        return descr != NULL ? PyArray_CastToType((PyArrayObject *)res, descr, 0) : NULL;
    }
    gs_devarray_view((gs_DeviceArray *)res, &src);
    len = src.shape[0];
    out = gs_result_new(GS_MEM_DEVICE, 1, &len, t, &dst);
    if (out != NULL && gs_move(&src, &dst, &bag) < 0)
        Py_CLEAR(out);
    gs_bag_free(&bag);
    return out;
}

/* NumPy's density: n / np.array(np.diff(edges), float) / n.sum(), computed by NumPy on the host
 * (a device result is brought back and the density sent to the device). */
static PyObject *density_of(PyObject *res, PyObject *edges)
{
    PyObject *n = NULL, *diff = NULL, *db = NULL, *q = NULL, *sum = NULL, *ret = NULL, *args;
    int on_device = gs_DeviceArray_Check(res);

    n = on_device ? PyObject_CallMethod(res, "get", NULL) : Py_NewRef(res);
    if (n == NULL)
        goto done;
    if ((args = PyTuple_Pack(1, edges)) == NULL)
        goto done;
    diff = gs_np_call("diff", args, NULL);
    Py_DECREF(args);
    if (diff == NULL)
        goto done;
    db = PyArray_FROM_OTF(diff, NPY_DOUBLE, NPY_ARRAY_FORCECAST); /* long double too, as NumPy */
    if (db == NULL || (q = PyNumber_TrueDivide(n, db)) == NULL ||
        (sum = PyObject_CallMethod(n, "sum", NULL)) == NULL)
        goto done;
    ret = PyNumber_TrueDivide(q, sum);
    if (ret != NULL && on_device)
        Py_SETREF(ret, gs_to_device(NULL, ret));
done:
    Py_XDECREF(n);
    Py_XDECREF(diff);
    Py_XDECREF(db);
    Py_XDECREF(q);
    Py_XDECREF(sum);
    return ret;
}

/* ---- histogram() ---------------------------------------------------------------------------- */

static int parse_method(const char *name, gs_hist_method *m)
{
    if (strcmp(name, "auto") == 0)
        *m = GS_HIST_AUTO;
    else if (strcmp(name, "global") == 0)
        *m = GS_HIST_GLOBAL;
    else if (strcmp(name, "shared") == 0)
        *m = GS_HIST_SHARED;
    else {
        PyErr_Format(PyExc_ValueError, "method must be 'auto', 'global' or 'shared', got '%s'",
                     name);
        return -1;
    }
    return 0;
}

/* Everything of one histogram call, released by hist_state_release. */
typedef struct hist_state {
    hist_input a, w;
    gs_hist_bins bins;
    PyObject *range; /* the range NumPy sees (a new reference) */
    PyObject *a_np;  /* the array NumPy's edge functions see */
    gs_bag bag;
} hist_state;

static void hist_state_release(hist_state *s)
{
    gs_operand_release(&s->a.op);
    gs_operand_release(&s->w.op);
    gs_hist_bins_release(&s->bins);
    Py_CLEAR(s->range);
    Py_CLEAR(s->a_np);
    gs_bag_free(&s->bag);
}

/* The device's (min, max) of a device input as the range NumPy sees: its equal-width edges need
 * no data then.  NumPy's ValueError for a non-finite one. */
static int device_range(hist_state *s, const gs_backend_ops *be, PyArray_Descr *descr)
{
    uint64_t bits[2];
    PyObject *mm;

    if (input_place(&s->a, be, &s->bag) < 0 || gs_reduce_min_max(be, &s->a.placed, bits) < 0)
        return -1;
    if (s->bins.from_bool) { /* bytes of bools: the least and greatest of their values 0 and 1 */
        bits[0] = bits[0] != 0;
        bits[1] = bits[1] != 0;
    }
    mm = Py_BuildValue("(NN)", PyArray_Scalar(&bits[0], descr, NULL),
                       PyArray_Scalar(&bits[1], descr, NULL));
    if (mm == NULL)
        return -1;
    if (gs_dtype_is_float(s->a.type)) {
        PyObject *mn = PyTuple_GET_ITEM(mm, 0), *mx = PyTuple_GET_ITEM(mm, 1);
        if (!isfinite(PyFloat_AsDouble(mn)) || !isfinite(PyFloat_AsDouble(mx))) {
            PyErr_Format(PyExc_ValueError, "autodetected range of [%S, %S] is not finite", mn, mx);
            Py_DECREF(mm);
            return -1;
        }
    }
    Py_SETREF(s->range, mm);
    return 0;
}

/* The array NumPy's edge function sees: the host input itself (bool as uint8, as NumPy), or
 * for a device input the data copied back (an estimator needs it) or an empty array of its
 * dtype, with the device's (min, max) as the range when equal-width bins need one. */
static int numpy_side(hist_state *s, const gs_backend_ops *be, int64_t n, int is_str, int uniform)
{
    PyArray_Descr *descr = gs_descr(s->a.type);
    int64_t len = is_str ? n : 0;
    gs_view host;
    int rc = -1;

    if (descr == NULL)
        return -1;
    if (s->a_np != NULL) { /* the caller's (gs_histogram_widened) */
        rc = 0;
        goto done;
    }
    if (!s->a.op.on_device) {
        Py_INCREF(descr); /* PyArray_FromAny steals one; the other is ours */
        s->a_np = PyArray_FromAny((PyObject *)s->a.op.host, descr, 0, 0, NPY_ARRAY_FORCECAST, NULL);
        rc = s->a_np != NULL ? 0 : -1;
        goto done;
    }
    if ((s->a_np = gs_result_new(GS_MEM_HOST, 1, &len, s->a.type, &host)) == NULL)
        goto done;
    if (is_str)
        rc = gs_move(&s->a.op.view, &host, &s->bag);
    else if (s->range == Py_None && uniform && n > 0)
        rc = device_range(s, be, descr);
    else
        rc = 0;
done:
    Py_DECREF(descr);
    return rc;
}

/* The operands (NumPy: bool counted as uint8, with a warning), weights of a's shape. */
static int hist_operands(hist_state *s, PyObject *a, PyObject *weights, int64_t *n)
{
    int64_t shape[GS_MAX_NDIM], wshape[GS_MAX_NDIM];
    int ndim, wndim;
    gs_dtype in_type;

    if (gs_operand_get(a, &s->a.op) < 0 ||
        gs_operand_info(&s->a.op, "input", &in_type, &ndim, shape) < 0)
        return -1;
    *n = gs_shape_size(ndim, shape);
    s->a.type = in_type == GS_BOOL ? GS_UINT8 : in_type;
    if (in_type == GS_BOOL &&
        PyErr_WarnEx(PyExc_RuntimeWarning,
                     "Converting input from bool to <class 'numpy.uint8'> for compatibility.",
                     1) < 0)
        return -1;
    if (weights == Py_None)
        return 0;
    if (gs_operand_get(weights, &s->w.op) < 0 ||
        gs_operand_info(&s->w.op, "weights", &s->w.type, &wndim, wshape) < 0)
        return -1;
    if (wndim != ndim || memcmp(wshape, shape, sizeof(int64_t) * ndim) != 0) {
        PyErr_SetString(PyExc_ValueError, "weights should have the same shape as a.");
        return -1;
    }
    if (s->w.op.on_device != s->a.op.on_device) {
        PyErr_SetString(PyExc_TypeError,
                        "histogram: a and weights must both be device arrays or both not");
        return -1;
    }
    return 0;
}

/* NumPy's edges for `bins` (into s->bins.edges), after its own checks of the arguments. */
static int numpy_edges(hist_state *s, PyObject *bins, int is_str, PyObject *weights)
{
    PyObject *zeros_w = NULL, *bargs = NULL, *bkw = NULL;
    int rc = -1;

    if (is_str && weights != Py_None) {
        /* NumPy's own checks of the estimator name, then its TypeError for weights. */
        zeros_w = PyArray_ZEROS(PyArray_NDIM((PyArrayObject *)s->a_np),
                                PyArray_DIMS((PyArrayObject *)s->a_np), NPY_DOUBLE, 0);
        if (zeros_w == NULL)
            goto done;
    }
    bargs = PyTuple_Pack(2, s->a_np, bins);
    bkw = Py_BuildValue("{sOsO}", "range", s->range, "weights", zeros_w ? zeros_w : Py_None);
    if (bargs != NULL && bkw != NULL &&
        (s->bins.edges = gs_np_call("histogram_bin_edges", bargs, bkw)) != NULL)
        rc = 0;
done:
    Py_XDECREF(zeros_w);
    Py_XDECREF(bargs);
    Py_XDECREF(bkw);
    return rc;
}

/* Whether `bins` asks for equal-width bins (a scalar count or an estimator name). */
static int uniform_bins(PyObject *bins, int *uniform)
{
    PyObject *one, *nd;

    if (PyUnicode_Check(bins)) {
        *uniform = 1;
        return 0;
    }
    if ((one = PyTuple_Pack(1, bins)) == NULL)
        return -1;
    nd = gs_np_call("ndim", one, NULL);
    Py_DECREF(one);
    if (nd == NULL)
        return -1;
    *uniform = PyLong_AsLong(nd) == 0;
    Py_DECREF(nd);
    return 0;
}

/* Counts (or sums) of the placed inputs, then the weights' dtype and the density, as NumPy. */
static PyObject *hist_counts(hist_state *s, const gs_backend_ops *be, gs_hist_desc *d, int64_t n,
                             PyObject *weights, PyObject *density)
{
    PyObject *res;
    int dens;

    d->n = n;
    d->in_type = s->a.type;
    /* Weighted or not decides the accumulators' type; the backend reads them where placed. */
    d->weights = weights != Py_None ? &no_weights_yet : NULL;
    d->w_type = s->w.type;
    res = hist_run(be, d, &s->a, weights != Py_None ? &s->w : NULL, &s->bag);
    /* The weights' dtype, as NumPy (the accumulators: int64 counts, or the weights' sums). */
    if (res != NULL && weights != Py_None && s->w.type != gs_hist_acc_type(d))
        Py_SETREF(res, cast_result(res, s->w.type));
    if (res == NULL || (dens = PyObject_IsTrue(density)) < 0)
        goto fail;
    if (dens)
        Py_SETREF(res, density_of(res, s->bins.edges));
    return res;
fail:
    Py_XDECREF(res);
    return NULL;
}

/* (counts, edges) for a single edge: no bin, so empty counts of NumPy's dtype (int64, the
 * weights', float64 for a density), where the input is. */
static PyObject *no_bins(hist_state *s, PyObject *weights, PyObject *density)
{
    const int64_t zero = 0;
    int dens = PyObject_IsTrue(density);
    gs_dtype t = dens > 0 ? GS_FLOAT64 : weights != Py_None ? s->w.type : GS_INT64;
    PyObject *res, *ret;
    gs_view v;

    if (dens < 0)
        return NULL;
    res = gs_result_new(s->a.op.on_device ? GS_MEM_DEVICE : GS_MEM_HOST, 1, &zero, t, &v);
    if (res == NULL)
        return NULL;
    ret = PyTuple_Pack(2, res, s->bins.edges);
    Py_DECREF(res);
    return ret;
}

/* histogram(a, bins, range, density, weights, method) with its arguments parsed; `a_half`: NULL,
 * or the float16 array that `a` widens (gs_histogram_widened). */
static PyObject *histogram_of(PyObject *a, PyObject *a_half, PyObject *bins, PyObject *range,
                              PyObject *density, PyObject *weights, const char *method_name)
{
    PyObject *res = NULL, *ret = NULL;
    gs_operand *used[2];
    const gs_backend_ops *be;
    int uniform, is_str, cacheable, hit = 0;
    gs_backend backend;
    gs_hist_desc d;
    gs_hist_key key;
    hist_state s;
    int64_t n;

    memset(&s, 0, sizeof(s));
    memset(&d, 0, sizeof(d));
    if (parse_method(method_name, &d.method) < 0 || gs_backend_get(&backend) < 0)
        return NULL;
    s.range = Py_NewRef(range);
    s.a_np = Py_XNewRef(a_half); /* NumPy sees the float16 values themselves */
    s.bins.half = a_half != NULL;
    bins = bins != NULL ? Py_NewRef(bins) : PyLong_FromLong(10);
    if (bins == NULL || hist_operands(&s, a, weights, &n) < 0)
        goto done;
    s.bins.from_bool = s.a.op.view.dtype == GS_BOOL; /* counted as uint8, as NumPy converts it */
    be = gs_backend_for(backend, s.a.op.on_device);

    /* 1. The edges, by NumPy, and the bins from them, before any data moves (or all of it from
     *    the cache, for a count of bins and a range asked for before). */
    is_str = PyUnicode_Check(bins);
    cacheable = gs_hist_key_of(s.a.type, bins, range, &key);
    key.half = s.bins.half;
    key.from_bool = s.bins.from_bool;
    if (cacheable && (hit = gs_hist_bins_cached(&key, &s.bins, &d)) < 0)
        goto done;
    if (!hit) {
        if (uniform_bins(bins, &uniform) < 0 || numpy_side(&s, be, n, is_str, uniform) < 0 ||
            numpy_edges(&s, bins, is_str, weights) < 0)
            goto done;
        if (PyArray_Check(s.bins.edges) && PyArray_SIZE((PyArrayObject *)s.bins.edges) == 1 &&
            PyArray_NDIM((PyArrayObject *)s.bins.edges) == 1) {
            ret = no_bins(&s, weights, density); /* one edge: no bin, as NumPy */
            goto done;
        }
        if (gs_hist_plan_bins(&s.bins, &d, s.a.type, uniform, range) < 0)
            goto done;
        if (cacheable)
            gs_hist_bins_keep(&key, &s.bins, &d);
    }

    /* 2. The counts (the inputs placed where the backend reads them, or streamed). */
    res = hist_counts(&s, be, &d, n, weights, density);
    used[0] = &s.a.op;
    used[1] = &s.w.op;
    if (gs_release_operands(used, 2) == 0 && res != NULL)
        ret = PyTuple_Pack(2, res, s.bins.edges);
done:
    Py_XDECREF(res);
    Py_XDECREF(bins);
    hist_state_release(&s);
    return ret;
}

static char *histogram_kwlist[] = { "a", "bins", "range", "density", "weights", "method", NULL };

PyObject *gs_histogram(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *a, *bins = NULL, *range = Py_None, *density = Py_None, *weights = Py_None, *ret;
    const char *method_name = "auto";
    gs_half_hist h;
    int half, dens;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO$s:histogram", histogram_kwlist, &a,
                                     &bins, &range, &density, &weights, &method_name))
        return NULL;
    /* float16 (binding/half.c): counted in float32 by NumPy's float16 edges and bins, float16
     * weights summed in float32 and rounded once per bin. */
    if ((half = gs_half_histogram(a, weights != Py_None ? weights : NULL, &h)) <= 0)
        return half < 0 ? NULL : histogram_of(a, NULL, bins, range, density, weights, method_name);
    ret = histogram_of(h.a, h.a_half, bins, range, density, h.weights != NULL ? h.weights : Py_None,
                       method_name);
    if (ret != NULL && h.half_weights && (dens = PyObject_IsTrue(density)) <= 0) {
        PyObject *counts =
            dens < 0 ? NULL
                     : PyObject_CallMethod(PyTuple_GET_ITEM(ret, 0), "astype", "s", "float16");
        Py_SETREF(ret, counts == NULL ? NULL : PyTuple_Pack(2, counts, PyTuple_GET_ITEM(ret, 1)));
        Py_XDECREF(counts);
    }
    gs_half_histogram_release(&h);
    return ret;
}

/* NumPy's checks of an array argument of bincount: 1-D, castable to `to` by the 'safe' rule. */
static int bincount_check(PyObject *obj, gs_operand *op, int to_typenum, gs_dtype *t, int64_t *n)
{
    PyArray_Descr *have = NULL, *want;
    int64_t shape[GS_MAX_NDIM];
    int ndim, ok;

    if (gs_operand_info(op, "bincount input", t, &ndim, shape) < 0)
        return -1;
    if (ndim != 1) {
        PyErr_SetString(PyExc_ValueError, ndim == 0 ? "object of too small depth for desired array"
                                                    : "object too deep for desired array");
        return -1;
    }
    *n = shape[0];
    have = gs_descr(*t);
    want = PyArray_DescrFromType(to_typenum);
    if (have == NULL || want == NULL) {
        Py_XDECREF(have);
        Py_XDECREF(want);
        return -1;
    }
    /* NumPy 2 takes uint64 too (values from 2**63 up then read as negative). */
    ok = *t == GS_UINT64 || PyArray_CanCastTypeTo(have, want, NPY_SAFE_CASTING);
    if (!ok)
        PyErr_Format(PyExc_TypeError,
                     "Cannot cast array data from %R to %R according to the rule 'safe'",
                     (PyObject *)have, (PyObject *)want);
    Py_DECREF(have);
    Py_DECREF(want);
    (void)obj;
    return ok ? 0 : -1;
}

/* An argument of bincount as an operand: arrays (host or device) as they are; the values x from
 * anything else (lists, buffers, memoryviews, objects with __array__) as the array NumPy makes
 * of them, held to the arrays' rule (integers, as NumPy 2.5: [1.0] is a TypeError, an empty
 * list is no values); weights as NumPy converts them (PyArray_ContiguousFromAny), so the errors
 * are NumPy's. */
static int bincount_operand(PyObject *obj, int typenum, gs_operand *op)
{
    PyObject *arr;
    int rc;

    if (typenum == NPY_INTP && !PyArray_Check(obj)) {
        if ((rc = gs_operand_get_device(obj, op)) != 0)
            return rc < 0 ? -1 : 0; /* a device array, or an error */
        if ((arr = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL)) == NULL)
            return -1;
        if (PyArray_SIZE((PyArrayObject *)arr) == 0)
            Py_SETREF(arr, PyArray_FromAny(arr, PyArray_DescrFromType(NPY_INTP), 0, 0,
                                           NPY_ARRAY_FORCECAST, NULL));
        rc = arr == NULL ? -1 : bincount_operand(arr, typenum, op);
        Py_XDECREF(arr);
        return rc;
    }
    if (PyArray_Check(obj)) {
        if (PyArray_TYPE((PyArrayObject *)obj) != NPY_BOOL &&
            gs_dtype_from_kind(PyArray_DESCR((PyArrayObject *)obj)->kind,
                               (int)PyArray_ITEMSIZE((PyArrayObject *)obj), &(gs_dtype){ 0 }) < 0) {
            /* Complex, object, ...: NumPy's cast error. */
            PyArray_Descr *want = PyArray_DescrFromType(typenum);
            PyErr_Format(PyExc_TypeError,
                         "Cannot cast array data from %R to %R according to the rule 'safe'",
                         (PyObject *)PyArray_DESCR((PyArrayObject *)obj), (PyObject *)want);
            Py_XDECREF(want);
            return -1;
        }
        return gs_operand_get(obj, op);
    }
    if ((rc = gs_operand_get_device(obj, op)) != 0)
        return rc < 0 ? -1 : 0;
    arr = PyArray_ContiguousFromAny(obj, typenum, 1, 1);
    if (arr == NULL)
        return -1;
    rc = gs_operand_get(arr, op);
    Py_DECREF(arr);
    return rc;
}

/* minlength: an int >= 0 (NumPy's TypeError for None, ValueError for a negative one). */
static int parse_minlength(PyObject *mlen, npy_intp *minlength)
{
    *minlength = 0;
    if (mlen == NULL)
        return 0;
    if (mlen == Py_None) {
        PyErr_SetString(PyExc_TypeError, "use 0 instead of None for minlength");
        return -1;
    }
    *minlength = PyArray_PyIntAsIntp(mlen);
    if (*minlength == -1 && PyErr_Occurred())
        return -1;
    if (*minlength < 0) {
        PyErr_SetString(PyExc_ValueError, "'minlength' must not be negative");
        return -1;
    }
    return 0;
}

/* bincount's weights: one float64 per value of x, on the same side as x. */
static int bincount_weights(PyObject *weights, hist_input *w, const hist_input *in, int64_t n)
{
    int64_t wn = 0;

    if (bincount_operand(weights, NPY_DOUBLE, &w->op) < 0 ||
        bincount_check(weights, &w->op, NPY_DOUBLE, &w->type, &wn) < 0)
        return -1;
    if (wn != n) {
        PyErr_SetString(PyExc_ValueError, "The weights and list don't have the same length.");
        return -1;
    }
    if (w->op.on_device != in->op.on_device) {
        PyErr_SetString(PyExc_TypeError,
                        "bincount: x and weights must both be device arrays or both not");
        return -1;
    }
    w->type = GS_FLOAT64; /* NumPy sums the weights as float64 */
    return 0;
}

/* The number of bins: max(x) + 1 (at least minlength), found with the check for negative
 * values by the backend's reduction of x (placed where it reads it, or streamed). */
static int bincount_bins(const gs_backend_ops *be, hist_input *in, npy_intp minlength, gs_bag *bag,
                         int64_t *nbins)
{
    int64_t v[2];
    uint64_t bits[2];
    gs_view v_in = input_view(in);

    if (streamed(be, in)
            ? gs_stream_min_max(be, &v_in, bits) < 0
            : input_place(in, be, bag) < 0 || gs_reduce_min_max(be, &in->placed, bits) < 0)
        return -1;
    for (int k = 0; k < 2; k++) {
        gs_hist_bound b;
        gs_hist_value_of_bits(in->type, bits[k], &b);
        v[k] = gs_dtype_read_kind(in->type) == 'i' ? b.i : (int64_t)b.u;
    }
    if (v[0] < 0 || v[1] < 0) { /* v[1] < 0: a uint64 from 2**63 up, negative as NumPy's intp */
        PyErr_SetString(PyExc_ValueError, "'list' argument must have no negative elements");
        return -1;
    }
    *nbins = v[1] + 1 > minlength ? v[1] + 1 : minlength;
    return 0;
}

/*
 * bincount in one pass.  The exact way reads x twice: its maximum (and the check for negative
 * values) first, for the number of bins, then the counts.  Instead the backend counts into a
 * guess of bins while it finds the largest key (gs_hist_desc.probe); when every value lay inside
 * the guess, the first max(x) + 1 counts (at least minlength) are the result.  Otherwise (a value
 * past the guess, or a negative one) the exact way runs.  The guess: the bins of the last
 * bincount (at least GS_BINCOUNT_GUESS, at least minlength); after one of more than
 * GS_BINCOUNT_GUESS_MAX bins, or with a minlength above it, the call goes the exact way (a guess
 * that large costs as much to zero and merge as it saves, and its counts would be a second
 * result-sized buffer).  Counts are exact integers: the result never depends on the
 * guess.  Under the GIL.
 */
#define GS_BINCOUNT_GUESS 1024
#define GS_BINCOUNT_GUESS_MAX 65536
static int64_t bincount_last_bins;

/* *ret = the counts, or NULL with no error when the guess was short (or the probe does not
 * apply: weights, a streamed input); -1 with an exception on failure. */
static int bincount_probe(const gs_backend_ops *be, hist_input *in, npy_intp minlength,
                          gs_hist_desc *d, gs_bag *bag, PyObject **ret)
{
    int64_t guess = bincount_last_bins > GS_BINCOUNT_GUESS ? bincount_last_bins : GS_BINCOUNT_GUESS;
    int64_t nbins, one = 1;
    uint64_t key = 0;
    gs_view counts, key_at, key_host, res;
    gs_fail f = { 0 };
    void *buf;
    int rc;

    *ret = NULL;
    if (d->weights != NULL || streamed(be, in) || bincount_last_bins > GS_BINCOUNT_GUESS_MAX ||
        minlength > GS_BINCOUNT_GUESS_MAX) /* a temporary as large as the result: not worth it */
        return 0;
    if (minlength > guess)
        guess = minlength;
    if (input_place(in, be, bag) < 0 ||
        gs_bag_alloc(bag, be->mem, (size_t)(guess + 1) * 8, &buf) < 0)
        return -1;
    d->in = in->placed.ptr;
    d->out = buf;
    d->nbins = guess;
    d->probe = 1;
    GS_BEGIN_UNLOCKED
        rc = be->hist(d, &f);
    GS_END_UNLOCKED
    d->probe = 0;
    if (rc < 0)
        return gs_raise(&f);

    /* The largest key to the host: every value in [0, guess) when it is below the guess. */
    memset(&counts, 0, sizeof(counts));
    counts.ndim = 1;
    counts.shape[0] = one;
    gs_view_contiguous(&key_at, &counts, (char *)buf + guess * 8, be->mem, GS_UINT64);
    gs_view_contiguous(&key_host, &counts, &key, GS_MEM_HOST, GS_UINT64);
    if (gs_move(&key_at, &key_host, bag) < 0 || PyErr_CheckSignals() < 0)
        return -1;
    if (key >= (uint64_t)guess)
        return 0;
    nbins = (int64_t)key + 1 > minlength ? (int64_t)key + 1 : minlength;
    bincount_last_bins = nbins;
    *ret = gs_result_new(in->op.on_device ? GS_MEM_DEVICE : GS_MEM_HOST, 1, &nbins, GS_INT64, &res);
    if (*ret == NULL)
        return -1;
    counts.shape[0] = nbins;
    gs_view_contiguous(&counts, &counts, buf, be->mem, GS_INT64);
    if (gs_move(&counts, &res, bag) < 0) {
        Py_CLEAR(*ret);
        return -1;
    }
    return 0;
}

PyObject *gs_bincount(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "", "weights", "minlength", NULL }; /* x positional-only */
    PyObject *x, *weights = Py_None, *mlen = NULL, *ret = NULL;
    gs_operand *used[2];
    const gs_backend_ops *be;
    hist_input in, w;
    gs_backend backend;
    gs_hist_desc d;
    npy_intp minlength;
    gs_bag bag = { 0 };
    int64_t n = 0;

    memset(&in, 0, sizeof(in));
    memset(&w, 0, sizeof(w));
    memset(&d, 0, sizeof(d));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:bincount", kwlist, &x, &weights, &mlen))
        return NULL;
    if (parse_minlength(mlen, &minlength) < 0 || gs_backend_get(&backend) < 0)
        return NULL;
    if (bincount_operand(x, NPY_INTP, &in.op) < 0 ||
        bincount_check(x, &in.op, NPY_INTP, &in.type, &n) < 0)
        goto done;
    be = gs_backend_for(backend, in.op.on_device);

    /* Empty input: minlength zeros, int64 whatever the weights (as NumPy). */
    if (n == 0) {
        npy_intp dims = minlength;
        PyObject *z = PyArray_ZEROS(1, &dims, NPY_INT64, 0);
        ret = z != NULL && in.op.on_device ? gs_to_device(NULL, z) : Py_XNewRef(z);
        Py_XDECREF(z);
        goto done;
    }
    if (weights != Py_None && bincount_weights(weights, &w, &in, n) < 0)
        goto done;
    d.n = n;
    d.in_type = in.type;
    d.weights = weights != Py_None ? &no_weights_yet : NULL;
    d.w_type = GS_FLOAT64;
    d.mode = GS_HIST_INDEX;
    d.edge_type = GS_INT64;
    d.method = GS_HIST_AUTO;
    if (bincount_probe(be, &in, minlength, &d, &bag, &ret) < 0)
        goto done;
    if (ret == NULL) { /* the exact way: the maximum first */
        if (bincount_bins(be, &in, minlength, &bag, &d.nbins) < 0)
            goto done;
        if (d.weights == NULL && !streamed(be, &in))
            bincount_last_bins = d.nbins;
        ret = hist_run(be, &d, &in, weights != Py_None ? &w : NULL, &bag);
    }
    used[0] = &in.op;
    used[1] = &w.op;
    if (gs_release_operands(used, 2) < 0)
        Py_CLEAR(ret);
done:
    gs_operand_release(&in.op);
    gs_operand_release(&w.op);
    gs_bag_free(&bag);
    (void)self;
    return ret;
}
