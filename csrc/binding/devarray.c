/*
 * binding/devarray.c - gpuscan.DeviceArray's Python type, a C-contiguous array in device memory
 * (core/core.h has its struct and makes new ones), and to_device().
 * Level: binding.  A DeviceArray either owns a pool allocation (freed with cudaFreeAsync on
 * gpuscan's stream when it dies, so the memory is reused only after the work that reads it) or
 * keeps its memory's owner alive.  It speaks both device-array protocols: a version 3
 * __cuda_array_interface__ naming gpuscan's stream, and __dlpack__ / __dlpack_device__ with a
 * legacy "dltensor" capsule that keeps the array alive until the consumer calls its deleter.
 * Results stay on the device until .get() or np.asarray() asks for them.
 */
#include "binding/binding.h"

#include "binding/dlpack.h"
#include "cuda/cuda.h"

static PyObject *shape_tuple(const gs_DeviceArray *a)
{
    PyObject *t = PyTuple_New(a->ndim);
    if (t == NULL)
        return NULL;
    for (int i = 0; i < a->ndim; i++) {
        PyObject *d = PyLong_FromLongLong(a->shape[i]);
        if (d == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* A new DeviceArray holding a copy of `src` (any strides, host or device), converted to
 * `dtype`. */
static gs_DeviceArray *devarray_copy_of(const gs_view *src, gs_dtype dtype)
{
    gs_DeviceArray *a = gs_devarray_new(src->ndim, src->shape, dtype);
    gs_bag bag = { 0 };
    gs_view dst;

    if (a == NULL)
        return NULL;
    gs_devarray_view(a, &dst);
    if (gs_move(src, &dst, &bag) < 0)
        Py_CLEAR(a);
    gs_bag_free(&bag);
    return a;
}

static void devarray_dealloc(gs_DeviceArray *self)
{
    if (self->owns)
        gs_cuda_free(self->data);
    Py_XDECREF(self->base);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- attributes --------------------------------------------------------------------------- */

static PyObject *devarray_get_shape(gs_DeviceArray *self, void *closure)
{
    return shape_tuple(self);
}

static PyObject *devarray_get_dtype(gs_DeviceArray *self, void *closure)
{
    return (PyObject *)gs_descr(self->dtype);
}

static PyObject *devarray_get_size(gs_DeviceArray *self, void *closure)
{
    return PyLong_FromLongLong(gs_shape_size(self->ndim, self->shape));
}

static PyObject *devarray_get_ndim(gs_DeviceArray *self, void *closure)
{
    return PyLong_FromLong(self->ndim);
}

static PyObject *devarray_get_nbytes(gs_DeviceArray *self, void *closure)
{
    return PyLong_FromLongLong(gs_shape_size(self->ndim, self->shape) *
                               (int64_t)gs_dtype_size(self->dtype));
}

static PyObject *devarray_get_strides(gs_DeviceArray *self, void *closure)
{
    gs_view v;
    PyObject *t;

    gs_devarray_view(self, &v);
    t = PyTuple_New(v.ndim);
    if (t == NULL)
        return NULL;
    for (int i = 0; i < v.ndim; i++) {
        PyObject *s = PyLong_FromLongLong(v.strides[i]);
        if (s == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static PyObject *devarray_get_device(gs_DeviceArray *self, void *closure)
{
    return PyLong_FromLong(self->device);
}

/* The typestr of the array interfaces: byte order, kind, item size ("<f8", "|b1"). */
static PyObject *typestr(gs_dtype t)
{
    size_t size = gs_dtype_size(t);
    return PyUnicode_FromFormat("%c%c%d", size == 1 ? '|' : '<', gs_dtype_kind(t), (int)size);
}

static PyObject *devarray_get_cai(gs_DeviceArray *self, void *closure)
{
    PyObject *shape = NULL, *ts = NULL, *res = NULL;
    unsigned long long stream = (unsigned long long)gs_cuda_stream_handle();

    shape = shape_tuple(self);
    ts = typestr(self->dtype);
    if (shape == NULL || ts == NULL)
        goto done;
    res = Py_BuildValue("{s:O,s:O,s:(KO),s:O,s:i,s:K}", "shape", shape, "typestr", ts, "data",
                        (unsigned long long)(uintptr_t)self->data, Py_False, "strides", Py_None,
                        "version", 3, "stream", stream);
done:
    Py_XDECREF(shape);
    Py_XDECREF(ts);
    return res;
}

/* ---- DLPack export ------------------------------------------------------------------------ */

/* Called by the consumer when done (from any thread): drop the array the tensor kept alive. */
static void dl_deleter(gs_DLManagedTensor *managed)
{
    PyGILState_STATE gil;

    /* At interpreter exit nothing may be touched any more; the memory goes with the process. */
    if (!Py_IsInitialized())
        return;
    gil = PyGILState_Ensure();
    Py_XDECREF((PyObject *)managed->manager_ctx);
    PyMem_RawFree(managed);
    PyGILState_Release(gil);
}

/* A capsule that no consumer took still owns its tensor. */
static void dl_capsule_destructor(PyObject *capsule)
{
    gs_DLManagedTensor *managed;
    PyObject *type, *value, *tb;

    if (!PyCapsule_IsValid(capsule, GS_DL_CAPSULE))
        return;
    PyErr_Fetch(&type, &value, &tb);
    managed = PyCapsule_GetPointer(capsule, GS_DL_CAPSULE);
    if (managed != NULL)
        managed->deleter(managed);
    else
        PyErr_WriteUnraisable(capsule);
    PyErr_Restore(type, value, tb);
}

static gs_DLDataType dl_type(gs_dtype t)
{
    gs_DLDataType d;
    switch (gs_dtype_kind(t)) {
    case 'b':
        d.code = GS_DL_BOOL;
        break;
    case 'i':
        d.code = GS_DL_INT;
        break;
    case 'u':
        d.code = GS_DL_UINT;
        break;
    default:
        d.code = GS_DL_FLOAT;
        break;
    }
    d.bits = (uint8_t)(8 * gs_dtype_size(t));
    d.lanes = 1;
    return d;
}

static PyObject *devarray_dlpack(gs_DeviceArray *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "stream", "max_version", "dl_device", "copy", NULL };
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    gs_DeviceArray *src = self;
    gs_DLManagedTensor *managed = NULL;
    gs_view v;
    gs_fail f = { 0 };
    PyObject *capsule = NULL;
    int want_copy = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    Py_INCREF(src);
    if (dl_device != Py_None) {
        int type, id;
        if (!PyArg_ParseTuple(dl_device, "ii;dl_device must be (device_type, device_id)", &type,
                              &id))
            goto fail;
        if (type != GS_DL_CUDA || id != self->device) {
            PyErr_Format(PyExc_BufferError,
                         "DeviceArray on CUDA device %d cannot be exported to device (%d, %d)",
                         self->device, type, id);
            goto fail;
        }
    }
    if (copy != Py_None && (want_copy = PyObject_IsTrue(copy)) < 0)
        goto fail;
    if (want_copy) {
        gs_devarray_view(self, &v);
        Py_SETREF(src, devarray_copy_of(&v, self->dtype));
        if (src == NULL)
            goto fail;
    }
    /* The consumer reads on `stream`: order it after what we enqueued (None means the legacy
     * default stream, which a blocking stream is ordered with already; -1 asks for nothing). */
    if (stream != Py_None) {
        long long s = PyLong_AsLongLong(stream);
        if (s == -1 && PyErr_Occurred())
            goto fail;
        if (s == 0) {
            PyErr_SetString(PyExc_ValueError, "__dlpack__: stream 0 is ambiguous for CUDA");
            goto fail;
        }
        if (s != -1 && gs_cuda_signal_foreign((uintptr_t)s, &f) < 0) {
            gs_raise(&f);
            goto fail;
        }
    }
    gs_devarray_view(src, &v);
    /* One block: the managed tensor, then shape and strides (in elements). */
    managed = PyMem_RawMalloc(sizeof(*managed) + 2 * (size_t)(src->ndim + 1) * sizeof(int64_t));
    if (managed == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    managed->dl_tensor.data = src->data;
    managed->dl_tensor.device.device_type = GS_DL_CUDA;
    managed->dl_tensor.device.device_id = src->device;
    managed->dl_tensor.ndim = src->ndim;
    managed->dl_tensor.dtype = dl_type(src->dtype);
    managed->dl_tensor.shape = (int64_t *)(managed + 1);
    managed->dl_tensor.strides = managed->dl_tensor.shape + src->ndim + 1;
    managed->dl_tensor.byte_offset = 0;
    for (int i = 0; i < src->ndim; i++) {
        managed->dl_tensor.shape[i] = v.shape[i];
        managed->dl_tensor.strides[i] = v.strides[i] / (int64_t)gs_dtype_size(src->dtype);
    }
    managed->manager_ctx = src;
    managed->deleter = dl_deleter;
    capsule = PyCapsule_New(managed, GS_DL_CAPSULE, dl_capsule_destructor);
    if (capsule == NULL)
        goto fail;
    return capsule;
fail:
    PyMem_RawFree(managed);
    Py_XDECREF(src);
    return NULL;
}

static PyObject *devarray_dlpack_device(gs_DeviceArray *self, PyObject *unused)
{
    return Py_BuildValue("(ii)", GS_DL_CUDA, self->device);
}

/* ---- to the host -------------------------------------------------------------------------- */

static PyObject *devarray_get(gs_DeviceArray *self, PyObject *unused)
{
    gs_bag bag = { 0 };
    gs_view src, dst;
    PyObject *res;

    gs_devarray_view(self, &src);
    res = gs_result_streamed(gs_backend_table(GS_BACKEND_CUDA), self->ndim, self->shape,
                             self->dtype, &dst);
    if (res != NULL && gs_move(&src, &dst, &bag) < 0)
        Py_CLEAR(res);
    gs_bag_free(&bag);
    return res;
}

static PyObject *devarray_array(gs_DeviceArray *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "dtype", "copy", NULL };
    PyObject *dtype = Py_None, *copy = Py_None, *host, *res;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype, &copy))
        return NULL;
    if (copy == Py_False) {
        PyErr_SetString(PyExc_ValueError,
                        "a DeviceArray cannot become a NumPy array without a copy to the host");
        return NULL;
    }
    host = devarray_get(self, NULL);
    if (host == NULL || dtype == Py_None)
        return host;
    res = PyObject_CallMethod(host, "astype", "O", dtype);
    Py_DECREF(host);
    return res;
}

static Py_ssize_t devarray_len(gs_DeviceArray *self)
{
    if (self->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return (Py_ssize_t)self->shape[0];
}

static PyObject *devarray_repr(gs_DeviceArray *self)
{
    PyObject *shape = shape_tuple(self), *res;
    if (shape == NULL)
        return NULL;
    res =
        PyUnicode_FromFormat("DeviceArray(shape=%R, dtype=%s)", shape, gs_dtype_name(self->dtype));
    Py_DECREF(shape);
    return res;
}

/* ---- the type ----------------------------------------------------------------------------- */

static PyGetSetDef devarray_getset[] = {
    { "shape", (getter)devarray_get_shape, NULL, "Tuple of array dimensions.", NULL },
    { "dtype", (getter)devarray_get_dtype, NULL, "NumPy dtype of the elements.", NULL },
    { "size", (getter)devarray_get_size, NULL, "Number of elements.", NULL },
    { "ndim", (getter)devarray_get_ndim, NULL, "Number of dimensions.", NULL },
    { "nbytes", (getter)devarray_get_nbytes, NULL, "Bytes of device memory the elements use.",
      NULL },
    { "strides", (getter)devarray_get_strides, NULL,
      "Byte strides (always C-contiguous: a DeviceArray is dense).", NULL },
    { "device", (getter)devarray_get_device, NULL, "CUDA device ordinal.", NULL },
    { "__cuda_array_interface__", (getter)devarray_get_cai, NULL,
      "CUDA Array Interface, version 3, naming gpuscan's stream.", NULL },
    { NULL },
};

static PyMethodDef devarray_methods[] = {
    { "get", (PyCFunction)devarray_get, METH_NOARGS, gs_doc_devarray_get },
    { "__array__", (PyCFunction)(void (*)(void))devarray_array, METH_VARARGS | METH_KEYWORDS,
      gs_doc_devarray_array },
    { "__dlpack__", (PyCFunction)(void (*)(void))devarray_dlpack, METH_VARARGS | METH_KEYWORDS,
      gs_doc_devarray_dlpack },
    { "__dlpack_device__", (PyCFunction)devarray_dlpack_device, METH_NOARGS,
      gs_doc_devarray_dlpack_device },
    { NULL },
};

static PySequenceMethods devarray_as_sequence = {
    .sq_length = (lenfunc)devarray_len,
};

/* PyVarObject_HEAD_INIT ends in a comma that clang-format cannot see: keep it on its own line. */
/* clang-format off */
static PyTypeObject devarray_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpuscan.DeviceArray",
    .tp_basicsize = sizeof(gs_DeviceArray),
    .tp_dealloc = (destructor)devarray_dealloc,
    .tp_repr = (reprfunc)devarray_repr,
    .tp_as_sequence = &devarray_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = gs_doc_devarray,
    .tp_methods = devarray_methods,
    .tp_getset = devarray_getset,
};
/* clang-format on */

int gs_devarray_register(PyObject *module)
{
    if (PyType_Ready(&devarray_type) < 0)
        return -1;
    gs_devarray_type = &devarray_type;
    Py_INCREF(&devarray_type);
    if (PyModule_AddObject(module, "DeviceArray", (PyObject *)&devarray_type) < 0) {
        Py_DECREF(&devarray_type);
        return -1;
    }
    return 0;
}

/* ---- to_device ---------------------------------------------------------------------------- */

PyObject *gs_to_device(PyObject *self, PyObject *arg)
{
    gs_DeviceArray *res = NULL;
    int64_t shape[GS_MAX_NDIM];
    gs_operand op;
    gs_dtype dtype;
    int ndim;

    if (gs_require_cuda() < 0 || gs_operand_get(arg, &op) < 0)
        return NULL;
    if (gs_operand_info(&op, "input", &dtype, &ndim, shape) < 0)
        goto done;
    res = devarray_copy_of(&op.view, dtype);
    /* A foreign producer may reuse its memory once we return: finish reading it first. */
    if (res != NULL && gs_operand_release_foreign(&op) < 0)
        Py_CLEAR(res);
done:
    gs_operand_release(&op);
    return (PyObject *)res;
}
