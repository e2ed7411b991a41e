/*
 * cuda/user.c - the launches of an operator you write (gpuscan.Operator): scan, reduce and
 * segreduce of gs_user_desc over the kernels cuda/nvrtc.c loaded (kernels/agent/user.cuh).
 * Level: backend (CUDA), host side; a build with CUDA only.  Runs without the GIL.
 * Every buffer of the descriptor is device memory (ops/userop.c moves NumPy's there and back
 * by the transfer pipeline).  A scan's look-back state lies in the scans' shared scratch,
 * tagged with its epoch (cuda/scan_scratch.c); a fold's partials come from the pool and go back
 * stream-ordered.
 */
#ifdef GS_HAVE_CUDA

#include "cuda/user.h"

#include "gpuscan/config.h"

#include <errno.h>
#include <stdlib.h>

/* Room 16-byte whole: the kernels may read the last word of a buffer whole. */
#define GS_ROUND16(b) (((b) + 15) & ~(size_t)15)
/* A long row is folded as chunks of this many tiles, then the chunks' partials. */
#define GS_USER_CHUNK_TILES 16
/* Rows few enough that a block per row leaves the device idle: fold them in chunks. */
#define GS_USER_FEW_ROWS 1024
/* Blocks of a fold's grid-stride loop at most. */
#define GS_USER_FOLD_GRID (1 << 20)

/* One launch of an Operator's kernel of `family` over `blocks` blocks with its parameters at
 * params. */
static cudaError_t user_launch(const gs_user_prog *prog, int family, int64_t blocks, void *params)
{
    dim3 grid = { (unsigned)blocks, 1, 1 }, block = { GS_USER_NT, 1, 1 };
    void *args[1] = { params };
    const cudaKernel_t k = prog->kernel[family];
    if (k == NULL)
        return cudaErrorInvalidDeviceFunction;
    if (blocks == 0)
        return cudaSuccess;
    cudaError_t e = cudaLaunchKernel((const void *)k, grid, block, args,
                                     (size_t)prog->smem[family], gs_cuda_stream);
    return e != cudaSuccess ? e : cudaPeekAtLastError();
}

_Static_assert(1u << (32 - GS_USER_TAG_SHIFT) == GS_EPOCH_LIMIT, "an epoch fills the tag's bits");

/* A scan's launch on the scans' shared scratch (gs_cuda_scan_tagged): the tile counter, then
 * the tiles' slots, then the anchors'. */
typedef struct user_scan_job {
    const gs_user_prog *prog;
    int family;
    int64_t tiles, blocks;
    gs_user_scan_params p;
} user_scan_job;

static size_t user_scan_scratch(int64_t tiles, size_t size)
{
    return GS_SCRATCH_ALIGN + (size_t)(tiles + GS_USER_ANCHORS(tiles, size)) * GS_USER_SLOT(size);
}

static cudaError_t user_scan_launch(void *ctx, void *scratch, size_t cap, unsigned epoch)
{
    user_scan_job *j = (user_scan_job *)ctx;
    if (cap < user_scan_scratch(j->tiles, j->prog->size))
        return cudaErrorInvalidValue;
    j->p.counter = (unsigned *)scratch;
    j->p.aggregates = (char *)scratch + GS_SCRATCH_ALIGN;
    j->p.prefixes = (char *)j->p.aggregates + (size_t)j->tiles * GS_USER_SLOT(j->prog->size);
    j->p.epoch = epoch;
    return user_launch(j->prog, j->family, j->blocks, &j->p);
}

int gs_cuda_user_scan(const gs_user_desc *d, gs_fail *f)
{
    const size_t size = d->prog->size;
    const int seg = d->flags != NULL || d->row_len > 0;
    const int family = seg ? GS_USER_SCAN_SEG : GS_USER_SCAN;
    const int64_t nv = (int64_t)GS_USER_NT * GS_USER_VT((int64_t)size);
    const int64_t tiles = (d->n + nv - 1) / nv;
    const int resident = d->prog->resident[family];
    user_scan_job j;

    if (d->n <= 0)
        return 0;
    if (tiles > INT32_MAX || size > GS_USER_MAX_SIZE)
        return gs_fail_set(f, 'e', EINVAL, "an Operator's scan", 0);
    if (resident == 0)
        return gs_fail_set(f, 'e', ENOMEM, "an Operator's scan: a tile of its dtype in shared memory",
                           (size_t)2 * GS_USER_TILE_BYTES((int64_t)size));
    GS_CUDA_TRY(f, gs_cuda_enter());
    memset(&j, 0, sizeof(j));
    j.prog = d->prog;
    j.family = family;
    j.tiles = tiles;
    /* A persistent grid: twice the blocks resident at once (the second half waits for room; a
     * block whose first tile is past the end returns at once), fewer for few tiles. */
    j.blocks = tiles < 2 * (int64_t)resident ? tiles : 2 * (int64_t)resident;
    j.p.in = d->in;
    j.p.out = d->out;
    j.p.flags = d->row_len > 0 ? NULL : d->flags;
    j.p.n = d->n;
    j.p.row_len = d->row_len;
    j.p.nbuf = d->prog->smem[family] / GS_USER_TILE_BYTES((int)size);
    j.p.exclusive = d->exclusive;
    memcpy(j.p.identity, d->identity, size);
    GS_CUDA_TRY(f, gs_cuda_scan_tagged(user_scan_scratch(tiles, size), user_scan_launch, &j));
done:
    return f->kind ? -1 : 0;
}

/* One fold launch over p (its in and out on the device). */
static cudaError_t user_fold(const gs_user_desc *d, gs_user_fold_params *p)
{
    const int64_t n = p->rows * p->nseg;
    if (d->prog->resident[GS_USER_FOLD] == 0)
        return cudaErrorInvalidConfiguration; /* a tile of T beyond the device's shared memory */
    return user_launch(d->prog, GS_USER_FOLD, n < GS_USER_FOLD_GRID ? n : GS_USER_FOLD_GRID, p);
}

/* Rows of no values: each the start alone (initial, else the identity). */
static int reduce_empty(const gs_user_desc *d, gs_fail *f)
{
    const size_t size = d->prog->size;
    unsigned char *host = malloc((size_t)d->rows * size);
    cudaError_t e;
    if (host == NULL)
        return gs_fail_set(f, 'e', ENOMEM, "malloc", (size_t)d->rows * size);
    for (int64_t r = 0; r < d->rows; r++)
        memcpy(host + (size_t)r * size, d->initial != NULL ? d->initial : d->identity, size);
    /* from pageable memory: the call returns once host's bytes are taken */
    e = cudaMemcpyAsync(d->out, host, (size_t)d->rows * size, cudaMemcpyHostToDevice,
                        gs_cuda_stream);
    free(host);
    return e == cudaSuccess
               ? 0
               : gs_fail_set(f, 'c', (int)e, "cudaMemcpyAsync (an Operator's reduction)", 0);
}

int gs_cuda_user_reduce(const gs_user_desc *d, gs_fail *f)
{
    const size_t size = d->prog->size;
    const int64_t chunk = (int64_t)GS_USER_CHUNK_TILES * GS_USER_NT * GS_USER_VT((int64_t)size);
    const int64_t nch = (d->row_len + chunk - 1) / chunk;
    const int split = nch > 1 && d->rows < GS_USER_FEW_ROWS;
    gs_user_fold_params p;
    void *partials = NULL;

    if (d->rows <= 0)
        return 0;
    if (size > GS_USER_MAX_SIZE || d->row_len < 0)
        return gs_fail_set(f, 'e', EINVAL, "an Operator's reduction", 0);
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (d->row_len == 0)
        return reduce_empty(d, f);
    memset(&p, 0, sizeof(p));
    p.in = d->in;
    p.out = d->out;
    p.rows = d->rows;
    p.nseg = 1;
    p.stride = p.len = p.chunk = d->row_len;
    if (split) { /* ---- Phase 1: each chunk's fold; phase 2 folds them in order. ---- */
        if (gs_cuda_alloc(&partials, GS_ROUND16((size_t)(d->rows * nch) * size), f) < 0)
            goto done;
        p.out = partials;
        p.nseg = nch;
        p.chunk = chunk;
        GS_CUDA_TRY(f, user_fold(d, &p));
        p.in = partials;
        p.out = d->out;
        p.nseg = 1;
        p.stride = p.len = p.chunk = nch;
    }
    p.has_init = d->initial != NULL;
    if (p.has_init)
        memcpy(p.init, d->initial, size);
    GS_CUDA_TRY(f, user_fold(d, &p));
done:
    gs_cuda_free(partials);
    return f->kind ? -1 : 0;
}

int gs_cuda_user_segreduce(const gs_user_desc *d, gs_fail *f)
{
    const size_t size = d->prog->size;
    gs_user_fold_params p;

    if (d->rows * d->nseg <= 0)
        return 0;
    if (size > GS_USER_MAX_SIZE)
        return gs_fail_set(f, 'e', EINVAL, "an Operator's segmented reduction", 0);
    GS_CUDA_TRY(f, gs_cuda_enter());
    memset(&p, 0, sizeof(p));
    p.in = d->in;
    p.out = d->out;
    p.starts = d->starts;
    p.ends = d->ends;
    p.rows = d->rows;
    p.nseg = d->nseg;
    p.stride = p.len = d->n;
    GS_CUDA_TRY(f, user_fold(d, &p));
done:
    return f->kind ? -1 : 0;
}

#endif /* GS_HAVE_CUDA */
