/*
 * cpu/user.c - operators you write (gpuscan.Operator) on the CPU backend's threads: the scan,
 * the reduction and the segmented reduction of gs_user_desc, run with the kernels of the
 * operator's shared object (cpu/jit.h), a chunk of values per kernel call.
 *
 * Level: backend (CPU); nothing of Python.
 *
 * Algorithm.  Every row is cut into chunks of gs_jit_chunk() values counted from the row's
 * start (a number fixed by T's size), scanned by cpu/chain.h's driver as cpu/scan.c's are: the
 * carry into a chunk is none for a row's first, else the chunk before's total (the state after
 * its last head) when it holds a head or has no carry, else the carry combined with that total.
 * The kernels' local states start at a chunk's first value whoever runs it, and a chunk's total
 * is the same fold in the scan kernel and in the total kernel, so the results are the same bits
 * on any number of threads (and equal the sequential left fold exactly for integer operators,
 * which are exact).
 * A reduction folds each chunk, then the chunks' totals in order (rows of one chunk: tasks of
 * many rows); a segmented reduction folds each segment so, segments as tasks.
 *
 * Ctrl-C (host/pool.h's gs_cpu_stopping) is asked between chunks; a stopped call's output means
 * nothing.  -ENOMEM when the per-chunk totals cannot be allocated (nothing left behind).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/chain.h"
#include "cpu/jit.h"

/* Below this many chunks the whole call runs on the calling thread (GS_CPU_PARALLEL_MIN's
 * reasoning, cpu/scan.c: waking a worker costs about 5 us). */
#define GS_USER_PARALLEL_CHUNKS 8
/* Segments per task of a segmented reduction. */
#define GS_USER_SEGS_PER_TASK 256

typedef struct gs_user_job {
    const gs_user_desc *d;
    const struct gs_jit_table *k;
    size_t size;
    int64_t len;   /* values per row */
    int64_t rows;  /* rows */
    int64_t chunk; /* values per chunk */
    int64_t cpr;   /* chunks per row */
    int64_t rows_per_task;
    unsigned char *total; /* per chunk (parallel reductions) */
} gs_user_job;

static void job_init(gs_user_job *j, const gs_user_desc *d, int64_t len, int64_t rows)
{
    memset(j, 0, sizeof(*j));
    j->d = d;
    j->k = d->prog->k;
    j->size = d->prog->size;
    j->len = len;
    j->rows = rows;
    j->chunk = gs_jit_chunk(j->size);
    j->cpr = len > 0 ? (len + j->chunk - 1) / j->chunk : 0;
    j->rows_per_task = len >= j->chunk ? 1 : j->chunk / (len > 0 ? len : 1);
}

/* The values [*from, *to) of chunk c (numbered row after row). */
static void chunk_range(const gs_user_job *j, int64_t c, int64_t *from, int64_t *to)
{
    int64_t row = c / j->cpr, end = (row + 1) * j->len;
    *from = row * j->len + c % j->cpr * j->chunk;
    *to = *from + j->chunk < end ? *from + j->chunk : end;
}

static const unsigned char *at(const gs_user_job *j, const void *base, int64_t i)
{
    return (const unsigned char *)base + (size_t)i * j->size;
}

static int any_head(const unsigned char *flags, int64_t n)
{
    unsigned char any = 0;
    for (int64_t i = 0; i < n; i++)
        any |= flags[i];
    return any != 0;
}

/* ==== Scans ================================================================================ */

/* Scan chunk c from carry (NULL: none) and leave in next the carry of the chunk after it. */
static void scan_chunk(const gs_user_job *j, int64_t c, const void *carry, void *next)
{
    const gs_user_desc *d = j->d;
    int64_t from, to;
    chunk_range(j, c, &from, &to);
    const unsigned char *flags = d->flags != NULL ? d->flags + from : NULL;
    j->k->scan(at(j, d->in, from), (void *)at(j, d->out, from), flags, to - from, carry,
               d->exclusive, d->identity, next);
    if (carry != NULL && (flags == NULL || !any_head(flags, to - from)))
        j->k->combine(carry, next, next);
}

/* The chunks' callbacks for cpu/chain.h's driver.  A carry: T, then a byte saying whether there
 * is one (none: a row's first chunk). */

static void chain_start(void *ctx, void *cin)
{
    const gs_user_job *j = ctx;
    ((unsigned char *)cin)[j->size] = 0;
}

static void chain_step(void *ctx, int64_t c, void *cin)
{
    const gs_user_job *j = ctx;
    _Alignas(16) unsigned char next[GS_USER_MAX_SIZE];
    scan_chunk(j, c, ((unsigned char *)cin)[j->size] ? cin : NULL, next);
    memcpy(cin, next, j->size);
    ((unsigned char *)cin)[j->size] = 1;
}

/* The total of chunk c and whether it holds a head. */
static void chain_total(void *ctx, int64_t c, void *tot, unsigned char *head)
{
    const gs_user_job *j = ctx;
    int64_t from, to;
    chunk_range(j, c, &from, &to);
    *head = (unsigned char)j->k->total(at(j, j->d->in, from),
                                       j->d->flags != NULL ? j->d->flags + from : NULL, to - from,
                                       tot);
}

static void chain_chain(void *ctx, void *cin, const void *tot, int head)
{
    const gs_user_job *j = ctx;
    unsigned char *has = (unsigned char *)cin + j->size;
    if (*has && !head) {
        j->k->combine(cin, tot, cin);
        return;
    }
    memcpy(cin, tot, j->size);
    *has = 1;
}

int gs_cpu_user_scan(const gs_user_desc *d)
{
    gs_user_job j;
    const int64_t len = d->row_len > 0 ? d->row_len : d->n;

    if (d->n <= 0)
        return 0;
    if (d->prog->size > GS_USER_MAX_SIZE ||
        (d->row_len > 0 && (d->n % d->row_len != 0 || d->flags != NULL)))
        return -EINVAL;
    job_init(&j, d, len, d->n / len);
    gs_chain ch = { .ctx = &j, .carry_size = (j.size + 1 + 15) / 16 * 16, .rows = j.rows,
                    .chunks_per_row = j.cpr, .rows_per_task = j.rows_per_task,
                    .start = chain_start, .step = chain_step, .total = chain_total,
                    .chain = chain_chain };
    return gs_chain_run(&ch, gs_cpu_threads() >= 2 && j.rows * j.cpr >= GS_USER_PARALLEL_CHUNKS);
}

/* ==== Reductions =========================================================================== */

/* out = the fold of in[0, len) (len >= 1), chunk by chunk: the chunks' totals in order. */
static void fold_row(const gs_user_job *j, const unsigned char *in, int64_t len, void *out)
{
    unsigned char t[GS_USER_MAX_SIZE];
    j->k->fold(in, len < j->chunk ? len : j->chunk, out);
    for (int64_t from = j->chunk; from < len; from += j->chunk) {
        j->k->fold(in + (size_t)from * j->size, len - from < j->chunk ? len - from : j->chunk, t);
        j->k->combine(out, t, out);
    }
}

/* out = the start (initial, else the identity for an empty row) then the row's values. */
static void reduce_row(const gs_user_job *j, int64_t row, void *out)
{
    const gs_user_desc *d = j->d;
    if (j->len == 0) {
        memcpy(out, d->initial != NULL ? d->initial : d->identity, j->size);
        return;
    }
    fold_row(j, at(j, d->in, row * j->len), j->len, out);
    if (d->initial != NULL)
        j->k->combine(d->initial, out, out);
}

static void reduce_rows_task(void *ctx, int64_t t)
{
    const gs_user_job *j = ctx;
    int64_t first = t * j->rows_per_task;
    int64_t last = first + j->rows_per_task < j->rows ? first + j->rows_per_task : j->rows;
    for (int64_t row = first; row < last && (row == first || !gs_cpu_stopping()); row++)
        reduce_row(j, row, (void *)at(j, j->d->out, row));
}

/* Phase 1 of a reduction of few long rows: the fold of chunk c. */
static void reduce_chunk_task(void *ctx, int64_t c)
{
    gs_user_job *j = ctx;
    int64_t from, to;
    chunk_range(j, c, &from, &to);
    j->k->fold(at(j, j->d->in, from), to - from, j->total + (size_t)c * j->size);
}

int gs_cpu_user_reduce(const gs_user_desc *d)
{
    gs_user_job j;
    int rc;

    if (d->rows <= 0)
        return 0;
    if (d->prog->size > GS_USER_MAX_SIZE || d->row_len < 0)
        return -EINVAL;
    job_init(&j, d, d->row_len, d->rows);
    if (gs_cpu_threads() < 2 || j.rows * (j.cpr > 0 ? j.cpr : 1) < GS_USER_PARALLEL_CHUNKS) {
        j.rows_per_task = j.rows;
        reduce_rows_task(&j, 0);
        return 0;
    }
    if (j.cpr <= 1 || j.rows >= 4 * gs_cpu_threads())
        return gs_cpu_parallel_for((j.rows + j.rows_per_task - 1) / j.rows_per_task,
                                   reduce_rows_task, &j);
    j.total = malloc((size_t)(j.rows * j.cpr) * j.size);
    if (j.total == NULL)
        return -ENOMEM;
    rc = gs_cpu_parallel_for(j.rows * j.cpr, reduce_chunk_task, &j);
    for (int64_t row = 0; rc == 0 && row < j.rows; row++) {
        unsigned char *out = (unsigned char *)at(&j, d->out, row);
        memcpy(out, j.total + (size_t)(row * j.cpr) * j.size, j.size);
        for (int64_t c = 1; c < j.cpr; c++)
            j.k->combine(out, j.total + (size_t)(row * j.cpr + c) * j.size, out);
        if (d->initial != NULL)
            j.k->combine(d->initial, out, out);
    }
    free(j.total);
    return rc;
}

/* ==== Segmented reductions ================================================================= */

static void seg_task(void *ctx, int64_t t)
{
    const gs_user_job *j = ctx;
    const gs_user_desc *d = j->d;
    const int64_t total = d->rows * d->nseg, first = t * GS_USER_SEGS_PER_TASK;
    const int64_t last = first + GS_USER_SEGS_PER_TASK < total ? first + GS_USER_SEGS_PER_TASK : total;
    for (int64_t i = first; i < last; i++) {
        int64_t row = i / d->nseg, s = i % d->nseg;
        int64_t start = d->starts[s], end = d->ends != NULL ? d->ends[s]
                                            : s + 1 < d->nseg ? d->starts[s + 1] : d->n;
        fold_row(j, at(j, d->in, row * d->n + start), end - start, (void *)at(j, d->out, i));
    }
}

int gs_cpu_user_segreduce(const gs_user_desc *d)
{
    gs_user_job j;
    const int64_t tasks = (d->rows * d->nseg + GS_USER_SEGS_PER_TASK - 1) / GS_USER_SEGS_PER_TASK;

    if (d->prog->size > GS_USER_MAX_SIZE || d->nseg < 0 || d->rows < 0)
        return -EINVAL;
    job_init(&j, d, d->n, d->rows);
    if (gs_cpu_threads() < 2 || d->rows * d->n < GS_USER_PARALLEL_CHUNKS * j.chunk) {
        for (int64_t t = 0; t < tasks && (t == 0 || !gs_cpu_stopping()); t++)
            seg_task(&j, t);
        return 0;
    }
    return gs_cpu_parallel_for(tasks, seg_task, &j);
}
