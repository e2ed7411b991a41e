/*
 * cpu/jit_kernels.h - the template of an operator's shared object: the chunk kernels of
 * cpu/jit.h's table, over a type T and a function gs_combine(T x, T y) that cpu/jit.c writes
 * above it from the operator.
 *
 * Level: backend (CPU); included by cpu/jit.c alone.  The kernels are C text, kept here as code
 * (GS_JIT_TEXT stringizes it, so that it reads and diffs as C, with no preprocessor lines
 * inside) and compiled at run time.  Each kernel runs a loop over a chunk with gs_combine
 * inlined in it; the loops are split by exclusive / carry / flags so that none tests them per
 * value.  The state of a chunk always starts from its first value (or a head) and the carry is
 * combined into each output: a chunk's outputs and total depend on its values and its carry
 * alone, so that any thread computes them the same.
 */
#ifndef GS_CPU_JIT_KERNELS_H
#define GS_CPU_JIT_KERNELS_H

#include "cpu/jit.h"

#define GS_JIT_STR(...) #__VA_ARGS__
#define GS_JIT_XSTR(...) GS_JIT_STR(__VA_ARGS__)

static const char gs_jit_kernels_text[] = GS_JIT_XSTR(GS_JIT_TABLE) ";\n" GS_JIT_STR(
static void gs_k_combine(const void *x, const void *y, void *r)
{
    *(T *)r = gs_combine(*(const T *)x, *(const T *)y);
}

static void gs_k_fold(const void *vin, int64_t n, void *vacc, int has_acc)
{
    const T *in = (const T *)vin;
    T acc = has_acc ? *(const T *)vacc : in[0];
    for (int64_t i = has_acc ? 0 : 1; i < n; i++)
        acc = gs_combine(acc, in[i]);
    *(T *)vacc = acc;
}

static int gs_k_total(const void *vin, const unsigned char *flags, int64_t n, void *vacc)
{
    int64_t from = n;
    while (flags != 0 && from > 0 && !flags[from - 1])
        from--;
    if (flags == 0 || from == 0) {
        gs_k_fold(vin, n, vacc, 0);
        return 0;
    }
    gs_k_fold((const T *)vin + (from - 1), n - (from - 1), vacc, 0);
    return 1;
}

static T gs_k_plain(const T *in, T *out, int64_t n, const T *carry, int exclusive, T id)
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

static T gs_k_flagged(const T *in, T *out, const unsigned char *flags, int64_t n, const T *carry,
                      int exclusive, T id)
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

static void gs_k_scan(const void *in, void *out, const unsigned char *flags, int64_t n,
                      const void *carry, int exclusive, const void *id, void *total)
{
    if (flags == 0)
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
