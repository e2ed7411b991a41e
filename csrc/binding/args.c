/*
 * binding/args.c - argument parsing shared by the Python-facing functions: operators, algorithms,
 * dtypes, axes, and NumPy's result-dtype rules.
 * Level: binding.  Pure functions of their arguments; every failure is the exception NumPy
 * would raise (TypeError for dtypes, AxisError for axes, ValueError for names), with a message
 * that lists the valid choices.
 */
#include "binding/binding.h"

/* ---- operators ---------------------------------------------------------------------------- */

#define GS_X_OPNAME(code, name, ufunc) name,
static const char *const op_names[GS_NOPS] = { GS_OPS(GS_X_OPNAME) };
#undef GS_X_OPNAME

#define GS_X_UFUNC(code, name, ufunc) ufunc,
static const char *const op_ufuncs[GS_NOPS] = { GS_OPS(GS_X_UFUNC) };
#undef GS_X_UFUNC

#define GS_OP_CHOICES                                                                        \
    "'add', 'mul', 'min', 'max', 'and', 'or', 'xor' or the matching NumPy ufunc (np.add, "   \
    "np.multiply, np.minimum, np.maximum, np.bitwise_and, np.bitwise_or, np.bitwise_xor) "   \
    "or its name ('multiply', 'maximum', ...), np.fmax, np.fmin, np.logaddexp, "             \
    "np.logaddexp2, np.logical_and, np.logical_or, np.logical_xor or their names, or a "     \
    "gpuscan.Operator"

/* ValueError listing the choices (the contract's), except for an integer: a TypeError with a
 * hint, since np.cumsum(a, 1) and np.sum(a, 1) mean axis=1 there. */
static int bad_op(PyObject *obj)
{
    PyObject *index;

    if (PyIndex_Check(obj) && !PyBool_Check(obj) && (index = PyNumber_Index(obj)) != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "op must be an operator name or ufunc, not the integer %R; the second "
                     "positional argument is the operator here (NumPy's np.cumsum(a, %R) "
                     "means axis %R: write axis=%R)",
                     index, index, index, index);
        Py_DECREF(index);
    } else if (PyErr_Occurred())
        ; /* PyNumber_Index's own error */
    else if (PyUnicode_Check(obj) || strcmp(Py_TYPE(obj)->tp_name, "numpy.ufunc") == 0)
        PyErr_Format(PyExc_ValueError, "op must be one of " GS_OP_CHOICES ", not %R", obj);
    else
        PyErr_Format(PyExc_ValueError, "op must be one of " GS_OP_CHOICES ", not %.100s",
                     Py_TYPE(obj)->tp_name);
    return -1;
}

const char *gs_op_ufunc_name(gs_op op)
{
    return op >= 0 && op < GS_NOPS ? op_ufuncs[op] : "?";
}

/* An operator names itself as the contract does ("mul") or as NumPy's ufunc ("multiply"); a
 * ufunc object by its __name__, the ufunc's spelling only. */
int gs_parse_op(PyObject *obj, gs_op *op)
{
    PyObject *name = NULL;
    const char *s;
    int by_name = 0, rc = -1;

    if (PyUnicode_Check(obj)) {
        by_name = 1;
        Py_INCREF(obj);
        name = obj;
    } else if (strcmp(Py_TYPE(obj)->tp_name, "numpy.ufunc") == 0) {
        name = PyObject_GetAttrString(obj, "__name__");
        if (name == NULL)
            goto done;
        if (!PyUnicode_Check(name)) {
            bad_op(obj);
            goto done;
        }
    } else {
        bad_op(obj);
        goto done;
    }
    s = PyUnicode_AsUTF8(name);
    if (s == NULL)
        goto done;
    for (int i = 0; i < GS_NOPS; i++) {
        if (strcmp(s, op_ufuncs[i]) == 0 || (by_name && strcmp(s, op_names[i]) == 0)) {
            *op = (gs_op)i;
            rc = 0;
            goto done;
        }
    }
    bad_op(obj);
done:
    Py_XDECREF(name);
    return rc;
}

/* ---- algorithms --------------------------------------------------------------------------- */

int gs_parse_algorithm(const char *name, int segmented, gs_algorithm *algo)
{
    if (strcmp(name, "auto") == 0) {
        *algo = GS_ALGO_AUTO;
        return 0;
    }
    if (strcmp(name, "blelloch") == 0) {
        *algo = GS_ALGO_BLELLOCH;
        return 0;
    }
    if (!segmented && strcmp(name, "hillis_steele") == 0) {
        *algo = GS_ALGO_HILLIS_STEELE;
        return 0;
    }
    if (segmented)
        PyErr_Format(PyExc_ValueError, "algorithm must be 'auto' or 'blelloch', got '%s'", name);
    else
        PyErr_Format(PyExc_ValueError,
                     "algorithm must be 'auto', 'hillis_steele' or 'blelloch', got '%s'", name);
    return -1;
}

/* ---- dtypes ------------------------------------------------------------------------------- */

gs_dtype gs_default_acc_type(gs_dtype in, gs_op op)
{
    char kind = gs_dtype_kind(in);
    if (gs_op_is_logical(op))
        return GS_BOOL;
    if (gs_op_is_log(op) && kind != 'f') /* NumPy's first float loop that holds the input */
        return gs_dtype_size(in) == 1 ? GS_NDTYPES : gs_dtype_size(in) == 2 ? GS_FLOAT32
                                                                             : GS_FLOAT64;
    if ((op != GS_OP_ADD && op != GS_OP_MUL) || kind == 'f' || gs_dtype_size(in) == 8)
        return in;
    return kind == 'u' ? GS_UINT64 : GS_INT64;
}

int gs_check_op_dtype(gs_op op, gs_dtype acc)
{
    const char *need = NULL;

    if (acc == GS_NDTYPES) /* logaddexp of a bool or 8-bit device array: float16 in NumPy */
        need = "NumPy gives float16 for bool and 8-bit input there, which this call cannot "
               "make: pass dtype=np.float32 or float input";
    else if (gs_op_is_bitwise(op) && gs_dtype_is_float(acc))
        need = "bitwise operators need bool or integer dtypes";
    else if (gs_op_is_log(op) && !gs_dtype_is_float(acc))
        need = "logaddexp and logaddexp2 need float dtypes";
    else if (gs_op_is_logical(op) && acc != GS_BOOL)
        need = "the logical operators give bool";
    if (need == NULL)
        return 0;
    PyErr_Format(PyExc_TypeError, "op '%s' is not supported for %s: %s", op_names[op],
                 acc == GS_NDTYPES ? "this input" : gs_dtype_name(acc), need);
    return -1;
}

/* ---- axes --------------------------------------------------------------------------------- */

int gs_normalize_axis(PyObject *axis, int ndim, int *out)
{
    Py_ssize_t ax;

    if (PyBool_Check(axis) || !PyIndex_Check(axis)) {
        PyErr_Format(PyExc_TypeError, "axis must be None or an integer, got %.100s",
                     Py_TYPE(axis)->tp_name);
        return -1;
    }
    ax = PyNumber_AsSsize_t(axis, NULL);
    if (ax == -1 && PyErr_Occurred())
        return -1;
    if (ax < -ndim || ax >= ndim) {
        PyObject *exc = PyObject_CallFunction(gs_AxisError, "ni", ax, ndim);
        if (exc != NULL) {
            PyErr_SetObject(gs_AxisError, exc);
            Py_DECREF(exc);
        }
        return -1;
    }
    *out = (int)(ax < 0 ? ax + ndim : ax);
    return 0;
}

int gs_parse_axes(PyObject *axis, int ndim, unsigned char *reduced)
{
    PyObject *items = NULL;
    int ax, rc = -1;

    memset(reduced, axis == Py_None, (size_t)ndim);
    if (axis == Py_None)
        return 0;
    if (!PyTuple_Check(axis)) {
        /* As NumPy's reductions: a 0-d array takes a plain axis of 0 or -1 and reduces nothing
         * (a tuple such as (0,) is still out of bounds). */
        if (gs_normalize_axis(axis, ndim == 0 ? 1 : ndim, &ax) < 0)
            return -1;
        if (ndim > 0)
            reduced[ax] = 1;
        return 0;
    }
    items = PySequence_Fast(axis, "axis must be None, an integer or a tuple of integers");
    if (items == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); i++) {
        if (gs_normalize_axis(PySequence_Fast_GET_ITEM(items, i), ndim, &ax) < 0)
            goto done;
        if (reduced[ax]) {
            PyErr_SetString(PyExc_ValueError, "duplicate value in 'axis'");
            goto done;
        }
        reduced[ax] = 1;
    }
    rc = 0;
done:
    Py_DECREF(items);
    return rc;
}

/* ---- shapes ------------------------------------------------------------------------------- */

/* A shape as a Python tuple (a new reference). */
static PyObject *shape_tuple(int nd, const int64_t *shape)
{
    PyObject *t = PyTuple_New(nd);

    for (int i = 0; t != NULL && i < nd; i++) {
        PyObject *d = PyLong_FromLongLong(shape[i]);
        if (d == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

int gs_shape_error(const char *have_name, int have_nd, const int64_t *have, const char *want_name,
                   int want_nd, const int64_t *want)
{
    PyObject *h = shape_tuple(have_nd, have), *w = shape_tuple(want_nd, want);

    if (h != NULL && w != NULL)
        PyErr_Format(PyExc_ValueError, "%s has shape %R but %s has shape %R", have_name, h,
                     want_name, w);
    Py_XDECREF(h);
    Py_XDECREF(w);
    return -1;
}
