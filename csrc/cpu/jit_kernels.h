/*
 * cpu/jit_kernels.h - the template of an operator's shared object: the chunk kernels of
 * cpu/jit.h's table, over a type T and a function gs_combine(T x, T y) that cpu/jit.c writes
 * above it from the operator.
 *
 * Level: backend (CPU); included by cpu/jit.c alone.  The kernels are C text, kept here as code
 * (GS_JIT_TEXT stringizes it, so that it reads and diffs as C, with no preprocessor lines
 * inside) and compiled at run time; cpu/jit.c's prelude defines GS_CLONES (one copy of each
 * entry per x86-64 level) and GS_INLINE (helpers inlined into every copy).  The lanes' loops are
 * what the copies are for; the one-value-at-a-time loops (short runs, segments) are compiled
 * once (noinline), which keeps the compile within its second.
 *
 * Lanes.  A run of n >= 32 * GS_K values (no head) is GS_K sub-blocks side by side, the lanes:
 * lane k holds values [k m, (k + 1) m), the last one also the tail up to n.  One pass scans the
 * lanes in lockstep, each from its own first value (GS_K independent chains of combine, where
 * one chain would wait on each combine's latency), then a fix-up pass combines each lane's carry
 * (the carry-in, then the lanes before it) into its outputs, a loop of combine over contiguous
 * values that the compiler vectorises.  m is n / GS_K less 16 values, so that the lanes do not
 * start a multiple of 4 KiB apart (their loads and stores would share L1 sets and alias).  The
 * run's total is its lanes' totals combined in order, the same in the scan and in the fold;
 * GS_JIT_CHUNK-long runs (cpu/user.c's chunks) get their own copy with m a constant, which keeps
 * the lanes' pointers in registers.  A T of 4 or 8 bytes may scan its lanes on vectors instead
 * (gs_k_lanes_vec: a step of every lane a vector, the blocks transposed in registers), chosen
 * per operator by timing (gs_k_lanes_pick).  Operands are never swapped, so non-commutative
 * operators are safe; integer results equal the sequential left fold bit for bit; every float
 * result depends on n alone (never on the thread count or the instruction set).
 *
 * Segments (flags) run one value at a time, restarting at each head; a chunk's state after its
 * last head is the sequential fold from that head, in the scan and in the total alike.  The
 * carry is combined into each output before the first head: a chunk's outputs and total depend
 * on its values and its carry alone, so that any thread computes them the same.
 */
#ifndef GS_CPU_JIT_KERNELS_H
#define GS_CPU_JIT_KERNELS_H

#include "cpu/jit.h"

#define GS_JIT_STR(...) #__VA_ARGS__
#define GS_JIT_XSTR(...) GS_JIT_STR(__VA_ARGS__)

static const char gs_jit_kernels_text[] = GS_JIT_XSTR(GS_JIT_TABLE) ";\n" GS_JIT_STR(
enum { GS_K = sizeof(T) <= 8 ? 8 : sizeof(T) <= 32 ? 4 : 2 }; /* lanes: the states fit registers */

static void gs_k_combine(const void *x, const void *y, void *r)
{
    *(T *)r = gs_combine(*(const T *)x, *(const T *)y);
}

/* Values per lane of a run of n (0: too short for lanes, one value after the other). */
GS_INLINE int64_t gs_k_sub(int64_t n)
{
    return n >= 32 * GS_K ? n / GS_K - 16 : 0;
}

/* The lanes' scan pass on vectors (T of 4 or 8 bytes: GS_VS values a 32-byte vector).  Each of
 * the 8 lanes' next GS_VS values loaded as a vector, the block transposed so that a vector holds
 * one step of 8 (4-byte T) or 4 (8-byte T) lanes, the steps combined a vector at a time, the
 * block transposed back and stored: the same combines in the same order as gs_k_lanes, so the
 * same bits. */
enum { GS_VS = sizeof(T) == 4 || sizeof(T) == 8 ? 32 / sizeof(T) : 0 };
enum { GS_VT = (32 + sizeof(T) - 1) / sizeof(T) }; /* T a vector holds, rounded up */

/* The rows v[0..7] of 4-byte words transposed in place (three rounds of shuffles). */
GS_INLINE void gs_k_tr8(gs_w8 *v)
{
    gs_q4 a[8], b[8];
    for (int k = 0; k < 8; k += 2) { /* 32-bit pairs: rows k, k + 1 interleaved */
        a[k] = (gs_q4)GS_SHUF(v[k], v[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        a[k + 1] = (gs_q4)GS_SHUF(v[k], v[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int k = 0; k < 8; k += 4) { /* 64-bit pairs: four rows' columns in each 16 bytes */
        b[k] = GS_SHUF(a[k], a[k + 2], 0, 4, 2, 6);
        b[k + 1] = GS_SHUF(a[k], a[k + 2], 1, 5, 3, 7);
        b[k + 2] = GS_SHUF(a[k + 1], a[k + 3], 0, 4, 2, 6);
        b[k + 3] = GS_SHUF(a[k + 1], a[k + 3], 1, 5, 3, 7);
    }
    for (int j = 0; j < 4; j++) { /* 16-byte halves: columns j and j + 4 of all eight rows */
        v[j] = (gs_w8)GS_SHUF(b[j], b[j + 4], 0, 1, 4, 5);
        v[j + 4] = (gs_w8)GS_SHUF(b[j], b[j + 4], 2, 3, 6, 7);
    }
}

/* The rows v[0..3] of 8-byte words transposed in place (two rounds). */
GS_INLINE void gs_k_tr4(gs_w8 *v)
{
    gs_q4 t0 = GS_SHUF((gs_q4)v[0], (gs_q4)v[1], 0, 4, 2, 6);
    gs_q4 t1 = GS_SHUF((gs_q4)v[0], (gs_q4)v[1], 1, 5, 3, 7);
    gs_q4 t2 = GS_SHUF((gs_q4)v[2], (gs_q4)v[3], 0, 4, 2, 6);
    gs_q4 t3 = GS_SHUF((gs_q4)v[2], (gs_q4)v[3], 1, 5, 3, 7);
    v[0] = (gs_w8)GS_SHUF(t0, t2, 0, 1, 4, 5);
    v[1] = (gs_w8)GS_SHUF(t1, t3, 0, 1, 4, 5);
    v[2] = (gs_w8)GS_SHUF(t0, t2, 2, 3, 6, 7);
    v[3] = (gs_w8)GS_SHUF(t1, t3, 2, 3, 6, 7);
}

/* The 8 lanes' blocks transposed (their own inverse): v[h GS_VS + j] holds step j of lanes
 * h GS_VS .. h GS_VS + GS_VS - 1. */
GS_INLINE void gs_k_transpose(gs_w8 *v)
{
    if (GS_VS == 8) {
        gs_k_tr8(v);
    } else {
        gs_k_tr4(v);
        gs_k_tr4(v + 4);
    }
}

/* A vector of lanes' states combined with a vector of values, lane by lane (a vector operation
 * where the compiler makes one of combine; the copies are moves between registers). */
GS_INLINE gs_w8 gs_k_vcombine(gs_w8 a, gs_w8 b)
{
    T x[GS_VT], y[GS_VT];
    memcpy(x, &a, 32);
    memcpy(y, &b, 32);
    for (int k = 0; k < GS_VS; k++)
        x[k] = gs_combine(x[k], y[k]);
    memcpy(&a, x, 32);
    return a;
}

/* One step of a vector of lanes: *x the values in, their scan out; *lv the lanes' states. */
GS_INLINE void gs_k_vstep(gs_w8 *x, gs_w8 *lv, int exclusive)
{
    gs_w8 v = *x;
    if (exclusive)
        *x = *lv;
    *lv = gs_k_vcombine(*lv, v);
    if (!exclusive)
        *x = *lv;
}

/* One copy for each instruction set, called once a chunk (inlined into each kernel, its copies
 * doubled the compile's time). */
GS_CLONES static void gs_k_lanes_vec(const T *in, T *out, int64_t n, int64_t m, int exclusive,
                                     T *tot)
{
    T loc[8 * GS_VT];
    gs_w8 lv0, lv1, v[8];
    int64_t i;
    for (int k = 0; k < 8; k++)
        loc[k] = in[k * m];
    if (!exclusive)
        for (int k = 0; k < 8; k++)
            out[k * m] = loc[k];
    memcpy(&lv0, loc, 32);
    memcpy(&lv1, (char *)loc + 32, 32);
    for (i = 1; i + GS_VS <= m; i += GS_VS) {
        for (int k = 0; k < 8; k++)
            memcpy(&v[k], in + k * m + i, 32);
        gs_k_transpose(v);
        for (int j = 0; j < GS_VS; j++) {
            gs_k_vstep(&v[j], &lv0, exclusive);
            if (GS_VS == 4)
                gs_k_vstep(&v[4 + j], &lv1, exclusive);
        }
        gs_k_transpose(v);
        for (int k = 0; k < 8; k++)
            memcpy(out + k * m + i, &v[k], 32);
    }
    memcpy(loc, &lv0, 32);
    memcpy((char *)loc + 32, &lv1, 32);
    for (; i < m; i++)
        for (int k = 0; k < 8; k++) {
            T x = in[k * m + i];
            if (exclusive)
                out[k * m + i] = loc[k];
            loc[k] = gs_combine(loc[k], x);
            if (!exclusive)
                out[k * m + i] = loc[k];
        }
    for (i = 8 * m; i < n; i++) {
        T x = in[i];
        if (exclusive)
            out[i] = loc[7];
        loc[7] = gs_combine(loc[7], x);
        if (!exclusive)
            out[i] = loc[7];
    }
    for (int k = 0; k < 8; k++)
        tot[k] = loc[k];
}

/* The lanes' pass: each lane's scan from its first value into out (none when out is 0; exclusive:
 * each output the state before it, the lane's first left unwritten), its total into tot[k]. */
GS_INLINE void gs_k_lanes(const T *in, T *out, int64_t n, int64_t m, int exclusive, T *tot)
{
    T loc[GS_K];
    int64_t i;
    for (int k = 0; k < GS_K; k++)
        loc[k] = in[k * m];
    if (out == 0) {
        for (i = 1; i < m; i++)
            for (int k = 0; k < GS_K; k++)
                loc[k] = gs_combine(loc[k], in[k * m + i]);
        for (i = GS_K * m; i < n; i++)
            loc[GS_K - 1] = gs_combine(loc[GS_K - 1], in[i]);
    } else if (!exclusive) {
        for (int k = 0; k < GS_K; k++)
            out[k * m] = loc[k];
        for (i = 1; i < m; i++)
            for (int k = 0; k < GS_K; k++)
                out[k * m + i] = loc[k] = gs_combine(loc[k], in[k * m + i]);
        for (i = GS_K * m; i < n; i++)
            out[i] = loc[GS_K - 1] = gs_combine(loc[GS_K - 1], in[i]);
    } else {
        for (i = 1; i < m; i++)
            for (int k = 0; k < GS_K; k++) {
                T x = in[k * m + i];
                out[k * m + i] = loc[k];
                loc[k] = gs_combine(loc[k], x);
            }
        for (i = GS_K * m; i < n; i++) {
            T x = in[i];
            out[i] = loc[GS_K - 1];
            loc[GS_K - 1] = gs_combine(loc[GS_K - 1], x);
        }
    }
    for (int k = 0; k < GS_K; k++)
        tot[k] = loc[k];
}

static __attribute__((noinline)) T gs_k_fold_seq(const T *in, int64_t n)
{
    T acc = in[0];
    for (int64_t i = 1; i < n; i++)
        acc = gs_combine(acc, in[i]);
    return acc;
}

GS_INLINE T gs_k_fold_n(const T *in, int64_t n)
{
    T tot[GS_K], acc;
    int64_t m = gs_k_sub(n);
    if (m == 0)
        return gs_k_fold_seq(in, n);
    gs_k_lanes(in, 0, n, m, 0, tot);
    acc = tot[0];
    for (int k = 1; k < GS_K; k++)
        acc = gs_combine(acc, tot[k]);
    return acc;
}

GS_CLONES static void gs_k_fold(const void *in, int64_t n, void *acc)
{
    if (n == GS_JIT_CHUNK)
        *(T *)acc = gs_k_fold_n((const T *)in, GS_JIT_CHUNK);
    else
        *(T *)acc = gs_k_fold_n((const T *)in, n);
}

static __attribute__((noinline)) T gs_k_seq(const T *in, T *out, int64_t n, const T *carry,
                                            int exclusive, T id)
{
    T loc = in[0];
    if (carry == 0 && !exclusive) {
        out[0] = loc;
        for (int64_t i = 1; i < n; i++)
            out[i] = loc = gs_combine(loc, in[i]);
    } else if (carry == 0) {
        out[0] = id;
        for (int64_t i = 1; i < n; i++) {
            T x = in[i];
            out[i] = loc;
            loc = gs_combine(loc, x);
        }
    } else if (!exclusive) {
        T c = *carry;
        out[0] = gs_combine(c, loc);
        for (int64_t i = 1; i < n; i++) {
            loc = gs_combine(loc, in[i]);
            out[i] = gs_combine(c, loc);
        }
    } else {
        T c = *carry;
        out[0] = c;
        for (int64_t i = 1; i < n; i++) {
            T x = in[i];
            out[i] = gs_combine(c, loc);
            loc = gs_combine(loc, x);
        }
    }
    return loc;
}

/* A 4- or 8-byte T's lanes' pass one lane at a time (gs_k_lanes), for gs_k_lanes_pick. */
GS_CLONES static void gs_k_lanes_one(const T *in, T *out, int64_t n, int64_t m, int exclusive,
                                     T *tot)
{
    if (out == 0)
        __builtin_unreachable(); /* (the fold's branch left out) */
    gs_k_lanes(in, out, n, m, exclusive, tot);
}

/* Which lanes' pass scans a 4- or 8-byte T: the vector form is the faster where the compiler
 * made a vector operation of combine (an add: 1.6x), the other where it could not (an integer
 * remainder: 1.3x).  Both give the same bits, so the operator's first whole chunk scanned into
 * other memory times each twice (GS_TICKS) and the faster one is kept for the process. */
static int gs_k_form; /* 0: not chosen yet, 1: vectors, 2: one lane at a time */

static __attribute__((noinline)) void gs_k_lanes_pick(const T *in, T *out, int64_t n, int64_t m,
                                                      int exclusive, T *tot)
{
    unsigned long long best[2] = { ~0ull, ~0ull };
    int form = __atomic_load_n(&gs_k_form, __ATOMIC_RELAXED);
    if (form == 0 && (n != GS_JIT_CHUNK || in == out))
        form = 1;
    if (form == 1 || form == 2) {
        (form == 1 ? gs_k_lanes_vec : gs_k_lanes_one)(in, out, n, m, exclusive, tot);
        return;
    }
    for (int r = 0; r < 2; r++)
        for (int f = 0; f < 2; f++) {
            unsigned long long t = GS_TICKS();
            (f == 0 ? gs_k_lanes_vec : gs_k_lanes_one)(in, out, n, m, exclusive, tot);
            t = GS_TICKS() - t;
            best[f] = t < best[f] ? t : best[f];
        }
    __atomic_store_n(&gs_k_form, best[0] <= best[1] ? 1 : 2, __ATOMIC_RELAXED);
}

/* Scan a run with no head from carry (0: none); returns its total (without the carry). */
GS_INLINE T gs_k_plain_n(const T *in, T *out, int64_t n, const T *carry, int exclusive, T id)
{
    T tot[GS_K], acc, c;
    int64_t m = gs_k_sub(n);
    if (m == 0)
        return gs_k_seq(in, out, n, carry, exclusive, id);
    if (GS_VS != 0)
        gs_k_lanes_pick(in, out, n, m, exclusive, tot);
    else
        gs_k_lanes(in, out, n, m, exclusive, tot);
    if (exclusive)
        out[0] = carry != 0 ? *carry : id;
    acc = tot[0];
    for (int k = carry != 0 ? 0 : 1; k < GS_K; k++) {
        int64_t from = k * m + (exclusive != 0), to = k == GS_K - 1 ? n : (k + 1) * m;
        if (k > 0)
            c = carry != 0 ? gs_combine(*carry, acc) : acc;
        else
            c = *carry;
        if (exclusive && k > 0)
            out[k * m] = c;
        for (int64_t i = from; i < to; i++)
            out[i] = gs_combine(c, out[i]);
        if (k > 0)
            acc = gs_combine(acc, tot[k]);
    }
    return acc;
}

GS_INLINE T gs_k_plain(const T *in, T *out, int64_t n, const T *carry, int exclusive, T id)
{
    if (n == GS_JIT_CHUNK)
        return gs_k_plain_n(in, out, GS_JIT_CHUNK, carry, exclusive, id);
    return gs_k_plain_n(in, out, n, carry, exclusive, id);
}

static __attribute__((noinline)) T gs_k_flagged(const T *in, T *out, const unsigned char *flags,
                                                int64_t n, const T *carry, int exclusive, T id)
{
    int live = carry != 0 && !flags[0];
    T c = carry != 0 ? *carry : id, loc = in[0];
    out[0] = exclusive ? (live ? c : id) : (live ? gs_combine(c, loc) : loc);
    for (int64_t i = 1; i < n; i++) {
        T x = in[i];
        if (flags[i]) {
            live = 0;
            out[i] = exclusive ? id : x;
            loc = x;
        } else if (exclusive) {
            out[i] = live ? gs_combine(c, loc) : loc;
            loc = gs_combine(loc, x);
        } else {
            loc = gs_combine(loc, x);
            out[i] = live ? gs_combine(c, loc) : loc;
        }
    }
    return loc;
}

static int64_t gs_k_last_head(const unsigned char *flags, int64_t n)
{
    int64_t i = flags != 0 ? n - 1 : -1;
    while (i >= 0 && !flags[i])
        i--;
    return i;
}

static int gs_k_total(const void *vin, const unsigned char *flags, int64_t n, void *vacc)
{
    int64_t head = gs_k_last_head(flags, n);
    if (head < 0)
        gs_k_fold(vin, n, vacc);
    else
        *(T *)vacc = gs_k_fold_seq((const T *)vin + head, n - head);
    return head >= 0;
}

GS_CLONES static void gs_k_scan(const void *in, void *out, const unsigned char *flags, int64_t n,
                                const void *carry, int exclusive, const void *id, void *total)
{
    if (gs_k_last_head(flags, n) < 0)
        *(T *)total = gs_k_plain((const T *)in, (T *)out, n, (const T *)carry, exclusive,
                                 *(const T *)id);
    else
        *(T *)total = gs_k_flagged((const T *)in, (T *)out, flags, n, (const T *)carry, exclusive,
                                   *(const T *)id);
}

__attribute__((visibility("default"))) const struct gs_jit_table gs_jit_table = {
    GS_JIT_ABI_VALUE, sizeof(T), gs_k_combine, gs_k_fold, gs_k_total, gs_k_scan
};
);

#endif /* GS_CPU_JIT_KERNELS_H */
