/*
 * cpu/widen.h - the widening of narrow dtypes, for the whole CPU backend: the one place that
 * turns a value of any dtype into the wide value the loops compute with.
 *
 * Level: backend (CPU), below the loops.  Derived from the GS_DTYPES table, so a dtype
 * added there is widened here with no other change:
 *   to 64 bits modulo 2^64  NumPy's add/mul accumulation of bool and integers narrower than 64
 *                           bits into int64/uint64 (cpu/scan.c, cpu/reduce.c, cpu/teach.c):
 *                           signed values sign-extend, unsigned zero-extend, bool is 0 or 1;
 *   by kind                 int64 for signed integers, uint64 for bool (0 or 1) and unsigned
 *                           integers, double for floats: exact for every value (cpu/hist.c).
 */
#ifndef GS_CPU_WIDEN_H
#define GS_CPU_WIDEN_H

#include <stdint.h>

#include "cpu/cpu.h"

/* Value i of `in` (dtype t) widened to 64 bits, modulo 2^64. */
static GS_ALWAYS_INLINE uint64_t gs_widen_u64_at(const void *in, gs_dtype t, int64_t i)
{
    switch (t) {
#define GS_X_WIDEN(code, ctype, sfx, kind, npy) \
    case code:                                  \
        return kind == 'b' ? ((const ctype *)in)[i] != 0 : (uint64_t)((const ctype *)in)[i];
        GS_DTYPES(GS_X_WIDEN)
#undef GS_X_WIDEN
    default:
        return 0;
    }
}

/* buf[k] = value from + k of `in` widened to 64 bits, for k < len: one loop per dtype, which the
 * compiler vectorises (inlined into each instruction set's copy of its caller). */
static GS_ALWAYS_INLINE void gs_widen_u64(const void *in, gs_dtype t, int64_t from, int64_t len,
                                          uint64_t *buf)
{
    switch (t) {
#define GS_X_WIDEN(code, ctype, sfx, kind, npy)                \
    case code: {                                               \
        const ctype *p = (const ctype *)in + from;             \
        for (int64_t k = 0; k < len; k++)                      \
            buf[k] = kind == 'b' ? p[k] != 0 : (uint64_t)p[k]; \
        break;                                                 \
    }
        GS_DTYPES(GS_X_WIDEN)
#undef GS_X_WIDEN
    default:
        break;
    }
}

/* Value k of p (dtype t) widened to its kind: *xi (signed), *xu (bool: 0 or 1, any nonzero
 * byte being True as NumPy reads it; unsigned) or *xf (float); the other two are left alone. */
static GS_ALWAYS_INLINE void gs_widen_kind_at(gs_dtype t, const void *p, int64_t k, int64_t *xi,
                                              uint64_t *xu, double *xf)
{
    switch (t) {
#define GS_X_WIDEN(code, ctype, sfx, kind, npy)    \
    case code:                                     \
        if (kind == 'f')                           \
            *xf = (double)((const ctype *)p)[k];   \
        else if (kind == 'i')                      \
            *xi = (int64_t)((const ctype *)p)[k];  \
        else if (kind == 'b')                      \
            *xu = ((const ctype *)p)[k] != 0;      \
        else                                       \
            *xu = (uint64_t)((const ctype *)p)[k]; \
        break;
        GS_DTYPES(GS_X_WIDEN)
#undef GS_X_WIDEN
    default:
        break;
    }
}

#endif /* GS_CPU_WIDEN_H */
