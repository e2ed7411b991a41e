/*
 * ops/place.c - views, and moving an array's values between views: placing an operand where its
 * backend reads it, delivering a result where the caller wants it.
 *
 * Level: ops.  gs_move is the one router of data: host to host by NumPy's own copy (any
 * strides, byte order and unsafe cast, as NumPy casts); device to device by the copy kernel;
 * host to device and back by the transfer module (cuda/transfer.c: the chunked pipeline, which
 * packs and converts the host side as it goes).
 */
#include "ops/ops.h"

#include "cuda/cuda.h"

/* ---- views -------------------------------------------------------------------------------- */

void gs_view_contiguous(gs_view *v, const gs_view *like, void *ptr, gs_mem mem, gs_dtype dtype)
{
    *v = *like;
    v->ptr = ptr;
    v->mem = mem;
    v->dtype = dtype;
    v->swapped = 0;
    gs_view_set_c_strides(v);
}

int gs_view_ready(const gs_view *v, gs_mem mem, gs_dtype dtype)
{
    const size_t size = gs_dtype_size(dtype);
    return v->mem == mem && v->dtype == dtype && !v->swapped && gs_view_is_c_contig(v) &&
           (uintptr_t)v->ptr % size == 0;
}

/* The bytes a view can touch, [*lo, *hi). */
static void view_extent(const gs_view *v, const char **lo, const char **hi)
{
    int64_t low = 0, high = (int64_t)gs_dtype_size(v->dtype);
    for (int i = 0; i < v->ndim; i++) {
        int64_t span = (v->shape[i] - 1) * v->strides[i];
        if (span < 0)
            low += span;
        else
            high += span;
    }
    *lo = v->ptr + low;
    *hi = v->ptr + high;
}

int gs_views_overlap(const gs_view *a, const gs_view *b)
{
    const char *alo, *ahi, *blo, *bhi;
    if (a->mem != b->mem || gs_view_size(a) == 0 || gs_view_size(b) == 0)
        return 0;
    view_extent(a, &alo, &ahi);
    view_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

void gs_view_move_axis_last(gs_view *v, int axis)
{
    int64_t shape = v->shape[axis], stride = v->strides[axis];
    for (int i = axis; i < v->ndim - 1; i++) {
        v->shape[i] = v->shape[i + 1];
        v->strides[i] = v->strides[i + 1];
    }
    v->shape[v->ndim - 1] = shape;
    v->strides[v->ndim - 1] = stride;
}

void gs_view_permute(gs_view *v, const int *perm)
{
    const gs_view w = *v;
    for (int i = 0; i < w.ndim; i++) {
        v->shape[i] = w.shape[perm[i]];
        v->strides[i] = w.strides[perm[i]];
    }
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

int gs_move(const gs_view *src, const gs_view *dst, gs_bag *bag)
{
    gs_view a;

    if (gs_view_size(src) == 0)
        return 0;
    if (src->mem == GS_MEM_HOST && dst->mem == GS_MEM_HOST)
        return host_copy(src, dst);
    if (src->mem == GS_MEM_DEVICE && dst->mem == GS_MEM_DEVICE)
        return gs_xfer_device_copy(src, dst);
    /* Across memories: through the pipeline, which converts on the host side; a strided
     * device side goes through a contiguous device temporary. */
    if (gs_view_is_c_contig(src->mem == GS_MEM_DEVICE ? src : dst))
        return gs_xfer_copy(src, dst);
    if (dst->mem == GS_MEM_DEVICE)
        return gs_temp_like(bag, dst, GS_MEM_DEVICE, dst->dtype, &a) < 0 ||
                       gs_xfer_copy(src, &a) < 0
                   ? -1
                   : gs_xfer_device_copy(&a, dst);
    return gs_place(src, GS_MEM_DEVICE, src->dtype, bag, &a) < 0 ? -1 : gs_xfer_copy(&a, dst);
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
