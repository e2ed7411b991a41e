/*
 * binding/devarray.c - gpuscan.DeviceArray, a C-contiguous array in device memory, and to_device().
 *
 * Level: host layer.  A DeviceArray either owns a pool allocation (freed with cudaFreeAsync on
 * gpuscan's stream when it dies, so the memory is reused only after the work that reads it) or
 * keeps its memory's owner alive.  It speaks both device-array protocols: a version 3
 * __cuda_array_interface__ naming gpuscan's stream, and __dlpack__ / __dlpack_device__ with a
 * legacy "dltensor" capsule that keeps the array alive until the consumer calls its deleter.
 * Results stay on the device until .get() or np.asarray() asks for them.
 */
#include "gpuscan.h"

#include "binding/dlpack.h"

static int64_t devarray_size(const gs_DeviceArray *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    return n;
}

void gs_devarray_view(const gs_DeviceArray *a, gs_devview *v)
{
    v->ptr = a->data;
    v->dtype = a->dtype;
    v->ndim = a->ndim;
    for (int i = 0; i < a->ndim; i++)
        v->shape[i] = a->shape[i];
    gs_devview_set_c_strides(v);
}

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

#ifdef GS_HAVE_CUDA

gs_DeviceArray *gs_devarray_new(int ndim, const int64_t *shape, gs_dtype dtype)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_DeviceArray *a;
    size_t bytes;

    a = (gs_DeviceArray *)gs_DeviceArray_Type.tp_alloc(&gs_DeviceArray_Type, 0);
    if (a == NULL)
        return NULL;
    a->dtype = dtype;
    a->ndim = ndim;
    a->device = gs_cuda_device;
    a->owns = 1;
    for (int i = 0; i < ndim; i++)
        a->shape[i] = shape[i];
    bytes = (size_t)devarray_size(a) * gs_dtype_size(dtype);
    GS_CUDA_CHECK(fail, gs_cuda_enter());
    GS_CUDA_ALLOC(fail, a->data, bytes);
    return a;
error:
    Py_DECREF(a);
    gs_cuda_raise(&fail);
    return NULL;
}

/* A new DeviceArray holding a copy of `src` (any strides), converted to `dtype`. */
static gs_DeviceArray *devarray_copy_of(const gs_devview *src, gs_dtype dtype)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_DeviceArray *a = gs_devarray_new(src->ndim, src->shape, dtype);
    gs_devview dst;

    if (a == NULL)
        return NULL;
    gs_devarray_view(a, &dst);
    GS_CUDA_CHECK(fail, gs_cuda_copy_view(src, &dst));
    return a;
error:
    Py_DECREF(a);
    gs_cuda_raise(&fail);
    return NULL;
}

#endif /* GS_HAVE_CUDA */

static void devarray_dealloc(gs_DeviceArray *self)
{
#ifdef GS_HAVE_CUDA
    if (self->owns)
        gs_cuda_free(self->data);
#endif
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
    return PyLong_FromLongLong(devarray_size(self));
}

static PyObject *devarray_get_ndim(gs_DeviceArray *self, void *closure)
{
    return PyLong_FromLong(self->ndim);
}

static PyObject *devarray_get_nbytes(gs_DeviceArray *self, void *closure)
{
    return PyLong_FromLongLong(devarray_size(self) * (int64_t)gs_dtype_size(self->dtype));
}

static PyObject *devarray_get_strides(gs_DeviceArray *self, void *closure)
{
    gs_devview v;
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
    unsigned long long stream = 0;

#ifdef GS_HAVE_CUDA
    stream = (unsigned long long)(uintptr_t)gs_cuda_stream;
#endif
    shape = shape_tuple(self);
    ts = typestr(self->dtype);
    if (shape == NULL || ts == NULL)
        goto finally;
    res = Py_BuildValue("{s:O,s:O,s:(KO),s:O,s:i,s:K}", "shape", shape, "typestr", ts, "data",
                        (unsigned long long)(uintptr_t)self->data, Py_False, "strides", Py_None,
                        "version", 3, "stream", stream);
finally:
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
    gs_devview v;
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
            goto error;
        if (type != GS_DL_CUDA || id != self->device) {
            PyErr_Format(PyExc_BufferError,
                         "DeviceArray on CUDA device %d cannot be exported to device (%d, %d)",
                         self->device, type, id);
            goto error;
        }
    }
    if (copy != Py_None && (want_copy = PyObject_IsTrue(copy)) < 0)
        goto error;
#ifdef GS_HAVE_CUDA
    if (want_copy) {
        gs_devarray_view(self, &v);
        Py_SETREF(src, devarray_copy_of(&v, self->dtype));
        if (src == NULL)
            goto error;
    }
    /* The consumer reads on `stream`: order it after what we enqueued (None means the legacy
     * default stream, which a blocking stream is ordered with already; -1 asks for nothing). */
    if (stream != Py_None) {
        long long s = PyLong_AsLongLong(stream);
        if (s == -1 && PyErr_Occurred())
            goto error;
        if (s == 0) {
            PyErr_SetString(PyExc_ValueError, "__dlpack__: stream 0 is ambiguous for CUDA");
            goto error;
        }
        if (s != -1 && gs_cuda_signal_foreign((uintptr_t)s) < 0)
            goto error;
    }
#else
    (void)want_copy;
#endif
    gs_devarray_view(src, &v);
    /* One block: the managed tensor, then shape and strides (in elements). */
    managed = PyMem_RawMalloc(sizeof(*managed) + 2 * (size_t)(src->ndim + 1) * sizeof(int64_t));
    if (managed == NULL) {
        PyErr_NoMemory();
        goto error;
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
        goto error;
    return capsule;
error:
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
#ifdef GS_HAVE_CUDA
    npy_intp dims[GS_MAX_NDIM];
    PyArray_Descr *descr = gs_descr(self->dtype);
    PyArrayObject *res;

    if (descr == NULL)
        return NULL;
    for (int i = 0; i < self->ndim; i++)
        dims[i] = (npy_intp)self->shape[i];
    res = (PyArrayObject *)PyArray_Empty(self->ndim, dims, descr, 0);
    if (res == NULL)
        return NULL;
    if (gs_cuda_download(PyArray_DATA(res), self->data, (size_t)PyArray_NBYTES(res)) < 0) {
        Py_DECREF(res);
        return NULL;
    }
    return (PyObject *)res;
#else
    PyErr_SetString(PyExc_RuntimeError, "gpuscan was built without CUDA");
    return NULL;
#endif
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

PyDoc_STRVAR(devarray_get_doc,
             "get()\n--\n\n"
             "Copy the array to the host.\n\n"
             "Returns\n-------\nnumpy.ndarray\n    A new C-contiguous array with the same shape "
             "and dtype; the call waits for the copy.\n\n"
             "Examples\n--------\n>>> d = gpuscan.to_device([1, 2, 3])\n>>> d.get()\n"
             "array([1, 2, 3])");

PyDoc_STRVAR(devarray_dlpack_doc,
             "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
             "Export the array as a DLPack \"dltensor\" capsule (no copy unless copy=True).\n\n"
             "stream is the consumer's CUDA stream, which is made to wait for gpuscan's work "
             "on the array; the capsule keeps the array alive until the consumer is done.");

PyDoc_STRVAR(devarray_dlpack_device_doc,
             "__dlpack_device__()\n--\n\nReturn (2, device_id): kDLCUDA and the device.");

PyDoc_STRVAR(devarray_array_doc,
             "__array__(dtype=None, copy=None)\n--\n\n"
             "Copy the array to the host, as get(), optionally cast to dtype; used by "
             "np.asarray.");

static PyMethodDef devarray_methods[] = {
    { "get", (PyCFunction)devarray_get, METH_NOARGS, devarray_get_doc },
    { "__array__", (PyCFunction)(void (*)(void))devarray_array, METH_VARARGS | METH_KEYWORDS,
      devarray_array_doc },
    { "__dlpack__", (PyCFunction)(void (*)(void))devarray_dlpack, METH_VARARGS | METH_KEYWORDS,
      devarray_dlpack_doc },
    { "__dlpack_device__", (PyCFunction)devarray_dlpack_device, METH_NOARGS,
      devarray_dlpack_device_doc },
    { NULL },
};

static PySequenceMethods devarray_as_sequence = {
    .sq_length = (lenfunc)devarray_len,
};

PyDoc_STRVAR(devarray_doc,
             "A C-contiguous array in CUDA device memory, made by gpuscan.\n\n"
             "Device results of gpuscan functions are DeviceArrays.  They stay on the device "
             "until asked for\n(get(), np.asarray) and can be passed without a copy to CuPy, "
             "PyTorch or Numba through\n__cuda_array_interface__ or DLPack "
             "(cupy.asarray(d), torch.from_dlpack(d)).\n\n"
             "Attributes\n----------\nshape : tuple\nsize : int\nndim : int\n"
             "dtype : numpy.dtype\nnbytes : int\n\n"
             "Examples\n--------\n>>> d = gpuscan.scan(gpuscan.to_device(np.arange(4)))\n"
             ">>> d\nDeviceArray(shape=(4,), dtype=int64)\n>>> d.get()\narray([0, 1, 3, 6])");

/* PyVarObject_HEAD_INIT ends in a comma that clang-format cannot see: keep it on its own line. */
/* clang-format off */
PyTypeObject gs_DeviceArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpuscan.DeviceArray",
    .tp_basicsize = sizeof(gs_DeviceArray),
    .tp_dealloc = (destructor)devarray_dealloc,
    .tp_repr = (reprfunc)devarray_repr,
    .tp_as_sequence = &devarray_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = devarray_doc,
    .tp_methods = devarray_methods,
    .tp_getset = devarray_getset,
};
/* clang-format on */

/* ---- to_device ---------------------------------------------------------------------------- */

PyObject *gs_to_device(PyObject *self, PyObject *arg)
{
#ifdef GS_HAVE_CUDA
    gs_operand op;
    gs_DeviceArray *res = NULL;
    PyArrayObject *host = NULL;
    int64_t shape[GS_MAX_NDIM];
    gs_dtype dtype;

    if (gs_require_cuda() < 0 || gs_operand_get(arg, &op) < 0)
        return NULL;
    if (op.on_device) {
        res = devarray_copy_of(&op.dev, op.dev.dtype);
        /* A foreign producer may reuse its memory once we return: finish reading it first. */
        if (res != NULL && !gs_DeviceArray_Check(arg) && gs_cuda_sync() < 0)
            Py_CLEAR(res);
        goto finally;
    }
    if (gs_dtype_from_descr(PyArray_DESCR(op.host), "input", &dtype) < 0)
        goto finally;
    if (PyArray_NDIM(op.host) > GS_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "device arrays may have at most %d dimensions", GS_MAX_NDIM);
        goto finally;
    }
    host = (PyArrayObject *)PyArray_FromAny((PyObject *)op.host, gs_descr(dtype), 0, 0,
                                            NPY_ARRAY_CARRAY_RO, NULL);
    if (host == NULL)
        goto finally;
    for (int i = 0; i < PyArray_NDIM(host); i++)
        shape[i] = PyArray_DIM(host, i);
    res = gs_devarray_new(PyArray_NDIM(host), shape, dtype);
    if (res != NULL && gs_cuda_upload(res->data, PyArray_DATA(host), PyArray_NBYTES(host)) < 0)
        Py_CLEAR(res);
finally:
    Py_XDECREF(host);
    gs_operand_release(&op);
    return (PyObject *)res;
#else
    if (gs_require_cuda() < 0)
        return NULL;
    PyErr_SetString(PyExc_SystemError, "gpuscan: CUDA backend in a CPU-only build");
    return NULL;
#endif
}
