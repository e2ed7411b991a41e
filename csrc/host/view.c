/*
 * host/view.c - the geometry of an array view (host/view.h).
 * Level: host; plain C.
 */
#include "host/view.h"

#include <stdint.h>
#include <string.h>

int64_t gs_shape_size(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

int64_t gs_view_size(const gs_view *v)
{
    return gs_shape_size(v->ndim, v->shape);
}

void gs_view_set_c_strides(gs_view *v)
{
    int64_t stride = (int64_t)gs_dtype_size(v->dtype);
    for (int i = v->ndim - 1; i >= 0; i--) {
        v->strides[i] = stride;
        stride *= v->shape[i] > 0 ? v->shape[i] : 1;
    }
}

int gs_view_is_c_contig(const gs_view *v)
{
    int64_t stride = (int64_t)gs_dtype_size(v->dtype);
    if (gs_view_size(v) <= 1)
        return 1;
    for (int i = v->ndim - 1; i >= 0; i--) {
        /* A dimension of length 1 may have any stride. */
        if (v->shape[i] != 1 && v->strides[i] != stride)
            return 0;
        stride *= v->shape[i];
    }
    return 1;
}

void gs_view_contiguous(gs_view *v, const gs_view *like, void *ptr, gs_mem mem, gs_dtype dtype)
{
    *v = *like;
    v->ptr = ptr;
    v->mem = mem;
    v->dtype = dtype;
    v->swapped = 0;
    gs_view_set_c_strides(v);
}

gs_view gs_view_flat(void *ptr, int64_t n, gs_mem mem, gs_dtype dtype)
{
    gs_view v;
    memset(&v, 0, sizeof(v));
    v.ndim = 1;
    v.shape[0] = n;
    gs_view_contiguous(&v, &v, ptr, mem, dtype);
    return v;
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
