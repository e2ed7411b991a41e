/*
 * binding/operand.c - Python arguments as the host layer sees them: a NumPy array, or a view of
 * device memory owned by someone else.
 * Level: binding.  Recognises, in this order: gpuscan.DeviceArray; NumPy arrays; objects
 * exposing __cuda_array_interface__ (versions 0-3: CuPy, PyTorch, Numba); objects whose
 * __dlpack_device__() is a CUDA device (the "dltensor" capsule is consumed, renamed
 * "used_dltensor" and its deleter called on release); anything else through PyArray_FromAny.
 * Device memory is used in place: nothing is copied here.  A device argument on the CPU backend
 * is a TypeError saying why the backend is the CPU one.
 */
#include "binding/binding.h"

#include "binding/dlpack.h"
#include "cuda/cuda.h"

/* ---- detection ---------------------------------------------------------------------------- */

/* getattr(obj, name) with a missing attribute as *out == NULL and no error.  PyTorch raises
 * AttributeError from __cuda_array_interface__ on CPU tensors, which counts as missing. */
static int get_optional_attr(PyObject *obj, const char *name, PyObject **out)
{
    *out = PyObject_GetAttrString(obj, name);
    if (*out != NULL)
        return 0;
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* The __dlpack_device__() of obj: *device_type 0 when it has none. */
static int dlpack_device(PyObject *obj, int *device_type, int *device_id)
{
    PyObject *meth = NULL, *res = NULL;
    int rc = -1;

    *device_type = 0;
    *device_id = 0;
    if (get_optional_attr(obj, "__dlpack_device__", &meth) < 0)
        goto done;
    if (meth == NULL) {
        rc = 0;
        goto done;
    }
    res = PyObject_CallNoArgs(meth);
    if (res == NULL)
        goto done;
    if (!PyArg_ParseTuple(res, "ii;__dlpack_device__() must return (device_type, device_id)",
                          device_type, device_id))
        goto done;
    rc = 0;
done:
    Py_XDECREF(meth);
    Py_XDECREF(res);
    return rc;
}

static int is_cuda_dl_device(int device_type)
{
    /* kDLCUDA, and kDLCUDAManaged (13), which the device reads as well. */
    return device_type == GS_DL_CUDA || device_type == 13;
}

/* Whether obj has __cuda_array_interface__ or __dlpack_device__ (gpuscan's DeviceArray has
 * both), without reading the interface where that can be helped: a type defining
 * __dlpack_device__ (CuPy's arrays, PyTorch's tensors) answers for its instances, since a
 * method is there whatever the device; otherwise the instance is asked, which runs an interface
 * property (CuPy and PyTorch build its dict anew on every read) and counts one that raises
 * AttributeError (old PyTorch's CPU tensors) as absent. Not a proof of device memory: a CPU
 * tensor has __dlpack_device__ too. Code that must not copy a device array to the host asks. */
int gs_device_like(PyObject *obj)
{
    static PyObject *cai_name, *dl_name;

    if (gs_DeviceArray_Check(obj))
        return 1;
    if (cai_name == NULL &&
        (cai_name = PyUnicode_InternFromString("__cuda_array_interface__")) == NULL)
        return -1;
    if (dl_name == NULL && (dl_name = PyUnicode_InternFromString("__dlpack_device__")) == NULL)
        return -1;
    if (PyObject_HasAttr((PyObject *)Py_TYPE(obj), dl_name))
        return 1;
    return PyObject_HasAttr(obj, cai_name) || PyObject_HasAttr(obj, dl_name);
}

/* 1 when obj is a device object, 0 when not, -1 on error; *cai its __cuda_array_interface__
 * (a new reference) when it has one, else NULL, so that the caller reads it once (CuPy and
 * PyTorch build the dict anew on every read: about a microsecond). */
static int device_object(PyObject *obj, PyObject **cai)
{
    int type, id;

    *cai = NULL;
    if (gs_DeviceArray_Check(obj))
        return 1;
    if (PyArray_Check(obj))
        return 0;
    if (get_optional_attr(obj, "__cuda_array_interface__", cai) < 0)
        return -1;
    if (*cai != NULL)
        return 1;
    if (dlpack_device(obj, &type, &id) < 0)
        return -1;
    return is_cuda_dl_device(type);
}

/* ---- __cuda_array_interface__ ------------------------------------------------------------- */

/* An int64 from a Python int, or -1 with TypeError naming `what`. */
static int as_int64(PyObject *obj, const char *what, int64_t *out)
{
    long long v;
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "__cuda_array_interface__: %s must be an int", what);
        return -1;
    }
    v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* Shape or strides: a tuple of ints of length ndim (ndim < 0: take its length). */
static int int_tuple(PyObject *obj, const char *what, int *ndim, int64_t *out)
{
    Py_ssize_t len;
    if (!PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "__cuda_array_interface__: %s must be a tuple", what);
        return -1;
    }
    len = PyTuple_GET_SIZE(obj);
    if (*ndim < 0) {
        if (len > GS_MAX_NDIM) {
            PyErr_Format(PyExc_ValueError, "device arrays may have at most %d dimensions",
                         GS_MAX_NDIM);
            return -1;
        }
        *ndim = (int)len;
    } else if (len != *ndim) {
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__: %s has %zd entries, not %d", what,
                     len, *ndim);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++)
        if (as_int64(PyTuple_GET_ITEM(obj, i), what, &out[i]) < 0)
            return -1;
    return 0;
}

/* The dtype of a typestr such as "<f8" or "|b1". */
static int typestr_dtype(PyObject *typestr, gs_dtype *out)
{
    const char *s;
    if (!PyUnicode_Check(typestr)) {
        PyErr_SetString(PyExc_TypeError, "__cuda_array_interface__: typestr must be a str");
        return -1;
    }
    s = PyUnicode_AsUTF8(typestr);
    if (s == NULL)
        return -1;
    if (strlen(s) >= 3 && strchr("<>|=", s[0]) != NULL &&
        gs_dtype_from_kind(s[1], atoi(s + 2), out) == 0) {
        if (s[0] == '>' && gs_dtype_size(*out) > 1) {
            PyErr_SetString(PyExc_TypeError, "big-endian device arrays are not supported");
            return -1;
        }
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "device array typestr '%s' is not supported; supported dtypes: %s", s,
                 gs_supported_dtypes());
    return -1;
}

/* The interface's keys, made once (under the GIL): a lookup by a C string builds and hashes a
 * new str each time. */
enum { CAI_SHAPE, CAI_TYPESTR, CAI_DATA, CAI_STRIDES, CAI_MASK, CAI_STREAM, CAI_KEYS };

static PyObject *cai_key(int k)
{
    static const char *const names[CAI_KEYS] = { "shape",   "typestr", "data",
                                                 "strides", "mask",    "stream" };
    static PyObject *keys[CAI_KEYS];

    if (keys[k] == NULL)
        keys[k] = PyUnicode_InternFromString(names[k]);
    return keys[k];
}

/* cai[key] (borrowed), NULL when absent; -1 on error. */
static int cai_get(PyObject *cai, int k, PyObject **item)
{
    PyObject *key = cai_key(k);

    *item = key != NULL ? PyDict_GetItemWithError(cai, key) : NULL;
    return *item == NULL && PyErr_Occurred() ? -1 : 0;
}

static int operand_from_cai(PyObject *obj, PyObject *cai, gs_operand *op)
{
    PyObject *item;
    int64_t ptr = 0, stream;
    int ndim = -1;
    gs_fail f = { 0 };
    char why[256];

    if (!PyDict_Check(cai)) {
        PyErr_SetString(PyExc_TypeError, "__cuda_array_interface__ must be a dict");
        return -1;
    }
    if (cai_get(cai, CAI_SHAPE, &item) < 0)
        return -1;
    if (item == NULL) {
        PyErr_SetString(PyExc_ValueError, "__cuda_array_interface__ has no 'shape'");
        return -1;
    }
    if (int_tuple(item, "shape", &ndim, op->view.shape) < 0)
        return -1;
    op->view.ndim = ndim;
    if (cai_get(cai, CAI_TYPESTR, &item) < 0)
        return -1;
    if (item == NULL) {
        PyErr_SetString(PyExc_ValueError, "__cuda_array_interface__ has no 'typestr'");
        return -1;
    }
    if (typestr_dtype(item, &op->view.dtype) < 0)
        return -1;
    if (cai_get(cai, CAI_DATA, &item) < 0)
        return -1;
    if (item == NULL || !PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_ValueError,
                        "__cuda_array_interface__: 'data' must be a (pointer, readonly) tuple");
        return -1;
    }
    if (as_int64(PyTuple_GET_ITEM(item, 0), "data pointer", &ptr) < 0)
        return -1;
    op->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(item, 1));
    if (op->readonly < 0)
        return -1;
    op->view.ptr = (char *)(uintptr_t)ptr;
    if (cai_get(cai, CAI_STRIDES, &item) < 0)
        return -1;
    if (item == NULL || item == Py_None)
        gs_view_set_c_strides(&op->view);
    else if (int_tuple(item, "strides", &ndim, op->view.strides) < 0)
        return -1;
    if (cai_get(cai, CAI_MASK, &item) < 0)
        return -1;
    if (item != NULL && item != Py_None) {
        PyErr_SetString(PyExc_TypeError, "masked device arrays are not supported");
        return -1;
    }
    /* Version 3: order our stream after the producer's pending work on its stream. */
    if (cai_get(cai, CAI_STREAM, &item) < 0)
        return -1;
    if (item != NULL && item != Py_None) {
        if (as_int64(item, "stream", &stream) < 0)
            return -1;
        if (stream == 0) {
            PyErr_SetString(PyExc_ValueError,
                            "__cuda_array_interface__: stream 0 is disallowed (ambiguous)");
            return -1;
        }
        if (gs_cuda_wait_foreign((uintptr_t)stream, &f) < 0)
            return gs_raise(&f);
        op->foreign_stream = (uintptr_t)stream;
    }
    if (gs_view_size(&op->view) > 0 && gs_cuda_check_pointer(op->view.ptr, why, sizeof(why)) < 0) {
        PyErr_SetString(PyExc_ValueError, why);
        return -1;
    }
    Py_INCREF(obj);
    op->owner = obj;
    return 0;
}

/* ---- DLPack ------------------------------------------------------------------------------- */

static int dl_dtype(gs_DLDataType t, gs_dtype *out)
{
    static const char kinds[] = {
        [GS_DL_INT] = 'i', [GS_DL_UINT] = 'u', [GS_DL_FLOAT] = 'f', [GS_DL_BOOL] = 'b'
    };
    if (t.lanes == 1 && t.code < sizeof(kinds) && kinds[t.code] != 0 && t.bits % 8 == 0 &&
        gs_dtype_from_kind(kinds[t.code], t.bits / 8, out) == 0)
        return 0;
    PyErr_Format(PyExc_TypeError,
                 "DLPack dtype (code %d, bits %d, lanes %d) is not supported; supported dtypes: %s",
                 (int)t.code, (int)t.bits, (int)t.lanes, gs_supported_dtypes());
    return -1;
}

static int operand_from_dlpack(PyObject *obj, gs_operand *op)
{
    PyObject *meth = NULL, *empty = NULL, *kwargs = NULL, *capsule = NULL;
    gs_DLManagedTensor *managed;
    gs_DLTensor *t;
    int rc = -1;

    /* The producer makes the stream we pass wait for its pending work on the tensor. */
    meth = PyObject_GetAttrString(obj, "__dlpack__");
    if (meth == NULL)
        goto done;
    empty = PyTuple_New(0);
    kwargs = Py_BuildValue("{s:K}", "stream", (unsigned long long)gs_cuda_stream_handle());
    if (empty == NULL || kwargs == NULL)
        goto done;
    capsule = PyObject_Call(meth, empty, kwargs);
    if (capsule == NULL)
        goto done;
    managed = PyCapsule_GetPointer(capsule, GS_DL_CAPSULE);
    if (managed == NULL)
        goto done;
    t = &managed->dl_tensor;
    if (!is_cuda_dl_device(t->device.device_type)) {
        PyErr_Format(PyExc_ValueError, "__dlpack__ gave a tensor on device type %d, not CUDA",
                     (int)t->device.device_type);
        goto done;
    }
    if (t->device.device_type == GS_DL_CUDA && t->device.device_id != gs_cuda_device_ordinal()) {
        PyErr_Format(PyExc_ValueError,
                     "the array is on CUDA device %d but gpuscan runs on device %d",
                     (int)t->device.device_id, gs_cuda_device_ordinal());
        goto done;
    }
    if (t->ndim < 0 || t->ndim > GS_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "device arrays may have at most %d dimensions", GS_MAX_NDIM);
        goto done;
    }
    if (dl_dtype(t->dtype, &op->view.dtype) < 0)
        goto done;
    op->view.ndim = t->ndim;
    op->view.ptr = (char *)t->data + t->byte_offset;
    for (int i = 0; i < t->ndim; i++)
        op->view.shape[i] = t->shape[i];
    if (t->strides == NULL)
        gs_view_set_c_strides(&op->view);
    else
        for (int i = 0; i < t->ndim; i++)
            op->view.strides[i] = t->strides[i] * (int64_t)gs_dtype_size(op->view.dtype);
    /* Take ownership: the producer's capsule destructor no longer frees the tensor. */
    if (PyCapsule_SetName(capsule, GS_DL_CAPSULE_USED) < 0)
        goto done;
    op->managed = managed;
    op->owner = capsule;
    capsule = NULL;
    rc = 0;
done:
    Py_XDECREF(meth);
    Py_XDECREF(empty);
    Py_XDECREF(kwargs);
    Py_XDECREF(capsule);
    return rc;
}

/* ---- operands ----------------------------------------------------------------------------- */

/* op->view of a NumPy operand of dtype t (its own byte order and strides). */
static void host_view(gs_operand *op, gs_dtype t)
{
    PyArrayObject *a = op->host;

    memset(&op->view, 0, sizeof(op->view));
    op->view.ptr = PyArray_BYTES(a);
    op->view.dtype = t;
    op->view.mem = GS_MEM_HOST;
    op->view.swapped = !PyArray_ISNOTSWAPPED(a);
    op->view.ndim = PyArray_NDIM(a);
    for (int i = 0; i < op->view.ndim; i++) {
        op->view.shape[i] = PyArray_DIM(a, i);
        op->view.strides[i] = PyArray_STRIDE(a, i);
    }
}

/* A device object as an operand (the CUDA backend is active); cai its interface or NULL. */
static int device_operand(PyObject *obj, PyObject *cai, gs_operand *op)
{
    int rc;

    op->on_device = 1;
    if (gs_DeviceArray_Check(obj)) {
        gs_devarray_view((gs_DeviceArray *)obj, &op->view);
        op->owner = Py_NewRef(obj);
        return 0;
    }
    rc = cai != NULL ? operand_from_cai(obj, cai, op) : operand_from_dlpack(obj, op);
    op->view.mem = GS_MEM_DEVICE;
    return rc;
}

/* 1 when obj is a numpy.ma.MaskedArray (which PyArray_FromAny would silently unmask), 0 when
 * not, -1 on error.  Only ndarray subclasses are asked: plain arrays cost nothing. */
static int is_masked(PyObject *obj)
{
    PyObject *ma, *cls;
    int rc;

    if (!PyArray_Check(obj) || PyArray_CheckExact(obj))
        return 0;
    if ((ma = PyImport_ImportModule("numpy.ma")) == NULL)
        return -1;
    cls = PyObject_GetAttrString(ma, "MaskedArray");
    Py_DECREF(ma);
    if (cls == NULL)
        return -1;
    rc = PyObject_IsInstance(obj, cls);
    Py_DECREF(cls);
    return rc;
}

int gs_operand_get_device(PyObject *obj, gs_operand *op)
{
    PyObject *cai;
    int rc;

    memset(op, 0, sizeof(*op));
    rc = device_object(obj, &cai);
    if (rc <= 0)
        return rc;
    rc = gs_require_cuda() < 0 ? -1 : device_operand(obj, cai, op);
    Py_XDECREF(cai);
    if (rc < 0) {
        gs_operand_release(op);
        return -1;
    }
    return 1;
}

/* gs_operand_get, or, when `array_only` names the argument, gs_operand_get_array. */
static int operand_get(PyObject *obj, gs_operand *op, const char *array_only)
{
    int masked, rc = gs_operand_get_device(obj, op);

    if (rc != 0)
        return rc < 0 ? -1 : 0;
    if (array_only != NULL && !PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a NumPy array or a device array, not %.100s",
                     array_only, Py_TYPE(obj)->tp_name);
        return -1;
    }
    if ((masked = is_masked(obj)) != 0) {
        if (masked > 0)
            PyErr_SetString(PyExc_TypeError,
                            "masked arrays are not supported: their masks would be ignored; "
                            "pass a.filled(<identity>) or a.compressed() instead");
        return -1;
    }
    op->host = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (op->host == NULL)
        return -1;
    op->readonly = !PyArray_ISWRITEABLE(op->host);
    return 0;
}

int gs_operand_get(PyObject *obj, gs_operand *op)
{
    return operand_get(obj, op, NULL);
}

int gs_operand_get_array(PyObject *obj, gs_operand *op, const char *what)
{
    return operand_get(obj, op, what);
}

void gs_operand_release(gs_operand *op)
{
    gs_DLManagedTensor *managed = op->managed;

    op->managed = NULL;
    if (managed != NULL && managed->deleter != NULL)
        managed->deleter(managed);
    Py_CLEAR(op->owner);
    Py_CLEAR(op->host);
}

int gs_operand_info(gs_operand *op, const char *what, gs_dtype *dtype, int *ndim, int64_t *shape)
{
    if (!op->on_device) {
        if (gs_dtype_from_descr(PyArray_DESCR(op->host), what, dtype) < 0)
            return -1;
        if (PyArray_NDIM(op->host) > GS_MAX_NDIM) {
            PyErr_Format(PyExc_ValueError, "arrays may have at most %d dimensions", GS_MAX_NDIM);
            return -1;
        }
        host_view(op, *dtype);
        gs_hold_host(op->host, &op->view);
    }
    *dtype = op->view.dtype;
    *ndim = op->view.ndim;
    memcpy(shape, op->view.shape, sizeof(int64_t) * (size_t)op->view.ndim);
    return 0;
}

int gs_operand_release_foreign(const gs_operand *op)
{
    gs_fail f = { 0 };

    if (!op->on_device || gs_DeviceArray_Check(op->owner))
        return 0;
    if (op->foreign_stream == 0)
        return gs_sync();
    return gs_cuda_signal_foreign(op->foreign_stream, &f) < 0 ? gs_raise(&f) : 0;
}
