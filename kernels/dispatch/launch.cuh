/*
 * dispatch/launch.cuh - what every launcher shares: the one check after a launch, the size of
 * a resident (persistent or grid-stride) grid, and a launch as a programmatic dependent.
 * Level: dispatch (host code of kernels/dispatch/).  As CUB's launch idiom: the launch's own
 * error first (cudaGetLastError: a bad configuration), then, in the opt-in debug mode
 * (GPUSCAN_DEBUG_SYNC=1, set by the host at initialisation), a synchronization so that an
 * error of the kernel itself is reported by the call that launched it.
 */
#ifndef GS_LAUNCH_CUH
#define GS_LAUNCH_CUH

#include <pthread.h>
#include <string.h>

#include "dispatch/tuning.h"
#include "gpuscan/launch.h"
#include "thread/load_store.cuh"

/* The check after every launch on `stream`. */
static inline cudaError_t gs_launch_check(cudaStream_t stream)
{
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && gs_launch_debug_sync)
        err = cudaStreamSynchronize(stream);
    return err;
}

/* The launch memo: an int per (device, kernel, key), computed once (a runtime query costs
 * microseconds, a launch's own budget).  Launches come from any thread (the GIL is released
 * around device work): the table is read and written under one lock, and a value is computed
 * outside it, so two threads may both compute one (the same value) and neither waits on the
 * other's query.  Direct-mapped: an entry whose slot another takes is computed again when next
 * asked.  One table per translation unit. */
#define GS_MEMO_SLOTS 256
/* The keys of a kernel's figures (a histogram's occupancy is keyed by its shared memory: >= 0). */
#define GS_MEMO_RESIDENT (-1LL) /* gs_resident_blocks */
#define GS_MEMO_PDL (-2LL)      /* gs_pdl_allowed */
#define GS_MEMO_OPTIN (-3LL)    /* the kernel opted into its shared-memory budget */
typedef struct gs_memo_entry {
    const void *kernel; /* NULL: empty */
    long long key;
    int device, value;
} gs_memo_entry;
static struct {
    pthread_mutex_t lock;
    gs_memo_entry entry[GS_MEMO_SLOTS];
} gs_memo = { PTHREAD_MUTEX_INITIALIZER };

static gs_memo_entry *gs_memo_slot(int device, const void *kernel, long long key)
{
    /* Every part mixed in before the multiply, whose top bits pick the slot. */
    const unsigned long long x = (uintptr_t)kernel ^ (unsigned long long)key * 0x100000001b3ull ^
                                 (unsigned long long)device << 56;
    return &gs_memo.entry[((x * 0x9e3779b97f4a7c15ull) >> 56) % GS_MEMO_SLOTS];
}

/* 1 with *value when the value of (device, kernel, key) is known, else 0. */
static int gs_memo_get(int device, const void *kernel, long long key, int *value)
{
    pthread_mutex_lock(&gs_memo.lock);
    const gs_memo_entry *e = gs_memo_slot(device, kernel, key);
    const int found = e->kernel == kernel && e->key == key && e->device == device;
    if (found)
        *value = e->value;
    pthread_mutex_unlock(&gs_memo.lock);
    return found;
}

static void gs_memo_put(int device, const void *kernel, long long key, int value)
{
    pthread_mutex_lock(&gs_memo.lock);
    gs_memo_entry *e = gs_memo_slot(device, kernel, key);
    e->kernel = kernel;
    e->key = key;
    e->device = device;
    e->value = value;
    pthread_mutex_unlock(&gs_memo.lock);
}

/* Blocks of `kernel` (launched with `dynamic_smem` bytes of dynamic shared memory, always the
 * same for one kernel) that fit on the current device at once, computed once per kernel and
 * device. Shared memory past 48 KiB needs an opt-in, set here once per kernel. (A wrong count
 * would only size a grid: every driver takes its tiles or chunks dynamically.) */
static cudaError_t gs_resident_blocks(const void *kernel, size_t dynamic_smem, int *blocks)
{
    int device, sms, per_sm;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess || gs_memo_get(device, kernel, GS_MEMO_RESIDENT, blocks))
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
    gs_memo_put(device, kernel, GS_MEMO_RESIDENT, *blocks);
    return cudaSuccess;
}

/* Whether `kernel` may be launched as a programmatic dependent on `device`: compute capability
 * 9.0 or more, and the kernel's code from PTX of 9.0 or later, so that gs_grid_wait() was
 * compiled into it (a compute_80 build run on an H100 lacks it). Once per kernel and device. */
static cudaError_t gs_pdl_allowed(const void *kernel, int device, int *ok)
{
    cudaFuncAttributes fa;
    int major = 0;
    cudaError_t err;

    if (gs_memo_get(device, kernel, GS_MEMO_PDL, ok))
        return cudaSuccess;
    if ((err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) !=
            cudaSuccess ||
        (err = cudaFuncGetAttributes(&fa, kernel)) != cudaSuccess)
        return err;
    *ok = major >= 9 && fa.ptxVersion >= 90;
    gs_memo_put(device, kernel, GS_MEMO_PDL, *ok);
    return cudaSuccess;
}

/* A launch of `kernel` (one parameter at `params`, GS_NT threads a block, no dynamic shared
 * memory) on `blocks` blocks as the programmatic dependent of the kernel launched just before it
 * on `stream`, where gs_pdl_allowed (it waits for that one in gs_grid_wait(),
 * thread/load_store.cuh); elsewhere an ordinary launch. Ends with the check. */
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

/* The one launch of a single-pass primitive over `tiles` tiles (GS_NT threads a block): `one`, a
 * block per tile, or, once the tiles number GS_AHEAD_MIN_WAVES times the resident blocks of the
 * lookahead kernel `ahead`, those blocks of `ahead` with its `ahead_smem` bytes of dynamic shared
 * memory. `params` points to the kernels' one parameter. Ends with the check. */
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
