/*
 * cpu/hist.c - gs_cpu_hist: the CPU backend's histogram and bincount.
 *
 * Level: backend (CPU).  Sees one gs_hist_desc (gpuscan/desc.h) over flat
 * buffers; the bin of each value comes from include/gpuscan/hist_bin.h, the same functions the CUDA
 * kernels call, so both backends count every value in the same bin.  Threads come from cpu/pool.c.
 *
 * Algorithm.  Counts and integer weights: each thread counts the chunks it takes into its own
 * histogram (the first one straight into `out`), exact in any grouping (integer sums wrap modulo
 * 2^64).  Float weights: the values are cut into fixed parts (GS_CPU_HIST_PART values, or fewer,
 * longer parts when their histograms would take too much memory), each summed in double into its
 * own histogram: a grouping of n and nbins alone, the same bits on any thread count.  Then the
 * histograms are added into `out` in order, in parallel over ranges of bins.  The `method` of the
 * descriptor does not change the result and is ignored.  bincount's probe: each thread keeps the
 * largest key of the values it counts, and the largest of those goes to out[nbins].  Ctrl-C
 * (host/pool.h's gs_cpu_stopping) is asked every GS_CPU_HIST_CHUNK values a thread counts, so a
 * stopped call ends within a chunk's work, its counts then meaning nothing.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "cpu/widen.h"
#include "gpuscan/hist_bin.h"

/* Below this many values one thread counts everything: 2^17 values are 60 us of a uint8 bincount
 * on one thread, against the 5 us or so of waking a worker on an idle core and the private
 * histograms a second thread needs (zeroed, then added). */
#define GS_CPU_HIST_PARALLEL_MIN (128 * 1024)
/* Values per chunk that a thread takes at a time when it counts: tens of microseconds, far above
 * the cost of taking one, and a thread kept off its core holds up no more than that. */
#define GS_CPU_HIST_CHUNK 16384
/* Values per part of a histogram of float sums: each part sums into its own histogram, and the
 * parts are added in order; fixed, so that the sums' grouping depends on n and nbins only (the
 * same bits on any thread count).  Results of float weights depend on this value. */
#define GS_CPU_HIST_PART 65536
/* Most bytes the private histograms of the parts other than the first may take: 64 MiB, which
 * at 65536 bins of 8 bytes is 128 parts (more than the cores of any host the package targets)
 * and limits a bincount with a large maximum to fewer parts instead of exhausting memory. */
#define GS_CPU_HIST_PRIVATE_BYTES ((int64_t)64 << 20)
/* Bins per task of the merge: 64 KiB of accumulators per part, a few microseconds of adds. */
#define GS_CPU_HIST_MERGE_BINS 8192

typedef struct gs_hist_job {
    const gs_hist_desc *d;
    int64_t hists;            /* histograms: `out`, then hists - 1 in priv */
    char *priv;               /* nbins accumulators each */
    int64_t part_len;         /* float sums: values per part (part p adds into histogram p) */
    int64_t chunks;           /* integer accumulators: chunks of GS_CPU_HIST_CHUNK values */
    atomic_int_fast64_t next; /* the next chunk to count */
    _Atomic uint64_t seen;    /* probe: the largest key the threads have counted */
} gs_hist_job;

static char gs_kind_of(gs_dtype t)
{
    char k = gs_dtype_kind(t);
    return k == 'b' ? 'u' : k;
}

/* Count values [begin, end) of d (dtype t, no weights) into counts: always inlined with t, mode
 * and et constant, so gs_hist_bin's switches fold and each combination gets a loop of its own. */
static GS_ALWAYS_INLINE void gs_hist_count_as(const gs_hist_desc *d, const gs_dtype t,
                                              const gs_hist_mode mode, const gs_dtype et,
                                              int64_t begin, int64_t end, int64_t *counts,
                                              uint64_t *seen)
{
    const char kind = gs_dtype_kind(t) == 'b' ? 'u' : gs_dtype_kind(t);
    uint64_t most = *seen;
    for (int64_t k = begin; k < end; k++) {
        int64_t xi = 0;
        uint64_t xu = 0;
        double xf = 0.0;
        gs_widen_kind_at(t, d->in, k, &xi, &xu, &xf);
        if (mode == GS_HIST_INDEX) { /* bincount: the largest key, kept or not */
            uint64_t key = gs_hist_index_key(gs_dtype_size(t), kind, xi, xu);
            most = key > most ? key : most;
        }
        int64_t bin = gs_hist_bin(d, kind, mode, et, xi, xu, xf);
        if (bin >= 0)
            counts[bin]++;
    }
    *seen = most;
}

/* gs_hist_count_as for d's mode and edge type, dtype t constant. */
static GS_ALWAYS_INLINE void gs_hist_count_modes(const gs_hist_desc *d, const gs_dtype t,
                                                 int64_t begin, int64_t end, int64_t *counts,
                                                 uint64_t *seen)
{
#define GS_COUNT(mode, et) gs_hist_count_as(d, t, mode, et, begin, end, counts, seen)
    switch (d->mode) {
    case GS_HIST_UNIFORM:
        if (d->edge_type == GS_FLOAT32)
            GS_COUNT(GS_HIST_UNIFORM, GS_FLOAT32);
        else
            GS_COUNT(GS_HIST_UNIFORM, GS_FLOAT64);
        break;
    case GS_HIST_SEARCH:
        if (d->edge_type == GS_INT64)
            GS_COUNT(GS_HIST_SEARCH, GS_INT64);
        else if (d->edge_type == GS_UINT64)
            GS_COUNT(GS_HIST_SEARCH, GS_UINT64);
        else if (d->edge_type == GS_FLOAT32)
            GS_COUNT(GS_HIST_SEARCH, GS_FLOAT32);
        else
            GS_COUNT(GS_HIST_SEARCH, GS_FLOAT64);
        break;
    case GS_HIST_INDEX:
        GS_COUNT(GS_HIST_INDEX, GS_INT64);
        break;
    default:
        GS_COUNT(GS_HIST_TABLE, GS_INT64);
        break;
    }
#undef GS_COUNT
}

/* Count (or sum the weights of) values [begin, end) into acc; without weights, *seen = the
 * largest of *seen and their bincount keys (INDEX only). */
static void gs_hist_range(const gs_hist_desc *d, int64_t begin, int64_t end, void *acc,
                          uint64_t *seen)
{
    const char kind = gs_kind_of(d->in_type);
    const gs_dtype acc_type = gs_hist_acc_type(d);
    const char wkind = d->weights != NULL ? gs_kind_of(d->w_type) : 0;
    int64_t *counts = acc;
    double *sums = acc;

    if (d->weights == NULL) {
        switch (d->in_type) {
#define GS_X_COUNT(code, ctype, sfx, kind, npy)                 \
    case code:                                                  \
        gs_hist_count_modes(d, code, begin, end, counts, seen); \
        return;
            GS_DTYPES(GS_X_COUNT)
#undef GS_X_COUNT
        default:
            return;
        }
    }
    for (int64_t k = begin; k < end; k++) {
        int64_t xi = 0, wi = 0;
        uint64_t xu = 0, wu = 0;
        double xf = 0.0, wf = 0.0;
        gs_widen_kind_at(d->in_type, d->in, k, &xi, &xu, &xf);
        int64_t bin = gs_hist_bin(d, kind, d->mode, d->edge_type, xi, xu, xf);
        if (bin < 0)
            continue;
        gs_widen_kind_at(d->w_type, d->weights, k, &wi, &wu, &wf);
        if (acc_type == GS_FLOAT64)
            sums[bin] += wf;
        else /* wrapping integer sum: unsigned arithmetic, stored as int64 */
            counts[bin] = (int64_t)((uint64_t)counts[bin] + (wkind == 'i' ? (uint64_t)wi : wu));
    }
}

/* gs_hist_range over [begin, end) a chunk at a time, asking for a stop between chunks: the same
 * values into the same accumulators in the same order. */
static void gs_hist_span(const gs_hist_desc *d, int64_t begin, int64_t end, void *acc,
                         uint64_t *seen)
{
    for (int64_t k = begin; k < end; k += GS_CPU_HIST_CHUNK) {
        if (k > begin && gs_cpu_stopping())
            return;
        gs_hist_range(d, k, end - k < GS_CPU_HIST_CHUNK ? end : k + GS_CPU_HIST_CHUNK, acc, seen);
    }
}

/* Integer accumulators (counts, integer weights): task k adds into histogram k (the first one
 * `out`) the chunks it pulls from the shared counter: every thread takes chunks until none is
 * left, so a thread kept off its core holds up at most one chunk, and the sums are exact in any
 * grouping. */
static void gs_hist_thread_task(void *ctx, int64_t task)
{
    gs_hist_job *job = ctx;
    const gs_hist_desc *d = job->d;
    void *acc = task == 0 ? d->out : job->priv + (size_t)(task - 1) * (size_t)d->nbins * 8;
    uint64_t seen = 0, was;
    int64_t c;
    while ((c = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed)) < job->chunks &&
           !gs_cpu_stopping()) {
        int64_t begin = c * GS_CPU_HIST_CHUNK;
        gs_hist_range(d, begin, begin + GS_CPU_HIST_CHUNK < d->n ? begin + GS_CPU_HIST_CHUNK : d->n,
                      acc, &seen);
    }
    was = atomic_load_explicit(&job->seen, memory_order_relaxed);
    while (seen > was && !atomic_compare_exchange_weak_explicit(
                             &job->seen, &was, seen, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* Float sums: part p of the fixed parts adds into histogram p (the first one `out`). */
static void gs_hist_part_task(void *ctx, int64_t part)
{
    gs_hist_job *job = ctx;
    const gs_hist_desc *d = job->d;
    int64_t begin = part * job->part_len;
    int64_t end = begin + job->part_len < d->n ? begin + job->part_len : d->n;
    uint64_t unused = 0; /* float sums: weighted, never probed */
    gs_hist_span(d, begin, end,
                 part == 0 ? d->out : job->priv + (size_t)(part - 1) * (size_t)d->nbins * 8,
                 &unused);
}

/* out += histograms 1..hists-1, in order, over a range of bins. */
static void gs_hist_merge_task(void *ctx, int64_t task)
{
    const gs_hist_job *job = ctx;
    const gs_hist_desc *d = job->d;
    int64_t b0 = task * GS_CPU_HIST_MERGE_BINS;
    int64_t b1 = b0 + GS_CPU_HIST_MERGE_BINS < d->nbins ? b0 + GS_CPU_HIST_MERGE_BINS : d->nbins;
    int is_float = gs_hist_acc_type(d) == GS_FLOAT64;

    for (int64_t p = 1; p < job->hists; p++) {
        const char *h = job->priv + (size_t)(p - 1) * (size_t)d->nbins * 8;
        for (int64_t b = b0; b < b1; b++) {
            if (is_float)
                ((double *)d->out)[b] += ((const double *)h)[b];
            else
                ((uint64_t *)d->out)[b] += ((const uint64_t *)h)[b];
        }
    }
}

int gs_cpu_hist(const gs_hist_desc *d)
{
    gs_hist_job job = { .d = d };
    uint64_t seen = 0;
    const int sums = gs_hist_acc_type(d) == GS_FLOAT64;
    /* The most histograms besides `out` that GS_CPU_HIST_PRIVATE_BYTES allows. */
    const int64_t most = d->nbins > 0 ? GS_CPU_HIST_PRIVATE_BYTES / 8 / d->nbins : 0;
    int parallel = d->n >= GS_CPU_HIST_PARALLEL_MIN && gs_cpu_threads() > 1 && most >= 1;

    /* Zero bits are 0 and 0.0 alike. */
    memset(d->out, 0, (size_t)(d->nbins + (d->probe != 0)) * 8);
    if (d->n == 0 || (d->nbins == 0 && !d->probe))
        return 0;

    if (sums) {
        /* Float sums in fixed parts (of GS_CPU_HIST_PART values, longer when their histograms
         * would not fit), merged in part order: a grouping of n and nbins alone. */
        int64_t parts = (d->n + GS_CPU_HIST_PART - 1) / GS_CPU_HIST_PART;
        if (parts - 1 > most)
            parts = most + 1;
        job.part_len = (d->n + parts - 1) / parts;
        job.hists = (d->n + job.part_len - 1) / job.part_len;
    } else {
        job.chunks = (d->n + GS_CPU_HIST_CHUNK - 1) / GS_CPU_HIST_CHUNK;
        job.hists = parallel ? gs_cpu_threads() : 1;
        if (job.hists > most + 1)
            job.hists = most + 1;
        if (job.hists > job.chunks)
            job.hists = job.chunks;
    }
    if (job.hists > 1) {
        /* One thread still needs a second histogram for float sums: the parts, one at a time. */
        size_t priv = parallel || !sums ? (size_t)(job.hists - 1) : 1;
        job.priv = calloc(priv * (size_t)d->nbins, 8);
        if (job.priv == NULL)
            return -ENOMEM;
    }
    atomic_init(&job.next, 0);
    atomic_init(&job.seen, 0);

    if (!parallel && sums) {
        gs_hist_part_task(&job, 0);
        for (int64_t p = 1; p < job.hists && !gs_cpu_stopping(); p++) {
            int64_t begin = p * job.part_len;
            memset(job.priv, 0, (size_t)d->nbins * 8);
            gs_hist_span(d, begin, begin + job.part_len < d->n ? begin + job.part_len : d->n,
                         job.priv, &seen);
            for (int64_t b = 0; b < d->nbins; b++)
                ((double *)d->out)[b] += ((const double *)job.priv)[b];
        }
    } else if (!parallel) {
        gs_hist_span(d, 0, d->n, d->out, &seen);
        atomic_store_explicit(&job.seen, seen, memory_order_relaxed);
    } else {
        gs_cpu_parallel_for(job.hists, sums ? gs_hist_part_task : gs_hist_thread_task, &job);
        if (job.hists > 1)
            gs_cpu_parallel_for((d->nbins + GS_CPU_HIST_MERGE_BINS - 1) / GS_CPU_HIST_MERGE_BINS,
                                gs_hist_merge_task, &job);
    }
    free(job.priv);
    if (d->probe)
        ((uint64_t *)d->out)[d->nbins] = atomic_load_explicit(&job.seen, memory_order_relaxed);
    return 0;
}
