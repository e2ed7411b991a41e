/*
 * cpu/scan.c - gs_cpu_scan: the CPU backend's prefix scan, plain, per row and segmented.
 *
 * Level: backend (CPU).  Sees one gs_scan_desc (gpuscan/desc.h) over flat
 * buffers; the loops over values live in cpu/scan_body.h, stamped out once per dtype and per
 * instruction set (cpu/stamp_isa.h); who scans which chunk, cpu/chain.h decides; the threads
 * come from cpu/pool.c.
 *
 * Algorithm.  A scan is cut into independent scans ("rows": the rows of row_len, or the whole
 * array), each row into chunks of GS_CPU_CHUNK values counted from the row's start.  A chunk is
 * scanned from its carry-in: for float add and mul its state starts from the identity and its
 * outputs combine that state with the carry-in, so the state it ends with is its total and the
 * next carry-in is carry-in combine total (or the state since its last segment head); every
 * other operator is exact, and the carry-in is simply the starting state.  A segmented scan reads
 * each chunk's flags into a bitmap of heads (gs_heads) and the loops restart at them inside one
 * pass over the chunk (cpu/scan_body.h), whatever the density of the heads.
 *   rows along the last axis      cpu/chain.h's driver, over this file's chunks, carries (the
 *                                 state, plus float add's compensation) and totals: the chunks
 *                                 in order on one thread, tasks of rows, or the parallel scan of
 *                                 a front and a back;
 *   axes in place (inner > 1)     tiles of columns, each scanned down its rows (gs_scan_cols).
 *
 * Guarantees:
 *  - the chunks depend on n and row_len only, never on the thread count or the instruction set,
 *    so every result is the same bits on every run, machine and GPUSCAN_NUM_THREADS; a row gives
 *    the bits that scanning it alone would give;
 *  - integers are bit-identical to NumPy; so are float min/max (the first NaN met, with its bits);
 *  - float add keeps compensated (hi, lo) pairs in the states and the carries and rounds each
 *    output a few times only: |error| <= ~3.5 eps * sum|x| at any n (cpu/scan_body.h; the
 *    contract: (log2 n + 2) eps * sum|x|);
 *  - float mul is a product in a fixed tree, each output at most i + 1 roundings from exact;
 *  - small scans run on the calling thread with no thread involved;
 *  - Ctrl-C (host/pool.h's gs_cpu_stopping) is asked between chunks wherever a thread runs many of
 *    them in one task, and every GS_CPU_CHUNK rows of a tile of columns: a stopped scan ends
 *    within a chunk's work on every thread, its output then meaning nothing;
 *  - on -ENOMEM (the carries could not be allocated) nothing was written and nothing is left.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/chain.h"
#include "cpu/cpu.h"
#include "cpu/flags.h"
#include "cpu/simd.h"

#if FLT_EVAL_METHOD != 0
#error "the compensated float add needs every operation rounded to its own type (SSE2, not x87)"
#endif

/* Values per chunk, the unit of work of phases 1 and 3 and of the carries.  4096 values are a few
 * microseconds of work, far above the cost of handing out a task, and keep float add's summed
 * compensation term exact enough: its own rounding stays below (4096 u)^2 <= eps/2 of sum|x|.
 * Results depend on this value: changing it changes float add's low bits. */
#define GS_CPU_CHUNK 4096
/* Below this many values the whole scan runs on the calling thread, with no worker woken.  Waking
 * a worker on an idle core takes about 5 us (2-core host, measured with a parallel_for between
 * busy gaps), and the front of a parallel scan never waits for the back, so 2^16 values (about
 * 40 us of float32 add on one thread) leave the wake-up a small share. */
#define GS_CPU_PARALLEL_MIN (16 * GS_CPU_CHUNK)
/* Values widened per block when bool/int8..uint32 are added or multiplied into 64 bits: 2 KiB of
 * uint64 on the stack, which stays in L1 between the conversion and the loop. */
#define GS_CPU_WIDEN_BLOCK 256
/* Segment heads in a word of 64 values up to which the loops branch on the heads: the
 * one-value-at-a-time loops (1- and 2-byte dtypes) scan plain runs between heads, the vector
 * loops take the plain step for the vectors without a head.  Each head then costs a mispredicted
 * branch (a pipeline refill, some 15-20 cycles on current cores); the branch-free loops cost
 * more on every value instead (a dependency chain two operations longer per value, about 128
 * cycles a word of the 1-byte loop; a segmented tree and its blends per vector): break-even near
 * 6 heads, and 4 keeps the branches where they clearly win. */
#define GS_CPU_FEW_HEADS 4
/* Columns one task scans side by side when the scanned axis is not the last (inner > 1): their
 * states (two arrays of 1024 values, 16 KiB at 8 bytes) stay in L1 while the rows stream past. */
#define GS_CPU_COLS 1024

_Static_assert(GS_CPU_CHUNK % 64 == 0 && GS_CPU_WIDEN_BLOCK % 64 == 0,
               "chunks and widened blocks are whole words of heads (and whole vectors)");

#define GS_PASTE(a, b, c) gs_cpu_##a##_##b##_##c
#define GS_NAME3(a, b, c) GS_PASTE(a, b, c)
#define GS_NAME(a, b) GS_NAME3(a, b, GS_ISA)

/* A running value: hi, plus float add's compensation term lo (-0 for every other op). */
typedef struct gs_carry {
    gs_val hi;
    gs_val lo;
} gs_carry;

/* What cpu/scan_body.h provides for each dtype and instruction set. */
typedef struct gs_kernels {
    /* scan in[0, len) from the state *c (and the carry cin: float add and mul; else NULL),
     * writing the (in/ex)clusive scan to out unless it is NULL, restarting from the identity
     * (with no carry) at the segment heads marked in `heads` (NULL: none; else bit i % 64 of
     * heads[i / 64] for value i) */
    void (*apply)(gs_op op, const void *in, void *out, int64_t len, int exclusive,
                  const gs_carry *cin, gs_carry *c, const uint64_t *heads);
    /* apply() over a narrower integer dtype widened to 64 bits (uint64 only; else NULL) */
    void (*apply_widened)(gs_op op, const void *in, gs_dtype in_type, void *out, int64_t len,
                          int exclusive, const gs_carry *cin, gs_carry *c, const uint64_t *heads);
    /* scan columns [0, ncols) down rows [0, nrows), row r at in/out + r * stride values; and
     * over a narrower integer dtype widened to 64 bits (uint64 only; else NULL) */
    void (*apply_cols)(gs_op op, const void *in, void *out, int64_t nrows, int64_t stride,
                       int64_t ncols, int exclusive);
    void (*apply_cols_widened)(gs_op op, const void *in, gs_dtype in_type, void *out, int64_t nrows,
                               int64_t stride, int64_t ncols, int exclusive);
    void (*identity)(gs_op op, gs_carry *c);
    void (*combine)(gs_op op, gs_carry *acc, const gs_carry *x);
    char kind;
} gs_kernels;

/* ---- The loops, one body per dtype and instruction set ----------------------------------- */

#define GS_CPU_BODY "cpu/scan_body.h"
#include "cpu/stamp_isa.h"
#undef GS_CPU_BODY

/* The kernel tables, indexed by gs_isa and gs_dtype; a dtype added to GS_DTYPES without its body
 * above fails to compile here (and cpu/stamp.h checks each body's kind letter and size). */
#define GS_ISA_ROW(isa, code, sfx, kind)                                          \
    [code] = { GS_NAME3(apply, sfx, isa),                                         \
               code == GS_UINT64 ? GS_NAME3(apply_widened, u64, isa) : NULL,      \
               GS_NAME3(apply_cols, sfx, isa),                                    \
               code == GS_UINT64 ? GS_NAME3(apply_cols_widened, u64, isa) : NULL, \
               GS_NAME3(identity, sfx, isa),                                      \
               GS_NAME3(combine, sfx, isa),                                       \
               kind },
static const gs_kernels gs_kernels_of[GS_NISA][GS_NDTYPES] = GS_ISA_TABLE;
#undef GS_ISA_ROW

/* ---- One scan call ----------------------------------------------------------------------- */

typedef struct gs_scan_job {
    const gs_scan_desc *d;
    const gs_kernels *k; /* of the output dtype (uint64 for widened pairs) */
    int widen;           /* in_type != out_type: widen the input to 64 bits block by block */
    int inexact;         /* float add or mul: chunk states from the identity, plus a carry-in */
    size_t in_size, out_size;
    int64_t row_len;        /* values per independent scan (n when row_len == 0) */
    int64_t rows;           /* independent scans */
    int64_t chunks_per_row; /* chunks of one row */
} gs_scan_job;

/* Scan in[from, to) from the state *c and the carry cin, writing the scan to out[from, to) when
 * `store`, restarting at the heads marked in `heads` (NULL: none; see gs_kernels.apply). */
static void gs_apply(const gs_scan_job *j, int64_t from, int64_t to, int store, const gs_carry *cin,
                     gs_carry *c, const uint64_t *heads)
{
    const gs_scan_desc *d = j->d;
    void *out = store ? (char *)d->out + from * j->out_size : NULL;
    if (j->widen)
        j->k->apply_widened(d->op, (const char *)d->in + from * j->in_size, d->in_type, out,
                            to - from, d->exclusive, cin, c, heads);
    else
        j->k->apply(d->op, (const char *)d->in + from * j->in_size, out, to - from, d->exclusive,
                    cin, c, heads);
}

/* The segment heads of [from, to) (at most GS_CPU_CHUNK values) as bits, value from + i at bit
 * i % 64 of heads[i / 64]; returns whether there is one. */
static int gs_heads(const gs_scan_desc *d, int64_t from, int64_t to, uint64_t *heads)
{
    uint64_t any = 0;
    for (int64_t i = from; i < to; i += 64) {
        uint64_t w = gs_flag_bits(d->flags, d->flag_type, i, to - i < 64 ? (int)(to - i) : 64);
        heads[(i - from) / 64] = w;
        any |= w;
    }
    return any != 0;
}

/* Scan [from, to) (at most one chunk) from the state *c and the carry cin (see gs_kernels.apply),
 * restarting from the identity, with no carry, at each segment head; leaves in *c the state after
 * `to`.  Returns whether a head lies in [from, to). */
static int gs_scan_range(const gs_scan_job *j, int64_t from, int64_t to, const gs_carry *cin,
                         gs_carry *c)
{
    uint64_t heads[GS_CPU_CHUNK / 64];
    int any = j->d->flags != NULL && gs_heads(j->d, from, to, heads);
    gs_apply(j, from, to, 1, cin, c, any ? heads : NULL);
    return any;
}

/* The values [*from, *to) of chunk `chunk` (numbered row after row). */
static void gs_chunk_range(const gs_scan_job *j, int64_t chunk, int64_t *from, int64_t *to)
{
    int64_t row = chunk / j->chunks_per_row;
    int64_t row_end = (row + 1) * j->row_len;
    *from = row * j->row_len + chunk % j->chunks_per_row * GS_CPU_CHUNK;
    *to = *from + GS_CPU_CHUNK < row_end ? *from + GS_CPU_CHUNK : row_end;
}

/* Scan chunk c on this thread from *cin, its carry-in, and leave in *cin the carry-in of the
 * chunk after it (in its row): for float add and mul the chunk's state starts from the identity,
 * and the next carry-in is the state if a head lies in the chunk, else the carry-in combined with
 * the state (the chunk's total); for every other op the carry-in is the starting state. */
static void gs_chunk_seq(const gs_scan_job *j, int64_t c, gs_carry *cin)
{
    int64_t from, to;
    gs_carry st;
    gs_chunk_range(j, c, &from, &to);
    if (!j->inexact) {
        gs_scan_range(j, from, to, NULL, cin);
        return;
    }
    j->k->identity(j->d->op, &st);
    if (gs_scan_range(j, from, to, cin, &st))
        *cin = st; /* the state since the chunk's last head */
    else
        j->k->combine(j->d->op, cin, &st);
}

/* ==== The chunks' callbacks for cpu/chain.h's driver ==================================== */

/* The total of chunk c (the state after its last head, from the identity) and whether it holds
 * a head: what the front's scan of the chunk ends with, bit for bit.  The state after a head
 * depends on the values from the head on only, combined on the chunk's grid of vectors: the scan
 * starts at the word of heads holding the last one (a whole number of vectors into the chunk). */
static void gs_total(const gs_scan_job *j, int64_t c, gs_carry *total, unsigned char *head)
{
    const gs_scan_desc *d = j->d;
    uint64_t heads[GS_CPU_CHUNK / 64];
    int64_t from, to;
    gs_chunk_range(j, c, &from, &to);
    *head = 0;
    if (d->flags != NULL) {
        int64_t last = gs_flag_last(d->flags, d->flag_type, from, to);
        *head = last >= 0;
        if (last >= 0)
            from += (last - from) / 64 * 64;
    }
    j->k->identity(d->op, total);
    gs_apply(j, from, to, 0, NULL, total, *head && gs_heads(d, from, to, heads) ? heads : NULL);
}

static void gs_chain_start(void *ctx, void *cin)
{
    const gs_scan_job *j = ctx;
    j->k->identity(j->d->op, cin);
}

static void gs_chain_step(void *ctx, int64_t c, void *cin)
{
    gs_chunk_seq(ctx, c, cin);
}

static void gs_chain_total(void *ctx, int64_t c, void *tot, unsigned char *head)
{
    gs_total(ctx, c, tot, head);
}

static void gs_chain_chain(void *ctx, void *cin, const void *tot, int head)
{
    const gs_scan_job *j = ctx;
    if (head)
        *(gs_carry *)cin = *(const gs_carry *)tot;
    else
        j->k->combine(j->d->op, cin, tot);
}

/* ==== Columns: blocks of row_len x inner, each column scanned down the rows ============== */

typedef struct gs_cols_job {
    const gs_scan_job *j;
    int64_t inner, tile, tiles;
} gs_cols_job;

/* A tile of columns of one block, scanned whole: task = block * tiles + tile. */
static void gs_cols_task(void *ctx, int64_t task)
{
    const gs_cols_job *cj = ctx;
    const gs_scan_job *j = cj->j;
    const gs_scan_desc *d = j->d;
    int64_t r = task / cj->tiles, c0 = task % cj->tiles * cj->tile;
    int64_t nc = cj->inner - c0 < cj->tile ? cj->inner - c0 : cj->tile;
    int64_t first = r * j->row_len * cj->inner + c0;
    const char *in = (const char *)d->in + first * j->in_size;
    char *out = (char *)d->out + first * j->out_size;
    if (j->widen)
        j->k->apply_cols_widened(d->op, in, d->in_type, out, j->row_len, cj->inner, nc,
                                 d->exclusive);
    else
        j->k->apply_cols(d->op, in, out, j->row_len, cj->inner, nc, d->exclusive);
}

/* Tasks of tiles of columns, narrower ones when the blocks are too few to keep every thread busy
 * (each column's bits depend on that column alone, never on the tiles). */
static void gs_scan_cols(const gs_scan_job *j, int parallel)
{
    gs_cols_job cj = { j, j->d->inner, GS_CPU_COLS, 0 };
    int64_t blocks = j->d->n / (j->row_len * cj.inner), want = gs_cpu_threads();
    if (parallel)
        cj.tile = gs_cpu_tile(cj.inner, blocks, want, GS_CPU_COLS);
    cj.tiles = (cj.inner + cj.tile - 1) / cj.tile;
    if (parallel)
        gs_cpu_parallel_for(blocks * cj.tiles, gs_cols_task, &cj);
    else
        for (int64_t t = 0; t < blocks * cj.tiles && (t == 0 || !gs_cpu_stopping()); t++)
            gs_cols_task(&cj, t);
}

int gs_cpu_scan(const gs_scan_desc *d)
{
    gs_scan_job j = { 0 };
    int parallel;

    if (d->n < 0 || d->in_type < 0 || d->in_type >= GS_NDTYPES || d->out_type < 0 ||
        d->out_type >= GS_NDTYPES || d->op < 0 || d->op >= GS_NOPS || d->row_len < 0 ||
        !gs_scan_pair_direct(d->in_type, d->out_type, d->op) ||
        (gs_dtype_is_float(d->out_type) && gs_op_is_bitwise(d->op)) ||
        (d->flags != NULL && (d->row_len > 0 || d->flag_type < 0 || d->flag_type >= GS_NDTYPES)) ||
        d->inner < 0 || (d->inner > 1 && (d->row_len == 0 || d->algorithm != GS_ALGO_AUTO)))
        return -EINVAL;
    if (d->row_len > 0 && d->n % (d->row_len * (d->inner > 1 ? d->inner : 1)) != 0)
        return -EINVAL;
    if (d->n == 0)
        return 0;
    if (d->algorithm != GS_ALGO_AUTO)
        return gs_cpu_teach_scan(d);

    j.d = d;
    j.widen = d->in_type != d->out_type;
    /* int64 and uint64 add and mul wrap to the same bits: the widened pairs share uint64's loops */
    j.k = &gs_kernels_of[gs_cpu_isa()][j.widen ? GS_UINT64 : d->out_type];
    j.inexact = gs_op_rounds(d->op, d->out_type);
    j.in_size = gs_dtype_size(d->in_type);
    j.out_size = gs_dtype_size(d->out_type);
    j.row_len = d->row_len > 0 ? d->row_len : d->n;
    j.rows = d->n / j.row_len;
    j.chunks_per_row = (j.row_len + GS_CPU_CHUNK - 1) / GS_CPU_CHUNK;
    parallel = d->n >= GS_CPU_PARALLEL_MIN && gs_cpu_threads() > 1;
    if (d->inner > 1) {
        gs_scan_cols(&j, parallel);
        return 0;
    }

    /* Rows of one chunk: as many rows per task as make about one chunk. */
    gs_chain ch = { .ctx = &j,
                    .carry_size = sizeof(gs_carry),
                    .rows = j.rows,
                    .chunks_per_row = j.chunks_per_row,
                    .rows_per_task = j.row_len >= GS_CPU_CHUNK ? 1 : GS_CPU_CHUNK / j.row_len,
                    .start = gs_chain_start,
                    .step = gs_chain_step,
                    .total = gs_chain_total,
                    .chain = gs_chain_chain };
    return gs_chain_run(&ch, parallel);
}
