/*
 * ops/userop.c - scan, segmented_scan, reduce, reduceat and segmented_reduce with an operator
 * you write (gpuscan.Operator, binding/operator.c).
 * Level: ops.  Each public entry (ops/scan.c, ops/reduce.c, ops/segreduce.c) hands its call
 * here when `op` is an Operator (gs_uop_wanted).  The steps: the operator compiled for the
 * backend (gs_operator_prog: NotImplementedError on one that cannot run it yet); the input as
 * one C-contiguous array of T (the operator's cdescr), from an array castable same_kind to a
 * scalar T, an array of exactly the structured dtype, or a tuple of field arrays; the axes
 * that the backend runs along moved last (a transposed copy by NumPy); the backend's entry over
 * flat buffers without the GIL; the result delivered in the input's form: an array of the
 * operator's dtype, or a tuple of field arrays, or into out= (either form).
 */
#include "ops/ops.h"

/* One Operator call as it is settled. */
typedef struct uop {
    gs_Operator *op;
    const gs_backend_ops *be;
    const gs_user_prog *prog;
    int tuple_in;      /* the input was a tuple of field arrays */
    int own_in;        /* u->in is the call's own copy of the input (a scan may overwrite it) */
    int direct;        /* the backend writes out= itself: it is the result */
    PyArrayObject *in; /* C-contiguous T values of the input's shape */
} uop;

int gs_uop_wanted(PyObject *args, PyObject *kwargs, Py_ssize_t pos)
{
    PyObject *op = PyTuple_GET_SIZE(args) > pos ? PyTuple_GET_ITEM(args, pos)
                   : kwargs != NULL              ? PyDict_GetItemString(kwargs, "op")
                                                 : NULL;
    return op != NULL && gs_operator_check(op);
}

/* The operator compiled for the backend, with the kernels of `family` (the ones the call needs
 * first: uop_run asks for others); dtype= refused. */
static int uop_begin(uop *u, PyObject *op, PyArray_Descr *dtype, int family)
{
    gs_backend b;

    memset(u, 0, sizeof(*u));
    u->op = (gs_Operator *)op;
    if (dtype != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "dtype= is not taken with an Operator: the result's dtype is the "
                     "operator's, %R",
                     (PyObject *)u->op->dtype);
        return -1;
    }
    if (gs_backend_get(&b) < 0)
        return -1;
    u->be = gs_backend_table(b);
    return gs_operator_prog(u->op, u->be, family, &u->prog);
}

/* The descriptor (offset into cdescr) of field i of T. */
static PyArray_Descr *field_of(const gs_Operator *op, Py_ssize_t i, Py_ssize_t *offset)
{
    PyObject *name = PyTuple_GET_ITEM(PyDataType_NAMES(op->cdescr), i);
    PyObject *info = PyDict_GetItem(PyDataType_FIELDS(op->cdescr), name);
    *offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(info, 1));
    return (PyArray_Descr *)PyTuple_GET_ITEM(info, 0);
}

/* TypeError unless NumPy casts `from` to `to` under the same_kind rule (what: the operand). */
static int check_cast(PyArray_Descr *from, PyArray_Descr *to, const char *what)
{
    if (PyArray_CanCastTypeTo(from, to, NPY_SAME_KIND_CASTING))
        return 0;
    PyErr_Format(PyExc_TypeError,
                 "Cannot cast %s from %R to %R according to the rule 'same_kind' (the "
                 "Operator's dtype)",
                 what, (PyObject *)from, (PyObject *)to);
    return -1;
}

/* A tuple of same-shape arrays, one per field, as one C-contiguous array of T (in the memory
 * be's copies reach fastest). */
static PyArrayObject *from_fields(const gs_Operator *op, const gs_backend_ops *be, PyObject *a)
{
    const Py_ssize_t n = PyTuple_GET_SIZE(a);
    PyArrayObject *res = NULL, *f = NULL, *first = NULL;

    if (n != op->nfields) {
        PyErr_Format(PyExc_ValueError,
                     "a tuple input holds one array per field of the Operator's dtype (%d), not "
                     "%zd",
                     op->nfields, n);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t off;
        PyArray_Descr *fd = field_of(op, i, &off);
        PyArrayObject *view;
        f = (PyArrayObject *)PyArray_FromAny(PyTuple_GET_ITEM(a, i), NULL, 0, 0, 0, NULL);
        if (f == NULL || check_cast(PyArray_DESCR(f), fd, "a field's input") < 0)
            goto fail;
        if (first == NULL) {
            first = (PyArrayObject *)Py_NewRef(f);
            Py_INCREF(op->cdescr);
            res = gs_host_array(be, PyArray_NDIM(f), PyArray_DIMS(f), op->cdescr);
            if (res == NULL)
                goto fail;
        } else if (!PyArray_SAMESHAPE(f, first)) {
            PyErr_Format(PyExc_ValueError,
                         "the arrays of a tuple input must have one shape: field %zd has %d "
                         "dimensions or other lengths than field 0",
                         i, PyArray_NDIM(f));
            goto fail;
        }
        Py_INCREF(fd);
        view = (PyArrayObject *)PyArray_GetField(res, fd, (int)off);
        if (view == NULL || PyArray_CopyInto(view, f) < 0) {
            Py_XDECREF(view);
            goto fail;
        }
        Py_DECREF(view);
        Py_CLEAR(f);
    }
    Py_XDECREF(first);
    return res;
fail:
    Py_XDECREF(f);
    Py_XDECREF(first);
    Py_XDECREF(res);
    return NULL;
}

/* The input (a in the forms of the file's header) as u->in. */
static int uop_input(uop *u, PyObject *a)
{
    gs_Operator *op = u->op;
    gs_operand o;
    PyArrayObject *arr;

    if (op->nfields > 0 && PyTuple_Check(a)) {
        u->tuple_in = u->own_in = 1;
        return (u->in = from_fields(op, u->be, a)) == NULL ? -1 : 0;
    }
    if (gs_operand_get(a, &o) < 0)
        return -1;
    if (o.on_device) { /* the calls that run on a device array took it before this */
        gs_operand_release(&o);
        PyErr_SetString(PyExc_NotImplementedError,
                        "an Operator runs on a device array in scan, segmented_scan and reduce "
                        "(whole); for reduceat and segmented_reduce, pass a NumPy array");
        return -1;
    }
    arr = (PyArrayObject *)Py_NewRef((PyObject *)o.host);
    gs_operand_release(&o);
    if (op->nfields > 0 &&
        PyObject_RichCompareBool((PyObject *)PyArray_DESCR(arr), (PyObject *)op->dtype, Py_EQ) != 1) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "an Operator of dtype %R takes arrays of exactly that dtype, or a tuple "
                         "of %d arrays (one per field); got an array of dtype %R",
                         (PyObject *)op->dtype, op->nfields, (PyObject *)PyArray_DESCR(arr));
        Py_DECREF(arr);
        return -1;
    }
    if (op->nfields == 0 && check_cast(PyArray_DESCR(arr), op->cdescr, "input") < 0) {
        Py_DECREF(arr);
        return -1;
    }
    Py_INCREF(op->cdescr);
    u->in = (PyArrayObject *)PyArray_FromAny((PyObject *)arr, op->cdescr, 0, 0,
                                             NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST, NULL);
    u->own_in = u->in != NULL && u->in != arr && PyArray_BASE(u->in) == NULL;
    Py_DECREF(arr);
    return u->in == NULL ? -1 : 0;
}

/* One array of out= (what: "out", "out[i]") checked against the result r (T, or field i's
 * values when fd is not NULL) and written from it. */
static int into_one(const gs_Operator *op, PyObject *obj, PyArrayObject *r, PyArray_Descr *fd,
                    const char *what)
{
    PyArrayObject *out = (PyArrayObject *)obj;
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a NumPy array, not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (!PyArray_SAMESHAPE(out, r)) {
        int64_t have[GS_MAX_NDIM], want[GS_MAX_NDIM];
        for (int i = 0; i < PyArray_NDIM(out); i++)
            have[i] = PyArray_DIM(out, i);
        for (int i = 0; i < PyArray_NDIM(r); i++)
            want[i] = PyArray_DIM(r, i);
        return gs_shape_error(what, PyArray_NDIM(out), have, "the result", PyArray_NDIM(r), want);
    }
    if (!PyArray_ISWRITEABLE(out)) {
        PyErr_Format(PyExc_ValueError, "%s is read-only", what);
        return -1;
    }
    if (fd == NULL && op->nfields > 0) {
        if (PyObject_RichCompareBool((PyObject *)PyArray_DESCR(out), (PyObject *)op->dtype, Py_EQ) != 1) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError,
                             "%s must have exactly the Operator's dtype %R (or be a tuple of "
                             "arrays, one per field), not %R",
                             what, (PyObject *)op->dtype, (PyObject *)PyArray_DESCR(out));
            return -1;
        }
    } else if (check_cast(fd != NULL ? fd : op->cdescr, PyArray_DESCR(out), what) < 0) {
        return -1;
    }
    return PyArray_CopyInto(out, r);
}

/* Field i of the T values r, a view. */
static PyArrayObject *field_view(const gs_Operator *op, PyArrayObject *r, Py_ssize_t i)
{
    Py_ssize_t off;
    PyArray_Descr *fd = field_of(op, i, &off);
    Py_INCREF(fd);
    return (PyArrayObject *)PyArray_GetField(r, fd, (int)off);
}

/* The result r (T values, a new array or a view of one, any strides) as the call returns it:
 * written into out= (an array, or a tuple of field arrays) and that returned, else a new array
 * of the operator's dtype, or a tuple of field arrays when the input was one; `scalar`: 0-d
 * results as NumPy scalars. */
static PyObject *uop_deliver(const uop *u, PyArrayObject *r, PyObject *out_obj, int scalar)
{
    const gs_Operator *op = u->op;
    PyObject *res = NULL;

    if (out_obj != Py_None && PyTuple_Check(out_obj)) {
        if (op->nfields == 0 || PyTuple_GET_SIZE(out_obj) != op->nfields) {
            PyErr_Format(PyExc_ValueError,
                         "out= as a tuple holds one array per field of the Operator's dtype "
                         "(%R)",
                         (PyObject *)op->dtype);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < op->nfields; i++) {
            PyArrayObject *v = field_view(op, r, i);
            int rc = v == NULL ? -1 : into_one(op, PyTuple_GET_ITEM(out_obj, i), v, PyArray_DESCR(v), "out[i]");
            Py_XDECREF(v);
            if (rc < 0)
                return NULL;
        }
        return Py_NewRef(out_obj);
    }
    if (out_obj != Py_None)
        return into_one(op, out_obj, r, NULL, "out") < 0 ? NULL : Py_NewRef(out_obj);
    if (u->direct)
        return Py_NewRef(r);
    if (u->tuple_in) {
        if ((res = PyTuple_New(op->nfields)) == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < op->nfields; i++) {
            PyArrayObject *v = field_view(op, r, i), *c = NULL;
            if (v != NULL) {
                Py_INCREF(PyArray_DESCR(v));
                c = gs_host_array(u->be, PyArray_NDIM(v), PyArray_DIMS(v), PyArray_DESCR(v));
            }
            if (c != NULL && PyArray_CopyInto(c, v) < 0)
                Py_CLEAR(c);
            Py_XDECREF(v);
            if (c == NULL) {
                Py_DECREF(res);
                return NULL;
            }
            PyTuple_SET_ITEM(res, i, scalar ? PyArray_Return(c) : (PyObject *)c);
        }
        return res;
    }
    if (PyArray_IS_C_CONTIGUOUS(r) &&
        PyObject_RichCompareBool((PyObject *)PyArray_DESCR(r), (PyObject *)op->dtype, Py_EQ) == 1) {
        res = Py_NewRef(r);
    } else {
        Py_INCREF(op->dtype);
        res = PyArray_Empty(PyArray_NDIM(r), PyArray_DIMS(r), op->dtype, 0);
        if (res != NULL && PyArray_CopyInto((PyArrayObject *)res, r) < 0)
            Py_CLEAR(res);
    }
    return res != NULL && scalar ? PyArray_Return((PyArrayObject *)res) : res;
}

/* *ptr's `bytes` (host memory) copied to the device by the transfer pipeline, *ptr then the
 * copy (in the bag); nothing for none. */
static int to_device(const void **ptr, size_t bytes, gs_bag *bag)
{
    void *dev;
    gs_view src, dst;
    if (*ptr == NULL || bytes == 0)
        return 0;
    if (gs_bag_alloc(bag, GS_MEM_DEVICE, bytes, &dev) < 0)
        return -1;
    src = gs_view_flat((void *)*ptr, (int64_t)bytes, GS_MEM_HOST, GS_UINT8);
    dst = gs_view_flat(dev, (int64_t)bytes, GS_MEM_DEVICE, GS_UINT8);
    if (gs_move(&src, &dst, bag) < 0)
        return -1;
    *ptr = dev;
    return 0;
}

/* Where a call's buffers are: NumPy's (host memory), the backend's own (a device array's), or
 * the backend's input and a NumPy result (a device array reduced to a NumPy scalar). */
enum { UOP_BACKEND, UOP_HOST, UOP_HOST_OUT };

/* For a backend whose memory is the device's, d's host buffers (NumPy's, `where`) placed there
 * as the built-in operations' are: the inputs moved by the transfer pipeline, the result
 * written to the device (*res: its bytes there, moved back by the caller into *host). */
static int uop_place(const uop *u, int (*entry)(const gs_user_desc *, gs_fail *), gs_user_desc *d,
                     int where, gs_bag *bag, void **host, gs_view *res)
{
    const size_t size = (size_t)PyDataType_ELSIZE(u->op->cdescr);
    const int move_in = where == UOP_HOST;
    size_t in_bytes, out_bytes;
    const void *out;
    if (entry == u->be->user_scan) {
        in_bytes = out_bytes = (size_t)d->n * size;
        if (move_in && to_device((const void **)&d->flags, d->row_len > 0 ? 0 : (size_t)d->n, bag) < 0)
            return -1;
    } else if (entry == u->be->user_reduce) {
        in_bytes = (size_t)(d->rows * d->row_len) * size;
        out_bytes = (size_t)d->rows * size;
    } else {
        in_bytes = (size_t)(d->rows * d->n) * size;
        out_bytes = (size_t)(d->rows * d->nseg) * size;
        if (move_in && (to_device((const void **)&d->starts, (size_t)d->nseg * 8, bag) < 0 ||
                        to_device((const void **)&d->ends, (size_t)d->nseg * 8, bag) < 0))
            return -1;
    }
    *host = d->out;
    if (move_in && d->out == d->in) { /* in place: the input's copy is the result */
        if (to_device(&d->in, in_bytes, bag) < 0)
            return -1;
        out = d->in;
    } else if ((move_in && to_device(&d->in, in_bytes, bag) < 0) ||
               gs_bag_alloc(bag, GS_MEM_DEVICE, out_bytes, (void **)&out) < 0) {
        return -1;
    }
    d->out = (void *)out;
    *res = gs_view_flat((void *)out, (int64_t)out_bytes, GS_MEM_DEVICE, GS_UINT8);
    return 0;
}

/* The backend's entry run over d without the GIL; raises its failure.  `where`: where d's
 * buffers are (UOP_*). */
static int uop_run(uop *u, int (*entry)(const gs_user_desc *, gs_fail *), gs_user_desc *d,
                   int where)
{
    const int family = entry != u->be->user_scan                ? GS_USER_FOLD
                       : d->flags != NULL || d->row_len > 0 ? GS_USER_SCAN_SEG
                                                              : GS_USER_SCAN;
    gs_fail f = { 0 };
    gs_bag bag = { 0 };
    gs_view res, back;
    void *host_out = NULL;
    int rc = -1;
    if (gs_operator_prog(u->op, u->be, family, &u->prog) < 0)
        return -1;
    d->prog = u->prog;
    d->identity = u->op->identity;
    if (where != UOP_BACKEND && u->be->mem == GS_MEM_DEVICE &&
        uop_place(u, entry, d, where, &bag, &host_out, &res) < 0)
        goto done;
    GS_BEGIN_UNLOCKED
        rc = entry(d, &f);
    GS_END_UNLOCKED
    if (rc < 0) {
        rc = gs_raise(&f);
    } else if (host_out != NULL) {
        back = gs_view_flat(host_out, res.shape[0], GS_MEM_HOST, GS_UINT8);
        rc = gs_move(&res, &back, &bag);
    }
    if (rc == 0)
        rc = PyErr_CheckSignals();
done:
    gs_bag_free(&bag);
    return rc;
}

/* A new C-contiguous array of T of the given shape (in the memory the backend's copies reach
 * fastest). */
static PyArrayObject *t_array(const uop *u, int nd, npy_intp *shape)
{
    Py_INCREF(u->op->cdescr);
    return gs_host_array(u->be, nd, shape, u->op->cdescr);
}

/* `arr` with its axes in the order perm, as a C-contiguous array (itself when perm is the
 * identity). */
static PyArrayObject *permuted(PyArrayObject *arr, int *perm)
{
    PyArray_Dims dims = { (npy_intp *)NULL, PyArray_NDIM(arr) };
    npy_intp p[GS_MAX_NDIM];
    PyObject *t;
    PyArrayObject *c;
    for (int i = 0; i < dims.len; i++)
        p[i] = perm[i];
    dims.ptr = p;
    if ((t = PyArray_Transpose(arr, &dims)) == NULL)
        return NULL;
    c = (PyArrayObject *)PyArray_FromAny(t, NULL, 0, 0, NPY_ARRAY_CARRAY, NULL);
    Py_DECREF(t);
    return c;
}

/* ---- device arrays: run where they are ----------------------------------------------------- */

/* 1 with *o filled (the caller releases it) when `a` is a device array the call runs on where
 * it is: C-contiguous, of a scalar operator's dtype; 0 when `a` is no device array; -1 with an
 * exception for one the call cannot take. */
static int uop_device_input(const uop *u, PyObject *a, gs_operand *o)
{
    gs_dtype t;
    int r = gs_operand_get_device(a, o);
    if (r <= 0)
        return r;
    if (u->op->nfields > 0 || gs_dtype_from_descr(u->op->cdescr, "dtype", &t) < 0 ||
        !gs_view_ready(&o->view, GS_MEM_DEVICE, t)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "an Operator takes a device array when it is C-contiguous, aligned and of "
                     "the operator's own scalar dtype (%R); structured operators take NumPy "
                     "arrays or tuples of them",
                     (PyObject *)u->op->dtype);
        gs_operand_release(o);
        return -1;
    }
    return 1;
}

/* The result of an Operator's scan of the device array o, `nd` dims `shape`: a new DeviceArray
 * (out_obj None), or out= (a writable, C-contiguous device array of that shape and the
 * operator's dtype; o itself for in place, *oo its operand).  *dst its view; NULL on error. */
static PyObject *uop_device_result(const uop *u, const gs_operand *o, PyObject *out_obj, int nd,
                                   const int64_t *shape, gs_operand *oo, gs_view *dst)
{
    int got;
    memset(oo, 0, sizeof(*oo));
    if (out_obj == Py_None)
        return gs_result_new(GS_MEM_DEVICE, nd, shape, o->view.dtype, dst);
    if ((got = gs_operand_get_device(out_obj, oo)) < 0)
        return NULL;
    if (got == 0 || oo->readonly || !gs_view_ready(&oo->view, GS_MEM_DEVICE, o->view.dtype)) {
        PyErr_Format(PyExc_TypeError,
                     "out= of an Operator's call on a device array: a writable, C-contiguous, "
                     "aligned device array of the operator's dtype %R",
                     (PyObject *)u->op->dtype);
        return NULL;
    }
    if (gs_check_same_shape("out", oo->view.ndim, oo->view.shape, "the result", nd, shape) < 0)
        return NULL;
    *dst = oo->view;
    return Py_NewRef(out_obj);
}

/* The scan (flags NULL) or segmented scan of the device array o into dst: the flags taken as
 * the built-in segmented_scan takes them (any dtype, a's shape, NumPy or device; placed on the
 * device as bytes, nonzero a head); the input and the flags copied apart from dst where they
 * overlap it other than exactly in place; the foreign producers' streams ordered after the work
 * (gs_release_operands), also after a failure. */
static int uop_device_scan_into(uop *u, const gs_operand *o, PyObject *flags_obj, int exclusive,
                                gs_view dst, const gs_operand *oo)
{
    int64_t fshape[GS_MAX_NDIM];
    gs_operand fo;
    gs_dtype ft;
    gs_bag bag = { 0 };
    gs_user_desc d;
    gs_view src = o->view, heads;
    int fnd, rc = -1;
    memset(&fo, 0, sizeof(fo));
    memset(&d, 0, sizeof(d));
    if (flags_obj != NULL &&
        (gs_operand_get(flags_obj, &fo) < 0 ||
         gs_operand_info(&fo, "flags", &ft, &fnd, fshape) < 0 ||
         gs_check_same_shape("flags", fnd, fshape, "a", src.ndim, src.shape) < 0 ||
         gs_place(&fo.view, GS_MEM_DEVICE, gs_dtype_size(ft) == 1 ? ft : GS_BOOL, &bag,
                  &heads) < 0 ||
         gs_apart_from(&dst, &heads, 0, &bag) < 0))
        goto done;
    if (gs_apart_from(&dst, &src, 1, &bag) < 0)
        goto done;
    d.in = src.ptr;
    d.out = dst.ptr;
    d.flags = flags_obj != NULL ? (const unsigned char *)heads.ptr : NULL;
    d.n = gs_view_size(&src);
    d.exclusive = exclusive;
    rc = d.n == 0 || uop_run(u, u->be->user_scan, &d, UOP_BACKEND) == 0 ? 0 : -1;
done:
    {
        gs_operand *const used[] = { (gs_operand *)o, &fo, (gs_operand *)oo };
        if (gs_release_operands(used, 3) < 0) /* after a failure too: copies may be enqueued */
            rc = -1;
    }
    gs_bag_free(&bag);
    gs_operand_release(&fo);
    return rc;
}

/* The scan of the flattened device array o (axis=None, or a 1-D o) into a new DeviceArray or
 * out=. */
static PyObject *uop_device_scan(uop *u, const gs_operand *o, PyObject *axis_obj, int exclusive,
                                 PyObject *out_obj)
{
    int64_t n = gs_view_size(&o->view);
    gs_operand oo;
    gs_view dst;
    PyObject *res;
    int axis;
    if (axis_obj != Py_None &&
        gs_normalize_axis(axis_obj, o->view.ndim > 0 ? o->view.ndim : 1, &axis) < 0)
        return NULL; /* NumPy's AxisError, as for NumPy input */
    if (axis_obj != Py_None && o->view.ndim > 1) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "an Operator scans a device array flattened (axis=None, or a 1-D "
                        "array); along an axis of a wider one, pass a NumPy array");
        return NULL;
    }
    res = uop_device_result(u, o, out_obj, 1, &n, &oo, &dst);
    if (res != NULL && uop_device_scan_into(u, o, NULL, exclusive, dst, &oo) < 0)
        Py_CLEAR(res);
    gs_operand_release(&oo);
    return res;
}

/* The segmented scan of the device array o into a new DeviceArray of its shape, or out=. */
static PyObject *uop_device_segmented_scan(uop *u, const gs_operand *o, PyObject *flags_obj,
                                           int exclusive, PyObject *out_obj)
{
    gs_operand oo;
    gs_view dst;
    PyObject *res = uop_device_result(u, o, out_obj, o->view.ndim, o->view.shape, &oo, &dst);
    if (res != NULL && uop_device_scan_into(u, o, flags_obj, exclusive, dst, &oo) < 0)
        Py_CLEAR(res);
    gs_operand_release(&oo);
    return res;
}

/* The reduction of the whole device array o (axis None or every axis) to a NumPy scalar, or
 * with keepdims to a NumPy array of o's dims, each 1. */
static PyObject *uop_device_reduce(uop *u, const gs_operand *o, PyObject *axis_obj, int keepdims,
                                   const void *initial, PyObject *out_obj)
{
    const int nd = o->view.ndim;
    unsigned char reduced[GS_MAX_NDIM];
    npy_intp ones[GS_MAX_NDIM];
    gs_user_desc d;
    PyArrayObject *r;
    int whole = 1;
    if (gs_parse_axes(axis_obj, nd, reduced) < 0)
        return NULL;
    for (int i = 0; i < nd; i++) {
        whole &= reduced[i];
        ones[i] = 1;
    }
    if (!whole || out_obj != Py_None) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "an Operator reduces a device array whole (every axis; no out=); for "
                        "the others, pass a NumPy array");
        return NULL;
    }
    if ((r = t_array(u, keepdims ? nd : 0, ones)) == NULL)
        return NULL;
    memset(&d, 0, sizeof(d));
    d.in = o->view.ptr;
    d.out = PyArray_DATA(r);
    d.rows = 1;
    d.row_len = gs_view_size(&o->view);
    d.initial = initial;
    if (uop_run(u, u->be->user_reduce, &d, UOP_HOST_OUT) < 0) {
        Py_DECREF(r);
        return NULL;
    }
    return PyArray_Return(r);
}

/* ---- scan and segmented_scan -------------------------------------------------------------- */

/* out= itself as the array the backend writes (a new reference), when it can be: a NumPy array
 * of T's layout, C-contiguous, aligned, writeable, of the result's shape, and either the input
 * exactly (in place) or apart from it; else NULL (no exception: the result is then computed
 * aside and delivered). */
static PyArrayObject *direct_out(const uop *u, PyObject *out_obj, int nd, const npy_intp *shape)
{
    PyArrayObject *out = (PyArrayObject *)out_obj;
    char *o, *i;
    if (out_obj == Py_None || !PyArray_Check(out_obj) || !PyArray_ISCARRAY(out) ||
        PyArray_NDIM(out) != nd || !PyArray_CompareLists(PyArray_DIMS(out), shape, nd) ||
        !PyArray_EquivTypes(PyArray_DESCR(out), u->op->cdescr) ||
        (u->op->nfields > 0 &&
         PyObject_RichCompareBool((PyObject *)PyArray_DESCR(out), (PyObject *)u->op->dtype, Py_EQ) != 1)) {
        PyErr_Clear();
        return NULL;
    }
    o = PyArray_BYTES(out), i = PyArray_BYTES(u->in);
    if (o != i && o < i + PyArray_NBYTES(u->in) && i < o + PyArray_NBYTES(out))
        return NULL;
    return (PyArrayObject *)Py_NewRef(out_obj);
}

/* The scan of u->in along `axis` (-1: flattened, the result 1-D; -2: flattened, the result of
 * the input's shape) with `flags` (NULL, or C-contiguous bool of the input's shape),
 * delivered. */
static PyObject *uop_scan_run(uop *u, int axis, PyArrayObject *flags, int exclusive,
                              PyObject *out_obj)
{
    const int nd = PyArray_NDIM(u->in);
    int perm[GS_MAX_NDIM], back[GS_MAX_NDIM];
    npy_intp shape[GS_MAX_NDIM], n = PyArray_SIZE(u->in);
    PyArrayObject *src = NULL, *r = NULL, *view = NULL;
    PyObject *ret = NULL;
    gs_user_desc d;

    memset(&d, 0, sizeof(d));
    if (axis < 0 || nd <= 1) { /* flattened: the input is C-contiguous already */
        shape[0] = n;
        src = (PyArrayObject *)Py_NewRef(u->in);
        if (axis == -2 && nd != 1)
            memcpy(shape, PyArray_DIMS(u->in), sizeof(npy_intp) * (size_t)nd);
        r = direct_out(u, out_obj, axis == -2 ? nd : 1, shape);
        if (r != NULL) {
            out_obj = Py_None, u->direct = 1;
        } else if (u->own_in) { /* the call's own copy of the input: scanned in place */
            PyArray_Dims dims = { shape, axis == -2 ? nd : 1 };
            if ((r = (PyArrayObject *)PyArray_Newshape(u->in, &dims, NPY_CORDER)) == NULL)
                goto done;
        } else if ((r = t_array(u, axis == -2 ? nd : 1, shape)) == NULL) {
            goto done;
        }
        view = (PyArrayObject *)Py_NewRef(r);
    } else {
        for (int i = 0, k = 0; i < nd; i++)
            if (i != axis)
                perm[k++] = i;
        perm[nd - 1] = axis;
        for (int i = 0; i < nd; i++) {
            back[perm[i]] = i;
            shape[i] = PyArray_DIM(u->in, perm[i]);
        }
        if ((src = permuted(u->in, perm)) == NULL || (r = t_array(u, nd, shape)) == NULL)
            goto done;
        d.row_len = shape[nd - 1];
        PyArray_Dims dims = { (npy_intp *)NULL, nd };
        npy_intp b[GS_MAX_NDIM];
        for (int i = 0; i < nd; i++)
            b[i] = back[i];
        dims.ptr = b;
        if ((view = (PyArrayObject *)PyArray_Transpose(r, &dims)) == NULL)
            goto done;
    }
    d.in = PyArray_DATA(src);
    d.out = PyArray_DATA(r);
    d.flags = flags != NULL ? PyArray_DATA(flags) : NULL;
    d.n = n;
    d.exclusive = exclusive;
    if (n == 0 || uop_run(u, u->be->user_scan, &d, UOP_HOST) == 0)
        ret = uop_deliver(u, view, out_obj, 0);
done:
    Py_XDECREF(src);
    Py_XDECREF(r);
    Py_XDECREF(view);
    return ret;
}

/* algorithm= with an Operator: "auto" only. */
static int uop_algorithm(const char *algorithm)
{
    if (strcmp(algorithm, "auto") == 0)
        return 0;
    PyErr_Format(PyExc_ValueError, "an Operator scans with algorithm='auto' only, not '%s'",
                 algorithm);
    return -1;
}

PyObject *gs_uop_scan(PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "op", "exclusive", "axis", "dtype", "out", "algorithm", NULL };
    PyObject *a, *op, *axis_obj = Py_None, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    const char *algorithm = "auto";
    int exclusive = 0, axis = -1;
    gs_operand o;
    int dev;
    uop u = { 0 };

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$pOO&Os:scan", kwlist, &a, &op, &exclusive,
                                     &axis_obj, PyArray_DescrConverter2, &dtype, &out_obj,
                                     &algorithm))
        return NULL;
    if (uop_algorithm(algorithm) < 0 || uop_begin(&u, op, dtype, GS_USER_SCAN) < 0 ||
        (dev = uop_device_input(&u, a, &o)) < 0)
        goto done;
    if (dev) {
        ret = uop_device_scan(&u, &o, axis_obj, exclusive, out_obj);
        gs_operand_release(&o);
        goto done;
    }
    if (uop_input(&u, a) < 0)
        goto done;
    if (axis_obj != Py_None &&
        gs_normalize_axis(axis_obj, PyArray_NDIM(u.in) > 0 ? PyArray_NDIM(u.in) : 1, &axis) < 0)
        goto done;
    ret = uop_scan_run(&u, axis, NULL, exclusive, out_obj);
done:
    Py_XDECREF(u.in);
    Py_XDECREF(dtype);
    return ret;
}

PyObject *gs_uop_segmented_scan(PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "flags", "op", "exclusive", "dtype", "out", "algorithm", NULL };
    PyObject *a, *flags_obj, *op, *out_obj = Py_None, *ret = NULL, *f = NULL;
    PyArrayObject *flags = NULL;
    int64_t ashape[GS_MAX_NDIM], fshape[GS_MAX_NDIM];
    PyArray_Descr *dtype = NULL;
    const char *algorithm = "auto";
    int exclusive = 0, dev;
    gs_operand o;
    uop u = { 0 };

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$pO&Os:segmented_scan", kwlist, &a,
                                     &flags_obj, &op, &exclusive, PyArray_DescrConverter2, &dtype,
                                     &out_obj, &algorithm))
        return NULL;
    if (uop_algorithm(algorithm) < 0 || uop_begin(&u, op, dtype, GS_USER_SCAN_SEG) < 0 ||
        (dev = uop_device_input(&u, a, &o)) < 0)
        goto done;
    if (dev) {
        ret = uop_device_segmented_scan(&u, &o, flags_obj, exclusive, out_obj);
        gs_operand_release(&o);
        goto done;
    }
    if (uop_input(&u, a) < 0)
        goto done;
    /* The flags: any dtype, exactly a's shape, as bytes (nonzero: a head). */
    if ((f = PyArray_FromAny(flags_obj, NULL, 0, 0, 0, NULL)) == NULL)
        goto done;
    for (int i = 0; i < PyArray_NDIM(u.in); i++)
        ashape[i] = PyArray_DIM(u.in, i);
    for (int i = 0; i < PyArray_NDIM((PyArrayObject *)f); i++)
        fshape[i] = PyArray_DIM((PyArrayObject *)f, i);
    if (gs_check_same_shape("flags", PyArray_NDIM((PyArrayObject *)f), fshape, "a",
                            PyArray_NDIM(u.in), ashape) < 0)
        goto done;
    flags = (PyArrayObject *)PyArray_FromAny(f, PyArray_DescrFromType(NPY_BOOL), 0, 0,
                                             NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST, NULL);
    if (flags == NULL)
        goto done;
    /* The result has a's shape; the scan runs over it in C order. */
    ret = uop_scan_run(&u, -2, flags, exclusive, out_obj);
done:
    Py_XDECREF(f);
    Py_XDECREF(flags);
    Py_XDECREF(u.in);
    Py_XDECREF(dtype);
    return ret;
}

/* ---- reduce ------------------------------------------------------------------------------- */

_Static_assert(GS_USER_MAX_SIZE <= GS_SELECT_MAX_SIZE, "a selection moves any T");

/* where=: u->in becomes a copy whose values the mask leaves out are the operator's identity
 * (the backend's select over the host copy, T of any size), so that a reduction over every value
 * of it is the one over the values the mask keeps.  The mask as NumPy's: a bool array (or what
 * converts to one by a safe cast), broadcast to the input's shape. */
static int uop_where(uop *u, PyObject *where)
{
    PyObject *numpy = NULL, *shape = NULL, *b = NULL;
    PyArrayObject *mask, *copy = NULL;
    gs_select_desc d;
    gs_fail f = { 0 };
    int rc = -1;

    mask = (PyArrayObject *)PyArray_FromAny(where, PyArray_DescrFromType(NPY_BOOL), 0, 0, 0, NULL);
    if (mask == NULL || (numpy = PyImport_ImportModule("numpy")) == NULL ||
        (shape = PyObject_GetAttrString((PyObject *)u->in, "shape")) == NULL ||
        (b = PyObject_CallMethod(numpy, "broadcast_to", "OO", (PyObject *)mask, shape)) == NULL)
        goto done;
    Py_SETREF(mask, (PyArrayObject *)PyArray_FromAny(b, NULL, 0, 0, NPY_ARRAY_CARRAY, NULL));
    if (mask == NULL || (copy = (PyArrayObject *)PyArray_NewCopy(u->in, NPY_CORDER)) == NULL)
        goto done;
    memset(&d, 0, sizeof(d));
    d.in = d.out = PyArray_DATA(copy);
    d.mask = PyArray_DATA(mask);
    d.n = PyArray_SIZE(copy);
    d.size = PyArray_ITEMSIZE(copy);
    memcpy(d.fill, u->op->identity, (size_t)d.size);
    GS_BEGIN_UNLOCKED
        rc = gs_backend_table(GS_BACKEND_CPU)->select(&d, &f);
    GS_END_UNLOCKED
    if (rc < 0) {
        gs_raise(&f);
        goto done;
    }
    Py_SETREF(u->in, copy);
    copy = NULL;
done:
    Py_XDECREF(mask);
    Py_XDECREF(numpy);
    Py_XDECREF(shape);
    Py_XDECREF(b);
    Py_XDECREF(copy);
    return rc;
}

PyObject *gs_uop_reduce(PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a",       "op",  "axis",  "dtype", "keepdims",
                              "initial", "out", "where", NULL };
    PyObject *a, *op, *axis_obj = Py_None, *initial = Py_None, *out_obj = Py_None, *where = Py_True;
    PyObject *ret = NULL;
    PyArray_Descr *dtype = NULL;
    PyArrayObject *src = NULL, *r = NULL, *view = NULL;
    unsigned char reduced[GS_MAX_NDIM];
    char start[GS_USER_MAX_SIZE];
    npy_intp kept[GS_MAX_NDIM], kshape[GS_MAX_NDIM];
    int keepdims = 0, perm[GS_MAX_NDIM], nd, nk = 0;
    gs_operand o;
    int dev;
    uop u = { 0 };
    gs_user_desc d;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OO&pOOO:reduce", kwlist, &a, &op,
                                     &axis_obj, PyArray_DescrConverter2, &dtype, &keepdims,
                                     &initial, &out_obj, &where))
        return NULL;
    if (uop_begin(&u, op, dtype, GS_USER_FOLD) < 0)
        goto done;
    if (initial != Py_None && gs_operator_value(u.op, initial, "initial", start) < 0)
        goto done;
    if ((dev = uop_device_input(&u, a, &o)) != 0) {
        if (dev > 0 && where != Py_True)
            PyErr_SetString(PyExc_NotImplementedError,
                            "where= with an Operator takes NumPy input; for a device array, "
                            "replace the left-out values by the operator's identity first");
        else if (dev > 0)
            ret = uop_device_reduce(&u, &o, axis_obj, keepdims, initial != Py_None ? start : NULL,
                                    out_obj);
        gs_operand_release(&o);
        goto done;
    }
    if (uop_input(&u, a) < 0 || (where != Py_True && uop_where(&u, where) < 0) ||
        gs_parse_axes(axis_obj, PyArray_NDIM(u.in), reduced) < 0)
        goto done;
    /* The kept axes first, then the reduced ones, each in order: rows x row_len in C order. */
    nd = PyArray_NDIM(u.in);
    memset(&d, 0, sizeof(d));
    d.rows = 1;
    d.row_len = 1;
    for (int i = 0; i < nd; i++)
        if (!reduced[i]) {
            perm[nk] = i;
            kept[nk++] = PyArray_DIM(u.in, i);
            d.rows *= PyArray_DIM(u.in, i);
        }
    for (int i = 0, k = nk; i < nd; i++) {
        kshape[i] = reduced[i] ? 1 : PyArray_DIM(u.in, i);
        if (reduced[i]) {
            perm[k++] = i;
            d.row_len *= PyArray_DIM(u.in, i);
        }
    }
    if ((src = permuted(u.in, perm)) == NULL || (r = t_array(&u, nk, kept)) == NULL)
        goto done;
    d.in = PyArray_DATA(src);
    d.out = PyArray_DATA(r);
    d.initial = initial != Py_None ? start : NULL;
    if (d.rows > 0 && uop_run(&u, u.be->user_reduce, &d, UOP_HOST) < 0)
        goto done;
    if (keepdims) {
        PyArray_Dims dims = { kshape, nd };
        view = (PyArrayObject *)PyArray_Newshape(r, &dims, NPY_CORDER);
    } else {
        view = (PyArrayObject *)Py_NewRef(r);
    }
    if (view != NULL)
        ret = uop_deliver(&u, view, out_obj, PyArray_NDIM(view) == 0);
done:
    Py_XDECREF(src);
    Py_XDECREF(r);
    Py_XDECREF(view);
    Py_XDECREF(u.in);
    Py_XDECREF(dtype);
    return ret;
}

/* ---- reduceat and segmented_reduce -------------------------------------------------------- */

/* The segments of rows of n values of `src` (its last axis) into r: starts (and ends, NULL
 * for a sorted partition) of nseg segments. */
static int uop_segments(uop *u, PyArrayObject *src, PyArrayObject *r, int64_t n,
                        const int64_t *starts, const int64_t *ends, int64_t nseg)
{
    gs_user_desc d;
    memset(&d, 0, sizeof(d));
    d.in = PyArray_DATA(src);
    d.out = PyArray_DATA(r);
    d.starts = starts;
    d.ends = ends;
    d.n = n;
    d.nseg = nseg;
    d.rows = n > 0 ? PyArray_SIZE(src) / n : 0;
    return d.rows * nseg == 0 ? 0 : uop_run(u, u->be->user_segreduce, &d, UOP_HOST);
}

PyObject *gs_uop_reduceat(PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "indices", "op", "axis", "dtype", "out", NULL };
    PyObject *a, *ind_obj, *op, *axis_obj = NULL, *out_obj = Py_None, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    PyArrayObject *idx = NULL, *src = NULL, *r = NULL, *view = NULL;
    int64_t *ends = NULL, m, n;
    int axis = 0, nd, perm[GS_MAX_NDIM];
    npy_intp shape[GS_MAX_NDIM], back[GS_MAX_NDIM];
    uop u = { 0 };

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$OO&O:reduceat", kwlist, &a, &ind_obj,
                                     &op, &axis_obj, PyArray_DescrConverter2, &dtype, &out_obj))
        return NULL;
    if (uop_begin(&u, op, dtype, GS_USER_FOLD) < 0 || uop_input(&u, a) < 0)
        goto done;
    nd = PyArray_NDIM(u.in);
    if (nd == 0) {
        PyErr_SetString(PyExc_TypeError, "reduceat needs an array of at least one dimension");
        goto done;
    }
    if (axis_obj != NULL && axis_obj != Py_None && gs_normalize_axis(axis_obj, nd, &axis) < 0)
        goto done;
    idx = (PyArrayObject *)PyArray_FromAny(ind_obj, PyArray_DescrFromType(NPY_INT64), 1, 1,
                                           NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST, NULL);
    if (idx == NULL)
        goto done;
    m = PyArray_SIZE(idx);
    n = PyArray_DIM(u.in, axis);
    const int64_t *starts = PyArray_DATA(idx);
    if ((ends = PyMem_Malloc(sizeof(int64_t) * (size_t)(m > 0 ? m : 1))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t i = 0; i < m; i++) {
        if (starts[i] < 0 || starts[i] >= n) {
            PyErr_Format(PyExc_IndexError, "index %lld out-of-bounds in reduceat [0, %lld)",
                         (long long)starts[i], (long long)n);
            goto done;
        }
    }
    for (int64_t i = 0; i < m; i++) /* NumPy's rule: an index not below the next gives a[i] */
        ends[i] = i + 1 == m ? n : starts[i] < starts[i + 1] ? starts[i + 1] : starts[i] + 1;
    /* The axis last; the result has m values along it. */
    for (int i = 0, k = 0; i < nd; i++)
        if (i != axis)
            perm[k++] = i;
    perm[nd - 1] = axis;
    for (int i = 0; i < nd; i++) {
        back[perm[i]] = i;
        shape[i] = i == nd - 1 ? m : PyArray_DIM(u.in, perm[i]);
    }
    if ((src = permuted(u.in, perm)) == NULL || (r = t_array(&u, nd, shape)) == NULL ||
        uop_segments(&u, src, r, n, starts, ends, m) < 0)
        goto done;
    PyArray_Dims dims = { back, nd };
    if ((view = (PyArrayObject *)PyArray_Transpose(r, &dims)) != NULL)
        ret = uop_deliver(&u, view, out_obj, 0);
done:
    PyMem_Free(ends);
    Py_XDECREF(idx);
    Py_XDECREF(src);
    Py_XDECREF(r);
    Py_XDECREF(view);
    Py_XDECREF(u.in);
    Py_XDECREF(dtype);
    return ret;
}

PyObject *gs_uop_segmented_reduce(PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "flags", "op", "dtype", NULL };
    PyObject *a, *flags_obj, *op, *ret = NULL;
    PyArray_Descr *dtype = NULL;
    PyArrayObject *flags = NULL, *r = NULL;
    int64_t *starts = NULL, nseg = 0, n;
    const unsigned char *fl;
    npy_intp len;
    uop u = { 0 };

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$O&:segmented_reduce", kwlist, &a,
                                     &flags_obj, &op, PyArray_DescrConverter2, &dtype))
        return NULL;
    if (uop_begin(&u, op, dtype, GS_USER_FOLD) < 0 || uop_input(&u, a) < 0)
        goto done;
    flags = (PyArrayObject *)PyArray_FromAny(flags_obj, PyArray_DescrFromType(NPY_BOOL), 0, 0,
                                             NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST, NULL);
    if (flags == NULL)
        goto done;
    n = PyArray_SIZE(u.in);
    if (PyArray_SIZE(flags) != n || PyArray_NDIM(flags) != PyArray_NDIM(u.in) ||
        !PyArray_CompareLists(PyArray_DIMS(flags), PyArray_DIMS(u.in), PyArray_NDIM(u.in))) {
        PyErr_SetString(PyExc_ValueError, "flags must have a's shape");
        goto done;
    }
    if ((starts = PyMem_Malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    fl = PyArray_DATA(flags);
    for (int64_t i = 0; i < n; i++) /* the heads: element 0 and every flagged one */
        if (i == 0 || fl[i])
            starts[nseg++] = i;
    len = nseg;
    if ((r = t_array(&u, 1, &len)) == NULL ||
        uop_segments(&u, u.in, r, n, starts, NULL, nseg) < 0)
        goto done;
    ret = uop_deliver(&u, r, Py_None, 0);
done:
    PyMem_Free(starts);
    Py_XDECREF(flags);
    Py_XDECREF(r);
    Py_XDECREF(u.in);
    Py_XDECREF(dtype);
    return ret;
}
