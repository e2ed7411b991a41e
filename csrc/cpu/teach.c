/*
 * cpu/teach.c - the teaching scans on the CPU backend: Hillis-Steele and Blelloch (plain and
 * flagged), run with the step structure of their CUDA versions.
 *
 * Level: backend (CPU).  Sees gs_scan_desc and gs_step_desc (gpuscan/desc.h)
 * over flat buffers; the loops live in cpu/teach_body.h, stamped once per dtype; the threads come
 * from cpu/pool.c.  Each parallel step is one loop over its units (elements, or the nodes of one
 * level of the tree), cut into chunks that the pool runs in parallel when the step is large;
 * a step finishes before the next starts, as a kernel launch does on the device.
 *
 *   Hillis-Steele  the input loaded into a working array (shifted right by one, identity in
 *                  front, for an exclusive scan), then ceil(log2 row_len) steps between two
 *                  buffers that swap roles, the last one writing the output;
 *   Blelloch       each row loaded into a working array padded with the identity to the next
 *                  power of two m, log2 m up-sweep steps, log2 m down-sweep steps (the first
 *                  resets the root), and for an inclusive scan one more step that combines the
 *                  input back in.  Segmented: the flagged sweeps over the whole array.
 * Results are deterministic (fixed trees, independent of the thread count); integers equal the
 * production scan's.  Float add is a tree sum (error <= depth * eps * sum|x|).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "cpu/flags.h"
#include "cpu/widen.h"
#include "gpuscan/teach_config.h"

/* Units of a step per task: a few microseconds of work, far above the cost of a task. */
#define GS_TEACH_CHUNK 4096
/* Steps with fewer units run on the calling thread (waking the workers costs more). */
#define GS_TEACH_PARALLEL_MIN (16 * GS_TEACH_CHUNK)

#define GS_PASTE(a, b) gs_teach_##a##_##b
#define GS_NAME(a, b) GS_PASTE(a, b)

#define GS_CPU_BODY "cpu/teach_body.h"
#include "cpu/stamp.h"
#undef GS_CPU_BODY

typedef struct gs_teach_fns {
    void (*identity_into)(gs_op op, void *dst);
    void (*load)(const gs_scan_desc *d, int64_t row_len, void *dst, int64_t m, int shift);
    void (*step_range)(const gs_step_desc *d, int64_t from, int64_t to, unsigned long long *count);
} gs_teach_fns;

#define GS_X_FNS(code, ctype, sfx, kind, npy) \
    [code] = { GS_NAME(identity_into, sfx), GS_NAME(load, sfx), GS_NAME(step_range, sfx) },
static const gs_teach_fns gs_teach_of[GS_NDTYPES] = { GS_DTYPES(GS_X_FNS) };
#undef GS_X_FNS

/* ---- One step ------------------------------------------------------------------------------ */

typedef struct gs_step_job {
    const gs_step_desc *d;
    int64_t units;
} gs_step_job;

static void gs_step_task(void *ctx, int64_t task)
{
    const gs_step_job *j = ctx;
    const int64_t from = task * GS_TEACH_CHUNK;
    const int64_t to = from + GS_TEACH_CHUNK < j->units ? from + GS_TEACH_CHUNK : j->units;
    unsigned long long count = 0;
    gs_teach_of[j->d->type].step_range(j->d, from, to, &count);
    if (j->d->work != NULL && count > 0)
        __atomic_fetch_add(j->d->work, count, __ATOMIC_RELAXED);
}

int gs_cpu_step(const gs_step_desc *d)
{
    gs_step_job j;
    int64_t ntasks;

    if (d->type < 0 || d->type >= GS_NDTYPES || d->op < 0 || d->op >= GS_NOPS || d->rows < 0 ||
        d->m <= 0 || d->s <= 0 ||
        (d->kind != GS_STEP_HS && d->kind != GS_STEP_INCL &&
         (d->m % (2 * d->s) != 0 || d->kind > GS_STEP_INCL)))
        return -EINVAL;
    j.d = d;
    j.units = d->kind == GS_STEP_HS || d->kind == GS_STEP_INCL ? d->rows * d->m
                                                               : d->rows * (d->m / (2 * d->s));
    ntasks = (j.units + GS_TEACH_CHUNK - 1) / GS_TEACH_CHUNK;
    if (j.units >= GS_TEACH_PARALLEL_MIN && gs_cpu_threads() > 1)
        return gs_cpu_parallel_for(ntasks, gs_step_task, &j);
    for (int64_t t = 0; t < ntasks; t++) {
        if (t > 0 && gs_cpu_stopping()) /* Ctrl-C (host/pool.h), between tasks as the pool */
            return -EINTR;
        gs_step_task(&j, t);
    }
    return 0;
}

/* ---- Whole scans ----------------------------------------------------------------------------- */

static int gs_cpu_hillis_steele(const gs_scan_desc *d, int64_t row_len)
{
    const size_t bytes = (size_t)d->n * gs_dtype_size(d->out_type);
    const int steps = gs_ceil_log2(row_len);
    char *a = malloc(bytes), *b = malloc(bytes);
    gs_step_desc s;
    int rc = 0;

    if (a == NULL || b == NULL) {
        rc = -ENOMEM;
        goto finally;
    }
    gs_teach_of[d->out_type].load(d, row_len, a, row_len, d->exclusive);
    memset(&s, 0, sizeof(s));
    s.rows = d->n / row_len;
    s.m = row_len;
    s.type = d->out_type;
    s.op = d->op;
    s.kind = GS_STEP_HS;
    s.src = a;
    for (int k = 0; k < steps && rc == 0; k++) {
        /* Double buffering: read the array the last step wrote, write the other one; the last
         * step writes the output (the input was consumed by the load). */
        s.buf = k == steps - 1 ? d->out : (s.src == a ? b : a);
        s.s = (int64_t)1 << k;
        rc = gs_cpu_step(&s);
        s.src = s.buf;
    }
    if (steps == 0)
        memcpy(d->out, a, bytes);
finally:
    free(a);
    free(b);
    return rc;
}

static int gs_cpu_blelloch(const gs_scan_desc *d, int64_t row_len)
{
    const size_t size = gs_dtype_size(d->out_type);
    const int64_t rows = d->n / row_len, m = (int64_t)1 << gs_ceil_log2(row_len);
    char *w = malloc((size_t)(rows * m) * size);
    char *x = d->exclusive ? NULL : malloc((size_t)(rows * m) * size);
    unsigned char *fup = d->flags != NULL ? malloc((size_t)m) : NULL;
    unsigned char *forig = d->flags != NULL ? malloc((size_t)m) : NULL;
    gs_step_desc s;
    int rc = 0;

    if (w == NULL || (!d->exclusive && x == NULL) || (d->flags != NULL && (!fup || !forig))) {
        rc = -ENOMEM;
        goto finally;
    }
    gs_teach_of[d->out_type].load(d, row_len, w, m, 0);
    if (x != NULL)
        memcpy(x, w, (size_t)(rows * m) * size);
    if (d->flags != NULL)
        for (int64_t i = 0; i < m; i++)
            fup[i] = forig[i] = i < row_len && gs_flag_set(d->flags, d->flag_type, i);
    memset(&s, 0, sizeof(s));
    s.buf = w;
    s.fup = fup;
    s.forig = forig;
    s.rows = rows;
    s.m = m;
    s.type = d->out_type;
    s.op = d->op;
    /* ---- Up-sweep, then down-sweep from the reset root. ---- */
    s.kind = GS_STEP_UP;
    for (s.s = 1; s.s < m && rc == 0; s.s *= 2)
        rc = gs_cpu_step(&s);
    s.kind = GS_STEP_DOWN;
    for (s.s = m / 2; s.s >= 1 && rc == 0; s.s /= 2) {
        s.clear_root = s.s == m / 2;
        rc = gs_cpu_step(&s);
    }
    if (m == 1) /* no tree: the exclusive scan of one value is the identity */
        for (int64_t r = 0; r < rows; r++)
            gs_teach_of[d->out_type].identity_into(d->op, w + (size_t)r * size);
    /* ---- Inclusive: the input combined back in. ---- */
    if (x != NULL && rc == 0) {
        s.kind = GS_STEP_INCL;
        s.src = x;
        s.s = 1;
        s.len = row_len;
        rc = gs_cpu_step(&s);
    }
    for (int64_t r = 0; r < rows && rc == 0; r++)
        memcpy((char *)d->out + (size_t)(r * row_len) * size, w + (size_t)(r * m) * size,
               (size_t)row_len * size);
finally:
    free(w);
    free(x);
    free(fup);
    free(forig);
    return rc;
}

int gs_cpu_teach_scan(const gs_scan_desc *d)
{
    const int64_t row_len = d->row_len > 0 ? d->row_len : d->n;
    if (d->n == 0)
        return 0;
    if (d->algorithm == GS_ALGO_HILLIS_STEELE && d->flags == NULL)
        return gs_cpu_hillis_steele(d, row_len);
    if (d->algorithm == GS_ALGO_BLELLOCH)
        return gs_cpu_blelloch(d, row_len);
    return -EINVAL;
}

void gs_cpu_identity(gs_op op, gs_dtype t, void *dst)
{
    gs_teach_of[t].identity_into(op, dst);
}
