/*
 * check_common.h - what the standalone kernel checks (tools/kernel_check.cu, hist_check.cu)
 * share: an exit-on-error CUDA check and a reproducible random stream (xorshift64).  They link
 * kernels/dispatch/launch.cu, which defines the launchers' debug switch.  Tools only; not part of
 * the package.
 */
#ifndef GS_CHECK_COMMON_H
#define GS_CHECK_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s failed: %s (line %d)\n", #call, cudaGetErrorString(e_), __LINE__); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

#endif /* GS_CHECK_COMMON_H */
