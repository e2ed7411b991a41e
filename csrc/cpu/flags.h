/*
 * cpu/flags.h - flags of any dtype read as bits: the one place the CPU backend decides whether a
 * flag is set (segment heads of cpu/scan.c and cpu/teach.c, the selection of cpu/split.c).
 *
 * Level: backend (CPU), below the loops.  A flag is set when it compares unequal to
 * zero in its own dtype: any nonzero integer, a float other than +-0 (NaN included), a bool's
 * nonzero byte.  Derived from the GS_DTYPES table, so every dtype is covered.
 */
#ifndef GS_CPU_FLAGS_H
#define GS_CPU_FLAGS_H

#include <stdint.h>

#include "cpu/cpu.h"
#include "cpu/simd.h"

#if GS_CPU_X86
#include <emmintrin.h>
#endif

/* Whether flags[i] (dtype t) is set. */
static GS_ALWAYS_INLINE int gs_flag_set(const void *flags, gs_dtype t, int64_t i)
{
    switch (t) {
#define GS_X_FLAG(code, ctype, sfx, kind, npy) \
    case code:                                 \
        return ((const ctype *)flags)[i] != 0;
        GS_DTYPES(GS_X_FLAG)
#undef GS_X_FLAG
    default:
        return 0;
    }
}

/* The 64 one-byte flags at p, bit k for p[k] != 0. */
static GS_ALWAYS_INLINE uint64_t gs_flag_bits64_u8(const uint8_t *p)
{
#if GS_CPU_X86
    const __m128i zero = _mm_setzero_si128();
    uint64_t zeros = 0;
    for (int q = 0; q < 4; q++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + 16 * q));
        zeros |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, zero)) << (16 * q);
    }
    return ~zeros;
#else
    uint64_t bits = 0;
    for (int k = 0; k < 64; k++)
        bits |= (uint64_t)(p[k] != 0) << k;
    return bits;
#endif
}

/* The flags [i, i + len) (len <= 64) as bits: bit k set when flags[i + k] is. */
static GS_ALWAYS_INLINE uint64_t gs_flag_bits(const void *flags, gs_dtype t, int64_t i, int len)
{
    uint64_t bits = 0;
    if (len == 64 && gs_dtype_size(t) == 1)
        return gs_flag_bits64_u8((const uint8_t *)flags + i);
    switch (t) {
#define GS_X_BITS(code, ctype, sfx, kind, npy)                           \
    case code:                                                           \
        for (int k = 0; k < len; k++)                                    \
            bits |= (uint64_t)(((const ctype *)flags)[i + k] != 0) << k; \
        break;
        GS_DTYPES(GS_X_BITS)
#undef GS_X_BITS
    default:
        break;
    }
    return bits;
}

/* The last set flag in [from, to), or -1. */
static inline int64_t gs_flag_last(const void *flags, gs_dtype t, int64_t from, int64_t to)
{
    for (int64_t end = to; end > from; end -= 64) {
        int64_t i = end - 64 > from ? end - 64 : from;
        uint64_t bits = gs_flag_bits(flags, t, i, (int)(end - i));
        if (bits != 0)
            return i + 63 - __builtin_clzll(bits);
    }
    return -1;
}

#endif /* GS_CPU_FLAGS_H */
