/*
 * cuda/cuda.h - what the rest of the extension asks of the CUDA runtime glue.
 *
 * Level: backend (CUDA), host side.  These functions exist in every build: a build with the
 * kernels implements them in runtime.c, transfer.c and backend.c; a build without CUDA links
 * stubs.c, whose functions fail with "gpuscan was built without CUDA" (nothing reaches them but
 * a forced backend, since no device operand exists there).  No CUDA type appears here, so
 * binding/ and ops/ compile the same way in both builds.  The CUDA-typed internals (the
 * stream, the error macros) are in cuda/cuda_rt.h, for csrc/cuda/ alone.
 */
#ifndef GS_CUDA_H
#define GS_CUDA_H

#include "ops/ops.h"

/* Probe the machine and set up the stream and pool.  0 when usable; else -1 with the reason in
 * `why` (no Python exception). */
int gs_cuda_init(char *why, size_t why_len);

/* The device gpuscan runs on, and its stream as a handle (for CAI "stream" and DLPack). */
int gs_cuda_device_ordinal(void);
uintptr_t gs_cuda_stream_handle(void);

/* device_info() entries of the CUDA backend, added to `info`. */
int gs_cuda_device_info(PyObject *info);

/* Raise the failure of a CUDA call (code a cudaError_t): GpuscanError naming the call, or
 * MemoryError with the sizes; clears the runtime's error state.  Returns -1. */
int gs_cuda_raise(int code, const char *call, size_t bytes);

/* ValueError unless ptr is device (or managed) memory of gpuscan's device. */
int gs_cuda_check_pointer(const void *ptr);

/* Make gpuscan's stream wait for the work already enqueued on a foreign stream handle (CAI
 * "stream": 2 is the per-thread default stream; 1, the legacy default stream, needs nothing). */
int gs_cuda_wait_foreign(uintptr_t stream);

/* Make a foreign stream wait for the work already enqueued on gpuscan's stream. */
int gs_cuda_signal_foreign(uintptr_t stream);

/* Wait for everything enqueued on gpuscan's stream (GIL released inside). */
int gs_cuda_sync(void);

/* Device memory from the stream-ordered pool: *ptr (NULL for 0 bytes), or -1 with the failure
 * recorded in *f.  No GIL needed.  Freeing NULL does nothing and never fails loudly. */
int gs_cuda_alloc(void **ptr, size_t bytes, gs_fail *f);
void gs_cuda_free(void *ptr);

/* ---- transfer.c: the one place data moves between host and device ---------------------- */

/* dst = src for two views of the same shape, one a C-contiguous view of device memory, the
 * other a host view of any strides, byte order and dtype (converted on the host as NumPy's
 * unsafe casting does): through the pipeline (cuda/pipeline.h), chunk by chunk, overlapped.
 * Returns when the copy is done; raises on failure (MemoryError with the sizes, Ctrl-C). */
int gs_xfer_copy(const gs_view *src, const gs_view *dst);

/* dst = src for two views of device memory (any strides, converting dtypes): the copy kernel,
 * enqueued.  Raises on failure. */
int gs_xfer_device_copy(const gs_view *src, const gs_view *dst);

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
 * unused, after the stream's work; their sizes in *device and *host.  Raises on failure. */
int gs_cuda_free_cached(size_t *device, size_t *host);

/* The page-locked result cache's bytes in use by results and cached (device_info()). */
void gs_cuda_pinned_counts(size_t *in_use, size_t *cached);

#endif /* GS_CUDA_H */
