/*
 * cpu/split.c - gs_cpu_split: the CPU backend's split (stable partition) and compact.
 *
 * Level: backend (CPU).  Sees one gs_split_desc (gpuscan/desc.h) over flat
 * buffers; the loops live in cpu/split_body.h, stamped once per instruction set; the threads
 * come from cpu/pool.c.
 *
 * Algorithm: the values are cut into chunks of GS_CPU_SPLIT_CHUNK, then
 *   phase 1 (parallel)    each chunk counts its flagged values;
 *   phase 2 (sequential)  an exclusive scan of the counts gives each chunk the flagged values
 *                         before it, and so the unflagged ones (chunk start - flagged before);
 *   phase 3 (parallel)    each chunk copies its flagged values, in order, to
 *                         out[flagged before + rank] and (split) its unflagged ones to
 *                         out[total + unflagged before + rank].
 * On one thread (or a small input) a compact is phase 3 alone, one pass from the start (a split
 * still counts first, to know where its unflagged values begin); on several, a compact is one
 * pass too (compact_parallel: one thread moves from the start while the others count from the
 * end).  Stable, and the same bytes
 * whatever the thread count.  Values are moved as bits of their width (NaN payloads kept); a flag
 * is set when it compares unequal to zero in its own dtype (cpu/flags.h: for floats -0.0 is not
 * set, NaN is).  With d->out == NULL only phases 1 and 2 run: the count, which a compact needs to
 * size its output.  Ctrl-C (host/pool.h's gs_cpu_stopping) is asked before every chunk that a
 * thread counts or moves within a longer task, so a stopped call ends within a chunk's work,
 * its output then meaning nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/claim.h"
#include "cpu/cpu.h"
#include "cpu/flags.h"
#include "cpu/simd.h"

/* Values per chunk: 64 Ki values are tens of microseconds of work, far above the cost of a task,
 * and 2^28 values make 4096 counts, a negligible sequential phase 2. */
#define GS_CPU_SPLIT_CHUNK (64 * 1024)
/* Below this many values one thread does everything, with no worker woken: 2^17 values are two
 * chunks, and 60 us of an int32 compact with half the flags set on one thread, against the 5 us
 * or so of waking a worker on an idle core. */
#define GS_CPU_SPLIT_PARALLEL_MIN (2 * GS_CPU_SPLIT_CHUNK)

#define GS_PASTE(a, b) gs_cpu_split_##a##_##b
#define GS_NAME2(a, b) GS_PASTE(a, b)
#define GS_NAME(a) GS_NAME2(a, GS_ISA)

#define GS_CPU_BODY "cpu/split_body.h"
#define GS_CPU_ISA_ONLY
#include "cpu/stamp_isa.h"
#undef GS_CPU_ISA_ONLY
#undef GS_CPU_BODY

/* What cpu/split_body.h provides for each instruction set. */
typedef struct gs_split_kernels {
    int64_t (*count)(const void *flags, gs_dtype t, int64_t from, int64_t to);
    int64_t (*move)(const gs_split_desc *d, int64_t from, int64_t to, int64_t f, int64_t u);
} gs_split_kernels;

static const gs_split_kernels gs_split_of[GS_NISA] = {
    [GS_ISA_BASE] = { GS_NAME2(count, base), GS_NAME2(move, base) },
#if GS_CPU_X86
    [GS_ISA_AVX2] = { GS_NAME2(count, avx2), GS_NAME2(move, avx2) },
    [GS_ISA_AVX512] = { GS_NAME2(count, avx512), GS_NAME2(move, avx512) },
#endif
};

typedef struct split_job {
    const gs_split_desc *d;
    const gs_split_kernels *k;
    int64_t chunks;
    int64_t *before; /* per chunk: the flagged values before it (a split: first its count) */
    int64_t total;
    /* A compact's one-pass parallel move (compact_parallel): */
    int64_t *count;           /* per chunk: its flagged values, counted by the back */
    atomic_uchar *done;       /* per chunk: its count is written */
    gs_cpu_ends ends;         /* the chunks claimed from the front and from the back */
    atomic_int_fast64_t next; /* the next chunk from `meet` on to move */
    atomic_int ready;         /* `meet` and the offsets from it on are written */
    int64_t meet;             /* the first chunk the front did not move */
} split_job;

static void chunk_range(const split_job *job, int64_t chunk, int64_t *lo, int64_t *hi)
{
    *lo = chunk * GS_CPU_SPLIT_CHUNK;
    *hi = *lo + GS_CPU_SPLIT_CHUNK < job->d->n ? *lo + GS_CPU_SPLIT_CHUNK : job->d->n;
}

/* ==== A split (or a count) on several threads: count, offsets, move ======================== */
static void count_chunk(void *ctx, int64_t chunk)
{
    split_job *job = ctx;
    int64_t lo, hi;
    chunk_range(job, chunk, &lo, &hi);
    job->before[chunk] = job->k->count(job->d->flags, job->d->flag_type, lo, hi);
}

static void scatter_chunk(void *ctx, int64_t chunk)
{
    split_job *job = ctx;
    int64_t lo, hi, f = job->before[chunk];
    chunk_range(job, chunk, &lo, &hi);
    job->k->move(job->d, lo, hi, f, job->total + (lo - f));
}

/* ==== A compact on several threads, in one pass ============================================
 * As the scan's (cpu/scan.c): the front moves chunks from the first one on, knowing where each
 * goes (after the flagged values it has moved), while the back counts chunks from the last one
 * down; where they meet, the front adds up the offsets of the remaining chunks (counting any
 * not counted yet itself), and every thread moves the rest.  A worker that does not run leaves
 * the front with the single pass of one thread. */
static void compact_task(void *ctx, int64_t task)
{
    split_job *job = ctx;
    int64_t c, lo, hi;

    if (task == 0) {
        int64_t f = 0;
        while ((c = gs_cpu_claim(&job->ends, 1)) >= 0) {
            if (gs_cpu_stopping())
                goto stopped;
            chunk_range(job, c, &lo, &hi);
            f += job->k->move(job->d, lo, hi, f, 0);
        }
        job->meet = gs_cpu_ends_front(&job->ends);
        for (c = job->meet; c < job->chunks; c++) {
            int64_t here;
            chunk_range(job, c, &lo, &hi);
            if (atomic_load_explicit(&job->done[c], memory_order_acquire))
                here = job->count[c];
            else if (gs_cpu_stopping())
                goto stopped;
            else
                here = job->k->count(job->d->flags, job->d->flag_type, lo, hi);
            job->before[c] = f;
            f += here;
        }
        job->total = f;
        atomic_store_explicit(&job->ready, 1, memory_order_release);
    } else {
        while ((c = gs_cpu_claim(&job->ends, 0)) >= 0 && !gs_cpu_stopping()) {
            chunk_range(job, c, &lo, &hi);
            job->count[c] = job->k->count(job->d->flags, job->d->flag_type, lo, hi);
            atomic_store_explicit(&job->done[c], 1, memory_order_release);
        }
    }
    if (!gs_cpu_wait(&job->ready))
        return;
    while ((c = job->meet + atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed)) <
               job->chunks &&
           !gs_cpu_stopping()) {
        chunk_range(job, c, &lo, &hi);
        job->k->move(job->d, lo, hi, job->before[c], 0);
    }
    return;
stopped: /* nothing left for the others to move */
    job->meet = job->chunks;
    job->total = 0;
    atomic_store_explicit(&job->ready, 1, memory_order_release);
}

static int compact_parallel(split_job *job, int64_t *count)
{
    int rc = -ENOMEM;
    job->count = malloc((size_t)job->chunks * sizeof(int64_t));
    job->done = malloc((size_t)job->chunks * sizeof(atomic_uchar));
    if (job->count == NULL || job->done == NULL)
        goto finally;
    for (int64_t c = 0; c < job->chunks; c++)
        atomic_init(&job->done[c], 0);
    gs_cpu_ends_init(&job->ends, job->chunks);
    atomic_init(&job->next, 0);
    atomic_init(&job->ready, 0);
    rc = gs_cpu_parallel_for(gs_cpu_threads(), compact_task, job);
    *count = job->total;
finally:
    free(job->count);
    free((void *)job->done);
    return rc;
}

int gs_cpu_split(const gs_split_desc *d, int64_t *count)
{
    split_job job = { .d = d };
    int64_t sum = 0;
    int rc = 0;

    *count = 0;
    if (d->n == 0)
        return 0;
    job.k = &gs_split_of[gs_cpu_isa()];
    job.chunks = (d->n + GS_CPU_SPLIT_CHUNK - 1) / GS_CPU_SPLIT_CHUNK;

    if (d->n < GS_CPU_SPLIT_PARALLEL_MIN || gs_cpu_threads() == 1) {
        /* One thread: a compact moves in one pass; a split counts first, to know where its
         * unflagged values begin.  Chunk after chunk, asking for a stop between them. */
        int64_t f = 0, lo, hi;
        if (d->out == NULL || !d->compact) {
            for (int64_t c = 0; c < job.chunks && !gs_cpu_stopping(); c++) {
                chunk_range(&job, c, &lo, &hi);
                f += job.k->count(d->flags, d->flag_type, lo, hi);
            }
            *count = f;
            if (d->out == NULL)
                return 0;
        }
        job.total = d->compact ? 0 : *count;
        f = 0;
        for (int64_t c = 0; c < job.chunks && !gs_cpu_stopping(); c++) {
            chunk_range(&job, c, &lo, &hi);
            f += job.k->move(d, lo, hi, f, job.total + (lo - f));
        }
        *count = f;
        return 0;
    }

    job.before = malloc((size_t)job.chunks * sizeof(int64_t));
    if (job.before == NULL)
        return -ENOMEM;
    if (d->out != NULL && d->compact) {
        rc = compact_parallel(&job, count);
        goto finally;
    }

    /* ---- Phase 1: the flagged values of every chunk. ---- */
    rc = gs_cpu_parallel_for(job.chunks, count_chunk, &job);
    if (rc < 0)
        goto finally;
    /* ---- Phase 2: the flagged values before every chunk, and the total. ---- */
    for (int64_t c = 0; c < job.chunks; c++) {
        int64_t here = job.before[c];
        job.before[c] = sum;
        sum += here;
    }
    job.total = sum;
    *count = sum;
    /* ---- Phase 3: every chunk moves its values into place. ---- */
    if (d->out != NULL)
        rc = gs_cpu_parallel_for(job.chunks, scatter_chunk, &job);
finally:
    free(job.before);
    return rc;
}
