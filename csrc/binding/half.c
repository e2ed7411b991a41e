/*
 * binding/half.c - float16 input (arrays, and lists, scalars and array-likes that make them) at
 * the door of scan, segmented_scan, reduce, reduceat, segmented_reduce and histogram: computed in
 * float32 and rounded once per output, as the contract says.
 *
 * Level: binding.  The backends' dtype table has no float16 (no kernel reads it), so a float16
 * NumPy input is widened to float32 here (exactly: every float16 is a float32), the call runs
 * as a float32 one, and a result whose dtype NumPy would make float16 (no dtype= or
 * dtype=float16, no out= of another dtype) is rounded back; a float16 out= receives the result
 * by NumPy's cast.  histogram's edges, kept values and bins are NumPy's own for the float16
 * input (ops/hist.c settles them from the float16 array), so that its counts and edges are
 * np.histogram's.  Device arrays of float16 are refused where their dtype is read (no kernel
 * takes them).
 */
#include "binding/binding.h"

/* 1 when obj is a NumPy array of float16. */
static int is_half(PyObject *obj)
{
    return obj != NULL && PyArray_Check(obj) && PyArray_TYPE((PyArrayObject *)obj) == NPY_HALF;
}

/* A host argument that is not an array yet (a list of float16 scalars, one scalar, an object
 * whose __array__ or buffer makes float16): *arr the NumPy array it makes when that is float16,
 * else NULL (the op converts it as always).  Device objects are left alone: no copy to the
 * host here. */
static int half_of(PyObject *obj, PyObject **arr)
{
    int device;

    *arr = NULL;
    if (obj == NULL || PyArray_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj))
        return 0;
    if ((device = gs_device_like(obj)) != 0)
        return device < 0 ? -1 : 0;
    if ((*arr = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL)) == NULL)
        return -1;
    if (!is_half(*arr))
        Py_CLEAR(*arr);
    return 0;
}

/* Whether obj is float16 input: a float16 array, or an argument half_of finds float16; -1 with
 * an exception when it cannot be converted (the op would fail the same way). */
static int half_input(PyObject *obj)
{
    PyObject *arr;

    if (obj == NULL || PyArray_Check(obj))
        return is_half(obj);
    if (half_of(obj, &arr) < 0)
        return -1;
    Py_XDECREF(arr);
    return arr != NULL;
}

/* The call's argument `name` (at `pos` or a keyword), borrowed, or NULL when absent. */
static PyObject *argument(PyObject *args, PyObject *kwargs, Py_ssize_t pos, const char *name)
{
    if (pos >= 0 && PyTuple_GET_SIZE(args) > pos)
        return PyTuple_GET_ITEM(args, pos);
    return kwargs != NULL ? PyDict_GetItemString(kwargs, name) : NULL;
}

/* Set argument `name` (at `pos` or a keyword) of the copies *args and *kwargs to value (NULL:
 * remove the keyword). */
static int set_argument(PyObject *args, PyObject *kwargs, Py_ssize_t pos, const char *name,
                        PyObject *value)
{
    if (pos >= 0 && PyTuple_GET_SIZE(args) > pos) {
        Py_XINCREF(value);
        Py_SETREF(((PyTupleObject *)args)->ob_item[pos],
                  value != NULL ? value : Py_NewRef(Py_None));
        return 0;
    }
    if (value == NULL)
        return PyDict_GetItemString(kwargs, name) ? PyDict_DelItemString(kwargs, name) : 0;
    return PyDict_SetItemString(kwargs, name, value);
}

static PyObject *as_float32(PyObject *a)
{
    PyObject *arr, *res;

    if (PyArray_Check(a))
        return PyArray_Cast((PyArrayObject *)a, NPY_FLOAT32);
    if ((arr = PyArray_FromAny(a, NULL, 0, 0, 0, NULL)) == NULL)
        return NULL;
    res = PyArray_Cast((PyArrayObject *)arr, NPY_FLOAT32);
    Py_DECREF(arr);
    return res;
}

/* Whether a dtype= argument (None or absent: NumPy's rule) leaves a float16 result. */
static int dtype_is_half(PyObject *dtype, int *half)
{
    PyArray_Descr *d = NULL;

    *half = 1;
    if (dtype == NULL || dtype == Py_None)
        return 0;
    if (!PyArray_DescrConverter(dtype, &d))
        return -1;
    *half = d->type_num == NPY_HALF;
    Py_DECREF(d);
    return 0;
}

/* Whether the call is logaddexp or logaddexp2 (its op at `op_pos` or the keyword) of a host
 * array or array-like whose result NumPy makes float16: dtype=float16, a float16 out=, or bool
 * or 8-bit integers with neither (NumPy's first float loop that holds them).  Made as float16
 * input's is: computed in float32, rounded once. */
static int half_result(PyObject *args, PyObject *kwargs, Py_ssize_t op_pos)
{
    PyObject *a = argument(args, kwargs, 0, "a"), *op_obj = argument(args, kwargs, op_pos, "op");
    PyObject *dtype = argument(args, kwargs, -1, "dtype"), *out = argument(args, kwargs, -1, "out");
    PyObject *arr;
    gs_op op;
    int small, device;

    if (op_obj == NULL || a == NULL)
        return 0;
    if (gs_parse_op(op_obj, &op) < 0) {
        PyErr_Clear(); /* not a built-in op: the call says so itself */
        return 0;
    }
    if (!gs_op_is_log(op))
        return 0;
    if (!PyArray_Check(a) && (device = gs_device_like(a)) != 0)
        return device < 0 ? -1 : 0;
    if (dtype != NULL && dtype != Py_None)
        return dtype_is_half(dtype, &small) < 0 ? -1 : small;
    if (out != NULL && out != Py_None)
        return is_half(out);
    if ((arr = PyArray_FromAny(a, NULL, 0, 0, 0, NULL)) == NULL)
        return -1;
    small = PyArray_ISBOOL((PyArrayObject *)arr) ||
            (PyArray_ISINTEGER((PyArrayObject *)arr) && PyArray_ITEMSIZE((PyArrayObject *)arr) == 1);
    Py_DECREF(arr);
    return small;
}

/* Whether res, an array or a NumPy scalar, is float32. */
static int is_float32(PyObject *res)
{
    PyObject *dt = PyObject_GetAttrString(res, "dtype");
    int yes = dt != NULL && PyArray_DescrCheck(dt) && ((PyArray_Descr *)dt)->type_num == NPY_FLOAT32;

    Py_XDECREF(dt);
    PyErr_Clear(); /* no dtype: not float32 */
    return yes;
}

/* The result `res` (stolen) as float16 when it is float32, or written into `out` (then
 * returned). */
static PyObject *round_back(PyObject *res, PyObject *out, int half)
{
    PyObject *ret;

    if (res == NULL)
        return NULL;
    if (out != NULL) {
        PyObject *src = PyArray_FromAny(res, NULL, 0, 0, 0, NULL);
        int rc = src == NULL ? -1 : PyArray_CopyInto((PyArrayObject *)out, (PyArrayObject *)src);
        Py_XDECREF(src);
        Py_DECREF(res);
        return rc < 0 ? NULL : Py_NewRef(out);
    }
    if (!half || !is_float32(res))
        return res; /* not float16 in NumPy either: a logical op's bool */
    ret = PyObject_CallMethod(res, "astype", "s", "float16"); /* arrays and NumPy scalars */
    Py_DECREF(res);
    return ret;
}

/* scan, segmented_scan, reduce: `a` first; dtype= and out= keywords only. */
static void route_accumulate(PyCFunctionWithKeywords fn, PyObject *self, PyObject *args,
                             PyObject *kwargs, PyObject **ret)
{
    PyObject *out = kwargs != NULL ? PyDict_GetItemString(kwargs, "out") : NULL;
    PyObject *dtype = kwargs != NULL ? PyDict_GetItemString(kwargs, "dtype") : NULL;
    PyObject *wide = NULL, *nargs = NULL, *nkw = NULL, *f32 = NULL, *half_out = NULL;
    int half;

    *ret = NULL;
    if (dtype_is_half(dtype, &half) < 0 ||
        (wide = as_float32(argument(args, kwargs, 0, "a"))) == NULL ||
        (nargs = PyTuple_GetSlice(args, 0, PY_SSIZE_T_MAX)) == NULL ||
        (nkw = kwargs != NULL ? PyDict_Copy(kwargs) : PyDict_New()) == NULL ||
        set_argument(nargs, nkw, 0, "a", wide) < 0)
        goto done;
    if (half && dtype != NULL && dtype != Py_None) { /* dtype=float16: float32, rounded once */
        f32 = (PyObject *)PyArray_DescrFromType(NPY_FLOAT32);
        if (PyDict_SetItemString(nkw, "dtype", f32) < 0)
            goto done;
    }
    if (is_half(out)) { /* a float16 out=: the result cast into it, as NumPy's */
        half_out = out;
        if (PyDict_DelItemString(nkw, "out") < 0)
            goto done;
    } else if (out != NULL && out != Py_None) {
        half = 0; /* an out= of another dtype fixes the accumulation to its own */
    }
    *ret = round_back(fn(self, nargs, nkw), half_out, half);
done:
    Py_XDECREF(wide);
    Py_XDECREF(nargs);
    Py_XDECREF(nkw);
    Py_XDECREF(f32);
}

int gs_half_histogram(PyObject *a, PyObject *weights, gs_half_hist *h)
{
    memset(h, 0, sizeof(*h));
    const int half_a = half_input(a), half_w = half_input(weights);
    if (half_a < 0 || half_w < 0)
        return -1;
    if (!half_a && !half_w)
        return 0;
    if (half_a && (PyArray_Check(a) ? (h->a_half = Py_NewRef(a)) == NULL
                                    : half_of(a, &h->a_half) < 0 || h->a_half == NULL))
        goto fail;
    h->a = half_a ? as_float32(h->a_half) : Py_NewRef(a);
    h->weights = half_w ? as_float32(weights) : Py_XNewRef(weights);
    h->half_weights = half_w;
    if (h->a != NULL && (weights == NULL || h->weights != NULL))
        return 1;
fail:
    gs_half_histogram_release(h);
    return -1;
}

void gs_half_histogram_release(gs_half_hist *h)
{
    Py_CLEAR(h->a);
    Py_CLEAR(h->a_half);
    Py_CLEAR(h->weights);
}

int gs_half_route(PyCFunctionWithKeywords fn, PyObject *self, PyObject *args, PyObject *kwargs,
                  Py_ssize_t op_pos, PyObject **ret)
{
    int half = half_input(argument(args, kwargs, 0, "a"));

    if (half == 0)
        half = half_result(args, kwargs, op_pos);
    if (half < 0) {
        *ret = NULL;
        return 1;
    }
    if (!half)
        return 0;
    route_accumulate(fn, self, args, kwargs, ret);
    return 1;
}
