/*
 * ops/reduce.c - gpuscan.reduce(): argument settling, the host path and the device path.
 *
 * Level: host layer.  As np.add.reduce and friends: everything about Python objects is settled
 * first (the operator, the reduced axes, the accumulation dtype, the result's shape, empty
 * reductions), then the reduced axes are moved last so that the backend sees `rows` contiguous
 * rows of `row_len` values (gs_reduce_desc):
 *   host path    (NumPy in): NumPy's C API makes that layout (a transpose and, unless the
 *                reduced axes already are last, contiguous and of the dtype the backend reads,
 *                a copy), the active backend reduces it with the GIL released, and a 0-d
 *                result is returned as a NumPy scalar, as NumPy does.  On the CPU backend,
 *                reduced axes that are one run of axes stay in place (rows x row_len x inner,
 *                ops/axis_layout.h): no transposed copy;
 *   device path  (CUDA build, device input): the same layout made on the device (in place when
 *                it already is), reduced by gs_cuda_enqueue into a new DeviceArray, 0-d for a
 *                full reduction, so that nothing travels to the host unless asked.
 * Empty reductions never reach a backend: row_len == 0 gives the identity (min/max: NumPy's
 * ValueError), rows == 0 an empty result.
 */
#include "gpuscan.h"
#include "ops/axis_layout.h"

const char gs_reduce_doc[] =
    "reduce(a, op='add', *, axis=None, dtype=None, keepdims=False)\n"
    "--\n\n"
    "Reduce an array with an operator, like ``np.add.reduce`` and friends.\n\n"
    "Parameters\n"
    "----------\n"
    "a : array_like or device array\n"
    "    Input: NumPy arrays of any strides and byte order, lists, scalars, or arrays in CUDA\n"
    "    device memory (``__cuda_array_interface__``, ``__dlpack__``, ``DeviceArray``), which\n"
    "    are used in place.  ``a`` is never modified.\n"
    "op : str or numpy.ufunc, optional\n"
    "    'add' (default), 'mul', 'min', 'max', 'and', 'or', 'xor', or the matching ufunc\n"
    "    (np.add, np.multiply, np.minimum, np.maximum, np.bitwise_and, np.bitwise_or,\n"
    "    np.bitwise_xor).\n"
    "axis : None, int or tuple of ints, optional\n"
    "    The axes to reduce (negative ones count from the end): None (default) reduces every\n"
    "    axis, an empty tuple none.\n"
    "dtype : dtype, optional\n"
    "    Accumulation and result dtype; the input is cast to it as NumPy does (an int8 sum\n"
    "    with dtype=np.int8 wraps).  By default add and mul take bool and integers narrower\n"
    "    than 64 bits to int64 (unsigned to uint64), and the other operators keep the input\n"
    "    dtype.\n"
    "keepdims : bool, optional\n"
    "    If True, the reduced axes stay in the result with length 1.\n\n"
    "Returns\n"
    "-------\n"
    "numpy scalar, numpy.ndarray or DeviceArray\n"
    "    The reduction.  Host input: a NumPy scalar of the result dtype when every axis is\n"
    "    reduced (and keepdims is False), else an array.  Device input: a DeviceArray (0-d\n"
    "    for a full reduction), left on the device.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    Unknown op, a duplicate axis, or an empty reduction with min or max (they have no\n"
    "    identity; the other operators give it: 0 for add/or/xor, 1 for mul, all ones for\n"
    "    and).\n"
    "TypeError\n"
    "    Unsupported dtype, a bitwise op on floats, or a device array on the CPU backend.\n"
    "numpy.exceptions.AxisError\n"
    "    An axis out of range.\n"
    "GpuscanError\n"
    "    A CUDA call failed (the message names it); MemoryError when device memory runs out.\n\n"
    "Notes\n"
    "-----\n"
    "Integer results are bit-identical to NumPy's.  Float min/max propagate NaN (the first\n"
    "one).  A float sum is within (log2(n)+2)*eps*sum(|x|) of the exact sum, n the number of\n"
    "values reduced, and is deterministic: the same input gives the same bits on every run.\n\n"
    "Examples\n"
    "--------\n"
    ">>> import numpy as np, gpuscan\n"
    ">>> gpuscan.reduce(np.array([3, 1, 4, 1, 5], dtype=np.int32))\n"
    "np.int64(14)\n"
    ">>> gpuscan.reduce([3, 1, 4, 1, 5], 'max')\n"
    "np.int64(5)\n"
    ">>> m = np.arange(6).reshape(2, 3)\n"
    ">>> gpuscan.reduce(m, axis=1)\n"
    "array([ 3, 12])\n"
    ">>> gpuscan.reduce(m, 'mul', axis=0, keepdims=True)\n"
    "array([[ 0,  4, 10]])\n";

/* Everything settled about one reduction before any data moves. */
typedef struct reduce_plan {
    gs_op op;
    gs_dtype in_type;      /* the input's dtype */
    gs_dtype acc_type;     /* accumulation and result dtype */
    gs_dtype red_in_type;  /* what the backend reads: in_type when the pair is direct */
    int ndim;              /* the input's dimensions */
    int perm[GS_MAX_NDIM]; /* the kept axes in order, then the reduced ones */
    int rnd;               /* the result's dimensions and shape */
    int64_t rshape[GS_MAX_NDIM];
    int64_t rows;    /* product of the kept lengths */
    int64_t row_len; /* product of the reduced lengths */
    int64_t inner;   /* the kept lengths after the reduced axes when these are one run, else 0 */
} reduce_plan;

/* ---- helpers ------------------------------------------------------------------------------ */

/* Fill `res` with the identity of op in its dtype (add/or/xor 0, mul 1, and all ones). */
static int fill_identity(PyArrayObject *res, gs_op op, gs_dtype t)
{
    PyObject *value;
    int rc;

    if (op == GS_OP_AND && t != GS_BOOL) {
        PyArray_FILLWBYTE(res, 0xff);
        return 0;
    }
    if (op == GS_OP_AND)
        value = Py_NewRef(Py_True);
    else
        value = PyLong_FromLong(op == GS_OP_MUL ? 1 : 0);
    if (value == NULL)
        return -1;
    rc = PyArray_FillWithScalar(res, value);
    Py_DECREF(value);
    return rc;
}

/* The result array of the plan's shape and dtype, uninitialised (NULL: raised). */
static PyArrayObject *new_result(const reduce_plan *p)
{
    npy_intp dims[GS_MAX_NDIM];
    PyArray_Descr *descr = gs_descr(p->acc_type);

    if (descr == NULL)
        return NULL;
    for (int i = 0; i < p->rnd; i++)
        dims[i] = (npy_intp)p->rshape[i];
    return (PyArrayObject *)PyArray_Empty(p->rnd, dims, descr, 0);
}

/* ---- host path ---------------------------------------------------------------------------- */

static PyObject *reduce_host(const reduce_plan *p, gs_backend backend, PyArrayObject *a)
{
    npy_intp perm_v[GS_MAX_NDIM];
    PyArray_Dims perm = { perm_v, p->ndim };
    PyArrayObject *work = NULL, *src = NULL, *res = NULL;
    PyArray_Descr *descr;
    gs_reduce_desc d;

    if ((res = new_result(p)) == NULL)
        goto error;
    if (p->rows > 0 && p->row_len == 0 && fill_identity(res, p->op, p->acc_type) < 0)
        goto error;
    if (p->rows > 0 && p->row_len > 0) {
        /* The CPU backend reads reduced axes that are one run in place (rows x row_len x inner,
         * C-contiguous): no transpose.  Otherwise, and on CUDA, the reduced axes last. */
        int in_place = backend == GS_BACKEND_CPU && p->inner > 1;
        for (int i = 0; i < p->ndim; i++)
            perm_v[i] = in_place ? i : p->perm[i];
        /* C-contiguous, aligned, native, of the dtype the backend reads: no copy when `a`
         * already is all that. */
        work = (PyArrayObject *)PyArray_Transpose(a, &perm);
        if (work == NULL || (descr = gs_descr(p->red_in_type)) == NULL)
            goto error;
        src = (PyArrayObject *)PyArray_FromAny((PyObject *)work, descr, 0, 0,
                                               NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL);
        if (src == NULL)
            goto error;
        memset(&d, 0, sizeof(d));
        d.in = PyArray_DATA(src);
        d.out = PyArray_DATA(res);
        d.rows = in_place ? p->rows / p->inner : p->rows;
        d.row_len = p->row_len;
        d.inner = in_place ? p->inner : 1;
        d.in_type = p->red_in_type;
        d.out_type = p->acc_type;
        d.op = p->op;
        if (gs_run_host(backend, NULL, &d) < 0)
            goto error;
    }
    Py_XDECREF(work);
    Py_XDECREF(src);
    /* A 0-d result becomes a NumPy scalar of its dtype, as np.add.reduce returns. */
    return PyArray_Return(res);
error:
    Py_XDECREF(work);
    Py_XDECREF(src);
    Py_XDECREF(res);
    return NULL;
}

/* ---- device path -------------------------------------------------------------------------- */

#ifdef GS_HAVE_CUDA

static PyObject *reduce_device(const reduce_plan *p, gs_operand *in)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_devview work, packed;
    gs_DeviceArray *res = NULL;
    PyArrayObject *ident = NULL;
    PyObject *ret = NULL;
    void *tmp = NULL;
    gs_reduce_desc d;

    GS_CUDA_CHECK(fail, gs_cuda_enter());
    res = gs_devarray_new(p->rnd, p->rshape, p->acc_type);
    if (res == NULL)
        goto error;

    if (p->rows > 0 && p->row_len == 0) {
        /* The identity, made on the host (rows values) and uploaded. */
        ident = new_result(p);
        if (ident == NULL || fill_identity(ident, p->op, p->acc_type) < 0 ||
            gs_cuda_upload(res->data, PyArray_DATA(ident), (size_t)PyArray_NBYTES(ident)) < 0)
            goto error;
    } else if (p->rows > 0) {
        /* 1. The reduced axes last: a view of the input, packed when it is not contiguous or
         *    not of the dtype the backend reads. */
        work = in->dev;
        for (int i = 0; i < p->ndim; i++) {
            work.shape[i] = in->dev.shape[p->perm[i]];
            work.strides[i] = in->dev.strides[p->perm[i]];
        }
        if (!gs_devview_is_c_contig(&work) || work.dtype != p->red_in_type) {
            GS_CUDA_ALLOC(fail, tmp,
                          (size_t)(p->rows * p->row_len) * gs_dtype_size(p->red_in_type));
            packed = work;
            packed.ptr = tmp;
            packed.dtype = p->red_in_type;
            gs_devview_set_c_strides(&packed);
            GS_CUDA_CHECK(fail, gs_cuda_copy_view(&work, &packed));
            work = packed;
        }

        /* 2. The reduction, rows x row_len into the new DeviceArray. */
        memset(&d, 0, sizeof(d));
        d.in = work.ptr;
        d.out = res->data;
        d.rows = p->rows;
        d.row_len = p->row_len;
        d.in_type = p->red_in_type;
        d.out_type = p->acc_type;
        d.op = p->op;
        Py_BEGIN_ALLOW_THREADS(void) gs_cuda_enqueue(NULL, &d, &fail);
        Py_END_ALLOW_THREADS if (fail.err != cudaSuccess) goto error;
    }
    if (gs_cuda_release_foreign(in) < 0 || PyErr_CheckSignals() < 0)
        goto error;
    ret = (PyObject *)res;
    res = NULL;
error:
    if (fail.err != cudaSuccess)
        gs_cuda_raise(&fail);
    gs_cuda_free(tmp);
    Py_XDECREF(ident);
    Py_XDECREF(res);
    return ret;
}

#endif /* GS_HAVE_CUDA */

/* ---- reduce() ----------------------------------------------------------------------------- */

/* The reduced axes, the result's shape, rows x row_len and the permutation that puts the
 * reduced axes last. */
static void plan_shape(reduce_plan *p, const int64_t *shape, const unsigned char *reduced,
                       int keepdims)
{
    int k = 0;

    p->rnd = 0;
    p->rows = 1;
    p->row_len = 1;
    for (int i = 0; i < p->ndim; i++) {
        if (reduced[i]) {
            p->row_len *= shape[i];
            if (keepdims)
                p->rshape[p->rnd++] = 1;
        } else {
            p->rows *= shape[i];
            p->rshape[p->rnd++] = shape[i];
            p->perm[k++] = i;
        }
    }
    for (int i = 0; i < p->ndim; i++)
        if (reduced[i])
            p->perm[k++] = i;
}

PyObject *gs_reduce(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "op", "axis", "dtype", "keepdims", NULL };
    PyObject *a, *op_obj = NULL, *axis_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    int keepdims = 0;
    int64_t shape[GS_MAX_NDIM];
    unsigned char reduced[GS_MAX_NDIM];
    gs_backend backend;
    gs_operand in;
    reduce_plan p;

    memset(&in, 0, sizeof(in));
    memset(&p, 0, sizeof(p));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OO&p:reduce", kwlist, &a, &op_obj,
                                     &axis_obj, PyArray_DescrConverter2, &dtype, &keepdims))
        return NULL;

    /* Names and the backend first: they fail the same way whatever the data. */
    p.op = GS_OP_ADD;
    if (op_obj != NULL && gs_parse_op(op_obj, &p.op) < 0)
        goto finally;
    if (gs_backend_get(&backend) < 0)
        goto finally;
    if (gs_operand_get(a, &in) < 0 || gs_operand_info(&in, "input", &p.in_type, &p.ndim, shape) < 0)
        goto finally;
    if (gs_parse_axes(axis_obj, p.ndim, reduced) < 0)
        goto finally;
    plan_shape(&p, shape, reduced, keepdims);
    p.inner = gs_axis_inner(p.ndim, shape, reduced);

    /* The accumulation dtype: dtype=, else NumPy's reduce rule (that of accumulate). */
    if (dtype != NULL) {
        if (gs_dtype_from_descr(dtype, "dtype", &p.acc_type) < 0)
            goto finally;
    } else {
        p.acc_type = gs_default_acc_type(p.in_type, p.op);
    }
    if (gs_check_op_dtype(p.op, p.acc_type) < 0)
        goto finally;
    p.red_in_type = gs_scan_pair_direct(p.in_type, p.acc_type, p.op) ? p.in_type : p.acc_type;

    /* An empty reduction has the identity, which min and max lack (NumPy's message). */
    if (p.row_len == 0 && (p.op == GS_OP_MIN || p.op == GS_OP_MAX)) {
        PyErr_Format(PyExc_ValueError,
                     "zero-size array to reduction operation %s which has no identity",
                     p.op == GS_OP_MIN ? "minimum" : "maximum");
        goto finally;
    }

    if (in.on_device) {
#ifdef GS_HAVE_CUDA
        ret = reduce_device(&p, &in);
#else
        PyErr_SetString(PyExc_SystemError, "gpuscan: device array in a CPU-only build");
#endif
    } else {
        ret = reduce_host(&p, backend, in.host);
    }
finally:
    gs_operand_release(&in);
    Py_XDECREF(dtype);
    return ret;
}
