/*
 * cpu/scan_body.h - the scan loops of one dtype and one instruction set: written once, included
 * once per dtype and set by cpu/scan.c through cpu/stamp_isa.h (no include guard on purpose).
 *
 * Level: backend (CPU), the innermost level of the CPU scan: loops over a contiguous run
 * of values, restarting at the segment heads a bitmap marks.  cpu/scan.c splits a scan into
 * chunks, reads the chunks' heads into bitmaps and combines the chunks' carries; this file only
 * scans values from a state.
 *
 * The includer defines cpu/stamp.h's and cpu/stamp_isa.h's parameters (GS_T, GS_U, GS_I,
 * GS_SIZE, GS_SFX, GS_KIND, GS_MIN, GS_MAX, GS_ISA, GS_ISA_ATTR, GS_ISA_WIDE) and finds gs_val,
 * gs_carry, GS_ALWAYS_INLINE and GS_NAME already defined.
 *
 * One run: apply(op, in, out, len, exclusive, cin, c, heads) scans in[0, len) from the state *c
 * and leaves in *c the state after it.  Output i is cin (op) state-so-far (op) in[i] (in[i] left
 * out when exclusive); cin is the chunk's carry for float add and mul, whose state starts from
 * the identity at each chunk so that phase 1 (no output) computes the very state that the scan
 * of the chunk reaches; for every other op cin is NULL and the carry is the starting state.  At
 * a head (bit i % 64 of heads[i / 64]; heads NULL: none) the state restarts from the identity
 * and cin is dropped: output i is then in[i] (the identity when exclusive).
 *
 * Loops.  dtypes of 4 and 8 bytes run over vectors of GS_W values (cpu/vec.h): each vector is
 * scanned in itself (a tree of depth log2 GS_W), combined with the state, and its total folded
 * into the state; the last, partial vector is padded with the identity.  A vector with heads
 * is scanned by the same tree, segmented (a value after a head combines the values from that
 * head on only), its values from the first head on output from that alone, and its last
 * segment's total becomes the state; every choice is a blend under the heads' bits, never a
 * branch on them, so dense heads cost about what none do.  Everything depends on the run's start
 * and length and the heads only, and every instruction set does the same operations, so the
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

/* Values with a lower neighbour in their half (lane1's targets), and with one two below
 * (lane2's): the values the steps of scan() combine, as bits of the lanes. */
#define GS_WBITS ((1u << GS_W) - 1u)
#if GS_SIZE == 4
#define GS_LANE1_BITS 0xeeu
#define GS_LANE2_BITS 0xccu
#else
#define GS_LANE1_BITS 0xau
#endif

/* The segmented inclusive scan of one vector: bit k of `m` marks a head at value k, where the
 * combining restarts.  scan()'s tree, each step leaving alone a value whose span already holds a
 * head (the pair (flag, value) combined as (fa | fb, fb ? vb : va op vb), an associative
 * operator): with no head the very bits of scan(), and a value after a head depends on the
 * values from that head on only. */
static GS_ALWAYS_INLINE GS_ISA_ATTR GS_VEC GS_V(segscan)(const gs_op op, GS_VEC v, unsigned m,
                                                         GS_VEC id)
{
    v = GS_V(selb)(m, v, GS_V(op)(op, GS_V(lane1)(v, id), v));
    m |= (m << 1) & GS_LANE1_BITS;
#if GS_SIZE == 4
    v = GS_V(selb)(m, v, GS_V(op)(op, GS_V(lane2)(v, id), v));
    m |= (m << 2) & GS_LANE2_BITS;
#endif
    return GS_V(selb)(m, v, GS_V(op)(op, GS_V(cross)(v, id), v));
}

/*
 * One vector x of a run: write its outputs to out (unless NULL) and fold it into the state
 * (*h, *l), which holds the same value in every lane.  `m`: its segment heads, bit k for value k
 * (0 for none: the segmented paths then fold away); the values from a head on restart from the
 * identity, with no carry, and after a head the state is the last segment's alone.  `ch`, `cl`:
 * the carry (float add and mul with a carry; else unused); `id`: op's identity in every lane.
 */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(vstep)(const gs_op op, GS_VEC x, const unsigned m,
                                                      GS_T *out, const int exclusive,
                                                      const int has_cin, GS_VEC ch, GS_VEC cl,
                                                      GS_VEC *h, GS_VEC *l, GS_VEC id)
{
    GS_VEC v = GS_V(segscan)(op, x, m, id);
    GS_VEC t = GS_V(last)(v);
    /* The values with a head at or before them (from m's lowest bit on), and all of them when
     * the last one has (m != 0; computed from seg's last bit, so that the compiler sees no
     * condition to branch on: the heads are data, a branch on them would be mispredicted). */
    const unsigned seg = ~((m & (0u - m)) - 1u);
    const unsigned restart = 0u - ((seg >> (GS_W - 1)) & 1u);

    if (out != NULL) {
        GS_VEC y = v, o;
        if (exclusive)
            y = GS_V(selb)(m, id, GS_V(shift1)(v, id));
#if GS_KIND == 'f'
        if (op == GS_OP_ADD) {
            o = GS_V(add)(*h, GS_V(add)(y, *l));
            if (has_cin)
                o = GS_V(add)(ch, GS_V(add)(cl, o));
            o = GS_V(selb)(seg, y, o);
            if (exclusive) /* the empty sum is +0, as np.add.reduce([]) */
                o = GS_V(add)(o, GS_V(splat)(0));
        } else
#endif
        {
            (void)cl;
            o = GS_V(op)(op, *h, y);
            if (has_cin) /* float mul and the logaddexps: the chunk's carry first */
                o = GS_V(op)(op, ch, o);
            o = GS_V(selb)(seg, y, o);
        }
        GS_V(store)(out, o);
    }

#if GS_KIND == 'f'
    if (op == GS_OP_ADD) {
        /* TwoSum(h, t): s = h + t and its exact error e; e joins l unless it is zero (l stays
         * -0 over a run of -0s) or not finite (h met an inf or NaN: h alone is the answer). */
        const GS_VEC zero = GS_V(splat)(0), nz = GS_V(splat)((GS_T)-0.0);
        GS_VEC s = GS_V(add)(*h, t);
        GS_VEC bp = GS_V(sub)(s, *h);
        GS_VEC e = GS_V(add)(GS_V(sub)(*h, GS_V(sub)(s, bp)), GS_V(sub)(t, bp));
        GS_MASK keep = GS_V(mand)(GS_V(ne)(e, zero), GS_V(eq)(GS_V(sub)(e, e), zero));
        *l = GS_V(selb)(restart, nz, GS_V(add)(*l, GS_V(sel)(keep, e, id)));
        *h = GS_V(selb)(restart, t, s);
        return;
    }
#endif
    *h = GS_V(selb)(restart, t, GS_V(op)(op, *h, t));
}

/* The run in[0, len) over vectors; the last one padded with the identity.  `heads`: NULL, or
 * bit i % 64 of heads[i / 64] marking a segment head at value i: a word of 64 values with no
 * head takes the plain steps, one with a few (GS_CPU_FEW_HEADS) the plain step for its vectors
 * without one, a denser one the segmented step for every vector, with no branch on the heads. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(loop)(const gs_op op, const GS_T *in, GS_T *out,
                                                     int64_t len, int exclusive,
                                                     const gs_carry *cin, gs_carry *c,
                                                     const uint64_t *heads)
{
    const GS_VEC id = GS_V(splat)(GS_FN(op_identity)(op));
    int has_cin = cin != NULL;
    GS_VEC h = GS_V(splat)(c->hi.GS_SFX), l = GS_V(splat)(c->lo.GS_SFX);
    GS_VEC ch = has_cin ? GS_V(splat)(cin->hi.GS_SFX) : id;
    GS_VEC cl = has_cin ? GS_V(splat)(cin->lo.GS_SFX) : id;
    int64_t i = 0;

    _Static_assert(64 % GS_W == 0, "a word of heads covers whole vectors");
    if (heads == NULL) {
        for (; i + GS_W <= len; i += GS_W) {
            GS_T *o = out != NULL ? out + i : NULL;
            GS_PREFETCH(in + i);
            GS_FN(vstep)(op, GS_V(load)(in + i), 0, o, exclusive, has_cin, ch, cl, &h, &l, id);
        }
    } else {
        for (; i + 64 <= len; i += 64) {
            const uint64_t w = heads[i / 64];
            for (int q = 0; q < 64 * GS_SIZE; q += 64) /* each cache line, as the plain loop */
                GS_PREFETCH((const char *)(in + i) + q);
            if (w == 0) {
                for (int k = 0; k < 64; k += GS_W) {
                    GS_T *o = out != NULL ? out + i + k : NULL;
                    GS_FN(vstep)(op, GS_V(load)(in + i + k), 0, o, exclusive, has_cin, ch, cl, &h,
                                 &l, id);
                }
                continue;
            }
            if (__builtin_popcountll(w) <= GS_CPU_FEW_HEADS) {
                /* A few heads: the plain step for the vectors without one (a branch mispredicted
                 * about once per head) */
                for (int k = 0; k < 64; k += GS_W) {
                    unsigned m = (unsigned)(w >> k) & GS_WBITS;
                    GS_T *o = out != NULL ? out + i + k : NULL;
                    if (m == 0) {
                        GS_FN(vstep)(op, GS_V(load)(in + i + k), 0, o, exclusive, has_cin, ch, cl,
                                     &h, &l, id);
                        continue;
                    }
                    GS_FN(vstep)(op, GS_V(load)(in + i + k), m, o, exclusive, has_cin, ch, cl, &h,
                                 &l, id);
                    has_cin = 0; /* after a head the carry is done with */
                }
                continue;
            }
            for (int k = 0; k < 64; k += GS_W) {
                unsigned m = (unsigned)(w >> k) & GS_WBITS;
                GS_T *o = out != NULL ? out + i + k : NULL;
                GS_FN(vstep)(op, GS_V(load)(in + i + k), m, o, exclusive, has_cin, ch, cl, &h, &l,
                             id);
                has_cin = has_cin && m == 0; /* after a head the carry is done with */
            }
        }
        for (; i + GS_W <= len; i += GS_W) {
            unsigned m = (unsigned)(heads[i / 64] >> (i % 64)) & GS_WBITS;
            GS_T *o = out != NULL ? out + i : NULL;
            GS_FN(vstep)(op, GS_V(load)(in + i), m, o, exclusive, has_cin, ch, cl, &h, &l, id);
            has_cin = has_cin && m == 0;
        }
    }
    if (i < len) {
        GS_T pad[GS_W], res[GS_W];
        unsigned m = heads != NULL ? (unsigned)(heads[i / 64] >> (i % 64)) : 0;
        m &= (1u << (len - i)) - 1u; /* no head in the padding */
        for (int k = 0; k < GS_W; k++)
            pad[k] = i + k < len ? in[i + k] : GS_FN(op_identity)(op);
        GS_T *o = out != NULL ? res : NULL;
        GS_FN(vstep)(op, GS_V(load)(pad), m, o, exclusive, has_cin, ch, cl, &h, &l, id);
        if (out != NULL)
            for (int k = 0; i + k < len; k++)
                out[i + k] = res[k];
    }
    c->hi.GS_SFX = GS_V(get)(h, 0);
    c->lo.GS_SFX = GS_V(get)(l, 0);
}

#else
/* One value at a time (exact ops only): in[from, to) from the state a, writing out[from, to)
 * unless out is NULL, with no head inside; returns the state after `to`. */
static GS_ALWAYS_INLINE GS_T GS_FN(run)(const gs_op op, const GS_T *in, GS_T *out, int64_t from,
                                        int64_t to, const int exclusive, GS_T a)
{
    int64_t i;
    if (out == NULL) {
        for (i = from; i < to; i++)
            a = GS_FN(op)(op, a, GS_KIND == 'b' ? in[i] != 0 : in[i]);
    } else if (exclusive) {
        for (i = from; i < to; i++) {
            GS_T x = GS_KIND == 'b' ? in[i] != 0 : in[i];
            out[i] = a;
            a = GS_FN(op)(op, a, x);
        }
    } else {
        for (i = from; i < to; i++) {
            a = GS_FN(op)(op, a, GS_KIND == 'b' ? in[i] != 0 : in[i]);
            out[i] = a;
        }
    }
    return a;
}

/* The run in[0, len) one value at a time (exact ops only: cin is NULL); `heads` as above.  A
 * word of heads with few heads is scanned as plain runs between them (a loop exit per head); one
 * with more, where those exits would be mispredicted every few values, value by value with each
 * head selected by a mask instead. */
static GS_ALWAYS_INLINE GS_ISA_ATTR void GS_FN(loop)(const gs_op op, const GS_T *in, GS_T *out,
                                                     int64_t len, int exclusive,
                                                     const gs_carry *cin, gs_carry *c,
                                                     const uint64_t *heads)
{
    const GS_T id = GS_FN(op_identity)(op);
    GS_T a = c->hi.GS_SFX;

    (void)cin;
    if (heads == NULL) {
        c->hi.GS_SFX = GS_FN(run)(op, in, out, 0, len, exclusive, a);
        return;
    }
    for (int64_t base = 0; base < len; base += 64) {
        int64_t end = len - base < 64 ? len : base + 64, i = base;
        uint64_t w = heads[base / 64];
        if (__builtin_popcountll(w) <= GS_CPU_FEW_HEADS) {
            for (; w != 0; w &= w - 1) {
                int64_t head = base + __builtin_ctzll(w);
                a = GS_FN(run)(op, in, out, i, head, exclusive, a);
                a = id;
                i = head;
            }
            a = GS_FN(run)(op, in, out, i, end, exclusive, a);
            continue;
        }
        for (; i < end; i++) {
            GS_T x = GS_KIND == 'b' ? in[i] != 0 : in[i];
            GS_U head = 0u - (GS_U)((w >> (i - base)) & 1);
            GS_T from = (GS_T)(((GS_U)a & ~head) | ((GS_U)id & head));
            a = GS_FN(op)(op, from, x);
            if (out != NULL)
                out[i] = exclusive ? from : a;
        }
    }
    c->hi.GS_SFX = a;
}
#endif

#if GS_KIND == 'f'
/* The logaddexps, one value at a time: no vector exp and log1p, and the vector tree would call
 * them log2(GS_W) + 2 times per value.  The outputs and the state as loop()'s (output i is cin
 * combined with the state, restarting at a head), grouped from the run's start alone. */
static GS_ALWAYS_INLINE void GS_FN(log_loop)(const gs_op op, const GS_T *in, GS_T *out,
                                             int64_t len, int exclusive, const gs_carry *cin,
                                             gs_carry *c, const uint64_t *heads)
{
    const GS_T id = GS_FN(op_identity)(op);
    GS_T h = c->hi.GS_SFX;
    int has_cin = cin != NULL;

    for (int64_t i = 0; i < len; i++) {
        if (heads != NULL && (heads[i / 64] >> (i % 64)) & 1) {
            h = id;
            has_cin = 0; /* after a head the carry is done with */
        }
        const GS_T before = h;
        h = GS_FN(op)(op, h, in[i]);
        if (out != NULL) {
            const GS_T y = exclusive ? before : h;
            out[i] = has_cin ? GS_FN(op)(op, cin->hi.GS_SFX, y) : y;
        }
    }
    c->hi.GS_SFX = h;
}
#endif

/* The loop, specialised per operator and for runs with and without output (gs_kernels.apply). */
static GS_ISA_ATTR void GS_FN(apply)(gs_op op, const void *in, void *out, int64_t len,
                                     int exclusive, const gs_carry *cin, gs_carry *c,
                                     const uint64_t *heads)
{
#if GS_KIND == 'f'
    if (gs_op_is_log(op)) {
        GS_FN(log_loop)(op, in, out, len, exclusive, cin, c, heads);
        return;
    }
#endif
    if (out == NULL) {
        GS_OP_DISPATCH(op, GS_FN(loop), in, NULL, len, exclusive, cin, c, heads)
    } else {
        GS_OP_DISPATCH(op, GS_FN(loop), in, out, len, exclusive, cin, c, heads)
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
    /* GS_CPU_CHUNK rows at a time, asking for a stop between them (host/pool.h): the same
     * states through the same steps as one pass over every row. */
    for (int64_t r0 = 0; r0 < nrows; r0 += GS_CPU_CHUNK) {
        const int64_t nr = nrows - r0 < GS_CPU_CHUNK ? nrows - r0 : GS_CPU_CHUNK;
        if (r0 > 0 && gs_cpu_stopping())
            return;
        GS_OP_DISPATCH(op, GS_FN(cols_rows), (const GS_T *)in + r0 * stride, stride,
                       (GS_T *)out + r0 * stride, stride, nr, ncols, exclusive, r0, h, l)
    }
}

#if GS_KIND == 'u' && GS_SIZE == 8
#include "cpu/widen.h"

/* apply() over in[0, len) of the narrower integer dtype in_type, widened to 64 bits block by block
 * (NumPy's add and mul accumulation; int64 and uint64 wrap to the same bits, so uint64's loops
 * serve both): the widening loop is compiled for this instruction set too. */
static GS_ISA_ATTR void GS_FN(apply_widened)(gs_op op, const void *in, gs_dtype in_type, void *out,
                                             int64_t len, int exclusive, const gs_carry *cin,
                                             gs_carry *c, const uint64_t *heads)
{
    uint64_t buf[GS_CPU_WIDEN_BLOCK];
    for (int64_t pos = 0; pos < len; pos += GS_CPU_WIDEN_BLOCK) {
        int64_t n = len - pos < GS_CPU_WIDEN_BLOCK ? len - pos : GS_CPU_WIDEN_BLOCK;
        gs_widen_u64(in, in_type, pos, n, buf);
        GS_FN(apply)(op, buf, out != NULL ? (uint64_t *)out + pos : NULL, n, exclusive, cin, c,
                     heads != NULL ? heads + pos / 64 : NULL);
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
        if (r % GS_CPU_CHUNK == 0 && r > 0 && gs_cpu_stopping())
            return; /* as apply_cols: a stop asked every GS_CPU_CHUNK rows */
        gs_widen_u64(in, in_type, r * stride, ncols, buf);
        GS_OP_DISPATCH(op, GS_FN(cols_rows), buf, 0, (uint64_t *)out + r * stride, 0, 1, ncols,
                       exclusive, r, h, l)
    }
}
#endif

#if GS_SIZE >= 4
#undef GS_WBITS
#undef GS_LANE1_BITS
#undef GS_LANE2_BITS
#endif

/* Ties the dtype's kind letter to the kernel table's entry, checked by cpu/stamp.h. */
enum { GS_FN(kind_letter) = GS_KIND };

#undef GS_FN
