/*
 * cpu/isa.c - which instruction set the CPU backend's loops run with (see cpu/simd.h).
 *
 * Level: backend (CPU).  Decided once per process, at the first call: the best that
 * the processor and the operating system support, unless $GPUSCAN_CPU_SIMD asks for another
 * one ("base"; "avx2" or "avx512" where supported; "auto" or unset: the best).  An unknown name, or
 * one the processor does not support, gives the best: never a set the processor lacks.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "cpu/simd.h"

static pthread_once_t gs_isa_once = PTHREAD_ONCE_INIT;
static gs_isa gs_isa_chosen = GS_ISA_BASE;

static const char *const gs_isa_names[GS_NISA] = {
    [GS_ISA_BASE] = "base",
#if GS_CPU_X86
    [GS_ISA_AVX2] = "avx2",
    [GS_ISA_AVX512] = "avx512",
#endif
};

/* The best set the processor supports. */
static gs_isa gs_isa_best(void)
{
#if GS_CPU_X86
    __builtin_cpu_init();
    /* Every processor with AVX2 has BMI1, BMI2 and POPCNT too (Haswell, Excavator on): the
     * set's loops may use them, so all four are asked for. */
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("bmi") ||
        !__builtin_cpu_supports("bmi2") || !__builtin_cpu_supports("popcnt"))
        return GS_ISA_BASE;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return GS_ISA_AVX512;
    return GS_ISA_AVX2;
#endif
    return GS_ISA_BASE;
}

static void gs_isa_init(void)
{
    gs_isa best = gs_isa_best();
    const char *env = getenv("GPUSCAN_CPU_SIMD");

    gs_isa_chosen = best;
    if (env == NULL || *env == '\0' || strcmp(env, "auto") == 0)
        return;
    for (int i = 0; i < GS_NISA; i++)
        if (strcmp(env, gs_isa_names[i]) == 0 && i <= (int)best)
            gs_isa_chosen = (gs_isa)i;
}

gs_isa gs_cpu_isa(void)
{
    pthread_once(&gs_isa_once, gs_isa_init);
    return gs_isa_chosen;
}

const char *gs_cpu_isa_name(void)
{
    return gs_isa_names[gs_cpu_isa()];
}
