/*
 * ops/ops.h - the seam between the ops (csrc/ops/: one file per primitive family) and the two
 * backends (csrc/cpu/, csrc/cuda/).
 *
 * Level: ops.  An op settles its arguments (binding/), then runs in four steps, the same on
 * either backend and for host or device operands alike:
 *   place    every operand as a contiguous buffer of the dtype the backend reads, in the
 *            backend's memory: used in place when it already is one, else gathered there by
 *            gs_move (a host copy by NumPy, a device copy kernel, or a host<->device transfer);
 *   target   where the backend writes: the result itself when it can, else a temporary;
 *   run      one entry of the backend table (gs_backend_ops) over flat buffers, without the GIL;
 *   deliver  the temporary moved into the result by gs_move.
 * Nothing here, nor in any op, depends on how the extension was built: a build without CUDA
 * links a CUDA table whose entries say so (cuda/backend.c), and device views never exist there.
 * Every buffer a call takes goes into its gs_bag and back at the call's `done:` label.
 */
#ifndef GS_OPS_H
#define GS_OPS_H

#include "binding/binding.h"

/* Raise a call's failure record (gpuscan/backend_api.h) as its Python exception; returns -1.
 * Needs the GIL.  The one converter from a backend's failure to an exception. */
int gs_raise(const gs_fail *f);

/* ---- the backend table ------------------------------------------------------------------ */

/* The table of a backend, and of the backend that runs a call whose operands are on the device
 * when `device` is set (CUDA: operand_get checked it is active), else on the host. */
const gs_backend_ops *gs_backend_table(gs_backend backend);
const gs_backend_ops *gs_backend_for(gs_backend backend, int device);

/* ---- memory ------------------------------------------------------------------------------ */

/*
 * The buffers one call holds (host memory or device memory from the pool); gs_bag_free gives
 * them all back (device ones stream-ordered, after the work enqueued on them).  Zero it
 * before use.
 */
#define GS_BAG_MAX 16
typedef struct gs_bag {
    int n;
    struct {
        gs_mem mem;
        void *ptr;
    } items[GS_BAG_MAX];
} gs_bag;

/* `bytes` of uninitialised memory in `mem`, owned by the bag; raises (MemoryError with the
 * sizes) on failure.  0 bytes: *ptr = NULL, and nothing to free. */
int gs_bag_alloc(gs_bag *bag, gs_mem mem, size_t bytes, void **ptr);
void gs_bag_free(gs_bag *bag);

/* *out = a new C-contiguous buffer in the bag, in `mem`, of `like`'s shape and `dtype`. */
int gs_temp_like(gs_bag *bag, const gs_view *like, gs_mem mem, gs_dtype dtype, gs_view *out);

/* A C-contiguous view of `ptr` in `mem` with the shape of `like` and the given dtype. */
void gs_view_contiguous(gs_view *v, const gs_view *like, void *ptr, gs_mem mem, gs_dtype dtype);

/* Whether the backend reads v as it is: in `mem`, C-contiguous, native order, aligned. */
int gs_view_ready(const gs_view *v, gs_mem mem, gs_dtype dtype);

/* Whether two views can touch a common byte. */
int gs_views_overlap(const gs_view *a, const gs_view *b);

/* Move dimension `axis` of v to the end, keeping the order of the others. */
void gs_view_move_axis_last(gs_view *v, int axis);

/* Reorder v's dimensions: dimension i of the result is dimension perm[i] of v. */
void gs_view_permute(gs_view *v, const int *perm);

/* ---- placing, moving, delivering --------------------------------------------------------- */

/*
 * dst[...] = src[...]: the same shape, any strides, any memories, converting dtypes as NumPy's
 * unsafe casting does.  Host to host is NumPy's copy; device to device the copy kernel; across
 * memories the transfer module's pipeline (cuda/transfer.c).  Returns when a host destination
 * holds its values.  Raises on failure.
 */
int gs_move(const gs_view *src, const gs_view *dst, gs_bag *bag);

/* *out = v as the backend reads it (gs_view_ready in `mem` for `dtype`): v itself when it
 * already is, else a copy in the bag. */
int gs_place(const gs_view *v, gs_mem mem, gs_dtype dtype, gs_bag *bag, gs_view *out);

/* Wait for every backend's pending work (CUDA: the stream); raises on failure. */
int gs_sync(void);

/* After a call that used op's device memory, order its producer's later work after ours
 * (binding/operand.c); nothing for host operands and for gpuscan's own DeviceArrays. */
int gs_release_operands(gs_operand *const *ops, int n);

/* ---- results ----------------------------------------------------------------------------- */

/* A new uninitialised C-contiguous array of `dtype` and `shape` in `mem`: a NumPy array on the
 * host, a DeviceArray on the device; *v views it. */
PyObject *gs_result_new(gs_mem mem, int ndim, const int64_t *shape, gs_dtype dtype, gs_view *v);

/* A new host result that a streamed entry of `be` fills: in the memory its copies reach fastest
 * (be->host_take, given back when the array is freed), else as gs_result_new's. */
PyObject *gs_result_streamed(const gs_backend_ops *be, int ndim, const int64_t *shape,
                             gs_dtype dtype, gs_view *v);

/* ---- settling, shared by the scan-like ops (settle.c) ------------------------------------- */

/* The `out=` operand: a NumPy array or a device array (else TypeError). */
int gs_out_get(PyObject *out_obj, gs_operand *out);

/* TypeError unless NumPy casts `from` to `to` under the 'same_kind' rule. */
int gs_check_same_kind(gs_dtype from, gs_dtype to);

/* *acc = the accumulation and result dtype: dtype= (NULL: not given), else out's dtype, else
 * NumPy's accumulate rule for in_type under op; and the checks of `out` (NULL: not given)
 * against the result's shape (rnd, rshape), its writability and 'same_kind' casting; a bitwise
 * op needs bool or integers. */
int gs_settle_acc(gs_op op, gs_dtype in_type, PyArray_Descr *dtype, gs_operand *out, int rnd,
                  const int64_t *rshape, gs_dtype *acc);

/* *src = a private copy of a placed input when a call would write dst over it before reading
 * it: any overlap, except exactly in place (the same buffer) when in_place_ok. */
int gs_apart_from(const gs_view *dst, gs_view *src, int in_place_ok, gs_bag *bag);

/* ---- shared by the ops ------------------------------------------------------------------- */
/* ValueError unless two shapes are equal ("flags has shape (3,) but a has shape (4,)"). */
int gs_check_same_shape(const char *name, int nd, const int64_t *shape, const char *other_name,
                        int other_nd, const int64_t *other);

/* Product of a shape's lengths. */
int64_t gs_shape_size(int ndim, const int64_t *shape);

/* The min and the max of the n values of `v` (ready in be's memory, one dimension), reduced by
 * the backend's reduction, as the bits of their dtype zero-extended to 64 bits (reduce.c). */
int gs_reduce_min_max(const gs_backend_ops *be, const gs_view *v, uint64_t out[2]);

#endif /* GS_OPS_H */
