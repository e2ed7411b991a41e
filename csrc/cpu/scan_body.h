/*
 * cpu/scan_body.h - the scan loops of one dtype and one instruction set: written once, included
 * once per dtype and set by cpu/scan.c through cpu/stamp_isa.h (no include guard on purpose).
 *
 * Level: backend (CPU), the innermost level of the CPU scan: loops over a contiguous run
 * of values with no segment head inside.  cpu/scan.c splits a scan into chunks and runs, and
 * combines the chunks' carries; this file only scans values from a state.
 *
 * The includer defines cpu/stamp.h's and cpu/stamp_isa.h's parameters (GS_T, GS_U, GS_I,
 * GS_SIZE, GS_SFX, GS_KIND, GS_MIN, GS_MAX, GS_ISA, GS_ISA_ATTR, GS_ISA_WIDE) and finds gs_val,
 * gs_carry, GS_ALWAYS_INLINE and GS_NAME already defined.
 *
 * One run: apply(op, in, out, len, exclusive, cin, c) scans in[0, len) from the state *c and
 * leaves in *c the state after it.  Output i is cin (op) state-so-far (op) in[i] (in[i] left out
 * when exclusive); cin is the chunk's carry for float add and mul, whose state starts from the
 * identity at each chunk so that phase 1 (no output) computes the very state that the scan of
 * the chunk reaches; for every other op cin is NULL and the carry is the starting state.
 *
 * Loops.  dtypes of 4 and 8 bytes run over vectors of GS_W values (cpu/vec.h): each vector is
 * scanned in itself (a tree of depth log2 GS_W), combined with the state, and its total folded
 * into the state; the last, partial vector is padded with the identity.  Everything depends on
 * the run's start and length only, and every instruction set does the same operations, so the
 * bits do not depend on the machine.  1- and 2-byte dtypes (bool, int8/16, uint8/16: exact ops
 * only) run one value at a time.
 *
 * Guarantees: integers wrap modulo 2^k (bit-identical to NumPy); bool add/max/or are logical or,
 * mul/min/and logical and; float min/max return the first NaN met, else NumPy's operand on ties
 * (every tree gives the sequential answer: the ops are associative, NaNs and ties included);
 * float add keeps the state as a compensated pair (TwoSum of each vector's total; the pair's
 * error is masked out when it is zero or not finite, so a sum of -0 stays -0 and an inf stays
 * inf) and output i = hi + (v_i + lo) (+ the carry, likewise): at most ~3.5 eps * sum|x| from
 * the exact prefix at any n (the contract: (log2 n + 2) eps * sum|x|); float mul is the running
 * product in the same tree, at most i + 1 roundings from the exact one.
 */

#define GS_FN(name) GS_NAME(name, GS_SFX)

#include "cpu/operators.h"

/* The identity as a state (gs_kernels.identity): float add's is (-0, -0), since -0 + x == x for
 * every x, -0 included, so sums keep NumPy's signs. */
static void GS_FN(identity)(gs_op op, gs_carry *c)
{
    c->hi.GS_SFX = GS_FN(op_identity)(op);
    c->lo.GS_SFX = (GS_T)-0.0;
}

/* acc = acc op x, for two states, x holding the values after acc's (gs_kernels.combine). */
static void GS_FN(combine)(gs_op op, gs_carry *acc, const gs_carry *x)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_FN(pair_add)(&acc->hi.GS_SFX, &acc->lo.GS_SFX, x->hi.GS_SFX, x->lo.GS_SFX);
        return;
    }
#endif
    acc->hi.GS_SFX = GS_FN(op)(op, acc->hi.GS_SFX, x->hi.GS_SFX);
}

#if GS_SIZE >= 4
#include "cpu/vec.h"

/*
 * One vector x of a run: write its outputs to out (unless NULL) and fold it into the state
 * (*h, *l), which holds the same value in every lane.  `ch`, `cl`: the carry (float add and mul
 * with a carry; else unused); `id`: op's identity in every lane.
 */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(vstep)(const gs_op op, GS_VEC x, GS_T *out,
                                                      const int exclusive, const int has_cin,
                                                      GS_VEC ch, GS_VEC cl, GS_VEC *h, GS_VEC *l,
                                                      GS_VEC id)
{
    GS_VEC v = GS_V(scan)(op, x, id);
    GS_VEC t = GS_V(last)(v);

    if (out != NULL) {
        GS_VEC y = exclusive ? GS_V(shift1)(v, id) : v, o;
#if GS_KIND == 'f'
        if (op == GS_OP_ADD) {
            o = GS_V(add)(*h, GS_V(add)(y, *l));
            if (has_cin)
                o = GS_V(add)(ch, GS_V(add)(cl, o));
            if (exclusive) /* the empty sum is +0, as np.add.reduce([]) */
                o = GS_V(add)(o, GS_V(splat)(0));
        } else if (op == GS_OP_MUL) {
            o = GS_V(mul)(*h, y);
            if (has_cin)
                o = GS_V(mul)(ch, o);
        } else
#endif
        {
            (void)has_cin;
            (void)ch;
            (void)cl;
            o = GS_V(op)(op, *h, y);
        }
        GS_V(store)(out, o);
    }

#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        /* TwoSum(h, t): s = h + t and its exact error e; e joins l unless it is zero (l stays
         * -0 over a run of -0s) or not finite (h met an inf or NaN: h alone is the answer). */
        const GS_VEC zero = GS_V(splat)(0);
        GS_VEC s = GS_V(add)(*h, t);
        GS_VEC bp = GS_V(sub)(s, *h);
        GS_VEC e = GS_V(add)(GS_V(sub)(*h, GS_V(sub)(s, bp)), GS_V(sub)(t, bp));
        GS_MASK keep = GS_V(mand)(GS_V(ne)(e, zero), GS_V(eq)(GS_V(sub)(e, e), zero));
        *l = GS_V(add)(*l, GS_V(sel)(keep, e, id));
        *h = s;
        return;
    }
#endif
    *h = GS_V(op)(op, *h, t);
}

/* The run in[0, len) over vectors; the last one padded with the identity. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(loop)(const gs_op op, const GS_T *in, GS_T *out,
                                                     int64_t len, int exclusive,
                                                     const gs_carry *cin, gs_carry *c)
{
    const GS_VEC id = GS_V(splat)(GS_FN(op_identity)(op));
    const int has_cin = cin != NULL;
    GS_VEC h = GS_V(splat)(c->hi.GS_SFX), l = GS_V(splat)(c->lo.GS_SFX);
    GS_VEC ch = has_cin ? GS_V(splat)(cin->hi.GS_SFX) : id;
    GS_VEC cl = has_cin ? GS_V(splat)(cin->lo.GS_SFX) : id;
    int64_t i;

    for (i = 0; i + GS_W <= len; i += GS_W) {
        GS_T *o = out != NULL ? out + i : NULL;
        GS_PREFETCH(in + i);
        GS_FN(vstep)(op, GS_V(load)(in + i), o, exclusive, has_cin, ch, cl, &h, &l, id);
    }
    if (i < len) {
        GS_T pad[GS_W], res[GS_W];
        for (int k = 0; k < GS_W; k++)
            pad[k] = i + k < len ? in[i + k] : GS_FN(op_identity)(op);
        GS_T *o = out != NULL ? res : NULL;
        GS_FN(vstep)(op, GS_V(load)(pad), o, exclusive, has_cin, ch, cl, &h, &l, id);
        if (out != NULL)
            for (int k = 0; i + k < len; k++)
                out[i + k] = res[k];
    }
    c->hi.GS_SFX = GS_V(get)(h, 0);
    c->lo.GS_SFX = GS_V(get)(l, 0);
}

#else
/* One value at a time (exact ops only: cin is NULL). */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(loop)(const gs_op op, const GS_T *in, GS_T *out,
                                                     int64_t len, int exclusive,
                                                     const gs_carry *cin, gs_carry *c)
{
    GS_T a = c->hi.GS_SFX;
    int64_t i;

    (void)cin;
    if (out == NULL) {
        for (i = 0; i < len; i++)
            a = GS_FN(op)(op, a, GS_KIND == 'b' ? in[i] != 0 : in[i]);
    } else if (exclusive) {
        for (i = 0; i < len; i++) {
            GS_T x = GS_KIND == 'b' ? in[i] != 0 : in[i];
            out[i] = a;
            a = GS_FN(op)(op, a, x);
        }
    } else {
        for (i = 0; i < len; i++) {
            a = GS_FN(op)(op, a, GS_KIND == 'b' ? in[i] != 0 : in[i]);
            out[i] = a;
        }
    }
    c->hi.GS_SFX = a;
}
#endif

/* The loop, specialised per operator and for runs with and without output (gs_kernels.apply). */
static GS_ISA_ATTR void GS_FN(apply)(gs_op op, const void *in, void *out, int64_t len,
                                     int exclusive, const gs_carry *cin, gs_carry *c)
{
    if (out == NULL) {
        GS_OP_DISPATCH(op, GS_FN(loop), in, NULL, len, exclusive, cin, c)
    } else {
        GS_OP_DISPATCH(op, GS_FN(loop), in, out, len, exclusive, cin, c)
    }
}

/* ---- Columns -------------------------------------------------------------------------------
 * Rows of `ncols` values (row r at in + r * in_stride and out + r * out_stride), each column
 * scanned down the rows from the state h[c], l[c] (float add: TwoSum, the error masked as in
 * vstep; output h + l; every other op: the operator, the earlier value first).  Column c's
 * outputs depend on column c alone, so the bits do not depend on how columns are tiled or
 * threaded.  The states live in arrays that stay in L1 while the rows stream past, a vector of
 * columns at a time (the columns past the last whole vector one by one, with the same
 * operations).  `row` is the first row's index in the column: every GS_CPU_CHUNK rows float
 * add's state is renormalised (hi absorbs lo), so lo's own rounding stays negligible at any
 * length. */

/* One value x of column state (h, l): the output (inclusive, or exclusive: the state before). */
static GS_ALWAYS_INLINE GS_T GS_FN(col_step)(const gs_op op, GS_T *h, GS_T *l, GS_T x,
                                             const int exclusive)
{
    GS_T before = *h;
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_T s = *h + x, bp = s - *h;
        GS_T e = (*h - (s - bp)) + (x - bp);
        before = (*h + *l) + (GS_T)0; /* an exclusive scan's empty sum is +0 */
        *l += e != 0 && isfinite(e) ? e : (GS_T)-0.0;
        *h = s;
        return exclusive ? before : *h + *l;
    }
#elif GS_KIND == 'b'
    x = x != 0;
#endif
    *h = GS_FN(op)(op, *h, x);
    return exclusive ? before : *h;
}

static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(cols_rows)(const gs_op op, const GS_T *in,
                                                          int64_t in_stride, GS_T *out,
                                                          int64_t out_stride, int64_t nrows,
                                                          int64_t ncols, const int exclusive,
                                                          int64_t row, GS_T *h, GS_T *l)
{
    for (int64_t r = 0; r < nrows; r++) {
        const GS_T *x = in + r * in_stride;
        GS_T *o = out + r * out_stride;
        int64_t c = 0;
#if GS_SIZE >= 4
        const GS_VEC nz = GS_V(splat)((GS_T)-0.0);
        for (; c + GS_W <= ncols; c += GS_W) {
            GS_VEC xv = GS_V(load)(x + c), hv = GS_V(load)(h + c);
#if GS_KIND == 'f'
            if (op == GS_OP_ADD) {
                const GS_VEC zero = GS_V(splat)(0);
                GS_VEC lv = GS_V(load)(l + c);
                GS_VEC s = GS_V(add)(hv, xv), bp = GS_V(sub)(s, hv);
                GS_VEC e = GS_V(add)(GS_V(sub)(hv, GS_V(sub)(s, bp)), GS_V(sub)(xv, bp));
                GS_MASK keep = GS_V(mand)(GS_V(ne)(e, zero), GS_V(eq)(GS_V(sub)(e, e), zero));
                GS_VEC before = GS_V(add)(GS_V(add)(hv, lv), zero);
                lv = GS_V(add)(lv, GS_V(sel)(keep, e, nz));
                GS_V(store)(o + c, exclusive ? before : GS_V(add)(s, lv));
                GS_V(store)(h + c, s);
                GS_V(store)(l + c, lv);
                continue;
            }
#endif
            (void)nz;
            GS_VEC nh = GS_V(op)(op, hv, xv);
            GS_V(store)(o + c, exclusive ? hv : nh);
            GS_V(store)(h + c, nh);
        }
#endif
        for (; c < ncols; c++)
            o[c] = GS_FN(col_step)(op, &h[c], &l[c], x[c], exclusive);
#if GS_KIND == 'f'
        if (op == GS_OP_ADD && (row + r + 1) % GS_CPU_CHUNK == 0) {
            for (c = 0; c < ncols; c++) {
                GS_T sum = h[c] + l[c];
                if (l[c] != 0 && isfinite(sum)) {
                    l[c] -= sum - h[c]; /* Fast2Sum: |h| >= |l| */
                    h[c] = sum;
                }
            }
        }
#endif
    }
}

/* Scan columns [0, ncols) (ncols <= GS_CPU_COLS) down rows [0, nrows) from the identity, row r
 * of in and out at r * stride values (gs_kernels.apply_cols). */
static GS_ISA_ATTR void GS_FN(apply_cols)(gs_op op, const void *in, void *out, int64_t nrows,
                                          int64_t stride, int64_t ncols, int exclusive)
{
    GS_T h[GS_CPU_COLS], l[GS_CPU_COLS];
    for (int64_t c = 0; c < ncols; c++) {
        h[c] = GS_FN(op_identity)(op);
        l[c] = (GS_T)-0.0;
    }
    GS_OP_DISPATCH(op, GS_FN(cols_rows), in, stride, out, stride, nrows, ncols, exclusive, 0, h, l)
}

#if GS_KIND == 'u' && GS_SIZE == 8
#include "cpu/widen.h"

/* apply() over in[0, len) of the narrower integer dtype in_type, widened to 64 bits block by block
 * (NumPy's add and mul accumulation; int64 and uint64 wrap to the same bits, so uint64's loops
 * serve both): the widening loop is compiled for this instruction set too. */
static GS_ISA_ATTR void GS_FN(apply_widened)(gs_op op, const void *in, gs_dtype in_type, void *out,
                                             int64_t len, int exclusive, const gs_carry *cin,
                                             gs_carry *c)
{
    uint64_t buf[GS_CPU_WIDEN_BLOCK];
    for (int64_t pos = 0; pos < len; pos += GS_CPU_WIDEN_BLOCK) {
        int64_t n = len - pos < GS_CPU_WIDEN_BLOCK ? len - pos : GS_CPU_WIDEN_BLOCK;
        gs_widen_u64(in, in_type, pos, n, buf);
        GS_FN(apply)(op, buf, out != NULL ? (uint64_t *)out + pos : NULL, n, exclusive, cin, c);
    }
}

/* apply_cols() over a narrower integer dtype, each row widened into a buffer first. */
static GS_ISA_ATTR void GS_FN(apply_cols_widened)(gs_op op, const void *in, gs_dtype in_type,
                                                  void *out, int64_t nrows, int64_t stride,
                                                  int64_t ncols, int exclusive)
{
    uint64_t h[GS_CPU_COLS], l[GS_CPU_COLS], buf[GS_CPU_COLS];
    for (int64_t c = 0; c < ncols; c++) {
        h[c] = GS_FN(op_identity)(op);
        l[c] = 0;
    }
    for (int64_t r = 0; r < nrows; r++) {
        gs_widen_u64(in, in_type, r * stride, ncols, buf);
        GS_OP_DISPATCH(op, GS_FN(cols_rows), buf, 0, (uint64_t *)out + r * stride, 0, 1, ncols,
                       exclusive, r, h, l)
    }
}
#endif

/* Ties the dtype's kind letter to the kernel table's entry, checked by cpu/stamp.h. */
enum { GS_FN(kind_letter) = GS_KIND };

#undef GS_FN
