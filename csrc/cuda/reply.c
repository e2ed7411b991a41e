/*
 * cuda/reply.c - small answers from the device (a count, an index check's words) that the host
 * waits for without waiting for the rest of gpuscan's stream.
 * Level: backend (CUDA), host side; a build with CUDA only.
 * Why: a copy to pageable memory is synchronous (the runtime stages it), and
 * cudaStreamSynchronize waits for everything enqueued. A reply is a few page-locked bytes the
 * device maps and an event: the kernel that makes the words writes them there itself (the
 * split's count, reduceat's index check: gs_reply_view, then gs_reply_mark), or a one-warp
 * kernel copies them (gs_reply_fetch: cheaper than a cudaMemcpyAsync's copy-engine hop); the
 * event is recorded after it, and work that does not depend on the answer can be enqueued
 * before the host waits on the event alone (reduceat enqueues its reduction behind the index
 * check that guards it). Replies are made once
 * (cudaHostAlloc and an event are slow to make) and kept on a free list.
 */
#ifdef GS_HAVE_CUDA

#include "cuda/cuda_rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct gs_reply {
    unsigned long long *host; /* GS_REPLY_BYTES, page-locked */
    void *view;               /* the device's address of host */
    cudaEvent_t done;         /* recorded after the copy into host */
    int settled;              /* no write into host is on its way (done waited for) */
    gs_reply *next;           /* on the free list */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gs_reply *spare;

int gs_reply_take(gs_reply **out, gs_fail *f)
{
    gs_reply *r;

    pthread_mutex_lock(&lock);
    if ((r = spare) != NULL)
        spare = r->next;
    pthread_mutex_unlock(&lock);
    if (r == NULL) {
        if ((r = calloc(1, sizeof(*r))) == NULL)
            return gs_fail_set(f, 'e', ENOMEM, "malloc", sizeof(*r));
        GS_CUDA_TRY(f, cudaHostAlloc((void **)&r->host, GS_REPLY_BYTES, cudaHostAllocMapped));
        GS_CUDA_TRY(f, cudaHostGetDevicePointer(&r->view, r->host, 0));
        GS_CUDA_TRY(f, cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming));
        r->settled = 1;
    }
done:
    if (f->kind && r != NULL) {
        if (r->host != NULL)
            (void)cudaFreeHost(r->host);
        free(r);
        (void)cudaGetLastError();
        r = NULL;
    }
    *out = r;
    return f->kind ? -1 : 0;
}

int gs_reply_fetch(gs_reply *r, const void *dev, size_t bytes, gs_fail *f)
{
    if (bytes > GS_REPLY_BYTES)
        return gs_fail_set(f, 'c', (int)cudaErrorInvalidValue, "gs_reply_fetch", bytes);
    GS_CUDA_TRY(f, gs_launch_reply(r->view, dev, bytes, gs_cuda_stream));
    return gs_reply_mark(r, f);
done:
    return -1;
}

void *gs_reply_view(gs_reply *r)
{
    return r->view;
}

int gs_reply_mark(gs_reply *r, gs_fail *f)
{
    r->settled = 0;
    GS_CUDA_TRY(f, cudaEventRecord(r->done, gs_cuda_stream));
done:
    /* Unmarked, the reply's event would not cover a kernel already enqueued to write it:
     * wait for the stream, so that gs_reply_give does not hand the bytes on while they change. */
    if (f->kind && cudaStreamSynchronize(gs_cuda_stream) != cudaSuccess)
        (void)cudaGetLastError();
    return f->kind ? -1 : 0;
}

int gs_reply_wait(gs_reply *r, const void **host, gs_fail *f)
{
    GS_CUDA_TRY(f, cudaEventSynchronize(r->done));
    r->settled = 1;
    *host = r->host;
done:
    return f->kind ? -1 : 0;
}

void gs_reply_give(gs_reply *r)
{
    if (r == NULL)
        return;
    /* A copy still on its way must land before the bytes serve another answer (none is once
     * gs_reply_wait has seen the event: then waiting again would cost a runtime call). */
    if (!r->settled && cudaEventSynchronize(r->done) != cudaSuccess)
        (void)cudaGetLastError();
    r->settled = 1;
    pthread_mutex_lock(&lock);
    r->next = spare;
    spare = r;
    pthread_mutex_unlock(&lock);
}

#endif /* GS_HAVE_CUDA */
