/*
 * cpu/split.c - gs_cpu_split: the CPU backend's split (stable partition) and compact.
 *
 * Level: backend (CPU).  Sees one gs_split_desc (include/gpuscan/backend_api.h) over flat
 * buffers; the threads come from cpu/pool.c.
 *
 * Algorithm: the values are cut into chunks of GS_CPU_SPLIT_CHUNK, then
 *   phase 1 (parallel)    each chunk counts its flagged values;
 *   phase 2 (sequential)  an exclusive scan of the counts gives each chunk the flagged values
 *                         before it, and so the unflagged ones (chunk start - flagged before);
 *   phase 3 (parallel)    each chunk copies its flagged values, in order, to
 *                         out[flagged before + rank] and (split) its unflagged ones to
 *                         out[total + unflagged before + rank].
 * Stable, and the same bytes whatever the thread count.  Values are moved as bits of their
 * width (NaN payloads kept); a flag is set when it compares unequal to zero in its own dtype
 * (for floats -0.0 is not set, NaN is).  Small inputs run on the calling thread.  With
 * d->out == NULL only phases 1 and 2 run: the count, which a compact needs to size its output.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"

/* Values per chunk: 64 Ki values are tens of microseconds of work, far above the cost of a task,
 * and 2^28 values make 4096 counts, a negligible sequential phase 2. */
#define GS_CPU_SPLIT_CHUNK (64 * 1024)

typedef struct split_job {
    const gs_split_desc *d;
    int64_t *before; /* per chunk: count (phase 1), then flagged values before it (phase 2) */
    int64_t total;
} split_job;

/* Whether flag i is set, for every flag dtype (a float's `!= 0` is false for -0.0, true for
 * NaN). */
static GS_ALWAYS_INLINE int flag_set(const void *flags, gs_dtype t, int64_t i)
{
    switch (t) {
#define GS_X_FLAG(code, ctype, sfx, kind, npy) \
    case code:                                 \
        return ((const ctype *)flags)[i] != 0;
        GS_DTYPES(GS_X_FLAG)
#undef GS_X_FLAG
    default:
        return 0;
    }
}

static void count_chunk(void *ctx, int64_t chunk)
{
    split_job *job = ctx;
    const gs_split_desc *d = job->d;
    int64_t lo = chunk * GS_CPU_SPLIT_CHUNK, hi = lo + GS_CPU_SPLIT_CHUNK, count = 0;
    if (hi > d->n)
        hi = d->n;
    switch (d->flag_type) {
#define GS_X_COUNT(code, ctype, sfx, kind, npy)         \
    case code:                                          \
        for (int64_t i = lo; i < hi; i++)               \
            count += ((const ctype *)d->flags)[i] != 0; \
        break;
        GS_DTYPES(GS_X_COUNT)
#undef GS_X_COUNT
    default:
        break;
    }
    job->before[chunk] = count;
}

/* Move the chunk's values by width: W-byte unsigned integers carry every dtype's bits. */
#define GS_SPLIT_MOVE(W)                             \
    do {                                             \
        const W *in = d->in;                         \
        W *out = d->out;                             \
        for (int64_t i = lo; i < hi; i++) {          \
            if (flag_set(d->flags, d->flag_type, i)) \
                out[f++] = in[i];                    \
            else if (!d->compact)                    \
                out[u++] = in[i];                    \
        }                                            \
    } while (0)

static void scatter_chunk(void *ctx, int64_t chunk)
{
    split_job *job = ctx;
    const gs_split_desc *d = job->d;
    int64_t lo = chunk * GS_CPU_SPLIT_CHUNK, hi = lo + GS_CPU_SPLIT_CHUNK;
    int64_t f = job->before[chunk], u = job->total + (lo - f);
    if (hi > d->n)
        hi = d->n;
    switch (gs_dtype_size(d->in_type)) {
    case 1:
        GS_SPLIT_MOVE(uint8_t);
        break;
    case 2:
        GS_SPLIT_MOVE(uint16_t);
        break;
    case 4:
        GS_SPLIT_MOVE(uint32_t);
        break;
    default:
        GS_SPLIT_MOVE(uint64_t);
        break;
    }
}

int gs_cpu_split(const gs_split_desc *d, int64_t *count)
{
    int64_t chunks = (d->n + GS_CPU_SPLIT_CHUNK - 1) / GS_CPU_SPLIT_CHUNK, sum = 0;
    split_job job;
    int rc;

    *count = 0;
    if (d->n == 0)
        return 0;
    job.d = d;
    job.before = malloc((size_t)chunks * sizeof(int64_t));
    if (job.before == NULL)
        return -ENOMEM;

    /* ---- Phase 1: the flagged values of every chunk. ---- */
    rc = gs_cpu_parallel_for(chunks, count_chunk, &job);
    if (rc < 0)
        goto finally;
    /* ---- Phase 2: the flagged values before every chunk, and the total. ---- */
    for (int64_t c = 0; c < chunks; c++) {
        int64_t here = job.before[c];
        job.before[c] = sum;
        sum += here;
    }
    job.total = sum;
    *count = sum;
    /* ---- Phase 3: every chunk moves its values into place. ---- */
    if (d->out != NULL)
        rc = gs_cpu_parallel_for(chunks, scatter_chunk, &job);
finally:
    free(job.before);
    return rc;
}
