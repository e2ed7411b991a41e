/*
 * agent/hist.cuh - one block's part of a device-wide histogram.
 *
 * Level: agent (one block's role), included by dispatch/hist.cu only.  The values' bins come from
 * gpuscan/hist_bin.h (the functions the CPU backend calls too).  A block is one (part, slice) pair
 * of a persistent grid: blockIdx.x = part * slices + slice, so the `slices` blocks that read the
 * same values are launched side by side and mostly find them in L2.
 *
 *   shared   Load: each thread keeps GS_HIST_UNROLL 16-byte vectors in flight, the block's
 *            vectors of one step contiguous (coalesced), steps strided by the grid's parts;
 *            the few values before the first 16-byte boundary and after the last whole vector
 *            are read one by one.  Count: the bins of a vector's values in 32-bit arithmetic
 *            with no branch (gs_hist_bin32; the rare values near an edge settled together
 *            after), then for each value in this block's slice one predicated u32 shared
 *            reduction in its warp group's replica of the slice (replicas cut the contention of
 *            warps on the same bins).  Merge: after a barrier, each thread
 *            sums its bins over the replicas and adds the nonzero sums to the device result
 *            with one 64-bit atomic per bin.
 *   global   The same loads; each kept value takes one 64-bit atomic add on the device result.
 *   probe    bincount (INDEX, no weights, gs_hist_desc.probe): each thread also keeps the
 *            largest key it read (gs_hist_see, a 32-bit maximum per vector), and the block's goes
 *            to out[nbins] with one 64-bit atomicMax.
 *   weights  One value and its weight at a time (grid-stride), summed into a single shared
 *            replica of double (float weights) or u64 (integer weights) accumulators, or into
 *            the device result directly (global).
 *   zeroing  A result of up to 64 KiB (p->ready set): block 0 zeroes it before it counts and
 *            flags it done (gs_hist_zero_out); the others wait for the flag before they write
 *            to it, so no memset comes before the launch (cudaMemsetAsync of more than 4 KiB
 *            costs the host 3.5 us, an H200's).  A larger one is zeroed by a memset.
 * Every thread reaches every barrier: the loops have no early exit and a thread whose values
 * ran out only skips the work, not the barrier.
 */
#ifndef GS_AGENT_HIST_CUH
#define GS_AGENT_HIST_CUH

#include "thread/load_store.cuh"
#include "gpuscan/hist_bin.h"

/* Kernel parameters (by value): the histogram and how the grid shares it. */
typedef struct gs_hist_kparams {
    gs_hist_desc d;
    int64_t slice_bins; /* bins per slice; a block counts bins [slice * slice_bins, +slice_bins) */
    int slices;
    int replicas; /* copies of the slice in shared memory (counts only) */
    int shared;   /* 0: global atomics, no shared memory */
    /* Zeroing the result in the kernel (NULL: `out` is added to as it is): block 0 zeroes the
     * nbins (+ probe) accumulators, then sets *ready to epoch, a value no earlier launch left
     * there; every other block waits for it before its first write to `out`. */
    unsigned long long *ready;
    unsigned long long epoch;
} gs_hist_kparams;

/* Block 0: the result's accumulators zeroed, then *ready = epoch (released after every thread's
 * stores, made visible device-wide by their fences).  Called by every thread of block 0. */
static __device__ __forceinline__ void gs_hist_zero_out(const gs_hist_kparams *p)
{
    const int64_t words = p->d.nbins + (p->d.probe != 0);
    unsigned long long *out = (unsigned long long *)p->d.out;
    for (int64_t k = threadIdx.x; k < words; k += GS_HIST_NT)
        out[k] = 0ull; /* 0 and 0.0 alike */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        atomicExch(p->ready, p->epoch);
}

/* Any other block: wait until block 0 has zeroed the result.  Block 0 is dispatched first, so it
 * runs while any other block waits (the decoupled look-back's assumption too); it zeroes before
 * it counts, so the wait is almost always over at once.  Called by every thread of the block. */
static __device__ __forceinline__ void gs_hist_wait_out(const gs_hist_kparams *p)
{
    if (threadIdx.x == 0)
        while (*(volatile unsigned long long *)p->ready != p->epoch)
            __nanosleep(64);
    __threadfence();
    __syncthreads();
}

/* The kind a dtype's values are widened to ('b' reads as 'u'). */
static __device__ __forceinline__ char gs_hist_kind(gs_dtype t)
{
    return gs_dtype_kind(t) == 'b' ? 'u' : gs_dtype_kind(t);
}

/* Raw bits of one value (zero-extended) -> its bits as a number: a bool's any nonzero byte is
 * 1, as NumPy reads it (t is a constant at every call site: nothing for the other dtypes). */
static __device__ __forceinline__ uint64_t gs_hist_bits(gs_dtype t, uint64_t bits)
{
    return t == GS_BOOL ? (uint64_t)(bits != 0) : bits;
}

/* Raw bits of one value (zero-extended) -> its widened value. */
static __device__ __forceinline__ void gs_hist_widen(gs_dtype t, uint64_t bits, int64_t *xi,
                                                     uint64_t *xu, double *xf)
{
    const int sh = 64 - 8 * (int)gs_dtype_size(t);
    bits = gs_hist_bits(t, bits);
    switch (gs_hist_kind(t)) {
    case 'f':
        *xf = gs_dtype_size(t) == 4 ? (double)__uint_as_float((unsigned)bits)
                                    : __longlong_as_double((long long)bits);
        break;
    case 'i':
        *xi = (int64_t)(bits << sh) >> sh;
        break;
    default:
        *xu = bits;
        break;
    }
}

/* The bin of one value (-1: dropped). */
static __device__ __forceinline__ int64_t gs_hist_bin_of(const gs_hist_desc *d, gs_dtype t,
                                                         gs_hist_mode mode, gs_dtype et,
                                                         uint64_t bits)
{
    int64_t xi = 0;
    uint64_t xu = 0;
    double xf = 0.0;
    gs_hist_widen(t, bits, &xi, &xu, &xf);
    return gs_hist_bin(d, gs_hist_kind(t), mode, et, xi, xu, xf);
}

/*
 * The bin of one value as a 32-bit int (-1: dropped), for the counting paths (the host sends
 * no more than INT32_MAX bins to them), or *slow set when only gs_hist_bin_of can tell.  The
 * common cases are spelt out in 32-bit arithmetic with no branch: float32 values with float32
 * edges (the arithmetic of gpuscan/hist_bin.h: a subtraction, a product, a conversion and the
 * fraction's test; *slow near an edge or off the range's arithmetic), 1-byte values by the
 * block's copy of their table, 1- to 4-byte bincount values by one unsigned compare.
 */
static __device__ __forceinline__ int gs_hist_bin32(const gs_hist_desc *d, const int *table,
                                                    gs_dtype t, gs_hist_mode mode, gs_dtype et,
                                                    uint64_t bits, int *slow)
{
    const char kind = gs_hist_kind(t);
    *slow = 0;
    if (mode == GS_HIST_TABLE)
        return table[bits & 0xff];
    if (mode == GS_HIST_INDEX && gs_dtype_size(t) <= 4) {
        const uint32_t sh = 32 - 8 * (uint32_t)gs_dtype_size(t);
        const uint32_t u = kind == 'i' ? (uint32_t)((int32_t)((uint32_t)bits << sh) >> sh)
                                       : (uint32_t)gs_hist_bits(t, bits);
        return (uint64_t)u < (uint64_t)d->nbins ? (int)u : -1; /* negative: u >= 2^31 */
    }
    if (mode == GS_HIST_UNIFORM && kind == 'f' && gs_dtype_size(t) == 4 && et == GS_FLOAT32) {
        /* A kept value lies in [E[0], E[nb]] (the host's keep bounds are float32 values inside
         * the outer edges), so p is in [0, nb + D]: a fraction inside the window puts it
         * strictly inside bin j < nb with no test of p's range (gpuscan/hist_bin.h). */
        const float xe = __uint_as_float((uint32_t)bits);
        const int keep = d->lo_f <= xe && xe <= d->hi_f;
        const float pos = __fmul_rn(__fsub_rn(xe, d->first_f), d->scale_f);
        const int j = __float2int_rz(pos);
        const float frac = __fsub_rn(pos, __int2float_rn(j));
        *slow = keep & !(frac > d->fast_lo_f && frac < d->fast_hi_f);
        return keep ? j : -1;
    }
    return (int)gs_hist_bin_of(d, t, mode, et, bits);
}

/* *seen = the largest of *seen and the bincount keys (gs_hist_index_key) of bits[0..m-1]: for
 * 1- to 4-byte values a 32-bit maximum (the key fits in 32 bits), widened once. */
static __device__ __forceinline__ void gs_hist_see(gs_dtype t, const uint64_t *bits, int m,
                                                   uint64_t *seen)
{
    if (gs_dtype_size(t) == 8) {
        for (int k = 0; k < m; k++)
            *seen = bits[k] > *seen ? bits[k] : *seen;
        return;
    }
    const uint32_t sh = 32 - 8 * (uint32_t)gs_dtype_size(t);
    uint32_t most = 0;
#pragma unroll
    for (int k = 0; k < 16; k++) {
        if (k < m) {
            const uint32_t key = gs_hist_kind(t) == 'i'
                                     ? (uint32_t)((int32_t)((uint32_t)bits[k] << sh) >> sh)
                                     : (uint32_t)gs_hist_bits(t, bits[k]);
            most = key > most ? key : most;
        }
    }
    *seen = (uint64_t)most > *seen ? (uint64_t)most : *seen;
}

/* Count one value into this block's replica of its slice [s_lo, s_lo + s_n), which starts at
 * shared-memory address rep (a dropped value's -1 is out of every slice: the unsigned difference
 * is huge).  A predicated reduction, not a branch around an atomic: no divergence bookkeeping
 * per value. */
static __device__ __forceinline__ void gs_hist_count_shared(unsigned rep, int s_lo, unsigned s_n,
                                                            int bin)
{
    const unsigned local = (unsigned)(bin - s_lo);
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "setp.lt.u32 p, %0, %1;\n\t"
                 "@p red.shared.add.u32 [%2], 1;\n\t}"
                 :
                 : "r"(local), "r"(s_n), "r"(rep + 4 * local)
                 : "memory");
}

/* Count a few values (bits[0..m-1], m a compile-time constant): into this block's replica of
 * its slice (shared, a constant at the call sites: the bins of all first, the rare values near
 * an edge settled together behind one branch), or into the device result. */
static __device__ __forceinline__ void gs_hist_count(const gs_hist_kparams *p, const int *table,
                                                     unsigned rep, int s_lo, unsigned s_n,
                                                     int shared, gs_dtype t, gs_hist_mode mode,
                                                     gs_dtype et, const uint64_t *bits, int m,
                                                     uint64_t *seen)
{
    if (mode == GS_HIST_INDEX) /* bincount: the largest key, whether the value is kept or not */
        gs_hist_see(t, bits, m, seen);
    if (!shared) {
        for (int k = 0; k < m; k++) {
            const int64_t bin = gs_hist_bin_of(&p->d, t, mode, et, bits[k]);
            if (bin >= 0)
                atomicAdd((unsigned long long *)p->d.out + bin, 1ull);
        }
        return;
    }
    int bin[16];
    unsigned slow = 0;
#pragma unroll
    for (int k = 0; k < 16; k++) {
        if (k < m) {
            int s;
            bin[k] = gs_hist_bin32(&p->d, table, t, mode, et, bits[k], &s);
            slow |= (unsigned)s << k;
        }
    }
    if (slow != 0) {
#pragma unroll
        for (int k = 0; k < 16; k++)
            if (k < m && ((slow >> k) & 1u))
                bin[k] = (int)gs_hist_bin_of(&p->d, t, mode, et, bits[k]);
    }
#pragma unroll
    for (int k = 0; k < 16; k++)
        if (k < m)
            gs_hist_count_shared(rep, s_lo, s_n, bin[k]);
}

/* Add one weight: double for float weights, u64 (wrapping) for the others. */
static __device__ __forceinline__ void gs_hist_weigh(const gs_hist_kparams *p, void *acc,
                                                     int64_t bin, uint64_t wbits)
{
    const gs_dtype wt = p->d.w_type;
    int64_t wi = 0;
    uint64_t wu = 0;
    double wf = 0.0;
    gs_hist_widen(wt, wbits, &wi, &wu, &wf);
    if (gs_dtype_is_float(wt))
        atomicAdd((double *)acc + bin, wf);
    else
        atomicAdd((unsigned long long *)acc + bin,
                  gs_hist_kind(wt) == 'i' ? (unsigned long long)wi : (unsigned long long)wu);
}

/* Count the values of one 16-byte vector, lowest address first. */
static __device__ __forceinline__ void gs_hist_vector(const gs_hist_kparams *p, const int *table,
                                                      unsigned rep, int s_lo, unsigned s_n,
                                                      int shared, gs_dtype t, gs_hist_mode mode,
                                                      gs_dtype et, uint4 v, uint64_t *seen)
{
    const int size = (int)gs_dtype_size(t);
    const uint32_t w[4] = { v.x, v.y, v.z, v.w };
    uint64_t bits[16];
#pragma unroll
    for (int k = 0; k < 16; k++) {
        if (k < 16 / size) { /* a constant: the loop unrolls to the values the vector holds */
            if (size == 8) {
                bits[k] = ((uint64_t)w[2 * k + 1] << 32) | w[2 * k];
            } else {
                const uint32_t shifted = w[k * size / 4] >> ((8 * size * k) & 31);
                bits[k] = size == 4 ? shifted : shifted & ((1u << ((8 * size) & 31)) - 1u);
            }
        }
    }
    gs_hist_count(p, table, rep, s_lo, s_n, shared, t, mode, et, bits, 16 / size, seen);
}

/* The block's values, counted (no weights): vectors, then the unaligned head and tail. */
static __device__ __forceinline__ void gs_hist_consume(const gs_hist_kparams *p, const int *table,
                                                       unsigned rep, int s_lo, unsigned s_n,
                                                       int shared, int64_t part, int64_t parts,
                                                       gs_dtype t, gs_hist_mode mode, gs_dtype et,
                                                       uint64_t *seen)
{
    const gs_hist_desc *d = &p->d;
    const int64_t size = (int64_t)gs_dtype_size(t);
    const int64_t per_vec = 16 / size;
    const char *base = (const char *)d->in;
    int64_t head = (int64_t)(((16 - ((uintptr_t)base & 15)) & 15) / (uintptr_t)size);
    if (head > d->n)
        head = d->n;
    const int64_t nvec = (d->n - head) / per_vec;
    const int64_t tail = head + nvec * per_vec;
    const uint4 *vec = (const uint4 *)(base + head * size);

    /* ---- Whole vectors: GS_HIST_UNROLL loads in flight, then their values. ---- */
    const int64_t step = parts * GS_HIST_NT * GS_HIST_UNROLL;
    int64_t v0 = part * GS_HIST_NT * GS_HIST_UNROLL + threadIdx.x;
    for (; v0 + (GS_HIST_UNROLL - 1) * GS_HIST_NT < nvec; v0 += step) { /* all in range */
        uint4 r[GS_HIST_UNROLL];
#pragma unroll
        for (int u = 0; u < GS_HIST_UNROLL; u++)
            r[u] = __ldcs(vec + v0 + u * GS_HIST_NT);
#pragma unroll
        for (int u = 0; u < GS_HIST_UNROLL; u++)
            gs_hist_vector(p, table, rep, s_lo, s_n, shared, t, mode, et, r[u], seen);
    }
    if (v0 < nvec) { /* this thread's last, partial step */
#pragma unroll
        for (int u = 0; u < GS_HIST_UNROLL; u++)
            if (v0 + u * GS_HIST_NT < nvec)
                gs_hist_vector(p, table, rep, s_lo, s_n, shared, t, mode, et,
                               __ldcs(vec + v0 + u * GS_HIST_NT), seen);
    }

    /* ---- The values before the first and after the last whole vector. ---- */
    const int64_t extra = head + (d->n - tail);
    for (int64_t k = part * GS_HIST_NT + threadIdx.x; k < extra; k += parts * GS_HIST_NT) {
        const int64_t i = k < head ? k : tail + (k - head);
        const uint64_t bits = gs_load_bits(t, d->in, i);
        gs_hist_count(p, table, rep, s_lo, s_n, shared, t, mode, et, &bits, 1, seen);
    }
}

/* The block's values with their weights, one at a time. */
static __device__ __forceinline__ void
gs_hist_consume_weighted(const gs_hist_kparams *p, void *acc, int64_t s_lo, int64_t s_n,
                         int64_t part, int64_t parts, gs_dtype t, gs_hist_mode mode, gs_dtype et)
{
    const gs_hist_desc *d = &p->d;
    for (int64_t i = part * GS_HIST_NT + threadIdx.x; i < d->n; i += parts * GS_HIST_NT) {
        const int64_t bin = gs_hist_bin_of(d, t, mode, et, gs_load_bits(t, d->in, i));
        if (bin < 0)
            continue;
        const uint64_t wbits = gs_load_bits(d->w_type, d->weights, i);
        if (!p->shared)
            gs_hist_weigh(p, d->out, bin, wbits);
        else if ((uint64_t)(bin - s_lo) < (uint64_t)s_n)
            gs_hist_weigh(p, acc, bin - s_lo, wbits);
    }
}

/* One block of the histogram kernel for input dtype t, bin mode and edge type et. */
static __device__ __forceinline__ void gs_hist_agent(const gs_hist_kparams *p, gs_dtype t,
                                                     gs_hist_mode mode, gs_dtype et)
{
    extern __shared__ unsigned long long gs_hist_smem[]; /* 8-byte aligned */
    const gs_hist_desc *d = &p->d;
    const int64_t slice = blockIdx.x % p->slices;
    const int64_t part = blockIdx.x / p->slices, parts = gridDim.x / p->slices;
    const int64_t s_lo = slice * p->slice_bins;
    const int64_t s_n = d->nbins - s_lo < p->slice_bins ? d->nbins - s_lo : p->slice_bins;
    const int weighted = d->weights != NULL;
    /* u32 counters (replicas x s_n), or s_n 8-byte sums; then a 1-byte dtype's table of bins
     * (counts only: GS_HIST_TABLE_BYTES more). */
    const int64_t words = weighted ? 2 * s_n : p->replicas * s_n;
    unsigned *smem32 = (unsigned *)gs_hist_smem;
    int *table = mode == GS_HIST_TABLE && p->shared && !weighted ? (int *)smem32 + words : NULL;
    uint64_t seen = 0; /* bincount: the largest key this thread read */

    /* ---- The result zeroed (block 0), or ready before a global atomic writes it. ---- */
    if (p->ready != NULL && blockIdx.x == 0)
        gs_hist_zero_out(p);
    else if (p->ready != NULL && !p->shared)
        gs_hist_wait_out(p);

    /* ---- Zero the block's histogram(s); copy the table. ---- */
    if (p->shared) {
        for (int64_t k = threadIdx.x; k < words; k += GS_HIST_NT)
            smem32[k] = 0u;
        if (table != NULL)
            for (int k = threadIdx.x; k < 256; k += GS_HIST_NT)
                table[k] = ((const int *)d->edges)[k];
        __syncthreads();
    }

    /* ---- Count. ---- */
    if (weighted) {
        gs_hist_consume_weighted(p, gs_hist_smem, s_lo, s_n, part, parts, t, mode, et);
    } else if (p->shared) { /* slices hold fewer than 2^31 bins (the host's plan) */
        const unsigned *rep = smem32 + (int64_t)((threadIdx.x / GS_WARP) % p->replicas) * s_n;
        gs_hist_consume(p, table, (unsigned)__cvta_generic_to_shared(rep), (int)s_lo, (unsigned)s_n,
                        1, part, parts, t, mode, et, &seen);
    } else { /* global atomics (more bins than shared memory holds): value by value */
        for (int64_t i = part * GS_HIST_NT + threadIdx.x; i < d->n; i += parts * GS_HIST_NT) {
            const uint64_t bits = gs_load_bits(t, d->in, i);
            gs_hist_count(p, NULL, 0u, 0, 0u, 0, t, mode, et, &bits, 1, &seen);
        }
    }

    if (p->ready != NULL && blockIdx.x != 0 && p->shared)
        gs_hist_wait_out(p); /* the probe and the merge write the result */

    /* ---- bincount's probe: the block's largest key, one device atomic per block. ---- */
    if (mode == GS_HIST_INDEX && d->probe && !weighted) { /* the same for the whole block */
        __shared__ unsigned long long block_seen;
        for (int o = GS_WARP / 2; o > 0; o /= 2) {
            const uint64_t other = __shfl_xor_sync(0xffffffffu, seen, o);
            seen = other > seen ? other : seen;
        }
        if (threadIdx.x == 0)
            block_seen = 0;
        __syncthreads();
        if ((threadIdx.x & (GS_WARP - 1)) == 0 && seen != 0)
            atomicMax(&block_seen, (unsigned long long)seen);
        __syncthreads();
        if (threadIdx.x == 0 && block_seen != 0)
            atomicMax((unsigned long long *)d->out + d->nbins, block_seen);
    }

    /* ---- Merge: one device atomic per nonzero bin of the slice. ---- */
    if (p->shared) {
        __syncthreads();
        for (int64_t b = threadIdx.x; b < s_n; b += GS_HIST_NT) {
            if (!weighted) {
                unsigned long long sum = 0;
                for (int r = 0; r < p->replicas; r++)
                    sum += smem32[(int64_t)r * s_n + b];
                if (sum != 0)
                    atomicAdd((unsigned long long *)d->out + s_lo + b, sum);
            } else if (gs_dtype_is_float(d->w_type)) {
                const double v = ((const double *)gs_hist_smem)[b];
                if (v != 0.0)
                    atomicAdd((double *)d->out + s_lo + b, v);
            } else {
                const unsigned long long v = gs_hist_smem[b];
                if (v != 0)
                    atomicAdd((unsigned long long *)d->out + s_lo + b, v);
            }
        }
    }
}

#endif /* GS_AGENT_HIST_CUH */
