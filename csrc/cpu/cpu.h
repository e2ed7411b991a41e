/*
 * cpu/cpu.h - the CPU backend: real multi-threaded C over flat buffers.
 *
 * Level: backend (CPU).  Sees only the descriptors of gpuscan/desc.h; knows nothing of Python.
 * Called with the GIL released.  Every function returns 0 on success or a negative errno-style code
 * (-ENOMEM: a thread or buffer could not be made) and leaves no thread or allocation behind on
 * either path.
 */
#ifndef GS_CPU_H
#define GS_CPU_H

#include "gpuscan/backend.h"
#include "host/pool.h"

/* ---- Shared by the backend's own files (cpu_*.c) ----------------------------------------- */

#define GS_ALWAYS_INLINE inline __attribute__((always_inline))

/* One value of any dtype. */
typedef union gs_val {
#define GS_X_FIELD(code, ctype, sfx, kind, npy) ctype sfx;
    GS_DTYPES(GS_X_FIELD)
#undef GS_X_FIELD
} gs_val;

/* The instruction set the backend's loops run with (cpu/simd.h): "base", or "avx2" or "avx512" on
 * x86-64 processors that have them, unless $GPUSCAN_CPU_SIMD asks for another. */
const char *gs_cpu_isa_name(void);

/* Columns per task when `groups` independent groups of `inner` columns (the blocks of an axis
 * read in place: cpu/scan.c, cpu/reduce.c) are cut into tiles: `max_tile` when the groups alone
 * make at least `want` tasks, else narrower tiles (a multiple of 32 values, at least 64) so that
 * groups * tiles reaches `want`.  Each column's result depends on that column alone, so the tiles
 * change no bit. */
static inline int64_t gs_cpu_tile(int64_t inner, int64_t groups, int64_t want, int64_t max_tile)
{
    if (groups >= want)
        return max_tile;
    int64_t per_group = (want + groups - 1) / groups;
    int64_t tile = ((inner + per_group - 1) / per_group + 31) / 32 * 32;
    return tile < 64 ? 64 : tile > max_tile ? max_tile : tile;
}

/* Scan as described by `d` (see gs_scan_desc).  Integers bit-identical to NumPy; float add
 * within the contract's bound at every n (compensated carries). */
int gs_cpu_scan(const gs_scan_desc *d);

/* Reduction as described by `d` (see gs_reduce_desc): integers bit-identical to NumPy; float
 * add compensated, within the bound; the grouping depends on rows and row_len only. */
int gs_cpu_reduce(const gs_reduce_desc *d);

/* Many short rows of one reduction, one at a time (cpu/segreduce.c's segments): settled once by
 * gs_cpu_short_init (0, or -EINVAL for what gs_cpu_reduce refuses; d's in, out and sizes are not
 * read), then gs_cpu_reduce_short(s, in, len, out) writes the reduction of the len values at `in`
 * (1 <= len <= GS_REDUCE_MIN_CHUNK) to `out`: the bits gs_cpu_reduce gives for that one row, on
 * the calling thread, without its per-call settling. */
typedef struct gs_cpu_short {
    const void *k; /* cpu/reduce.c's kernels of the accumulation dtype */
    gs_op op;
    gs_dtype in_type;
    int widen, plus_zero;
} gs_cpu_short;
int gs_cpu_short_init(gs_cpu_short *s, const gs_reduce_desc *d);
void gs_cpu_reduce_short(const gs_cpu_short *s, const void *in, int64_t len, void *out);

/* Split or compact as described by `d` (see gs_split_desc); *count receives the flagged count.
 * With d->out == NULL it only counts.  Stable; the same bytes on any thread count. */
int gs_cpu_split(const gs_split_desc *d, int64_t *count);
/* Segmented reduction as described by `d` (see gs_segreduce_desc): each segment reduced by
 * gs_cpu_reduce, so as deterministic and accurate as a reduction (cpu/segreduce.c). */
int gs_cpu_segreduce(const gs_segreduce_desc *d);

/* The segment heads of d->flags (element 0 and every nonzero flag, of d->flag_type): their
 * number into *count and, unless `positions` is NULL, their positions, ascending, into it
 * (cpu/segreduce.c). */
int gs_cpu_heads(const gs_split_desc *d, int64_t *positions, int64_t *count);

/* reduceat's m indices against [0, n): *first_bad the first position outside (-1: none),
 * *increasing whether they strictly increase (cpu/segreduce.c). */
int gs_cpu_index_check(const int64_t *idx, int64_t m, int64_t n, int64_t *first_bad,
                       int *increasing);

/* First-order linear recurrences as described by `d` (see gs_linrec_desc): double-double
 * carries, a grouping fixed by row_len (cpu/linrec.c). */
int gs_cpu_linrec(const gs_linrec_desc *d);

/* Sort or argsort as described by `d` (see gs_sort_desc): a stable radix sort in NumPy's order,
 * the same bytes on every thread count (cpu/sort.c).  -ENOMEM when its buffers cannot be
 * allocated, -EINVAL for a dtype it does not sort. */
int gs_cpu_sort(const gs_sort_desc *d);
/* The temporaries the last sort kept for the next (cpu/sort.c), given back to the system;
 * returns their bytes. */
size_t gs_cpu_sort_release(void);

/* ---- The teaching scans (cpu/teach.c) --------------------------------------------------- */

/* A scan with d->algorithm GS_ALGO_HILLIS_STEELE or GS_ALGO_BLELLOCH, run step by step as its
 * CUDA version (gs_cpu_scan hands these over). */
int gs_cpu_teach_scan(const gs_scan_desc *d);

/* One parallel step of a teaching algorithm (gs_step_desc), counting into d->work. */
int gs_cpu_step(const gs_step_desc *d);

/* The identity of `op` for dtype t, written to dst (one value of t). */
void gs_cpu_identity(gs_op op, gs_dtype t, void *dst);

/* Histogram or bincount as described by `d` (see gs_hist_desc): counts and integer sums exact,
 * float sums in double; per-thread histograms, then merged.  -ENOMEM when they cannot be
 * allocated. */
int gs_cpu_hist(const gs_hist_desc *d);

#endif /* GS_CPU_H */
