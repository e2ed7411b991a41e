/*
 * cpu/reduce_body.h - the reduction loops of one dtype and one instruction set: written once,
 * included once per dtype and set by cpu/reduce.c through cpu/stamp_isa.h (no include guard on
 * purpose).
 *
 * Level: backend (CPU), the innermost level of the CPU reduction: folds a run of
 * contiguous values (at most one chunk of a row), or a block of rows of many columns, into
 * partials, combines two partials, and rounds a partial to the output value.  cpu/reduce.c cuts
 * the work into chunks and hands them to threads; this file never sees a thread.
 *
 * The includer defines cpu/stamp.h's and cpu/stamp_isa.h's parameters and finds gs_val, gs_part,
 * GS_ALWAYS_INLINE, GS_NAME, GS_CPU_BLOCK, GS_CPU_LANE_VECS, GS_CPU_COLS, GS_CPU_COL_ROWS,
 * GS_CPU_SHORT_RUN and GS_CPU_WIDEN_BLOCK already defined.
 *
 * Contiguous runs: integers fold in order (any grouping gives the same bits: the ops are
 * associative and commutative modulo 2^k) in a loop the compiler vectorises; floats fold over
 * GS_CPU_LANE_VECS vectors of cpu/vec.h, that many times GS_W lanes (lane k takes the values at k,
 * k + lanes, ...), which restart from the identity at each block of GS_CPU_BLOCK values and then
 * join the partial in lane order: a grouping that depends on the run's length only, the same on
 * every instruction set.  Float add is compensated throughout (TwoSum in each lane, (hi, lo)
 * partials); float min/max give the first NaN of the run (its bits), else the first value equal to
 * the extremum (so +0 and -0 come out as the earlier one).  A run shorter than GS_CPU_SHORT_RUN
 * folds one value at a time, as a column does.  Rows of one chunk each are folded and stored by
 * one call (fold_rows).
 *
 * Columns (fold_cols): a block of rows r of `ncols` values at in + r * stride, each column
 * reduced down the rows into its accumulator, many columns side by side in vectors: column c's
 * value depends on column c alone, folded in row order (float add: TwoSum from the identity, then
 * pair_add into the accumulator, block after block), so the bits do not depend on how the columns
 * are tiled or threaded.
 */

#define GS_FN(name) GS_NAME(name, GS_SFX)

#include "cpu/operators.h"

#if GS_SIZE >= 4
#include "cpu/vec.h"
#endif

/* One value x into the state (h, l) of a column or a short run, the values in order (float add:
 * TwoSum, its exact error summed in l; every other op: the operator, the earlier value first). */
static GS_ALWAYS_INLINE void GS_FN(col_step)(const gs_op op, GS_T *h, GS_T *l, GS_T x)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_T s = *h + x;
        GS_T bp = s - *h;
        *l += (*h - (s - bp)) + (x - bp);
        *h = s;
        return;
    }
#elif GS_KIND == 'b'
    x = x != 0;
#endif
    (void)l;
    *h = GS_FN(op)(op, *h, x);
}

#if GS_KIND == 'f'
/* The first NaN of p[0, len), which holds one. */
static GS_T GS_FN(first_nan)(const GS_T *p, int64_t len)
{
    int64_t i = 0;
    while (i < len - 1 && !isnan(p[i]))
        i++;
    return p[i];
}

/* The first zero (+0 or -0) of p[0, len), which holds one. */
static GS_T GS_FN(first_zero)(const GS_T *p, int64_t len)
{
    int64_t i = 0;
    while (i < len - 1 && p[i] != 0)
        i++;
    return p[i];
}

/* One vector x into the lanes (h, l): add keeps TwoSum's exact error in l; min and max keep
 * numbers only (a NaN compares false) and note NaNs in *nan; every other op is the operator. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(lanes_step)(const gs_op op, GS_VEC *h, GS_VEC *l,
                                                           GS_MASK *nan, GS_VEC x)
{
    if (op == GS_OP_ADD) {
        GS_VEC s = GS_V(add)(*h, x);
        GS_VEC bp = GS_V(sub)(s, *h);
        *l = GS_V(add)(*l, GS_V(add)(GS_V(sub)(*h, GS_V(sub)(s, bp)), GS_V(sub)(x, bp)));
        *h = s;
    } else if (op == GS_OP_MIN || op == GS_OP_MAX) {
        *nan = GS_V(mor)(*nan, GS_V(ne)(x, x));
        *h = op == GS_OP_MIN ? GS_V(min_lt)(x, *h) : GS_V(max_gt)(x, *h);
    } else {
        *h = GS_V(op)(op, *h, x);
    }
}

#if GS_ISA_ZMM
/* Float min/max over 64-byte vectors (AVX-512): VMAXPS/VMINPS keep numbers only, an unordered
 * compare notes NaNs in a mask register; a run with a NaN, or whose extremum is a zero, is read
 * again for its first NaN or first zero, as fold_float does a block, so the answer is the same
 * bits (the extremum of numbers is one value, of one bit pattern unless it is a zero). */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(fold_minmax_zmm)(const gs_op op, const GS_T *p,
                                                                int64_t len, gs_part *acc)
{
    GS_T v;
    int64_t i = 0;
#if GS_SIZE == 4
#define GS_Z(name) _mm512_##name##_ps
#define GS_ZUNORD(x, y) _mm512_cmp_ps_mask(x, y, _CMP_UNORD_Q)
    __m512 m0;
    __mmask16 nan = 0;
#else
#define GS_Z(name) _mm512_##name##_pd
#define GS_ZUNORD(x, y) _mm512_cmp_pd_mask(x, y, _CMP_UNORD_Q)
    __m512d m0;
    __mmask8 nan = 0;
#endif
#define GS_ZOP(x, m) (op == GS_OP_MIN ? GS_Z(min)(x, m) : GS_Z(max)(x, m))
#define GS_ZREDUCE(m) (op == GS_OP_MIN ? GS_Z(reduce_min)(m) : GS_Z(reduce_max)(m))
#define GS_ZLOAD GS_Z(loadu)
    __typeof__(m0) m1;
    m0 = m1 = GS_Z(set1)(GS_FN(op_identity)(op));
    for (; i + 256 / GS_SIZE <= len; i += 256 / GS_SIZE) {
        for (int q = 0; q < 256; q += 64)
            GS_PREFETCH((const char *)(p + i) + q);
        __typeof__(m0) x0 = GS_ZLOAD(p + i), x1 = GS_ZLOAD(p + i + 64 / GS_SIZE);
        __typeof__(m0) x2 = GS_ZLOAD(p + i + 128 / GS_SIZE), x3 = GS_ZLOAD(p + i + 192 / GS_SIZE);
        /* An unordered compare of two vectors is set where either holds a NaN; MAXPS of two
         * vectors returns the second where either is NaN, and its NaN then loses to the lane. */
        nan |= GS_ZUNORD(x0, x1) | GS_ZUNORD(x2, x3);
        m0 = GS_ZOP(GS_ZOP(x0, x1), m0);
        m1 = GS_ZOP(GS_ZOP(x2, x3), m1);
    }
    /* No NaN in the lanes: any order gives the value. */
    v = GS_ZREDUCE(GS_ZOP(m0, m1));
    int has_nan = nan != 0;
#undef GS_Z
#undef GS_ZOP
#undef GS_ZREDUCE
#undef GS_ZLOAD
#undef GS_ZUNORD
    for (; i < len; i++) {
        has_nan |= isnan(p[i]);
        if (!isnan(p[i]))
            v = GS_FN(op)(op, v, p[i]);
    }
    if (has_nan)
        v = GS_FN(first_nan)(p, len);
    else if (v == 0)
        v = GS_FN(first_zero)(p, len);
    acc->hi.GS_SFX = GS_FN(op)(op, acc->hi.GS_SFX, v);
}
#endif

/* The lanes of one block of fold_float (over p[0, blen)) join the partial (*ahi, *alo): the
 * vectors first, value by value, then a vector's values in order (float add: TwoSum all along,
 * the errors gathered where finite). */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(join_lanes)(const gs_op op, const GS_VEC *h,
                                                           const GS_VEC *l, const GS_MASK *nan,
                                                           const GS_T *p, int64_t blen, GS_T *ahi,
                                                           GS_T *alo)
{
    enum { NV = GS_CPU_LANE_VECS };
    if (op == GS_OP_ADD) {
        const GS_VEC zero = GS_V(splat)(0);
        GS_VEC hv = h[0], lv = GS_V(sel)(GS_V(eq)(GS_V(sub)(l[0], l[0]), zero), l[0], zero);
        for (int v = 1; v < NV; v++) {
            GS_VEC sv = GS_V(add)(hv, h[v]), bp = GS_V(sub)(sv, hv);
            GS_VEC e = GS_V(add)(GS_V(sub)(hv, GS_V(sub)(sv, bp)), GS_V(sub)(h[v], bp));
            e = GS_V(add)(e, l[v]);
            lv = GS_V(add)(lv, GS_V(sel)(GS_V(eq)(GS_V(sub)(e, e), zero), e, zero));
            hv = sv;
        }
        GS_T bh = GS_V(get)(hv, 0), bl = GS_V(get)(lv, 0);
        for (int k = 1; k < GS_W; k++) {
            GS_T x = GS_V(get)(hv, k), sum = bh + x, bp = sum - bh;
            GS_T e = (bh - (sum - bp)) + (x - bp) + GS_V(get)(lv, k);
            bl += isfinite(e) ? e : 0;
            bh = sum;
        }
        GS_FN(pair_add)(ahi, alo, bh, bl);
    } else if (op != GS_OP_MIN && op != GS_OP_MAX) {
        /* mul, fmin, fmax and the logaddexps: the vectors, then their values, in lane order.
         * fmin and fmax then take the block's first NaN (all NaN) or first zero, as min and
         * max below: the lanes do not keep element order. */
        GS_VEC pv = h[0];
        for (int v = 1; v < NV; v++)
            pv = GS_V(op)(op, pv, h[v]);
        GS_T v = GS_V(get)(pv, 0);
        for (int k = 1; k < GS_W; k++)
            v = GS_FN(op)(op, v, GS_V(get)(pv, k));
        if ((op == GS_OP_FMIN || op == GS_OP_FMAX) && isnan(v))
            v = GS_FN(first_nan)(p, blen);
        else if ((op == GS_OP_FMIN || op == GS_OP_FMAX) && v == 0)
            v = GS_FN(first_zero)(p, blen);
        *ahi = GS_FN(op)(op, *ahi, v);
    } else {
        /* No NaN in the lanes: any order gives the value.  The block's answer is its first
         * NaN, else its first value equal to v: only +0 and -0 are equal with other bits,
         * so that matters for zeros alone. */
        GS_VEC mv = h[0];
        GS_MASK any_nan = nan[0];
        for (int w = 1; w < NV; w++) {
            mv = op == GS_OP_MIN ? GS_V(min_lt)(h[w], mv) : GS_V(max_gt)(h[w], mv);
            any_nan = GS_V(mor)(any_nan, nan[w]);
        }
        GS_T v = GS_V(get)(mv, 0);
        for (int k = 1; k < GS_W; k++)
            v = GS_FN(op)(op, v, GS_V(get)(mv, k));
        if (GS_V(any)(any_nan))
            v = GS_FN(first_nan)(p, blen);
        else if (v == 0)
            v = GS_FN(first_zero)(p, blen);
        *ahi = GS_FN(op)(op, *ahi, v);
    }
}

/*
 * Fold p[0, len) into the partial *acc, GS_CPU_BLOCK values at a time: within a block,
 * GS_CPU_LANE_VECS vectors of lanes take the values in turn (lane k the values at k, k + lanes,
 * k + 2 lanes, ...: independent chains that hide the latency of the adds; the last, partial round
 * padded with the identity, which leaves every lane as it is); the lanes then join *acc in lane
 * order.  Always inlined with a constant op.
 */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(fold_float)(const gs_op op, const GS_T *in,
                                                           int64_t len, gs_part *acc)
{
#if GS_ISA_ZMM
    if (op == GS_OP_MIN || op == GS_OP_MAX) {
        GS_FN(fold_minmax_zmm)(op, in, len, acc);
        return;
    }
#endif
    enum { NV = GS_CPU_LANE_VECS, LANES = GS_CPU_LANE_VECS * GS_W };
    const GS_T ident = GS_FN(op_identity)(op);
    const GS_VEC id = GS_V(splat)(ident);
    GS_T ahi = acc->hi.GS_SFX, alo = acc->lo.GS_SFX;

    if (len < GS_CPU_SHORT_RUN) {
        /* A short run (rows of a few values): one value at a time from the identity (float add:
         * TwoSum, as a column folds), then into *acc; a grouping fixed by len as well. */
        GS_T h = ident, l = 0;
        for (int64_t i = 0; i < len; i++)
            GS_FN(col_step)(op, &h, &l, in[i]);
        if (op == GS_OP_ADD)
            GS_FN(pair_add)(&acc->hi.GS_SFX, &acc->lo.GS_SFX, h, l);
        else
            acc->hi.GS_SFX = GS_FN(op)(op, ahi, h);
        return;
    }

    for (int64_t b = 0; b < len; b += GS_CPU_BLOCK) {
        const GS_T *p = in + b;
        const int64_t blen = len - b < GS_CPU_BLOCK ? len - b : GS_CPU_BLOCK;
        GS_VEC h[NV], l[NV];
        GS_MASK nan[NV];
        int64_t i;

        for (int v = 0; v < NV; v++) {
            h[v] = id;
            l[v] = GS_V(splat)(0);
            nan[v] = GS_V(ne)(id, id);
        }
        for (i = 0; i + LANES <= blen; i += LANES) {
            for (int q = 0; q < LANES * GS_SIZE; q += 64)
                GS_PREFETCH((const char *)(p + i) + q);
            for (int v = 0; v < NV; v++)
                GS_FN(lanes_step)(op, &h[v], &l[v], &nan[v], GS_V(load)(p + i + v * GS_W));
        }
        if (i < blen) {
            GS_T t[LANES];
            for (int k = 0; k < LANES; k++)
                t[k] = i + k < blen ? p[i + k] : ident;
            for (int v = 0; v < NV; v++)
                GS_FN(lanes_step)(op, &h[v], &l[v], &nan[v], GS_V(load)(t + v * GS_W));
        }

        GS_FN(join_lanes)(op, h, l, nan, p, blen, &ahi, &alo);
    }
    acc->hi.GS_SFX = ahi;
    acc->lo.GS_SFX = alo;
}

#else
/* Fold in[0, len) into the partial *acc (any grouping gives the same bits: the ops are associative
 * and commutative modulo 2^k).  4- and 8-byte integers over GS_CPU_LANE_VECS vectors of lanes
 * (independent chains, so the loop runs at the speed of the loads, not of the operator's
 * latency); 1- and 2-byte ones, and the tail, in a loop the compiler vectorises.  Always inlined
 * with a constant op, so each operator gets a loop of its own. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(fold_int)(const gs_op op, const GS_T *in,
                                                         int64_t len, gs_part *acc)
{
    GS_T a = acc->hi.GS_SFX;
    int64_t i = 0;
#if GS_SIZE >= 4 && !GS_ISA_ZMM
    /* (With AVX-512 the plain loop below runs over 64-byte vectors instead.) */
    enum { NV = GS_CPU_LANE_VECS };
    GS_VEC h[NV];
    for (int v = 0; v < NV; v++)
        h[v] = GS_V(splat)(GS_FN(op_identity)(op));
    for (; i + NV * GS_W <= len; i += NV * GS_W) {
        for (int q = 0; q < NV * 32; q += 64)
            GS_PREFETCH((const char *)(in + i) + q);
        for (int v = 0; v < NV; v++)
            h[v] = GS_V(op)(op, h[v], GS_V(load)(in + i + v * GS_W));
    }
    for (int v = 1; v < NV; v++)
        h[0] = GS_V(op)(op, h[0], h[v]);
    for (int k = 0; k < GS_W; k++)
        a = GS_FN(op)(op, a, GS_V(get)(h[0], k));
#else
#if GS_ISA_ZMM && GS_KIND != 'b'
    /* Integer min/max: VPMIN/VPMAX of the value's width and signedness over four 64-byte
     * accumulators (a single chain of the vectorised loop below would run at half the speed of
     * the loads from L2). */
#if GS_SIZE == 1
#define GS_ZW(name) GS_KIND == 'i' ? _mm512_##name##_epi8 : _mm512_##name##_epu8
#elif GS_SIZE == 2
#define GS_ZW(name) GS_KIND == 'i' ? _mm512_##name##_epi16 : _mm512_##name##_epu16
#elif GS_SIZE == 4
#define GS_ZW(name) GS_KIND == 'i' ? _mm512_##name##_epi32 : _mm512_##name##_epu32
#else
#define GS_ZW(name) GS_KIND == 'i' ? _mm512_##name##_epi64 : _mm512_##name##_epu64
#endif
    if (op == GS_OP_MIN || op == GS_OP_MAX) {
#define GS_ZOP(x, m) (op == GS_OP_MIN ? (GS_ZW(min))(x, m) : (GS_ZW(max))(x, m))
        __m512i m0, m1, m2, m3;
        GS_T lanes[64 / GS_SIZE];
        for (int k = 0; k < 64 / GS_SIZE; k++)
            lanes[k] = a;
        memcpy(&m0, lanes, 64);
        m1 = m2 = m3 = m0;
        for (; i + 256 / GS_SIZE <= len; i += 256 / GS_SIZE) {
            for (int q = 0; q < 256; q += 64)
                GS_PREFETCH((const char *)(in + i) + q);
            m0 = GS_ZOP(_mm512_loadu_si512(in + i), m0);
            m1 = GS_ZOP(_mm512_loadu_si512(in + i + 64 / GS_SIZE), m1);
            m2 = GS_ZOP(_mm512_loadu_si512(in + i + 128 / GS_SIZE), m2);
            m3 = GS_ZOP(_mm512_loadu_si512(in + i + 192 / GS_SIZE), m3);
        }
        m0 = GS_ZOP(GS_ZOP(m0, m1), GS_ZOP(m2, m3));
#undef GS_ZOP
        memcpy(lanes, &m0, 64);
        for (int k = 0; k < 64 / GS_SIZE; k++)
            a = GS_FN(op)(op, a, lanes[k]);
    }
#undef GS_ZW
#endif
    /* 4 KiB pieces, each prefetched ahead as it starts and folded by a loop the compiler
     * vectorises (over 64-byte vectors with AVX-512). */
    for (; i + 4096 / GS_SIZE <= len; i += 4096 / GS_SIZE) {
        for (int q = 0; q < 4096; q += 64)
            GS_PREFETCH((const char *)(in + i) + q);
        for (int k = 0; k < 4096 / GS_SIZE; k++) {
#if GS_KIND == 'b'
            a = GS_FN(op)(op, a, in[i + k] != 0);
#else
            a = GS_FN(op)(op, a, in[i + k]);
#endif
        }
    }
#endif
    for (; i < len; i++) {
#if GS_KIND == 'b'
        a = GS_FN(op)(op, a, in[i] != 0); /* any nonzero byte is True, as NumPy reads it */
#else
        a = GS_FN(op)(op, a, in[i]);
#endif
    }
    acc->hi.GS_SFX = a;
}
#endif

/* The partial of in[0, len) (gs_reduce_kernels.fold): *p starts at the identity. */
static GS_ISA_ATTR void GS_FN(fold)(gs_op op, const void *in, int64_t len, gs_part *p)
{
    p->hi.GS_SFX = GS_FN(op_identity)(op);
    p->lo.GS_SFX = 0;
#if GS_KIND == 'f'
    GS_OP_DISPATCH(op, GS_FN(fold_float), in, len, p)
#else
    GS_OP_DISPATCH(op, GS_FN(fold_int), in, len, p)
#endif
}

/* acc = acc op x, x being the partial of the values after acc's (gs_reduce_kernels.combine). */
static void GS_FN(combine)(gs_op op, gs_part *acc, const gs_part *x)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_FN(pair_add)(&acc->hi.GS_SFX, &acc->lo.GS_SFX, x->hi.GS_SFX, x->lo.GS_SFX);
        return;
    }
#endif
    acc->hi.GS_SFX = GS_FN(op)(op, acc->hi.GS_SFX, x->hi.GS_SFX);
}

/* Write the value the partial stands for, rounded once (gs_reduce_kernels.store).  Float add:
 * hi + lo (lo is zero or finite by then; a zero lo is -0, pair_add's), the sum from the first
 * value (every partial starts from -0, the identity of add: a sum of -0 values alone is -0, any
 * other exact zero +0), then + 0 with plus_zero, as NumPy's reduce starts from +0
 * (gs_reduce_desc.plus_zero). */
static void GS_FN(store)(gs_op op, const gs_part *p, int plus_zero, void *out)
{
    GS_T v = p->hi.GS_SFX;
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        v += p->lo.GS_SFX;
        if (plus_zero)
            v += (GS_T)0;
    }
#else
    (void)op;
    (void)plus_zero;
#endif
    *(GS_T *)out = v;
}

/* The rows of one chunk at most each (gs_reduce_kernels.fold_rows): out[r] = the reduction of
 * in[r * row_len, (r + 1) * row_len) for r < nrows, each through fold() and store(), inlined. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(rows_loop)(const gs_op op, const GS_T *in,
                                                          int64_t nrows, int64_t row_len,
                                                          int plus_zero, GS_T *out)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD && row_len < GS_CPU_SHORT_RUN) {
        /* Short rows of float add (segments of a few values): fold_float's short run from the
         * identity, then its pair_add into the identity and store(), with pair_add's branches as
         * one select: the pair is (h, 0) when l is zero or not finite, or h + l overflows
         * (then h alone), else TwoSum(h, l), whose hi + lo rounds to h + l.  The same bits,
         * without the branches that rows of varying lengths mispredict. */
        for (int64_t r = 0; r < nrows; r++) {
            const GS_T *x = in + r * row_len;
            GS_T h = GS_FN(op_identity)(op), l = 0;
            for (int64_t i = 0; i < row_len; i++)
                GS_FN(col_step)(op, &h, &l, x[i]);
            const GS_T t = h + l;
            GS_T v = ((l != 0) & (t - t == 0)) ? t : h; /* & and t - t: a select, no branch */
            if (plus_zero)
                v += (GS_T)0;
            out[r] = v;
        }
        return;
    }
#endif
    for (int64_t r = 0; r < nrows; r++) {
        gs_part p;
        p.hi.GS_SFX = GS_FN(op_identity)(op);
        p.lo.GS_SFX = 0;
#if GS_KIND == 'f'
        GS_FN(fold_float)(op, in + r * row_len, row_len, &p);
#else
        GS_FN(fold_int)(op, in + r * row_len, row_len, &p);
#endif
        GS_FN(store)(op, &p, plus_zero, out + r);
    }
}

static GS_ISA_ATTR void GS_FN(fold_rows)(gs_op op, const void *in, int64_t nrows, int64_t row_len,
                                         int plus_zero, void *out)
{
    GS_OP_DISPATCH(op, GS_FN(rows_loop), in, nrows, row_len, plus_zero, out)
}

/* ---- Columns -------------------------------------------------------------------------------
 * A column accumulator `acc` of ncols columns is ncols values of the dtype (hi), followed for
 * float add by ncols more (lo): the partial of each column's blocks so far.  The exact operators
 * (integers, float min and max: any grouping gives the same bits) fold the rows straight into hi,
 * which may be the output itself; float add and mul fold each block from the identity into a
 * state (h, l: the scratch) and then join hi (and lo) with it, block after block. */

#if GS_KIND == 'f'
/* Whether value by value x - x == 0: finite. */
#define GS_VFINITE(x) GS_V(eq)(GS_V(sub)(x, x), GS_V(splat)(0))

/* pair_add() on every value of a vector of pairs, with the same operations in the same order
 * (its branches become blends), so the bits are the scalar function's. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(vpair_add)(GS_VEC *hi, GS_VEC *lo, GS_VEC xhi,
                                                          GS_VEC xlo)
{
    const GS_VEC zero = GS_V(splat)(0), nz = GS_V(splat)((GS_T)-0.0);
    GS_VEC s = GS_V(add)(*hi, xhi);
    GS_VEC bp = GS_V(sub)(s, *hi);
    GS_VEC e = GS_V(add)(GS_V(sub)(*hi, GS_V(sub)(s, bp)), GS_V(sub)(xhi, bp));
    e = GS_V(add)(
        e, GS_V(add)(GS_V(sel)(GS_VFINITE(*lo), *lo, zero), GS_V(sel)(GS_VFINITE(xlo), xlo, zero)));
    GS_VEC h = GS_V(add)(s, e);
    GS_VEC bh = GS_V(sub)(h, s);
    GS_VEC l = GS_V(add)(GS_V(sub)(s, GS_V(sub)(h, bh)), GS_V(sub)(e, bh));
    /* pair_add's early returns: s not finite, e zero, or h not finite leave (s, -0) */
    GS_MASK full = GS_V(mand)(GS_VFINITE(s), GS_V(mand)(GS_V(ne)(e, zero), GS_VFINITE(h)));
    *hi = GS_V(sel)(full, h, s);
    *lo = GS_V(sel)(full, l, nz);
}
#undef GS_VFINITE
#endif

#if GS_SIZE >= 4
/* One vector x of columns into their states (hv, lv), as col_step value by value. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(cols_step)(const gs_op op, GS_VEC *hv, GS_VEC *lv,
                                                          GS_VEC x)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_VEC s = GS_V(add)(*hv, x);
        GS_VEC bp = GS_V(sub)(s, *hv);
        *lv = GS_V(add)(*lv, GS_V(add)(GS_V(sub)(*hv, GS_V(sub)(s, bp)), GS_V(sub)(x, bp)));
        *hv = s;
        return;
    }
#endif
    (void)lv;
    *hv = GS_V(op)(op, *hv, x);
}
#endif

/* The end of a block for one column whose state (h, l) has taken every row of the block: float
 * add and mul join the accumulator (*acc, *alo) with the block's partial (pair_add(identity,
 * state), or the product), or it becomes the accumulator (`first`); with `out` (the only block)
 * the value is written there instead, as store() writes a partial (plus_zero: store()'s). */
static GS_ALWAYS_INLINE void GS_FN(finish)(const gs_op op, GS_T h, GS_T l, GS_T *acc, GS_T *alo,
                                           const int first, GS_T *out, const int plus_zero)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        GS_T ph = GS_FN(op_identity)(op), pl = 0;
        GS_FN(pair_add)(&ph, &pl, h, l);
        if (out != NULL) {
            gs_part p;
            p.hi.GS_SFX = ph;
            p.lo.GS_SFX = pl;
            GS_FN(store)(op, &p, plus_zero, out);
            return;
        }
        if (!first) {
            GS_T ah = *acc, al = *alo;
            GS_FN(pair_add)(&ah, &al, ph, pl);
            ph = ah;
            pl = al;
        }
        *acc = ph;
        *alo = pl;
        return;
    }
    if (gs_op_rounds(op, GS_FLOAT64)) { /* mul and the logaddexps */
        if (out != NULL)
            *out = h;
        else
            *acc = first ? h : GS_FN(op)(op, *acc, h);
        return;
    }
#endif
    (void)l;
    (void)alo;
    (void)first;
    (void)out;
    (void)plus_zero;
    *acc = h;
}

#if GS_SIZE >= 4
/* finish() on a vector of columns, with the same operations (vpair_add for pair_add). */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(vfinish)(const gs_op op, GS_VEC hv, GS_VEC lv,
                                                        GS_T *acc, GS_T *alo, const int first,
                                                        GS_T *out, const int plus_zero)
{
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        const GS_VEC zero = GS_V(splat)(0);
        GS_VEC ph = GS_V(splat)(GS_FN(op_identity)(op)), pl = zero;
        GS_FN(vpair_add)(&ph, &pl, hv, lv);
        if (out != NULL) {
            const GS_VEC v = GS_V(add)(ph, pl); /* as store() */
            GS_V(store)(out, plus_zero ? GS_V(add)(v, zero) : v);
            return;
        }
        if (!first) {
            GS_VEC ah = GS_V(load)(acc), al = GS_V(load)(alo);
            GS_FN(vpair_add)(&ah, &al, ph, pl);
            ph = ah;
            pl = al;
        }
        GS_V(store)(acc, ph);
        GS_V(store)(alo, pl);
        return;
    }
    if (gs_op_rounds(op, GS_FLOAT64)) { /* mul and the logaddexps */
        if (out != NULL)
            GS_V(store)(out, hv);
        else
            GS_V(store)(acc, first ? hv : GS_V(op)(op, GS_V(load)(acc), hv));
        return;
    }
#endif
    (void)lv;
    (void)alo;
    (void)first;
    (void)out;
    (void)plus_zero;
    GS_V(store)(acc, hv);
}
#endif

/* The first value x of a state from the identity: col_step(op, &h, &l, x) from (identity, 0),
 * with the same bits.  Float add: -0 + x is x, and TwoSum's error is then +0 for a finite x and
 * NaN otherwise, which is x - x (a NaN lo is dropped at the end, as pair_add drops it, so its
 * payload does not matter); every other op: op(identity, x) is x. */
static GS_ALWAYS_INLINE void GS_FN(col_first)(const gs_op op, GS_T *h, GS_T *l, GS_T x)
{
#if GS_KIND == 'b'
    x = x != 0;
#endif
    *h = x;
    *l = GS_KIND == 'f' && op == GS_OP_ADD ? x - x : 0;
}

/* h[c] = h[c] op x[c] op x[stride + c] ... op x[(n - 1) * stride + c] for c in [c0, c1), every
 * op but float add (with `init`, h[c] starts as x[c] itself: col_first).  n and init are
 * constants once inlined, so each count of rows gets one loop the compiler vectorises. */
static GS_ALWAYS_INLINE void GS_FN(rows_into)(const gs_op op, GS_T *h, const GS_T *restrict x,
                                              int64_t stride, int64_t c0, int64_t c1, const int n,
                                              const int init)
{
    for (int64_t c = c0; c < c1; c++) {
        GS_T a = GS_KIND == 'b' ? x[c] != 0 : x[c];
        if (!init)
            a = GS_FN(op)(op, h[c], a);
        for (int k = 1; k < n; k++)
            a = GS_FN(op)(op, a, GS_KIND == 'b' ? x[k * stride + c] != 0 : x[k * stride + c]);
        h[c] = a;
    }
}

/*
 * One block, rows [0, nrows) (nrows <= GS_CPU_BLOCK) of columns [0, ncols) (ncols <=
 * GS_CPU_COLS), row r at in + r * stride, into the accumulators acc (gs_reduce_kernels.fold_cols;
 * `first`: acc starts as the block's partial; `out` and plus_zero: see finish()).  Each column's
 * state takes the rows in order: float add and mul from the identity (add: TwoSum, lo from 0) and
 * then finish(); the exact operators fold into acc itself.  The rows stream past GS_CPU_COL_ROWS at
 * a time, a vector of columns at a time, its state in registers within a group of rows and in
 * `state` (h, then l ncols values further on; acc itself for the exact operators) between groups;
 * the columns past the last whole vector (every column of 1- and 2-byte dtypes) go one by one in
 * loops over a row the compiler vectorises, with the same operations.  Always inlined with a
 * constant op.
 */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(cols_block)(const gs_op op, const GS_T *restrict in,
                                                           int64_t nrows, int64_t stride,
                                                           int64_t ncols, GS_T *acc,
                                                           const int first, GS_T *state, GS_T *out,
                                                           const int plus_zero)
{
    const int inexact = GS_KIND == 'f' && gs_op_rounds(op, GS_FLOAT64);
    const int add = GS_KIND == 'f' && op == GS_OP_ADD;
    GS_T *h = inexact ? state : acc;
    GS_T *l = state + ncols; /* float add's compensation terms */
    int64_t vcols = 0, r;

#if GS_SIZE >= 4
    vcols = ncols / GS_W * GS_W;
    for (r = 0; r < nrows; r += GS_CPU_COL_ROWS) {
        const int64_t nr = nrows - r < GS_CPU_COL_ROWS ? nrows - r : GS_CPU_COL_ROWS;
        /* a state from the identity starts at the first row itself (see col_first) */
        const int init = r == 0 && (inexact || first), end = r + GS_CPU_COL_ROWS >= nrows;
        const GS_T *rows = in + r * stride;
        for (int64_t c = 0; c < vcols; c += GS_W) {
            GS_VEC hv, lv = GS_V(splat)(0);
            int64_t k = 0;
            if (init) {
                hv = GS_V(load)(rows + c);
                if (add)
                    lv = GS_V(sub)(hv, hv);
                k = 1;
            } else {
                hv = GS_V(load)(h + c);
                if (add)
                    lv = GS_V(load)(l + c);
            }
            if (c % (64 / GS_SIZE) == 0 && !end && r + 2 * GS_CPU_COL_ROWS <= nrows)
                for (int q = 0; q < GS_CPU_COL_ROWS; q++)
                    __builtin_prefetch(rows + (GS_CPU_COL_ROWS + q) * stride + c);
            if (nr == GS_CPU_COL_ROWS && k == 0) {
                for (int q = 0; q < GS_CPU_COL_ROWS; q++)
                    GS_FN(cols_step)(op, &hv, &lv, GS_V(load)(rows + q * stride + c));
            } else {
                for (; k < nr; k++)
                    GS_FN(cols_step)(op, &hv, &lv, GS_V(load)(rows + k * stride + c));
            }
            if (!end) {
                GS_V(store)(h + c, hv);
                if (add)
                    GS_V(store)(l + c, lv);
            } else {
                GS_FN(vfinish)(op, hv, lv, acc + c, acc + ncols + c, first,
                               out != NULL ? out + c : NULL, plus_zero);
            }
        }
    }
#endif
    if (vcols == ncols)
        return;
    for (r = 0; r < nrows; r += GS_CPU_COL_ROWS) {
        const int64_t nr = nrows - r < GS_CPU_COL_ROWS ? nrows - r : GS_CPU_COL_ROWS;
        const int init = r == 0 && (inexact || first);
        const GS_T *restrict x = in + r * stride;
        if (add) {
            for (int64_t c = vcols; c < ncols; c++) {
                int64_t k = 0;
                if (init) {
                    GS_FN(col_first)(op, &h[c], &l[c], x[c]);
                    k = 1;
                }
                for (; k < nr; k++)
                    GS_FN(col_step)(op, &h[c], &l[c], x[k * stride + c]);
            }
            continue;
        }
        /* the rows of the group in one pass over the columns, unrolled per count of rows */
#define GS_ROWS_CASE(n)                                             \
    case n:                                                         \
        if (init)                                                   \
            GS_FN(rows_into)(op, h, x, stride, vcols, ncols, n, 1); \
        else                                                        \
            GS_FN(rows_into)(op, h, x, stride, vcols, ncols, n, 0); \
        break;
        _Static_assert(GS_CPU_COL_ROWS == 4, "the switch below takes groups of 1 to 4 rows");
        switch (nr) {
            GS_ROWS_CASE(1)
            GS_ROWS_CASE(2)
            GS_ROWS_CASE(3)
        default:
            GS_FN(rows_into)(op, h, x, stride, vcols, ncols, 4, init);
        }
#undef GS_ROWS_CASE
    }
    if (inexact)
        for (int64_t c = vcols; c < ncols; c++)
            GS_FN(finish)(op, h[c], l[c], acc + c, acc + ncols + c, first,
                          out != NULL ? out + c : NULL, plus_zero);
}

/* gs_reduce_kernels.fold_cols: cols_block() specialised per operator. */
static GS_ISA_ATTR void GS_FN(fold_cols)(gs_op op, const void *in, int64_t nrows, int64_t stride,
                                         int64_t ncols, void *acc, int first, void *scratch,
                                         void *out, int plus_zero)
{
    GS_OP_DISPATCH(op, GS_FN(cols_block), in, nrows, stride, ncols, acc, first, scratch, out,
                   plus_zero)
}

/* acc = acc op x column by column, x holding the accumulators of the rows after acc's
 * (gs_reduce_kernels.combine_cols): combine() on each column, in vectors where whole for float
 * add (vpair_add: the same bits). */
static GS_ISA_ATTR void GS_FN(combine_cols)(gs_op op, void *acc, const void *x, int64_t ncols)
{
    GS_T *a = acc;
    const GS_T *y = x;
    int64_t c = 0;
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        for (; c + GS_W <= ncols; c += GS_W) {
            GS_VEC ah = GS_V(load)(a + c), al = GS_V(load)(a + ncols + c);
            GS_FN(vpair_add)(&ah, &al, GS_V(load)(y + c), GS_V(load)(y + ncols + c));
            GS_V(store)(a + c, ah);
            GS_V(store)(a + ncols + c, al);
        }
        for (; c < ncols; c++)
            GS_FN(pair_add)(&a[c], &a[ncols + c], y[c], y[ncols + c]);
        return;
    }
#endif
    for (; c < ncols; c++)
        a[c] = GS_FN(op)(op, a[c], y[c]);
}

/* out[c] = the value accumulator c stands for, rounded once: store() on each column
 * (gs_reduce_kernels.store_cols). */
static GS_ISA_ATTR void GS_FN(store_cols)(gs_op op, const void *acc, int64_t ncols, int plus_zero,
                                          void *out)
{
    const GS_T *a = acc;
    GS_T *o = out;
#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        const GS_VEC zero = GS_V(splat)(0);
        int64_t c = 0;
        for (; c + GS_W <= ncols; c += GS_W) { /* as store() */
            const GS_VEC v = GS_V(add)(GS_V(load)(a + c), GS_V(load)(a + ncols + c));
            GS_V(store)(o + c, plus_zero ? GS_V(add)(v, zero) : v);
        }
        for (; c < ncols; c++) {
            gs_part p;
            p.hi.GS_SFX = a[c];
            p.lo.GS_SFX = a[ncols + c];
            GS_FN(store)(op, &p, plus_zero, o + c);
        }
        return;
    }
#endif
    (void)op;
    (void)plus_zero;
    memcpy(o, a, (size_t)ncols * sizeof(GS_T));
}

#if GS_KIND == 'u' && GS_SIZE == 8
#include "cpu/widen.h"

/* fold() and fold_cols() over a narrower integer dtype in_type widened to 64 bits (NumPy's add and
 * mul accumulation; int64 and uint64 wrap to the same bits, so uint64's loops serve both), block
 * by block through a buffer in L1: the widening loop is compiled for this instruction set too.
 * Integer ops group freely, so the blocks change no bit. */
static GS_ISA_ATTR void GS_FN(fold_widened)(gs_op op, const void *in, gs_dtype in_type, int64_t len,
                                            gs_part *p)
{
    uint64_t buf[GS_CPU_WIDEN_BLOCK];
    gs_part blk;
    GS_FN(fold)(op, in, 0, p);
    for (int64_t pos = 0; pos < len; pos += GS_CPU_WIDEN_BLOCK) {
        int64_t n = len - pos < GS_CPU_WIDEN_BLOCK ? len - pos : GS_CPU_WIDEN_BLOCK;
        gs_widen_u64(in, in_type, pos, n, buf);
        GS_FN(fold)(op, buf, n, &blk);
        GS_FN(combine)(op, p, &blk);
    }
}

/* The rows of one chunk at most each (fold_rows) of a narrower integer dtype: fold_widened()
 * and store() of each. */
static GS_ISA_ATTR void GS_FN(fold_rows_widened)(gs_op op, const void *in, gs_dtype in_type,
                                                 int64_t nrows, int64_t row_len, void *out)
{
    const size_t in_size = gs_dtype_size(in_type);
    for (int64_t r = 0; r < nrows; r++) {
        gs_part p;
        GS_FN(fold_widened)(op, (const char *)in + r * row_len * in_size, in_type, row_len, &p);
        GS_FN(store)(op, &p, 0, (GS_T *)out + r); /* integers: no zero sign */
    }
}

/* Columns of a narrower integer dtype added (or multiplied) into 64 bits down the rows, into the
 * accumulators acc (64-bit: starting from the identity when `first`): a loop per input dtype over
 * the row's values, which the compiler vectorises with the widening folded in (VPMOVSXDQ and an
 * add on AVX2), the accumulators in cache while the rows stream past. */
static GS_ISA_ATTR void GS_FN(fold_cols_widened)(gs_op op, const void *in, gs_dtype in_type,
                                                 int64_t nrows, int64_t stride, int64_t ncols,
                                                 void *acc_, int first, void *scratch, void *out)
{
    uint64_t *restrict acc = acc_;
    (void)scratch;
    (void)out;
    if (first)
        for (int64_t c = 0; c < ncols; c++)
            acc[c] = op == GS_OP_MUL ? 1 : 0;
    switch (in_type) {
#define GS_X_COLS(code, ctype, sfx, kind, npy)                          \
    case code:                                                          \
        for (int64_t r = 0; r < nrows; r++) {                           \
            const ctype *restrict p = (const ctype *)in + r * stride;   \
            if (op == GS_OP_MUL)                                        \
                for (int64_t c = 0; c < ncols; c++)                     \
                    acc[c] *= kind == 'b' ? p[c] != 0 : (uint64_t)p[c]; \
            else                                                        \
                for (int64_t c = 0; c < ncols; c++)                     \
                    acc[c] += kind == 'b' ? p[c] != 0 : (uint64_t)p[c]; \
        }                                                               \
        break;
        GS_DTYPES(GS_X_COLS)
#undef GS_X_COLS
    default:
        break;
    }
}
#endif

/* Ties the dtype's kind letter to the kernel table's entry, checked by cpu/stamp.h. */
enum { GS_FN(kind_letter) = GS_KIND };

#undef GS_FN
