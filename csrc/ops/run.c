/*
 * ops/run.c - what every op shares around a backend call: the backend's table, the one
 * converter from a failure record to a Python exception, the bag of a call's buffers, and the
 * call's results.
 *
 * Level: ops.
 */
#include "ops/ops.h"

#include <errno.h>
#include <stdlib.h>

#include "cuda/cuda.h"

/* ---- failures ----------------------------------------------------------------------------- */

int gs_raise(const gs_fail *f)
{
    const char *call = f->call != NULL ? f->call : "gpuscan";

    switch (f->kind) {
    case 'c':
        return gs_cuda_raise(f->code, call, f->bytes);
    case 'e':
        if (f->code == ENOMEM) {
            PyErr_NoMemory();
            return -1;
        }
        PyErr_Format(PyExc_RuntimeError, "%s failed: %s", call, strerror(f->code));
        return -1;
    default:
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "gpuscan: a call failed without a reason");
        return -1;
    }
}

/* ---- backends ----------------------------------------------------------------------------- */

const gs_backend_ops *gs_backend_table(gs_backend backend)
{
    return backend == GS_BACKEND_CUDA ? &gs_cuda_backend : &gs_cpu_backend;
}

const gs_backend_ops *gs_backend_for(gs_backend backend, int device)
{
    return gs_backend_table(device ? GS_BACKEND_CUDA : backend);
}

int gs_sync(void)
{
    return gs_cuda_sync();
}

int gs_release_operands(gs_operand *const *ops, int n)
{
    for (int i = 0; i < n; i++)
        if (ops[i] != NULL && gs_operand_release_foreign(ops[i]) < 0)
            return -1;
    return 0;
}

/* ---- the bag of a call's buffers ---------------------------------------------------------- */

int gs_bag_alloc(gs_bag *bag, gs_mem mem, size_t bytes, void **ptr)
{
    gs_fail f = { 0 };

    *ptr = NULL;
    if (bytes == 0)
        return 0;
    if (bag->n == GS_BAG_MAX) {
        PyErr_SetString(PyExc_SystemError, "gpuscan: a call took more buffers than its bag holds");
        return -1;
    }
    if (mem == GS_MEM_DEVICE) {
        if (gs_cuda_alloc(ptr, bytes, &f) < 0)
            return gs_raise(&f);
    } else if ((*ptr = malloc(bytes)) == NULL) {
        PyErr_Format(PyExc_MemoryError, "could not allocate %zu bytes of host memory", bytes);
        return -1;
    }
    bag->items[bag->n].mem = mem;
    bag->items[bag->n].ptr = *ptr;
    bag->n++;
    return 0;
}

void gs_bag_free(gs_bag *bag)
{
    for (int i = 0; i < bag->n; i++) {
        if (bag->items[i].mem == GS_MEM_DEVICE)
            gs_cuda_free(bag->items[i].ptr); /* stream-ordered: after the work that uses it */
        else
            free(bag->items[i].ptr);
    }
    bag->n = 0;
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

PyObject *gs_result_streamed(const gs_backend_ops *be, int ndim, const int64_t *shape,
                             gs_dtype dtype, gs_view *v)
{
    npy_intp dims[GS_MAX_NDIM];
    const size_t bytes = (size_t)gs_shape_size(ndim, shape) * gs_dtype_size(dtype);
    PyArray_Descr *descr;
    PyObject *owner;
    PyArrayObject *a;
    void *ptr = NULL;

    if (be->host_take != NULL && bytes > 0) {
        Py_BEGIN_ALLOW_THREADS
            ptr = be->host_take(bytes);
        Py_END_ALLOW_THREADS
    }
    if (ptr == NULL)
        return gs_result_new(GS_MEM_HOST, ndim, shape, dtype, v);
    if ((owner = PyCapsule_New(ptr, GS_HOST_BLOCK, host_block_free)) == NULL ||
        PyCapsule_SetContext(owner, (void *)be) < 0 || (descr = gs_descr(dtype)) == NULL) {
        if (owner != NULL)
            Py_DECREF(owner);
        else
            be->host_give(ptr);
        return NULL;
    }
    for (int i = 0; i < ndim; i++)
        dims[i] = (npy_intp)shape[i];
    a = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, descr, ndim, dims, NULL, ptr,
                                              NPY_ARRAY_CARRAY, NULL);
    if (a == NULL || PyArray_SetBaseObject(a, owner) < 0) { /* steals owner, even on failure */
        if (a == NULL)
            Py_DECREF(owner);
        Py_XDECREF(a);
        return NULL;
    }
    return host_result_view(a, dtype, v);
}

/* ---- shapes ------------------------------------------------------------------------------- */

int64_t gs_shape_size(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

int gs_check_same_shape(const char *name, int nd, const int64_t *shape, const char *other_name,
                        int other_nd, const int64_t *other)
{
    int same = nd == other_nd;
    for (int i = 0; same && i < nd; i++)
        same = shape[i] == other[i];
    return same ? 0 : gs_shape_error(name, nd, shape, other_name, other_nd, other);
}
