/*
 * warp/warp_match.cuh - warp level: which lanes of a warp hold the same 8-bit digit (a radix
 * sort's rank within a warp: agent/radix.cuh, through block/radix_rank.cuh).
 * One ballot per digit bit: a lane's peers are the lanes that agree with it on every bit. Every
 * lane of the warp calls it (the ballots take the full mask); `among` restricts the peers to
 * lanes holding a key (a tile's tail).
 * Level: warp. Included once per translation unit.
 */
#ifndef GS_WARP_MATCH_CUH
#define GS_WARP_MATCH_CUH

#include "thread/load_store.cuh"

/* The lanes in `among` whose `digit` equals this lane's (this lane among them when it is in
 * `among`). Each bit's ballot and its complement (for a lane whose bit is clear) in one asm
 * block, as CUB's MatchAny has it: written in C, the compiler computes the select masks of many
 * keys ahead and holds them in registers. */
static __device__ __forceinline__ unsigned gs_warp_match_digit(unsigned digit, unsigned among)
{
    unsigned peers = among;
#pragma unroll
    for (int b = 0; b < GS_SORT_DIGIT_BITS; ++b) {
        unsigned same;
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "and.b32 %0, %1, %2;\n\t"
                     "setp.ne.u32 p, %0, 0;\n\t"
                     "vote.sync.ballot.b32 %0, p, 0xffffffff;\n\t"
                     "@!p not.b32 %0, %0;\n\t}"
                     : "=r"(same)
                     : "r"(digit), "r"(1u << b));
        peers &= same;
    }
    return peers;
}

/* The lanes below this one. */
static __device__ __forceinline__ unsigned gs_lanes_below(void)
{
    unsigned m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

#endif /* GS_WARP_MATCH_CUH */
