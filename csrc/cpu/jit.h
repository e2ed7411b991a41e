/*
 * cpu/jit.h - operators you write (gpuscan.Operator) on the CPU backend: compiled at run time
 * by the system's C compiler into a shared object of chunk kernels, loaded, and run on the
 * backend's threads.
 *
 * Level: backend (CPU); nothing of Python.  cpu/jit.c makes and loads the shared object (its
 * source: cpu/jit_kernels.h's template with the operator's T and combine put in; its cache:
 * host/jitcache.h); cpu/user.c runs its kernels, a chunk of values per call, never a value per
 * call: the user's combine is inlined into each kernel's loop.
 */
#ifndef GS_CPU_JIT_H
#define GS_CPU_JIT_H

#include "cpu/cpu.h"

/* The kernels' interface version: in the cache key, and checked when a shared object loads. */
#define GS_JIT_ABI 2

/* The table a generated shared object exports (as gs_jit_table), over values of its T:
 *   combine  *r = combine(*x, *y);
 *   fold     *acc = in[0] combine ... in[n - 1] (n >= 1), grouped as cpu/jit_kernels.h's lanes;
 *   total    the state after the last head of in[0, n) (flags: 1 byte a value, nonzero a head;
 *            from in[0] when none) into *acc; returns whether there was a head;
 *   scan     the chunk in[0, n) (n >= 1) into out (out may be in; grouped as the lanes of
 *            cpu/jit_kernels.h): a local state from in[0] (restarted at each head), each
 *            output the carry combined with the local state (inclusive) or with the one
 *            before (exclusive; the identity at a head, the carry alone at 0) until the first
 *            head, the local state alone after it (carry NULL: the local state alone from the
 *            start, the identity at 0 when exclusive); *total receives the final local state
 *            (the chunk's total since its last head).
 * Written once, as a macro, so that this header and the template say the same. */
#define GS_JIT_TABLE                                                                            \
    struct gs_jit_table {                                                                       \
        unsigned abi;                                                                           \
        size_t size;                                                                            \
        void (*combine)(const void *x, const void *y, void *r);                                 \
        void (*fold)(const void *in, int64_t n, void *acc);                                     \
        int (*total)(const void *in, const unsigned char *flags, int64_t n, void *acc);         \
        void (*scan)(const void *in, void *out, const unsigned char *flags, int64_t n,          \
                     const void *carry, int exclusive, const void *identity, void *total);      \
    }
GS_JIT_TABLE;

/* Bytes of values per chunk: 256 KiB stays in L2 between a chunk's two passes (the lanes, the
 * fix-up: cpu/jit_kernels.h) and between its kernel calls, is a hundred microseconds of work for
 * the simplest operator, far above the cost of a task, and makes lanes of 32 KiB, streams long
 * enough for the hardware prefetchers (2-core EPYC, add scans of 5 * 10^7 values from memory:
 * 64 KiB chunks 7.5 GB/s float32 and 11 GB/s int64, 256 KiB 10.5 and 21 GB/s). */
#define GS_JIT_CHUNK_BYTES (256 * 1024)
/* Fewest values per chunk (for wide T): enough that a kernel call's overhead stays negligible. */
#define GS_JIT_CHUNK_MIN 256

/* Values per chunk of a T of `size` bytes: cpu/user.c's unit of work, and the length the
 * kernels are compiled for (GS_JIT_CHUNK in their source) besides any other. */
static inline int64_t gs_jit_chunk(size_t size)
{
    int64_t c = GS_JIT_CHUNK_BYTES / (int64_t)size;
    return c < GS_JIT_CHUNK_MIN ? GS_JIT_CHUNK_MIN : c;
}

/* A loaded operator (gpuscan/backend.h's opaque gs_user_prog): its kernels and T's size. */
struct gs_user_prog {
    const struct gs_jit_table *k;
    size_t size;
    char key[65];
    struct gs_user_prog *next; /* the process's list of loaded operators (cpu/jit.c) */
};

/* Compile (or find in the process, then on disk) the operator of spec: 0 with *prog; a negative
 * errno; or -1 with msg->error set (a compile error, no compiler). */
int gs_cpu_user_load(const gs_user_spec *spec, const gs_user_prog **prog, gs_user_msg *msg);

/* gs_user_desc's scan, reduce and segreduce (cpu/user.c): 0 or a negative errno. */
int gs_cpu_user_scan(const gs_user_desc *d);
int gs_cpu_user_reduce(const gs_user_desc *d);
int gs_cpu_user_segreduce(const gs_user_desc *d);

#endif /* GS_CPU_JIT_H */
