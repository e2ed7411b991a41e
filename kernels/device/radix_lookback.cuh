/*
 * device/radix_lookback.cuh - device level: the decoupled look-back of a radix sort's pass, one
 * per digit (the split's look-back, device/lookback.cuh, made 2^8-wide, as CUB's Onesweep has
 * it): tile T of a row publishes, for each digit d, its count of d as soon as it has it (an
 * aggregate), then, once it knows the count of d in the tiles before it, their sum with its own
 * (an inclusive prefix); the thread of digit d walks back over the tiles before T, adding
 * aggregates until it meets a prefix. The row's first tile publishes its prefix at once.
 * A descriptor is one word, the status in its two top bits and the count below: 32 bits for rows
 * of at most GS_SORT_COUNT_MAX keys, 64 for longer ones (`wide`, a run-time choice of the whole
 * launch). A reader sees a status and its count from one access and needs no fence; a status
 * only moves forward (0: nothing yet, aggregate, prefix). The words are zero when a pass starts
 * (agent/radix.cuh zeroes them a pass ahead) and are read and written at the device's scope,
 * relaxed, so no stale L1 line is read.
 * Deadlock-free as the scan's: tiles are taken in launch order from an atomic counter, a tile
 * waits only for tiles before it in its row, and each publishes its aggregate before it waits
 * for anything.
 * Level: device. Included once per translation unit.
 */
#ifndef GS_RADIX_LOOKBACK_CUH
#define GS_RADIX_LOOKBACK_CUH

#include "thread/load_store.cuh"

/* The statuses, as the two top bits of a word. */
#define GS_RADIX_AGGREGATE 1u /* the tile's count of the digit */
#define GS_RADIX_PREFIX 2u    /* the count in the row's tiles up to this one */
#define GS_RADIX_POLL_NS 20   /* ns between polls: let the tiles ahead publish, not hammer L2 */

/* Publish word i of a descriptor array. */
static __device__ __forceinline__ void gs_radix_publish(void *desc, int wide, int64_t i,
                                                        unsigned status, uint64_t count)
{
    if (wide) {
        const uint64_t w = (uint64_t)status << 62 | count;
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;"
                     :
                     : "l"((uint64_t *)desc + i), "l"(w)
                     : "memory");
    } else {
        const uint32_t w = status << 30 | (uint32_t)count;
        asm volatile("st.relaxed.gpu.global.u32 [%0], %1;"
                     :
                     : "l"((uint32_t *)desc + i), "r"(w)
                     : "memory");
    }
}

/* Word i of a descriptor array: its status in *status, its count returned. */
static __device__ __forceinline__ uint64_t gs_radix_read(const void *desc, int wide, int64_t i,
                                                         unsigned *status)
{
    if (wide) {
        uint64_t w;
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"
                     : "=l"(w)
                     : "l"((const uint64_t *)desc + i)
                     : "memory");
        *status = (unsigned)(w >> 62);
        return w & ((1ull << 62) - 1u);
    }
    uint32_t w;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];"
                 : "=r"(w)
                 : "l"((const uint32_t *)desc + i)
                 : "memory");
    *status = w >> 30;
    return w & GS_SORT_COUNT_MAX;
}

/* Zero word i (the next pass's, before that pass starts: an ordinary store). */
static __device__ __forceinline__ void gs_radix_clear(void *desc, int wide, int64_t i)
{
    if (wide)
        ((uint64_t *)desc)[i] = 0u;
    else
        ((uint32_t *)desc)[i] = 0u;
}

/* The count of digit d in the tiles of its row before `tile` (not the row's first), whose words
 * are GS_SORT_DIGITS a tile. Called by the digit's thread after its tile published its aggregate;
 * polls (with a sleep: nvcc folds a tight poll into one load) until each tile it reaches has
 * published, and stops at a prefix (the row's first tile has one). */
static __device__ __forceinline__ uint64_t gs_radix_look_back(const void *desc, int wide,
                                                              int64_t tile, int d)
{
    uint64_t excl = 0;
    for (int64_t k = tile - 1;;) {
        unsigned status;
        const uint64_t c = gs_radix_read(desc, wide, k * GS_SORT_DIGITS + d, &status);
        if (status == 0u) {
            __nanosleep(GS_RADIX_POLL_NS);
            continue;
        }
        excl += c;
        if (status & GS_RADIX_PREFIX)
            return excl;
        --k;
    }
}

#endif /* GS_RADIX_LOOKBACK_CUH */
