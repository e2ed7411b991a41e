/*
 * scan.c - gpuscan.scan(): argument settling and the host path.
 *
 * Level: host layer.  Everything about Python objects is settled here, before any data moves:
 * the operator, the accumulation dtype (NumPy's accumulate rules, dtype=, out=), the axis and
 * the shape of the result.  Then the data goes one of two ways:
 *   host path    (NumPy in, NumPy out): NumPy's C API makes a C-contiguous, aligned,
 *                native-order buffer with the scanned axis last (cast to the accumulation
 *                dtype when the backend cannot widen on the fly), the active backend scans it
 *                as rows, and the result is moved back and written to `out` if given;
 *   device path  (scan_device.c): an input or `out` in device memory.
 * The backend runs with the GIL released; Ctrl-C is honoured when it returns.
 */
#include "gpuscan.h"

#include <errno.h>

#include "cpu.h"

const char gs_scan_doc[] =
    "scan(a, op='add', *, exclusive=False, axis=None, dtype=None, out=None, "
    "algorithm='auto')\n"
    "--\n\n"
    "Inclusive or exclusive prefix scan, like ``np.cumsum`` generalised to any operator.\n\n"
    "Parameters\n"
    "----------\n"
    "a : array_like or device array\n"
    "    Input: NumPy arrays of any strides and byte order, lists, scalars, or arrays in CUDA\n"
    "    device memory (``__cuda_array_interface__``, ``__dlpack__``, ``DeviceArray``), which\n"
    "    are used in place.  ``a`` is never modified (except through ``out``).\n"
    "op : str or numpy.ufunc, optional\n"
    "    'add' (default), 'mul', 'min', 'max', 'and', 'or', 'xor', or the matching ufunc\n"
    "    (np.add, np.multiply, np.minimum, np.maximum, np.bitwise_and, np.bitwise_or,\n"
    "    np.bitwise_xor).\n"
    "exclusive : bool, optional\n"
    "    If True, element i combines the elements before i (the first is the identity:\n"
    "    0 for add/or/xor, 1 for mul, all ones for and, the dtype's largest value for min\n"
    "    and its smallest for max, +-inf for floats).\n"
    "axis : int or None, optional\n"
    "    None (default) scans the flattened array in C order and returns a 1-D result, as\n"
    "    np.cumsum; an integer scans each row along that axis and keeps the shape.\n"
    "dtype : dtype, optional\n"
    "    Accumulation and result dtype; the input is cast to it as NumPy does.  By default\n"
    "    add and mul take bool and integers narrower than 64 bits to int64 (unsigned to\n"
    "    uint64), and the other operators keep the input dtype.\n"
    "out : ndarray or device array, optional\n"
    "    Where to put the result (any strides; it may be ``a`` itself).  Its dtype is the\n"
    "    accumulation dtype unless ``dtype`` is given.  It is returned.\n"
    "algorithm : str, optional\n"
    "    'auto' (a single-pass scan with decoupled look-back on CUDA, multi-threaded on the\n"
    "    CPU); 'hillis_steele' and 'blelloch' are reserved for the teaching algorithms.\n\n"
    "Returns\n"
    "-------\n"
    "numpy.ndarray or DeviceArray\n"
    "    The scan: a NumPy array for host input, a DeviceArray for device input, or ``out``.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    Unknown op or algorithm, ``out`` of the wrong shape or read-only.\n"
    "TypeError\n"
    "    Unsupported dtype (complex, object, str, datetime, float16), a bitwise op on\n"
    "    floats, an ``out`` the input cannot be cast to under 'same_kind', or a device array\n"
    "    on the CPU backend.\n"
    "numpy.exceptions.AxisError\n"
    "    ``axis`` out of range.\n"
    "NotImplementedError\n"
    "    algorithm='hillis_steele' or 'blelloch' (not implemented yet).\n"
    "GpuscanError\n"
    "    A CUDA call failed (the message names it); MemoryError when device memory runs out.\n\n"
    "Examples\n"
    "--------\n"
    ">>> import numpy as np, gpuscan\n"
    ">>> gpuscan.scan(np.array([3, 1, 4, 1, 5]))\n"
    "array([ 3,  4,  8,  9, 14])\n"
    ">>> gpuscan.scan([3, 1, 4, 1, 5], 'max')\n"
    "array([3, 3, 4, 4, 5])\n"
    ">>> gpuscan.scan([3, 1, 4, 1, 5], exclusive=True)\n"
    "array([0, 3, 4, 8, 9])\n"
    ">>> gpuscan.scan(np.ones((2, 3), np.int8), axis=1)\n"
    "array([[1, 2, 3],\n"
    "       [1, 2, 3]])\n";

/* ---- helpers ------------------------------------------------------------------------------ */

static int ranges_overlap(const char *a, size_t na, const char *b, size_t nb)
{
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

/* TypeError unless NumPy casts `from` to `to` under the 'same_kind' rule. */
static int check_same_kind(gs_dtype from, gs_dtype to)
{
    PyArray_Descr *f = gs_descr(from), *t = gs_descr(to);
    int ok = f != NULL && t != NULL && PyArray_CanCastTypeTo(f, t, NPY_SAME_KIND_CASTING);

    Py_XDECREF(f);
    Py_XDECREF(t);
    if (ok)
        return 0;
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError,
                     "cannot cast the scan from %s to the out dtype %s with casting rule "
                     "'same_kind'",
                     gs_dtype_name(from), gs_dtype_name(to));
    return -1;
}

/* ValueError for an `out` whose shape (dev_shape, or host's) is not the result's. */
static void shape_error(const int64_t *dev_shape, PyArrayObject *host, int ond,
                        const int64_t *rshape, int rnd)
{
    PyObject *have = PyTuple_New(ond), *want = PyTuple_New(rnd);

    if (have == NULL || want == NULL)
        goto finally;
    for (int i = 0; i < ond; i++) {
        PyObject *d = PyLong_FromLongLong(dev_shape ? dev_shape[i] : PyArray_DIM(host, i));
        if (d == NULL)
            goto finally;
        PyTuple_SET_ITEM(have, i, d);
    }
    for (int i = 0; i < rnd; i++) {
        PyObject *d = PyLong_FromLongLong(rshape[i]);
        if (d == NULL)
            goto finally;
        PyTuple_SET_ITEM(want, i, d);
    }
    PyErr_Format(PyExc_ValueError, "out has shape %R but the result has shape %R", have, want);
finally:
    Py_XDECREF(have);
    Py_XDECREF(want);
}

/* Run one scan of host buffers on the active backend. */
static int run_backend(gs_backend backend, const gs_scan_desc *d)
{
    int rc;

#ifdef GS_HAVE_CUDA
    if (backend == GS_BACKEND_CUDA)
        return gs_cuda_scan_host(d);
#endif
    Py_BEGIN_ALLOW_THREADS rc = gs_cpu_scan(d);
    Py_END_ALLOW_THREADS if (rc == -ENOMEM)
    {
        PyErr_NoMemory();
        return -1;
    }
    if (rc < 0) {
        PyErr_Format(PyExc_RuntimeError, "the CPU backend failed: %s", strerror(-rc));
        return -1;
    }
    return PyErr_CheckSignals();
}

/* ---- host path ---------------------------------------------------------------------------- */

static PyObject *scan_host(const gs_scan_plan *plan, gs_backend backend, PyArrayObject *a,
                           PyArrayObject *out)
{
    int ndim = PyArray_NDIM(a);
    int axis = plan->axis;
    /* axis=None, 0-d and 1-d inputs are one scan over the C-order elements. */
    int flat = axis < 0 || ndim <= 1;
    int moved = !flat && axis != ndim - 1;
    npy_intp n = PyArray_SIZE(a);
    npy_intp perm_v[NPY_MAXDIMS], inv_v[NPY_MAXDIMS];
    PyArray_Dims perm = { perm_v, ndim }, inv = { inv_v, ndim };
    PyArrayObject *work = NULL, *src = NULL, *dst = NULL, *back = NULL;
    PyArray_Descr *descr;
    PyObject *ret = NULL;
    gs_dtype out_type;
    gs_scan_desc d;

    /* 1. The scan input: the scanned axis moved last, then C-contiguous, aligned, native byte
     *    order, of the dtype the backend reads (NumPy's unsafe cast, as for dtype=). */
    if (moved) {
        for (int i = 0, j = 0; i < ndim; i++)
            if (i != axis)
                perm_v[j++] = i;
        perm_v[ndim - 1] = axis;
        for (int i = 0; i < ndim; i++)
            inv_v[perm_v[i]] = i;
        work = (PyArrayObject *)PyArray_Transpose(a, &perm);
        if (work == NULL)
            goto finally;
    } else {
        Py_INCREF(a);
        work = a;
    }
    if ((descr = gs_descr(plan->scan_in_type)) == NULL)
        goto finally;
    src = (PyArrayObject *)PyArray_FromAny((PyObject *)work, descr, 0, 0,
                                           NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL);
    if (src == NULL)
        goto finally;

    /* 2. Where the backend writes: straight into `out` when it has the layout and dtype,
     *    else a new C-contiguous array. */
    if (out != NULL && !moved && PyArray_IS_C_CONTIGUOUS(out) && PyArray_ISALIGNED(out) &&
        PyArray_ISNOTSWAPPED(out) &&
        gs_dtype_from_kind(PyArray_DESCR(out)->kind, (int)PyArray_ITEMSIZE(out), &out_type) == 0 &&
        out_type == plan->acc_type) {
        Py_INCREF(out);
        dst = out;
        /* In place is fine element for element; any other overlap needs a private input. */
        if (ranges_overlap(PyArray_BYTES(src), PyArray_NBYTES(src), PyArray_BYTES(out),
                           PyArray_NBYTES(out)) &&
            !(PyArray_DATA(src) == PyArray_DATA(out) && plan->scan_in_type == plan->acc_type)) {
            Py_SETREF(src, (PyArrayObject *)PyArray_NewCopy(src, NPY_CORDER));
            if (src == NULL)
                goto finally;
        }
    } else {
        if ((descr = gs_descr(plan->acc_type)) == NULL)
            goto finally;
        dst = (PyArrayObject *)(flat ? PyArray_Empty(1, &n, descr, 0)
                                     : PyArray_Empty(ndim, PyArray_DIMS(src), descr, 0));
        if (dst == NULL)
            goto finally;
    }

    /* 3. The scan: one, or one per row of the last axis. */
    if (n > 0) {
        memset(&d, 0, sizeof(d));
        d.in = PyArray_DATA(src);
        d.out = PyArray_DATA(dst);
        d.n = n;
        d.row_len = flat ? 0 : PyArray_DIM(src, ndim - 1);
        d.in_type = plan->scan_in_type;
        d.out_type = plan->acc_type;
        d.flag_type = GS_BOOL;
        d.op = plan->op;
        d.exclusive = plan->exclusive;
        if (run_backend(backend, &d) < 0)
            goto finally;
    }

    /* 4. The axis back in its place; into `out` (NumPy casts and strides) or C order. */
    if (dst == out) {
        Py_INCREF(out);
        ret = (PyObject *)out;
        goto finally;
    }
    if (moved)
        back = (PyArrayObject *)PyArray_Transpose(dst, &inv);
    else {
        Py_INCREF(dst);
        back = dst;
    }
    if (back == NULL)
        goto finally;
    if (out != NULL) {
        if (PyArray_CopyInto(out, back) < 0)
            goto finally;
        Py_INCREF(out);
        ret = (PyObject *)out;
    } else if (moved) {
        ret = PyArray_NewCopy(back, NPY_CORDER);
    } else {
        Py_INCREF(back);
        ret = (PyObject *)back;
    }
finally:
    Py_XDECREF(work);
    Py_XDECREF(src);
    Py_XDECREF(dst);
    Py_XDECREF(back);
    return ret;
}

/* ---- scan() ------------------------------------------------------------------------------- */

PyObject *gs_scan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "op", "exclusive", "axis", "dtype", "out", "algorithm", NULL };
    PyObject *a, *op_obj = NULL, *axis_obj = Py_None, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    const char *algorithm = "auto";
    int exclusive = 0, ndim, rnd, is_dev;
    int64_t shape[GS_MAX_NDIM], rshape[GS_MAX_NDIM], n = 1;
    gs_operand in, out;
    gs_scan_plan plan;
    gs_algorithm algo;
    gs_backend backend;
    gs_dtype out_type;

    memset(&in, 0, sizeof(in));
    memset(&out, 0, sizeof(out));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$pOO&Os:scan", kwlist, &a, &op_obj,
                                     &exclusive, &axis_obj, PyArray_DescrConverter2, &dtype,
                                     &out_obj, &algorithm))
        return NULL;

    /* Names and the backend first: they fail the same way whatever the data. */
    plan.op = GS_OP_ADD;
    plan.exclusive = exclusive;
    if (op_obj != NULL && gs_parse_op(op_obj, &plan.op) < 0)
        goto finally;
    if (gs_parse_algorithm(algorithm, &algo) < 0)
        goto finally;
    if (gs_backend_get(&backend) < 0)
        goto finally;

    /* The operands. */
    if (gs_operand_get(a, &in) < 0)
        goto finally;
    if (out_obj != Py_None) {
        if (!PyArray_Check(out_obj)) {
            if ((is_dev = gs_is_device_object(out_obj)) < 0)
                goto finally;
            if (!is_dev) {
                PyErr_Format(PyExc_TypeError,
                             "out must be a NumPy array or a device array, not %.100s",
                             Py_TYPE(out_obj)->tp_name);
                goto finally;
            }
        }
        if (gs_operand_get(out_obj, &out) < 0)
            goto finally;
    }

    /* The input's dtype and shape. */
    if (in.on_device) {
        plan.in_type = in.dev.dtype;
        ndim = in.dev.ndim;
        for (int i = 0; i < ndim; i++)
            shape[i] = in.dev.shape[i];
    } else {
        if (gs_dtype_from_descr(PyArray_DESCR(in.host), "input", &plan.in_type) < 0)
            goto finally;
        ndim = PyArray_NDIM(in.host);
        if (ndim > GS_MAX_NDIM) {
            PyErr_Format(PyExc_ValueError, "arrays may have at most %d dimensions", GS_MAX_NDIM);
            goto finally;
        }
        for (int i = 0; i < ndim; i++)
            shape[i] = PyArray_DIM(in.host, i);
    }
    for (int i = 0; i < ndim; i++)
        n *= shape[i];

    /* The axis and the result's shape: 1-D for axis=None and for 0-d input (as np.cumsum). */
    plan.axis = -1;
    if (axis_obj != Py_None && gs_normalize_axis(axis_obj, ndim > 0 ? ndim : 1, &plan.axis) < 0)
        goto finally;
    if (plan.axis < 0 || ndim == 0) {
        rnd = 1;
        rshape[0] = n;
    } else {
        rnd = ndim;
        memcpy(rshape, shape, sizeof(int64_t) * (size_t)ndim);
    }

    /* The accumulation dtype: dtype=, else out's, else NumPy's accumulate rule. */
    if (dtype != NULL && gs_dtype_from_descr(dtype, "dtype", &plan.acc_type) < 0)
        goto finally;
    if (out_obj != Py_None) {
        int ond = out.on_device ? out.dev.ndim : PyArray_NDIM(out.host);
        int same = ond == rnd;

        if (out.on_device)
            out_type = out.dev.dtype;
        else if (gs_dtype_from_descr(PyArray_DESCR(out.host), "out", &out_type) < 0)
            goto finally;
        for (int i = 0; same && i < rnd; i++)
            same = rshape[i] == (out.on_device ? out.dev.shape[i] : PyArray_DIM(out.host, i));
        if (!same) {
            shape_error(out.on_device ? out.dev.shape : NULL, out.host, ond, rshape, rnd);
            goto finally;
        }
        if (out.readonly) {
            PyErr_SetString(PyExc_ValueError, "output array is read-only");
            goto finally;
        }
        if (dtype == NULL)
            plan.acc_type = out_type;
        if (check_same_kind(dtype == NULL ? plan.in_type : plan.acc_type, out_type) < 0)
            goto finally;
    } else if (dtype == NULL) {
        plan.acc_type = gs_default_acc_type(plan.in_type, plan.op);
    }
    if (gs_check_op_dtype(plan.op, plan.acc_type) < 0)
        goto finally;
    plan.scan_in_type =
        gs_scan_pair_direct(plan.in_type, plan.acc_type, plan.op) ? plan.in_type : plan.acc_type;

    if (in.on_device || out.on_device) {
#ifdef GS_HAVE_CUDA
        ret = gs_scan_device(&plan, &in, &out, out_obj);
#else
        PyErr_SetString(PyExc_SystemError, "gpuscan: device array in a CPU-only build");
#endif
    } else {
        ret = scan_host(&plan, backend, in.host, out.host);
    }
finally:
    gs_operand_release(&in);
    gs_operand_release(&out);
    Py_XDECREF(dtype);
    return ret;
}
