/*
 * ops/scan.c - gpuscan.scan() and gpuscan.segmented_scan(): argument settling and the host path.
 *
 * Level: host layer.  Everything about Python objects is settled here, before any data moves,
 * by code the two functions share: the operator, the accumulation dtype (NumPy's accumulate
 * rules, dtype=, out=), the axis (scan) or the flags (segmented_scan, same shape as the input)
 * and the shape of the result.  Then the data goes one of two ways:
 *   host path    (NumPy in, NumPy out): NumPy's C API makes a C-contiguous, aligned,
 *                native-order buffer with the scanned axis last (cast to the accumulation
 *                dtype when the backend cannot widen on the fly), and the flags likewise at
 *                their own width, the active backend scans it as rows (or as one flagged
 *                sequence), and the result is moved back and written to `out` if given; the
 *                CPU backend scans another axis in place instead (ops/axis_layout.h), with no
 *                transposed copy either way;
 *   device path  (ops/scan_device.c): an input, flags or `out` in device memory.
 * The backend runs with the GIL released; Ctrl-C is honoured when it returns.
 */
#include "gpuscan.h"
#include "ops/axis_layout.h"

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
    "    CPU, the fastest), or a teaching algorithm, run as the textbook runs it on either\n"
    "    backend: 'hillis_steele' (ceil(log2 n) steps, one kernel launch each, step d\n"
    "    making next[i] = prev[i - 2**d] op prev[i] between two buffers that swap roles; an\n"
    "    exclusive scan reads the input shifted right by one with the identity in front) or\n"
    "    'blelloch' (the work-efficient up-sweep / down-sweep, a tile per CUDA block in\n"
    "    shared memory, the tiles' totals scanned recursively and added back).  All give the\n"
    "    same integers; float sums differ from 'auto' in the last bits (other trees) and stay\n"
    "    within the same bound: an output goes through at most ceil(log2 n) roundings\n"
    "    (Hillis-Steele) or 2*ceil(log2 n) + 2 (Blelloch), each of at most eps/2 of a partial\n"
    "    sum of |x|.  An exclusive float add starts with +0.0.  See gpuscan.trace for the\n"
    "    steps.\n\n"
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

const char gs_segmented_scan_doc[] =
    "segmented_scan(a, flags, op='add', *, exclusive=False, dtype=None, out=None, "
    "algorithm='auto')\n"
    "--\n\n"
    "Scan each segment of ``a`` independently; ``flags`` marks where segments start.\n\n"
    "``a`` and ``flags`` are read together in C order: a nonzero flag marks the first element\n"
    "of a segment, and element 0 always starts one.  Within a segment the result is the\n"
    "inclusive (or exclusive) scan of that segment alone, as :func:`scan` would give it.\n\n"
    "Parameters\n"
    "----------\n"
    "a : array_like or device array\n"
    "    Input values: NumPy arrays of any strides and byte order, lists, scalars, or arrays\n"
    "    in CUDA device memory, used in place.  ``a`` is never modified (except through\n"
    "    ``out``).\n"
    "flags : array_like or device array\n"
    "    Segment heads, the same shape as ``a``, of any supported dtype (bool, integers,\n"
    "    floats): an element is a head when its flag is nonzero (for floats -0.0 is not a\n"
    "    head and NaN is).  Flags are read at their own width (a bool flag costs one byte).\n"
    "op : str or numpy.ufunc, optional\n"
    "    'add' (default), 'mul', 'min', 'max', 'and', 'or', 'xor', or the matching ufunc.\n"
    "exclusive : bool, optional\n"
    "    If True, element i combines the elements of its segment before i; a segment's first\n"
    "    element is the identity (0 for add/or/xor, 1 for mul, all ones for and, the dtype's\n"
    "    largest value for min and its smallest for max, +-inf for floats).\n"
    "dtype : dtype, optional\n"
    "    Accumulation and result dtype, as for :func:`scan`: by default add and mul take bool\n"
    "    and integers narrower than 64 bits to int64 (unsigned to uint64).\n"
    "out : ndarray or device array, optional\n"
    "    Where to put the result: ``a``'s shape, any strides; it may be ``a`` itself.  Its\n"
    "    dtype is the accumulation dtype unless ``dtype`` is given.  It is returned.\n"
    "algorithm : str, optional\n"
    "    'auto' (the single-pass scan with segment heads carried through its look-back,\n"
    "    the fastest) or 'blelloch' (the flagged up-sweep / down-sweep of the textbook: the\n"
    "    right child is reset to the identity where the original flag right after the left\n"
    "    child is set; a tile per CUDA block, tiles' totals scanned recursively with their\n"
    "    heads).  Both give the same integers.\n\n"
    "Returns\n"
    "-------\n"
    "numpy.ndarray or DeviceArray\n"
    "    The segmented scan, of ``a``'s shape: a NumPy array for host input, a DeviceArray\n"
    "    when ``a`` or ``flags`` is a device array, or ``out``.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    ``a`` and ``flags`` of different shapes; unknown op or algorithm; ``out`` of the\n"
    "    wrong shape or read-only.\n"
    "TypeError\n"
    "    Unsupported dtype of ``a`` or ``flags``, a bitwise op on floats, an ``out`` the\n"
    "    input cannot be cast to under 'same_kind', or a device array on the CPU backend.\n"

    "GpuscanError\n"
    "    A CUDA call failed (the message names it); MemoryError when device memory runs out.\n\n"
    "See Also\n"
    "--------\n"
    "scan : the same without segments.\n\n"
    "Examples\n"
    "--------\n"
    ">>> import numpy as np, gpuscan\n"
    ">>> flags = np.array([1, 0, 0, 1, 0, 0, 1, 0], dtype=bool)\n"
    ">>> a = np.array([4, 2, 1, 3, 0, 2, 1, 5])\n"
    ">>> gpuscan.segmented_scan(a, flags)\n"
    "array([4, 6, 7, 3, 3, 5, 1, 6])\n"
    ">>> gpuscan.segmented_scan(a, flags, exclusive=True)\n"
    "array([0, 4, 6, 0, 3, 3, 0, 1])\n"
    ">>> gpuscan.segmented_scan(a, flags, 'max')\n"
    "array([4, 4, 4, 3, 3, 3, 1, 5])\n";

/* ---- helpers ------------------------------------------------------------------------------ */

static int ranges_overlap(const char *a, size_t na, const char *b, size_t nb)
{
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

static int arrays_overlap(PyArrayObject *a, PyArrayObject *b)
{
    return ranges_overlap(PyArray_BYTES(a), (size_t)PyArray_NBYTES(a), PyArray_BYTES(b),
                          (size_t)PyArray_NBYTES(b));
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

/* ---- host path ---------------------------------------------------------------------------- */

/* The scan of NumPy arrays: `a` along plan->axis (or flattened), or flagged by `flags` (a's
 * shape, any dtype, scanned flattened), into `out` or a new array of shape rshape. */
static PyObject *scan_host(const gs_scan_plan *plan, gs_backend backend, PyArrayObject *a,
                           PyArrayObject *flags, PyArrayObject *out, int rnd, const int64_t *rshape)
{
    int ndim = PyArray_NDIM(a);
    int axis = plan->axis;
    /* axis=None, 0-d and 1-d inputs and segmented scans are one scan over the C-order
     * elements.  The CPU backend scans another axis than the last in place (rows x row_len x
     * inner, ops/axis_layout.h); CUDA and the teaching algorithms get it moved last. */
    int flat = axis < 0 || ndim <= 1;
    int64_t inner = 1;
    if (!flat && axis != ndim - 1 && backend == GS_BACKEND_CPU && plan->algorithm == GS_ALGO_AUTO) {
        int64_t shape[NPY_MAXDIMS];
        unsigned char picked[NPY_MAXDIMS] = { 0 };
        for (int i = 0; i < ndim; i++)
            shape[i] = PyArray_DIM(a, i);
        picked[axis] = 1;
        inner = gs_axis_inner(ndim, shape, picked);
    }
    int moved = !flat && axis != ndim - 1 && inner <= 1;
    npy_intp n = PyArray_SIZE(a);
    npy_intp perm_v[NPY_MAXDIMS], inv_v[NPY_MAXDIMS], rdims[NPY_MAXDIMS];
    PyArray_Dims perm = { perm_v, ndim }, inv = { inv_v, ndim };
    PyArrayObject *work = NULL, *src = NULL, *heads = NULL, *dst = NULL, *back = NULL;
    PyArray_Descr *descr;
    PyObject *ret = NULL;
    gs_dtype out_type, flag_type = GS_BOOL;
    gs_scan_desc d;

    /* 1. The scan input: the scanned axis moved last, then C-contiguous, aligned, native byte
     *    order, of the dtype the backend reads (NumPy's unsafe cast, as for dtype=).  Flags
     *    likewise, in their own dtype. */
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
    if (flags != NULL) {
        if (gs_dtype_from_descr(PyArray_DESCR(flags), "flags", &flag_type) < 0 ||
            (descr = gs_descr(flag_type)) == NULL)
            goto finally;
        heads = (PyArrayObject *)PyArray_FromAny((PyObject *)flags, descr, 0, 0,
                                                 NPY_ARRAY_CARRAY_RO, NULL);
        if (heads == NULL)
            goto finally;
    }

    /* 2. Where the backend writes: straight into `out` when it has the layout and dtype,
     *    else a new C-contiguous array. */
    if (out != NULL && !moved && PyArray_IS_C_CONTIGUOUS(out) && PyArray_ISALIGNED(out) &&
        PyArray_ISNOTSWAPPED(out) &&
        gs_dtype_from_kind(PyArray_DESCR(out)->kind, (int)PyArray_ITEMSIZE(out), &out_type) == 0 &&
        out_type == plan->acc_type) {
        Py_INCREF(out);
        dst = out;
        /* In place is fine element for element; any other overlap needs a private input.  The
         * flags are read ahead of the writes: any overlap with `out` needs a private copy. */
        if (arrays_overlap(src, out) &&
            !(PyArray_DATA(src) == PyArray_DATA(out) && plan->scan_in_type == plan->acc_type)) {
            Py_SETREF(src, (PyArrayObject *)PyArray_NewCopy(src, NPY_CORDER));
            if (src == NULL)
                goto finally;
        }
        if (heads != NULL && arrays_overlap(heads, out)) {
            Py_SETREF(heads, (PyArrayObject *)PyArray_NewCopy(heads, NPY_CORDER));
            if (heads == NULL)
                goto finally;
        }
    } else {
        if ((descr = gs_descr(plan->acc_type)) == NULL)
            goto finally;
        for (int i = 0; i < rnd; i++)
            rdims[i] = (npy_intp)rshape[i];
        dst = (PyArrayObject *)(flat ? PyArray_Empty(rnd, rdims, descr, 0)
                                     : PyArray_Empty(ndim, PyArray_DIMS(src), descr, 0));
        if (dst == NULL)
            goto finally;
    }

    /* 3. The scan: one (flagged or not), or one per row of the last axis. */
    if (n > 0) {
        memset(&d, 0, sizeof(d));
        d.in = PyArray_DATA(src);
        d.out = PyArray_DATA(dst);
        d.flags = heads != NULL ? PyArray_DATA(heads) : NULL;
        d.n = n;
        d.row_len = flat ? 0 : PyArray_DIM(src, inner > 1 ? axis : ndim - 1);
        d.inner = inner;
        d.in_type = plan->scan_in_type;
        d.out_type = plan->acc_type;
        d.flag_type = flag_type;
        d.op = plan->op;
        d.exclusive = plan->exclusive;
        d.algorithm = plan->algorithm;
        if (gs_run_host(backend, &d, NULL) < 0)
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
    Py_XDECREF(heads);
    Py_XDECREF(dst);
    Py_XDECREF(back);
    return ret;
}

/* ---- settling, shared by scan() and segmented_scan() ---------------------------------------- */

/* One scan-like call as it is settled step by step; zero it first, scan_call_release it last. */
typedef struct scan_call {
    gs_scan_plan plan;
    gs_backend backend;
    gs_operand in, flags, out; /* flags, out: zeroed when not given */
    int ndim;                  /* the input's dimensions and shape */
    int64_t shape[GS_MAX_NDIM];
    int64_t n;
} scan_call;

static void scan_call_release(scan_call *c)
{
    gs_operand_release(&c->in);
    gs_operand_release(&c->flags);
    gs_operand_release(&c->out);
}

/* The operator, the backend, the input and `out` operands, and the input's dtype and shape. */
static int scan_begin(scan_call *c, PyObject *a, PyObject *op_obj, int exclusive, PyObject *out_obj)
{
    int is_dev;

    /* Names and the backend first: they fail the same way whatever the data. */
    c->plan.op = GS_OP_ADD;
    c->plan.exclusive = exclusive;
    c->plan.axis = -1;
    if (op_obj != NULL && gs_parse_op(op_obj, &c->plan.op) < 0)
        return -1;
    if (gs_backend_get(&c->backend) < 0)
        return -1;
    if (gs_operand_get(a, &c->in) < 0)
        return -1;
    if (out_obj != Py_None) {
        if (!PyArray_Check(out_obj)) {
            if ((is_dev = gs_is_device_object(out_obj)) < 0)
                return -1;
            if (!is_dev) {
                PyErr_Format(PyExc_TypeError,
                             "out must be a NumPy array or a device array, not %.100s",
                             Py_TYPE(out_obj)->tp_name);
                return -1;
            }
        }
        if (gs_operand_get(out_obj, &c->out) < 0)
            return -1;
    }
    if (gs_operand_info(&c->in, "input", &c->plan.in_type, &c->ndim, c->shape) < 0)
        return -1;
    c->n = 1;
    for (int i = 0; i < c->ndim; i++)
        c->n *= c->shape[i];
    return 0;
}

/* The accumulation dtype (dtype=, else out's, else NumPy's accumulate rule) and the checks of
 * `out` against the result's shape (rnd dimensions, rshape). */
static int scan_settle(scan_call *c, PyArray_Descr *dtype, PyObject *out_obj, int rnd,
                       const int64_t *rshape)
{
    gs_scan_plan *plan = &c->plan;
    gs_dtype out_type;
    int64_t oshape[GS_MAX_NDIM];
    int ond, same;

    if (dtype != NULL && gs_dtype_from_descr(dtype, "dtype", &plan->acc_type) < 0)
        return -1;
    if (out_obj != Py_None) {
        if (gs_operand_info(&c->out, "out", &out_type, &ond, oshape) < 0)
            return -1;
        same = ond == rnd;
        for (int i = 0; same && i < rnd; i++)
            same = rshape[i] == oshape[i];
        if (!same)
            return gs_shape_error("out", ond, oshape, "the result", rnd, rshape);
        if (c->out.readonly) {
            PyErr_SetString(PyExc_ValueError, "output array is read-only");
            return -1;
        }
        if (dtype == NULL)
            plan->acc_type = out_type;
        if (check_same_kind(dtype == NULL ? plan->in_type : plan->acc_type, out_type) < 0)
            return -1;
    } else if (dtype == NULL) {
        plan->acc_type = gs_default_acc_type(plan->in_type, plan->op);
    }
    if (gs_check_op_dtype(plan->op, plan->acc_type) < 0)
        return -1;
    plan->scan_in_type = gs_scan_pair_direct(plan->in_type, plan->acc_type, plan->op)
                             ? plan->in_type
                             : plan->acc_type;
    return 0;
}

/* Run the settled call on the host or the device path. */
static PyObject *scan_run(scan_call *c, int segmented, PyObject *out_obj, int rnd,
                          const int64_t *rshape)
{
    if (c->in.on_device || c->flags.on_device || c->out.on_device) {
#ifdef GS_HAVE_CUDA
        return gs_scan_device(&c->plan, &c->in, segmented ? &c->flags : NULL, &c->out, out_obj, rnd,
                              rshape);
#else
        PyErr_SetString(PyExc_SystemError, "gpuscan: device array in a CPU-only build");
        return NULL;
#endif
    }
    return scan_host(&c->plan, c->backend, c->in.host, segmented ? c->flags.host : NULL,
                     c->out.host, rnd, rshape);
}

/* ---- scan() ------------------------------------------------------------------------------- */

PyObject *gs_scan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "op", "exclusive", "axis", "dtype", "out", "algorithm", NULL };
    PyObject *a, *op_obj = NULL, *axis_obj = Py_None, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    const char *algorithm = "auto";
    int exclusive = 0, rnd;
    int64_t rshape[GS_MAX_NDIM];
    gs_algorithm algo;
    scan_call c;

    memset(&c, 0, sizeof(c));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$pOO&Os:scan", kwlist, &a, &op_obj,
                                     &exclusive, &axis_obj, PyArray_DescrConverter2, &dtype,
                                     &out_obj, &algorithm))
        return NULL;
    if (gs_parse_algorithm(algorithm, 0, &algo) < 0)
        goto finally;
    if (scan_begin(&c, a, op_obj, exclusive, out_obj) < 0)
        goto finally;
    c.plan.algorithm = algo;

    /* The axis and the result's shape: 1-D for axis=None and for 0-d input (as np.cumsum). */
    if (axis_obj != Py_None &&
        gs_normalize_axis(axis_obj, c.ndim > 0 ? c.ndim : 1, &c.plan.axis) < 0)
        goto finally;
    if (c.plan.axis < 0 || c.ndim == 0) {
        rnd = 1;
        rshape[0] = c.n;
    } else {
        rnd = c.ndim;
        memcpy(rshape, c.shape, sizeof(int64_t) * (size_t)c.ndim);
    }
    if (scan_settle(&c, dtype, out_obj, rnd, rshape) < 0)
        goto finally;
    ret = scan_run(&c, 0, out_obj, rnd, rshape);
finally:
    scan_call_release(&c);
    Py_XDECREF(dtype);
    return ret;
}

/* ---- segmented_scan() --------------------------------------------------------------------- */

PyObject *gs_segmented_scan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "flags", "op", "exclusive", "dtype", "out", "algorithm", NULL };
    PyObject *a, *flags_obj, *op_obj = NULL, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    const char *algorithm = "auto";
    int exclusive = 0, fnd, same;
    int64_t fshape[GS_MAX_NDIM];
    gs_algorithm algo;
    gs_dtype flag_type;
    scan_call c;

    memset(&c, 0, sizeof(c));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$pO&Os:segmented_scan", kwlist, &a,
                                     &flags_obj, &op_obj, &exclusive, PyArray_DescrConverter2,
                                     &dtype, &out_obj, &algorithm))
        return NULL;
    if (gs_parse_algorithm(algorithm, 1, &algo) < 0)
        goto finally;
    if (scan_begin(&c, a, op_obj, exclusive, out_obj) < 0)
        goto finally;
    c.plan.algorithm = algo;

    /* The flags: any supported dtype, exactly a's shape (no broadcasting). */
    if (gs_operand_get(flags_obj, &c.flags) < 0 ||
        gs_operand_info(&c.flags, "flags", &flag_type, &fnd, fshape) < 0)
        goto finally;
    same = fnd == c.ndim;
    for (int i = 0; same && i < fnd; i++)
        same = fshape[i] == c.shape[i];
    if (!same) {
        gs_shape_error("flags", fnd, fshape, "a", c.ndim, c.shape);
        goto finally;
    }

    /* The result has a's shape; the scan runs over it in C order. */
    if (scan_settle(&c, dtype, out_obj, c.ndim, c.shape) < 0)
        goto finally;
    ret = scan_run(&c, 1, out_obj, c.ndim, c.shape);
finally:
    scan_call_release(&c);
    Py_XDECREF(dtype);
    return ret;
}
