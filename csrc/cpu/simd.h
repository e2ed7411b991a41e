/*
 * cpu/simd.h - the instruction sets the CPU backend's loops are compiled for, and the choice
 * between them at run time.
 *
 * Level: backend (CPU), below the loop bodies.  The hot loops (cpu/scan_body.h,
 * cpu/reduce_body.h) are stamped once per dtype and once per instruction set (cpu/stamp_isa.h):
 *   GS_ISA_BASE  what every host of the architecture runs (x86-64: SSE2; elsewhere: whatever
 *                the compiler targets, e.g. NEON on aarch64);
 *   GS_ISA_AVX2  x86-64 only, compiled with __attribute__((target("avx2,bmi,bmi2,popcnt"))) and
 *                taken when the processor and the operating system support all four
 *                (__builtin_cpu_supports);
 *   GS_ISA_AVX512  x86-64 only, the same plus AVX-512 F, BW, DQ and VL, with 512-bit vectors
 *                preferred: the loops whose grouping does not change a bit (integer folds, float
 *                min/max) then run over 64-byte vectors; the others are AVX2's, encoded anew.
 * No -march flag is involved: one binary runs everywhere and uses AVX2 where it is there.
 *
 * Guarantee: every variant computes the same bits.  The loops are written once, over the
 * vectors of cpu/vec.h, whose operations are element-wise IEEE operations and fixed shuffles
 * (the same on every instruction set), and no variant contracts a*b+c into an FMA (C11 mode,
 * no fma target), so a float sum is grouped the same way whatever the machine.
 */
#ifndef GS_CPU_SIMD_H
#define GS_CPU_SIMD_H

#include <stdint.h>

/* GCC warns that passing 32-byte vectors by value changes the ABI without AVX: the vectors here
 * live only inside always-inlined helpers, so no call passes one. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GS_CPU_X86 1
#include <immintrin.h>
#else
#define GS_CPU_X86 0
#endif

/* Bytes ahead of the loads that the streaming loops prefetch: their compensated arithmetic issues
 * more instructions per byte than a plain sum, so the out-of-order window alone keeps fewer cache
 * misses in flight.  Measured on a 2-core host, one thread: float32 add of 10^8 values (from
 * DRAM) 48 ms with no prefetch, 34 ms 2 KiB ahead, 33 ms 4 KiB ahead (max: 36, 29, 28 ms);
 * float64 add of 10^7 within 10% of a plain 16-way sum once prefetched, 1.5x slower without.
 * A prefetch never faults and changes no result. */
#define GS_PREFETCH_AHEAD 4096
#define GS_PREFETCH(p) __builtin_prefetch((const void *)((uintptr_t)(p) + GS_PREFETCH_AHEAD))

typedef enum gs_isa {
    GS_ISA_BASE,
#if GS_CPU_X86
    GS_ISA_AVX2,
    GS_ISA_AVX512,
#endif
    GS_NISA
} gs_isa;

/* The instruction set the loops run with: the best the processor supports, unless
 * $GPUSCAN_CPU_SIMD names another ("base", or "avx2" or "avx512" where supported); decided
 * once. */
gs_isa gs_cpu_isa(void);

#endif /* GS_CPU_SIMD_H */
