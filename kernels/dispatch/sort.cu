/*
 * dispatch/sort.cu - sort and argsort (gs_sort_desc): their __global__ kernels and the extern "C"
 * launcher.
 * Level: device-wide algorithm (kernels + dispatch). One kernel family per key kind, the kind a
 * compile-time constant: bool, the unsigned integers of each width (a signed integer runs its
 * width's kernels, its sign bit flipped by the per-call XOR of gpuscan/radix.h), float32 and
 * float64. Per kind:
 *   gs_sort_thread_<kind>      rows of at most GS_SORT_THREAD_ROW_MAX keys, a thread a row,
 *                              one launch;
 *   gs_sort_warp_<kind>        rows of at most GS_SORT_WARP_ROW_MAX keys, a group of lanes a
 *                              row (a power of two), one launch;
 *   gs_sort_block_<kind>_<i>   rows of at most GS_SORT_BLOCK_NV keys, a block to up to
 *                              GS_SORT_BLOCK_ROWS of them, one launch (i: with an index);
 *   gs_sort_hist_<kind>        the device-wide sort's histogram, then
 *   gs_sort_pass_<kind>_<b>    one launch per digit position, b bytes of index payload (0, 4, 8).
 * Every launch ends with the launch check; the device-wide sort zeroes the head of its scratch
 * first (the tile counter, the difference mask, the counts its blocks add to).
 */
#include "dispatch/kernel_table.cuh"

/* The layers of every register type: the sort uses the u32 and u64 warp scans (its digit
 * scans) and gs_take_tile. */
#include "stamp.cuh"

#define GS_R uint32_t
#define GS_RS u32
#include "agent/radix.cuh"
#undef GS_R
#undef GS_RS
#define GS_R uint64_t
#define GS_RS u64
#include "agent/radix.cuh"
#undef GS_R
#undef GS_RS

/* X(kind, rs, r_bytes): the key kinds a kernel family is stamped for, the register type of their
 * keys and its bytes. */
#define GS_SORT_KINDS(X)  \
    X(GS_BOOL, u32, 4)    \
    X(GS_UINT8, u32, 4)   \
    X(GS_UINT16, u32, 4)  \
    X(GS_UINT32, u32, 4)  \
    X(GS_FLOAT32, u32, 4) \
    X(GS_UINT64, u64, 8)  \
    X(GS_FLOAT64, u64, 8)

/* Blocks per multiprocessor the registers must allow: passes of 384 threads as
 * GS_SORT_PASS_BLOCKS says (gpuscan/config.h: three of 4-byte keys alone, two with an index or of
 * 8-byte keys; ptxas spills a few words around the ranking, and a block waiting on its look-back
 * leaves the others running), two block sorts of 256 threads (128 registers: none spilled; three
 * would spill the ranking's keys and positions in every round). */
#define GS_SORT_BLOCK_MIN_BLOCKS 2
/* ... and four (64 registers) or two thread-a-row sorts of 4- or 8-byte keys: four spill a few
 * words of 4-byte keys and still sort rows of 16 float32 keys 1.1x as fast as three (no spill)
 * on an H200. */
#define GS_SORT_THREAD_MIN_BLOCKS_4 4
#define GS_SORT_THREAD_MIN_BLOCKS_8 2

#define GS_X_HIST(kind, rs, r_bytes)                                                     \
    __global__ void __launch_bounds__(GS_SORT_NT) gs_sort_hist_##kind(gs_sort_kparams p) \
    {                                                                                    \
        radix_hist_##rs(kind, &p);                                                       \
    }
GS_SORT_KINDS(GS_X_HIST)
#undef GS_X_HIST

#define GS_X_PASS(kind, rs, r_bytes, ib)                                            \
    __global__ void __launch_bounds__(GS_SORT_NT, GS_SORT_PASS_BLOCKS(r_bytes, ib)) \
        gs_sort_pass_##kind##_##ib(gs_sort_kparams p)                               \
    {                                                                               \
        radix_pass_##rs(kind, ib, &p);                                              \
    }
#define GS_X_PASSES(kind, rs, r_bytes) \
    GS_X_PASS(kind, rs, r_bytes, 0)    \
    GS_X_PASS(kind, rs, r_bytes, 4)    \
    GS_X_PASS(kind, rs, r_bytes, 8)
GS_SORT_KINDS(GS_X_PASSES)
#undef GS_X_PASSES
#undef GS_X_PASS

#define GS_X_BLOCK(kind, rs, r_bytes)                                             \
    __global__ void __launch_bounds__(GS_SORT_BLOCK_NT, GS_SORT_BLOCK_MIN_BLOCKS) \
        gs_sort_block_##kind(gs_sort_kparams p)                                   \
    {                                                                             \
        radix_block_##rs(kind, &p);                                               \
    }
GS_SORT_KINDS(GS_X_BLOCK)
#undef GS_X_BLOCK

#define GS_X_WARP(kind, rs, r_bytes)                                                      \
    __global__ void __launch_bounds__(GS_SORT_BLOCK_NT) gs_sort_warp_##kind(gs_sort_kparams p) \
    {                                                                                      \
        radix_warp_rows_##rs(kind, &p);                                                    \
    }
GS_SORT_KINDS(GS_X_WARP)
#undef GS_X_WARP

#define GS_X_THREAD(kind, rs, r_bytes)                                                        \
    __global__ void __launch_bounds__(GS_SORT_BLOCK_NT, GS_SORT_THREAD_MIN_BLOCKS_##r_bytes)  \
        gs_sort_thread_##kind(gs_sort_kparams p)                                              \
    {                                                                         \
        radix_thread_rows_##rs(kind, &p);                                     \
    }
GS_SORT_KINDS(GS_X_THREAD)
#undef GS_X_THREAD

typedef void (*gs_sort_kernel)(gs_sort_kparams);

/* The kind of a dtype's kernels. */
static gs_dtype gs_sort_kind(gs_dtype t)
{
    return t == GS_BOOL || gs_dtype_is_float(t) ? t : gs_unsigned_of(t);
}

/* The kernels of one kind, and the register bytes of its keys. */
typedef struct gs_sort_kernels {
    gs_sort_kernel hist, block, warp, thread, pass[3]; /* pass: index payload of 0, 4, 8 bytes */
    int r_bytes;
} gs_sort_kernels;

static int gs_sort_kernels_of(gs_dtype t, gs_sort_kernels *k)
{
    const gs_dtype kind = gs_sort_kind(t);
#define GS_X_MATCH(kind_, rs, r_bytes_)        \
    if (kind == kind_) {                       \
        k->hist = gs_sort_hist_##kind_;        \
        k->block = gs_sort_block_##kind_;      \
        k->warp = gs_sort_warp_##kind_;        \
        k->thread = gs_sort_thread_##kind_;    \
        k->pass[0] = gs_sort_pass_##kind_##_0; \
        k->pass[1] = gs_sort_pass_##kind_##_4; \
        k->pass[2] = gs_sort_pass_##kind_##_8; \
        k->r_bytes = r_bytes_;                 \
        return 0;                              \
    }
    GS_SORT_KINDS(GS_X_MATCH)
#undef GS_X_MATCH
    return -1;
}

/* A kernel's dynamic shared memory opted into once per kernel and device (the launch memo):
 * past 48 KiB of static and dynamic shared memory together a launch fails without it, and the
 * block sort of 8-byte keys takes exactly 48 KiB of dynamic memory beside its static words. */
static cudaError_t gs_sort_optin(const void *kernel, size_t bytes)
{
    int device, done;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess || bytes == 0 || gs_memo_get(device, kernel, GS_MEMO_OPTIN, &done))
        return err;
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (err == cudaSuccess)
        gs_memo_put(device, kernel, GS_MEMO_OPTIN, 1);
    return err;
}

static cudaError_t gs_sort_launch(gs_sort_kernel kernel, int64_t blocks, int threads, size_t smem,
                                  gs_sort_kparams *p, cudaStream_t stream)
{
    cudaError_t err = gs_sort_optin((const void *)kernel, smem);
    if (err != cudaSuccess)
        return err;
    if (blocks < 1 || blocks > INT32_MAX)
        return cudaErrorInvalidValue;
    void *args[1] = { p };
    err = cudaLaunchKernel((const void *)kernel, dim3((unsigned)blocks), dim3(threads), args, smem,
                           stream);
    const cudaError_t check = gs_launch_check(stream); /* also clears a launch error */
    return err != cudaSuccess ? err : check;
}

extern "C" cudaError_t gs_launch_sort(const gs_sort_desc *d, void *scratch, size_t scratch_bytes,
                                      cudaStream_t stream)
{
    const int key_bytes = (int)gs_dtype_size(d->type);
    const int want_keys = d->keys_out != NULL, want_index = d->index_out != NULL;
    gs_sort_kernels k;
    gs_sort_kparams p;
    gs_sort_layout l;
    cudaError_t err;

    if (d->rows <= 0 || d->row_len <= 0 || (!want_keys && !want_index))
        return cudaSuccess;
    if (gs_sort_kernels_of(d->type, &k) < 0 || d->rows > INT64_MAX / d->row_len)
        return cudaErrorInvalidValue;
    memset(&p, 0, sizeof p);
    p.keys = d->keys;
    p.keys_out = d->keys_out;
    p.index_out = d->index_out;
    p.rows = d->rows;
    p.row_len = d->row_len;
    p.flip = gs_sort_flip(d->type, d->descending);

    /* ---- Rows of a few keys: a thread a row, or a group of lanes, one launch, no scratch. ---- */
    if (d->row_len <= GS_SORT_THREAD_ROW_MAX)
        return gs_sort_launch(k.thread, (d->rows + GS_SORT_BLOCK_NT - 1) / GS_SORT_BLOCK_NT,
                              GS_SORT_BLOCK_NT, 0, &p, stream);
    if (d->row_len <= GS_SORT_WARP_ROW_MAX) {
        p.block_rows = gs_sort_row_lanes(d->row_len);
        const int64_t per_block = GS_SORT_BLOCK_NT / p.block_rows;
        return gs_sort_launch(k.warp, (d->rows + per_block - 1) / per_block, GS_SORT_BLOCK_NT, 0,
                              &p, stream);
    }

    /* ---- Short rows: a block per GS_SORT_BLOCK_ROWS of them, one launch, no scratch. ---- */
    if (gs_sort_in_block(d->row_len)) {
        p.block_rows = gs_sort_block_rows(d->row_len);
        return gs_sort_launch(k.block, (d->rows + p.block_rows - 1) / p.block_rows,
                              GS_SORT_BLOCK_NT, GS_SORT_BLOCK_SMEM(k.r_bytes), &p, stream);
    }

    /* ---- Device-wide: the scratch carved as the layout says. ---- */
    const int is_float = gs_dtype_is_float(d->type);
    gs_sort_layout_of(d->rows, d->row_len, key_bytes, is_float, want_keys, want_index, &l);
    if (scratch_bytes < (size_t)l.bytes || l.tiles > INT32_MAX)
        return cudaErrorInvalidValue;
    char *s = (char *)scratch;
    p.counter = (unsigned *)(s + l.counter);
    p.lossy = (unsigned *)(s + l.lossy);
    p.diff = (unsigned long long *)(s + l.diff);
    p.hist = (unsigned long long *)(s + l.hist);
    p.desc0 = s + l.desc0;
    p.desc1 = s + l.desc1;
    p.ktmp0 = l.ktmp0 >= 0 ? s + l.ktmp0 : NULL;
    p.ktmp1 = l.ktmp1 >= 0 ? s + l.ktmp1 : NULL;
    p.itmp = l.itmp >= 0 ? s + l.itmp : NULL;
    p.nv = l.nv;
    p.row_tiles = l.row_tiles;
    p.tiles = l.tiles;
    p.hist_tiles = l.hist_tiles;
    p.row_chunks = l.row_chunks;
    p.hist_store = l.row_chunks == 1;
    p.wide = l.desc_bytes == 8;
    const int ib = l.idx_bytes;
    const size_t pass_smem = GS_SORT_PASS_SMEM(k.r_bytes, key_bytes, ib, is_float);

    /* ---- The histogram of every digit position, after the head of the scratch is zeroed. ---- */
    if ((err = cudaMemsetAsync(scratch, 0, (size_t)l.zero_bytes, stream)) != cudaSuccess)
        return err;
    if ((err = gs_sort_launch(k.hist, d->rows * l.row_chunks, GS_SORT_NT, 0, &p, stream)) !=
        cudaSuccess)
        return err;

    /* ---- A launch per digit position, least significant first (those no row needs return at
     * once). ---- */
    for (int pass = 0; pass < l.passes; ++pass) {
        p.pass = pass;
        if ((err = gs_sort_launch(k.pass[ib / 4], l.tiles, GS_SORT_NT, pass_smem, &p, stream)) !=
            cudaSuccess)
            return err;
    }
    return cudaSuccess;
}
