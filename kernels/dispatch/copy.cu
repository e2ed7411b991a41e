/*
 * dispatch/copy.cu - a strided element-wise copy with a dtype conversion, for device inputs that
 * are not C-contiguous or not of the accumulation dtype, and for results written to strided `out`
 * arrays or moved back from an axis-last layout.
 *
 * Level: device-wide (kernel + launcher).  Not a hot path: one generic kernel whose dtypes are
 * run-time switches.  A value passes through the widest exact type of its kind (int64, uint64
 * or double), so every conversion rounds at most once, as a C cast from the source type would.
 * Also the copy of a reply's few words to the host (gs_launch_reply).
 */
#include "dispatch/launch.cuh"

/* A value of any dtype, exactly (a bool as 0 or 1, whatever its byte: NumPy's reading). */
typedef struct gs_value {
    char kind; /* 'i', 'u' (bool too) or 'f' */
    int64_t i;
    uint64_t u;
    double f;
} gs_value;

static __device__ __forceinline__ gs_value gs_value_load(gs_dtype t, const char *p)
{
    gs_value v;
    v.kind = gs_dtype_kind(t) == 'b' ? 'u' : gs_dtype_kind(t);
    v.i = 0;
    v.u = 0;
    v.f = 0.0;
    switch (t) {
#define GS_X_LOAD(code, ctype, sfx, kind_, npy)  \
    case code:                                   \
        if (kind_ == 'f')                        \
            v.f = (double)*(const ctype *)p;     \
        else if (kind_ == 'i')                   \
            v.i = (int64_t) * (const ctype *)p;  \
        else if (kind_ == 'b')                   \
            v.u = *(const ctype *)p != 0;        \
        else                                     \
            v.u = (uint64_t) * (const ctype *)p; \
        break;
        GS_DTYPES(GS_X_LOAD)
#undef GS_X_LOAD
    default:
        break;
    }
    return v;
}

static __device__ __forceinline__ void gs_value_store(gs_dtype t, char *p, gs_value v)
{
    if (t == GS_BOOL) { /* NumPy: any nonzero value (NaN too) is True */
        *(uint8_t *)p = v.kind == 'f' ? v.f != 0.0 : v.kind == 'i' ? v.i != 0 : v.u != 0;
        return;
    }
    switch (t) {
#define GS_X_STORE(code, ctype, sfx, kind_, npy)                                            \
    case code:                                                                              \
        *(ctype *)p = v.kind == 'f' ? (ctype)v.f : v.kind == 'i' ? (ctype)v.i : (ctype)v.u; \
        break;
        GS_DTYPES(GS_X_STORE)
#undef GS_X_STORE
    default:
        break;
    }
}

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

extern "C" cudaError_t gs_launch_copy(const gs_copy_desc *d, cudaStream_t stream)
{
    int64_t n = 1;
    int device, sms;
    cudaError_t err;

    if (d->ndim < 0 || d->ndim > GS_MAX_NDIM)
        return cudaErrorInvalidValue;
    for (int k = 0; k < d->ndim; ++k)
        n *= d->shape[k];
    if (n == 0)
        return cudaSuccess;
    err = cudaGetDevice(&device);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess)
        return err;
    /* Enough blocks to fill the machine a few times over; the loop covers the rest. */
    int64_t blocks = (n + GS_NT - 1) / GS_NT;
    if (blocks > 8 * (int64_t)sms)
        blocks = 8 * (int64_t)sms;
    gs_copy_kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(*d, n);
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
