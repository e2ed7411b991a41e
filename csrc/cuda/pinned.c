/*
 * cuda/pinned.c - page-locked host memory for the NumPy results that the pipeline fills, kept
 * in a bounded cache.
 * Level: backend (CUDA), host side; a build with CUDA only (the table of a build without CUDA
 * has no host_take, so results are NumPy's own memory there).
 * Why: a copy engine writes into page-locked memory at full speed, but a NumPy result made for
 * the call has no pages yet, so the pipeline stages each chunk and a pool thread copies it out,
 * faulting the result's pages in on the way. Page-locked memory from the driver is far too slow
 * to make per call (docs/performance-notes.md, "NumPy in, NumPy out"). So blocks are made once,
 * cheaply - an anonymous mapping on transparent huge pages, populated by the pool's threads
 * (MADV_POPULATE_WRITE, one huge page per task), then registered (cudaHostRegister) - handed out
 * as results, and taken back into the cache when the NumPy array that owns one is freed; the next
 * result of a similar size takes it again and the copy engine writes straight into it
 * (pipeline.c: "direct" outputs), with no staging copy and no fault.
 * Bounds: every block, in use or cached, counts against one limit (gs_xfer_pinned_limit:
 * GPUSCAN_PINNED_BYTES, default a quarter of physical memory, 0 turns the cache off).  A
 * request that would pass it first releases cached blocks, and failing that gets NULL: the
 * result is then NumPy memory, as without the cache.  Results smaller than GS_PINNED_MIN are
 * NumPy memory too (their copies are short anyway).  free_cached_memory() releases every
 * cached block.  Blocks are never shared: one result per block, reused only once freed.
 * Held arrays (gs_pinned_hold, for core/hold.c): memory the caller owns, registered in place
 * and listed as a block in use until gs_pinned_unhold, under the same limit; never cached, never
 * unmapped here.
 */
#ifdef GS_HAVE_CUDA

#define _GNU_SOURCE /* mmap's MAP_ANONYMOUS, madvise's huge pages */

#include "cuda/cuda_rt.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host/pool.h"

/* Results from this size up come from the cache. */
#define GS_PINNED_MIN ((size_t)4 << 20)
/* Blocks are whole huge pages, and so aligned. */
#define GS_PINNED_PAGE ((size_t)2 << 20)
/* Blocks at most (in use or cached). */
#define GS_PINNED_BLOCKS 64
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

typedef struct block {
    char *ptr;
    size_t bytes;
    int in_use;
    int user; /* a held array: 1 while it is being registered, 2 once registered */
} block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block blocks[GS_PINNED_BLOCKS];
static int nblocks;
static size_t held; /* bytes of every block, in use or cached */

/* ---- making and releasing a block (without the lock) ---------------------------------- */

typedef struct populate_ctx {
    char *ptr;
    int64_t pages; /* huge pages */
    int no_populate;
} populate_ctx;

/* Task t: huge page t resident (its bytes stay zero). */
static void populate_task(void *ctx, int64_t t)
{
    populate_ctx *c = ctx;
    char *at = c->ptr + (size_t)t * GS_PINNED_PAGE;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);

    if (!c->no_populate && madvise(at, GS_PINNED_PAGE, MADV_POPULATE_WRITE) == 0)
        return;
    c->no_populate = 1; /* an older kernel: touch each page */
    for (size_t off = 0; off < GS_PINNED_PAGE; off += page)
        ((volatile char *)at)[off] = 0;
}

/* A new registered block of `bytes` (a multiple of GS_PINNED_PAGE), huge-page aligned; NULL if
 * the system or the driver refuses. */
static char *block_make(size_t bytes)
{
    const size_t span = bytes + GS_PINNED_PAGE;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *ptr;
    populate_ctx c;

    if (raw == MAP_FAILED)
        return NULL;
    /* Keep the huge-page aligned middle of the mapping. */
    ptr = (char *)(((uintptr_t)raw + GS_PINNED_PAGE - 1) / GS_PINNED_PAGE * GS_PINNED_PAGE);
    if (ptr > raw)
        (void)munmap(raw, (size_t)(ptr - raw));
    if (raw + span > ptr + bytes)
        (void)munmap(ptr + bytes, (size_t)(raw + span - (ptr + bytes)));
    (void)madvise(ptr, bytes, MADV_HUGEPAGE);
    c.ptr = ptr;
    c.pages = (int64_t)(bytes / GS_PINNED_PAGE);
    c.no_populate = 0;
    if (gs_cpu_parallel_for(c.pages, populate_task, &c) < 0 || gs_cuda_enter() != cudaSuccess ||
        cudaHostRegister(ptr, bytes, cudaHostRegisterDefault) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)munmap(ptr, bytes);
        return NULL;
    }
    return ptr;
}

static void block_release(char *ptr, size_t bytes)
{
    if (gs_cuda_enter() != cudaSuccess || cudaHostUnregister(ptr) != cudaSuccess)
        (void)cudaGetLastError();
    (void)munmap(ptr, bytes);
}

/* ---- the cache (under the lock) ----------------------------------------------------------- */

/* Remove block i from the table; its memory is the caller's to release. */
static block unlist(int i)
{
    block b = blocks[i];
    blocks[i] = blocks[--nblocks];
    held -= b.bytes;
    return b;
}

/* Unlist cached blocks, largest first, until `need` more bytes fit under `limit` (or none is
 * left); they go into out[], their count returned. */
static int evict(size_t need, size_t limit, block *out)
{
    int n = 0;
    while (held + need > limit) {
        int pick = -1;
        for (int i = 0; i < nblocks; i++)
            if (!blocks[i].in_use && (pick < 0 || blocks[i].bytes > blocks[pick].bytes))
                pick = i;
        if (pick < 0)
            break;
        out[n++] = unlist(pick);
    }
    return n;
}

static void release_all(const block *b, int n)
{
    for (int i = 0; i < n; i++)
        block_release(b[i].ptr, b[i].bytes);
}

void *gs_pinned_take(size_t bytes)
{
    const size_t limit = gs_xfer_pinned_limit();
    const size_t want = (bytes + GS_PINNED_PAGE - 1) / GS_PINNED_PAGE * GS_PINNED_PAGE;
    block gone[GS_PINNED_BLOCKS];
    int ngone, pick = -1;
    char *ptr = NULL;

    pthread_mutex_lock(&lock);
    ngone = evict(0, limit, gone); /* the limit may have been lowered since */
    if (bytes < GS_PINNED_MIN || want > limit)
        goto unlock;
    /* A cached block that fits, wasting at most a quarter of itself: the smallest such. */
    for (int i = 0; i < nblocks; i++)
        if (!blocks[i].in_use && blocks[i].bytes >= want && blocks[i].bytes - want <= want / 3 &&
            (pick < 0 || blocks[i].bytes < blocks[pick].bytes))
            pick = i;
    if (pick >= 0) {
        blocks[pick].in_use = 1;
        ptr = blocks[pick].ptr;
        goto unlock;
    }
    /* A new one: room made under the limit, its bytes counted before it exists (the lock is
     * not held while it is made: a placeholder entry with no pointer holds its place). */
    ngone += evict(want, limit, gone + ngone);
    if (held + want <= limit && nblocks < GS_PINNED_BLOCKS) {
        held += want;
        pick = nblocks++;
        blocks[pick].ptr = NULL;
        blocks[pick].bytes = want;
        blocks[pick].in_use = 1;
        blocks[pick].user = 0;
    }
unlock:
    pthread_mutex_unlock(&lock);
    release_all(gone, ngone);
    if (ptr != NULL || pick < 0)
        return ptr;

    ptr = block_make(want);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks; i++) {
        if (blocks[i].ptr == NULL && !blocks[i].user && blocks[i].bytes == want) {
            if (ptr != NULL)
                blocks[i].ptr = ptr;
            else
                (void)unlist(i);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return ptr;
}

void gs_pinned_give(void *ptr)
{
    const size_t limit = gs_xfer_pinned_limit();
    block gone[GS_PINNED_BLOCKS];
    int ngone;

    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks; i++)
        if (blocks[i].ptr == ptr && !blocks[i].user)
            blocks[i].in_use = 0;
    ngone = evict(0, limit, gone); /* the limit may have been lowered since */
    pthread_mutex_unlock(&lock);
    release_all(gone, ngone);
}

int gs_pinned_holds(const void *lo, const void *hi)
{
    int yes = 0;

    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks && !yes; i++)
        yes = blocks[i].ptr != NULL && blocks[i].user != 1 && (const char *)lo >= blocks[i].ptr &&
              (const char *)hi <= blocks[i].ptr + blocks[i].bytes;
    pthread_mutex_unlock(&lock);
    return yes;
}

size_t gs_pinned_release_cached(void)
{
    block gone[GS_PINNED_BLOCKS];
    size_t bytes = 0;
    int ngone;

    pthread_mutex_lock(&lock);
    ngone = evict(held, held, gone); /* need > 0 room under a limit of what is held: all cached */
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < ngone; i++)
        bytes += gone[i].bytes;
    release_all(gone, ngone);
    return bytes;
}

int gs_pinned_hold(void *ptr, size_t bytes)
{
    const size_t limit = gs_xfer_pinned_limit();
    block gone[GS_PINNED_BLOCKS];
    int ngone, slot = -1, nbusy = 0, ok;
    size_t busy = 0;

    pthread_mutex_lock(&lock);
    ngone = evict(0, limit, gone); /* the limit may have been lowered since */
    for (int i = 0; i < nblocks; i++) {
        if (blocks[i].user && blocks[i].ptr == ptr)
            slot = -2; /* held already */
        if (blocks[i].in_use) {
            busy += blocks[i].bytes;
            nbusy++;
        }
    }
    /* Cached blocks released only where that makes room: the blocks in use leave enough. */
    if (slot == -1 && busy + bytes <= limit && nbusy < GS_PINNED_BLOCKS) {
        ngone += evict(bytes, limit, gone + ngone);
        if (nblocks == GS_PINNED_BLOCKS) /* one more cached block out, for a free entry */
            ngone += evict(limit - held + 1, limit, gone + ngone);
    }
    if (slot == -1 && held + bytes <= limit && nblocks < GS_PINNED_BLOCKS) {
        held += bytes;
        slot = nblocks++;
        blocks[slot].ptr = ptr;
        blocks[slot].bytes = bytes;
        blocks[slot].in_use = 1;
        blocks[slot].user = 1; /* not yet page-locked: gs_pinned_holds says no */
    }
    pthread_mutex_unlock(&lock);
    release_all(gone, ngone);
    if (slot < 0)
        return 0;

    ok = gs_cuda_enter() == cudaSuccess &&
         cudaHostRegister(ptr, bytes, cudaHostRegisterDefault) == cudaSuccess;
    if (!ok)
        (void)cudaGetLastError(); /* memory the driver will not lock (overlapping, too much) */
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks; i++) {
        if (blocks[i].user == 1 && blocks[i].ptr == ptr) {
            if (ok)
                blocks[i].user = 2;
            else
                (void)unlist(i);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

void gs_pinned_unhold(void *ptr)
{
    int found = 0, current = -1;

    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks && !found; i++) {
        if (blocks[i].user == 2 && blocks[i].ptr == ptr) {
            (void)unlist(i);
            found = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    if (!found)
        return;
    /* Called as NumPy frees a held array, anywhere in the user's code: the thread's device
     * is left as it was. */
    if (cudaGetDevice(&current) != cudaSuccess)
        current = -1;
    if (gs_cuda_enter() != cudaSuccess || cudaHostUnregister(ptr) != cudaSuccess)
        (void)cudaGetLastError();
    if (current >= 0 && current != gs_cuda_device && cudaSetDevice(current) != cudaSuccess)
        (void)cudaGetLastError();
}

void gs_pinned_counts(size_t *in_use, size_t *cached)
{
    *in_use = *cached = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks; i++)
        *(blocks[i].in_use ? in_use : cached) += blocks[i].bytes;
    pthread_mutex_unlock(&lock);
}

#endif /* GS_HAVE_CUDA */
