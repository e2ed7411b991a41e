/*
 * cuda/cuda.h - what the rest of the extension asks of the CUDA runtime glue.
 * Level: backend (CUDA), host side; no Python. These functions exist in every build: a build
 * with the kernels implements them in runtime.c, device.c, transfer.c and chunk.c; a build
 * without CUDA links stubs.c, whose functions fail with "gpuscan was built without CUDA" (see
 * there). No CUDA type appears here (those are in cuda/cuda_rt.h, for csrc/cuda/ alone).
 * Functions that return int return 0, or -1 with the failure in *f (core/raise.c turns it into
 * the exception); none needs the GIL, and those that wait must be called without it.
 */
#ifndef GS_CUDA_H
#define GS_CUDA_H

#include "gpuscan/backend.h"
#include "host/view.h"

/* Probe the machine and set up the stream and pool.  0 when usable; else -1 with the reason in
 * `why` (no Python exception). */
int gs_cuda_init(char *why, size_t why_len);

/* The device gpuscan runs on, and its stream as a handle (for CAI "stream" and DLPack). */
int gs_cuda_device_ordinal(void);
uintptr_t gs_cuda_stream_handle(void);

/* What device_info() reports of the device gpuscan runs on. */
typedef struct gs_cuda_props {
    char name[256];
    int device, major, minor, multiprocessors;
    size_t memory_bytes;
    int driver_version, runtime_version; /* CUDA's 12040 for 12.4 */
    size_t pinned_in_use, pinned_cached; /* the page-locked result cache (pinned.c) */
} gs_cuda_props;
int gs_cuda_device_props(gs_cuda_props *p, gs_fail *f);

/* What a failed CUDA call's code means (cudaGetErrorName and cudaGetErrorString; name NULL in a
 * build without CUDA), and for an allocation failure the device's free and total memory.  Clears
 * the runtime's error state, so the next call starts clean. */
typedef struct gs_cuda_error {
    const char *name, *text;
    int out_of_memory, device;
    size_t free_bytes, total_bytes;
} gs_cuda_error;
void gs_cuda_describe(int code, gs_cuda_error *e);

/* 0 when ptr is device (or managed) memory of gpuscan's device; else -1 with the reason in
 * `why`. */
int gs_cuda_check_pointer(const void *ptr, char *why, size_t why_len);

/* Make gpuscan's stream wait for the work already enqueued on a foreign stream handle (CAI
 * "stream": 2 is the per-thread default stream; 1, the legacy default stream, needs nothing). */
int gs_cuda_wait_foreign(uintptr_t stream, gs_fail *f);

/* Make a foreign stream wait for the work already enqueued on gpuscan's stream. */
int gs_cuda_signal_foreign(uintptr_t stream, gs_fail *f);

/* Wait for everything enqueued on gpuscan's stream. */
int gs_cuda_sync(gs_fail *f);

/* Device memory from the stream-ordered pool: *ptr (NULL for 0 bytes), or -1 with the failure
 * recorded in *f.  No GIL needed.  Freeing NULL does nothing and never fails loudly. */
int gs_cuda_alloc(void **ptr, size_t bytes, gs_fail *f);
void gs_cuda_free(void *ptr);

/* ---- transfer.c: the one place data moves between host and device ---------------------- */

/* dst = src for two views of the same shape, one a C-contiguous view of device memory, the
 * other a host view of any strides, byte order and dtype (converted on the host as NumPy's
 * unsafe casting does): through the pipeline (cuda/pipeline.h), chunk by chunk, overlapped.
 * Returns when the copy is done (or stopped: gs_stop_requested, kind 'p'). */
int gs_xfer_copy(const gs_view *src, const gs_view *dst, gs_fail *f);

/* dst = src for two views of device memory (any strides, converting dtypes): the copy kernel,
 * enqueued. */
int gs_xfer_device_copy(const gs_view *src, const gs_view *dst, gs_fail *f);

/* The pipeline's chunk, in bytes of staging per direction (GPUSCAN_CHUNK_BYTES; the tests'
 * knob): set it (0: the default), and read it.  A build without CUDA keeps the value only. */
void gs_xfer_set_chunk_bytes(size_t bytes);
size_t gs_xfer_chunk_bytes(void);

/* Whether the pipeline faults in the host pages of contiguous outputs ahead of their unpack
 * (on by default; a benchmark knob): set it, and read it. */
void gs_xfer_set_prefault(int on);
int gs_xfer_prefault(void);

/* The limit of the page-locked result cache (cuda/pinned.c), in bytes of blocks in use or
 * cached; 0 turns it off.  Set it ((size_t)-1: back to $GPUSCAN_PINNED_BYTES or the default, a
 * quarter of physical memory), and read it.  A build without CUDA keeps the value only. */
void gs_xfer_set_pinned_limit(size_t bytes);
size_t gs_xfer_pinned_limit(void);

/* free_cached_memory(): give back what the device pool and the page-locked result cache hold
 * unused, after the stream's work; their sizes in *device and *host. */
int gs_cuda_free_cached(size_t *device, size_t *host, gs_fail *f);

#endif /* GS_CUDA_H */
