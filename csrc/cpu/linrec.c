/*
 * cpu/linrec.c - gs_cpu_linrec: the CPU backend's first-order linear recurrences.
 *
 * Level: backend (CPU).  Sees one gs_linrec_desc (gpuscan/desc.h) over flat
 * buffers; the pair operator and the double-double arithmetic are gpuscan/linrec.h's, shared
 * with the CUDA kernels.
 *
 * Algorithm.  Each row is cut into chunks of GS_LR_CHUNK steps counted from the row's first step
 * (its last one when reversed), and then
 *   phase 1 (parallel)    each chunk but a row's last folds its steps into the pair (A, B) of
 *                         the map h -> A h + B it applies;
 *   phase 2 (sequential)  each row carries h across its chunks: H[0] = h0, H[c+1] = A[c] H[c] +
 *                         B[c];
 *   phase 3 (parallel)    each chunk runs its steps from H[c] and writes h.
 * A row of one chunk has phase 3 alone, and tasks then take whole rows, several short ones each.
 * float64 steps run in double-double numbers (about 106 bits), float32 ones in double (53 bits,
 * 29 more than float32 keeps), and the carries in double-double: a step rounds far below the
 * output's eps, so h is within a few units of its last place of the exact value (the contract
 * allows 4 (log2 n + 2) eps m[t]), and the chunks, which depend on row_len only, never change
 * more than those units: the bits are the same on every run and every GPUSCAN_NUM_THREADS.
 *
 * A step from h = 0 is the step by step loop's own a*0 + b (NaN for an infinite or NaN a); the
 * pair operator's zero rules (gpuscan/linrec.h) keep an overflowed product from turning an exact
 * zero into NaN.  On -ENOMEM (the chunks' pairs could not be allocated) nothing was written.
 */
#include <errno.h>
#include <stdlib.h>

#include "cpu/cpu.h"
#include "gpuscan/linrec.h"

/* Steps per chunk: ~100 microseconds of double-double work, far above a task's hand-out cost, and
 * small enough to spread one long row over every thread.  The results' lowest bits depend on
 * it (the carries are rounded to double-double at chunk boundaries). */
#define GS_LR_CHUNK 16384

typedef struct gs_lr_job {
    const gs_linrec_desc *d;
    int64_t rows;
    int64_t chunks;        /* per row */
    int64_t rows_per_task; /* when a row is one chunk */
    gs_dd *A, *B, *H;      /* per chunk of every row: its pair (phase 1), its carry (phase 2) */
} gs_lr_job;

/* Value i of a float32 or float64 buffer, as a double. */
static inline double gs_lr_load(gs_dtype t, const void *p, int64_t i)
{
    return t == GS_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* The memory index of step s of row r, and the stride between steps. */
static inline int64_t gs_lr_first(const gs_linrec_desc *d, int64_t r, int64_t s, int64_t *step)
{
    *step = d->reverse ? -1 : 1;
    return r * d->row_len + (d->reverse ? d->row_len - 1 - s : s);
}

/* The steps [from, to) of row r folded into the pair (*A, *B) (phase 1). */
static void gs_lr_fold(const gs_linrec_desc *d, int64_t r, int64_t from, int64_t to, gs_dd *A,
                       gs_dd *B)
{
    int64_t step, i = gs_lr_first(d, r, from, &step);

    if (d->type == GS_FLOAT32) { /* in double: a float32 value's error stays far below eps32 */
        const float *pa = d->a, *pb = d->b;
        double a2 = 1.0, b2 = 0.0;
        for (int64_t s = from; s < to; s++, i += step)
            gs_lr_compose_f64(&a2, &b2, pa[i], (double)pa[i] * 0.0 + pb[i]);
        *A = gs_dd_of(a2);
        *B = gs_dd_of(b2);
        return;
    }
    const double *pa = d->a, *pb = d->b;
    *A = gs_dd_of(1.0);
    *B = gs_dd_of(0.0);
    for (int64_t s = from; s < to; s++, i += step)
        gs_lr_compose_dd(A, B, gs_dd_of(pa[i]), gs_dd_of(pa[i] * 0.0 + pb[i]));
}

/* The steps [from, to) of row r run from h (phase 3): each h written, rounded once. */
static void gs_lr_run(const gs_linrec_desc *d, int64_t r, int64_t from, int64_t to, gs_dd h)
{
    int64_t step, i = gs_lr_first(d, r, from, &step);

    if (d->type == GS_FLOAT32) {
        const float *pa = d->a, *pb = d->b;
        float *ph = d->h;
        double v = h.hi + h.lo;
        for (int64_t s = from; s < to; s++, i += step) {
            const double a = pa[i], b = pb[i];
            v = v == 0.0 ? a * 0.0 + b : fma(a, v, b);
            ph[i] = (float)v;
        }
        return;
    }
    const double *pa = d->a, *pb = d->b;
    double *ph = d->h;
    for (int64_t s = from; s < to; s++, i += step) {
        h = h.hi == 0.0 ? gs_dd_of(pa[i] * 0.0 + pb[i])
                        : gs_dd_add(gs_dd_mul(gs_dd_of(pa[i]), h), gs_dd_of(pb[i]));
        ph[i] = h.hi + h.lo;
    }
}

/* h0 of row r (0 when not given). */
static gs_dd gs_lr_h0(const gs_linrec_desc *d, int64_t r)
{
    return gs_dd_of(d->h0 != NULL ? gs_lr_load(d->type, d->h0, r) : 0.0);
}

/* The steps of chunk c of a row: [*from, *to). */
static void gs_lr_chunk(const gs_lr_job *j, int64_t c, int64_t *from, int64_t *to)
{
    *from = c * GS_LR_CHUNK;
    *to = *from + GS_LR_CHUNK < j->d->row_len ? *from + GS_LR_CHUNK : j->d->row_len;
}

/* Tasks of whole rows, each run from its h0. */
static void gs_lr_rows_task(void *ctx, int64_t task)
{
    const gs_lr_job *j = ctx;
    const int64_t first = task * j->rows_per_task;
    const int64_t last = first + j->rows_per_task < j->rows ? first + j->rows_per_task : j->rows;

    for (int64_t r = first; r < last; r++)
        gs_lr_run(j->d, r, 0, j->d->row_len, gs_lr_h0(j->d, r));
}

/* ==== Phase 1: each chunk's pair (a row's last chunk needs none) ========================= */
static void gs_lr_phase1(void *ctx, int64_t k)
{
    const gs_lr_job *j = ctx;
    int64_t from, to;

    if (k % j->chunks == j->chunks - 1)
        return;
    gs_lr_chunk(j, k % j->chunks, &from, &to);
    gs_lr_fold(j->d, k / j->chunks, from, to, &j->A[k], &j->B[k]);
}

/* ==== Phase 2: the carries, row by row, chunk after chunk ================================ */
static void gs_lr_phase2(const gs_lr_job *j)
{
    for (int64_t r = 0; r < j->rows; r++) {
        gs_dd unused = gs_dd_of(1.0), h = gs_lr_h0(j->d, r);
        j->H[r * j->chunks] = h;
        for (int64_t c = 1; c < j->chunks; c++) {
            /* A chunk's pair applied to the carry: the B part of (1, h) . (A, B). */
            gs_lr_compose_dd(&unused, &h, j->A[r * j->chunks + c - 1], j->B[r * j->chunks + c - 1]);
            j->H[r * j->chunks + c] = h;
        }
    }
}

/* ==== Phase 3: each chunk runs from its carry ============================================ */
static void gs_lr_phase3(void *ctx, int64_t k)
{
    const gs_lr_job *j = ctx;
    int64_t from, to;

    gs_lr_chunk(j, k % j->chunks, &from, &to);
    gs_lr_run(j->d, k / j->chunks, from, to, j->H[k]);
}

int gs_cpu_linrec(const gs_linrec_desc *d)
{
    gs_lr_job j = { 0 };

    if (d == NULL || d->n < 0 || d->row_len < 1 || d->n % d->row_len != 0 ||
        (d->type != GS_FLOAT32 && d->type != GS_FLOAT64) ||
        (d->n > 0 && (d->a == NULL || d->b == NULL || d->h == NULL)))
        return -EINVAL;
    if (d->n == 0)
        return 0;
    j.d = d;
    j.rows = d->n / d->row_len;
    j.chunks = (d->row_len + GS_LR_CHUNK - 1) / GS_LR_CHUNK;
    if (j.chunks == 1) {
        j.rows_per_task = GS_LR_CHUNK / d->row_len;
        gs_cpu_parallel_for((j.rows + j.rows_per_task - 1) / j.rows_per_task, gs_lr_rows_task, &j);
        return 0;
    }
    /* The pairs are computed before any h is written, so h may be a or b itself. */
    const int64_t nchunks = j.rows * j.chunks;
    j.A = malloc((size_t)nchunks * 3 * sizeof(gs_dd));
    if (j.A == NULL)
        return -ENOMEM;
    j.B = j.A + nchunks;
    j.H = j.B + nchunks;
    gs_cpu_parallel_for(nchunks, gs_lr_phase1, &j);
    gs_lr_phase2(&j);
    gs_cpu_parallel_for(nchunks, gs_lr_phase3, &j);
    free(j.A);
    return 0;
}
