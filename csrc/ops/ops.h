/*
 * ops/ops.h - the seam between the ops (csrc/ops/: one file per primitive family) and the two
 * backends (csrc/cpu/, csrc/cuda/).
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

/* ---- the entry points (registered by module/module.c) ------------------------------------- */

PyObject *gs_scan(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_segmented_scan(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_reduce(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_split(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_compact(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_histogram(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_bincount(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_reduceat(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_segmented_reduce(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_linear_recurrence(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_sort(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *gs_argsort(PyObject *self, PyObject *args, PyObject *kwargs);
/* _trace(algorithm, a, flags=None, op='add', exclusive=False): a teaching scan run one step at a
 * time on the active backend -> (steps, result, work, span), steps a list of (kind, stride,
 * values, flags or None, work of the step); gpuscan.trace's engine. */
PyObject *gs_trace(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- operators you write (userop.c) ----------------------------------------------------- */

/* Whether the call's `op` (positional argument pos, or the keyword) is a gpuscan.Operator; the
 * entries then hand the whole call to their gs_uop_ twin, which parses the same arguments. */
int gs_uop_wanted(PyObject *args, PyObject *kwargs, Py_ssize_t pos);
PyObject *gs_uop_scan(PyObject *args, PyObject *kwargs);
PyObject *gs_uop_segmented_scan(PyObject *args, PyObject *kwargs);
PyObject *gs_uop_reduce(PyObject *args, PyObject *kwargs);
PyObject *gs_uop_reduceat(PyObject *args, PyObject *kwargs);
PyObject *gs_uop_segmented_reduce(PyObject *args, PyObject *kwargs);

/* ---- streaming host operands through a backend's memory (stream.c) ------------------------- */

/* The backend's streamed entries (gpuscan/backend.h), for host operands on a backend with memory
 * of its own: each runs the entry without the GIL (honouring Ctrl-C between chunks) and raises
 * its failure. gs_stream_reduce and gs_stream_min_max also combine, on the host, the per-chunk
 * partials of rows longer than a chunk (with the CPU backend's compensated reduction), and
 * gs_stream_split makes the split's result (gs_result_streamed) once its length is known. */
int gs_stream_scan(const gs_backend_ops *be, const gs_scan_desc *d, const gs_view *in,
                   const gs_view *flags, const gs_view *out);
int gs_stream_reduce(const gs_backend_ops *be, const gs_reduce_desc *d, const gs_view *in,
                     const gs_view *out);
/* The min and the max of `in`'s values (of in->dtype) as their bits, zero-extended. */
int gs_stream_min_max(const gs_backend_ops *be, const gs_view *in, uint64_t out[2]);
int gs_stream_hist(const gs_backend_ops *be, const gs_hist_desc *d, const gs_view *in,
                   const gs_view *weights, const gs_view *out);
/* *res = the 1-D result (a new reference), *total the flagged count. */
int gs_stream_split(const gs_backend_ops *be, const gs_split_desc *d, const gs_view *in,
                    const gs_view *flags, PyObject **res, int64_t *total);

/* ---- settling, shared by the ops (settle.c) ------------------------------------------------- */

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

/* ValueError unless two shapes are equal ("flags has shape (3,) but a has shape (4,)"). */
int gs_check_same_shape(const char *name, int nd, const int64_t *shape, const char *other_name,
                        int other_nd, const int64_t *other);

/* After a call that used op's device memory, order its producer's later work after ours
 * (binding/operand.c); nothing for host operands and for gpuscan's own DeviceArrays.  Every
 * operand is released, also after the call failed with work already enqueued (an exception
 * already set is kept; else the first release's failure is raised); -1 if any failed. */
int gs_release_operands(gs_operand *const *ops, int n);

/* ---- shared by the ops ------------------------------------------------------------------- */

/* The min and the max of the n values of `v` (ready in be's memory, one dimension), reduced by
 * the backend's reduction, as the bits of their dtype zero-extended to 64 bits (reduce.c). */
int gs_reduce_min_max(const gs_backend_ops *be, const gs_view *v, uint64_t out[2]);

#endif /* GS_OPS_H */
