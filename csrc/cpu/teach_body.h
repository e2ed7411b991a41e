/*
 * cpu/teach_body.h - the teaching scans' loops for one dtype: written once, included once per
 * dtype by cpu/teach.c through cpu/stamp.h (no include guard on purpose).
 *
 * Level: backend (CPU), the innermost level: one parallel step of Hillis-Steele or of
 * Blelloch's tree over a range of its units (elements or tree nodes), exactly as the CUDA
 * kernels of kernels/agent/teach.cuh do it per thread, counting the operator applications.
 * The operators are cpu/operators.h's (the earlier operand first).
 */

#define GS_FN(name) GS_NAME(name, GS_SFX)

#include "cpu/operators.h"

/* The identity the teaching scans use: cpu/operators.h's, except +0 (not -0) for float add, as the
 * CUDA kernels have it, so an exclusive scan starts with +0.0 on both backends (the contract's
 * identity of add is 0; -0 would show as -0.0 in the result). */
static GS_ALWAYS_INLINE GS_T GS_FN(teach_identity)(gs_op op)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD)
        return (GS_T)0.0;
#endif
    return GS_FN(op_identity)(op);
}

static void GS_FN(identity_into)(gs_op op, void *dst)
{
    *(GS_T *)dst = GS_FN(teach_identity)(op);
}

/*
 * The working array of a scan: rows of m values, row r holding input row r (row_len values,
 * read at in_t: the same dtype, or a narrower one widened by cpu/widen.h), shifted right by one
 * with the identity in front when `shift`, and the identity past row_len (a complete tree).
 */
static void GS_FN(load)(const gs_scan_desc *d, int64_t row_len, void *dst, int64_t m, int shift)
{
    const GS_T id = GS_FN(teach_identity)(d->op);
    const int64_t rows = d->n / row_len;
    GS_T *w = dst;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t p = 0; p < m; p++) {
            int64_t q = p - (shift ? 1 : 0);
            GS_T v = id;
            if (p < row_len && q >= 0) {
                if (d->in_type == d->out_type)
                    v = ((const GS_T *)d->in)[r * row_len + q];
                else
                    v = (GS_T)gs_widen_u64_at(d->in, d->in_type, r * row_len + q);
            }
            w[r * m + p] = v;
        }
    }
}

/* Units [from, to) of one step (see gs_step_desc); the combines it made are added to *count. */
static void GS_FN(step_range)(const gs_step_desc *d, int64_t from, int64_t to,
                              unsigned long long *count)
{
    const gs_op op = d->op;
    const GS_T id = GS_FN(teach_identity)(op);
    GS_T *x = d->buf;
    const GS_T *src = d->src;
    unsigned long long c = 0;

    if (d->kind == GS_STEP_HS) {
        for (int64_t i = from; i < to; i++) {
            GS_T v = src[i];
            if (i % d->m >= d->s) {
                v = GS_FN(op)(op, src[i - d->s], v);
                c++;
            }
            x[i] = v;
        }
    } else if (d->kind == GS_STEP_INCL) {
        for (int64_t i = from; i < to; i++) {
            if (i % d->m < d->len) {
                x[i] = GS_FN(op)(op, x[i], src[i]);
                c++;
            }
        }
    } else {
        const int64_t per_row = d->m / (2 * d->s);
        for (int64_t j = from; j < to; j++) {
            const int64_t base = j / per_row * d->m + j % per_row * 2 * d->s;
            const int64_t ai = base + d->s - 1, bi = base + 2 * d->s - 1;
            if (d->kind == GS_STEP_UP) {
                if (d->fup == NULL || !d->fup[bi]) {
                    x[bi] = GS_FN(op)(op, x[ai], x[bi]);
                    c++;
                }
                if (d->fup != NULL)
                    d->fup[bi] |= d->fup[ai];
                continue;
            }
            const GS_T t = x[ai], parent = d->clear_root ? id : x[bi];
            x[ai] = parent;
            if (d->fup != NULL && d->forig[base + d->s]) {
                x[bi] = id; /* the right child starts a segment */
            } else if (d->fup != NULL && d->fup[ai]) {
                x[bi] = t; /* a head in the left child: its sum since that head */
            } else {
                x[bi] = GS_FN(op)(op, parent, t);
                c++;
            }
            if (d->fup != NULL)
                d->fup[ai] = 0;
        }
    }
    *count += c;
}

/* Ties the dtype's kind letter to the table's entry, checked by cpu/stamp.h. */
enum { GS_FN(kind_letter) = GS_KIND };

#undef GS_FN
