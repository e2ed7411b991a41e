/*
 * ops/split.c - gpuscan.split() and gpuscan.compact(): argument settling, the CPU path and the
 * device path.
 *
 * Level: host layer.  Both take `a` and `flags` of the same shape (any supported dtypes), read
 * in C order, and move a's values as bits (every dtype, NaN payloads kept):
 *   CPU path     (CPU backend, NumPy in): NumPy's C API makes both C-contiguous, aligned and
 *                native-order (flags at their own width), gs_cpu_split runs with the GIL
 *                released into a new NumPy array;
 *   device path  (CUDA backend): device operands are used in place (copied only when not
 *                contiguous), NumPy ones uploaded; the count pass runs, a compact downloads the
 *                flagged count to size its output exactly, the scatter pass writes a new
 *                DeviceArray (device input) or a pool buffer downloaded into a new NumPy array
 *                (NumPy input).  split's count is downloaded at the end: one host sync.
 * Every pool buffer goes back on every path; Ctrl-C is honoured when the work returns.
 */
#include "gpuscan.h"

#include "cpu/cpu.h"
#include "gpuscan/config.h"

const char gs_split_doc[] =
    "split(a, flags)\n"
    "--\n\n"
    "Stable partition: the elements whose flag is nonzero first, then the others.\n\n"
    "Each group keeps its original order.  ``a`` and ``flags`` have the same shape and are\n"
    "read together in C order; the result is 1-D.  Values are moved bit for bit (NaN\n"
    "payloads included).\n\n"
    "Parameters\n"
    "----------\n"
    "a : array_like or device array\n"
    "    Values of any supported dtype (bool, integers, float32, float64): NumPy arrays of any\n"
    "    strides and byte order, lists, scalars, or arrays in CUDA device memory\n"
    "    (``__cuda_array_interface__``, ``__dlpack__``, ``DeviceArray``), used in place.\n"
    "flags : array_like or device array\n"
    "    ``a``'s shape, any supported dtype, read at its own width: an element is flagged when\n"
    "    its flag is nonzero (for floats -0.0 is not flagged and NaN is).\n\n"
    "Returns\n"
    "-------\n"
    "out : numpy.ndarray or DeviceArray\n"
    "    ``a.size`` values of ``a``'s dtype: ``np.concatenate([a[f], a[~f]])`` with\n"
    "    ``f = flags.ravel() != 0``.  A DeviceArray when ``a`` or ``flags`` is a device array.\n"
    "count : int\n"
    "    The number of flagged elements (a Python int; for device input, reading it waits for\n"
    "    the split to finish).\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    ``a`` and ``flags`` of different shapes.\n"
    "TypeError\n"
    "    Unsupported dtype of ``a`` or ``flags`` (complex, object, str, datetime, float16), or\n"
    "    a device array on the CPU backend.\n"
    "GpuscanError\n"
    "    A CUDA call failed (the message names it); MemoryError when device memory runs out.\n\n"
    "See Also\n"
    "--------\n"
    "compact : the flagged elements only.\n\n"
    "Examples\n"
    "--------\n"
    ">>> import numpy as np, gpuscan\n"
    ">>> out, count = gpuscan.split([5, 7, 3, 1, 4, 2, 7, 2], [1, 1, 0, 1, 0, 0, 1, 0])\n"
    ">>> out, count\n"
    "(array([5, 7, 1, 7, 3, 4, 2, 2]), 4)\n";

const char gs_compact_doc[] =
    "compact(a, flags)\n"
    "--\n\n"
    "The elements whose flag is nonzero, in order: ``a[flags != 0]`` flattened.\n\n"
    "Parameters\n"
    "----------\n"
    "a : array_like or device array\n"
    "    Values of any supported dtype, host or device (as for :func:`split`).\n"
    "flags : array_like or device array\n"
    "    ``a``'s shape, any supported dtype, read at its own width: nonzero is flagged (for\n"
    "    floats -0.0 is not flagged and NaN is).\n\n"
    "Returns\n"
    "-------\n"
    "numpy.ndarray or DeviceArray\n"
    "    The flagged values, 1-D, of ``a``'s dtype, moved bit for bit.  A DeviceArray when\n"
    "    ``a`` or ``flags`` is a device array: its length is the flagged count, downloaded\n"
    "    from the device between the two passes (one small host sync).\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    ``a`` and ``flags`` of different shapes.\n"
    "TypeError\n"
    "    Unsupported dtype of ``a`` or ``flags``, or a device array on the CPU backend.\n"
    "GpuscanError\n"
    "    A CUDA call failed (the message names it); MemoryError when device memory runs out.\n\n"
    "See Also\n"
    "--------\n"
    "split : the flagged elements, then the others.\n\n"
    "Examples\n"
    "--------\n"
    ">>> import numpy as np, gpuscan\n"
    ">>> gpuscan.compact(np.array([1.5, -2.0, 3.0, 0.5]), np.array([True, False, True, True]))\n"
    "array([1.5, 3. , 0.5])\n";

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

/* ---- CPU path ----------------------------------------------------------------------------- */

/* gs_cpu_split with the GIL released; its failures as Python exceptions. */
static int run_cpu(const gs_split_desc *d, int64_t *count)
{
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = gs_cpu_split(d, count);
    Py_END_ALLOW_THREADS return gs_cpu_status(rc);
}

static PyObject *split_cpu(const split_call *c)
{
    PyArrayObject *src = NULL, *heads = NULL, *res = NULL;
    PyArray_Descr *descr;
    PyObject *ret = NULL;
    npy_intp len;
    int64_t count = 0;
    gs_split_desc d;

    /* 1. Both C-contiguous, aligned, native order, each in its own dtype. */
    if ((descr = gs_descr(c->in_type)) == NULL)
        goto finally;
    src = (PyArrayObject *)PyArray_FromAny((PyObject *)c->in.host, descr, 0, 0, NPY_ARRAY_CARRAY_RO,
                                           NULL);
    if (src == NULL || (descr = gs_descr(c->flag_type)) == NULL)
        goto finally;
    heads = (PyArrayObject *)PyArray_FromAny((PyObject *)c->flags.host, descr, 0, 0,
                                             NPY_ARRAY_CARRAY_RO, NULL);
    if (heads == NULL)
        goto finally;

    /* 2. A compact counts first, to size its result. */
    memset(&d, 0, sizeof(d));
    d.in = PyArray_DATA(src);
    d.flags = PyArray_DATA(heads);
    d.n = c->n;
    d.in_type = c->in_type;
    d.flag_type = c->flag_type;
    d.compact = c->compact;
    if (c->compact && run_cpu(&d, &count) < 0)
        goto finally;

    /* 3. The result, and the move into it. */
    len = (npy_intp)(c->compact ? count : c->n);
    if ((descr = gs_descr(c->in_type)) == NULL)
        goto finally;
    res = (PyArrayObject *)PyArray_Empty(1, &len, descr, 0);
    if (res == NULL)
        goto finally;
    d.out = PyArray_DATA(res);
    if (run_cpu(&d, &count) < 0)
        goto finally;
    ret = split_result((PyObject *)res, count, c->compact);
    res = NULL;
finally:
    Py_XDECREF(src);
    Py_XDECREF(heads);
    Py_XDECREF(res);
    return ret;
}

/* ---- device path -------------------------------------------------------------------------- */

#ifdef GS_HAVE_CUDA
/* A device operand as a contiguous 1-D view, or a NumPy one uploaded as such; the pool buffers
 * it takes go to *up and *flat (the caller frees them). */
static int device_flat(gs_operand *op, gs_dtype dtype, gs_devview *v, void **up, void **flat)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    if (op->on_device)
        *v = op->dev;
    else if (gs_devview_upload(op->host, dtype, v, up) < 0)
        return -1;
    if (gs_devview_flatten(v, 1, flat, &fail) != cudaSuccess)
        return gs_cuda_raise(&fail);
    return 0;
}

static PyObject *split_device(split_call *c)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_devview src, heads;
    void *up_in = NULL, *flat_in = NULL, *up_flags = NULL, *flat_flags = NULL;
    void *scratch = NULL, *tmp_out = NULL;
    size_t scratch_bytes = gs_split_scratch_bytes(c->n);
    const size_t size = gs_dtype_size(c->in_type);
    const int host_result = !c->in.on_device && !c->flags.on_device;
    unsigned long long total = 0;
    gs_DeviceArray *dev_res = NULL;
    PyArrayObject *host_res = NULL;
    PyArray_Descr *descr;
    PyObject *ret = NULL;
    int64_t len;
    gs_split_desc d;

    GS_CUDA_CHECK(fail, gs_cuda_enter());

    /* 1. Both operands contiguous on the device, each in its own dtype. */
    if (device_flat(&c->in, c->in_type, &src, &up_in, &flat_in) < 0 ||
        device_flat(&c->flags, c->flag_type, &heads, &up_flags, &flat_flags) < 0)
        goto error;

    /* 2. The count pass; a compact learns its length from it. */
    memset(&d, 0, sizeof(d));
    d.in = src.ptr;
    d.flags = heads.ptr;
    d.n = c->n;
    d.in_type = c->in_type;
    d.flag_type = c->flag_type;
    d.compact = c->compact;
    GS_CUDA_ALLOC(fail, scratch, scratch_bytes);
    GS_CUDA_CHECK(fail, gs_cuda_split_count(&d, scratch, scratch_bytes, gs_cuda_stream));
    if (c->compact && c->n > 0 && gs_cuda_download(&total, scratch, sizeof(total)) < 0)
        goto error;

    /* 3. The result: a new DeviceArray, or a pool buffer for a new NumPy array. */
    len = c->compact ? (int64_t)total : c->n;
    if (host_result) {
        npy_intp dim = (npy_intp)len;
        if ((descr = gs_descr(c->in_type)) == NULL)
            goto error;
        host_res = (PyArrayObject *)PyArray_Empty(1, &dim, descr, 0);
        if (host_res == NULL)
            goto error;
        GS_CUDA_ALLOC(fail, tmp_out, (size_t)len * size);
        d.out = tmp_out;
    } else {
        dev_res = gs_devarray_new(1, &len, c->in_type);
        if (dev_res == NULL)
            goto error;
        d.out = dev_res->data;
    }

    /* 4. The scatter pass; split's count and a host result come back. */
    GS_CUDA_CHECK(fail, gs_cuda_split_scatter(&d, scratch, scratch_bytes, gs_cuda_stream));
    if (!c->compact && c->n > 0 && gs_cuda_download(&total, scratch, sizeof(total)) < 0)
        goto error;
    if (host_result && gs_cuda_download(PyArray_DATA(host_res), tmp_out, (size_t)len * size) < 0)
        goto error;
    if (gs_cuda_release_foreign(&c->in) < 0 || gs_cuda_release_foreign(&c->flags) < 0 ||
        PyErr_CheckSignals() < 0)
        goto error;
    if (host_result) {
        ret = split_result((PyObject *)host_res, (int64_t)total, c->compact);
        host_res = NULL;
    } else {
        ret = split_result((PyObject *)dev_res, (int64_t)total, c->compact);
        dev_res = NULL;
    }
error:
    if (fail.err != cudaSuccess)
        gs_cuda_raise(&fail);
    gs_cuda_free(tmp_out);
    gs_cuda_free(scratch);
    gs_cuda_free(flat_flags);
    gs_cuda_free(up_flags);
    gs_cuda_free(flat_in);
    gs_cuda_free(up_in);
    Py_XDECREF(dev_res);
    Py_XDECREF(host_res);
    return ret;
}
#endif /* GS_HAVE_CUDA */

/* ---- split(), compact() ------------------------------------------------------------------- */

static PyObject *split_call_run(PyObject *args, PyObject *kwargs, int compact)
{
    static char *kwlist[] = { "a", "flags", NULL };
    PyObject *a, *flags_obj, *ret = NULL;
    int64_t shape[GS_MAX_NDIM], fshape[GS_MAX_NDIM];
    int ndim, fnd, same;
    split_call c;

    memset(&c, 0, sizeof(c));
    c.compact = compact;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, compact ? "OO:compact" : "OO:split", kwlist, &a,
                                     &flags_obj))
        return NULL;
    if (gs_backend_get(&c.backend) < 0 || gs_operand_get(a, &c.in) < 0 ||
        gs_operand_get(flags_obj, &c.flags) < 0 ||
        gs_operand_info(&c.in, "input", &c.in_type, &ndim, shape) < 0 ||
        gs_operand_info(&c.flags, "flags", &c.flag_type, &fnd, fshape) < 0)
        goto finally;

    /* Exactly a's shape (no broadcasting); both flattened in C order. */
    same = fnd == ndim;
    for (int i = 0; same && i < fnd; i++)
        same = fshape[i] == shape[i];
    if (!same) {
        gs_shape_error("flags", fnd, fshape, "a", ndim, shape);
        goto finally;
    }
    c.n = 1;
    for (int i = 0; i < ndim; i++)
        c.n *= shape[i];

#ifdef GS_HAVE_CUDA
    if (c.backend == GS_BACKEND_CUDA) {
        ret = split_device(&c);
        goto finally;
    }
#endif
    if (c.in.on_device || c.flags.on_device) {
        PyErr_SetString(PyExc_SystemError, "gpuscan: device array on the CPU backend");
        goto finally;
    }
    ret = split_cpu(&c);
finally:
    gs_operand_release(&c.in);
    gs_operand_release(&c.flags);
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
