/*
 * cuda/stubs.c - the CUDA glue of a build without CUDA: the same functions (cuda/cuda.h) and
 * the same table (gpuscan/backend.h), each saying that gpuscan was built without CUDA.
 * Level: backend (CUDA), host side; a build without CUDA only.  Nothing reaches these but a
 * forced backend: gs_cuda_init fails, so the backend is the CPU one and no device operand is
 * ever made (binding/operand.c asks gs_require_cuda first).  They exist so that the layers
 * above compile the same way in both builds, with no #ifdef.
 */
#ifndef GS_HAVE_CUDA

#include "cuda/cuda.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define GS_NO_CUDA "gpuscan was built without CUDA"

/* Every function and entry fails the same way. */
static int no_cuda(gs_fail *f)
{
    return gs_fail_set(f, 'e', ENODEV, "the CUDA backend (" GS_NO_CUDA ")", 0);
}

int gs_cuda_init(char *why, size_t why_len)
{
    snprintf(why, why_len, "%s", GS_NO_CUDA);
    return -1;
}

int gs_cuda_device_ordinal(void)
{
    return -1;
}

uintptr_t gs_cuda_stream_handle(void)
{
    return 0;
}

int gs_cuda_device_props(gs_cuda_props *p, gs_fail *f)
{
    memset(p, 0, sizeof(*p));
    return no_cuda(f);
}

int gs_cuda_free_cached(size_t *device, size_t *host, gs_fail *f)
{
    (void)f;
    *device = *host = 0;
    return 0;
}

void gs_cuda_describe(int code, gs_cuda_error *e)
{
    (void)code;
    memset(e, 0, sizeof(*e));
    e->text = GS_NO_CUDA;
    e->device = -1;
}

int gs_cuda_check_pointer(const void *ptr, char *why, size_t why_len)
{
    (void)ptr;
    snprintf(why, why_len, "%s", GS_NO_CUDA);
    return -1;
}

int gs_cuda_wait_foreign(uintptr_t stream, gs_fail *f)
{
    (void)stream;
    return no_cuda(f);
}

int gs_cuda_signal_foreign(uintptr_t stream, gs_fail *f)
{
    (void)stream;
    return no_cuda(f);
}

int gs_cuda_sync(gs_fail *f)
{
    (void)f;
    return 0; /* nothing was ever enqueued */
}

int gs_cuda_alloc(void **ptr, size_t bytes, gs_fail *f)
{
    *ptr = NULL;
    return gs_fail_set(f, 'e', ENODEV, "gs_cuda_alloc (" GS_NO_CUDA ")", bytes);
}

void gs_cuda_free(void *ptr)
{
    (void)ptr;
}

int gs_xfer_copy(const gs_view *src, const gs_view *dst, gs_fail *f)
{
    (void)src, (void)dst;
    return no_cuda(f);
}

int gs_xfer_device_copy(const gs_view *src, const gs_view *dst, gs_fail *f)
{
    (void)src, (void)dst;
    return no_cuda(f);
}

/* A table entry that fails as every function here does (its parameters unused). */
#define GS_STUB(name, ...)                   \
    static int name(__VA_ARGS__, gs_fail *f) \
    {                                        \
        return no_cuda(f);                   \
    }
GS_STUB(stub_scan, const gs_scan_desc *d)
GS_STUB(stub_reduce, const gs_reduce_desc *d)
GS_STUB(stub_split_scatter, const gs_split_desc *d, void *state, int64_t *total)
GS_STUB(stub_hist, const gs_hist_desc *d)
GS_STUB(stub_step, const gs_step_desc *d)
GS_STUB(stub_segreduce, const gs_segreduce_desc *d)
GS_STUB(stub_heads, const gs_split_desc *d, void *state, int64_t *positions)
GS_STUB(stub_index_check, const int64_t *idx, int64_t m, int64_t n, gs_index_answer *a)
GS_STUB(stub_index_wait, gs_index_answer *a)
GS_STUB(stub_linrec, const gs_linrec_desc *d)
GS_STUB(stub_select, const gs_select_desc *d)
GS_STUB(stub_sort, const gs_sort_desc *d)
#undef GS_STUB

/* The two-phase entries leave no state for their end. */
static int stub_split_count(const gs_split_desc *d, void **state, int64_t *total, gs_fail *f)
{
    (void)d, (void)total;
    *state = NULL;
    return no_cuda(f);
}

static int stub_heads_count(const gs_split_desc *d, void **state, int64_t *positions, int64_t room,
                            int64_t *count, int *placed, gs_fail *f)
{
    (void)d, (void)positions, (void)room, (void)count, (void)placed;
    *state = NULL;
    return no_cuda(f);
}

static void stub_split_end(void *state)
{
    (void)state;
}

const gs_backend_ops gs_cuda_backend = {
    .name = "cuda",
    .mem = GS_MEM_DEVICE,
    .scan = stub_scan,
    .reduce = stub_reduce,
    .split_count = stub_split_count,
    .split_scatter = stub_split_scatter,
    .split_end = stub_split_end,
    .hist = stub_hist,
    .step = stub_step,
    .segreduce = stub_segreduce,
    .heads_count = stub_heads_count,
    .heads = stub_heads,
    .index_check = stub_index_check,
    .index_wait = stub_index_wait,
    .linrec = stub_linrec,
    .select = stub_select,
    .sort = stub_sort,
};

#endif /* !GS_HAVE_CUDA */
