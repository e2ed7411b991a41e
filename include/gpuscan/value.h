/*
 * gpuscan/value.h - one value of any dtype held exactly, and the conversions between dtypes that
 * C casts make (NumPy's unsafe casting): the device's strided copy (kernels/dispatch/copy.cu) and
 * the host's pack and unpack (csrc/host/pack.c) convert through these two functions.
 * Level: include (plain C, both compilers).  A value passes through the widest exact type of its
 * kind (int64, uint64 or double), so a conversion rounds at most once, as a C cast from the
 * source type would.  Bool reads as its byte != 0 (NumPy's True is any nonzero byte) and is
 * written as 0 or 1 from any nonzero value, NaN included.
 */
#ifndef GS_VALUE_H
#define GS_VALUE_H

#include "gpuscan/types.h"

/* A ctype read from or written to p: directly on the device (aligned device memory), by memcpy
 * on the host (any buffer, and no question of aliasing). */
#ifdef __CUDA_ARCH__
#define GS_VALUE_GET(ctype, p, x) ((x) = *(const ctype *)(p))
#define GS_VALUE_PUT(ctype, p, x) (*(ctype *)(p) = (x))
#else
#include <string.h>
#define GS_VALUE_GET(ctype, p, x) memcpy(&(x), (p), sizeof(ctype))
#define GS_VALUE_PUT(ctype, p, x) memcpy((p), &(x), sizeof(ctype))
#endif

typedef struct gs_value {
    char kind; /* 'i', 'u' (bool too) or 'f' */
    int64_t i;
    uint64_t u;
    double f;
} gs_value;

/* The value of dtype t at p (aligned for t, native byte order). */
static inline GS_HD gs_value gs_value_load(gs_dtype t, const void *p)
{
    gs_value v;
    v.kind = gs_dtype_read_kind(t);
    v.i = 0;
    v.u = 0;
    v.f = 0.0;
    switch (t) {
#define GS_X_LOAD(code, ctype, sfx, kind_, npy)  \
    case code:                                   \
        if (kind_ == 'b')                        \
            v.u = *(const uint8_t *)p != 0;      \
        else if (kind_ == 'f')                   \
            v.f = (double)*(const ctype *)p;     \
        else if (kind_ == 'i')                   \
            v.i = (int64_t) * (const ctype *)p;  \
        else                                     \
            v.u = (uint64_t) * (const ctype *)p; \
        break;
        GS_DTYPES(GS_X_LOAD)
#undef GS_X_LOAD
    default:
        break;
    }
    return v;
}

/* Store v at p as dtype t (aligned for t, native byte order), converted as a C cast does. */
static inline GS_HD void gs_value_store(gs_dtype t, void *p, gs_value v)
{
    switch (t) {
#define GS_X_STORE(code, ctype, sfx, kind_, npy)                                           \
    case code: {                                                                           \
        ctype x;                                                                           \
        if (kind_ == 'b')                                                                  \
            x = (ctype)(v.kind == 'f' ? v.f != 0.0 : v.kind == 'i' ? v.i != 0 : v.u != 0); \
        else                                                                               \
            x = v.kind == 'f' ? (ctype)v.f : v.kind == 'i' ? (ctype)v.i : (ctype)v.u;      \
        GS_VALUE_PUT(ctype, p, x);                                                         \
        break;                                                                             \
    }
        GS_DTYPES(GS_X_STORE)
#undef GS_X_STORE
    default:
        break;
    }
}

#endif /* GS_VALUE_H */
