/*
 * thread/load_store.cuh - what one thread does with raw memory, whatever the register type: name
 * pasting for the per-type bodies, element loads and stores by dtype, a thread's run of values
 * held as 32-bit words, vector pieces, asynchronous copies to shared memory, flag truth.
 *
 * Level: thread, below the per-type headers (thread_ops.cuh and up).  Included once per
 * translation unit.
 */
#ifndef GS_LOAD_STORE_CUH
#define GS_LOAD_STORE_CUH

#include <stdint.h>

#include "gpuscan/desc.h"
#include "gpuscan/config.h"

#define GS_FULL_MASK 0xffffffffu

/* GS_FN(name) names the variant of `name` for the register type being stamped (GS_RS). */
#define GS_CAT2_(a, b) a##_##b
#define GS_CAT2(a, b) GS_CAT2_(a, b)
#define GS_FN(name) GS_CAT2(name, GS_RS)

/*
 * Raw element access.  An element is moved as the bits of its dtype, zero-extended to 64 bits;
 * interpretation (sign extension, floats) belongs to the per-type layer.  `t` is always a
 * compile-time constant at the call sites, so each switch folds to one load or store.
 */
static __device__ __forceinline__ uint64_t gs_load_bits(gs_dtype t, const void *p, int64_t i)
{
    switch (gs_dtype_size(t)) {
    case 1:
        return ((const uint8_t *)p)[i];
    case 2:
        return ((const uint16_t *)p)[i];
    case 4:
        return ((const uint32_t *)p)[i];
    default:
        return ((const unsigned long long *)p)[i];
    }
}

static __device__ __forceinline__ void gs_store_bits(gs_dtype t, void *p, int64_t i, uint64_t v)
{
    switch (gs_dtype_size(t)) {
    case 1:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    default:
        ((unsigned long long *)p)[i] = v;
        break;
    }
}

/* A float32 add prefix held in double, made infinite once it is past float32's range: NumPy's
 * running float32 sum stays inf after it overflows, even where later values would bring the
 * exact sum back (the conversion rounds as the float32 result would). */
static __device__ __forceinline__ double gs_f32_prefix(double d)
{
    const float f = (float)d;
    return isinf(f) ? (double)f : d;
}

/*
 * Element j of a thread's run of GS_VT elements held as 32-bit words (what 16-byte vector
 * loads deliver).  j is a compile-time constant after unrolling, so this is a shift and mask on
 * registers, never a local-memory array access.
 */
static __device__ __forceinline__ uint64_t gs_word_elem(gs_dtype t, const uint32_t *w, int j)
{
    switch (gs_dtype_size(t)) {
    case 1:
        return (w[j >> 2] >> (8 * (j & 3))) & 0xffu;
    case 2:
        return (w[j >> 1] >> (16 * (j & 1))) & 0xffffu;
    case 4:
        return w[j];
    default:
        return (uint64_t)w[2 * j] | ((uint64_t)w[2 * j + 1] << 32);
    }
}

static __device__ __forceinline__ void gs_word_put(gs_dtype t, uint32_t *w, int j, uint64_t v)
{
    switch (gs_dtype_size(t)) {
    case 1:
        if ((j & 3) == 0)
            w[j >> 2] = 0;
        w[j >> 2] |= (uint32_t)(v & 0xffu) << (8 * (j & 3));
        break;
    case 2:
        if ((j & 1) == 0)
            w[j >> 1] = 0;
        w[j >> 1] |= (uint32_t)(v & 0xffffu) << (16 * (j & 1));
        break;
    case 4:
        w[j] = (uint32_t)v;
        break;
    default:
        w[2 * j] = (uint32_t)v;
        w[2 * j + 1] = (uint32_t)(v >> 32);
        break;
    }
}

/*
 * A piece: the C consecutive values a thread holds in one row of a tile, C = the values in 16
 * bytes of the wider of two dtypes, so a piece of either dtype is one access of at most 16
 * bytes and a warp's pieces are one contiguous span.
 */
#define GS_PIECE(a, b) \
    ((int)(16 / (gs_dtype_size(a) > gs_dtype_size(b) ? gs_dtype_size(a) : gs_dtype_size(b))))
/* Most rows a thread holds: GS_VT values in pieces of at least two. */
#define GS_ROWS_MAX (GS_VT / 2)

/* Load the piece of c values of dtype t at element `at` into words (aligned: the caller
 * checked the buffer is 16-byte aligned, and a piece's offset is a multiple of its size). */
static __device__ __forceinline__ void gs_load_piece(gs_dtype t, int c, const void *p, int64_t at,
                                                     uint32_t *w)
{
    const char *a = (const char *)p + at * (int64_t)gs_dtype_size(t);
    switch (c * (int)gs_dtype_size(t)) {
    case 16: {
        uint4 q = *(const uint4 *)a;
        w[0] = q.x;
        w[1] = q.y;
        w[2] = q.z;
        w[3] = q.w;
        break;
    }
    case 8: {
        uint2 q = *(const uint2 *)a;
        w[0] = q.x;
        w[1] = q.y;
        break;
    }
    case 4:
        w[0] = *(const uint32_t *)a;
        break;
    default: /* 2 bytes: two int8 values widened to 64 bits */
        w[0] = *(const uint16_t *)a;
        break;
    }
}

static __device__ __forceinline__ void gs_store_piece(gs_dtype t, int c, void *p, int64_t at,
                                                      const uint32_t *w)
{
    char *a = (char *)p + at * (int64_t)gs_dtype_size(t);
    switch (c * (int)gs_dtype_size(t)) {
    case 16:
        *(uint4 *)a = make_uint4(w[0], w[1], w[2], w[3]);
        break;
    case 8:
        *(uint2 *)a = make_uint2(w[0], w[1]);
        break;
    case 4:
        *(uint32_t *)a = w[0];
        break;
    default:
        *(uint16_t *)a = (uint16_t)w[0];
        break;
    }
}

/*
 * Asynchronous copies global -> shared (cp.async, sm_80+): a block streams its next tile into
 * shared memory while it works on the current one, at no cost in registers.  bytes is 4, 8 or
 * 16 and both addresses are aligned to it.
 */
static __device__ __forceinline__ void gs_cp_async(void *smem, const void *gmem, int bytes)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    switch (bytes) {
    case 16:
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(s), "l"(gmem) : "memory");
        break;
    case 8:
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" : : "r"(s), "l"(gmem) : "memory");
        break;
    default:
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" : : "r"(s), "l"(gmem) : "memory");
        break;
    }
}

/* Wait for this thread's asynchronous copies; another thread's are seen after a barrier (of
 * the warp or the block) that both pass after their waits. */
static __device__ __forceinline__ void gs_cp_async_wait(void)
{
    asm volatile("cp.async.wait_all;" : : : "memory");
}

/*
 * Programmatic dependent launch (griddepcontrol, sm_90+; no-ops before it): a kernel launched
 * with cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it
 * in the stream still runs, once every block of that one has called gs_grid_launch_dependents()
 * or exited; gs_grid_wait() then waits until that kernel has completed and its writes are
 * visible.  So the dependent kernel's launch overlaps the first one's last wave.
 */
static __device__ __forceinline__ void gs_grid_launch_dependents(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
#endif
}

static __device__ __forceinline__ void gs_grid_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" : : : "memory");
#endif
}

/* The dynamic shared memory of the lookahead drivers (agent/scan.cuh, agent/linrec.cuh): the
 * tiles cp.async streams in, aligned to 128 bytes whatever the size of the static shared memory
 * before it: a warp's 512-byte piece then spans four 128-byte rows of the banks, not five (H200,
 * 2^28 values: int32 add scan at 89% of memcpy against 81% with the buffers 16 bytes off,
 * float32 add 87% against 84% 24 bytes off). */
extern __shared__ __align__(128) uint4 gs_dynamic_smem[];

/* Whether a segment-head flag of dtype t is set: nonzero, where for floats -0.0 counts as zero
 * and NaN as nonzero (NumPy's truth value). */
static __device__ __forceinline__ int gs_flag_set(gs_dtype t, uint64_t bits)
{
    if (t == GS_FLOAT32)
        return (bits & 0x7fffffffu) != 0;
    if (t == GS_FLOAT64)
        return (bits & 0x7fffffffffffffffull) != 0;
    return bits != 0;
}

/* Flags read as bits (the split's count pass): 16 at a time, one 16-byte vector of one-byte
 * flags. */
#define GS_FLAG_GROUP 16

/* The nonzero bytes of w as 4 bits (bit c: byte c): bit 7 of each byte is set when its low 7
 * bits are nonzero (adding 0x7f cannot carry out of a byte) or its top bit is; the multiply
 * gathers bits 0, 8, 16, 24 of (nz >> 7) into bits 28..31, every other product bit below 28
 * and distinct, so nothing carries into them. */
static __device__ __forceinline__ unsigned gs_nonzero_bytes(uint32_t w)
{
    const uint32_t nz = (((w & 0x7f7f7f7fu) + 0x7f7f7f7fu) | w) & 0x80808080u;
    return ((nz >> 7) * 0x10204080u) >> 28;
}

/* The bits of the 16 flags of dtype ft from element `at` (bit c: element at + c is flagged; 0
 * past n).  vec: the 16 flags are in range and their 16 * size bytes are 16-byte aligned. */
static __device__ __forceinline__ unsigned gs_flag_group_bits(gs_dtype ft, const void *flags,
                                                              int64_t at, int64_t n, int vec)
{
    const int per = 16 / (int)gs_dtype_size(ft); /* flags per 16-byte vector */
    unsigned bits = 0;
    if (vec) {
        uint32_t w[GS_FLAG_GROUP / 2][4]; /* at most 8 vectors (8-byte flags) */
#pragma unroll
        for (int q = 0; q < GS_FLAG_GROUP / 2; ++q)
            if (q * per < GS_FLAG_GROUP)
                gs_load_piece(ft, per, flags, at + q * per, w[q]);
        if (per == GS_FLAG_GROUP) { /* one-byte flags: four at a time */
#pragma unroll
            for (int i = 0; i < 4; ++i)
                bits |= gs_nonzero_bytes(w[0][i]) << (4 * i);
            return bits;
        }
#pragma unroll
        for (int q = 0; q < GS_FLAG_GROUP / 2; ++q)
            if (q * per < GS_FLAG_GROUP) {
#pragma unroll
                for (int c = 0; c < per; ++c)
                    bits |= (unsigned)gs_flag_set(ft, gs_word_elem(ft, w[q], c)) << (q * per + c);
            }
    } else {
#pragma unroll
        for (int c = 0; c < GS_FLAG_GROUP; ++c)
            if (at + c < n && gs_flag_set(ft, gs_load_bits(ft, flags, at + c)))
                bits |= 1u << c;
    }
    return bits;
}

/* Groups of a tile of GS_NV flags that each lane of a warp reads. */
#define GS_FLAG_TILE_STEPS (GS_NV / GS_FLAG_GROUP / GS_WARP)
#if GS_NV % (GS_FLAG_GROUP * GS_WARP) != 0
#error "a tile must be a whole number of flag groups per lane"
#endif

/* Lane `lane`'s share of the warp's tile of flags from `base` as bits: bits[j] holds group
 * lane + GS_WARP * j (a warp's step j reads GS_WARP * 16 consecutive flags); none past n.
 * vec: the flags are 16-byte aligned.  A whole aligned tile, the usual case, takes one
 * branch-free path, so that all of the lane's loads are in flight at once: a test per group kept
 * one in flight, a DRAM latency per step. */
static __device__ __forceinline__ void gs_flag_tile_bits(gs_dtype ft, const void *flags,
                                                         int64_t base, int64_t n, int vec, int lane,
                                                         unsigned bits[GS_FLAG_TILE_STEPS])
{
    const int64_t first = base + (int64_t)lane * GS_FLAG_GROUP;
    if (vec && base + GS_NV <= n) {
#pragma unroll
        for (int j = 0; j < GS_FLAG_TILE_STEPS; ++j)
            bits[j] = gs_flag_group_bits(ft, flags, first + GS_WARP * GS_FLAG_GROUP * j, n, 1);
    } else {
#pragma unroll
        for (int j = 0; j < GS_FLAG_TILE_STEPS; ++j) {
            const int64_t at = first + GS_WARP * GS_FLAG_GROUP * j;
            bits[j] = gs_flag_group_bits(ft, flags, at, n, vec && at + GS_FLAG_GROUP <= n);
        }
    }
}

#endif /* GS_LOAD_STORE_CUH */
