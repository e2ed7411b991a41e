/*
 * cpu/user.c - operators you write (gpuscan.Operator) on the CPU backend's threads: the scan,
 * the reduction and the segmented reduction of gs_user_desc, run with the kernels of the
 * operator's shared object (cpu/jit.h), a chunk of values per kernel call.
 *
 * Level: backend (CPU); nothing of Python.
 *
 * Algorithm (the reduce-then-scan of cpu/scan.c).  Every row is cut into chunks of
 * gs_jit_chunk() values counted from the row's start (a number fixed by T's size); the carry
 * into a chunk is none for a row's first, else the chunk before's total (the state after its
 * last head) when it holds a head or has no carry, else the carry combined with that total.
 * The totals (phase 1) are computed from the back, the carries chained (phase 2) and the chunks
 * scanned from them (phase 3) by the front and then by every thread (scan_parallel), the
 * front scanning in one pass what it reaches first (memory-bound scans then read their input
 * once, as one thread does).  A small scan, or one thread, runs the chunks in order on the
 * calling thread.  The kernels' local states start at a chunk's first value whoever runs it, and
 * a chunk's total is the same fold in the scan kernel and in the total kernel, so the results
 * are the same bits on any number of threads (and equal the sequential left fold exactly for
 * integer operators, which are exact).
 * Rows of one chunk are tasks of many rows.  A reduction folds each chunk, then the chunks'
 * totals in order; a segmented reduction folds each segment so, segments as tasks.
 *
 * Ctrl-C (host/pool.h's gs_cpu_stopping) is asked between chunks; a stopped call's output means
 * nothing.  -ENOMEM when the per-chunk totals cannot be allocated (nothing left behind).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/claim.h"
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
    unsigned char *total, *carry, *head; /* per chunk (parallel scans and reductions) */
    /* The parallel scan's (front and back, below): */
    int64_t nchunks;
    atomic_uchar *done;       /* per chunk: its total and head are written */
    gs_cpu_ends ends;         /* the chunks claimed from the front and from the back */
    atomic_int_fast64_t next; /* the next chunk from `meet` on to scan */
    atomic_int ready;         /* `meet` and the carries from it on are written */
    int64_t meet;             /* the first chunk the front did not scan */
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

/* Rows [first, last) on this thread, chunk after chunk. */
static void scan_rows(const gs_user_job *j, int64_t first, int64_t last)
{
    unsigned char buf[2][GS_USER_MAX_SIZE], *cur = buf[0], *nxt = buf[1], *t;
    for (int64_t row = first; row < last; row++) {
        for (int64_t c = row * j->cpr; c < (row + 1) * j->cpr; c++) {
            if (j->cpr > 1 && gs_cpu_stopping())
                return;
            scan_chunk(j, c, c == row * j->cpr ? NULL : cur, nxt);
            t = cur, cur = nxt, nxt = t;
        }
    }
}

static void rows_task(void *ctx, int64_t t)
{
    const gs_user_job *j = ctx;
    int64_t first = t * j->rows_per_task;
    scan_rows(j, first, first + j->rows_per_task < j->rows ? first + j->rows_per_task : j->rows);
}

/* ==== The parallel scan (cpu/scan.c's): one thread, the front, scans the chunks from the
 * first on in one pass, exactly as one thread alone; the others, the back, compute the totals
 * of chunks from the last one down.  Where they meet, the front chains the carries of the rest
 * from those totals (computing any not written yet itself, so it never waits), then every
 * thread scans the rest from their carries.  A worker that does not run leaves the front one
 * pass over everything: never slower than one thread, and the same bits either way. */

/* The total of chunk c into total[c] and whether it holds a head (a row's last: nothing). */
static void chunk_total(gs_user_job *j, int64_t c)
{
    int64_t from, to;
    chunk_range(j, c, &from, &to);
    j->head[c] = (unsigned char)j->k->total(at(j, j->d->in, from),
                                            j->d->flags != NULL ? j->d->flags + from : NULL,
                                            to - from, j->total + (size_t)c * j->size);
}

static void front(gs_user_job *j)
{
    unsigned char buf[2][GS_USER_MAX_SIZE], *cur = buf[0], *nxt = buf[1], *t;
    int64_t c;

    while ((c = gs_cpu_claim(&j->ends, 1)) >= 0) {
        if (gs_cpu_stopping())
            goto stopped;
        scan_chunk(j, c, c % j->cpr == 0 ? NULL : cur, nxt);
        t = cur, cur = nxt, nxt = t;
    }
    j->meet = gs_cpu_ends_front(&j->ends);
    for (c = j->meet; c < j->nchunks; c++) {
        unsigned char *carry = j->carry + (size_t)c * j->size, *tot = j->total + (size_t)c * j->size;
        if (c % j->cpr != 0)
            memcpy(carry, cur, j->size);
        if (c % j->cpr == j->cpr - 1)
            continue; /* a row's last chunk passes no carry on */
        if (!atomic_load_explicit(&j->done[c], memory_order_acquire)) {
            if (gs_cpu_stopping())
                goto stopped;
            chunk_total(j, c);
        }
        if (c % j->cpr == 0 || j->head[c])
            memcpy(cur, tot, j->size);
        else
            j->k->combine(carry, tot, cur);
    }
    atomic_store_explicit(&j->ready, 1, memory_order_release);
    return;
stopped:
    j->meet = j->nchunks;
    atomic_store_explicit(&j->ready, 1, memory_order_release);
}

static void back(gs_user_job *j)
{
    int64_t c;
    while ((c = gs_cpu_claim(&j->ends, 0)) >= 0 && !gs_cpu_stopping()) {
        if (c % j->cpr != j->cpr - 1)
            chunk_total(j, c);
        atomic_store_explicit(&j->done[c], 1, memory_order_release);
    }
}

/* Task 0 is the front, the others the back; then all scan the chunks from `meet` on. */
static void scan_task(void *ctx, int64_t task)
{
    gs_user_job *j = ctx;
    unsigned char next[GS_USER_MAX_SIZE];
    int64_t c;

    if (task == 0)
        front(j);
    else
        back(j);
    if (!gs_cpu_wait(&j->ready))
        return;
    while ((c = j->meet + atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) <
               j->nchunks &&
           !gs_cpu_stopping())
        scan_chunk(j, c, c % j->cpr == 0 ? NULL : j->carry + (size_t)c * j->size, next);
}

static int scan_parallel(gs_user_job *j)
{
    int rc = 0;
    j->nchunks = j->rows * j->cpr;
    if (j->nchunks > 0xffffffff) { /* beyond the claims' 32-bit halves */
        scan_rows(j, 0, j->rows);
        return 0;
    }
    j->total = malloc((size_t)j->nchunks * j->size);
    j->carry = malloc((size_t)j->nchunks * j->size);
    j->head = malloc((size_t)j->nchunks);
    j->done = malloc((size_t)j->nchunks * sizeof(atomic_uchar));
    if (j->total == NULL || j->carry == NULL || j->head == NULL || j->done == NULL) {
        rc = -ENOMEM;
        goto done;
    }
    for (int64_t c = 0; c < j->nchunks; c++)
        atomic_init(&j->done[c], 0);
    gs_cpu_ends_init(&j->ends, j->nchunks);
    atomic_init(&j->next, 0);
    atomic_init(&j->ready, 0);
    rc = gs_cpu_parallel_for(gs_cpu_threads(), scan_task, j);
done:
    free(j->total);
    free(j->carry);
    free(j->head);
    free((void *)j->done);
    return rc;
}

int gs_cpu_user_scan(const gs_user_desc *d)
{
    gs_user_job j;
    const int64_t len = d->row_len > 0 ? d->row_len : d->n;

    if (d->n <= 0)
        return 0;
    if (d->prog->size > GS_USER_MAX_SIZE || (d->row_len > 0 && (d->n % d->row_len != 0 || d->flags != NULL)))
        return -EINVAL;
    job_init(&j, d, len, d->n / len);
    if (gs_cpu_threads() < 2 || j.rows * j.cpr < GS_USER_PARALLEL_CHUNKS) {
        scan_rows(&j, 0, j.rows);
        return 0;
    }
    if (j.cpr == 1 || j.rows >= 4 * gs_cpu_threads())
        return gs_cpu_parallel_for((j.rows + j.rows_per_task - 1) / j.rows_per_task, rows_task,
                                   &j);
    return scan_parallel(&j);
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
