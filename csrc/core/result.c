/*
 * core/result.c - a call's new results: NumPy arrays on the host (for a streamed call, in the
 * memory the backend's copies reach fastest) and DeviceArrays on the device.
 * Level: core.  The DeviceArray's Python type (its methods and array protocols) is
 * binding/devarray.c's, registered in gs_devarray_type at import; what is here is the C side of
 * making one: its memory from the pool and its view.
 */
#include "core/core.h"

#include "cuda/cuda.h"

PyTypeObject *gs_devarray_type;

/* ---- DeviceArrays ------------------------------------------------------------------------- */

void gs_devarray_view(const gs_DeviceArray *a, gs_view *v)
{
    memset(v, 0, sizeof(*v));
    v->ptr = a->data;
    v->mem = GS_MEM_DEVICE;
    v->dtype = a->dtype;
    v->ndim = a->ndim;
    for (int i = 0; i < a->ndim; i++)
        v->shape[i] = a->shape[i];
    gs_view_set_c_strides(v);
}

gs_DeviceArray *gs_devarray_new(int ndim, const int64_t *shape, gs_dtype dtype)
{
    gs_fail f = { 0 };
    gs_DeviceArray *a;

    a = (gs_DeviceArray *)gs_devarray_type->tp_alloc(gs_devarray_type, 0);
    if (a == NULL)
        return NULL;
    a->dtype = dtype;
    a->ndim = ndim;
    a->device = gs_cuda_device_ordinal();
    a->owns = 1;
    for (int i = 0; i < ndim; i++)
        a->shape[i] = shape[i];
    if (gs_cuda_alloc(&a->data, (size_t)gs_shape_size(ndim, shape) * gs_dtype_size(dtype), &f) <
        0) {
        Py_DECREF(a);
        gs_raise(&f);
        return NULL;
    }
    return a;
}

/* ---- results ------------------------------------------------------------------------------ */

/* *v = a view of a new NumPy result; returns it. */
static PyObject *host_result_view(PyArrayObject *a, gs_dtype dtype, gs_view *v)
{
    memset(v, 0, sizeof(*v));
    v->ptr = PyArray_BYTES(a);
    v->dtype = dtype;
    v->mem = GS_MEM_HOST;
    v->ndim = PyArray_NDIM(a);
    for (int i = 0; i < v->ndim; i++) {
        v->shape[i] = PyArray_DIM(a, i);
        v->strides[i] = PyArray_STRIDE(a, i);
    }
    return (PyObject *)a;
}

PyObject *gs_result_new(gs_mem mem, int ndim, const int64_t *shape, gs_dtype dtype, gs_view *v)
{
    npy_intp dims[GS_MAX_NDIM];
    PyArray_Descr *descr;
    PyArrayObject *a;
    gs_DeviceArray *d;

    if (mem == GS_MEM_DEVICE) {
        if ((d = gs_devarray_new(ndim, shape, dtype)) != NULL)
            gs_devarray_view(d, v);
        return (PyObject *)d;
    }
    if ((descr = gs_descr(dtype)) == NULL)
        return NULL;
    for (int i = 0; i < ndim; i++)
        dims[i] = (npy_intp)shape[i];
    if ((a = (PyArrayObject *)PyArray_Empty(ndim, dims, descr, 0)) == NULL)
        return NULL;
    return host_result_view(a, dtype, v);
}

/* The owner of a result's block from a backend's host_take: gives it back when the array (and
 * every view of it) is gone.  The capsule's context is the backend's table. */
#define GS_HOST_BLOCK "gpuscan host block"

static void host_block_free(PyObject *capsule)
{
    const gs_backend_ops *be = PyCapsule_GetContext(capsule);

    if (be != NULL)
        be->host_give(PyCapsule_GetPointer(capsule, GS_HOST_BLOCK));
}

PyArrayObject *gs_host_array(const gs_backend_ops *be, int ndim, const npy_intp *dims,
                             PyArray_Descr *descr)
{
    size_t bytes = (size_t)PyDataType_ELSIZE(descr);
    PyObject *owner;
    PyArrayObject *a;
    void *ptr = NULL;

    for (int i = 0; i < ndim; i++)
        bytes *= (size_t)dims[i];
    if (be != NULL && be->host_take != NULL && bytes > 0) {
        Py_BEGIN_ALLOW_THREADS
            ptr = be->host_take(bytes);
        Py_END_ALLOW_THREADS
    }
    if (ptr == NULL)
        return (PyArrayObject *)PyArray_Empty(ndim, (npy_intp *)dims, descr, 0);
    if ((owner = PyCapsule_New(ptr, GS_HOST_BLOCK, host_block_free)) == NULL ||
        PyCapsule_SetContext(owner, (void *)be) < 0) {
        if (owner != NULL)
            Py_DECREF(owner);
        else
            be->host_give(ptr);
        Py_DECREF(descr);
        return NULL;
    }
    a = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, descr, ndim, (npy_intp *)dims, NULL,
                                              ptr, NPY_ARRAY_CARRAY, NULL);
    if (a == NULL || PyArray_SetBaseObject(a, owner) < 0) { /* steals owner, even on failure */
        if (a == NULL)
            Py_DECREF(owner);
        Py_XDECREF(a);
        return NULL;
    }
    return a;
}

PyObject *gs_result_streamed(const gs_backend_ops *be, int ndim, const int64_t *shape,
                             gs_dtype dtype, gs_view *v)
{
    npy_intp dims[GS_MAX_NDIM];
    PyArray_Descr *descr = gs_descr(dtype);
    PyArrayObject *a;

    if (descr == NULL)
        return NULL;
    for (int i = 0; i < ndim; i++)
        dims[i] = (npy_intp)shape[i];
    if ((a = gs_host_array(be, ndim, dims, descr)) == NULL)
        return NULL;
    return host_result_view(a, dtype, v);
}
