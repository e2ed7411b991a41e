/*
 * gpuscan.h - declarations shared by the host layer's files (csrc/, everything Python-facing).
 *
 * Level: host layer.  Every .c file of the extension that talks to Python or NumPy includes this
 * header first.  It sets up the NumPy C API for a multi-file extension (binding/module.c imports
 * it, the other files see the same table through PY_ARRAY_UNIQUE_SYMBOL) and declares:
 *   binding/module.c       the module's exception, AxisError, the DeviceArray type object;
 *   binding/backend.c      which backend runs a call, and why; running a call over NumPy buffers;
 *   binding/args.c         op / algorithm / dtype / axis parsing and the result dtype rules;
 *   binding/operand.c      Python objects -> host arrays or device views (CAI v2/v3, DLPack);
 *   binding/devarray.c     gpuscan.DeviceArray and to_device();
 *   cuda/runtime.c    the CUDA runtime glue: one stream, the stream-ordered pool, errors;
 *   ops/scan.c         scan() and segmented_scan(), their host path; ops/scan_device.c their device
 *                  path;
 *   ops/reduce.c       reduce(): its host path and, in a CUDA build, its device path;
 *   ops/split.c        split() and compact(): their CPU path and, in a CUDA build, their device
 *                  path (NumPy operands uploaded).
 *   ops/trace.c        _trace(): the teaching scans one step at a time (gpuscan.trace).
 *   ops/hist.c         histogram() and bincount(), on either backend.
 * Functions that return int return 0 on success and -1 with a Python exception set.
 */
#ifndef GPUSCAN_H
#define GPUSCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL gpuscan_ARRAY_API
#ifndef GS_IMPORT_NUMPY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "gpuscan/backend_api.h"

#ifdef GS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* ---- binding/module.c -------------------------------------------------------------------------
 */

/* gpuscan.GpuscanError (a RuntimeError): a CUDA call failed. */
extern PyObject *gs_GpuscanError;
/* numpy.exceptions.AxisError, fetched at import. */
extern PyObject *gs_AxisError;

/* ---- binding/backend.c ------------------------------------------------------------------------
 */

typedef enum gs_backend { GS_BACKEND_CPU, GS_BACKEND_CUDA } gs_backend;

/* The backend of this process, chosen lazily at first use from $GPUSCAN_BACKEND and what the
 * machine offers.  Fails with RuntimeError naming the cause when CUDA is forced but unusable. */
int gs_backend_get(gs_backend *backend);

/* Why the backend is the CPU one (valid after gs_backend_get chose it). */
const char *gs_backend_cpu_reason(void);

/* Succeeds when the CUDA backend is active; else TypeError explaining why device arrays cannot
 * be used (or the RuntimeError of a forced, unusable CUDA). */
int gs_require_cuda(void);

/* Run one call over NumPy buffers on `backend`: the scan `scan`, or else the reduction
 * `reduce`.  The CPU backend runs with the GIL released (its failures: MemoryError, or
 * RuntimeError naming the errno); CUDA uploads, runs and downloads (gs_cuda_run_host).
 * Honours Ctrl-C when it returns. */
int gs_run_host(gs_backend backend, const gs_scan_desc *scan, const gs_reduce_desc *reduce);

/* A CPU backend's return code (cpu/cpu.h) as the call's outcome, with the GIL held: MemoryError for
 * -ENOMEM, RuntimeError naming any other errno, else whatever Ctrl-C raised (or 0). */
int gs_cpu_status(int rc);

/* ---- binding/args.c ---------------------------------------------------------------------------
 */

/* op: a name from GS_OPS or the matching NumPy ufunc; else ValueError listing the choices. */
int gs_parse_op(PyObject *obj, gs_op *op);

/* algorithm: "auto", "hillis_steele" or "blelloch" (segmented: "auto" or "blelloch"); else
 * ValueError listing the choices. */
int gs_parse_algorithm(const char *name, int segmented, gs_algorithm *algo);

/* The gs_dtype of a NumPy kind letter and item size; -1 (no exception) when unsupported. */
int gs_dtype_from_kind(char kind, int itemsize, gs_dtype *out);

/* The gs_dtype of a NumPy dtype, whatever its byte order; else TypeError naming the supported
 * dtypes.  `what` names the argument in the message ("input", "out", "dtype"). */
int gs_dtype_from_descr(PyArray_Descr *descr, const char *what, gs_dtype *out);

/* The native-byte-order NumPy dtype of `t` (a new reference). */
PyArray_Descr *gs_descr(gs_dtype t);

/* NumPy's name of `t` ("int64", ...). */
const char *gs_dtype_name(gs_dtype t);

/* NumPy's accumulate result dtype: add/mul widen bool and narrow integers to 64 bits. */
gs_dtype gs_default_acc_type(gs_dtype in, gs_op op);

/* TypeError for a bitwise operator on a float accumulation dtype. */
int gs_check_op_dtype(gs_op op, gs_dtype acc);

/* A Python int axis (negative counts from the end) -> [0, ndim); else TypeError or AxisError. */
int gs_normalize_axis(PyObject *axis, int ndim, int *out);

/* reduce()'s axis: None (every axis), an int or a tuple of ints -> reduced[i] = 1 for each
 * reduced axis i < ndim; duplicates are a ValueError, out of range an AxisError (as NumPy). */
int gs_parse_axes(PyObject *axis, int ndim, unsigned char *reduced);

/* ValueError for an array whose shape is not the one wanted; `what` names both ("out has
 * shape (3,) but the result has shape (4,)").  Returns -1. */
int gs_shape_error(const char *have_name, int have_nd, const int64_t *have, const char *want_name,
                   int want_nd, const int64_t *want);

/* ---- binding/operand.c ------------------------------------------------------------------------
 */

/* An array in device memory: element 0 at `ptr`, byte strides, native byte order. */
typedef struct gs_devview {
    char *ptr;
    gs_dtype dtype;
    int ndim;
    int64_t shape[GS_MAX_NDIM];
    int64_t strides[GS_MAX_NDIM];
} gs_devview;

/*
 * A Python argument as the scan sees it: a NumPy array (`host`), or a device array (`dev`)
 * whose memory is kept alive by `owner` (the producer, or a consumed DLPack capsule) and, for
 * DLPack, released through `managed`'s deleter.
 */
typedef struct gs_operand {
    int on_device;
    int readonly;
    PyArrayObject *host;
    gs_devview dev;
    PyObject *owner;
    void *managed;
    /* The producer's stream from __cuda_array_interface__ v3 (1: the legacy default stream),
     * or 0 when the producer named none (CAI v2, "stream": None, DLPack). */
    uintptr_t foreign_stream;
} gs_operand;

/* 1 when obj exposes __cuda_array_interface__, is a DeviceArray, or has a CUDA __dlpack__;
 * 0 when not; -1 on error. */
int gs_is_device_object(PyObject *obj);

/* Turn obj into an operand.  Device objects need the CUDA backend (see gs_require_cuda);
 * anything else goes through PyArray_FromAny.  On success the caller owns `op` and must call
 * gs_operand_release; on failure `op` holds nothing. */
int gs_operand_get(PyObject *obj, gs_operand *op);

/* Release what gs_operand_get took; safe on a zeroed operand and called twice. */
void gs_operand_release(gs_operand *op);

/* An operand's dtype (TypeError naming the supported dtypes otherwise; `what` names the
 * argument), number of dimensions (at most GS_MAX_NDIM, else ValueError) and shape. */
int gs_operand_info(const gs_operand *op, const char *what, gs_dtype *dtype, int *ndim,
                    int64_t *shape);

/* Number of elements of a device view. */
int64_t gs_devview_size(const gs_devview *v);

/* Whether a device view is C-contiguous (size 0 and 1 views always are). */
int gs_devview_is_c_contig(const gs_devview *v);

/* Set v's strides to the C-contiguous strides of its shape and dtype. */
void gs_devview_set_c_strides(gs_devview *v);

/* ---- binding/devarray.c -----------------------------------------------------------------------
 */

/* gpuscan.DeviceArray: a C-contiguous array in device memory. */
typedef struct gs_DeviceArray {
    PyObject_HEAD void *data; /* device pointer of element 0 */
    gs_dtype dtype;
    int ndim;
    int64_t shape[GS_MAX_NDIM];
    int device;     /* CUDA device ordinal */
    int owns;       /* data is a pool allocation freed in dealloc */
    PyObject *base; /* else: keeps the memory's owner alive (may be NULL) */
} gs_DeviceArray;

extern PyTypeObject gs_DeviceArray_Type;

#define gs_DeviceArray_Check(op) PyObject_TypeCheck(op, &gs_DeviceArray_Type)

/* A view of a DeviceArray's memory. */
void gs_devarray_view(const gs_DeviceArray *a, gs_devview *v);

/* gpuscan.to_device(a). */
PyObject *gs_to_device(PyObject *self, PyObject *arg);

#ifdef GS_HAVE_CUDA
/* A new DeviceArray of the given shape and dtype, uninitialised, from the pool. */
gs_DeviceArray *gs_devarray_new(int ndim, const int64_t *shape, gs_dtype dtype);
#endif

/* ---- cuda/runtime.c ---------------------------------------------------------------------- */

#ifdef GS_HAVE_CUDA

/* The stream every gpuscan operation is enqueued on (blocking: ordered with the legacy default
 * stream) and the device it belongs to. */
extern cudaStream_t gs_cuda_stream;
extern int gs_cuda_device;

/*
 * The first CUDA failure of a function, recorded where it happens (possibly with the GIL
 * released) and turned into a Python exception by gs_cuda_raise once the GIL is held again.
 */
typedef struct gs_cuda_fail {
    cudaError_t err;
    const char *call; /* the failed expression; its function name is reported */
    size_t bytes;     /* bytes requested, for allocation failures */
} gs_cuda_fail;

/* Record a failure (the first one wins) and jump to the function's single cleanup label. */
#define GS_CUDA_CHECK(fail, call)                         \
    do {                                                  \
        cudaError_t gs_err_ = (call);                     \
        if (gs_err_ != cudaSuccess) {                     \
            gs_cuda_fail_set(&(fail), gs_err_, #call, 0); \
            goto error;                                   \
        }                                                 \
    } while (0)

/* Take `bytes` from the stream-ordered pool into *ptr (NULL for 0 bytes), or fail as above. */
#define GS_CUDA_ALLOC(fail, ptr, bytes)                                     \
    do {                                                                    \
        cudaError_t gs_err_ = gs_cuda_malloc((void **)&(ptr), (bytes));     \
        if (gs_err_ != cudaSuccess) {                                       \
            gs_cuda_fail_set(&(fail), gs_err_, "cudaMallocAsync", (bytes)); \
            goto error;                                                     \
        }                                                                   \
    } while (0)

void gs_cuda_fail_set(gs_cuda_fail *fail, cudaError_t err, const char *call, size_t bytes);

/* Raise the recorded failure (GpuscanError, or MemoryError for an exhausted pool), clear the
 * runtime's error state; returns -1.  Needs the GIL. */
int gs_cuda_raise(const gs_cuda_fail *fail);

/* Probe the machine and set up the stream and pool.  0 when usable; else -1 with the reason in
 * `why` (no Python exception). */
int gs_cuda_init(char *why, size_t why_len);

/* Make gpuscan's device current in the calling thread. */
cudaError_t gs_cuda_enter(void);

/* Pool allocation and release on gs_cuda_stream; freeing NULL does nothing and freeing never
 * fails loudly (cleanup paths and dealloc). */
cudaError_t gs_cuda_malloc(void **ptr, size_t bytes);
void gs_cuda_free(void *ptr);

/* Enqueue one scan (`scan`), or else one reduction (`reduce`): gs_cuda_scan on the scans'
 * shared scratch (zeroed once, an epoch per scan: cuda/runtime.c), or gs_cuda_teach_scan /
 * gs_cuda_reduce with scratch from the pool (its pure size function) given back after;
 * synchronizes when gs_cuda_debug_sync is set.  No GIL needed. */
cudaError_t gs_cuda_enqueue(const gs_scan_desc *scan, const gs_reduce_desc *reduce,
                            gs_cuda_fail *fail);

/* Enqueue dst[...] = src[...] (same shapes, any strides, converting dtypes).  No GIL needed. */
cudaError_t gs_cuda_copy_view(const gs_devview *src, const gs_devview *dst);

/* Make gs_cuda_stream wait for the work already enqueued on a foreign stream handle (CAI
 * "stream": 2 is the per-thread default stream). */
int gs_cuda_wait_foreign(uintptr_t stream);

/* Make a foreign stream wait for the work already enqueued on gs_cuda_stream (DLPack export). */
int gs_cuda_signal_foreign(uintptr_t stream);

/* After a call that used op's device memory: order the producer's later work after ours.  Its
 * CAI stream waits on an event (nothing for the legacy default stream, already ordered with
 * ours); a producer that named no stream gets a host sync instead.  Our own DeviceArrays need
 * neither. */
int gs_cuda_release_foreign(const gs_operand *op);

/* ValueError unless ptr is device (or managed) memory of gs_cuda_device. */
int gs_cuda_check_pointer(const void *ptr);

/* Scan (`scan`, with its flags) or else reduce (`reduce`) NumPy buffers on the device: upload,
 * run, download, synchronize (GIL released inside). */
int gs_cuda_run_host(const gs_scan_desc *scan, const gs_reduce_desc *reduce);

/* Synchronous copies between a host buffer and device memory (GIL released inside). */
int gs_cuda_download(void *host, const void *dev, size_t bytes);
int gs_cuda_upload(void *dev, const void *host, size_t bytes);

/* Wait for everything enqueued on gs_cuda_stream (GIL released inside). */
int gs_cuda_sync(void);

/* device_info() entries of the CUDA backend, added to `info`. */
int gs_cuda_device_info(PyObject *info);

#endif /* GS_HAVE_CUDA */

/* ---- ops/scan.c / ops/scan_device.c -----------------------------------------------------------
 */

/* Everything settled about one scan call before any data moves. */
typedef struct gs_scan_plan {
    gs_op op;
    int exclusive;
    int axis;              /* -1: the flattened array */
    gs_dtype in_type;      /* the input's dtype */
    gs_dtype acc_type;     /* accumulation and result dtype */
    gs_dtype scan_in_type; /* what the backend reads: in_type when the pair is direct */
    gs_algorithm algorithm;
} gs_scan_plan;

PyObject *gs_scan(PyObject *self, PyObject *args, PyObject *kwargs);
extern const char gs_scan_doc[];
PyObject *gs_segmented_scan(PyObject *self, PyObject *args, PyObject *kwargs);
extern const char gs_segmented_scan_doc[];

#ifdef GS_HAVE_CUDA
/* A NumPy operand uploaded: C order, native `dtype`, into *up (a pool buffer the caller frees);
 * *v views it.  Raises on failure. */
int gs_devview_upload(PyArrayObject *host, gs_dtype dtype, gs_devview *v, void **up);

/* View v as one dimension of its elements in C order, gathered into *tmp (a pool buffer the
 * caller frees) when its layout is not already that: always when `contiguous` is set, else
 * only when it has several dimensions (a strided 1-D view is left for a later converting
 * copy). */
cudaError_t gs_devview_flatten(gs_devview *v, int contiguous, void **tmp, gs_cuda_fail *fail);

/* The scan when the input, the flags or `out` lives on the device (CUDA backend only).  `in`,
 * `flags` and `out` are operands (flags NULL: not segmented; out->host and out->on_device both
 * zero: no out=); the result has shape `rshape` (rnd dimensions).  Returns the result. */
PyObject *gs_scan_device(const gs_scan_plan *plan, gs_operand *in, gs_operand *flags,
                         gs_operand *out, PyObject *out_obj, int rnd, const int64_t *rshape);
#endif

/* ---- ops/trace.c -------------------------------------------------------------------------- */

/* _gpuscan._trace(algorithm, a, flags=None, op='add', exclusive=False): a teaching scan run
 * one step at a time on the active backend -> (steps, result, work, span), steps a list of
 * (kind, stride, values, flags or None, work of the step). */
PyObject *gs_trace(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- ops/reduce.c ------------------------------------------------------------------------- */

PyObject *gs_reduce(PyObject *self, PyObject *args, PyObject *kwargs);
extern const char gs_reduce_doc[];

/* ---- ops/split.c -------------------------------------------------------------------------- */

PyObject *gs_split(PyObject *self, PyObject *args, PyObject *kwargs);
extern const char gs_split_doc[];
PyObject *gs_compact(PyObject *self, PyObject *args, PyObject *kwargs);
extern const char gs_compact_doc[];

/* ---- ops/hist.c --------------------------------------------------------------------------- */

PyObject *gs_histogram(PyObject *self, PyObject *args, PyObject *kwargs);
extern const char gs_histogram_doc[];
PyObject *gs_bincount(PyObject *self, PyObject *args, PyObject *kwargs);
extern const char gs_bincount_doc[];
/* Test hooks: how the last CUDA histogram launch counted (a dict; None in a CPU-only build),
 * and gs_hist_plan(nbins, acc_bytes, budget) -> (slices, slice_bins, replicas). */
PyObject *gs_hist_last_launch(PyObject *self, PyObject *unused);
PyObject *gs_hist_plan_py(PyObject *self, PyObject *args);

#endif /* GPUSCAN_H */
