/*
 * cuda/runtime.c - the CUDA runtime glue: initialisation, the stream, the pool, errors, foreign
 * streams.
 * Level: backend (CUDA), host side; a build with CUDA only (stubs.c stands in otherwise).
 * Guarantees:
 *   - one blocking stream (cudaStreamCreate), so work that CuPy or PyTorch enqueue on the legacy
 *     default stream is ordered with ours without extra events;
 *   - device memory only from the pool (cudaMallocAsync / cudaFreeAsync on that stream), with
 *     the release threshold at UINT64_MAX so freed memory stays in the pool for the next call,
 *     and blocks of a few KiB kept aside for the next request of their size (small results);
 *     a request the device cannot serve trims the pool (what it holds unused goes back to the
 *     device) and is tried once more, so a MemoryError leaves no memory reserved for nothing
 *     (another process - a Dask worker on the same GPU - can have it);
 *   - every failure is recorded with the failed call (and the requested size for an
 *     allocation) and leaves the runtime usable; cleanup never fails loudly.
 */
#ifdef GS_HAVE_CUDA

#include "cuda/cuda_rt.h"

#include <pthread.h>
#include <stdlib.h>

cudaStream_t gs_cuda_stream;
int gs_cuda_device;

/* Orders our stream against foreign streams (CAI "stream", DLPack "stream"); no timing. */
static cudaEvent_t handoff_event;
/* The device's default pool, which cudaMallocAsync serves from. */
static cudaMemPool_t pool;
/* The small blocks' lock made anew in a fork's child (below, with the blocks). */
static void small_after_fork_child(void);

/* ---- errors ------------------------------------------------------------------------------- */

void gs_cuda_describe(int code, gs_cuda_error *e)
{
    const cudaError_t err = (cudaError_t)code;

    /* Clear a non-sticky error so the next call starts clean. */
    (void)cudaGetLastError();
    memset(e, 0, sizeof(*e));
    e->name = cudaGetErrorName(err);
    e->text = cudaGetErrorString(err);
    e->device = gs_cuda_device;
    e->out_of_memory = err == cudaErrorMemoryAllocation;
    if (e->out_of_memory && cudaMemGetInfo(&e->free_bytes, &e->total_bytes) != cudaSuccess)
        (void)cudaGetLastError();
}

/* ---- initialisation ----------------------------------------------------------------------- */

/* The device's count and pool support, or the reason it cannot be used. */
static int probe(char *why, size_t why_len)
{
    int driver = 0, runtime = 0, count = 0, pools = 0;
    cudaError_t err;

    (void)cudaRuntimeGetVersion(&runtime);
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
        snprintf(why, why_len, "no CUDA driver was found (libcuda could not be loaded)");
        return -1;
    }
    err = cudaGetDeviceCount(&count);
    if (err == cudaErrorInsufficientDriver) {
        snprintf(why, why_len,
                 "the CUDA driver is too old: it supports CUDA %d.%d, gpuscan was built with "
                 "CUDA %d.%d",
                 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
        return -1;
    }
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
        snprintf(why, why_len, "no CUDA device was found");
        return -1;
    }
    if (err == cudaSuccess)
        err = cudaGetDevice(&gs_cuda_device);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, gs_cuda_device);
    if (err != cudaSuccess) {
        snprintf(why, why_len, "the CUDA device could not be queried: %s (%s)",
                 cudaGetErrorString(err), cudaGetErrorName(err));
        return -1;
    }
    if (!pools) {
        snprintf(why, why_len, "CUDA device %d has no stream-ordered memory pool", gs_cuda_device);
        return -1;
    }
    return 0;
}

int gs_cuda_init(char *why, size_t why_len)
{
    uint64_t threshold = UINT64_MAX;
    cudaError_t err = cudaSuccess;
    const char *debug = getenv("GPUSCAN_DEBUG_SYNC");
    int rc = -1;

    if (probe(why, why_len) < 0)
        goto done;
    if ((err = cudaStreamCreate(&gs_cuda_stream)) == cudaSuccess &&
        (err = cudaEventCreateWithFlags(&handoff_event, cudaEventDisableTiming)) == cudaSuccess &&
        (err = cudaDeviceGetDefaultMemPool(&pool, gs_cuda_device)) == cudaSuccess)
        err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    if (err != cudaSuccess) {
        snprintf(why, why_len, "the CUDA stream and memory pool could not be set up: %s (%s)",
                 cudaGetErrorString(err), cudaGetErrorName(err));
        if (handoff_event != NULL)
            (void)cudaEventDestroy(handoff_event);
        if (gs_cuda_stream != NULL)
            (void)cudaStreamDestroy(gs_cuda_stream);
        handoff_event = NULL;
        gs_cuda_stream = NULL;
        goto done;
    }
    gs_launch_debug_sync = debug != NULL && strcmp(debug, "1") == 0;
    pthread_atfork(NULL, NULL, small_after_fork_child);
    rc = 0;
done:
    (void)cudaGetLastError();
    return rc;
}

cudaError_t gs_cuda_enter(void)
{
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == gs_cuda_device)
        return cudaSuccess;
    return cudaSetDevice(gs_cuda_device);
}

int gs_cuda_device_ordinal(void)
{
    return gs_cuda_device;
}

uintptr_t gs_cuda_stream_handle(void)
{
    return (uintptr_t)gs_cuda_stream;
}

/* ---- memory ------------------------------------------------------------------------------- */

/* Small blocks kept: a result of a few bytes made and dropped each call (reduce's values,
 * histogram's counts) cost a cudaMallocAsync and a cudaFreeAsync, about 2 us together on an
 * H200's host, as long as the kernel that fills it. A block of at most GS_SMALL_MAX bytes is
 * remembered while in use (up to GS_SMALL_LIVE of them), kept when freed (up to GS_SMALL_KEPT)
 * and handed out again for a request of exactly its size: ordered on the stream as the pool's
 * own reuse is (every use of a block is enqueued on gs_cuda_stream), and the same bytes, so
 * compute-sanitizer still sees a block's bounds (not a use after a kept block's free: to the
 * sanitizer it was never freed). Kept blocks go back to the pool when it is trimmed. Calls come
 * with and without the GIL (Dask's threads): a mutex guards the tables. */
#define GS_SMALL_MAX 4096
#define GS_SMALL_LIVE 64
#define GS_SMALL_KEPT 16

typedef struct gs_small_block {
    void *ptr;
    size_t bytes;
} gs_small_block;

static struct {
    pthread_mutex_t lock;
    gs_small_block live[GS_SMALL_LIVE]; /* in use (ptr NULL: a free entry) */
    gs_small_block kept[GS_SMALL_KEPT]; /* freed, for the next request of their size */
    int nkept;
} small = { PTHREAD_MUTEX_INITIALIZER };

/* A kept block of exactly `bytes`, now in use, or NULL. */
static void *small_take(size_t bytes)
{
    void *ptr = NULL;

    pthread_mutex_lock(&small.lock);
    for (int i = small.nkept - 1; i >= 0; --i) {
        if (small.kept[i].bytes == bytes) {
            ptr = small.kept[i].ptr;
            small.kept[i] = small.kept[--small.nkept];
            break;
        }
    }
    for (int i = 0; ptr != NULL && i < GS_SMALL_LIVE; ++i) {
        if (small.live[i].ptr == NULL) {
            small.live[i] = (gs_small_block){ ptr, bytes };
            break;
        }
    }
    pthread_mutex_unlock(&small.lock);
    return ptr;
}

/* Remember a new small block while it is in use (when there is room). */
static void small_track(void *ptr, size_t bytes)
{
    pthread_mutex_lock(&small.lock);
    for (int i = 0; i < GS_SMALL_LIVE; ++i) {
        if (small.live[i].ptr == NULL) {
            small.live[i] = (gs_small_block){ ptr, bytes };
            break;
        }
    }
    pthread_mutex_unlock(&small.lock);
}

/* Keep a freed block that is a remembered small one: 1 when kept, 0 when it goes to the pool. */
static int small_keep(void *ptr)
{
    int kept = 0;

    pthread_mutex_lock(&small.lock);
    for (int i = 0; i < GS_SMALL_LIVE; ++i) {
        if (small.live[i].ptr == ptr) {
            if (small.nkept < GS_SMALL_KEPT) {
                small.kept[small.nkept++] = small.live[i];
                kept = 1;
            }
            small.live[i].ptr = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&small.lock);
    return kept;
}

/* A child of fork() frees DeviceArrays it inherited (CUDA is not usable there): a lock another
 * thread of the parent held at the fork would never be released. */
static void small_after_fork_child(void)
{
    small.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

/* The kept blocks back to the pool (before it is trimmed). */
static void small_release(void)
{
    pthread_mutex_lock(&small.lock);
    for (int i = 0; i < small.nkept; ++i)
        if (cudaFreeAsync(small.kept[i].ptr, gs_cuda_stream) != cudaSuccess)
            (void)cudaGetLastError();
    small.nkept = 0;
    pthread_mutex_unlock(&small.lock);
}

int gs_cuda_alloc(void **ptr, size_t bytes, gs_fail *f)
{
    cudaError_t err;

    *ptr = NULL;
    if (bytes == 0)
        return 0;
    if ((err = gs_cuda_enter()) == cudaSuccess && bytes <= GS_SMALL_MAX &&
        (*ptr = small_take(bytes)) != NULL)
        return 0;
    if (err == cudaSuccess && (err = cudaMallocAsync(ptr, bytes, gs_cuda_stream)) == cudaSuccess) {
        if (bytes <= GS_SMALL_MAX)
            small_track(*ptr, bytes);
        return 0;
    }
    if (err == cudaErrorMemoryAllocation) {
        /* Memory freed into the pool on our stream is unused once the stream is idle: hand it
         * back and try once more; on failure the pool keeps nothing it does not use. */
        (void)cudaGetLastError();
        small_release();
        if (cudaStreamSynchronize(gs_cuda_stream) == cudaSuccess &&
            cudaMemPoolTrimTo(pool, 0) == cudaSuccess &&
            (err = cudaMallocAsync(ptr, bytes, gs_cuda_stream)) == cudaSuccess)
            return 0;
        if (err == cudaErrorMemoryAllocation)
            (void)cudaMemPoolTrimTo(pool, 0);
    }
    *ptr = NULL;
    return gs_fail_set(f, 'c', (int)err, "cudaMallocAsync", bytes);
}

void gs_cuda_free(void *ptr)
{
    /* A failure here (e.g. the runtime already unloading at interpreter exit) must not raise:
     * the memory goes back with the context. */
    if (ptr != NULL && !small_keep(ptr) && cudaFreeAsync(ptr, gs_cuda_stream) != cudaSuccess)
        (void)cudaGetLastError();
}

int gs_cuda_trim_pool(size_t *released, gs_fail *f)
{
    uint64_t before = 0, after = 0;

    *released = 0;
    GS_CUDA_TRY(f, gs_cuda_enter());
    GS_CUDA_TRY(f, cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &before));
    small_release();
    GS_CUDA_TRY(f, cudaStreamSynchronize(gs_cuda_stream)); /* the kept blocks' frees done */
    GS_CUDA_TRY(f, cudaMemPoolTrimTo(pool, 0));
    GS_CUDA_TRY(f, cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &after));
    *released = before > after ? (size_t)(before - after) : 0;
done:
    return f->kind ? -1 : 0;
}

/* ---- ordering with foreign streams and the host ------------------------------------------- */

/* Make `waiter` wait for the work enqueued on `signaller` so far. */
static int order_streams(cudaStream_t signaller, cudaStream_t waiter, gs_fail *f)
{
    GS_CUDA_TRY(f, gs_cuda_enter());
    GS_CUDA_TRY(f, cudaEventRecord(handoff_event, signaller));
    GS_CUDA_TRY(f, cudaStreamWaitEvent(waiter, handoff_event, 0));
done:
    return f->kind ? -1 : 0;
}

int gs_cuda_wait_foreign(uintptr_t stream, gs_fail *f)
{
    /* 1 is the legacy default stream, with which our blocking stream is already ordered; 2
     * (cudaStreamPerThread) and any other handle are valid cudaStream_t values as they are. */
    return stream == 1 ? 0 : order_streams((cudaStream_t)stream, gs_cuda_stream, f);
}

int gs_cuda_signal_foreign(uintptr_t stream, gs_fail *f)
{
    return stream == 1 ? 0 : order_streams(gs_cuda_stream, (cudaStream_t)stream, f);
}

int gs_cuda_sync(gs_fail *f)
{
    GS_CUDA_TRY(f, cudaStreamSynchronize(gs_cuda_stream));
done:
    return f->kind ? -1 : 0;
}

int gs_cuda_check_pointer(const void *ptr, char *why, size_t why_len)
{
    struct cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);

    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, why_len,
                 "device array data %p is not CUDA memory (cudaPointerGetAttributes: %s)", ptr,
                 cudaGetErrorString(err));
        return -1;
    }
    if (attr.type == cudaMemoryTypeManaged)
        return 0;
    if (attr.type != cudaMemoryTypeDevice) {
        snprintf(why, why_len, "device array data %p is host memory, not device memory", ptr);
        return -1;
    }
    if (attr.device != gs_cuda_device) {
        snprintf(why, why_len, "the array is on CUDA device %d but gpuscan runs on device %d",
                 attr.device, gs_cuda_device);
        return -1;
    }
    return 0;
}

#endif /* GS_HAVE_CUDA */
