/*
 * cpu/claim.h - work claimed from both ends, for the CPU backend's one-pass parallel loops
 * (cpu/scan.c, cpu/split.c).
 *
 * Level: backend (CPU), beside cpu/pool.c.  Units [0, n) are claimed one at a time, in
 * order from the front by one thread (which does in one pass what one thread alone would do) and
 * from the back by the others (which prepare what the front will need where the two meet), each
 * unit exactly once; claims stop where the two meet.  Lock-free: a thread kept off its core never
 * holds up the others' claims.  Needs _POSIX_C_SOURCE (sched_yield).
 */
#ifndef GS_CPU_CLAIM_H
#define GS_CPU_CLAIM_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "host/pool.h"

/* The claims' state: front << 32 | back, the units [front, back) not claimed (n < 2^32). */
typedef atomic_uint_fast64_t gs_cpu_ends;

static inline void gs_cpu_ends_init(gs_cpu_ends *e, int64_t n)
{
    atomic_init(e, (uint_fast64_t)n);
}

/* The next unit at the front (or the back), or -1 when none is left. */
static inline int64_t gs_cpu_claim(gs_cpu_ends *e, int front)
{
    uint_fast64_t s = atomic_load_explicit(e, memory_order_relaxed);
    for (;;) {
        uint_fast64_t f = s >> 32, b = s & 0xffffffffu;
        if (f >= b)
            return -1;
        uint_fast64_t next = front ? ((f + 1) << 32) | b : (f << 32) | (b - 1);
        if (atomic_compare_exchange_weak_explicit(e, &s, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return (int64_t)(front ? f : b - 1);
    }
}

/* The units the front took (once claims have stopped): [0, front). */
static inline int64_t gs_cpu_ends_front(gs_cpu_ends *e)
{
    return (int64_t)(atomic_load_explicit(e, memory_order_relaxed) >> 32);
}

/* Wait until *flag is set (acquire), spinning a little, then yielding the core to whoever will
 * set it; returns 1, or 0 once the call is stopped (host/pool.h's gs_cpu_stopping: the task
 * that sets the flag may then never run). */
static inline int gs_cpu_wait(atomic_int *flag)
{
    for (int spins = 0; !atomic_load_explicit(flag, memory_order_acquire); spins++) {
        if (spins >= 64) {
            if (gs_cpu_stopping())
                return 0;
            sched_yield();
        }
    }
    return 1;
}

#endif /* GS_CPU_CLAIM_H */
