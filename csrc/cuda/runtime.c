/*
 * cuda/runtime.c - the CUDA runtime glue of the host layer.
 *
 * Level: host layer, CUDA build only.  Owns the process's one stream and its use of the
 * device's stream-ordered memory pool, turns CUDA errors into Python exceptions, and moves NumPy
 * buffers to and from the device.  Guarantees:
 *   - one blocking stream (cudaStreamCreate), so work that CuPy or PyTorch enqueue on the legacy
 *     default stream is ordered with ours without extra events;
 *   - device memory only from the pool (cudaMallocAsync / cudaFreeAsync on that stream), with
 *     the release threshold at UINT64_MAX so freed memory stays in the pool for the next call;
 *   - every failure names the failed call (GpuscanError) or the requested size (MemoryError),
 *     frees what the function took (the scans' shared scratch, kept from call to call, aside)
 *     and leaves the runtime usable; cleanup never raises.
 * Functions that release the GIL record failures in a gs_cuda_fail and raise after taking it
 * back.
 */
#include "gpuscan.h"

#ifdef GS_HAVE_CUDA

#include <pthread.h>
#include <stdlib.h>

#include "gpuscan/config.h"
#include "gpuscan/teach_config.h"

cudaStream_t gs_cuda_stream;
int gs_cuda_device;
int gs_cuda_debug_sync;

/* Orders our stream against foreign streams (CAI "stream", DLPack "stream"); no timing. */
static cudaEvent_t handoff_event;

/* Host buffers at least this large are page-locked (cudaHostRegister) for the copy: pinned
 * copies run at ~55 GB/s instead of 10-18 GB/s, which repays the registration from about here
 * on. */
#define GS_PIN_MIN_BYTES ((size_t)8 << 20)

/* ---- errors ------------------------------------------------------------------------------- */

void gs_cuda_fail_set(gs_cuda_fail *fail, cudaError_t err, const char *call, size_t bytes)
{
    if (fail->err != cudaSuccess)
        return;
    fail->err = err;
    fail->call = call;
    fail->bytes = bytes;
}

int gs_cuda_raise(const gs_cuda_fail *fail)
{
    const char *call = fail->call != NULL ? fail->call : "CUDA";
    /* Report the function name of the failed expression, not its arguments. */
    int len = (int)strcspn(call, "(");
    size_t free_b = 0, total_b = 0;

    /* Clear a non-sticky error so the next call starts clean. */
    (void)cudaGetLastError();
    if (fail->err == cudaErrorMemoryAllocation) {
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
            (void)cudaGetLastError();
        if (fail->bytes > 0)
            PyErr_Format(PyExc_MemoryError,
                         "out of device memory: %.*s could not allocate %zu bytes "
                         "(%zu of %zu bytes free on device %d)",
                         len, call, fail->bytes, free_b, total_b, gs_cuda_device);
        else
            PyErr_Format(PyExc_MemoryError,
                         "out of device memory in %.*s (%zu of %zu bytes free on device %d)", len,
                         call, free_b, total_b, gs_cuda_device);
        return -1;
    }
    PyErr_Format(gs_GpuscanError, "%.*s failed: %s (%s)", len, call, cudaGetErrorString(fail->err),
                 cudaGetErrorName(fail->err));
    return -1;
}

/* ---- initialisation ----------------------------------------------------------------------- */

int gs_cuda_init(char *why, size_t why_len)
{
    int driver = 0, runtime = 0, count = 0, pools = 0;
    uint64_t threshold = UINT64_MAX;
    cudaMemPool_t pool;
    cudaError_t err;
    const char *debug = getenv("GPUSCAN_DEBUG_SYNC");

    (void)cudaRuntimeGetVersion(&runtime);
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
        (void)cudaGetLastError();
        snprintf(why, why_len, "no CUDA driver was found (libcuda could not be loaded)");
        return -1;
    }
    err = cudaGetDeviceCount(&count);
    if (err == cudaErrorInsufficientDriver) {
        snprintf(why, why_len,
                 "the CUDA driver is too old: it supports CUDA %d.%d, gpuscan was built with "
                 "CUDA %d.%d",
                 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
        goto error;
    }
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
        snprintf(why, why_len, "no CUDA device was found");
        goto error;
    }
    if (err != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceCount failed: %s (%s)", cudaGetErrorString(err),
                 cudaGetErrorName(err));
        goto error;
    }
    if ((err = cudaGetDevice(&gs_cuda_device)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, gs_cuda_device)) !=
            cudaSuccess) {
        snprintf(why, why_len, "the CUDA device could not be queried: %s (%s)",
                 cudaGetErrorString(err), cudaGetErrorName(err));
        goto error;
    }
    if (!pools) {
        snprintf(why, why_len, "CUDA device %d has no stream-ordered memory pool", gs_cuda_device);
        goto error;
    }
    if ((err = cudaStreamCreate(&gs_cuda_stream)) != cudaSuccess) {
        snprintf(why, why_len, "cudaStreamCreate failed: %s (%s)", cudaGetErrorString(err),
                 cudaGetErrorName(err));
        goto error;
    }
    if ((err = cudaEventCreateWithFlags(&handoff_event, cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaDeviceGetDefaultMemPool(&pool, gs_cuda_device)) != cudaSuccess ||
        (err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold)) !=
            cudaSuccess) {
        snprintf(why, why_len, "the CUDA stream and memory pool could not be set up: %s (%s)",
                 cudaGetErrorString(err), cudaGetErrorName(err));
        if (handoff_event != NULL)
            (void)cudaEventDestroy(handoff_event);
        handoff_event = NULL;
        (void)cudaStreamDestroy(gs_cuda_stream);
        gs_cuda_stream = NULL;
        goto error;
    }
    gs_cuda_debug_sync = debug != NULL && strcmp(debug, "1") == 0;
    return 0;
error:
    (void)cudaGetLastError();
    return -1;
}

cudaError_t gs_cuda_enter(void)
{
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == gs_cuda_device)
        return cudaSuccess;
    return cudaSetDevice(gs_cuda_device);
}

/* ---- memory ------------------------------------------------------------------------------- */

cudaError_t gs_cuda_malloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    if (bytes == 0)
        return cudaSuccess;
    return cudaMallocAsync(ptr, bytes, gs_cuda_stream);
}

void gs_cuda_free(void *ptr)
{
    /* A failure here (e.g. the runtime already unloading at interpreter exit) must not raise:
     * the memory goes back with the context. */
    if (ptr != NULL && cudaFreeAsync(ptr, gs_cuda_stream) != cudaSuccess)
        (void)cudaGetLastError();
}

/* ---- the scans' shared scratch -------------------------------------------------------------- */

/*
 * The single-pass scan's look-back starts from a zero tile counter and no descriptor that reads
 * as published.  Zeroing a fresh scratch before every scan costs a memset on the stream (3.5 us
 * on an H200: 6.5% of an int32 scan of 2^24 values); instead every scan shares one scratch,
 * zeroed once when allocated, and tags its descriptors with its own epoch (gs_scan_desc: another
 * scan's read as unpublished; each scan leaves the counter at zero).  The lock keeps epoch,
 * buffer and launch in one order on the stream, so a buffer replaced by a larger one is freed
 * in stream order, after every scan enqueued on it.
 */
static pthread_mutex_t scan_scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static void *scan_scratch;
static size_t scan_scratch_cap;
static unsigned scan_epoch; /* the last epoch handed out since the scratch was zeroed */

static cudaError_t gs_cuda_scan_shared(const gs_scan_desc *scan)
{
    size_t bytes = gs_scan_scratch_bytes(scan->n);
    gs_scan_desc d = *scan;
    cudaError_t err = cudaSuccess;

    if (bytes == 0) /* n == 0: nothing to launch */
        return gs_cuda_scan(scan, NULL, 0, gs_cuda_stream);
    pthread_mutex_lock(&scan_scratch_lock);
    if (scan_scratch_cap < bytes) {
        void *p = NULL;
        size_t cap = bytes + bytes / 4; /* room to grow a little without a new buffer */
        if ((err = cudaMallocAsync(&p, cap, gs_cuda_stream)) != cudaSuccess)
            goto done;
        if ((err = cudaMemsetAsync(p, 0, cap, gs_cuda_stream)) != cudaSuccess) {
            gs_cuda_free(p);
            goto done;
        }
        gs_cuda_free(scan_scratch);
        scan_scratch = p;
        scan_scratch_cap = cap;
        scan_epoch = 0;
    } else if (scan_epoch == GS_EPOCH_LIMIT - 1) { /* epochs used up: zero it again */
        if ((err = cudaMemsetAsync(scan_scratch, 0, scan_scratch_cap, gs_cuda_stream)) !=
            cudaSuccess)
            goto done;
        scan_epoch = 0;
    }
    d.epoch = ++scan_epoch;
    err = gs_cuda_scan(&d, scan_scratch, scan_scratch_cap, gs_cuda_stream);
done:
    pthread_mutex_unlock(&scan_scratch_lock);
    return err;
}

/* ---- launches and copies ------------------------------------------------------------------ */

cudaError_t gs_cuda_enqueue(const gs_scan_desc *scan, const gs_reduce_desc *reduce,
                            gs_cuda_fail *fail)
{
    const int teach = scan != NULL && scan->algorithm != GS_ALGO_AUTO;
    size_t scratch_bytes = scan == NULL ? gs_reduce_scratch_bytes(reduce->rows, reduce->row_len)
                           : teach      ? gs_teach_scratch_bytes(scan)
                                        : 0; /* the scans' shared scratch */
    void *scratch = NULL;

    GS_CUDA_ALLOC(*fail, scratch, scratch_bytes);
    if (teach)
        GS_CUDA_CHECK(*fail, gs_cuda_teach_scan(scan, scratch, scratch_bytes, gs_cuda_stream));
    else if (scan != NULL)
        GS_CUDA_CHECK(*fail, gs_cuda_scan_shared(scan));
    else
        GS_CUDA_CHECK(*fail, gs_cuda_reduce(reduce, scratch, scratch_bytes, gs_cuda_stream));
    if (gs_cuda_debug_sync)
        GS_CUDA_CHECK(*fail, cudaStreamSynchronize(gs_cuda_stream));
error:
    gs_cuda_free(scratch);
    return fail->err;
}

cudaError_t gs_cuda_copy_view(const gs_devview *src, const gs_devview *dst)
{
    gs_copy_desc d;
    int64_t n = gs_devview_size(src);

    if (n == 0)
        return cudaSuccess;
    if (src->dtype == dst->dtype && gs_devview_is_c_contig(src) && gs_devview_is_c_contig(dst))
        return cudaMemcpyAsync(dst->ptr, src->ptr, (size_t)n * gs_dtype_size(src->dtype),
                               cudaMemcpyDeviceToDevice, gs_cuda_stream);
    memset(&d, 0, sizeof(d));
    d.src = src->ptr;
    d.dst = dst->ptr;
    d.src_type = src->dtype;
    d.dst_type = dst->dtype;
    d.ndim = src->ndim;
    for (int i = 0; i < src->ndim; i++) {
        d.shape[i] = src->shape[i];
        d.src_strides[i] = src->strides[i];
        d.dst_strides[i] = dst->strides[i];
    }
    if (d.ndim == 0) {
        /* A 0-d array is one element: give the copy one dimension of length 1. */
        d.ndim = 1;
        d.shape[0] = 1;
    }
    return gs_cuda_copy(&d, gs_cuda_stream);
}

int gs_cuda_wait_foreign(uintptr_t stream)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };

    /* 1 is the legacy default stream, with which our blocking stream is already ordered. */
    if (stream == 1)
        return 0;
    GS_CUDA_CHECK(fail, gs_cuda_enter());
    /* 2 (cudaStreamPerThread) and any other handle are valid cudaStream_t values as they are. */
    GS_CUDA_CHECK(fail, cudaEventRecord(handoff_event, (cudaStream_t)stream));
    GS_CUDA_CHECK(fail, cudaStreamWaitEvent(gs_cuda_stream, handoff_event, 0));
    return 0;
error:
    return gs_cuda_raise(&fail);
}

int gs_cuda_signal_foreign(uintptr_t stream)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };

    if (stream == 1)
        return 0;
    GS_CUDA_CHECK(fail, gs_cuda_enter());
    GS_CUDA_CHECK(fail, cudaEventRecord(handoff_event, gs_cuda_stream));
    GS_CUDA_CHECK(fail, cudaStreamWaitEvent((cudaStream_t)stream, handoff_event, 0));
    return 0;
error:
    return gs_cuda_raise(&fail);
}

int gs_cuda_release_foreign(const gs_operand *op)
{
    if (!op->on_device || gs_DeviceArray_Check(op->owner))
        return 0;
    if (op->foreign_stream != 0)
        return gs_cuda_signal_foreign(op->foreign_stream);
    return gs_cuda_sync();
}

int gs_cuda_check_pointer(const void *ptr)
{
    struct cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);

    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        PyErr_Format(PyExc_ValueError,
                     "device array data %p is not CUDA memory (cudaPointerGetAttributes: %s)", ptr,
                     cudaGetErrorString(err));
        return -1;
    }
    if (attr.type == cudaMemoryTypeManaged)
        return 0;
    if (attr.type != cudaMemoryTypeDevice) {
        PyErr_Format(PyExc_ValueError, "device array data %p is host memory, not device memory",
                     ptr);
        return -1;
    }
    if (attr.device != gs_cuda_device) {
        PyErr_Format(PyExc_ValueError,
                     "the array is on CUDA device %d but gpuscan runs on device %d", attr.device,
                     gs_cuda_device);
        return -1;
    }
    return 0;
}

/* Page-lock a host buffer for a fast copy if it is large enough; 1 when registered.  Failure
 * (already pinned, limits) falls back silently to a pageable copy. */
static int pin(const void *host, size_t bytes)
{
    if (bytes < GS_PIN_MIN_BYTES)
        return 0;
    if (cudaHostRegister((void *)host, bytes, cudaHostRegisterDefault) == cudaSuccess)
        return 1;
    (void)cudaGetLastError();
    return 0;
}

static void unpin(const void *host, int pinned)
{
    if (pinned && cudaHostUnregister((void *)host) != cudaSuccess)
        (void)cudaGetLastError();
}

int gs_cuda_run_host(const gs_scan_desc *scan, const gs_reduce_desc *reduce)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_scan_desc ds;
    gs_reduce_desc dr;
    const void *in = scan != NULL ? scan->in : reduce->in;
    void *out = scan != NULL ? scan->out : reduce->out;
    const void *flags = scan != NULL ? scan->flags : NULL;
    int64_t n_in = scan != NULL ? scan->n : reduce->rows * reduce->row_len;
    int64_t n_out = scan != NULL ? scan->n : reduce->rows;
    size_t in_bytes = (size_t)n_in * gs_dtype_size(scan != NULL ? scan->in_type : reduce->in_type);
    size_t out_bytes =
        (size_t)n_out * gs_dtype_size(scan != NULL ? scan->out_type : reduce->out_type);
    size_t flag_bytes = flags != NULL ? (size_t)n_in * gs_dtype_size(scan->flag_type) : 0;
    int in_place = in == out;
    int pin_in = 0, pin_out = 0, pin_flags = 0;
    void *dev_in = NULL, *dev_out = NULL, *dev_flags = NULL;

    Py_BEGIN_ALLOW_THREADS GS_CUDA_CHECK(fail, gs_cuda_enter());
    pin_in = pin(in, in_bytes);
    if (!in_place)
        pin_out = pin(out, out_bytes);
    pin_flags = pin(flags, flag_bytes);
    GS_CUDA_ALLOC(fail, dev_in, in_bytes);
    if (in_place)
        dev_out = dev_in;
    else
        GS_CUDA_ALLOC(fail, dev_out, out_bytes);
    GS_CUDA_ALLOC(fail, dev_flags, flag_bytes);
    GS_CUDA_CHECK(fail,
                  cudaMemcpyAsync(dev_in, in, in_bytes, cudaMemcpyHostToDevice, gs_cuda_stream));
    if (flag_bytes > 0)
        GS_CUDA_CHECK(fail, cudaMemcpyAsync(dev_flags, flags, flag_bytes, cudaMemcpyHostToDevice,
                                            gs_cuda_stream));
    if (scan != NULL) {
        ds = *scan;
        ds.in = dev_in;
        ds.out = dev_out;
        ds.flags = dev_flags;
    } else {
        dr = *reduce;
        dr.in = dev_in;
        dr.out = dev_out;
    }
    if (gs_cuda_enqueue(scan != NULL ? &ds : NULL, scan != NULL ? NULL : &dr, &fail) != cudaSuccess)
        goto error;
    GS_CUDA_CHECK(fail,
                  cudaMemcpyAsync(out, dev_out, out_bytes, cudaMemcpyDeviceToHost, gs_cuda_stream));
    GS_CUDA_CHECK(fail, cudaStreamSynchronize(gs_cuda_stream));
error:
    /* After a failure, wait until no enqueued copy can still touch the host buffers. */
    if (fail.err != cudaSuccess && cudaStreamSynchronize(gs_cuda_stream) != cudaSuccess)
        (void)cudaGetLastError();
    if (dev_out != dev_in)
        gs_cuda_free(dev_out);
    gs_cuda_free(dev_in);
    gs_cuda_free(dev_flags);
    unpin(in, pin_in);
    unpin(out, pin_out);
    unpin(flags, pin_flags);
    Py_END_ALLOW_THREADS if (fail.err != cudaSuccess) return gs_cuda_raise(&fail);
    return PyErr_CheckSignals();
}

/* One synchronous copy between host and device memory, pinned when large. */
static int transfer(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    const void *host = kind == cudaMemcpyHostToDevice ? src : (const void *)dst;
    int pinned = 0;

    if (bytes == 0)
        return 0;
    Py_BEGIN_ALLOW_THREADS GS_CUDA_CHECK(fail, gs_cuda_enter());
    pinned = pin(host, bytes);
    GS_CUDA_CHECK(fail, cudaMemcpyAsync(dst, src, bytes, kind, gs_cuda_stream));
    GS_CUDA_CHECK(fail, cudaStreamSynchronize(gs_cuda_stream));
error:
    if (fail.err != cudaSuccess && cudaStreamSynchronize(gs_cuda_stream) != cudaSuccess)
        (void)cudaGetLastError();
    unpin(host, pinned);
    Py_END_ALLOW_THREADS if (fail.err != cudaSuccess) return gs_cuda_raise(&fail);
    return 0;
}

int gs_cuda_download(void *host, const void *dev, size_t bytes)
{
    return transfer(host, dev, bytes, cudaMemcpyDeviceToHost);
}

int gs_cuda_upload(void *dev, const void *host, size_t bytes)
{
    return transfer(dev, host, bytes, cudaMemcpyHostToDevice);
}

int gs_cuda_sync(void)
{
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };

    Py_BEGIN_ALLOW_THREADS GS_CUDA_CHECK(fail, cudaStreamSynchronize(gs_cuda_stream));
error:
    Py_END_ALLOW_THREADS if (fail.err != cudaSuccess) return gs_cuda_raise(&fail);
    return 0;
}

/* ---- device_info -------------------------------------------------------------------------- */

/* "12.4" from CUDA's 12040. */
static PyObject *version_string(int v)
{
    return PyUnicode_FromFormat("%d.%d", v / 1000, v % 1000 / 10);
}

int gs_cuda_device_info(PyObject *info)
{
    struct cudaDeviceProp prop;
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    int driver = 0, runtime = 0;
    PyObject *value = NULL;
    int rc = -1;

    GS_CUDA_CHECK(fail, cudaGetDeviceProperties(&prop, gs_cuda_device));
    GS_CUDA_CHECK(fail, cudaDriverGetVersion(&driver));
    GS_CUDA_CHECK(fail, cudaRuntimeGetVersion(&runtime));

#define GS_SET(key, expr)                                                  \
    do {                                                                   \
        value = (expr);                                                    \
        if (value == NULL || PyDict_SetItemString(info, (key), value) < 0) \
            goto error;                                                    \
        Py_CLEAR(value);                                                   \
    } while (0)

    GS_SET("name", PyUnicode_FromString(prop.name));
    GS_SET("device", PyLong_FromLong(gs_cuda_device));
    GS_SET("compute_capability", Py_BuildValue("(ii)", prop.major, prop.minor));
    GS_SET("multiprocessors", PyLong_FromLong(prop.multiProcessorCount));
    GS_SET("memory_bytes", PyLong_FromSize_t(prop.totalGlobalMem));
    GS_SET("driver_version", version_string(driver));
    GS_SET("runtime_version", version_string(runtime));
#undef GS_SET
    rc = 0;
error:
    Py_XDECREF(value);
    if (fail.err != cudaSuccess)
        return gs_cuda_raise(&fail);
    return rc;
}

#endif /* GS_HAVE_CUDA */
