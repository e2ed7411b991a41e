/*
 * cuda/chunk.c - the pipeline's settings: its chunk size ($GPUSCAN_CHUNK_BYTES, or what the
 * tests' knob _gpuscan._pipeline_chunk_bytes sets), whether it faults in the host pages of
 * its outputs ahead of the unpack (on; the knob _gpuscan._pipeline_prefault, for benchmarks),
 * and the limit of the page-locked result cache (cuda/pinned.c: $GPUSCAN_PINNED_BYTES, default
 * a quarter of physical memory; the knob _gpuscan._pinned_limit).
 * Level: backend (CUDA), host side; in every build (a build without CUDA keeps the setting and
 * streams nothing), so the knob behaves the same everywhere.
 */
#include "cuda/cuda.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* The default: 16 MiB of staging per direction and slot.  Large enough that a chunk's copies
 * take longer than its fixed costs (events, launches, waking the pool's threads: about 0.15 ms
 * a chunk on an H200 host, where 4 MiB chunks halved the speed), small enough that the ring's
 * six slots (96 MiB, page-locked) stay in a server's last-level cache between the threads'
 * stores and the copy engine's reads (1 GiB scan round trip 23.9 ms at 32 MiB, 22.7 at 16). */
#define GS_CHUNK_DEFAULT ((size_t)16 << 20)
/* The smallest chunk: room for one element of each of a pipeline's arrays. */
#define GS_CHUNK_MIN ((size_t)64)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t chunk; /* 0: not read yet, or reset */
static int prefault = 1;
static size_t pinned_limit = (size_t)-1; /* (size_t)-1: not read yet, or reset */

void gs_xfer_set_chunk_bytes(size_t bytes)
{
    pthread_mutex_lock(&lock);
    chunk = bytes == 0 || bytes >= GS_CHUNK_MIN ? bytes : GS_CHUNK_MIN;
    pthread_mutex_unlock(&lock);
}

size_t gs_xfer_chunk_bytes(void)
{
    size_t c;

    pthread_mutex_lock(&lock);
    if (chunk == 0) {
        const char *env = getenv("GPUSCAN_CHUNK_BYTES");
        long long v = env != NULL ? atoll(env) : 0;
        chunk = v <= 0 ? GS_CHUNK_DEFAULT : (size_t)v < GS_CHUNK_MIN ? GS_CHUNK_MIN : (size_t)v;
    }
    c = chunk;
    pthread_mutex_unlock(&lock);
    return c;
}

void gs_xfer_set_prefault(int on)
{
    pthread_mutex_lock(&lock);
    prefault = on != 0;
    pthread_mutex_unlock(&lock);
}

int gs_xfer_prefault(void)
{
    int on;

    pthread_mutex_lock(&lock);
    on = prefault;
    pthread_mutex_unlock(&lock);
    return on;
}

void gs_xfer_set_pinned_limit(size_t bytes)
{
    pthread_mutex_lock(&lock);
    pinned_limit = bytes;
    pthread_mutex_unlock(&lock);
}

size_t gs_xfer_pinned_limit(void)
{
    size_t limit;

    pthread_mutex_lock(&lock);
    if (pinned_limit == (size_t)-1) {
        const char *env = getenv("GPUSCAN_PINNED_BYTES");
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (env != NULL && *env != '\0')
            pinned_limit = (size_t)(atoll(env) > 0 ? atoll(env) : 0);
        else
            pinned_limit = pages > 0 && page > 0 ? (size_t)pages / 4 * (size_t)page : 0;
    }
    limit = pinned_limit;
    pthread_mutex_unlock(&lock);
    return limit;
}
