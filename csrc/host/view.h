/*
 * host/view.h - the geometry of an array view (gpuscan/backend.h's gs_view): its size and
 * layout, new strides, and how two views relate.
 * Level: host (below both backends and every layer above them); plain C, no Python, no CUDA.
 */
#ifndef GS_VIEW_H
#define GS_VIEW_H

#include "gpuscan/backend.h"

/* Product of a shape's lengths. */
int64_t gs_shape_size(int ndim, const int64_t *shape);

/* Number of elements of a view. */
int64_t gs_view_size(const gs_view *v);

/* Whether a view is C-contiguous (size 0 and 1 views always are). */
int gs_view_is_c_contig(const gs_view *v);

/* Set v's strides to the C-contiguous strides of its shape and dtype. */
void gs_view_set_c_strides(gs_view *v);

/* A C-contiguous view of `ptr` in `mem` with the shape of `like` and the given dtype. */
void gs_view_contiguous(gs_view *v, const gs_view *like, void *ptr, gs_mem mem, gs_dtype dtype);

/* A one-dimensional C-contiguous view of n values of `dtype` at `ptr` in `mem`. */
gs_view gs_view_flat(void *ptr, int64_t n, gs_mem mem, gs_dtype dtype);

/* Whether a backend reads v as it is: in `mem`, C-contiguous, native order, aligned. */
int gs_view_ready(const gs_view *v, gs_mem mem, gs_dtype dtype);

/* Whether two views can touch a common byte. */
int gs_views_overlap(const gs_view *a, const gs_view *b);

/* Move dimension `axis` of v to the end, keeping the order of the others. */
void gs_view_move_axis_last(gs_view *v, int axis);

/* Reorder v's dimensions: dimension i of the result is dimension perm[i] of v. */
void gs_view_permute(gs_view *v, const int *perm);

#endif /* GS_VIEW_H */
