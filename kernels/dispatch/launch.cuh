/*
 * dispatch/launch.cuh - what every launcher shares: the one check after a launch, the size of
 * a resident (persistent or grid-stride) grid, and a launch as a programmatic dependent.
 *
 * Level: dispatch (host code of kernels/dispatch/).  As CUB's launch idiom: the launch's own
 * error first (cudaGetLastError: a bad configuration), then, in the opt-in debug mode
 * (GPUSCAN_DEBUG_SYNC=1, set by the host at initialisation), a synchronization so that an
 * error of the kernel itself is reported by the call that launched it.
 */
#ifndef GS_LAUNCH_CUH
#define GS_LAUNCH_CUH

#include <string.h>

#include "dispatch/tuning.h"
#include "thread/load_store.cuh"

/* The check after every launch on `stream`. */
static inline cudaError_t gs_launch_check(cudaStream_t stream)
{
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && gs_launch_debug_sync)
        err = cudaStreamSynchronize(stream);
    return err;
}

/*
 * Blocks of `kernel` (launched with `dynamic_smem` bytes of dynamic shared memory, always the
 * same for one kernel) that fit on the current device at once (a persistent or grid-stride
 * grid), computed once per kernel and device: the occupancy query costs microseconds, a
 * launch's own budget.  Shared memory past 48 KiB needs an opt-in, set here once per kernel.
 * Calls may race (the GIL is released around device work): a slot is cleared, then written
 * blocks first and kernel last, and a reader re-checks the kernel after reading the blocks, so
 * a racing reader queries again rather than take another kernel's count.  (Even a wrong count
 * would only size a grid: every driver takes its tiles or chunks dynamically.)
 */
#define GS_MAX_DEVICES 64
#define GS_RESIDENT_SLOTS 256
static cudaError_t gs_resident_blocks(const void *kernel, size_t dynamic_smem, int *blocks)
{
    static const void *cached_kernel[GS_MAX_DEVICES][GS_RESIDENT_SLOTS];
    static int cached_blocks[GS_MAX_DEVICES][GS_RESIDENT_SLOTS];
    int device, sms, per_sm;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess)
        return err;
    const unsigned slot = (unsigned)(((uintptr_t)kernel >> 4) % GS_RESIDENT_SLOTS);
    if (device < GS_MAX_DEVICES &&
        __atomic_load_n(&cached_kernel[device][slot], __ATOMIC_ACQUIRE) == kernel) {
        const int cached = __atomic_load_n(&cached_blocks[device][slot], __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&cached_kernel[device][slot], __ATOMIC_ACQUIRE) == kernel) {
            *blocks = cached;
            return cudaSuccess;
        }
    }
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess && dynamic_smem > 0)
        err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)dynamic_smem);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, GS_NT, dynamic_smem);
    if (err != cudaSuccess)
        return err;
    *blocks = sms * (per_sm > 0 ? per_sm : 1);
    if (device < GS_MAX_DEVICES) {
        __atomic_store_n(&cached_kernel[device][slot], (const void *)NULL, __ATOMIC_RELEASE);
        __atomic_store_n(&cached_blocks[device][slot], *blocks, __ATOMIC_RELEASE);
        __atomic_store_n(&cached_kernel[device][slot], kernel, __ATOMIC_RELEASE);
    }
    return cudaSuccess;
}

/*
 * A launch of `kernel` (one parameter at `params`, GS_NT threads a block, no dynamic shared
 * memory) on `blocks` blocks as the programmatic dependent of the kernel launched just before it
 * on `stream`: on devices of compute capability 9.0 and up it may start while that one's last
 * blocks run, and waits for it in gs_grid_wait() (thread/load_store.cuh); elsewhere an ordinary
 * launch in stream order, where gs_grid_wait() compiles to nothing.  The capability is read once
 * per device.  Ends with the check.
 */
static cudaError_t gs_launch_dependent(const void *kernel, int64_t blocks, void *params,
                                       cudaStream_t stream)
{
    static int cached_major[GS_MAX_DEVICES]; /* 0: not read yet */
    int device, major = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess)
        return err;
    if (device < GS_MAX_DEVICES)
        major = __atomic_load_n(&cached_major[device], __ATOMIC_ACQUIRE);
    if (major == 0) {
        err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        if (err != cudaSuccess)
            return err;
        if (device < GS_MAX_DEVICES)
            __atomic_store_n(&cached_major[device], major, __ATOMIC_RELEASE);
    }
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config;
    memset(&config, 0, sizeof config);
    config.gridDim = dim3((unsigned)blocks);
    config.blockDim = dim3(GS_NT);
    config.stream = stream;
    config.attrs = attr;
    config.numAttrs = major >= 9 ? 1 : 0;
    void *args[1] = { params };
    err = cudaLaunchKernelExC(&config, kernel, args);
    const cudaError_t check = gs_launch_check(stream); /* also clears a launch error */
    return err != cudaSuccess ? err : check;
}

/*
 * The one launch of a single-pass primitive over `tiles` tiles (GS_NT threads a block): `one`, a
 * block per tile, or, once the tiles number GS_AHEAD_MIN_WAVES times the blocks of the lookahead
 * kernel `ahead` resident on the device, those blocks of `ahead` with its `ahead_smem` bytes of
 * dynamic shared memory.  `params` points to the kernels' one parameter.  Ends with the check.
 */
static cudaError_t gs_launch_tiles(const void *one, const void *ahead, size_t ahead_smem,
                                   int64_t tiles, void *params, cudaStream_t stream)
{
    int resident;
    cudaError_t err = gs_resident_blocks(ahead, ahead_smem, &resident);
    if (err != cudaSuccess)
        return err;
    const int use_ahead = tiles >= (int64_t)GS_AHEAD_MIN_WAVES * resident;
    void *args[1] = { params };
    err = cudaLaunchKernel(use_ahead ? ahead : one, dim3((unsigned)(use_ahead ? resident : tiles)),
                           dim3(GS_NT), args, use_ahead ? ahead_smem : 0, stream);
    const cudaError_t check = gs_launch_check(stream); /* also clears a launch error */
    return err != cudaSuccess ? err : check;
}

#endif /* GS_LAUNCH_CUH */
