/*
 * cpu/scan.c - gs_cpu_scan: the CPU backend's prefix scan, plain, per row and segmented.
 *
 * Level: backend (CPU).  Sees one gs_scan_desc (include/gpuscan/backend_api.h) over flat
 * buffers; the loops over values live in cpu/scan_body.h, stamped out once per dtype; the threads
 * come from cpu/pool.c.
 *
 * Algorithm (the classic reduce-then-scan).  A scan is cut into independent scans ("rows": the
 * rows of row_len, or the whole array), each row into chunks of GS_CPU_CHUNK values counted from
 * the row's start, and then:
 *   phase 1 (parallel)    each chunk reduces its values: the total after its last segment head,
 *                         and whether it holds one;
 *   phase 2 (sequential)  a scan of the chunk totals gives each chunk its carry-in;
 *   phase 3 (parallel)    each chunk scans its values starting from its carry-in, restarting
 *                         from the identity at every segment head.
 * Rows no longer than a chunk skip phases 1 and 2: each is one chunk, and tasks take many rows.
 *
 * Guarantees:
 *  - the chunks depend on n and row_len only, never on the thread count, so every result is the
 *    same bits on every run, machine and GPUSCAN_NUM_THREADS; a row gives the bits that scanning
 *    it alone would give;
 *  - integers are bit-identical to NumPy; so are float min/max (the first NaN met, with its bits);
 *  - float add keeps (hi, lo) compensated pairs in the loops, the chunk totals and the carries,
 *    and rounds once per output: |error| <= ~1.5 eps * sum|x| at any n (contract: (log2 n + 2)
 *    eps * sum|x|);
 *  - float mul is the running product, each output after exactly i roundings, as in NumPy;
 *  - small inputs run on the calling thread with no thread involved;
 *  - on -ENOMEM (the carries could not be allocated) nothing was written and nothing is left.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "cpu/cpu.h"

#if FLT_EVAL_METHOD != 0
#error "the compensated float add needs every operation rounded to its own type (SSE2, not x87)"
#endif

/* Values per chunk, the unit of work of phases 1 and 3 and of the carries.  4096 values are a few
 * microseconds of work, far above the cost of handing out a task, and keep float add's summed
 * compensation term exact enough: its own rounding stays below (4096 u)^2 <= eps/2 of sum|x|.
 * Results depend on this value: changing it changes float add's low bits. */
#define GS_CPU_CHUNK 4096
/* Below this many values the whole scan runs on the calling thread: 16 chunks are well under a
 * millisecond, less than waking the workers is worth. */
#define GS_CPU_PARALLEL_MIN (16 * GS_CPU_CHUNK)
/* Values widened per block when bool/int8..uint32 are added or multiplied into 64 bits: 2 KiB of
 * uint64 on the stack, which stays in L1 between the conversion and the loop. */
#define GS_CPU_WIDEN_BLOCK 256

#define GS_PASTE(a, b) gs_cpu_##a##_##b
#define GS_NAME(a, b) GS_PASTE(a, b)

/* A running value: hi, plus float add's compensation term lo (zero for every other op). */
typedef struct gs_carry {
    gs_val hi;
    gs_val lo;
} gs_carry;

/* What cpu/scan_body.h provides for each dtype. */
typedef struct gs_kernels {
    /* fold in[0, len) into *c; with out != NULL also write the (in/ex)clusive scan there */
    void (*apply)(gs_op op, const void *in, void *out, int64_t len, int exclusive, gs_carry *c);
    void (*identity)(gs_op op, gs_carry *c);
    void (*combine)(gs_op op, gs_carry *acc, const gs_carry *x);
    char kind;
} gs_kernels;

/* ---- The loops, one body per dtype, in GS_DTYPES order ---------------------------------- */

#define GS_CPU_BODY "cpu/scan_body.h"
#include "cpu/stamp.h"
#undef GS_CPU_BODY

/* The kernel table, indexed by gs_dtype; a dtype added to GS_DTYPES without its body above fails
 * to compile here (and cpu/stamp.h checks each body's kind letter and size). */
#define GS_X_KERNELS(code, ctype, sfx, kind, npy) \
    [code] = { GS_NAME(apply, sfx), GS_NAME(identity, sfx), GS_NAME(combine, sfx), kind },
static const gs_kernels gs_kernels_of[GS_NDTYPES] = { GS_DTYPES(GS_X_KERNELS) };
#undef GS_X_KERNELS

/* ---- Flags and widening: the only places that look at a dtype at run time -------------- */

/* The first segment head in [from, to), or `to`.  A flag is a head when it compares unequal to
 * zero in its own dtype: any nonzero integer, a float other than +-0 (NaN included). */
static int64_t gs_next_head(const void *flags, gs_dtype t, int64_t from, int64_t to)
{
    int64_t i;
    switch (t) {
#define GS_X_NEXT(code, ctype, sfx, kind, npy)  \
    case code:                                  \
        for (i = from; i < to; i++)             \
            if (((const ctype *)flags)[i] != 0) \
                return i;                       \
        return to;
        GS_DTYPES(GS_X_NEXT)
#undef GS_X_NEXT
    default:
        return to;
    }
}

/* The last segment head in [from, to), or -1. */
static int64_t gs_last_head(const void *flags, gs_dtype t, int64_t from, int64_t to)
{
    int64_t i;
    switch (t) {
#define GS_X_LAST(code, ctype, sfx, kind, npy)  \
    case code:                                  \
        for (i = to - 1; i >= from; i--)        \
            if (((const ctype *)flags)[i] != 0) \
                return i;                       \
        return -1;
        GS_DTYPES(GS_X_LAST)
#undef GS_X_LAST
    default:
        return -1;
    }
}

/* buf[k] = in[from + k] converted value-preservingly to 64 bits, modulo 2^64 (C's conversion to
 * an unsigned type: signed values sign-extend, unsigned zero-extend; bool is 0 or 1). */
static void gs_widen(const void *in, gs_dtype t, int64_t from, int64_t len, uint64_t *buf)
{
    int64_t k;
    switch (t) {
#define GS_X_WIDEN(code, ctype, sfx, kind, npy)                             \
    case code:                                                              \
        for (k = 0; k < len; k++)                                           \
            buf[k] = kind == 'b' ? ((const ctype *)in)[from + k] != 0       \
                                 : (uint64_t)((const ctype *)in)[from + k]; \
        break;
        GS_DTYPES(GS_X_WIDEN)
#undef GS_X_WIDEN
    default:
        break;
    }
}

/* ---- One scan call ----------------------------------------------------------------------- */

typedef struct gs_scan_job {
    const gs_scan_desc *d;
    const gs_kernels *k; /* of the output dtype */
    int widen;           /* in_type != out_type: widen the input to 64 bits block by block */
    size_t in_size, out_size;
    int64_t row_len;        /* values per independent scan (n when row_len == 0) */
    int64_t rows;           /* independent scans */
    int64_t chunks_per_row; /* chunks of one row */
    int64_t rows_per_task;  /* rows of one task of phase 3 when chunks_per_row == 1 */
    gs_carry *carry;        /* per chunk: its total after phase 1, its carry-in after phase 2 */
    unsigned char *head;    /* per chunk: whether it holds a segment head (flags only) */
} gs_scan_job;

/* Fold in[from, to) into *c, writing the scan to out[from, to) when `store`; no head inside. */
static void gs_apply(const gs_scan_job *j, int64_t from, int64_t to, int store, gs_carry *c)
{
    const gs_scan_desc *d = j->d;
    if (!j->widen) {
        j->k->apply(d->op, (const char *)d->in + from * j->in_size,
                    store ? (char *)d->out + from * j->out_size : NULL, to - from, d->exclusive, c);
        return;
    }
    uint64_t buf[GS_CPU_WIDEN_BLOCK];
    for (int64_t pos = from; pos < to; pos += GS_CPU_WIDEN_BLOCK) {
        int64_t len = to - pos < GS_CPU_WIDEN_BLOCK ? to - pos : GS_CPU_WIDEN_BLOCK;
        gs_widen(d->in, d->in_type, pos, len, buf);
        j->k->apply(d->op, buf, store ? (uint64_t *)d->out + pos : NULL, len, d->exclusive, c);
    }
}

/* Scan [from, to) from the carry *c, restarting from the identity at each segment head, and
 * leave in *c the carry after `to`. */
static void gs_scan_range(const gs_scan_job *j, int64_t from, int64_t to, gs_carry *c)
{
    const gs_scan_desc *d = j->d;
    if (d->flags == NULL) {
        gs_apply(j, from, to, 1, c);
        return;
    }
    int64_t pos = from;
    while (pos < to) {
        int64_t next = gs_next_head(d->flags, d->flag_type, pos + 1, to);
        if (pos > from || gs_next_head(d->flags, d->flag_type, pos, pos + 1) == pos)
            j->k->identity(d->op, c);
        gs_apply(j, pos, next, 1, c);
        pos = next;
    }
}

/* The values [*from, *to) of chunk `chunk` (numbered row after row). */
static void gs_chunk_range(const gs_scan_job *j, int64_t chunk, int64_t *from, int64_t *to)
{
    int64_t row = chunk / j->chunks_per_row;
    int64_t row_end = (row + 1) * j->row_len;
    *from = row * j->row_len + chunk % j->chunks_per_row * GS_CPU_CHUNK;
    *to = *from + GS_CPU_CHUNK < row_end ? *from + GS_CPU_CHUNK : row_end;
}

/* ==== Phase 1: each chunk's total after its last head ==================================== */
static void gs_phase1(void *ctx, int64_t chunk)
{
    const gs_scan_job *j = ctx;
    const gs_scan_desc *d = j->d;
    int64_t from, to;
    if (chunk % j->chunks_per_row == j->chunks_per_row - 1)
        return; /* a row's last chunk passes no carry on */
    gs_chunk_range(j, chunk, &from, &to);
    if (d->flags != NULL) {
        int64_t last = gs_last_head(d->flags, d->flag_type, from, to);
        j->head[chunk] = last >= 0;
        if (last >= 0)
            from = last;
    }
    j->k->identity(d->op, &j->carry[chunk]);
    gs_apply(j, from, to, 0, &j->carry[chunk]);
}

/* ==== Phase 2: carry-in of each chunk, a sequential scan of the totals =================== */
static void gs_phase2(const gs_scan_job *j)
{
    const gs_scan_desc *d = j->d;
    for (int64_t row = 0; row < j->rows; row++) {
        int64_t c = row * j->chunks_per_row, last = c + j->chunks_per_row - 1;
        gs_carry acc, total;
        j->k->identity(d->op, &acc);
        for (; c < last; c++) {
            total = j->carry[c];
            j->carry[c] = acc;
            if (j->head != NULL && j->head[c])
                acc = total;
            else
                j->k->combine(d->op, &acc, &total);
        }
        j->carry[last] = acc;
    }
}

/* ==== Phase 3: each chunk scans from its carry-in ======================================== */
static void gs_phase3(void *ctx, int64_t chunk)
{
    const gs_scan_job *j = ctx;
    int64_t from, to;
    gs_chunk_range(j, chunk, &from, &to);
    gs_scan_range(j, from, to, &j->carry[chunk]);
}

/* Phase 3 alone, for rows of at most one chunk: task t scans rows_per_task whole rows. */
static void gs_short_rows(void *ctx, int64_t task)
{
    const gs_scan_job *j = ctx;
    int64_t first = task * j->rows_per_task;
    int64_t last = first + j->rows_per_task < j->rows ? first + j->rows_per_task : j->rows;
    for (int64_t row = first; row < last; row++) {
        gs_carry c;
        j->k->identity(j->d->op, &c);
        gs_scan_range(j, row * j->row_len, (row + 1) * j->row_len, &c);
    }
}

static void gs_run(int parallel, int64_t ntasks, void (*fn)(void *, int64_t), void *ctx)
{
    if (parallel) {
        gs_cpu_parallel_for(ntasks, fn, ctx);
        return;
    }
    for (int64_t t = 0; t < ntasks; t++)
        fn(ctx, t);
}

int gs_cpu_scan(const gs_scan_desc *d)
{
    gs_scan_job j = { 0 };
    int parallel, exact;

    if (d->n < 0 || d->in_type < 0 || d->in_type >= GS_NDTYPES || d->out_type < 0 ||
        d->out_type >= GS_NDTYPES || d->op < 0 || d->op >= GS_NOPS || d->row_len < 0 ||
        !gs_scan_pair_direct(d->in_type, d->out_type, d->op) ||
        (gs_dtype_is_float(d->out_type) && gs_op_is_bitwise(d->op)) ||
        (d->flags != NULL && (d->row_len > 0 || d->flag_type < 0 || d->flag_type >= GS_NDTYPES)))
        return -EINVAL;
    if (d->row_len > 0 && d->n % d->row_len != 0)
        return -EINVAL;
    if (d->n == 0)
        return 0;
    if (d->algorithm != GS_ALGO_AUTO)
        return gs_cpu_teach_scan(d);

    j.d = d;
    j.k = &gs_kernels_of[d->out_type];
    j.widen = d->in_type != d->out_type;
    if (j.widen)
        j.k = &gs_kernels_of[GS_UINT64]; /* int64 and uint64 add and mul wrap to the same bits */
    j.in_size = gs_dtype_size(d->in_type);
    j.out_size = gs_dtype_size(d->out_type);
    j.row_len = d->row_len > 0 ? d->row_len : d->n;
    j.rows = d->n / j.row_len;
    j.chunks_per_row = (j.row_len + GS_CPU_CHUNK - 1) / GS_CPU_CHUNK;
    parallel = d->n >= GS_CPU_PARALLEL_MIN && gs_cpu_threads() > 1;
    /* Every op but float add and mul is associative in exact arithmetic and in the machine's, so
     * a sequential pass that carries its running value from chunk to chunk gives the same bits
     * as the three phases, at half the reads. */
    exact = !(gs_dtype_is_float(d->out_type) && (d->op == GS_OP_ADD || d->op == GS_OP_MUL));

    if (j.chunks_per_row == 1 || (exact && !parallel)) {
        /* Every row in one piece: as many rows per task as make about one chunk of work. */
        j.rows_per_task = j.row_len >= GS_CPU_CHUNK ? 1 : GS_CPU_CHUNK / j.row_len;
        gs_run(parallel, (j.rows + j.rows_per_task - 1) / j.rows_per_task, gs_short_rows, &j);
        return 0;
    }

    int64_t nchunks = j.rows * j.chunks_per_row;
    j.carry = malloc((size_t)nchunks * sizeof(gs_carry));
    if (d->flags != NULL)
        j.head = calloc((size_t)nchunks, 1);
    if (j.carry == NULL || (d->flags != NULL && j.head == NULL)) {
        free(j.carry);
        free(j.head);
        return -ENOMEM;
    }
    gs_run(parallel, nchunks, gs_phase1, &j);
    gs_phase2(&j);
    gs_run(parallel, nchunks, gs_phase3, &j);
    free(j.carry);
    free(j.head);
    return 0;
}
