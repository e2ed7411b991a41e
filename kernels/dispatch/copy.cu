/*
 * dispatch/copy.cu - a strided element-wise copy with a dtype conversion, for device inputs that
 * are not C-contiguous or not of the accumulation dtype, and for results written to strided `out`
 * arrays or moved back from an axis-last layout.
 *
 * Level: device-wide (kernel + launcher).  Not a hot path: one generic kernel whose dtypes are
 * run-time switches, converting as the host's pack does (gpuscan/value.h).
 * Also the copy of a reply's few words to the host (gs_launch_reply).
 */
#include "dispatch/launch.cuh"
#include "gpuscan/value.h"

/* Grid-stride loop over all elements; the byte offsets of element `idx` in source and
 * destination come from its multi-index, last dimension fastest (C order). */
__global__ void __launch_bounds__(GS_NT) gs_copy_kernel(gs_copy_desc d, int64_t n)
{
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n;
         idx += (int64_t)gridDim.x * blockDim.x) {
        int64_t rest = idx, so = 0, dof = 0;
        for (int k = d.ndim - 1; k >= 0; --k) {
            int64_t i = rest % d.shape[k];
            rest /= d.shape[k];
            so += i * d.src_strides[k];
            dof += i * d.dst_strides[k];
        }
        gs_value v = gs_value_load(d.src_type, (const char *)d.src + so);
        gs_value_store(d.dst_type, (char *)d.dst + dof, v);
    }
}

/* Grid-stride loop over the values, each moved as `w` words of type T (the widest unsigned
 * integer that divides the value's size: one word for a dtype). */
#define GS_X_SELECT(T)                                                                \
    __global__ void __launch_bounds__(GS_NT) gs_select_##T(gs_select_desc d, int w)   \
    {                                                                                 \
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < d.n;     \
             i += (int64_t)gridDim.x * blockDim.x) {                                  \
            const T *src = d.mask[i] ? (const T *)d.in + i * w : (const T *)d.fill;   \
            for (int j = 0; j < w; ++j)                                               \
                ((T *)d.out)[i * w + j] = src[j];                                     \
        }                                                                             \
    }
GS_X_SELECT(uint8_t)
GS_X_SELECT(uint16_t)
GS_X_SELECT(uint32_t)
GS_X_SELECT(uint64_t)
#undef GS_X_SELECT

/* Blocks for an elementwise grid over n values: enough to fill the device a few times over;
 * the grid-stride loops cover the rest. */
static cudaError_t gs_elementwise_blocks(int64_t n, unsigned *blocks)
{
    int device, sms;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t want = (n + GS_NT - 1) / GS_NT;
    *blocks = (unsigned)(want < 8 * (int64_t)sms ? want : 8 * (int64_t)sms);
    return err;
}

extern "C" cudaError_t gs_launch_select(const gs_select_desc *d, cudaStream_t stream)
{
    unsigned blocks;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    if ((err = gs_elementwise_blocks(d->n, &blocks)) != cudaSuccess)
        return err;
    /* device buffers are aligned for any word: the size alone picks it */
    if (d->size % 8 == 0)
        gs_select_uint64_t<<<blocks, GS_NT, 0, stream>>>(*d, (int)(d->size / 8));
    else if (d->size % 4 == 0)
        gs_select_uint32_t<<<blocks, GS_NT, 0, stream>>>(*d, (int)(d->size / 4));
    else if (d->size % 2 == 0)
        gs_select_uint16_t<<<blocks, GS_NT, 0, stream>>>(*d, (int)(d->size / 2));
    else
        gs_select_uint8_t<<<blocks, GS_NT, 0, stream>>>(*d, (int)d->size);
    return gs_launch_check(stream);
}

extern "C" cudaError_t gs_launch_copy(const gs_copy_desc *d, cudaStream_t stream)
{
    int64_t n = 1;
    unsigned blocks;
    cudaError_t err;

    if (d->ndim < 0 || d->ndim > GS_MAX_NDIM)
        return cudaErrorInvalidValue;
    for (int k = 0; k < d->ndim; ++k)
        n *= d->shape[k];
    if (n == 0)
        return cudaSuccess;
    if ((err = gs_elementwise_blocks(n, &blocks)) != cudaSuccess)
        return err;
    gs_copy_kernel<<<blocks, GS_NT, 0, stream>>>(*d, n);
    return gs_launch_check(stream);
}

/* A reply's bytes (cuda/reply.c) from device memory into page-locked host memory the device
 * maps, a byte a lane (a reply is at most a few dozen bytes, so any size and alignment will
 * do).  A kernel, not cudaMemcpyAsync: a copy engine's hop on the stream cost 6-9 us each way
 * (H100, 2026-11-25: the kernel before the copy to the copy, and the copy to the next kernel),
 * the time the host could have had the answer. */
__global__ void gs_reply_kernel(const unsigned char *src, unsigned char *dst, int bytes)
{
    for (int i = (int)threadIdx.x; i < bytes; i += GS_WARP)
        dst[i] = src[i];
}

extern "C" cudaError_t gs_launch_reply(void *dst, const void *src, size_t bytes,
                                       cudaStream_t stream)
{
    if (bytes > 8 * GS_WARP)
        return cudaErrorInvalidValue;
    if (bytes == 0)
        return cudaSuccess;
    gs_reply_kernel<<<1, GS_WARP, 0, stream>>>((const unsigned char *)src, (unsigned char *)dst,
                                               (int)bytes);
    return gs_launch_check(stream);
}
