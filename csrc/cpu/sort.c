/*
 * cpu/sort.c - gs_cpu_sort: the CPU backend's sort and argsort (gs_sort_desc), a stable radix
 * sort in NumPy's order.
 *
 * Level: backend (CPU).  Sees one gs_sort_desc (gpuscan/desc.h) over flat host buffers; the
 * loops live in cpu/sort_body.h, stamped once per key shape (an unsigned word of 1, 2, 4 or 8
 * bytes read through an XOR mask: bool, the integers, either order; float32; float64) and
 * index type; the threads come from host/pool.h.
 *
 * The radix key (cpu/sort_body.h) makes NumPy's order the unsigned order of a word: signed
 * integers' sign bit flipped, floats' -0.0 folded onto +0.0 and their sign flipped, every NaN
 * above +inf, descending by complementing (NaNs still last).  Digits are 8 bits.  A range of
 * keys (a row, or a bucket of one) is sorted by:
 *   histogram   one read counts every digit at once (as CUB's Onesweep does), and a digit that
 *               every key of the range shares is skipped: no pass for it (small integers in
 *               int64 need two or three passes, not eight);
 *   MSD split   a range larger than the cache (GS_SORT_CACHE_BYTES), and large enough that its
 *               buckets average GS_SORT_BUCKET_MIN keys, whose top remaining digit spreads its
 *               keys well (msd_pays) is first split by that digit, stably, into 256 buckets,
 *               each then sorted on its own by the lower digits (recursively: large buckets
 *               split again), so that the passes over each run in the cache;
 *   LSD passes  otherwise one stable scatter per remaining digit, least significant first,
 *               the last into the output;
 *   small       a range of at most GS_SORT_SMALL keys (GS_SORT_SMALL_WIDE of 8 bytes) is sorted
 *               by comparisons instead (runs by insertion, then merges): 256 counters per digit
 *               cost more than that;
 *   quicksort   where cpu/isa.c chose AVX-512, a sort alone of 32- or 64-bit keys: a range by
 *               cpu/sort_qs.h, whose unstable order is the stable one there (equal keys are
 *               the same bits; floats with -0.0 and +0.0 both, or NaNs of several patterns,
 *               stay with the radix sort).  A row on one thread is quicksorted whole; a few
 *               long rows (GS_SORT_QS_PAR_MIN keys) are each split over the threads first, by
 *               splitters sampled from the keys, a bucket a thread, each bucket then quicksorted
 *               (1.5-1.9x NumPy's quicksort at 10^6-10^7 keys on two cores, where one thread's
 *               is 1.0-1.2x).  An argsort alone of more than GS_SORT_SMALL keys, a row on one
 *               thread: its radix keys each above its position as 64-bit words sorted by the
 *               same quicksort; 64-bit keys 32 bits at a time (the top 32 bits of their span,
 *               then each run of equal top bits by the rest: gs_qs_argsort_k64), 3x faster at
 *               10^4 keys than their eight radix passes; a long row of them too, on one thread
 *               below GS_SORT_ARG64_THREADS.  Keys of a one- or two-byte span, from 2^12 and
 *               2^16 keys, take their one or two radix passes instead.
 * Every method is a stable sort by the same key, so each gives the same result: the unique
 * stable order.  On several threads a long range's histogram and passes run in chunks (each
 * chunk scattering from its own offsets: chunk c's keys of a bucket after those of the chunks
 * before it), and after an MSD split its buckets are sorted in parallel: rows of at least
 * GS_SORT_LONG_MIN keys, fewer than twice the threads.  Otherwise the rows are sorted in
 * parallel, each on one thread, and below GS_SORT_PARALLEL_MIN keys in all one thread does
 * everything.  The result is the same bytes on every run and thread count.  Ctrl-C
 * (host/pool.h): every loop over a long range asks between blocks of GS_SORT_STOP_BLOCK keys
 * whether the call stops, and a stopped range returns at once, its later passes not run.
 *
 * Places: a range's keys are in the input (read-only; its indices are its positions), in A or
 * B (temporaries of n keys and n indices each), or in OUT, the result (keys_out, index_out).  A
 * pass reads one place and writes another; between passes indices are uint32 (int64 for rows
 * of 2^32 keys or more), the last pass writes them as int64 into index_out.  A sort alone has
 * no indices, and B is keys_out itself: its passes alternate between A and B, the first chosen
 * so that the last lands in B (a copy when it cannot).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "cpu/simd.h"

/* Keys sorted by comparisons instead of digits: 256 counters per digit cost about as much to
 * clear, add up and scan as comparing a few dozen keys. */
#define GS_SORT_SMALL 64
/* ... and for 8-byte keys, whose radix sort takes up to eight passes: a comparison sort of 1000
 * int64 keys with their indices takes half the time of their radix sort. */
#define GS_SORT_SMALL_WIDE 1024
/* The comparison sort's room (cpu/sort_body.h). */
#define GS_SORT_SMALL_MAX GS_SORT_SMALL_WIDE
/* Keys sorted by insertion before the small sort merges them. */
#define GS_SORT_RUN 16
/* A range shorter than this counts its digits into one table (cpu/sort_body.h): the four
 * tables of a long one cost 4 * 256 counters per digit to clear and add. */
#define GS_SORT_HIST_WIDE 4096
/* A range whose keys and indices, in both buffers of its passes, fit in this many bytes is
 * sorted by LSD passes in the cache; a larger one is split by its top digit first when that
 * brings its buckets there: twice the 1 MiB second-level cache of a current x86-64 server core
 * (a pass streams its source once and scatters into 256 runs, which the third level absorbs).
 * Measured on a 2-core AMD EPYC host against 512 KiB: 10^7 int64 keys sorted in a third of the
 * time (their 39000-key buckets sorted whole instead of split again into 150-key ones, whose
 * passes are mostly counters), 10^5 int32 keys in half. */
#define GS_SORT_CACHE_BYTES (2048 * 1024)
/* An MSD split pays when at least half of the range's keys land in buckets that fit the cache,
 * or when no bucket holds more than 1/GS_SORT_SPREAD of them (a level of buckets still too
 * large, split again: 16 brings each level 4 bits closer to the cache). */
#define GS_SORT_SPREAD 16
/* No MSD split of a range whose 256 buckets would average fewer keys than this: each bucket's
 * passes cost 256 counters per digit besides its keys. */
#define GS_SORT_BUCKET_MIN 4096
/* Below this many keys in all, one thread sorts everything: 2^16 int32 keys take about as long
 * as waking the workers of a busy host and sharing the histogram, and small calls stay at the
 * speed of one core with nothing to wait for. */
#define GS_SORT_PARALLEL_MIN ((int64_t)1 << 16)
/* One row shorter than this is sorted on one thread even when threads are free: its passes in
 * chunks on every thread wait for each other several times a pass, and on a 2-core host (the
 * other core often busy) 10^5 and 2*10^5 int32 keys took 1.2x-1.3x as long on two threads as on
 * one; from 10^6 two are faster (5.4 ms against 7.3). */
#define GS_SORT_LONG_MIN ((int64_t)1 << 19)
/* From this many threads a long row of an argsort alone of 64-bit keys takes the radix passes on
 * every thread rather than one thread's quicksort (gs_qs_argsort_k64), which was 1.3-1.7x as
 * fast as the passes on two: the passes scale with the threads, one quicksort does not. */
#define GS_SORT_ARG64_THREADS 4
/* A long range's histogram and passes run in chunks of at least this many keys, and at least
 * four per thread, so that a thread slowed by the host's load leaves the others work. */
#define GS_SORT_CHUNK_MIN ((int64_t)1 << 15)
#define GS_SORT_CHUNKS_PER_THREAD 4
/* Rows are handed out in tasks of at least this many keys: a task of short rows is then tens
 * of microseconds of work, far above what taking one costs. */
#define GS_SORT_ROW_TASK ((int64_t)1 << 14)
/* A row of at least this many keys is quicksorted by every thread (cpu/sort_qs.h's sort_par):
 * below it one thread's quicksort takes about as long as the split (a tenth of a millisecond). */
#define GS_SORT_QS_PAR_MIN ((int64_t)1 << 18)
/* The temporaries of a call of at most this many bytes are kept for the next call
 * (block_give): 2^27, enough for a sort of 10^7 int64 keys or an argsort of 10^6 of any. */
#define GS_SORT_KEEP_BYTES ((size_t)1 << 27)
/* A loop of one thread over a long range asks whether the call stops (Ctrl-C: host/pool.h's
 * gs_cpu_stopping) between blocks of this many keys: a millisecond or two of a pass. */
#define GS_SORT_STOP_BLOCK ((int64_t)1 << 20)
/* Radix digits: 8 bits, 256 buckets; 8 of them in a 64-bit key. */
#define GS_SORT_RADIX 256
#define GS_SORT_MAX_DIGITS 8

_Static_assert(GS_SORT_SMALL_MAX <= INT32_MAX, "cpu/sort.c: positions of the small sort are int32");
_Static_assert(GS_SORT_RUN >= 1 && GS_SORT_RUN <= GS_SORT_SMALL, "cpu/sort.c: GS_SORT_RUN");
_Static_assert(GS_SORT_SMALL <= GS_SORT_SMALL_WIDE && GS_SORT_SMALL_WIDE <= GS_SORT_SMALL_MAX,
               "cpu/sort.c: GS_SORT_SMALL_MAX");
_Static_assert(GS_SORT_SMALL_MAX < GS_SORT_HIST_WIDE, "cpu/sort.c: GS_SORT_HIST_WIDE");

/* ---- the key shapes, each with uint32 and int64 indices (cpu/sort_stamp.h) ----------- */

#define GS_SK_NAME(name) GS_SK_PASTE(name, GS_SK_SHAPE, GS_SK_IW)
#define GS_SK_PASTE(a, b, c) GS_SK_PASTE2(a, b, c)
#define GS_SK_PASTE2(a, b, c) gs_sort_##a##_##b##_##c

#define GS_SK_T uint8_t
#define GS_SK_BITS 8
#define GS_SK_FLOAT 0
#define GS_SK_SHAPE k8
#include "cpu/sort_stamp.h"

#define GS_SK_T uint16_t
#define GS_SK_BITS 16
#define GS_SK_FLOAT 0
#define GS_SK_SHAPE k16
#include "cpu/sort_stamp.h"

#define GS_SK_T uint32_t
#define GS_SK_BITS 32
#define GS_SK_FLOAT 0
#define GS_SK_SHAPE k32
#include "cpu/sort_stamp.h"

#define GS_SK_T uint64_t
#define GS_SK_BITS 64
#define GS_SK_FLOAT 0
#define GS_SK_SHAPE k64
#include "cpu/sort_stamp.h"

#define GS_SK_T uint32_t
#define GS_SK_BITS 32
#define GS_SK_FLOAT 1
#define GS_SK_INF 0x7F800000u /* float32 +inf */
#define GS_SK_SHAPE f32
#include "cpu/sort_stamp.h"

#define GS_SK_T uint64_t
#define GS_SK_BITS 64
#define GS_SK_FLOAT 1
#define GS_SK_INF 0x7FF0000000000000ull /* float64 +inf */
#define GS_SK_SHAPE f64
#include "cpu/sort_stamp.h"

/* ---- the AVX-512 quicksort of 32- and 64-bit words, for a sort alone (cpu/sort_qs.h) -------- */
#if GS_CPU_X86
#define GS_QS_W 32
#include "cpu/sort_qs.h"
#define GS_QS_W 64
#include "cpu/sort_qs.h"
#endif

/* What cpu/sort_body.h provides for one key shape and index type. */
typedef struct sort_kernels {
    void (*range)(const void *keys, int64_t n, uint64_t mask, uint64_t *range);
    void (*hist)(const void *keys, int64_t n, uint64_t mask, uint64_t base, int nd, int shift,
                 int64_t *counts);
    void (*pass)(const void *sk, const void *si, int64_t ibase, void *dk, void *di, int di_final,
                 int64_t n, int shift, uint64_t mask, uint64_t base, int64_t *off);
    void (*small)(const void *sk, const void *si, int64_t ibase, void *dk, int64_t *di, int64_t n,
                  uint64_t mask);
} sort_kernels;

#define GS_SK_KERNELS(sfx)                                                               \
    {                                                                                    \
        gs_sort_range_##sfx, gs_sort_hist_##sfx, gs_sort_pass_##sfx, gs_sort_small_##sfx \
    }
/* [shape][0: uint32 indices, 1: int64]; shapes: 1, 2, 4, 8-byte words, float32, float64. */
static const sort_kernels sort_kernels_of[6][2] = {
    { GS_SK_KERNELS(k8_i32), GS_SK_KERNELS(k8_i64) },
    { GS_SK_KERNELS(k16_i32), GS_SK_KERNELS(k16_i64) },
    { GS_SK_KERNELS(k32_i32), GS_SK_KERNELS(k32_i64) },
    { GS_SK_KERNELS(k64_i32), GS_SK_KERNELS(k64_i64) },
    { GS_SK_KERNELS(f32_i32), GS_SK_KERNELS(f32_i64) },
    { GS_SK_KERNELS(f64_i32), GS_SK_KERNELS(f64_i64) },
};

/* ---- one call --------------------------------------------------------------------------- */

/* Where a range's keys (and indices) are (see the file's header). */
enum { AT_IN = -1, AT_A = 0, AT_B = 1, AT_OUT = 2 };

typedef struct sort_job {
    const sort_kernels *k;
    uint64_t mask; /* the radix key's XOR mask (cpu/sort_body.h) */
    int digits;    /* the key's bytes */
    size_t w;      /* bytes per key */
    size_t iw;     /* bytes per index between passes (4 or 8) */
    const char *in;
    char *keys[3]; /* A, B, OUT (keys_out: NULL for an argsort alone) */
    char *idx[2];  /* A, B: the indices between passes (an argsort) */
    int64_t *index_out;
    int with_idx;        /* an argsort */
    int out;             /* the place of the result: AT_OUT, or AT_B for a sort alone */
    int64_t cache_items; /* a range of at most this many keys is sorted in the cache */
    /* cpu/sort_qs.h's sort of the key's words (NULL: none), and whether they are floats */
    int (*qs)(const void *src, void *dst, int64_t n, uint64_t mask, int is_float);
    int qs_float;
    int qs_arg; /* an argsort alone by cpu/sort_qs.h's gs_qs_argsort_k32 or _k64 */
    int64_t row_len, rows;
    /* The step of par_range under way, for its tasks: the range [lo, hi) of a row from
     * row_base, in chunks of `chunk`, counted (a digit, or every one) or passed by `digit` from
     * place src to place dst; then its buckets (starting at start[b], start[256] = hi; big[b]:
     * sorted on every thread after the others). */
    int64_t lo, hi, chunk, row_base;
    int src, dst, digit, all_digits, nd;
    uint64_t base;    /* the digits are those of key - base, nd of them (sort_range) */
    int64_t *counts;  /* per chunk: a histogram (of every digit, or of one) */
    uint64_t *ranges; /* per chunk: its least and largest key */
    int64_t *offs;    /* per chunk: where its keys of each bucket go (chunks * 256) */
    const unsigned char *big;
    const int64_t *start;
} sort_job;

static const char *keys_at(const sort_job *job, int at, int64_t i)
{
    return (at == AT_IN ? job->in : job->keys[at]) + (size_t)i * job->w;
}

/* The indices a pass reads from place `at` at position i: NULL for the input (its positions)
 * and for a sort alone. */
static const void *idx_from(const sort_job *job, int at, int64_t i)
{
    return at == AT_IN || !job->with_idx ? NULL : job->idx[at] + (size_t)i * job->iw;
}

/* Where a pass writes indices into place `at` (position 0): NULL for a sort alone. */
static void *idx_to(const sort_job *job, int at)
{
    return !job->with_idx ? NULL : at == AT_OUT ? (void *)job->index_out : (void *)job->idx[at];
}

/* The other temporary: where a pass from `at` writes when it is not the last. */
static int other(int at)
{
    return at == AT_A ? AT_B : AT_A;
}

/* [lo, hi) copied from place `src` to the result as it is (the sorted order already). */
static void copy_out(const sort_job *job, int src, int64_t lo, int64_t hi, int64_t row_base)
{
    if (src == job->out)
        return;
    if (job->keys[job->out] != NULL)
        memcpy(job->keys[job->out] + (size_t)lo * job->w, keys_at(job, src, lo),
               (size_t)(hi - lo) * job->w);
    if (!job->with_idx)
        return;
    if (src == AT_IN) {
        for (int64_t i = lo; i < hi; i++)
            job->index_out[i] = i - row_base;
    } else if (job->iw == sizeof(uint32_t)) {
        const uint32_t *s = (const uint32_t *)job->idx[src];
        for (int64_t i = lo; i < hi; i++)
            job->index_out[i] = s[i];
    } else {
        memcpy(job->index_out + lo, job->idx[src] + (size_t)lo * job->iw,
               (size_t)(hi - lo) * sizeof(int64_t));
    }
}

/* The digits among the nd counted in `counts` on which the n keys differ, ascending; returns
 * how many.  A digit that every key shares needs no pass. */
static int live_digits(const int64_t *counts, int nd, int64_t n, int *digits)
{
    int p = 0;

    for (int d = 0; d < nd; d++) {
        int shared = 0;
        for (int b = 0; b < GS_SORT_RADIX && !shared; b++)
            shared = counts[d * GS_SORT_RADIX + b] == n;
        if (!shared)
            digits[p++] = d;
    }
    return p;
}

/* The digits of x (0 for 0). */
static int span_digits(uint64_t x)
{
    int d = 0;

    for (; x != 0; x >>= 8)
        d++;
    return d;
}

/* Whether an MSD split of n keys with these bucket counts pays (GS_SORT_SPREAD). */
static int msd_pays(const sort_job *job, const int64_t *count, int64_t n)
{
    int64_t fit = 0, most = 0;

    if (n < GS_SORT_RADIX * GS_SORT_BUCKET_MIN)
        return 0;
    for (int b = 0; b < GS_SORT_RADIX; b++) {
        fit += count[b] <= job->cache_items ? count[b] : 0;
        most = count[b] > most ? count[b] : most;
    }
    return 2 * fit >= n || most * GS_SORT_SPREAD <= n;
}

/* off[b] = lo + the keys of the buckets before b. */
static void bucket_starts(const int64_t *count, int64_t lo, int64_t *off)
{
    for (int b = 0; b < GS_SORT_RADIX; b++) {
        off[b] = lo;
        lo += count[b];
    }
}

/* The blocks of at most GS_SORT_STOP_BLOCK keys of [lo, hi): [b, BLOCK_END(b, hi)). */
#define BLOCK_END(b, hi) ((hi) - (b) < GS_SORT_STOP_BLOCK ? (hi) : (b) + GS_SORT_STOP_BLOCK)

/* range[0] and range[1] = the least and the largest radix key of [lo, hi) at place src.  This
 * and the two below run a block at a time, asking between blocks whether the call stops: 1
 * when it does (what they wrote then means nothing), else 0. */
static int range_of(const sort_job *job, int src, int64_t lo, int64_t hi, uint64_t *range)
{
    for (int64_t b = lo; b < hi; b = BLOCK_END(b, hi)) {
        uint64_t r[2];
        if (b > lo && gs_cpu_stopping())
            return 1;
        job->k->range(keys_at(job, src, b), BLOCK_END(b, hi) - b, job->mask, r);
        range[0] = b == lo || r[0] < range[0] ? r[0] : range[0];
        range[1] = b == lo || r[1] > range[1] ? r[1] : range[1];
    }
    return 0;
}

/* counts += the histogram of [lo, hi) at place src: digits [0, nd) of key - base (nd 1 and
 * `shift` a digit's: that digit alone). */
static int hist_of(const sort_job *job, int src, int64_t lo, int64_t hi, uint64_t base, int nd,
                   int shift, int64_t *counts)
{
    for (int64_t b = lo; b < hi; b = BLOCK_END(b, hi)) {
        if (b > lo && gs_cpu_stopping())
            return 1;
        job->k->hist(keys_at(job, src, b), BLOCK_END(b, hi) - b, job->mask, base, nd, shift,
                     counts);
    }
    return 0;
}

/* One stable pass of [lo, hi) by digit d of key - base, from place src to place dst (bucket
 * b's keys from off[b] on, which it advances). */
static int pass(const sort_job *job, int src, int dst, int64_t lo, int64_t hi, int64_t row_base,
                int d, uint64_t base, int64_t *off)
{
    for (int64_t b = lo; b < hi; b = BLOCK_END(b, hi)) {
        if (b > lo && gs_cpu_stopping())
            return 1;
        job->k->pass(keys_at(job, src, b), idx_from(job, src, b), b - row_base, job->keys[dst],
                     idx_to(job, dst), dst == AT_OUT, BLOCK_END(b, hi) - b, 8 * d, job->mask, base,
                     off);
    }
    return 0;
}

/* The place the next of `left` passes from `at` writes, so that the last lands in the result:
 * with indices, the result itself for the last; for a sort alone (the result is B), from the
 * input the parity picks A or B first, else the two alternate. */
static int next_place(const sort_job *job, int at, int left)
{
    if (job->with_idx)
        return left == 1 ? AT_OUT : other(at);
    return at == AT_IN ? (left % 2 ? AT_B : AT_A) : other(at);
}

/* The longest range sorted by comparisons (cpu/sort_body.h's small). */
static int64_t small_max(const sort_job *job)
{
    return job->w == 8 ? GS_SORT_SMALL_WIDE : GS_SORT_SMALL;
}

/* [lo, hi) at place src sorted into the result by cpu/sort_qs.h: 1, or 0 when it declines. */
static int qsort_range(const sort_job *job, int src, int64_t lo, int64_t hi)
{
    return job->qs(keys_at(job, src, lo), job->keys[job->out] + (size_t)lo * job->w, hi - lo,
                   job->mask, job->qs_float);
}

/* ==== One range on one thread ===============================================================
 * The digits of a range are those of key - base, base its least key: keys of a narrow range
 * (small integers of both signs, whose every byte differs between -1 and 0) differ on the few
 * digits of their span alone, and the digits above it need neither a count nor a pass.
 * [lo, hi) of a row starting at row_base, at place src, sorted into the result; 1 when the
 * call stopped on the way (the result then meaning nothing), else 0. */
static int sort_range(const sort_job *job, int src, int64_t lo, int64_t hi, int64_t row_base)
{
    const int64_t n = hi - lo;
    int64_t counts[GS_SORT_MAX_DIGITS * GS_SORT_RADIX], off[GS_SORT_RADIX];
    int digits[GS_SORT_MAX_DIGITS];
    uint64_t range[2];
    int nd, p, at;

    if (job->qs != NULL && qsort_range(job, src, lo, hi))
        return 0;
#if GS_CPU_X86
    if (job->qs_arg && src == AT_IN && n > GS_SORT_SMALL) { /* A and B: room for n words */
        if ((job->w == 4 ? gs_qs_argsort_k32 : gs_qs_argsort_k64)(
                keys_at(job, src, lo), n, job->mask, job->qs_float, lo - row_base,
                job->index_out + lo, (uint64_t *)(void *)job->keys[AT_A] + lo))
            return 0; /* else the span's few radix passes, below */
    }
#endif
    if (n <= small_max(job)) {
        char *const keys = job->keys[job->out];
        job->k->small(keys_at(job, src, lo), idx_from(job, src, lo), lo - row_base,
                      keys != NULL ? keys + (size_t)lo * job->w : NULL,
                      job->with_idx ? job->index_out + lo : NULL, n, job->mask);
        return 0;
    }
    /* ---- the span, the histogram of its digits, and the digits that need a pass ---- */
    if (gs_cpu_stopping() || range_of(job, src, lo, hi, range))
        return 1;
    nd = span_digits(range[1] - range[0]);
    memset(counts, 0, sizeof(int64_t) * GS_SORT_RADIX * (size_t)nd);
    if (nd > 0 && hist_of(job, src, lo, hi, range[0], nd, 0, counts))
        return 1;
    p = live_digits(counts, nd, n, digits);
    if (p == 0) {
        copy_out(job, src, lo, hi, row_base);
        return 0;
    }
    /* ---- an MSD split of a range larger than the cache: then each bucket on its own ---- */
    if (p > 1 && n > job->cache_items && msd_pays(job, counts + digits[p - 1] * GS_SORT_RADIX, n)) {
        const int d = digits[p - 1], dst = other(src);
        int64_t start[GS_SORT_RADIX];
        bucket_starts(counts + d * GS_SORT_RADIX, lo, off);
        memcpy(start, off, sizeof(start));
        if (pass(job, src, dst, lo, hi, row_base, d, range[0], off))
            return 1;
        for (int b = 0; b < GS_SORT_RADIX; b++)
            if (off[b] > start[b] && sort_range(job, dst, start[b], off[b], row_base))
                return 1;
        return 0;
    }
    /* ---- LSD passes, the last into the result ---- */
    at = src;
    for (int i = 0; i < p; i++) {
        const int dst = next_place(job, at, p - i);
        bucket_starts(counts + digits[i] * GS_SORT_RADIX, lo, off);
        if (pass(job, at, dst, lo, hi, row_base, digits[i], range[0], off))
            return 1;
        at = dst;
    }
    copy_out(job, at, lo, hi, row_base);
    return 0;
}

/* ==== One long range on every thread ======================================================== */
static void chunk_bounds(const sort_job *job, int64_t c, int64_t *lo, int64_t *hi)
{
    *lo = job->lo + c * job->chunk;
    *hi = *lo + job->chunk < job->hi ? *lo + job->chunk : job->hi;
}

/* Chunk c's least and largest key. */
static void chunk_range(void *ctx, int64_t c)
{
    const sort_job *job = ctx;
    int64_t lo, hi;

    chunk_bounds(job, c, &lo, &hi);
    (void)range_of(job, job->src, lo, hi, job->ranges + 2 * c);
}

/* Chunk c's histogram: of the digits [0, job->nd) (all_digits), else of job->digit. */
static void chunk_hist(void *ctx, int64_t c)
{
    const sort_job *job = ctx;
    const int nd = job->all_digits ? job->nd : 1;
    int64_t *const counts = job->counts + c * nd * GS_SORT_RADIX;
    int64_t lo, hi;

    chunk_bounds(job, c, &lo, &hi);
    memset(counts, 0, sizeof(int64_t) * GS_SORT_RADIX * (size_t)nd);
    (void)hist_of(job, job->src, lo, hi, job->base, nd, job->all_digits ? 0 : 8 * job->digit,
                  counts);
}

static void chunk_pass(void *ctx, int64_t c)
{
    const sort_job *job = ctx;
    int64_t lo, hi;

    chunk_bounds(job, c, &lo, &hi);
    (void)pass(job, job->src, job->dst, lo, hi, job->row_base, job->digit, job->base,
               job->offs + c * GS_SORT_RADIX);
}

static void bucket_task(void *ctx, int64_t b)
{
    const sort_job *job = ctx;

    if (!job->big[b] && job->start[b + 1] > job->start[b])
        (void)sort_range(job, job->dst, job->start[b], job->start[b + 1], job->row_base);
}

/* The chunks' offsets for a pass, from their histograms (`stride` counters apart, the digit's
 * at `at` in each) and the range's (`total`): chunk c's keys of bucket b after the keys of the
 * buckets before b and after those of b in the chunks before c. */
static void chunk_offsets(sort_job *job, int64_t chunks, int stride, int at, const int64_t *total)
{
    int64_t start[GS_SORT_RADIX];

    bucket_starts(total, job->lo, start);
    for (int b = 0; b < GS_SORT_RADIX; b++)
        for (int64_t c = 0; c < chunks; c++) {
            job->offs[c * GS_SORT_RADIX + b] = start[b];
            start[b] += job->counts[c * stride + at + b];
        }
}

/* fn over `tasks` tasks on every thread; 1 when the call stopped (host/pool.h), else 0. */
static int par(sort_job *job, int64_t tasks, void (*fn)(void *, int64_t))
{
    return gs_cpu_parallel_for(tasks, fn, job) < 0 || gs_cpu_stopping();
}

/* The LSD passes of job's range (its chunks' histograms of every digit in job->counts, their
 * sum in `total`) by the p digits `digits`, each pass in chunks, from place src into the
 * result. */
static int par_lsd(sort_job *job, int64_t chunks, int src, const int64_t *total, const int *digits,
                   int p)
{
    int at = src;

    for (int i = 0; i < p; i++) {
        if (i > 0) { /* the chunks' histograms of the order the previous pass left */
            job->src = at;
            job->all_digits = 0;
            job->digit = digits[i];
            if (par(job, chunks, chunk_hist))
                return 1;
        }
        chunk_offsets(job, chunks, i > 0 ? GS_SORT_RADIX : job->nd * GS_SORT_RADIX,
                      i > 0 ? 0 : digits[i] * GS_SORT_RADIX, total + digits[i] * GS_SORT_RADIX);
        job->src = at;
        job->dst = next_place(job, at, p - i);
        job->digit = digits[i];
        if (par(job, chunks, chunk_pass))
            return 1;
        at = job->dst;
    }
    copy_out(job, at, job->lo, job->hi, job->row_base);
    return 0;
}

/* [lo, hi) (of a row from row_base, at place src) sorted into the result on every thread: the
 * chunks' spans and histograms, then an MSD split and the buckets in parallel (one thread
 * each; a large one after them, by this function again), or the LSD passes, each in chunks.
 * job->counts, job->ranges and job->offs have room for gs_cpu_threads() *
 * GS_SORT_CHUNKS_PER_THREAD chunks.  1 when the call stopped on the way, else 0. */
static int par_range(sort_job *job, int src, int64_t lo, int64_t hi, int64_t row_base)
{
    const int64_t n = hi - lo;
    int64_t total[GS_SORT_MAX_DIGITS * GS_SORT_RADIX], start[GS_SORT_RADIX + 1];
    unsigned char big[GS_SORT_RADIX];
    int digits[GS_SORT_MAX_DIGITS];
    int64_t chunks = gs_cpu_threads() * GS_SORT_CHUNKS_PER_THREAD, chunk, big_min;
    uint64_t least, most;
    int nd, p, d;

    chunk = (n + chunks - 1) / chunks;
    chunk = chunk < GS_SORT_CHUNK_MIN ? GS_SORT_CHUNK_MIN : chunk;
    chunks = (n + chunk - 1) / chunk;
    job->lo = lo;
    job->hi = hi;
    job->chunk = chunk;
    job->row_base = row_base;
    job->src = src;

    /* ---- the span, the histograms of its digits, and the digits that need a pass ---- */
    if (par(job, chunks, chunk_range))
        return 1;
    least = job->ranges[0];
    most = job->ranges[1];
    for (int64_t c = 1; c < chunks; c++) {
        least = job->ranges[2 * c] < least ? job->ranges[2 * c] : least;
        most = job->ranges[2 * c + 1] > most ? job->ranges[2 * c + 1] : most;
    }
    job->base = least;
    job->nd = nd = span_digits(most - least);
    job->all_digits = 1;
    if (nd > 0 && par(job, chunks, chunk_hist))
        return 1;
    memset(total, 0, sizeof(int64_t) * GS_SORT_RADIX * (size_t)nd);
    for (int64_t c = 0; c < chunks; c++)
        for (int i = 0; i < nd * GS_SORT_RADIX; i++)
            total[i] += job->counts[c * nd * GS_SORT_RADIX + i];
    p = live_digits(total, nd, n, digits);
    if (p == 0) {
        copy_out(job, src, lo, hi, row_base);
        return 0;
    }
    d = digits[p - 1];
    if (p == 1 || n <= job->cache_items || !msd_pays(job, total + d * GS_SORT_RADIX, n))
        return par_lsd(job, chunks, src, total, digits, p);

    /* ---- the MSD split in chunks, then the buckets in parallel ---- */
    chunk_offsets(job, chunks, nd * GS_SORT_RADIX, d * GS_SORT_RADIX, total + d * GS_SORT_RADIX);
    job->dst = other(src);
    job->digit = d;
    if (par(job, chunks, chunk_pass))
        return 1;
    bucket_starts(total + d * GS_SORT_RADIX, lo, start);
    start[GS_SORT_RADIX] = hi;
    big_min = n / (2 * (int64_t)gs_cpu_threads());
    big_min = big_min < GS_SORT_PARALLEL_MIN ? GS_SORT_PARALLEL_MIN : big_min;
    for (int b = 0; b < GS_SORT_RADIX; b++)
        big[b] = start[b + 1] - start[b] >= big_min;
    job->big = big;
    job->start = start;
    if (par(job, GS_SORT_RADIX, bucket_task))
        return 1;
    for (int b = 0; b < GS_SORT_RADIX; b++)
        if (big[b] && par_range(job, other(src), start[b], start[b + 1], row_base))
            return 1;
    return 0;
}

/* ==== Many rows: each on one thread, rows in parallel ======================================= */
static void rows_task(void *ctx, int64_t t)
{
    const sort_job *job = ctx;
    const int64_t per = (GS_SORT_ROW_TASK + job->row_len - 1) / job->row_len;
    const int64_t r0 = t * per, r1 = r0 + per < job->rows ? r0 + per : job->rows;

    for (int64_t r = r0; r < r1; r++)
        if (sort_range(job, AT_IN, r * job->row_len, (r + 1) * job->row_len, r * job->row_len))
            return;
}

/* ==== The temporaries, kept between calls =================================================
 * A and B of one call are one block.  The block of the last call is kept for the next when it
 * is at most GS_SORT_KEEP_BYTES, so that repeated sorts of similar sizes touch no new page: a
 * fresh page costs a fault and the kernel's clearing, about a third of a sort of 10^6 keys on
 * a virtual machine.  One block is kept at a time (taken and given back by atomic exchange, so
 * that concurrent calls each hold their own); gs_cpu_sort_release gives it back to the system. */
typedef struct sort_block {
    size_t bytes; /* usable bytes after the header */
    max_align_t data[];
} sort_block;

static _Atomic(sort_block *) gs_sort_kept;

/* A block of at least `bytes`: the kept one when it is large enough, else a new one. */
static sort_block *block_take(size_t bytes)
{
    sort_block *b = atomic_exchange(&gs_sort_kept, NULL);

    if (b != NULL && b->bytes >= bytes)
        return b;
    free(b);
    if ((b = malloc(sizeof(sort_block) + bytes)) != NULL)
        b->bytes = bytes;
    return b;
}

/* The call's block kept for the next (the one kept before it freed), or freed when large. */
static void block_give(sort_block *b)
{
    if (b != NULL && b->bytes > GS_SORT_KEEP_BYTES) {
        free(b);
        return;
    }
    free(atomic_exchange(&gs_sort_kept, b));
}

size_t gs_cpu_sort_release(void)
{
    sort_block *b = atomic_exchange(&gs_sort_kept, NULL);
    const size_t bytes = b != NULL ? b->bytes : 0;

    free(b);
    return bytes;
}

/* Round up to a cache line, so that each place starts on one. */
static size_t line_up(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

/* The job of d: its key shape, mask and places (A and B carved from `block`, which it needs
 * job_bytes() of).  -EINVAL for a dtype it does not sort. */
static int job_init(sort_job *job, const gs_sort_desc *d)
{
    const char kind = gs_dtype_kind(d->type);
    const int wide_idx = d->row_len > (int64_t)UINT32_MAX; /* positions need 64 bits */
    int shape;

    memset(job, 0, sizeof(*job));
    job->w = gs_dtype_size(d->type);
    job->digits = (int)job->w;
    switch (kind) {
    case 'f':
        shape = job->w == 4 ? 4 : 5;
        break;
    case 'b':
    case 'i':
    case 'u':
        shape = job->w == 1 ? 0 : job->w == 2 ? 1 : job->w == 4 ? 2 : 3;
        if (kind == 'i')
            job->mask = (uint64_t)1 << (8 * job->w - 1); /* the sign bit: negatives first */
        break;
    default:
        return -EINVAL;
    }
    job->k = &sort_kernels_of[shape][wide_idx];
    if (d->descending) /* every bit: largest first (floats: NaNs stay last) */
        job->mask ^= job->w == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * job->w)) - 1;
    job->iw = wide_idx ? sizeof(int64_t) : sizeof(uint32_t);
    job->in = d->keys;
    job->row_len = d->row_len;
    job->rows = d->rows;
    job->with_idx = d->index_out != NULL;
    job->index_out = d->index_out;
    job->cache_items =
        GS_SORT_CACHE_BYTES / (2 * (int64_t)(job->w + (job->with_idx ? job->iw : 0)));
    job->out = job->with_idx ? AT_OUT : AT_B;
#if GS_CPU_X86
    /* a sort alone of 32- or 64-bit keys: equal keys are the same bits (floats: cpu/sort_qs.h);
     * an argsort alone: each key (32 bits of it at a time) with its position in a 64-bit word */
    if ((job->w == 4 || job->w == 8) && gs_cpu_isa() == GS_ISA_AVX512) {
        job->qs = job->with_idx ? NULL : job->w == 4 ? gs_qs_sort_u32 : gs_qs_sort_u64;
        job->qs_arg = job->with_idx && d->keys_out == NULL && !wide_idx;
        job->qs_float = kind == 'f';
    }
#endif
    job->keys[job->out] = d->keys_out;
    return 0;
}

/* The bytes of A and B (keys, and indices for an argsort): none when every row is sorted by
 * comparisons, from the input straight into the result (an argsort by cpu/sort_qs.h takes
 * rows longer than GS_SORT_SMALL: sort_range). */
static size_t job_bytes(const sort_job *job)
{
    const size_t n = (size_t)(job->rows * job->row_len);

    if (job->row_len <= (job->qs_arg ? GS_SORT_SMALL : small_max(job)))
        return 0;
    return line_up(n * job->w) +
           (job->with_idx ? line_up(n * job->w) + 2 * line_up(n * job->iw) : 0);
}

/* A and B carved from `at` (job_bytes of them). */
static void job_places(sort_job *job, char *at)
{
    const size_t n = (size_t)(job->rows * job->row_len);

    job->keys[AT_A] = at;
    if (!job->with_idx)
        return;
    job->keys[AT_B] = at += line_up(n * job->w);
    job->idx[AT_A] = at += line_up(n * job->w);
    job->idx[AT_B] = at + line_up(n * job->iw);
}

/* A few long rows, each on every thread. */
static int long_rows(sort_job *job)
{
    const int64_t chunks = gs_cpu_threads() * GS_SORT_CHUNKS_PER_THREAD;
    int rc = 0;

    job->counts = malloc((size_t)chunks * GS_SORT_MAX_DIGITS * GS_SORT_RADIX * sizeof(int64_t));
    job->offs = malloc((size_t)chunks * GS_SORT_RADIX * sizeof(int64_t));
    job->ranges = malloc((size_t)chunks * 2 * sizeof(uint64_t));
    if (job->counts == NULL || job->offs == NULL || job->ranges == NULL)
        rc = -ENOMEM;
    for (int64_t r = 0; r < job->rows && rc == 0; r++)
        if (par_range(job, AT_IN, r * job->row_len, (r + 1) * job->row_len, r * job->row_len))
            break;
    free(job->counts);
    free(job->offs);
    free(job->ranges);
    return rc;
}

/* A few long rows, each by cpu/sort_qs.h's quicksort split over the threads: 1, or 0 when
 * the quicksort declined a row (the rows then mean nothing). */
static int qs_rows(sort_job *job, int threads)
{
#if GS_CPU_X86
    const size_t bytes = (size_t)job->row_len * job->w;
    for (int64_t r = 0; r < job->rows && !gs_cpu_stopping(); r++) {
        const char *src = job->in + r * bytes;
        char *dst = job->keys[job->out] + r * bytes, *tmp = job->keys[AT_A] + r * bytes;
        if (!(job->w == 4 ? gs_qs_sort_par_u32 : gs_qs_sort_par_u64)(
                src, dst, tmp, job->row_len, job->mask, job->qs_float, threads))
            return 0;
    }
    return 1;
#else
    (void)job, (void)threads;
    return 0;
#endif
}

int gs_cpu_sort(const gs_sort_desc *d)
{
    const int64_t n = d->rows * d->row_len;
    const int threads = gs_cpu_threads();
    sort_block *block = NULL;
    sort_job job;
    size_t bytes;
    int rc;

    if (d->rows <= 0 || d->row_len <= 0)
        return 0;
    if ((rc = job_init(&job, d)) < 0)
        return rc;
    if ((bytes = job_bytes(&job)) > 0) {
        if ((block = block_take(bytes)) == NULL)
            return -ENOMEM;
        job_places(&job, (char *)block->data);
    }

    /* ---- a few long rows: each on every thread; else the rows in parallel ---- */
    const int few_long = threads > 1 && d->rows < 2 * (int64_t)threads;
    if (few_long && d->row_len >= GS_SORT_QS_PAR_MIN && job.qs != NULL) {
        if (!qs_rows(&job, threads)) {
            job.qs = NULL; /* a row the quicksort declined: every row by the radix sort */
            rc = long_rows(&job);
        }
    } else if (few_long && d->row_len >= GS_SORT_LONG_MIN && job.qs == NULL &&
               !(job.qs_arg && job.w == 8 && gs_cpu_threads() < GS_SORT_ARG64_THREADS)) {
        /* (on fewer threads an argsort alone of 64-bit keys is left to one thread's quicksort,
         * sort_range: at 10^6 and 10^7 keys 1.3-1.7x as fast as the radix passes on two cores,
         * which the passes on four or more outrun) */
        rc = long_rows(&job);
    } else {
        const int64_t per = (GS_SORT_ROW_TASK + d->row_len - 1) / d->row_len;
        const int64_t tasks = (d->rows + per - 1) / per;
        if (threads > 1 && n >= GS_SORT_PARALLEL_MIN)
            (void)gs_cpu_parallel_for(tasks, rows_task, &job);
        else /* one thread: the tasks in turn, asking between them whether the call stops */
            for (int64_t t = 0; t < tasks && (t == 0 || !gs_cpu_stopping()); t++)
                rows_task(&job, t);
    }
    block_give(block);
    return rc;
}
