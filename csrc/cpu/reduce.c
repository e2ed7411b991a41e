/*
 * cpu/reduce.c - gs_cpu_reduce: the CPU backend's reduction of contiguous rows, and of the
 * middle of rows x row_len x inner (axes read in place).
 *
 * Level: backend (CPU).  Sees one gs_reduce_desc (gpuscan/desc.h) over flat
 * buffers; the loops over values live in cpu/reduce_body.h, stamped out once per dtype and per
 * instruction set (cpu/stamp_isa.h); the threads come from cpu/pool.c.
 *
 * Algorithm.  Each of the `rows` rows is cut into chunks of gs_reduce_chunk_len(row_len) values
 * counted from the row's start (the device's chunks, gpuscan/config.h; for the exact operators,
 * whose bits no grouping changes, chunks of at least GS_CPU_TASK_BYTES), and then:
 *   phase 1 (parallel)    each chunk folds its values into a partial (a value, plus a
 *                         compensation term for float add), a task taking a few chunks;
 *   phase 2 (sequential)  each row combines its chunks' partials in chunk order and rounds once.
 * Rows of one chunk have no phase 2: tasks take whole rows, many short ones each, in one call of
 * the loops (fold_rows).  Run on one thread, a row goes chunk after chunk through the same two
 * steps, with no buffer.  With inner > 1 each column is folded in blocks of GS_CPU_BLOCK rows,
 * the blocks combined in order (gs_reduce_cols: units of tiles of columns, or single blocks of
 * them, taken by one task per thread with that thread's scratch: a few tiles' worth, whatever
 * the number of columns).
 *
 * Guarantees:
 *  - the chunks, and the lanes and blocks inside them, depend on row_len only, never on the
 *    thread count or the instruction set, so every result is the same bits on every run,
 *    machine and GPUSCAN_NUM_THREADS, and a row (a column) gives the bits that reducing it alone
 *    would give;
 *  - integers and bool are bit-identical to NumPy (wrapping); float min/max give the first NaN of
 *    the row with its bits, else the first value equal to the extremum (the earlier of +0/-0);
 *  - float add carries TwoSum's exact errors in every lane and (hi, lo) pairs in every partial,
 *    and rounds once per row: in practice correctly rounded, and within ~2 eps * sum|x| at every
 *    row_len (contract: (log2 row_len + 2) eps * sum|x|); a sum of -0 values alone is -0 (every
 *    partial starts from -0, add's identity), +0 with plus_zero (NumPy's reduce);
 *  - float mul is a plain product in the fixed grouping: relative error <= (row_len - 1) eps;
 *  - small inputs run on the calling thread with no thread involved;
 *  - Ctrl-C (host/pool.h's gs_cpu_stopping) is asked between the chunks of a row reduced whole,
 *    and between the units and the blocks of columns a slot takes: a stopped reduction ends
 *    within a block's work (at most GS_CPU_BLOCK rows of a tile) on every thread;
 *  - memory: a partial per chunk (rows) or per block of a tile (columns, when blocks are units),
 *    at most 16 bytes per 4096 values of the input, plus 512 KiB of scratch per thread;
 *  - on -ENOMEM (the partials could not be allocated) nothing was written and nothing is left.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "cpu/simd.h"
#include "gpuscan/config.h"

#if FLT_EVAL_METHOD != 0
#error "the compensated float add needs every operation rounded to its own type (SSE2, not x87)"
#endif

/* Values per block of a float fold: lanes restart from the identity at each block, so a lane
 * folds at most GS_CPU_BLOCK / lanes values and its summed TwoSum errors stay exact enough (their
 * own rounding stays below (GS_CPU_BLOCK u)^2 <= eps/2 of sum|x|, as in cpu/scan.c); a column
 * (fold_cols) likewise restarts every GS_CPU_BLOCK rows.  Results depend on this value: changing
 * it changes float add's and mul's low bits. */
#define GS_CPU_BLOCK 4096
/* Vectors of lanes of a float fold: four 32-byte vectors (32 float32 or 16 float64 lanes), enough
 * independent chains to hide the latency of an add, a max or a min behind the loads.  Results
 * depend on it, as on GS_CPU_BLOCK. */
#define GS_CPU_LANE_VECS 4
/* Columns whose states one fold_cols block keeps: two arrays of 16384 values (256 KiB at 8
 * bytes), in L2 while the rows stream past, so that a row of 16384 values is read whole, in
 * memory order, as NumPy's own axis-0 loop reads it. */
#define GS_CPU_COLS 16384
/* Rows a column's state takes between a load and a store (cols_block): four, so that the state's
 * memory traffic is a fraction of the values'.  Results do not depend on it (each column takes its
 * rows in order). */
#define GS_CPU_COL_ROWS 4
/* Below this many bytes of input the whole reduction runs on the calling thread, with no worker
 * woken: 1 MiB (2^18 float32 values) is 64 chunks of 4096 values, 32 per thread on two
 * cores, and some 40 us of a float32 sum on one thread, against the 5 us or so of waking a worker
 * on an idle core; a uint8 max of 2^18 values takes 3 us, too little for a thread (bytes, not
 * values, measure the work). */
#define GS_CPU_PARALLEL_MIN_BYTES (1 << 20)
/* Values per task when tasks take whole rows: a few microseconds of work, far above the cost
 * of handing out a task, and small enough to balance many rows over many threads. */
#define GS_CPU_TASK_VALUES 16384
/* Bytes of input per task of phase 1 (several chunks, each still its own partial): a chunk of
 * 4096 uint8 values is only 4 KiB, read in a fraction of a microsecond, about what handing out a
 * task costs; 64 KiB a task keeps that small and still makes over a hundred tasks of 10^7
 * values to balance the threads. */
#define GS_CPU_TASK_BYTES (1 << 16)
/* Runs shorter than this fold one value at a time (rows of a few values): below one round of
 * the float lanes (GS_CPU_LANE_VECS vectors of 8 float32), padding the round and joining its
 * lanes would cost more than the values.  Results depend on it for float add and mul (the
 * grouping of a short row), as on GS_CPU_BLOCK. */
#define GS_CPU_SHORT_RUN 32
/* Values widened per block when bool/int8..uint32 are added or multiplied into 64 bits: 2 KiB of
 * uint64 on the stack, which stays in L1 between the conversion and the loop. */
#define GS_CPU_WIDEN_BLOCK 256

_Static_assert(GS_CPU_BLOCK % 32 == 0, "a block is a whole number of lane rounds of every dtype");
_Static_assert(GS_REDUCE_MIN_CHUNK % GS_CPU_BLOCK == 0, "a chunk is a whole number of blocks");

#define GS_PASTE(a, b, c) gs_cpu_reduce_##a##_##b##_##c
#define GS_NAME3(a, b, c) GS_PASTE(a, b, c)
#define GS_NAME(a, b) GS_NAME3(a, b, GS_ISA)

/* The partial of a run of values: hi, plus float add's compensation term lo (zero for every
 * other op). */
typedef struct gs_part {
    gs_val hi;
    gs_val lo;
} gs_part;

/* What cpu/reduce_body.h provides for each dtype and instruction set. */
typedef struct gs_reduce_kernels {
    /* *p = the partial of in[0, len) */
    void (*fold)(gs_op op, const void *in, int64_t len, gs_part *p);
    /* out[r] = the reduction of in[r * row_len, (r + 1) * row_len), r < nrows: fold() and
     * store() of rows of one chunk at most */
    void (*fold_rows)(gs_op op, const void *in, int64_t nrows, int64_t row_len, int plus_zero,
                      void *out);
    /* One block of rows [0, nrows) at in + r * stride of columns [0, ncols) into the column
     * accumulators acc (ncols values of the dtype, and ncols more for float add: see
     * cpu/reduce_body.h): the block's partials when `first`, else acc combined with them;
     * scratch holds 2 * ncols values of 8 bytes; `out`: NULL, or (float add and mul, `first`,
     * the only block) where the columns' values go instead of acc (plus_zero: store()'s) */
    void (*fold_cols)(gs_op op, const void *in, int64_t nrows, int64_t stride, int64_t ncols,
                      void *acc, int first, void *scratch, void *out, int plus_zero);
    /* acc = acc op x and out = the values of acc, column by column (accumulators as above) */
    void (*combine_cols)(gs_op op, void *acc, const void *x, int64_t ncols);
    void (*store_cols)(gs_op op, const void *acc, int64_t ncols, int plus_zero, void *out);
    /* fold(), fold_rows() and fold_cols() of a narrower integer dtype widened to 64 bits (uint64
     * only) */
    void (*fold_widened)(gs_op op, const void *in, gs_dtype in_type, int64_t len, gs_part *p);
    void (*fold_rows_widened)(gs_op op, const void *in, gs_dtype in_type, int64_t nrows,
                              int64_t row_len, void *out);
    void (*fold_cols_widened)(gs_op op, const void *in, gs_dtype in_type, int64_t nrows,
                              int64_t stride, int64_t ncols, void *acc, int first, void *scratch,
                              void *out);
    /* *acc = *acc op *x, x holding the values after acc's */
    void (*combine)(gs_op op, gs_part *acc, const gs_part *x);
    /* *out = the value *p stands for, rounded once (float add: last plus_zero's +0, else -0:
     * gs_reduce_desc.plus_zero) */
    void (*store)(gs_op op, const gs_part *p, int plus_zero, void *out);
    char kind;
} gs_reduce_kernels;

/* ---- The loops, one body per dtype and instruction set ----------------------------------- */

#define GS_CPU_BODY "cpu/reduce_body.h"
#include "cpu/stamp_isa.h"
#undef GS_CPU_BODY

/* The kernel tables, indexed by gs_isa and gs_dtype; a dtype added to GS_DTYPES without its body
 * above fails to compile here (and cpu/stamp.h checks each body's kind letter and size). */
#define GS_ISA_ROW(isa, code, sfx, kind)                                         \
    [code] = { GS_NAME3(fold, sfx, isa),                                         \
               GS_NAME3(fold_rows, sfx, isa),                                    \
               GS_NAME3(fold_cols, sfx, isa),                                    \
               GS_NAME3(combine_cols, sfx, isa),                                 \
               GS_NAME3(store_cols, sfx, isa),                                   \
               code == GS_UINT64 ? GS_NAME3(fold_widened, u64, isa) : NULL,      \
               code == GS_UINT64 ? GS_NAME3(fold_rows_widened, u64, isa) : NULL, \
               code == GS_UINT64 ? GS_NAME3(fold_cols_widened, u64, isa) : NULL, \
               GS_NAME3(combine, sfx, isa),                                      \
               GS_NAME3(store, sfx, isa),                                        \
               kind },
static const gs_reduce_kernels gs_kernels_of[GS_NISA][GS_NDTYPES] = GS_ISA_TABLE;
#undef GS_ISA_ROW

/* ---- One reduction call ------------------------------------------------------------------ */

typedef struct gs_reduce_job {
    const gs_reduce_desc *d;
    const gs_reduce_kernels *k; /* of the accumulation dtype */
    int widen;                  /* in_type != out_type: widen the input to 64 bits */
    size_t in_size, out_size;
    int64_t chunk_len; /* values per chunk: gs_reduce_chunk_len(row_len) (float add and mul) */
    int64_t chunks_per_row;
    int64_t rows_per_task;   /* rows of one task when tasks take whole rows */
    int64_t chunks_per_task; /* chunks of one task of phase 1 */
    int64_t nchunks;         /* chunks of every row (phase 1) */
    gs_part *part;           /* per chunk of every row: its partial (phase 1) */
} gs_reduce_job;

/* *p = the partial of chunk c of row `row`. */
static void gs_chunk(const gs_reduce_job *j, int64_t row, int64_t c, gs_part *p)
{
    const gs_reduce_desc *d = j->d;
    int64_t from = c * j->chunk_len;
    int64_t len = d->row_len - from < j->chunk_len ? d->row_len - from : j->chunk_len;
    const char *in = (const char *)d->in + (row * d->row_len + from) * (int64_t)j->in_size;

    if (j->widen)
        j->k->fold_widened(d->op, in, d->in_type, len, p);
    else
        j->k->fold(d->op, in, len, p);
}

/* Reduce row `row` whole on this thread: its chunks' partials, combined in chunk order exactly
 * as phase 2 combines them. */
static void gs_row(const gs_reduce_job *j, int64_t row)
{
    gs_part acc, p;
    gs_chunk(j, row, 0, &acc);
    for (int64_t c = 1; c < j->chunks_per_row; c++) {
        if (gs_cpu_stopping())
            return;
        gs_chunk(j, row, c, &p);
        j->k->combine(j->d->op, &acc, &p);
    }
    j->k->store(j->d->op, &acc, j->d->plus_zero, (char *)j->d->out + row * (int64_t)j->out_size);
}

/* Task t reduces rows_per_task whole rows: rows of one chunk in one call of the kernels (the
 * same fold and store as gs_row's), longer ones chunk by chunk. */
static void gs_rows_task(void *ctx, int64_t task)
{
    const gs_reduce_job *j = ctx;
    const gs_reduce_desc *d = j->d;
    int64_t first = task * j->rows_per_task;
    int64_t last = first + j->rows_per_task < d->rows ? first + j->rows_per_task : d->rows;
    if (j->chunks_per_row == 1) {
        const char *in = (const char *)d->in + first * d->row_len * (int64_t)j->in_size;
        char *out = (char *)d->out + first * (int64_t)j->out_size;
        if (j->widen)
            j->k->fold_rows_widened(d->op, in, d->in_type, last - first, d->row_len, out);
        else
            j->k->fold_rows(d->op, in, last - first, d->row_len, d->plus_zero, out);
        return;
    }
    for (int64_t row = first; row < last; row++)
        gs_row(j, row);
}

/* ==== Phase 1: each chunk's partial, chunks_per_task chunks a task ======================= */
static void gs_phase1(void *ctx, int64_t task)
{
    const gs_reduce_job *j = ctx;
    int64_t first = task * j->chunks_per_task;
    int64_t last =
        first + j->chunks_per_task < j->nchunks ? first + j->chunks_per_task : j->nchunks;
    for (int64_t chunk = first; chunk < last; chunk++)
        gs_chunk(j, chunk / j->chunks_per_row, chunk % j->chunks_per_row, &j->part[chunk]);
}

/* ==== Phase 2: each row combines its partials in chunk order ============================= */
static void gs_phase2(const gs_reduce_job *j)
{
    const gs_reduce_desc *d = j->d;
    for (int64_t row = 0; row < d->rows; row++) {
        const gs_part *part = j->part + row * j->chunks_per_row;
        gs_part acc = part[0];
        for (int64_t c = 1; c < j->chunks_per_row; c++)
            j->k->combine(d->op, &acc, &part[c]);
        j->k->store(d->op, &acc, d->plus_zero, (char *)d->out + row * (int64_t)j->out_size);
    }
}

/* ==== Columns: rows x row_len x inner, reduced over the middle ============================
 * Column c of row r is folded block by block (GS_CPU_BLOCK values of the reduced axis each) into
 * its accumulator: the first block's partial, then each next block's combined with it, in block
 * order (fold_cols).  A unit of work is a tile of columns of one row through all its blocks, or,
 * when rows times tiles are too few to keep the threads busy and the blocks are several, one
 * block of a tile, whose accumulators are kept and combined in block order afterwards: the same
 * partials combined the same way either way.  The exact operators (integers, float min and max)
 * accumulate straight into the output; float add and mul into accumulators of their own, stored
 * when the tile is done.  A task is a slot that takes units from a counter until none is left,
 * with that slot's scratch: the memory held is a few tiles per thread, whatever the number of
 * columns (and, when blocks are units, an accumulator per block: 1/4096 of the input's values). */

typedef struct gs_cols_job {
    const gs_reduce_job *j;
    int64_t inner, tile, tiles, blocks;
    int64_t units;            /* units of work */
    int split;                /* units are single blocks, their accumulators kept in `blk` */
    int direct;               /* an exact operator: the output is the accumulator */
    size_t acc_bytes;         /* a tile's accumulators: 2 * tile values of the accumulation dtype */
    char *blk;                /* split: per row, block and tile (in unit order) its accumulators */
    char *scratch;            /* per slot: a tile's accumulators, then its state (acc_bytes each) */
    atomic_int_fast64_t next; /* the next unit to take */
} gs_cols_job;

/* Unit u, with the scratch of its slot. */
static void gs_cols_unit(const gs_cols_job *cj, int64_t u, char *slot)
{
    const gs_reduce_job *j = cj->j;
    const gs_reduce_desc *d = j->d;
    int64_t t = u % cj->tiles, rb = u / cj->tiles, c0 = t * cj->tile;
    int64_t nc = cj->inner - c0 < cj->tile ? cj->inner - c0 : cj->tile;
    int64_t r = cj->split ? rb / cj->blocks : rb;
    int64_t b0 = cj->split ? rb % cj->blocks : 0, b1 = cj->split ? b0 + 1 : cj->blocks;
    char *out = (char *)d->out + (r * cj->inner + c0) * (int64_t)j->out_size;
    void *acc = cj->split ? cj->blk + u * cj->acc_bytes : cj->direct ? (void *)out : slot;
    void *state = slot + cj->acc_bytes;
    /* float add and mul of one block: the values straight to the output */
    int once = !cj->split && !cj->direct && cj->blocks == 1;

    for (int64_t b = b0; b < b1; b++) {
        if (b > b0 && gs_cpu_stopping())
            return;
        int64_t r0 = b * GS_CPU_BLOCK;
        int64_t nr = d->row_len - r0 < GS_CPU_BLOCK ? d->row_len - r0 : GS_CPU_BLOCK;
        const char *in =
            (const char *)d->in + ((r * d->row_len + r0) * cj->inner + c0) * (int64_t)j->in_size;
        if (j->widen)
            j->k->fold_cols_widened(d->op, in, d->in_type, nr, cj->inner, nc, acc, b == b0, state,
                                    NULL);
        else
            j->k->fold_cols(d->op, in, nr, cj->inner, nc, acc, b == b0, state, once ? out : NULL,
                            d->plus_zero);
    }
    if (!cj->split && !cj->direct && !once)
        j->k->store_cols(d->op, acc, nc, d->plus_zero, out);
}

/* Slot `slot`: units until none is left. */
static void gs_cols_slot(void *ctx, int64_t slot)
{
    gs_cols_job *cj = ctx;
    char *mine = cj->scratch + slot * 2 * cj->acc_bytes;
    int64_t u;
    while ((u = atomic_fetch_add_explicit(&cj->next, 1, memory_order_relaxed)) < cj->units &&
           !gs_cpu_stopping())
        gs_cols_unit(cj, u, mine);
}

static int gs_reduce_cols(const gs_reduce_job *j, int parallel)
{
    const gs_reduce_desc *d = j->d;
    gs_cols_job cj = { 0 };
    int64_t want = 2 * (int64_t)gs_cpu_threads(); /* units that keep every thread busy */
    int64_t nslots = 1;
    int rc = 0;

    /* Tiles as wide as the states allow (each row's tile read whole, in memory order).  Too few
     * of them for the threads: single blocks as units, or, with one block, narrower tiles. */
    cj.j = j;
    cj.inner = d->inner;
    cj.tile = d->inner < GS_CPU_COLS ? d->inner : GS_CPU_COLS;
    cj.blocks = (d->row_len + GS_CPU_BLOCK - 1) / GS_CPU_BLOCK;
    cj.tiles = (cj.inner + cj.tile - 1) / cj.tile;
    if (parallel && d->rows * cj.tiles < want) {
        if (cj.blocks > 1) {
            cj.split = 1;
        } else {
            cj.tile = gs_cpu_tile(cj.inner, d->rows, want, GS_CPU_COLS);
            cj.tiles = (cj.inner + cj.tile - 1) / cj.tile;
        }
    }
    cj.direct = !gs_op_rounds(d->op, d->out_type);
    cj.acc_bytes = 2 * (size_t)cj.tile * sizeof(uint64_t);
    cj.units = d->rows * (cj.split ? cj.blocks : 1) * cj.tiles;
    if (parallel)
        nslots = cj.units < gs_cpu_threads() ? cj.units : gs_cpu_threads();
    cj.scratch = malloc((size_t)nslots * 2 * cj.acc_bytes);
    if (cj.split)
        cj.blk = malloc((size_t)cj.units * cj.acc_bytes);
    if (cj.scratch == NULL || (cj.split && cj.blk == NULL)) {
        rc = -ENOMEM;
        goto finally;
    }
    atomic_init(&cj.next, 0);
    if (nslots > 1)
        rc = gs_cpu_parallel_for(nslots, gs_cols_slot, &cj);
    else
        gs_cols_slot(&cj, 0);

    /* Single blocks as units: each tile's accumulators combined in block order, then stored. */
    for (int64_t r = 0; cj.split && r < d->rows; r++) {
        for (int64_t t = 0; t < cj.tiles; t++) {
            int64_t c0 = t * cj.tile, nc = cj.inner - c0 < cj.tile ? cj.inner - c0 : cj.tile;
            char *acc = cj.blk + (r * cj.blocks * cj.tiles + t) * cj.acc_bytes;
            for (int64_t b = 1; b < cj.blocks; b++)
                j->k->combine_cols(d->op, acc, acc + b * cj.tiles * cj.acc_bytes, nc);
            j->k->store_cols(d->op, acc, nc, d->plus_zero,
                             (char *)d->out + (r * cj.inner + c0) * j->out_size);
        }
    }
finally:
    free(cj.scratch);
    free(cj.blk);
    return rc;
}

/* Whether gs_cpu_reduce takes (in_type, out_type, op). */
static int gs_reduce_types_ok(const gs_reduce_desc *d)
{
    return d->in_type >= 0 && d->in_type < GS_NDTYPES && d->out_type >= 0 &&
           d->out_type < GS_NDTYPES && d->op >= 0 && d->op < GS_NOPS &&
           gs_scan_pair_direct(d->in_type, d->out_type, d->op) &&
           !(gs_dtype_is_float(d->out_type) && gs_op_is_bitwise(d->op));
}

int gs_cpu_short_init(gs_cpu_short *s, const gs_reduce_desc *d)
{
    if (d == NULL || !gs_reduce_types_ok(d))
        return -EINVAL;
    s->widen = d->in_type != d->out_type;
    s->k = &gs_kernels_of[gs_cpu_isa()][s->widen ? GS_UINT64 : d->out_type];
    s->op = d->op;
    s->in_type = d->in_type;
    s->plus_zero = d->plus_zero;
    return 0;
}

/* One row of one chunk (len <= GS_REDUCE_MIN_CHUNK <= gs_reduce_chunk_len(len)): gs_rows_task's
 * fold_rows of that row alone, as gs_cpu_reduce runs it. */
void gs_cpu_reduce_short(const gs_cpu_short *s, const void *in, int64_t len, void *out)
{
    const gs_reduce_kernels *k = s->k;
    if (s->widen)
        k->fold_rows_widened(s->op, in, s->in_type, 1, len, out);
    else
        k->fold_rows(s->op, in, 1, len, s->plus_zero, out);
}

int gs_cpu_reduce(const gs_reduce_desc *d)
{
    gs_reduce_job j = { 0 };
    int parallel;

    if (d == NULL || d->rows < 0 || d->row_len < 1 || !gs_reduce_types_ok(d) ||
        (d->rows > 0 && (d->in == NULL || d->out == NULL)) || d->rows > INT64_MAX / d->row_len ||
        d->inner < 0 || (d->inner > 1 && d->rows * d->row_len > INT64_MAX / d->inner))
        return -EINVAL;
    if (d->rows == 0)
        return 0;

    j.d = d;
    j.widen = d->in_type != d->out_type;
    /* int64 and uint64 add and mul wrap to the same bits: the widened pairs share uint64's loops */
    j.k = &gs_kernels_of[gs_cpu_isa()][j.widen ? GS_UINT64 : d->out_type];
    j.in_size = gs_dtype_size(d->in_type);
    j.out_size = gs_dtype_size(d->out_type);
    j.chunk_len = gs_reduce_chunk_len(d->row_len);
    if (!gs_op_rounds(d->op, d->out_type) &&
        j.chunk_len * (int64_t)j.in_size < GS_CPU_TASK_BYTES)
        /* An exact operator gives the same bits in any grouping: chunks of a task's bytes, so
         * that a chunk's fixed costs (its start, the join of its lanes) are spread thinner. */
        j.chunk_len = GS_CPU_TASK_BYTES / (int64_t)j.in_size;
    j.chunks_per_row = (d->row_len + j.chunk_len - 1) / j.chunk_len;
    parallel = d->rows * d->row_len * (d->inner > 1 ? d->inner : 1) * (int64_t)j.in_size >=
                   GS_CPU_PARALLEL_MIN_BYTES &&
               gs_cpu_threads() > 1;
    if (d->inner > 1)
        return gs_reduce_cols(&j, parallel);

    if (j.chunks_per_row == 1 || !parallel) {
        /* Every row on one thread, as many rows per task as make about GS_CPU_TASK_VALUES. */
        j.rows_per_task = d->row_len >= GS_CPU_TASK_VALUES ? 1 : GS_CPU_TASK_VALUES / d->row_len;
        int64_t ntasks = (d->rows + j.rows_per_task - 1) / j.rows_per_task;
        if (parallel) {
            gs_cpu_parallel_for(ntasks, gs_rows_task, &j);
        } else {
            for (int64_t t = 0; t < ntasks && (t == 0 || !gs_cpu_stopping()); t++)
                gs_rows_task(&j, t);
        }
        return 0;
    }

    j.nchunks = d->rows * j.chunks_per_row;
    j.chunks_per_task = GS_CPU_TASK_BYTES / (j.chunk_len * (int64_t)j.in_size);
    if (j.chunks_per_task < 1)
        j.chunks_per_task = 1;
    j.part = malloc((size_t)j.nchunks * sizeof(gs_part));
    if (j.part == NULL)
        return -ENOMEM;
    gs_cpu_parallel_for((j.nchunks + j.chunks_per_task - 1) / j.chunks_per_task, gs_phase1, &j);
    gs_phase2(&j);
    free(j.part);
    return 0;
}
