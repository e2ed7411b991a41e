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
 * An int per kernel and device, computed once (a runtime query costs microseconds, a launch's
 * own budget).  Calls may race (the GIL is released around device work): a slot is cleared,
 * then written value first and kernel last, and a reader re-checks the kernel after reading
 * the value, so a racing reader queries again rather than take another kernel's value.
 */
#define GS_MAX_DEVICES 64
#define GS_KERNEL_SLOTS 256
typedef struct gs_kernel_memo {
    const void *kernel[GS_MAX_DEVICES][GS_KERNEL_SLOTS];
    int value[GS_MAX_DEVICES][GS_KERNEL_SLOTS];
} gs_kernel_memo;

static inline unsigned gs_memo_slot(const void *kernel)
{
    return (unsigned)(((uintptr_t)kernel >> 4) % GS_KERNEL_SLOTS);
}

/* 1 with *value when `kernel`'s value on `device` is known, else 0. */
static int gs_memo_get(gs_kernel_memo *m, int device, const void *kernel, int *value)
{
    const unsigned slot = gs_memo_slot(kernel);
    if (device >= GS_MAX_DEVICES ||
        __atomic_load_n(&m->kernel[device][slot], __ATOMIC_ACQUIRE) != kernel)
        return 0;
    const int v = __atomic_load_n(&m->value[device][slot], __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&m->kernel[device][slot], __ATOMIC_ACQUIRE) != kernel)
        return 0;
    *value = v;
    return 1;
}

static void gs_memo_put(gs_kernel_memo *m, int device, const void *kernel, int value)
{
    const unsigned slot = gs_memo_slot(kernel);
    if (device >= GS_MAX_DEVICES)
        return;
    __atomic_store_n(&m->kernel[device][slot], (const void *)NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&m->value[device][slot], value, __ATOMIC_RELEASE);
    __atomic_store_n(&m->kernel[device][slot], kernel, __ATOMIC_RELEASE);
}

/*
 * Blocks of `kernel` (launched with `dynamic_smem` bytes of dynamic shared memory, always the
 * same for one kernel) that fit on the current device at once (a persistent or grid-stride
 * grid), computed once per kernel and device.  Shared memory past 48 KiB needs an opt-in, set
 * here once per kernel.  (Even a wrong count would only size a grid: every driver takes its
 * tiles or chunks dynamically.)
 */
static cudaError_t gs_resident_blocks(const void *kernel, size_t dynamic_smem, int *blocks)
{
    static gs_kernel_memo memo;
    int device, sms, per_sm;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess || gs_memo_get(&memo, device, kernel, blocks))
        return err;
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess && dynamic_smem > 0)
        err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)dynamic_smem);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, GS_NT, dynamic_smem);
    if (err != cudaSuccess)
        return err;
    *blocks = sms * (per_sm > 0 ? per_sm : 1);
    gs_memo_put(&memo, device, kernel, *blocks);
    return cudaSuccess;
}

/*
 * Whether `kernel` may be launched as a programmatic dependent on `device`: the device has
 * compute capability 9.0 or more, and the kernel's code comes from PTX of 9.0 or later, so that
 * gs_grid_wait() was compiled into it (a build for compute_80 alone runs on an H100 from PTX
 * without it, and would read what the kernel before it has not finished writing).  Computed
 * once per kernel and device.
 */
static cudaError_t gs_pdl_allowed(const void *kernel, int device, int *ok)
{
    static gs_kernel_memo memo;
    cudaFuncAttributes fa;
    int major = 0;
    cudaError_t err;

    if (gs_memo_get(&memo, device, kernel, ok))
        return cudaSuccess;
    if ((err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) !=
            cudaSuccess ||
        (err = cudaFuncGetAttributes(&fa, kernel)) != cudaSuccess)
        return err;
    *ok = major >= 9 && fa.ptxVersion >= 90;
    gs_memo_put(&memo, device, kernel, *ok);
    return cudaSuccess;
}

/*
 * A launch of `kernel` (one parameter at `params`, GS_NT threads a block, no dynamic shared
 * memory) on `blocks` blocks as the programmatic dependent of the kernel launched just before it
 * on `stream`, where gs_pdl_allowed: it may start while that one's last blocks run, and waits for
 * it in gs_grid_wait() (thread/load_store.cuh); elsewhere an ordinary launch in stream order,
 * where gs_grid_wait() compiles to nothing.  Ends with the check.
 */
static cudaError_t gs_launch_dependent(const void *kernel, int64_t blocks, void *params,
                                       cudaStream_t stream)
{
    int device, pdl = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess)
        err = gs_pdl_allowed(kernel, device, &pdl);
    if (err != cudaSuccess)
        return err;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config;
    memset(&config, 0, sizeof config);
    config.gridDim = dim3((unsigned)blocks);
    config.blockDim = dim3(GS_NT);
    config.stream = stream;
    config.attrs = attr;
    config.numAttrs = pdl ? 1 : 0;
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
