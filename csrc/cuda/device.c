/*
 * cuda/device.c - the device as the module's services see it: device_info()'s figures and
 * free_cached_memory() over the runtime's pool (runtime.c) and the page-locked result cache
 * (pinned.c).
 * Level: backend (CUDA), host side; a build with CUDA only (stubs.c stands in otherwise).
 */
#ifdef GS_HAVE_CUDA

#include "cuda/cuda_rt.h"

#include <stdio.h>

int gs_cuda_device_props(gs_cuda_props *p, gs_fail *f)
{
    struct cudaDeviceProp prop;

    memset(p, 0, sizeof(*p));
    GS_CUDA_TRY(f, cudaGetDeviceProperties(&prop, gs_cuda_device));
    GS_CUDA_TRY(f, cudaDriverGetVersion(&p->driver_version));
    GS_CUDA_TRY(f, cudaRuntimeGetVersion(&p->runtime_version));
    snprintf(p->name, sizeof(p->name), "%s", prop.name);
    p->device = gs_cuda_device;
    p->major = prop.major;
    p->minor = prop.minor;
    p->multiprocessors = prop.multiProcessorCount;
    p->memory_bytes = prop.totalGlobalMem;
    gs_pinned_counts(&p->pinned_in_use, &p->pinned_cached);
done:
    return f->kind ? -1 : 0;
}

int gs_cuda_free_cached(size_t *device, size_t *host, gs_fail *f)
{
    *device = *host = 0;
    if (gs_cuda_trim_pool(device, f) < 0) /* after the stream's work: the trim waits for it */
        return -1;
    *host = gs_pinned_release_cached();
    return 0;
}

#endif /* GS_HAVE_CUDA */
