/*
 * core/core.h - what binding/ and ops/ share below them: the backend of a call, the one converter
 * from a failure record to a Python exception, the dtype table as NumPy sees it, the bag of a
 * call's buffers, the one router of data between views, and the C side of a call's results.
 * Level: core, the lowest level that knows Python: below binding/ (Python objects in) and ops/
 * (one file per primitive family), above the backends (csrc/cpu/, csrc/cuda/, neither of which
 * knows Python) and csrc/host/.  Every .c file that talks to Python or NumPy includes this header
 * first (through binding/binding.h or ops/ops.h, or directly): it sets up the NumPy C API for a
 * multi-file extension (module/module.c imports it; the other files see the same table through
 * PY_ARRAY_UNIQUE_SYMBOL).  Functions that return int return 0 on success and -1 with a Python
 * exception set.
 *   raise.c    the module's exceptions; gs_raise; the check for Ctrl-C between a call's pieces;
 *   backend.c  which backend runs the calls of this process, its table, the private knobs;
 *   dtype.c    gs_dtype <-> NumPy dtypes and names;
 *   move.c     the bag of a call's buffers, gs_move / gs_place, waiting for the device;
 *   result.c   new results: NumPy arrays (in the memory a backend's copies reach fastest) and
 *              DeviceArrays (their Python type is binding/devarray.c's);
 *   hold.c     big NumPy operands used again, held in that memory while they live.
 */
#ifndef GS_CORE_H
#define GS_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL gpuscan_ARRAY_API
#ifndef GS_IMPORT_NUMPY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "gpuscan/backend.h"
#include "host/view.h"

/* ---- raise.c ------------------------------------------------------------------------------ */

/* gpuscan.GpuscanError (a RuntimeError): a CUDA call failed.  Made at import (module.c). */
extern PyObject *gs_GpuscanError;
/* numpy.exceptions.AxisError, fetched at import (module.c). */
extern PyObject *gs_AxisError;

/* Raise a call's failure record (gpuscan/backend.h) as its Python exception; returns -1.  Needs
 * the GIL.  The one converter from a backend's failure to an exception:
 *   'c' GpuscanError naming the call and CUDA's error, or MemoryError with the sizes;
 *   'e' MemoryError for ENOMEM, else RuntimeError naming the call;
 *   'p' the exception already set (KeyboardInterrupt from gs_interrupt_check). */
int gs_raise(const gs_fail *f);

/*
 * The GIL released around work that may call back into Python without it (the stop check, a
 * streamed split's result): GS_BEGIN_UNLOCKED keeps the thread state it releases in gs_released,
 * where gs_gil_take (and gs_gil_give after it) take the GIL back on the caller's own state, in
 * whatever interpreter it runs.  They nest; outside them gs_released is NULL.
 */
extern _Thread_local PyThreadState *gs_released;
#define GS_BEGIN_UNLOCKED                             \
    {                                                 \
        PyThreadState *const gs_outer_ = gs_released; \
        gs_released = PyEval_SaveThread();
#define GS_END_UNLOCKED                \
    PyEval_RestoreThread(gs_released); \
    gs_released = gs_outer_;           \
    }
void gs_gil_take(void);
void gs_gil_give(void);

/* The check a long call makes between its pieces (installed at import as host/pool.h's stop
 * check): inside GS_BEGIN_UNLOCKED, takes the GIL for a moment, runs Python's signal handlers,
 * and returns nonzero with their exception (KeyboardInterrupt) set when one raised; elsewhere 0. */
int gs_interrupt_check(void);

/* ---- backend.c ---------------------------------------------------------------------------- */

typedef enum gs_backend { GS_BACKEND_CPU, GS_BACKEND_CUDA } gs_backend;

/* The backend of this process, chosen lazily at first use from $GPUSCAN_BACKEND and what the
 * machine offers.  Fails with RuntimeError naming the cause when CUDA is forced but unusable. */
int gs_backend_get(gs_backend *backend);

/* Why the backend is the CPU one (valid after gs_backend_get chose it). */
const char *gs_backend_cpu_reason(void);

/* Succeeds when the CUDA backend is active; else TypeError explaining why device arrays cannot
 * be used (or the RuntimeError of a forced, unusable CUDA). */
int gs_require_cuda(void);

/* The table of a backend, and of the backend that runs a call whose operands are on the device
 * when `device` is set (CUDA: the operands' acquisition checked it is active), else on the host. */
const gs_backend_ops *gs_backend_table(gs_backend backend);
const gs_backend_ops *gs_backend_for(gs_backend backend, int device);

/* Settings that the private hooks (module/hooks.c) change for the tests and benchmarks, read by
 * the ops under the GIL and carried to the backend in the descriptors: no launcher reads them.
 *   teach_unpadded      gs_scan_desc.unpadded of the teaching scans;
 *   segreduce_many      gs_segreduce_desc.many_tiles (0: the launcher's default);
 *   segreduce_per_warp  gs_segreduce_desc.per_warp (0: the launcher's default). */
typedef struct gs_knobs {
    int teach_unpadded;
    int64_t segreduce_many;
    int segreduce_per_warp;
} gs_knobs;
extern gs_knobs gs_test_knobs;

/* ---- dtype.c ------------------------------------------------------------------------------ */

/* The gs_dtype of a NumPy kind letter and item size; -1 (no exception) when unsupported. */
int gs_dtype_from_kind(char kind, int itemsize, gs_dtype *out);

/* The gs_dtype of a NumPy dtype, whatever its byte order; else TypeError naming the supported
 * dtypes.  `what` names the argument in the message ("input", "out", "dtype"). */
int gs_dtype_from_descr(PyArray_Descr *descr, const char *what, gs_dtype *out);

/* The native-byte-order NumPy dtype of `t` (a new reference). */
PyArray_Descr *gs_descr(gs_dtype t);

/* NumPy's name of `t` ("int64", ...), derived from the dtype table. */
const char *gs_dtype_name(gs_dtype t);

/* The supported dtypes' names, comma-separated, from the dtype table ("bool, int8, ..."). */
const char *gs_supported_dtypes(void);

/* ---- move.c ------------------------------------------------------------------------------- */

/* The buffers one call holds (host memory or device memory from the pool); gs_bag_free gives
 * them all back (device ones stream-ordered, after the work enqueued on them).  Zero it
 * before use. */
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

/* dst[...] = src[...]: the same shape, any strides, any memories, converting dtypes as NumPy's
 * unsafe casting does.  Host to host is NumPy's copy; device to device the copy kernel; across
 * memories the transfer pipeline (cuda/transfer.c), without the GIL and honouring Ctrl-C.
 * Returns when a host destination holds its values.  Raises on failure. */
int gs_move(const gs_view *src, const gs_view *dst, gs_bag *bag);

/* *out = v as the backend reads it (gs_view_ready in `mem` for `dtype`): v itself when it
 * already is, else a copy in the bag. */
int gs_place(const gs_view *v, gs_mem mem, gs_dtype dtype, gs_bag *bag, gs_view *out);

/* Wait for every backend's pending work (CUDA: the stream), without the GIL; raises on
 * failure. */
int gs_sync(void);

/* ---- result.c ----------------------------------------------------------------------------- */

/* gpuscan.DeviceArray: a C-contiguous array in device memory.  Its Python type (methods, the
 * array protocols) is binding/devarray.c's, which registers it here at import. */
typedef struct gs_DeviceArray {
    PyObject_HEAD void *data; /* device pointer of element 0 */
    gs_dtype dtype;
    int ndim;
    int64_t shape[GS_MAX_NDIM];
    int device;     /* CUDA device ordinal */
    int owns;       /* data is a pool allocation freed in dealloc */
    PyObject *base; /* else: keeps the memory's owner alive (may be NULL) */
} gs_DeviceArray;

extern PyTypeObject *gs_devarray_type;

#define gs_DeviceArray_Check(op) PyObject_TypeCheck(op, gs_devarray_type)

/* A view of a DeviceArray's memory. */
void gs_devarray_view(const gs_DeviceArray *a, gs_view *v);

/* A new DeviceArray of the given shape and dtype, uninitialised, from the pool (a build
 * without CUDA raises). */
gs_DeviceArray *gs_devarray_new(int ndim, const int64_t *shape, gs_dtype dtype);

/* A new uninitialised C-contiguous array of `dtype` and `shape` in `mem`: a NumPy array on the
 * host, a DeviceArray on the device; *v views it. */
PyObject *gs_result_new(gs_mem mem, int ndim, const int64_t *shape, gs_dtype dtype, gs_view *v);

/* A new uninitialised C-contiguous NumPy array of `descr` (stolen) and `dims`, in the memory
 * `be`'s copies reach fastest (be->host_take, given back when the array is freed; NULL or a
 * backend without it: NumPy's memory). */
PyArrayObject *gs_host_array(const gs_backend_ops *be, int ndim, const npy_intp *dims,
                             PyArray_Descr *descr);

/* A new host result that `be` fills through its copies (a streamed entry, or a device
 * temporary moved back whole: sort, linear_recurrence): in the memory its copies reach fastest
 * (be->host_take, given back when the array is freed), else as gs_result_new's. */
PyObject *gs_result_streamed(const gs_backend_ops *be, int ndim, const int64_t *shape,
                             gs_dtype dtype, gs_view *v);

/* ---- hold.c ------------------------------------------------------------------------------- */

/* A NumPy operand `a`, viewed by `v`, seen by a call (binding/operand.c, every host operand):
 * held in the memory the backend's copies reach fastest (be->host_hold) at its second use when
 * it is big, until its memory is freed or moved (core/hold.c says which).  Raises nothing. */
void gs_hold_host(PyArrayObject *a, const gs_view *v);
/* The size from which an operand is held (64 MiB; 0: none). */
size_t gs_hold_min_bytes(void);
void gs_hold_set_min_bytes(size_t bytes);

#endif /* GS_CORE_H */
