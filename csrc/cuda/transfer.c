/*
 * cuda/transfer.c - the one place data moves between host and device memory (through the
 * pipeline; a few bytes to the host through a reply), and the device's strided copies.
 * Level: backend (CUDA), host side; a build with CUDA only (stubs.c stands in otherwise).
 * core/move.c's gs_move routes every move of an operand or a result through here when a side
 * is device memory; to_device() and DeviceArray.get() come through gs_move too.  A host side of
 * any strides, byte order or dtype is packed into (or unpacked from) the pipeline's pinned
 * staging chunk by chunk by the pool's threads, converted on the way, while the copy engines
 * move the chunks before and after it: never a whole contiguous host copy, and a fresh NumPy
 * result's pages are populated ahead of its unpack (pipeline.c).
 */
#ifdef GS_HAVE_CUDA

#include "cuda/pipeline.h"

/* A few bytes from the device into a host view laid out as the device holds them
 * (gs_view_ready), through a reply (cuda/reply.c) rather than the pipeline: bincount's largest
 * key, a min/max pair, a 0-d result's get(). */
static int fetch_small(const gs_view *dev, const gs_view *host, size_t bytes, gs_fail *f)
{
    gs_reply *r = NULL;
    const void *got;

    GS_CUDA_TRY(f, gs_cuda_enter());
    if (gs_reply_take(&r, f) == 0 && gs_reply_fetch(r, dev->ptr, bytes, f) == 0 &&
        gs_reply_wait(r, &got, f) == 0)
        memcpy(host->ptr, got, bytes);
done:
    gs_reply_give(r);
    return f->kind ? -1 : 0;
}

int gs_xfer_copy(const gs_view *src, const gs_view *dst, gs_fail *f)
{
    const int to_device = dst->mem == GS_MEM_DEVICE;
    const gs_view *dev = to_device ? dst : src, *host = to_device ? src : dst;
    const size_t bytes = (size_t)gs_view_size(src) * gs_dtype_size(dev->dtype);
    gs_pipe p;

    if (!to_device && bytes > 0 && bytes <= GS_REPLY_BYTES &&
        gs_view_ready(host, GS_MEM_HOST, dev->dtype))
        return fetch_small(dev, host, bytes, f);

    memset(&p, 0, sizeof(p));
    p.n = gs_view_size(src);
    p.chunk_align = 1;
    p.dev = (char *)dev->ptr; /* the chunks straight into or out of the device array */
    if (to_device) {
        p.nin = 1;
        p.in[0].view = host;
        p.in[0].dtype = dev->dtype;
    } else {
        p.nout = 1;
        p.out[0].view = host;
        p.out[0].dtype = dev->dtype;
    }
    return gs_pipe_run(&p, f);
}

int gs_xfer_device_copy(const gs_view *src, const gs_view *dst, gs_fail *f)
{
    const int64_t n = gs_view_size(src);
    gs_copy_desc d;

    if (n == 0)
        return 0;
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (src->dtype == dst->dtype && gs_view_is_c_contig(src) && gs_view_is_c_contig(dst)) {
        GS_CUDA_TRY(f, cudaMemcpyAsync(dst->ptr, src->ptr, (size_t)n * gs_dtype_size(src->dtype),
                                       cudaMemcpyDeviceToDevice, gs_cuda_stream));
        goto done;
    }
    memset(&d, 0, sizeof(d));
    d.src = src->ptr;
    d.dst = dst->ptr;
    d.src_type = src->dtype;
    d.dst_type = dst->dtype;
    /* A 0-d array is one element: the copy sees one dimension of length 1. */
    d.ndim = src->ndim > 0 ? src->ndim : 1;
    d.shape[0] = 1;
    for (int i = 0; i < src->ndim; i++) {
        d.shape[i] = src->shape[i];
        d.src_strides[i] = src->strides[i];
        d.dst_strides[i] = dst->strides[i];
    }
    GS_CUDA_TRY(f, gs_launch_copy(&d, gs_cuda_stream));
done:
    return f->kind ? -1 : 0;
}

#endif /* GS_HAVE_CUDA */
