/*
 * core/move.c - the buffers of a call, and moving an array's values between views: placing an
 * operand where its backend reads it, delivering a result where the caller wants it.
 * Level: core.  gs_move is the one router of data: host to host by NumPy's own copy (any
 * strides, byte order and unsafe cast, as NumPy casts); device to device by the copy kernel;
 * host to device and back by the transfer module (cuda/transfer.c: the chunked pipeline, which
 * packs and converts the host side as it goes, run without the GIL).
 */
#include "core/core.h"

#include <stdlib.h>

#include "cuda/cuda.h"

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

int gs_sync(void)
{
    gs_fail f = { 0 };
    int rc;

    Py_BEGIN_ALLOW_THREADS
        rc = gs_cuda_sync(&f);
    Py_END_ALLOW_THREADS
    return rc < 0 ? gs_raise(&f) : 0;
}

/* ---- moves -------------------------------------------------------------------------------- */

/* A NumPy array over a host view's memory (no copy; writeable for a destination). */
static PyArrayObject *host_array(const gs_view *v, int writeable)
{
    npy_intp dims[GS_MAX_NDIM], strides[GS_MAX_NDIM];
    PyArray_Descr *descr = gs_descr(v->dtype);

    if (descr != NULL && v->swapped)
        Py_SETREF(descr, PyArray_DescrNewByteorder(descr, NPY_SWAP));
    if (descr == NULL)
        return NULL;
    for (int i = 0; i < v->ndim; i++) {
        dims[i] = (npy_intp)v->shape[i];
        strides[i] = (npy_intp)v->strides[i];
    }
    return (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, descr, v->ndim, dims, strides,
                                                 v->ptr, writeable ? NPY_ARRAY_WRITEABLE : 0, NULL);
}

/* dst = src, both on the host: NumPy's copy (it handles overlap, byte order and casts). */
static int host_copy(const gs_view *src, const gs_view *dst)
{
    PyArrayObject *s = host_array(src, 0), *d = s != NULL ? host_array(dst, 1) : NULL;
    int rc = d != NULL ? PyArray_CopyInto(d, s) : -1;

    Py_XDECREF(s);
    Py_XDECREF(d);
    return rc;
}

/* dst = src across memories (one side C-contiguous device memory): the pipeline, without the
 * GIL. */
static int xfer(const gs_view *src, const gs_view *dst)
{
    gs_fail f = { 0 };
    int rc;

    GS_BEGIN_UNLOCKED
        rc = gs_xfer_copy(src, dst, &f);
    GS_END_UNLOCKED
    return rc < 0 ? gs_raise(&f) : 0;
}

/* dst = src, both device memory: the copy kernel, enqueued. */
static int device_copy(const gs_view *src, const gs_view *dst)
{
    gs_fail f = { 0 };
    return gs_xfer_device_copy(src, dst, &f) < 0 ? gs_raise(&f) : 0;
}

int gs_move(const gs_view *src, const gs_view *dst, gs_bag *bag)
{
    gs_view a;

    if (gs_view_size(src) == 0)
        return 0;
    if (src->mem == GS_MEM_HOST && dst->mem == GS_MEM_HOST)
        return host_copy(src, dst);
    if (src->mem == GS_MEM_DEVICE && dst->mem == GS_MEM_DEVICE)
        return device_copy(src, dst);
    /* Across memories: through the pipeline, which converts on the host side; a strided
     * device side goes through a contiguous device temporary. */
    if (gs_view_is_c_contig(src->mem == GS_MEM_DEVICE ? src : dst))
        return xfer(src, dst);
    if (dst->mem == GS_MEM_DEVICE)
        return gs_temp_like(bag, dst, GS_MEM_DEVICE, dst->dtype, &a) < 0 || xfer(src, &a) < 0
                   ? -1
                   : device_copy(&a, dst);
    return gs_place(src, GS_MEM_DEVICE, src->dtype, bag, &a) < 0 ? -1 : xfer(&a, dst);
}

int gs_temp_like(gs_bag *bag, const gs_view *like, gs_mem mem, gs_dtype dtype, gs_view *out)
{
    void *buf;

    if (gs_bag_alloc(bag, mem, (size_t)gs_view_size(like) * gs_dtype_size(dtype), &buf) < 0)
        return -1;
    gs_view_contiguous(out, like, buf, mem, dtype);
    return 0;
}

int gs_place(const gs_view *v, gs_mem mem, gs_dtype dtype, gs_bag *bag, gs_view *out)
{
    if (gs_view_ready(v, mem, dtype)) {
        *out = *v;
        return 0;
    }
    return gs_temp_like(bag, v, mem, dtype, out) < 0 ? -1 : gs_move(v, out, bag);
}
