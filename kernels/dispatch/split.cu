/*
 * dispatch/split.cu - split (stable partition) and compact: their __global__ kernels and the extern
 * "C" launchers.
 *
 * Level: device-wide algorithm (kernels + dispatch).  A count pass (one kernel per flag width,
 * floats apart: -0.0 is not a flag, NaN is) and a scatter pass (one kernel per value width: the
 * values are moved as bits, so every dtype of a width shares it; compact is a run-time switch).
 *
 * Why two launches.  The scatter writes each tile's flagged values to out[flagged_before +
 * rank] and its unflagged ones to out[total + unflagged_before + rank]: the unflagged group's
 * base needs the TOTAL flagged count, which a single pass learns only at its last tile (CUB's
 * Partition::Flagged avoids that by writing the unflagged group reversed from the end; the
 * contract wants both groups in order).  The count pass gets it by reading only the flags
 * (n bytes for one-byte flags, against the 2 * n * size bytes that the values cost), and
 * makes the scatter cheaper in two ways that pay for it:
 *  - it publishes every tile's flagged count as an already-available aggregate of the
 *    look-back (tile 0's as its prefix), so the scatter's look-back never waits on another
 *    block: it walks back over published aggregates to the nearest published prefix;
 *  - it writes the flags back as one bit per value (n / 8 bytes), which the scatter reads
 *    instead of the flags: the scatter is one kernel per value width whatever the flag dtype,
 *    and reads 1/8 byte of flags per value instead of one or more bytes.
 * Bytes moved for int32 values and uint8 flags: n (flags) + n/8 (bits out) + n/8 (bits in) +
 * 4n (values in) + 4n (values out) = 9.25 n, against 9 n for a single pass that could know
 * the total.  A compact learns the total between the launches, to allocate its output
 * exactly, from the count pass's `reply` word; a split's count reaches the host from the
 * scatter's.
 *
 * One launch where a single pass can know the total: when every tile's block is resident at
 * once (a cooperative launch of at most a wave of tiles), the blocks meet at a barrier on the
 * running word after counting, so each learns the total without a second launch
 * (gs_launch_split_one, for one-byte flags: splits of up to ~2^21 values, where the launches
 * and the host's wait are most of the time).
 */
#include "dispatch/kernel_table.cuh"

/* The layers of every register type; the split uses u32 (the block scan of per-piece counts)
 * and u64 (the look-back over flagged counts, past 2^32 values). */
#include "stamp.cuh"

#include "agent/split.cuh"

/* X(dtype): the flag dtypes a count kernel is stamped for (every other dtype reads as the
 * unsigned integer of its width). */
#define GS_SPLIT_FLAG_TYPES(X) \
    X(GS_UINT8)                \
    X(GS_UINT16)               \
    X(GS_UINT32)               \
    X(GS_UINT64)               \
    X(GS_FLOAT32)              \
    X(GS_FLOAT64)

/* X(dtype, bytes, min_blocks): the value dtypes a scatter kernel is stamped for, one per width,
 * with the width and the blocks per multiprocessor its register budget must allow. */
#define GS_SPLIT_VALUE_TYPES(X)      \
    X(GS_UINT8, 1, GS_MIN_BLOCKS_4)  \
    X(GS_UINT16, 2, GS_MIN_BLOCKS_4) \
    X(GS_UINT32, 4, GS_MIN_BLOCKS_4) \
    X(GS_UINT64, 8, GS_MIN_BLOCKS_8)

#define GS_X_COUNT(ft)                                                               \
    __global__ void __launch_bounds__(GS_NT) gs_split_count_##ft(gs_split_kparams p) \
    {                                                                                \
        gs_split_count_tiles(ft, &p);                                                \
    }
GS_SPLIT_FLAG_TYPES(GS_X_COUNT)
#undef GS_X_COUNT

/* The kernels that move the values, per value width: the scatter pass (one 0) and the one-pass
 * split of one-byte flags (one 1, agent/split.cuh); `buf` holds the tile in output order. */
#define GS_X_MOVE_KERNEL(name, vt, bytes, min_blocks, one)                        \
    __global__ void __launch_bounds__(GS_NT, min_blocks) name(gs_split_kparams p) \
    {                                                                             \
        __shared__ uint4 buf[GS_NV * (bytes) / 16];                               \
        gs_split_scatter_tile(vt, buf, &p, one);                                  \
    }
#define GS_X_MOVE(vt, bytes, min_blocks)                              \
    GS_X_MOVE_KERNEL(gs_split_scatter_##vt, vt, bytes, min_blocks, 0) \
    GS_X_MOVE_KERNEL(gs_split_one_##vt, vt, bytes, min_blocks, 1)
GS_SPLIT_VALUE_TYPES(GS_X_MOVE)
#undef GS_X_MOVE
#undef GS_X_MOVE_KERNEL

typedef void (*gs_split_kernel)(gs_split_kparams);

static gs_split_kernel gs_split_count_kernel_for(gs_dtype ft)
{
    if (!gs_dtype_is_float(ft))
        ft = gs_unsigned_of(ft);
#define GS_X_MATCH(ft_) \
    if (ft == ft_)      \
        return gs_split_count_##ft_;
    GS_SPLIT_FLAG_TYPES(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

/* The scatter pass's kernel for values of vt, or (one) the one-pass split's. */
static gs_split_kernel gs_split_move_kernel_for(gs_dtype vt, int one)
{
    vt = gs_unsigned_of(vt);
#define GS_X_MATCH(vt_, bytes, min_blocks) \
    if (vt == vt_)                         \
        return one ? gs_split_one_##vt_ : gs_split_scatter_##vt_;
    GS_SPLIT_VALUE_TYPES(GS_X_MATCH)
#undef GS_X_MATCH
    return NULL;
}

/* The kernel parameters of d over `scratch` (carved as gs_split_scratch_bytes sized it). */
static gs_split_kparams gs_split_params(const gs_split_desc *d, void *scratch)
{
    gs_split_kparams p;
    p.in = d->in;
    p.flags = d->flags;
    p.out = d->out;
    p.n = d->n;
    /* Tag 0: the count pass writes every descriptor word the scatter (or the heads' passes)
     * reads before it reads it; no anchors: the counts are exact. */
    p.ts = gs_tile_state_carve(scratch, gs_scan_tiles(d->n), 0);
    p.total = (unsigned long long *)scratch;
    p.reply = NULL;
    p.mask = (uint32_t *)((char *)scratch + gs_split_mask_offset(d->n));
    p.compact = d->compact;
    p.vec_in = ((uintptr_t)d->in % 16) == 0;
    p.vec_flags = ((uintptr_t)d->flags % 16) == 0;
    return p;
}

/* The checks both launchers make; cudaErrorInvalidValue for a descriptor they cannot run. */
static cudaError_t gs_split_check(const gs_split_desc *d, gs_split_kernel kernel,
                                  size_t scratch_bytes)
{
    if (kernel == NULL || scratch_bytes < gs_split_scratch_bytes(d->n) ||
        gs_scan_tiles(d->n) > INT32_MAX)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* gs_split_check, then the kernel parameters of d over `scratch` with `reply`. */
static cudaError_t gs_split_ready(const gs_split_desc *d, gs_split_kernel kernel, void *scratch,
                                  size_t scratch_bytes, unsigned long long *reply,
                                  gs_split_kparams *p)
{
    const cudaError_t err = gs_split_check(d, kernel, scratch_bytes);
    if (err == cudaSuccess) {
        *p = gs_split_params(d, scratch);
        p->reply = reply;
    }
    return err;
}

/* The count pass: a warp per tile.  A split's sums its total in the scratch's header, whose
 * running word it finds and leaves zero (gpuscan/config.h); the segment heads' (heads: total
 * NULL) writes every descriptor word it polls.  Neither needs a memset. */
static cudaError_t gs_split_count_launch(const gs_split_desc *d, void *scratch,
                                         size_t scratch_bytes, unsigned long long *reply, int heads,
                                         cudaStream_t stream)
{
    const int64_t tiles = gs_scan_tiles(d->n);
    const int64_t blocks = (tiles + GS_NWARPS - 1) / GS_NWARPS;
    gs_split_kernel kernel = gs_split_count_kernel_for(d->flag_type);
    gs_split_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    /* every block counted in the running word's high bits (gpuscan/config.h) */
    if (!heads && blocks >= (int64_t)1 << (64 - GS_SPLIT_SUM_BITS))
        return cudaErrorInvalidValue;
    if ((err = gs_split_ready(d, kernel, scratch, scratch_bytes, reply, &p)) != cudaSuccess)
        return err;
    if (heads)
        p.total = NULL;
    kernel<<<(unsigned)blocks, GS_NT, 0, stream>>>(p);
    return gs_launch_check(stream);
}

extern "C" cudaError_t gs_launch_split_count(const gs_split_desc *d, void *scratch,
                                             size_t scratch_bytes, unsigned long long *reply,
                                             cudaStream_t stream)
{
    return gs_split_count_launch(d, scratch, scratch_bytes, reply, 0, stream);
}

extern "C" cudaError_t gs_launch_split_count_heads(const gs_split_desc *d, void *scratch,
                                                   size_t scratch_bytes, cudaStream_t stream)
{
    return gs_split_count_launch(d, scratch, scratch_bytes, NULL, 1, stream);
}

/* The pass that moves the values: the scatter (a block per tile, as the count pass's
 * programmatic dependent: its blocks load their values while the count pass ends, then wait for
 * it, agent/split.cuh) or the one pass (a block per tile, every one resident at once, as its
 * barrier needs). */
static cudaError_t gs_split_move_launch(const gs_split_desc *d, void *scratch, size_t scratch_bytes,
                                        unsigned long long *reply, int one, cudaStream_t stream)
{
    gs_split_kernel kernel = gs_split_move_kernel_for(d->in_type, one);
    gs_split_kparams p;
    cudaError_t err;

    if (d->n == 0)
        return cudaSuccess;
    if (one && !gs_split_one_fits(d))
        return cudaErrorInvalidValue;
    if ((err = gs_split_ready(d, kernel, scratch, scratch_bytes, reply, &p)) != cudaSuccess)
        return err;
    if (one)
        return gs_launch_cooperative((const void *)kernel, gs_scan_tiles(d->n), &p, stream);
    return gs_launch_dependent((const void *)kernel, gs_scan_tiles(d->n), &p, stream);
}

extern "C" cudaError_t gs_launch_split_scatter(const gs_split_desc *d, void *scratch,
                                               size_t scratch_bytes, unsigned long long *reply,
                                               cudaStream_t stream)
{
    return gs_split_move_launch(d, scratch, scratch_bytes, reply, 0, stream);
}

/*
 * The split in one launch (agent/split.cuh's one pass): for a split, not a compact, of one-byte
 * flags, when its tiles fit on the device at once, at most gs_split_one_max of them (tests lower
 * it), and the device launches cooperatively.  Past one wave of tiles the two passes keep the
 * device busy where the one pass would not fit: its blocks wait for each other.
 */
extern "C" int64_t gs_split_one_max = INT64_MAX;

extern "C" int gs_split_one_fits(const gs_split_desc *d)
{
    static gs_kernel_memo memo;
    gs_split_kernel kernel = gs_split_move_kernel_for(d->in_type, 1);
    const int64_t tiles = gs_scan_tiles(d->n);
    int device, coop = 0, resident = 0;

    if (d->compact || kernel == NULL || gs_dtype_size(d->flag_type) != 1 ||
        gs_dtype_is_float(d->flag_type) || tiles == 0 || tiles > gs_split_one_max)
        return 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (!gs_memo_get(&memo, device, (const void *)kernel, &coop)) {
        if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        gs_memo_put(&memo, device, (const void *)kernel, coop);
    }
    if (!coop || gs_resident_blocks((const void *)kernel, 0, &resident) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return tiles <= resident;
}

extern "C" cudaError_t gs_launch_split_one(const gs_split_desc *d, void *scratch,
                                           size_t scratch_bytes, unsigned long long *reply,
                                           cudaStream_t stream)
{
    return gs_split_move_launch(d, scratch, scratch_bytes, reply, 1, stream);
}
