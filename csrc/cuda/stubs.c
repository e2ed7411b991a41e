/*
 * cuda/stubs.c - the CUDA glue of a build without CUDA: the same functions (cuda/cuda.h) and
 * the same table (ops/ops.h), each saying that gpuscan was built without CUDA.
 *
 * Level: backend (CUDA), host side; a build without CUDA only.  Nothing reaches these but a
 * forced backend: gs_cuda_init fails, so the backend is the CPU one and no device operand is
 * ever made (binding/operand.c asks gs_require_cuda first).  They exist so that binding/ and
 * ops/ compile the same way in both builds, with no #ifdef.
 */
#ifndef GS_HAVE_CUDA

#include "cuda/cuda.h"

#include <errno.h>

#define GS_NO_CUDA "gpuscan was built without CUDA"

static int no_cuda(void)
{
    PyErr_SetString(PyExc_RuntimeError, GS_NO_CUDA);
    return -1;
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

int gs_cuda_device_info(PyObject *info)
{
    (void)info;
    return no_cuda();
}

int gs_cuda_free_cached(size_t *device, size_t *host)
{
    *device = *host = 0;
    return 0;
}

void gs_cuda_pinned_counts(size_t *in_use, size_t *cached)
{
    *in_use = *cached = 0;
}

int gs_cuda_raise(int code, const char *call, size_t bytes)
{
    (void)bytes;
    PyErr_Format(PyExc_RuntimeError, "%s: %s (error %d)", call != NULL ? call : "CUDA", GS_NO_CUDA,
                 code);
    return -1;
}

int gs_cuda_check_pointer(const void *ptr)
{
    (void)ptr;
    return no_cuda();
}

int gs_cuda_wait_foreign(uintptr_t stream)
{
    (void)stream;
    return no_cuda();
}

int gs_cuda_signal_foreign(uintptr_t stream)
{
    (void)stream;
    return no_cuda();
}

int gs_cuda_sync(void)
{
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

int gs_xfer_copy(const gs_view *src, const gs_view *dst)
{
    (void)src, (void)dst;
    return no_cuda();
}

int gs_xfer_device_copy(const gs_view *src, const gs_view *dst)
{
    (void)src, (void)dst;
    return no_cuda();
}

/* Every entry of the table fails the same way. */
static int no_cuda_entry(gs_fail *f)
{
    return gs_fail_set(f, 'e', ENODEV, "the CUDA backend (" GS_NO_CUDA ")", 0);
}

static int stub_scan(const gs_scan_desc *d, gs_fail *f)
{
    (void)d;
    return no_cuda_entry(f);
}

static int stub_reduce(const gs_reduce_desc *d, gs_fail *f)
{
    (void)d;
    return no_cuda_entry(f);
}

static int stub_split_count(const gs_split_desc *d, void **state, int64_t *total, gs_fail *f)
{
    (void)d, (void)total;
    *state = NULL;
    return no_cuda_entry(f);
}

static int stub_split_scatter(const gs_split_desc *d, void *state, int64_t *total, gs_fail *f)
{
    (void)d, (void)state, (void)total;
    return no_cuda_entry(f);
}

static void stub_split_end(void *state)
{
    (void)state;
}

static int stub_hist(const gs_hist_desc *d, gs_fail *f)
{
    (void)d;
    return no_cuda_entry(f);
}

static int stub_step(const gs_step_desc *d, gs_fail *f)
{
    (void)d;
    return no_cuda_entry(f);
}

static int stub_segreduce(const gs_segreduce_desc *d, gs_fail *f)
{
    (void)d;
    return no_cuda_entry(f);
}

static int stub_heads_count(const gs_split_desc *d, void **state, int64_t *positions,
                            int64_t room, int64_t *count, int *placed, gs_fail *f)
{
    (void)d, (void)positions, (void)room, (void)count, (void)placed;
    *state = NULL;
    return no_cuda_entry(f);
}

static int stub_heads(const gs_split_desc *d, void *state, int64_t *positions, gs_fail *f)
{
    (void)d, (void)state, (void)positions;
    return no_cuda_entry(f);
}

static int stub_index_check(const int64_t *idx, int64_t m, int64_t n, gs_index_answer *a,
                            gs_fail *f)
{
    (void)idx, (void)m, (void)n, (void)a;
    return no_cuda_entry(f);
}

static int stub_index_wait(gs_index_answer *a, gs_fail *f)
{
    (void)a;
    return no_cuda_entry(f);
}

static int stub_linrec(const gs_linrec_desc *d, gs_fail *f)
{
    (void)d;
    return no_cuda_entry(f);
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
};

#endif /* !GS_HAVE_CUDA */
