/*
 * cuda/pipeline.c - the chunked, overlapped host<->device pipeline (cuda/pipeline.h).
 * Level: backend (CUDA), host side; a build with CUDA only.
 * Chunk k of n elements goes through one of GS_PIPE_RING slots: the pool's threads pack it
 * from the host arrays into the slot's pinned staging buffer; the host-to-device stream copies
 * it into the slot's device buffer; the compute stream (gpuscan's stream) runs the primitive on
 * it; the device-to-host stream copies its outputs into the slot's pinned output buffer; the
 * pool's threads unpack them into the host arrays.  Per slot, events order each step after the
 * one before it and after the previous chunk that used the slot:
 *   up[s]    recorded after the upload of the slot's chunk: the compute waits for it, and the
 *            host before packing the slot again;
 *   done[s]  after the compute: the download waits for it, and the next upload into the slot;
 *   down[s]  after the download: the host waits before unpacking, the next compute into the
 *            slot's output before writing it.
 * The host issues chunk k, then packs chunk k + 1 and unpacks chunk k - 2 in one parallel
 * section: the two copy engines, the kernels and the host's threads all work at once.  The
 * section waits only for what it touches (the upload that last read chunk k + 1's slot, the
 * download of chunk k - 2, long done), never for the transfers in flight: while it runs, the
 * upload of chunk k and the download of chunk k - 1 keep both copy engines busy.
 * An array the copy engines can reach as it is - C-contiguous, in the device's dtype and byte
 * order, in page-locked memory (a result from cuda/pinned.c's cache, or memory allocated or
 * registered with CUDA) - is "direct": its chunks are copied straight from or into it, with no
 * pack, no staging and no unpack.
 */
#ifdef GS_HAVE_CUDA

#define _GNU_SOURCE /* mmap's MAP_ANONYMOUS, madvise's huge pages */

#include "cuda/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpuscan/config.h"
#include "host/pack.h"
#include "host/pool.h"

/* Alignment of each array's part of a slot, and the slack it costs per slot. */
#define GS_PIPE_ALIGN 256
#define GS_PIPE_SLACK (GS_PIPE_MAX * GS_PIPE_ALIGN)
/* Bytes of one pack or unpack task: a chunk in many more tasks than threads, so that none waits
 * long for the last (H200 host, 16 threads, 16 MiB chunks: 1 GiB scan round trip 27.8 -> 22.7
 * ms against 1 MiB tasks), and enough to amortise a task's start. */
#define GS_PIPE_TASK_BYTES ((int64_t)256 << 10)
/* Bytes of one prefault task: a transparent huge page, so that one thread faults each. */
#define GS_PIPE_FAULT_BYTES ((uintptr_t)2 << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL and are left alone */
#endif

static pthread_mutex_t pipe_lock = PTHREAD_MUTEX_INITIALIZER;

/* The staging ring and the copy streams, made at first use (under pipe_lock). */
static struct {
    size_t slot;              /* bytes of one slot, each way */
    char *host_in, *host_out; /* pinned: GS_PIPE_RING slots each */
    cudaStream_t h2d, d2h;
    cudaEvent_t up[GS_PIPE_RING], done[GS_PIPE_RING], down[GS_PIPE_RING];
    cudaEvent_t fresh; /* gpuscan's stream after a run's device slots were allocated */
} ring;

int64_t gs_pipe_chunk(int64_t n, int64_t bytes_per_elem, int64_t align)
{
    int64_t per = (int64_t)gs_xfer_chunk_bytes() / (bytes_per_elem > 0 ? bytes_per_elem : 1);
    int64_t cmax = per / align * align, k;

    if (n <= 0)
        return 0;
    if (cmax < align)
        cmax = align;
    k = (n + cmax - 1) / cmax;
    return ((n + k - 1) / k + align - 1) / align * align;
}

/* The ring for slots of `slot` bytes: made, or remade when the chunk size changed.  Under
 * pipe_lock, without the GIL. */
static cudaError_t ring_ready(size_t slot)
{
    cudaError_t err = cudaSuccess;

    if (ring.h2d == NULL) {
        if ((err = cudaStreamCreateWithFlags(&ring.h2d, cudaStreamNonBlocking)) != cudaSuccess ||
            (err = cudaStreamCreateWithFlags(&ring.d2h, cudaStreamNonBlocking)) != cudaSuccess ||
            (err = cudaEventCreateWithFlags(&ring.fresh, cudaEventDisableTiming)) != cudaSuccess)
            return err;
        for (int s = 0; s < GS_PIPE_RING; s++)
            if ((err = cudaEventCreateWithFlags(&ring.up[s], cudaEventDisableTiming)) !=
                    cudaSuccess ||
                (err = cudaEventCreateWithFlags(&ring.done[s], cudaEventDisableTiming)) !=
                    cudaSuccess ||
                (err = cudaEventCreateWithFlags(&ring.down[s], cudaEventDisableTiming)) !=
                    cudaSuccess)
                return err;
    }
    if (ring.slot == slot)
        return cudaSuccess;
    if (ring.host_in != NULL)
        (void)cudaFreeHost(ring.host_in);
    if (ring.host_out != NULL)
        (void)cudaFreeHost(ring.host_out);
    ring.host_in = ring.host_out = NULL;
    ring.slot = 0;
    if ((err = cudaHostAlloc((void **)&ring.host_in, GS_PIPE_RING * slot, 0)) != cudaSuccess ||
        (err = cudaHostAlloc((void **)&ring.host_out, GS_PIPE_RING * slot, 0)) != cudaSuccess)
        return err;
    ring.slot = slot;
    return cudaSuccess;
}

/* Where array i of a chunk of `len` elements starts in a slot (each array 256-byte aligned). */
static size_t part_offset(const gs_pipe_array *a, int i, int64_t len)
{
    size_t off = 0;
    for (int j = 0; j < i; j++)
        off += ((size_t)len * gs_dtype_size(a[j].dtype) + GS_PIPE_ALIGN - 1) / GS_PIPE_ALIGN *
               GS_PIPE_ALIGN;
    return off;
}

static size_t parts_bytes(const gs_pipe_array *a, int count, int64_t len)
{
    return part_offset(a, count, len);
}

/* Bytes of one element of every array. */
static int64_t elem_bytes(const gs_pipe_array *a, int count)
{
    int64_t b = 0;
    for (int i = 0; i < count; i++)
        b += (int64_t)gs_dtype_size(a[i].dtype);
    return b;
}

/* ---- one run ------------------------------------------------------------------------------ */

typedef struct pipe_run {
    const gs_pipe *p;
    int64_t chunk, nchunks;
    char *dev_in, *dev_out; /* GS_PIPE_RING device slots each */
    size_t in_slot, out_slot;
    /* The parallel section: pack chunk `pk` (-1: none), deliver chunk `dk` (-1: none), fault
     * in the host pages chunk pk's outputs will be unpacked into (ftasks[i] tasks for output
     * i; 0 for one that is not contiguous or has output pieces). */
    int64_t pk, dk, ptasks, dtasks, ftasks[GS_PIPE_MAX], ftotal;
    int prefault;
    /* Direct arrays (see the file's header), and the bytes per element of the others. */
    int din[GS_PIPE_MAX], dout[GS_PIPE_MAX];
    int64_t in_staged, out_staged;
    gs_fail f;
} pipe_run;

/* Whether a host byte is page-locked memory that CUDA knows. */
static int page_locked(const void *at)
{
    struct cudaPointerAttributes attr;

    if (cudaPointerGetAttributes(&attr, at) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return attr.type == cudaMemoryTypeHost;
}

/* Whether the copy engines reach array a's view as it is. */
static int is_direct(const gs_pipe_array *a)
{
    const gs_view *v = a->view;
    const char *lo = v->ptr, *hi = lo + (size_t)gs_view_size(v) * gs_dtype_size(a->dtype);

    if (v->dtype != a->dtype || v->swapped || !gs_view_is_c_contig(v) || hi <= lo)
        return 0;
    return gs_pinned_holds(lo, hi) || (page_locked(lo) && page_locked(hi - 1));
}

/* Mark the direct arrays of a run, and count the bytes per element of the staged ones. */
static void find_direct(pipe_run *r)
{
    const gs_pipe *p = r->p;

    for (int i = 0; i < p->nin; i++) {
        r->din[i] = is_direct(&p->in[i]);
        r->in_staged += r->din[i] ? 0 : (int64_t)gs_dtype_size(p->in[i].dtype);
    }
    for (int i = 0; i < p->nout; i++) {
        r->dout[i] = is_direct(&p->out[i]);
        r->out_staged += r->dout[i] ? 0 : (int64_t)gs_dtype_size(p->out[i].dtype);
    }
}

/* Where element e of direct array a's view is in host memory. */
static char *direct_at(const gs_pipe_array *a, int64_t e)
{
    return (char *)a->view->ptr + (size_t)e * gs_dtype_size(a->dtype);
}

static int64_t chunk_start(const pipe_run *r, int64_t k)
{
    return k * r->chunk;
}

static int64_t chunk_len(const pipe_run *r, int64_t k)
{
    int64_t e0 = chunk_start(r, k);
    return r->p->n - e0 < r->chunk ? r->p->n - e0 : r->chunk;
}

/* Where chunk k's outputs go (gs_pipe.pieces); returns the number of pieces. */
static int chunk_pieces(const pipe_run *r, int64_t k, gs_pipe_piece *pc)
{
    const int64_t e0 = chunk_start(r, k), len = chunk_len(r, k);

    if (r->p->pieces != NULL)
        return r->p->pieces(r->p->ctx, k, e0, len, pc);
    pc[0].from = 0;
    pc[0].to = r->p->base + e0;
    pc[0].count = len;
    return 1;
}

/* Faulting in a fresh result. A NumPy result made for the call has no host pages yet, and with
 * 1 MiB unpack tasks two threads would meet on each 2 MiB huge page, one waiting for the other's
 * zeroing. So while chunk k + 1 is packed, its output's pages are populated, one task per huge
 * page (madvise(MADV_POPULATE_WRITE), which changes no byte of a page already there), and its
 * unpack, two sections later, writes into resident memory. Views that are not C-contiguous and
 * outputs in pieces (gs_pipe.pieces) fault as they write. */
static atomic_int populate_works = 1; /* cleared if the kernel lacks MADV_POPULATE_WRITE */

/* The host bytes [*lo, *hi) of elements [e0, e0 + len) of a C-contiguous view; 0 if the view
 * is not C-contiguous. */
static int contiguous_span(const gs_view *v, int64_t e0, int64_t len, uintptr_t *lo, uintptr_t *hi)
{
    const int64_t size = (int64_t)gs_dtype_size(v->dtype);

    if (!gs_view_is_c_contig(v))
        return 0;
    *lo = (uintptr_t)v->ptr + (uintptr_t)(e0 * size);
    *hi = *lo + (uintptr_t)(len * size);
    return 1;
}

/* Prefault tasks of output i for chunk k (one per huge page its bytes touch), 0 for none. */
static int64_t fault_tasks(const pipe_run *r, int i, int64_t k)
{
    uintptr_t lo, hi;

    if (!populate_works || r->p->pieces != NULL || r->dout[i] ||
        !contiguous_span(r->p->out[i].view, r->p->base + chunk_start(r, k), chunk_len(r, k), &lo,
                         &hi) ||
        hi <= lo)
        return 0;
    return (int64_t)((hi - 1) / GS_PIPE_FAULT_BYTES - lo / GS_PIPE_FAULT_BYTES + 1);
}

/* Prefault task t of the section (counted over every output's tasks) for chunk r->pk: the
 * part of one output's bytes in one huge page. */
static void fault_task(const pipe_run *r, int64_t t)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const int64_t k = r->pk;
    uintptr_t lo, hi, a, b;
    int i = 0;

    while (t >= r->ftasks[i])
        t -= r->ftasks[i++];

    if (!contiguous_span(r->p->out[i].view, r->p->base + chunk_start(r, k), chunk_len(r, k), &lo,
                         &hi))
        return; /* not reached: fault_tasks gave output i tasks only when it is contiguous */
    a = (lo / GS_PIPE_FAULT_BYTES + (uintptr_t)t) * GS_PIPE_FAULT_BYTES;
    b = a + GS_PIPE_FAULT_BYTES;
    a = (a < lo ? lo : a) / page * page;
    b = b > hi ? hi : b;
    if (b > a && madvise((void *)a, b - a, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
        populate_works = 0;
}

/* Tasks for `len` elements of `bytes` bytes each: about one per GS_PIPE_TASK_BYTES. */
static int64_t task_count(int64_t len, int64_t bytes)
{
    int64_t t = len * bytes / GS_PIPE_TASK_BYTES;
    return t < 1 ? 1 : t;
}

/* One task of the parallel section: a sub-range of the pack of chunk pk, or of the delivery of
 * chunk dk. */
static void section_task(void *ctx, int64_t task)
{
    pipe_run *r = ctx;
    const gs_pipe *p = r->p;

    if (task >= r->ptasks + r->dtasks) {
        fault_task(r, task - r->ptasks - r->dtasks);
        return;
    }
    const int pack = task < r->ptasks;
    const int64_t k = pack ? r->pk : r->dk, t = pack ? task : task - r->ptasks;
    const int64_t ntasks = pack ? r->ptasks : r->dtasks;
    const int64_t len = chunk_len(r, k), e0 = chunk_start(r, k);
    const int64_t t0 = len * t / ntasks, t1 = len * (t + 1) / ntasks;
    const int s = (int)(k % GS_PIPE_RING);
    gs_pipe_piece pc[GS_PIPE_PIECES];

    if (pack) {
        char *slot = ring.host_in + (size_t)s * ring.slot;
        for (int i = 0; i < p->nin; i++) {
            char *part = slot + part_offset(p->in, i, len);
            if (r->din[i])
                continue;
            gs_pack(p->in[i].view, p->base + e0 + t0, t1 - t0, p->in[i].dtype,
                    part + (size_t)t0 * gs_dtype_size(p->in[i].dtype));
        }
        return;
    }
    const int npieces = chunk_pieces(r, k, pc);
    for (int i = 0; i < p->nout; i++) {
        const char *host = ring.host_out + (size_t)s * ring.slot + part_offset(p->out, i, len);
        for (int j = 0; j < npieces && !r->dout[i]; j++) {
            const int64_t lo = t0 > pc[j].from ? t0 : pc[j].from;
            const int64_t hi = t1 < pc[j].from + pc[j].count ? t1 : pc[j].from + pc[j].count;
            if (lo < hi)
                gs_unpack(host + (size_t)lo * gs_dtype_size(p->out[i].dtype), p->out[i].dtype,
                          p->out[i].view, pc[j].to + (lo - pc[j].from), hi - lo);
        }
    }
}

/* Pack chunk pk and deliver chunk dk (either may be -1) on the pool's threads, after waiting
 * for the events that free their slots. */
static int section(pipe_run *r, int64_t pk, int64_t dk)
{
    const gs_pipe *p = r->p;
    cudaError_t err;
    int rc;

    r->pk = pk;
    r->dk = p->nout > 0 ? dk : -1;
    r->ptasks = r->pk >= 0 && r->in_staged > 0 ? task_count(chunk_len(r, pk), r->in_staged) : 0;
    r->dtasks = r->dk >= 0 && r->out_staged > 0 ? task_count(chunk_len(r, dk), r->out_staged) : 0;
    r->ftotal = 0;
    for (int i = 0; i < p->nout; i++) {
        r->ftasks[i] = r->pk >= 0 && r->prefault ? fault_tasks(r, i, r->pk) : 0;
        r->ftotal += r->ftasks[i];
    }
    /* The slot of pk was last uploaded from for chunk pk - RING; dk's download must be done
     * before its staged outputs are unpacked (direct outputs are not waited for here: the run
     * waits for the last download at its end). */
    if (r->ptasks > 0 && r->pk >= GS_PIPE_RING &&
        (err = cudaEventSynchronize(ring.up[pk % GS_PIPE_RING])) != cudaSuccess)
        return gs_fail_set(&r->f, 'c', (int)err, "cudaEventSynchronize", 0);
    if (r->dtasks > 0 && (err = cudaEventSynchronize(ring.down[dk % GS_PIPE_RING])) != cudaSuccess)
        return gs_fail_set(&r->f, 'c', (int)err, "cudaEventSynchronize", 0);
    if (r->ptasks + r->dtasks + r->ftotal == 0)
        return 0;
    rc = gs_cpu_parallel_for(r->ptasks + r->dtasks + r->ftotal, section_task, r);
    return rc < 0 ? gs_fail_set(&r->f, 'e', -rc, "gs_cpu_parallel_for", 0) : 0;
}

/* Enqueue chunk k: its upload, its compute, its download, each after what it depends on. */
static int issue(pipe_run *r, int64_t k)
{
    const gs_pipe *p = r->p;
    const int s = (int)(k % GS_PIPE_RING);
    const int64_t len = chunk_len(r, k), e0 = chunk_start(r, k);
    char *din = r->dev_in + (size_t)s * r->in_slot, *dout = r->dev_out + (size_t)s * r->out_slot;
    void *dev_in[GS_PIPE_MAX], *dev_out[GS_PIPE_MAX];
    gs_pipe_piece pc[GS_PIPE_PIECES];
    const int npieces = p->nout > 0 ? chunk_pieces(r, k, pc) : 0;
    gs_fail *f = &r->f;

    for (int i = 0; i < p->nin; i++)
        dev_in[i] = p->dev != NULL ? p->dev + (size_t)(p->base + e0) * gs_dtype_size(p->in[i].dtype)
                                   : din + part_offset(p->in, i, len);
    for (int i = 0; i < p->nout; i++)
        dev_out[i] = p->dev != NULL
                         ? p->dev + (size_t)(p->base + e0) * gs_dtype_size(p->out[i].dtype)
                         : dout + part_offset(p->out, i, len);
    if (k >= GS_PIPE_RING)
        GS_CUDA_TRY(f, cudaStreamWaitEvent(ring.h2d, ring.done[s], 0));
    for (int i = 0; i < p->nin; i++)
        GS_CUDA_TRY(f, cudaMemcpyAsync(dev_in[i],
                                       r->din[i] ? direct_at(&p->in[i], p->base + e0)
                                                 : ring.host_in + (size_t)s * ring.slot +
                                                       part_offset(p->in, i, len),
                                       (size_t)len * gs_dtype_size(p->in[i].dtype),
                                       cudaMemcpyHostToDevice, ring.h2d));
    GS_CUDA_TRY(f, cudaEventRecord(ring.up[s], ring.h2d));
    GS_CUDA_TRY(f, cudaStreamWaitEvent(gs_cuda_stream, ring.up[s], 0));
    if (k >= GS_PIPE_RING && p->nout > 0)
        GS_CUDA_TRY(f, cudaStreamWaitEvent(gs_cuda_stream, ring.down[s], 0));
    if (p->run != NULL && p->run(p->ctx, k, e0, len, dev_in, dev_out, f) < 0)
        goto done;
    GS_CUDA_TRY(f, cudaEventRecord(ring.done[s], gs_cuda_stream));
    if (p->nout > 0) {
        GS_CUDA_TRY(f, cudaStreamWaitEvent(ring.d2h, ring.done[s], 0));
        for (int i = 0; i < p->nout; i++) {
            const size_t size = gs_dtype_size(p->out[i].dtype);
            if (!r->dout[i]) {
                GS_CUDA_TRY(f, cudaMemcpyAsync(ring.host_out + (size_t)s * ring.slot +
                                                   part_offset(p->out, i, len),
                                               dev_out[i], (size_t)len * size,
                                               cudaMemcpyDeviceToHost, ring.d2h));
                continue;
            }
            for (int j = 0; j < npieces; j++)
                GS_CUDA_TRY(f, cudaMemcpyAsync(direct_at(&p->out[i], pc[j].to),
                                               (char *)dev_out[i] + (size_t)pc[j].from * size,
                                               (size_t)pc[j].count * size, cudaMemcpyDeviceToHost,
                                               ring.d2h));
        }
        GS_CUDA_TRY(f, cudaEventRecord(ring.down[s], ring.d2h));
    }
done:
    return f->kind ? -1 : 0;
}

/* Every chunk, in order; -1 with r->f on failure (kind 'p': stopped between chunks).  Chunk k
 * is unpacked two sections after its issue (the slot it was downloaded into is next written by
 * chunk k + GS_PIPE_RING's download, issued after that section). */
#if GS_PIPE_RING < 3
#error "the pipeline delivers chunk k - 2 while chunk k + 1 is packed: three slots at least"
#endif
static int run_chunks(pipe_run *r)
{
    gs_fail *f = &r->f;
    cudaError_t err;

    /* The device slots come from the pool in the order of gpuscan's stream: memory that work
     * still enqueued there (an earlier call's kernels, with their results or scratch freed in
     * stream order) may use.  The first uploads, on the copy stream, wait for that work; later
     * ones wait for the compute that read their slot (issue). */
    GS_CUDA_TRY(f, cudaEventRecord(ring.fresh, gs_cuda_stream));
    GS_CUDA_TRY(f, cudaStreamWaitEvent(ring.h2d, ring.fresh, 0));
    if (section(r, 0, -1) < 0)
        return -1;
    for (int64_t k = 0; k < r->nchunks; k++) {
        if (issue(r, k) < 0 || section(r, k + 1 < r->nchunks ? k + 1 : -1, k - 2) < 0)
            return -1;
        if (gs_stop_requested())
            return gs_fail_set(&r->f, 'p', 0, "KeyboardInterrupt", 0);
    }
    for (int64_t k = r->nchunks >= 2 ? r->nchunks - 2 : 0; k < r->nchunks; k++)
        if (section(r, -1, k) < 0)
            return -1;
    /* The downloads into direct outputs: a section waited only for those it unpacked. */
    if (r->p->nout > 0 && (err = cudaStreamSynchronize(ring.d2h)) != cudaSuccess)
        return gs_fail_set(f, 'c', (int)err, "cudaStreamSynchronize", 0);
    return 0;
done:
    return -1;
}

int gs_pipe_run(const gs_pipe *p, gs_fail *f)
{
    const int64_t in_bpe = elem_bytes(p->in, p->nin), out_bpe = elem_bytes(p->out, p->nout);
    pipe_run r;
    cudaError_t err;

    memset(&r, 0, sizeof(r));
    r.p = p;
    r.prefault = gs_xfer_prefault();
    if (p->n == 0)
        return 0;
    pthread_mutex_lock(&pipe_lock);
    (void)gs_cuda_enter();
    find_direct(&r);
    /* The chunk's bytes each way within the configured size (the slots' slack holds each
     * array's alignment). */
    r.chunk = p->chunk > 0 ? p->chunk
                           : gs_pipe_chunk(p->n, in_bpe > out_bpe ? in_bpe : out_bpe,
                                           p->chunk_align > 0 ? p->chunk_align : 1);
    r.nchunks = (p->n + r.chunk - 1) / r.chunk;
    r.in_slot = p->dev != NULL ? 0 : parts_bytes(p->in, p->nin, r.chunk);
    r.out_slot = p->dev != NULL ? 0 : parts_bytes(p->out, p->nout, r.chunk);
    if ((err = ring_ready(gs_xfer_chunk_bytes() + GS_PIPE_SLACK)) != cudaSuccess)
        gs_fail_set(&r.f, 'c', (int)err, "cudaHostAlloc", 2 * GS_PIPE_RING * ring.slot);
    else if (r.in_slot > ring.slot || r.out_slot > ring.slot)
        gs_fail_set(&r.f, 'e', EINVAL, "gs_pipe_run (a row longer than a chunk)", 0);
    else if (gs_cuda_alloc((void **)&r.dev_in, GS_PIPE_RING * r.in_slot, &r.f) == 0 &&
             gs_cuda_alloc((void **)&r.dev_out, GS_PIPE_RING * r.out_slot, &r.f) == 0)
        (void)run_chunks(&r);
    /* Nothing stays enqueued: on success the last delivery waited for the last download (and
     * the compute, for a pipeline without outputs, is waited for here); after a failure or
     * Ctrl-C, everything issued finishes before the buffers go back. */
    if ((err = cudaStreamSynchronize(gs_cuda_stream)) != cudaSuccess)
        gs_fail_set(&r.f, 'c', (int)err, "cudaStreamSynchronize", 0);
    if (r.f.kind) {
        (void)cudaStreamSynchronize(ring.h2d);
        (void)cudaStreamSynchronize(ring.d2h);
        (void)cudaGetLastError();
    }
    gs_cuda_free(r.dev_in);
    gs_cuda_free(r.dev_out);
    pthread_mutex_unlock(&pipe_lock);
    if (r.f.kind)
        *f = r.f;
    return r.f.kind ? -1 : 0;
}

#endif /* GS_HAVE_CUDA */
