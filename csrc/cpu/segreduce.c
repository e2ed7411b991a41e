/*
 * cpu/segreduce.c - gs_cpu_segreduce and gs_cpu_heads: the CPU backend's segmented reductions
 * and the segment heads of a flag array.
 *
 * Level: backend (CPU).  Sees gs_segreduce_desc and gs_split_desc (gpuscan/desc.h)
 * over flat buffers.  A segment is one reduction of one row by gs_cpu_reduce (cpu/reduce.c), so
 * its bits are those of reducing its values alone: the same on every run, thread count and
 * grouping of segments into tasks, integers and min/max as NumPy's, float add within
 * (log2(len) + 2) eps sum|x|.
 *
 * Tasks take runs of consecutive short segments (about GS_SEG_TASK_VALUES values each); a long
 * segment is left out of them and reduced afterwards by the calling thread, whose gs_cpu_reduce
 * then has the pool to itself (a reduction called from a task runs on that task's thread).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "gpuscan/config.h"

/* Values of short segments per task: tens of microseconds of work, far above a task's hand-out
 * cost, and small enough to balance uneven segments over the threads. */
#define GS_SEG_TASK_VALUES 65536
/* A segment at least this long is reduced on its own by all the threads (gs_cpu_reduce
 * parallelises from 65536 values; below a few times that, tasks of segments do better). */
#define GS_SEG_LONG (1 << 20)
/* Flags per task of the heads' two passes. */
#define GS_HEADS_CHUNK 65536
/* Below this many bytes of input (values, flags or indices) a call's tasks run on the calling
 * thread, with no worker woken: 1 MiB, as cpu/reduce.c's GS_CPU_PARALLEL_MIN_BYTES, is read in
 * tens of microseconds by one thread, about what handing tasks to a worker costs on a busy host. */
#define GS_SEG_PARALLEL_MIN_BYTES (1 << 20)

/* fn(ctx, t) for every task t: on the pool for `bytes` of input from GS_SEG_PARALLEL_MIN_BYTES
 * on, else in order on this thread.  Tasks write disjoint results, so where they run changes no
 * bit. */
static void gs_seg_for(int64_t bytes, int64_t ntasks, void (*fn)(void *ctx, int64_t task),
                       void *ctx)
{
    if (bytes >= GS_SEG_PARALLEL_MIN_BYTES && ntasks > 1) {
        gs_cpu_parallel_for(ntasks, fn, ctx);
        return;
    }
    for (int64_t t = 0; t < ntasks; t++)
        fn(ctx, t);
}

typedef struct gs_seg_job {
    const gs_segreduce_desc *d;
    gs_cpu_short sh; /* the reduction of a segment of one chunk at most */
    size_t in_size, out_size;
    int64_t per_task; /* segments per task */
    atomic_int rc;    /* the first failure of a task (a negative errno), else 0 */
    atomic_int longs; /* whether a task left a long segment for later */
} gs_seg_job;

/* Segment s: [*start, *end). */
static void gs_seg_bounds(const gs_segreduce_desc *d, int64_t s, int64_t *start, int64_t *end)
{
    *start = d->starts[s];
    if (d->ends != NULL)
        *end = d->ends[s];
    else
        *end = s + 1 < d->nseg ? d->starts[s + 1] : d->n;
}

/* Reduce segment s, [start, end), into its output (0 or a negative errno): one of a chunk at
 * most by the settled short reduction, a longer one by gs_cpu_reduce (a row's bits either way). */
static int gs_seg_one(const gs_seg_job *j, int64_t s, int64_t start, int64_t end)
{
    const gs_segreduce_desc *d = j->d;
    const char *in = (const char *)d->in + start * (int64_t)j->in_size;
    char *out = (char *)d->out + s * (int64_t)j->out_size;
    gs_reduce_desc r;

    if (end - start >= 1 && end - start <= GS_REDUCE_MIN_CHUNK) {
        gs_cpu_reduce_short(&j->sh, in, end - start, out);
        return 0;
    }
    memset(&r, 0, sizeof(r));
    r.in = in;
    r.out = out;
    r.rows = 1;
    r.row_len = end - start;
    r.in_type = d->in_type;
    r.out_type = d->out_type;
    r.op = d->op;
    return gs_cpu_reduce(&r);
}

/* Task t: its run of segments, the long ones left for later. */
static void gs_seg_task(void *ctx, int64_t task)
{
    gs_seg_job *j = ctx;
    const int64_t first = task * j->per_task;
    const int64_t last = first + j->per_task < j->d->nseg ? first + j->per_task : j->d->nseg;
    int64_t start, end;
    int rc, ok = 0;

    for (int64_t s = first; s < last; s++) {
        gs_seg_bounds(j->d, s, &start, &end);
        if (end - start >= GS_SEG_LONG)
            atomic_store_explicit(&j->longs, 1, memory_order_relaxed);
        else if ((rc = gs_seg_one(j, s, start, end)) < 0)
            atomic_compare_exchange_strong(&j->rc, &ok, rc);
    }
}

int gs_cpu_segreduce(const gs_segreduce_desc *d)
{
    gs_seg_job j;
    gs_reduce_desc r;
    int64_t start, end;

    if (d == NULL || d->n < 0 || d->nseg < 0 || d->in_type < 0 || d->in_type >= GS_NDTYPES ||
        d->out_type < 0 || d->out_type >= GS_NDTYPES ||
        (d->nseg > 0 && (d->in == NULL || d->out == NULL || d->starts == NULL)))
        return -EINVAL;
    if (d->nseg == 0)
        return 0;
    memset(&j, 0, sizeof(j));
    memset(&r, 0, sizeof(r));
    r.in_type = d->in_type;
    r.out_type = d->out_type;
    r.op = d->op; /* a segment's sum from its first value: plus_zero 0 */
    if (gs_cpu_short_init(&j.sh, &r) < 0)
        return -EINVAL;
    j.d = d;
    j.in_size = gs_dtype_size(d->in_type);
    j.out_size = gs_dtype_size(d->out_type);
    atomic_init(&j.rc, 0);
    atomic_init(&j.longs, 0);
    /* Segments per task from their mean length: the long ones, left out, count as nothing. */
    j.per_task = GS_SEG_TASK_VALUES / (d->n / d->nseg + 1) + 1;
    /* A sorted partition reads each value once at most; other segments may read one many
     * times: always on the pool. */
    gs_seg_for(d->ends == NULL ? d->n * (int64_t)j.in_size : INT64_MAX,
               (d->nseg + j.per_task - 1) / j.per_task, gs_seg_task, &j);
    /* The long segments, each on the whole pool (none: no second pass over the segments). */
    for (int64_t s = 0; atomic_load(&j.longs) && s < d->nseg && atomic_load(&j.rc) == 0; s++) {
        gs_seg_bounds(d, s, &start, &end);
        if (end - start >= GS_SEG_LONG) {
            const int rc = gs_seg_one(&j, s, start, end);
            if (rc < 0)
                return rc;
        }
    }
    return atomic_load(&j.rc);
}

/* ---- reduceat's indices ------------------------------------------------------------------- */

/* Indices per task of the check. */
#define GS_INDEX_CHUNK 65536

typedef struct gs_index_job {
    const int64_t *idx;
    int64_t m, n;
    int64_t *bad;        /* per chunk: its first bad position, or -1 */
    unsigned char *down; /* per chunk: a step that does not increase (the one into it counts) */
} gs_index_job;

static void gs_index_task(void *ctx, int64_t c)
{
    gs_index_job *j = ctx;
    const int64_t from = c * GS_INDEX_CHUNK;
    const int64_t to = from + GS_INDEX_CHUNK < j->m ? from + GS_INDEX_CHUNK : j->m;

    j->bad[c] = -1;
    j->down[c] = 0;
    for (int64_t i = from; i < to; i++) {
        if (j->bad[c] < 0 && (j->idx[i] < 0 || j->idx[i] >= j->n))
            j->bad[c] = i;
        if (i > 0 && j->idx[i] <= j->idx[i - 1])
            j->down[c] = 1;
    }
}

int gs_cpu_index_check(const int64_t *idx, int64_t m, int64_t n, int64_t *first_bad,
                       int *increasing)
{
    const int64_t chunks = (m + GS_INDEX_CHUNK - 1) / GS_INDEX_CHUNK;
    gs_index_job j = { idx, m, n, NULL, NULL };

    *first_bad = -1;
    *increasing = 1;
    if (m <= 0)
        return m < 0 ? -EINVAL : 0;
    j.bad = malloc((size_t)chunks * (sizeof(int64_t) + 1));
    if (j.bad == NULL)
        return -ENOMEM;
    j.down = (unsigned char *)(j.bad + chunks);
    gs_seg_for(m * (int64_t)sizeof(int64_t), chunks, gs_index_task, &j);
    for (int64_t c = chunks - 1; c >= 0; c--) {
        if (j.bad[c] >= 0)
            *first_bad = j.bad[c];
        if (j.down[c])
            *increasing = 0;
    }
    free(j.bad);
    return 0;
}

/* ---- Segment heads ------------------------------------------------------------------------- */

/* A flag's lanes in a 64-bit word of flags (8 / width of them): the bits that decide whether a
 * flag is set (all of them; a float's without its sign, so that -0.0 is clear and NaN set, as C's
 * comparison has them), the bits below each lane's top one, and the top ones. */
typedef struct gs_flag_lanes {
    uint64_t keep, low, top;
    int shift; /* log2 of the bits of one flag: a top bit's position >> shift is its flag */
} gs_flag_lanes;

static gs_flag_lanes gs_flag_lanes_of(gs_dtype t)
{
    const size_t w = gs_dtype_size(t);
    gs_flag_lanes l;
    l.top = w == 1   ? 0x8080808080808080ull
            : w == 2 ? 0x8000800080008000ull
            : w == 4 ? 0x8000000080000000ull
                     : 0x8000000000000000ull;
    l.low = ~l.top;
    l.keep = t == GS_FLOAT32 || t == GS_FLOAT64 ? l.low : ~0ull;
    l.shift = w == 1 ? 3 : w == 2 ? 4 : w == 4 ? 5 : 6;
    return l;
}

/* The top bit of each set flag of word w (SWAR: a lane's low bits plus `low` carry into its top
 * bit exactly when one of them is set, and never past it). */
static inline uint64_t gs_flag_bits(const gs_flag_lanes *l, uint64_t w)
{
    w &= l->keep;
    return (((w & l->low) + l->low) | w) & l->top;
}

/* Words of flags read at once before the bits are looked at: eight (64 bytes, a cache line's
 * worth) ORed together, so that a run without a set flag (most of them, where heads are sparse)
 * costs a few instructions per 64 bytes. */
#define GS_HEADS_BLOCK_WORDS 8

/* The heads among flags [from, to) (element 0 always one), counted from k: written to
 * positions[k...] unless positions is NULL; returns the count after them.  A flag is set when
 * nonzero (floats: -0.0 is zero and NaN nonzero, as C's comparison has them), read at its own
 * width: whole 64-bit words of flags a block at a time (gs_flag_bits), the few flags past the last
 * whole word one by one. */
static int64_t gs_heads_range(const gs_split_desc *d, int64_t from, int64_t to, int64_t *positions,
                              int64_t k)
{
    const size_t width = gs_dtype_size(d->flag_type);
    const unsigned char *f = (const unsigned char *)d->flags;
    const gs_flag_lanes l = gs_flag_lanes_of(d->flag_type);
    const int64_t per_word = 8 / (int64_t)width, per_block = GS_HEADS_BLOCK_WORDS * per_word;
    int64_t i = from;

    if (i == 0) { /* element 0 starts a segment whatever its flag */
        if (positions != NULL)
            positions[k] = 0;
        k++;
        i = 1;
    }
    for (; i + per_block <= to; i += per_block) {
        uint64_t w[GS_HEADS_BLOCK_WORDS], any = 0;
        for (int j = 0; j < GS_HEADS_BLOCK_WORDS; j++) {
            memcpy(&w[j], f + (i + j * per_word) * (int64_t)width, 8);
            any |= w[j];
        }
        if ((any & l.keep) == 0)
            continue;
        for (int j = 0; j < GS_HEADS_BLOCK_WORDS; j++) {
            uint64_t bits = gs_flag_bits(&l, w[j]);
            if (positions == NULL) {
                /* the top bits moved to the bottom of their bytes, the bytes summed by a
                 * multiply into the top byte (at most 8: no carry between bytes) */
                k += (int64_t)(((bits >> 7) * 0x0101010101010101ull) >> 56);
                continue;
            }
            for (; bits != 0; bits &= bits - 1)
                positions[k++] = i + j * per_word + (__builtin_ctzll(bits) >> l.shift);
        }
    }
    for (; i < to; i++) {
        uint64_t v = 0;
        memcpy(&v, f + i * (int64_t)width, width); /* little-endian: the low bytes */
        if ((v & l.keep) != 0) {
            if (positions != NULL)
                positions[k] = i;
            k++;
        }
    }
    return k;
}

typedef struct gs_heads_job {
    const gs_split_desc *d;
    int64_t *counts; /* heads per chunk, then the heads before each chunk */
    int64_t *positions;
} gs_heads_job;

/* Pass 1 (positions NULL): count chunk c's heads; pass 2: write their positions. */
static void gs_heads_task(void *ctx, int64_t c)
{
    gs_heads_job *j = ctx;
    const int64_t from = c * GS_HEADS_CHUNK;
    const int64_t to = from + GS_HEADS_CHUNK < j->d->n ? from + GS_HEADS_CHUNK : j->d->n;

    if (j->positions != NULL)
        gs_heads_range(j->d, from, to, j->positions, j->counts[c]);
    else
        j->counts[c] = gs_heads_range(j->d, from, to, NULL, 0);
}

int gs_cpu_heads(const gs_split_desc *d, int64_t *positions, int64_t *count)
{
    const int64_t chunks = (d->n + GS_HEADS_CHUNK - 1) / GS_HEADS_CHUNK;
    const int64_t bytes = d->n * (int64_t)gs_dtype_size(d->flag_type);
    gs_heads_job j = { d, NULL, NULL };
    int64_t before = 0;

    *count = 0;
    if (d->n < 0 || (d->n > 0 && d->flags == NULL))
        return -EINVAL;
    if (d->n == 0)
        return 0;
    if ((j.counts = malloc((size_t)chunks * sizeof(int64_t))) == NULL)
        return -ENOMEM;
    gs_seg_for(bytes, chunks, gs_heads_task, &j);
    for (int64_t c = 0; c < chunks; c++) {
        const int64_t k = j.counts[c];
        j.counts[c] = before;
        before += k;
    }
    *count = before;
    j.positions = positions;
    if (positions != NULL)
        gs_seg_for(bytes, chunks, gs_heads_task, &j);
    free(j.counts);
    return 0;
}
