/*
 * dispatch/hist.cu - histograms and bincount: their __global__ kernels and the extern "C" launcher.
 *
 * Level: device-wide algorithm (kernels + dispatch).  One kernel per input dtype and bin
 * variant (equal-width bins with float32 or float64 edges, searched edges, bincount, and for
 * 1-byte input a table of the 256 values' bins), each running either method (shared-memory
 * histograms or global atomics, a run-time flag, as is the presence of weights).  The launcher
 * sizes the shared histograms (gs_hist_plan, gpuscan/config.h) to the device's shared memory and
 * launches one persistent grid, whose block 0 zeroes a small result (a large one is zeroed by a
 * memset before the launch).
 */
#include "agent/hist.cuh"
#include "dispatch/launch.cuh"

#include <pthread.h>

#define GS_HIST_KERNEL_NAME(variant, sfx) gs_hist_##variant##_##sfx

/* The largest result that the kernel's block 0 zeroes itself (8 bytes an accumulator: 8192 bins).
 * cudaMemsetAsync costs the host 1.2 us up to 4 KiB and 3.5 us past it (an H200 host,
 * docs/performance-notes.md), but one block of GS_HIST_NT threads writes
 * only about 4 bytes a cycle: past 64 KiB the memset's bandwidth wins (64 MiB: 27 us against
 * 1.07 ms), and on the global-atomics path every other block would wait for block 0. */
#define GS_HIST_ZERO_IN_KERNEL_BYTES (64 * 1024)

/* Whether the (dtype, mode) kernel is ever launched: the host turns every histogram of a 1-byte
 * dtype with equal-width or searched bins into a table of its 256 values' bins
 * (csrc/ops/hist_edges.c, make_table), so those kernels keep an empty body and the picker
 * hands out none of them. */
#define GS_HIST_WANTED(t, mode)                            \
    ((mode) == GS_HIST_TABLE || (mode) == GS_HIST_INDEX || \
     !((t) == GS_BOOL || (t) == GS_INT8 || (t) == GS_UINT8))

#define GS_X_DTYPE_KERNEL(code, ctype, sfx, kind, npy, variant, mode, et) \
    __global__ void __launch_bounds__(GS_HIST_NT, GS_HIST_MIN_BLOCKS)     \
        GS_HIST_KERNEL_NAME(variant, sfx)(gs_hist_kparams p)              \
    {                                                                     \
        if (GS_HIST_WANTED(code, mode))                                   \
            gs_hist_agent(&p, code, mode, et);                            \
    }
#define GS_X_UNI32(code, ctype, sfx, kind, npy) \
    GS_X_DTYPE_KERNEL(code, ctype, sfx, kind, npy, uni32, GS_HIST_UNIFORM, GS_FLOAT32)
#define GS_X_UNI64(code, ctype, sfx, kind, npy) \
    GS_X_DTYPE_KERNEL(code, ctype, sfx, kind, npy, uni64, GS_HIST_UNIFORM, GS_FLOAT64)
#define GS_X_SEARCH(code, ctype, sfx, kind, npy) \
    GS_X_DTYPE_KERNEL(code, ctype, sfx, kind, npy, search, GS_HIST_SEARCH, p.d.edge_type)
#define GS_X_INDEX(code, ctype, sfx, kind, npy) \
    GS_X_DTYPE_KERNEL(code, ctype, sfx, kind, npy, index, GS_HIST_INDEX, GS_INT64)
GS_DTYPES(GS_X_UNI32)
GS_DTYPES(GS_X_UNI64)
GS_DTYPES(GS_X_SEARCH)
GS_DTYPES(GS_X_INDEX)
/* The table kernels, for the 1-byte dtypes only (the host makes tables for no others). */
GS_X_DTYPE_KERNEL(GS_BOOL, uint8_t, b1, 'b', NPY_BOOL, table, GS_HIST_TABLE, GS_INT32)
GS_X_DTYPE_KERNEL(GS_INT8, int8_t, i8, 'i', NPY_INT8, table, GS_HIST_TABLE, GS_INT32)
GS_X_DTYPE_KERNEL(GS_UINT8, uint8_t, u8, 'u', NPY_UINT8, table, GS_HIST_TABLE, GS_INT32)
#undef GS_X_UNI32
#undef GS_X_UNI64
#undef GS_X_SEARCH
#undef GS_X_INDEX
#undef GS_X_DTYPE_KERNEL

typedef void (*gs_hist_kernel)(gs_hist_kparams);

/* The kernel of a descriptor's input dtype and bin variant, or NULL. */
static gs_hist_kernel gs_hist_kernel_for(const gs_hist_desc *d)
{
#define GS_X_PICK(code, ctype, sfx, kind, npy)                              \
    case code:                                                              \
        if (d->mode == GS_HIST_INDEX)                                       \
            return GS_HIST_KERNEL_NAME(index, sfx);                         \
        if (d->mode == GS_HIST_SEARCH)                                      \
            return GS_HIST_KERNEL_NAME(search, sfx);                        \
        return d->edge_type == GS_FLOAT32 ? GS_HIST_KERNEL_NAME(uni32, sfx) \
                                          : GS_HIST_KERNEL_NAME(uni64, sfx);
    if (d->mode == GS_HIST_TABLE)
        return d->in_type == GS_BOOL    ? GS_HIST_KERNEL_NAME(table, b1)
               : d->in_type == GS_INT8  ? GS_HIST_KERNEL_NAME(table, i8)
               : d->in_type == GS_UINT8 ? GS_HIST_KERNEL_NAME(table, u8)
                                        : NULL;
    if (!GS_HIST_WANTED(d->in_type, d->mode))
        return NULL;
    switch (d->in_type) {
        GS_DTYPES(GS_X_PICK)
    default:
        return NULL;
    }
#undef GS_X_PICK
}

/* What the last launch did, for the tests (gs_launch_hist_last); launches come from any thread. */
static pthread_mutex_t gs_hist_last_lock = PTHREAD_MUTEX_INITIALIZER;
static gs_hist_launch gs_hist_last;

extern "C" void gs_launch_hist_last(gs_hist_launch *out)
{
    pthread_mutex_lock(&gs_hist_last_lock);
    *out = gs_hist_last;
    pthread_mutex_unlock(&gs_hist_last_lock);
}

/* At least agent/hist.cuh's static __shared__ bytes (bincount's probe word). */
#define GS_HIST_STATIC_SMEM 64
/* The launch memo's "kernel" for a device's own figures (its keys: 0 the budget, 1 the
 * multiprocessors). */
static const char gs_hist_device_figures = 0;

/* Shared memory a block may take: all a block may opt into, but no more than its share of a
 * multiprocessor's when GS_HIST_MIN_BLOCKS blocks share one (less the 1 KiB the runtime
 * reserves per block); and the multiprocessors.  Asked of the device once (the launch memo). */
static cudaError_t gs_hist_smem_budget(int device, int64_t *budget, int *sms)
{
    const void *figures = &gs_hist_device_figures;
    int optin, per_sm, b;
    cudaError_t err;

    if (gs_memo_get(device, figures, 0, &b) && gs_memo_get(device, figures, 1, sms)) {
        *budget = b;
        return cudaSuccess;
    }
    err = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    if (err != cudaSuccess)
        return err;
    const int share = per_sm / GS_HIST_MIN_BLOCKS - 1024;
    /* Less the agent's static shared memory, which counts against the opt-in's limit with the
     * dynamic part. */
    *budget = (share < optin ? share : optin) - GS_HIST_STATIC_SMEM;
    gs_memo_put(device, figures, 0, (int)*budget);
    gs_memo_put(device, figures, 1, *sms);
    return cudaSuccess;
}

/* Blocks of `kernel` per multiprocessor with `smem` bytes of dynamic shared memory, the kernel
 * opted into `budget` bytes first (once per kernel and device: an opt-in to the whole budget, so
 * a later launch with less never lowers it under another's) when smem needs more than the
 * default 48 KiB.  Both asked of the device once (the launch memo). */
static cudaError_t gs_hist_occupancy(const void *kernel, int device, size_t smem, int64_t budget,
                                     int *per_sm)
{
    int opted = 0;
    cudaError_t err;

    if (gs_memo_get(device, kernel, (long long)smem, per_sm))
        return cudaSuccess;
    if (smem > 48 * 1024 && !gs_memo_get(device, kernel, GS_MEMO_OPTIN, &opted)) {
        err =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)budget);
        if (err != cudaSuccess)
            return err;
        gs_memo_put(device, kernel, GS_MEMO_OPTIN, 1);
    }
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, kernel, GS_HIST_NT, smem);
    if (err != cudaSuccess)
        return err;
    gs_memo_put(device, kernel, (long long)smem, *per_sm);
    return cudaSuccess;
}

/* Dynamic shared memory of a block: its replicas of the slice's bins, then the lookup table. */
static size_t gs_hist_smem_bytes(int replicas, int64_t slice_bins, int acc_bytes, int table_bytes)
{
    return (size_t)replicas * (size_t)slice_bins * (size_t)acc_bytes + (size_t)table_bytes;
}

extern "C" cudaError_t gs_launch_hist(const gs_hist_desc *d, unsigned long long *ready,
                                      unsigned long long epoch, cudaStream_t stream)
{
    gs_hist_kernel kernel = gs_hist_kernel_for(d);
    gs_hist_kparams p;
    int64_t budget, slices = 1, slice_bins = d->nbins;
    int sms, replicas = 1, per_sm = 0, shared;
    size_t smem = 0;
    cudaError_t err;

    if (kernel == NULL || d->nbins < 0 || d->n < 0)
        return cudaErrorInvalidValue;
    /* ---- The result zeroed: by the kernel's block 0 when small, else by a memset. ---- */
    const size_t out_bytes = (size_t)(d->nbins + (d->probe != 0)) * 8;
    const int zero_in_kernel =
        !d->accumulate && d->n > 0 && d->nbins > 0 && out_bytes <= GS_HIST_ZERO_IN_KERNEL_BYTES;
    if (zero_in_kernel && ready == NULL)
        return cudaErrorInvalidValue;
    if (!d->accumulate && !zero_in_kernel &&
        (err = cudaMemsetAsync(d->out, 0, out_bytes, stream)) != cudaSuccess)
        return err;
    if (d->n == 0 || d->nbins == 0)
        return cudaSuccess;

    /* ---- The method: shared histograms unless the bins need too many slices. ---- */
    int device;
    if ((err = cudaGetDevice(&device)) != cudaSuccess ||
        (err = gs_hist_smem_budget(device, &budget, &sms)) != cudaSuccess)
        return err;
    const int acc_bytes = d->weights != NULL ? 8 : 4;
    const int table_bytes =
        d->mode == GS_HIST_TABLE && d->weights == NULL ? GS_HIST_TABLE_BYTES : 0;
    gs_hist_plan(d->nbins, acc_bytes, budget - table_bytes, &slices, &slice_bins, &replicas);
    /* Shared histograms count in 32-bit bin numbers: never for more than INT32_MAX bins. */
    shared = d->nbins <= INT32_MAX && (d->method == GS_HIST_SHARED ||
                                       (d->method == GS_HIST_AUTO && slices <= GS_HIST_MAX_SLICES));
    if (shared) {
        smem = gs_hist_smem_bytes(replicas, slice_bins, acc_bytes, table_bytes);
    } else {
        slices = 1;
        slice_bins = d->nbins;
        replicas = 1;
    }

    /* ---- A persistent grid: every resident block, `slices` blocks per part. ---- */
    err = gs_hist_occupancy((const void *)kernel, device, smem, budget, &per_sm);
    if (err != cudaSuccess)
        return err;
    int64_t parts = (int64_t)sms * (per_sm > 0 ? per_sm : 1) / slices;
    const int64_t step =
        (int64_t)GS_HIST_NT * GS_HIST_UNROLL * 16 / (int64_t)gs_dtype_size(d->in_type);
    const int64_t useful = (d->n + step - 1) / step; /* parts beyond one step each idle */
    if (parts > useful)
        parts = useful;
    /* A block's u32 counters see at most n / parts values plus one step: keep that < 2^31. */
    const int64_t min_parts = d->n / ((int64_t)1 << 31) + 1;
    if (parts < min_parts)
        parts = min_parts;
    if (parts < 1)
        parts = 1;
    if (parts * slices > 0x7fffffff)
        return cudaErrorInvalidConfiguration;
    /* A replica costs its bins cleared and merged by every block: no more replicas than the
     * block's values fill (a small input over many bins: 13 replicas of 4096 bins for 16384
     * values took 7.6 us of a 2^16 histogram).  Less shared memory than the occupancy was
     * computed for only lets more blocks in. */
    if (shared && replicas > 1) {
        const int64_t fill = (d->n + parts - 1) / parts / slice_bins;
        if (fill < replicas) {
            replicas = fill > 1 ? (int)fill : 1;
            smem = gs_hist_smem_bytes(replicas, slice_bins, acc_bytes, table_bytes);
        }
    }

    p.d = *d;
    p.slice_bins = slice_bins;
    p.slices = (int)slices;
    p.replicas = replicas;
    p.shared = shared;
    p.ready = zero_in_kernel ? ready : NULL; /* block 0 zeroes the result */
    p.epoch = epoch;
    kernel<<<(unsigned)(parts * slices), GS_HIST_NT, smem, stream>>>(p);
    pthread_mutex_lock(&gs_hist_last_lock);
    gs_hist_last.shared = shared;
    gs_hist_last.slices = slices;
    gs_hist_last.slice_bins = slice_bins;
    gs_hist_last.replicas = replicas;
    gs_hist_last.blocks = parts * slices;
    gs_hist_last.smem_bytes = (int64_t)smem;
    pthread_mutex_unlock(&gs_hist_last_lock);
    return gs_launch_check(stream);
}
