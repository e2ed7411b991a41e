/*
 * cpu/stamp_isa.h - stamps one CPU-backend body (GS_CPU_BODY) once per dtype (cpu/stamp.h) and
 * once per instruction set of cpu/simd.h, in gs_isa order.
 *
 * Level: backend (CPU).  Besides cpu/stamp.h's parameters each body sees
 *   GS_ISA       the set's suffix (base, avx2, avx512), which the includer's GS_NAME pastes into
 *                every name, so that each set has its own copy of every function;
 *   GS_ISA_ATTR  the attribute that compiles a function for the set (empty for base);
 *   GS_ISA_WIDE  1 where the set has 32-byte vectors (cpu/vec.h uses them whole), else 0;
 *   GS_ISA_ZMM   1 where it has 64-byte vectors (AVX-512), else 0.
 * Usage, in a .c file:  #define GS_CPU_BODY "cpu/scan_body.h"  #include "cpu/stamp_isa.h"
 * With GS_CPU_ISA_ONLY defined the body is included once per set only (not per dtype).
 *
 * The includer then builds its table of kernels, indexed by gs_isa and gs_dtype, as
 *   static const T table[GS_NISA][GS_NDTYPES] = GS_ISA_TABLE;
 * having defined GS_ISA_ROW(isa, code, sfx, kind), one dtype's initialiser for one set.
 */
#ifdef GS_CPU_ISA_ONLY
#define GS_CPU_STAMP GS_CPU_BODY
#else
#define GS_CPU_STAMP "cpu/stamp.h"
#endif
#include "cpu/simd.h"

#define GS_ISA base
#define GS_ISA_ATTR
#define GS_ISA_WIDE 0
#define GS_ISA_ZMM 0
#include GS_CPU_STAMP
#undef GS_ISA
#undef GS_ISA_ATTR
#undef GS_ISA_WIDE
#undef GS_ISA_ZMM

#if GS_CPU_X86
#define GS_ISA avx2
#define GS_ISA_ATTR __attribute__((target("avx2,bmi,bmi2,popcnt")))
#define GS_ISA_WIDE 1
#define GS_ISA_ZMM 0
#include GS_CPU_STAMP
#undef GS_ISA
#undef GS_ISA_ATTR
#undef GS_ISA_WIDE
#undef GS_ISA_ZMM

/* GCC takes 512-bit vectors for the loops it vectorises only where told to prefer them. */
#if defined(__clang__)
#define GS_ISA_ATTR \
    __attribute__((target("avx2,bmi,bmi2,popcnt,avx512f,avx512bw,avx512dq,avx512vl")))
#else
#define GS_ISA_ATTR        \
    __attribute__((target( \
        "avx2,bmi,bmi2,popcnt,avx512f,avx512bw,avx512dq,avx512vl,prefer-vector-width=512")))
#endif
#define GS_ISA avx512
#define GS_ISA_WIDE 1
#define GS_ISA_ZMM 1
#include GS_CPU_STAMP
#undef GS_ISA
#undef GS_ISA_ATTR
#undef GS_ISA_WIDE
#undef GS_ISA_ZMM
#endif

#undef GS_CPU_STAMP

#define GS_ISA_ROW_base(code, ctype, sfx, kind, npy) GS_ISA_ROW(base, code, sfx, kind)
#define GS_ISA_ROW_avx2(code, ctype, sfx, kind, npy) GS_ISA_ROW(avx2, code, sfx, kind)
#define GS_ISA_ROW_avx512(code, ctype, sfx, kind, npy) GS_ISA_ROW(avx512, code, sfx, kind)
#if GS_CPU_X86
#define GS_ISA_TABLE                                        \
    {                                                       \
        [GS_ISA_BASE] = { GS_DTYPES(GS_ISA_ROW_base) },     \
        [GS_ISA_AVX2] = { GS_DTYPES(GS_ISA_ROW_avx2) },     \
        [GS_ISA_AVX512] = { GS_DTYPES(GS_ISA_ROW_avx512) }, \
    }
#else
#define GS_ISA_TABLE                                   \
    {                                                  \
        [GS_ISA_BASE] = { GS_DTYPES(GS_ISA_ROW_base) } \
    }
#endif
