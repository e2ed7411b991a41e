/*
 * cpu/reduce.c - gs_cpu_reduce: the CPU backend's reduction of contiguous rows, and of the
 * middle of rows x row_len x inner (axes read in place).
 *
 * Level: backend (CPU).  Sees one gs_reduce_desc (gpuscan/desc.h) over flat
 * buffers; the loops over values live in cpu/reduce_body.h, stamped out once per dtype and per
 * instruction set (cpu/stamp_isa.h); the threads come from cpu/pool.c.
 *
 * Algorithm.  Each of the `rows` rows is cut into chunks of gs_reduce_chunk_len(row_len) values
 * counted from the row's start (the device's chunks, gpuscan/config.h), and then:
 *   phase 1 (parallel)    each chunk folds its values into a partial (a value, plus a
 *                         compensation term for float add);
 *   phase 2 (sequential)  each row combines its chunks' partials in chunk order and rounds once.
 * Rows of one chunk have no phase 2: tasks take whole rows, many short ones each.  Run on one
 * thread, a row goes chunk after chunk through the same two steps, with no buffer.  With
 * inner > 1 each column is folded in blocks of GS_CPU_BLOCK rows, the blocks combined in order
 * (gs_reduce_cols: tasks take tiles of columns, or single blocks of them).
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
 *    row_len (contract: (log2 row_len + 2) eps * sum|x|); an all -0 sum is +0 as in NumPy;
 *  - float mul is a plain product in the fixed grouping: relative error <= (row_len - 1) eps;
 *  - small inputs run on the calling thread with no thread involved;
 *  - on -ENOMEM (the partials could not be allocated) nothing was written and nothing is left.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
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
    /* part[c] = the partial of column c, rows [0, nrows) at in + r * stride, c < ncols;
     * scratch holds 2 * ncols values of 8 bytes */
    void (*fold_cols)(gs_op op, const void *in, int64_t nrows, int64_t stride, int64_t ncols,
                      gs_part *part, void *scratch);
    /* fold() and fold_cols() of a narrower integer dtype widened to 64 bits (uint64 only) */
    void (*fold_widened)(gs_op op, const void *in, gs_dtype in_type, int64_t len, gs_part *p);
    void (*fold_cols_widened)(gs_op op, const void *in, gs_dtype in_type, int64_t nrows,
                              int64_t stride, int64_t ncols, gs_part *part, void *scratch);
    /* *acc = *acc op *x, x holding the values after acc's */
    void (*combine)(gs_op op, gs_part *acc, const gs_part *x);
    /* *out = the value *p stands for, rounded once */
    void (*store)(gs_op op, const gs_part *p, void *out);
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
               GS_NAME3(fold_cols, sfx, isa),                                    \
               code == GS_UINT64 ? GS_NAME3(fold_widened, u64, isa) : NULL,      \
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
    int64_t chunk_len; /* values per chunk: gs_reduce_chunk_len(row_len) */
    int64_t chunks_per_row;
    int64_t rows_per_task; /* rows of one task when tasks take whole rows */
    gs_part *part;         /* per chunk of every row: its partial (phase 1) */
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
        gs_chunk(j, row, c, &p);
        j->k->combine(j->d->op, &acc, &p);
    }
    j->k->store(j->d->op, &acc, (char *)j->d->out + row * (int64_t)j->out_size);
}

/* Task t reduces rows_per_task whole rows. */
static void gs_rows_task(void *ctx, int64_t task)
{
    const gs_reduce_job *j = ctx;
    int64_t first = task * j->rows_per_task;
    int64_t last = first + j->rows_per_task < j->d->rows ? first + j->rows_per_task : j->d->rows;
    for (int64_t row = first; row < last; row++)
        gs_row(j, row);
}

/* ==== Phase 1: each chunk's partial ====================================================== */
static void gs_phase1(void *ctx, int64_t chunk)
{
    const gs_reduce_job *j = ctx;
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
        j->k->store(d->op, &acc, (char *)d->out + row * (int64_t)j->out_size);
    }
}

/* ==== Columns: rows x row_len x inner, reduced over the middle ============================
 * Column c of row r is folded block by block (GS_CPU_BLOCK values of the reduced axis each, from
 * the identity: fold_cols), and the blocks' partials are combined in block order: partial(b0)
 * combine partial(b1) combine ...  Tasks take a tile of columns of one row through all its
 * blocks, or, when rows times tiles are too few to keep the threads busy, one block of a tile
 * (partials kept, combined afterwards): the same partials combined the same way either way. */

typedef struct gs_cols_job {
    const gs_reduce_job *j;
    int64_t inner, tile, tiles, blocks;
    gs_part *part;   /* per row, block and column when tasks take single blocks, else NULL */
    uint64_t *state; /* per task: 2 * tile values of 8 bytes, the columns' states */
} gs_cols_job;

/* part[0, nc) = the partials of block b of row r, columns [c0, c0 + nc). */
static void gs_cols_block(const gs_cols_job *cj, int64_t task, int64_t r, int64_t b, int64_t c0,
                          int64_t nc, gs_part *part)
{
    uint64_t *state = cj->state + task * 2 * cj->tile;
    const gs_reduce_job *j = cj->j;
    const gs_reduce_desc *d = j->d;
    int64_t r0 = b * GS_CPU_BLOCK;
    int64_t nr = d->row_len - r0 < GS_CPU_BLOCK ? d->row_len - r0 : GS_CPU_BLOCK;
    const char *in = (const char *)d->in + ((r * d->row_len + r0) * cj->inner + c0) * j->in_size;
    if (j->widen)
        j->k->fold_cols_widened(d->op, in, d->in_type, nr, cj->inner, nc, part, state);
    else
        j->k->fold_cols(d->op, in, nr, cj->inner, nc, part, state);
}

/* A task of a tile of columns through every block: task = row * tiles + tile.  Its partials and
 * its blocks' go to part and part + rows * inner (the tile's own columns of each). */
static void gs_cols_task(void *ctx, int64_t task)
{
    const gs_cols_job *cj = ctx;
    const gs_reduce_job *j = cj->j;
    const gs_reduce_desc *d = j->d;
    int64_t r = task / cj->tiles, c0 = task % cj->tiles * cj->tile;
    int64_t nc = cj->inner - c0 < cj->tile ? cj->inner - c0 : cj->tile;
    gs_part *acc = cj->part + r * cj->inner + c0;
    gs_part *blk = acc + d->rows * cj->inner;

    gs_cols_block(cj, task, r, 0, c0, nc, acc);
    for (int64_t b = 1; b < cj->blocks; b++) {
        gs_cols_block(cj, task, r, b, c0, nc, blk);
        for (int64_t c = 0; c < nc; c++)
            j->k->combine(d->op, &acc[c], &blk[c]);
    }
    for (int64_t c = 0; c < nc; c++)
        j->k->store(d->op, &acc[c], (char *)d->out + (r * cj->inner + c0 + c) * j->out_size);
}

/* A task of one block of a tile: task = (row * blocks + block) * tiles + tile. */
static void gs_cols_block_task(void *ctx, int64_t task)
{
    const gs_cols_job *cj = ctx;
    int64_t t = task % cj->tiles, rb = task / cj->tiles, c0 = t * cj->tile;
    int64_t nc = cj->inner - c0 < cj->tile ? cj->inner - c0 : cj->tile;
    gs_cols_block(cj, task, rb / cj->blocks, rb % cj->blocks, c0, nc,
                  cj->part + rb * cj->inner + c0);
}

static int gs_reduce_cols(const gs_reduce_job *j, int parallel)
{
    const gs_reduce_desc *d = j->d;
    gs_cols_job cj = { j,    d->inner, d->inner < GS_CPU_COLS ? d->inner : GS_CPU_COLS, 0, 0,
                       NULL, NULL };
    int64_t ntasks;
    int64_t want = 2 * (int64_t)gs_cpu_threads(); /* tasks that keep every thread busy */
    int split_blocks = 0;
    int rc = 0;

    /* Tiles as wide as the states allow (each row's tile read whole, in memory order).  Too few
     * of them for the threads: single blocks as tasks, or, with one block, narrower tiles. */
    cj.blocks = (d->row_len + GS_CPU_BLOCK - 1) / GS_CPU_BLOCK;
    cj.tiles = (cj.inner + cj.tile - 1) / cj.tile;
    if (parallel && d->rows * cj.tiles < want) {
        if (cj.blocks > 1) {
            split_blocks = 1;
        } else {
            cj.tile = gs_cpu_tile(cj.inner, d->rows, want, GS_CPU_COLS);
            cj.tiles = (cj.inner + cj.tile - 1) / cj.tile;
        }
    }
    /* A partial per block and column when blocks are tasks, else two per column (its own and a
     * block's); the states of each task's columns. */
    ntasks = d->rows * (split_blocks ? cj.blocks : 1) * cj.tiles;
    cj.part =
        malloc((size_t)(d->rows * (split_blocks ? cj.blocks : 2) * cj.inner) * sizeof(gs_part));
    cj.state = malloc((size_t)(ntasks * 2 * cj.tile) * sizeof(uint64_t));
    if (cj.part == NULL || cj.state == NULL) {
        rc = -ENOMEM;
        goto finally;
    }

    if (!parallel) {
        for (int64_t t = 0; t < ntasks; t++)
            gs_cols_task(&cj, t);
    } else if (!split_blocks) {
        rc = gs_cpu_parallel_for(ntasks, gs_cols_task, &cj);
    } else {
        /* Each block of each tile a task; then each column combines its blocks in order. */
        rc = gs_cpu_parallel_for(ntasks, gs_cols_block_task, &cj);
        for (int64_t r = 0; r < d->rows; r++) {
            for (int64_t c = 0; c < cj.inner; c++) {
                const gs_part *p = cj.part + r * cj.blocks * cj.inner + c;
                gs_part acc = p[0];
                for (int64_t b = 1; b < cj.blocks; b++)
                    j->k->combine(d->op, &acc, &p[b * cj.inner]);
                j->k->store(d->op, &acc, (char *)d->out + (r * cj.inner + c) * j->out_size);
            }
        }
    }
finally:
    free(cj.part);
    free(cj.state);
    return rc;
}

int gs_cpu_reduce(const gs_reduce_desc *d)
{
    gs_reduce_job j = { 0 };
    int parallel;

    if (d == NULL || d->rows < 0 || d->row_len < 1 || d->in_type < 0 || d->in_type >= GS_NDTYPES ||
        d->out_type < 0 || d->out_type >= GS_NDTYPES || d->op < 0 || d->op >= GS_NOPS ||
        !gs_scan_pair_direct(d->in_type, d->out_type, d->op) ||
        (gs_dtype_is_float(d->out_type) && gs_op_is_bitwise(d->op)) ||
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
    j.chunks_per_row = gs_reduce_chunks(d->row_len);
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
            for (int64_t t = 0; t < ntasks; t++)
                gs_rows_task(&j, t);
        }
        return 0;
    }

    int64_t nchunks = d->rows * j.chunks_per_row;
    j.part = malloc((size_t)nchunks * sizeof(gs_part));
    if (j.part == NULL)
        return -ENOMEM;
    gs_cpu_parallel_for(nchunks, gs_phase1, &j);
    gs_phase2(&j);
    free(j.part);
    return 0;
}
