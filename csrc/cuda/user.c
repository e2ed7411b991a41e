/*
 * cuda/user.c - the launches of an operator you write (gpuscan.Operator): scan, reduce and
 * segreduce of gs_user_desc over the kernels cuda/nvrtc.c loaded (kernels/agent/user.cuh).
 * Level: backend (CUDA), host side; a build with CUDA only.  Runs without the GIL.
 * A buffer of the descriptor that is device memory is used where it is; one in host memory
 * (ops/userop.c hands NumPy arrays' data) is copied to the device and, for the result, back,
 * the call then waiting for it.  A scan's look-back state lies in the scans' shared scratch,
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

/* One buffer of a call on the device: `dev` is the caller's pointer when it is device memory,
 * else memory of the pool holding a copy (own). */
typedef struct gs_stage {
    const void *host;
    void *dev;
    size_t bytes;
    int own;
} gs_stage;

/* ptr's bytes on the device (copied there when `copy`): 0, or -1 with the failure in *f. */
static int stage_in(gs_stage *s, const void *ptr, size_t bytes, int copy, gs_fail *f)
{
    char why[16];
    memset(s, 0, sizeof(*s));
    s->host = ptr;
    s->bytes = bytes;
    if (ptr == NULL || bytes == 0)
        return 0;
    if (gs_cuda_check_pointer(ptr, why, sizeof(why)) == 0) {
        s->dev = (void *)ptr;
        return 0;
    }
    s->own = 1;
    if (gs_cuda_alloc(&s->dev, GS_ROUND16(bytes), f) < 0)
        return -1;
    if (copy) {
        cudaError_t e = cudaMemcpyAsync(s->dev, ptr, bytes, cudaMemcpyHostToDevice, gs_cuda_stream);
        if (e != cudaSuccess)
            return gs_fail_set(f, 'c', (int)e, "cudaMemcpyAsync (an Operator's input)", 0);
    }
    return 0;
}

/* A staged result back to the host, waited for. */
static int stage_out(const gs_stage *s, gs_fail *f)
{
    cudaError_t e = cudaSuccess;
    if (s->own && s->bytes > 0) {
        e = cudaMemcpyAsync((void *)s->host, s->dev, s->bytes, cudaMemcpyDeviceToHost,
                            gs_cuda_stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(gs_cuda_stream);
    }
    return e == cudaSuccess
               ? 0
               : gs_fail_set(f, 'c', (int)e, "cudaMemcpyAsync (an Operator's result)", 0);
}

static void stage_free(gs_stage *s)
{
    if (s->own)
        gs_cuda_free(s->dev);
    s->own = 0;
}

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
    return GS_SCRATCH_ALIGN + (size_t)(tiles + GS_USER_ANCHORS(tiles, (int64_t)size)) * GS_USER_SLOT(size);
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
    gs_stage in = { 0 }, out = { 0 }, flags = { 0 };
    user_scan_job j;

    if (d->n <= 0)
        return 0;
    if (tiles > INT32_MAX || size > GS_USER_MAX_SIZE)
        return gs_fail_set(f, 'e', EINVAL, "an Operator's scan", 0);
    if (resident == 0)
        return gs_fail_set(f, 'e', ENOMEM, "an Operator's scan: a tile of its dtype in shared memory",
                           (size_t)2 * GS_USER_TILE_BYTES((int64_t)size));
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (stage_in(&in, d->in, (size_t)d->n * size, 1, f) < 0 ||
        stage_in(&flags, d->flags, d->row_len > 0 ? 0 : (size_t)d->n, 1, f) < 0)
        goto done;
    if (d->out == d->in)
        out = in, out.own = 0;
    else if (stage_in(&out, d->out, (size_t)d->n * size, 0, f) < 0)
        goto done;
    memset(&j, 0, sizeof(j));
    j.prog = d->prog;
    j.family = family;
    j.tiles = tiles;
    /* A persistent grid: twice the blocks resident at once (the second half waits for room; a
     * block whose first tile is past the end returns at once), fewer for few tiles. */
    j.blocks = tiles < 2 * (int64_t)resident ? tiles : 2 * (int64_t)resident;
    j.p.in = in.dev;
    j.p.out = out.dev;
    j.p.flags = d->row_len > 0 ? NULL : (const unsigned char *)flags.dev;
    j.p.n = d->n;
    j.p.row_len = d->row_len;
    j.p.nbuf = d->prog->smem[family] / GS_USER_TILE_BYTES((int)size);
    j.p.exclusive = d->exclusive;
    memcpy(j.p.identity, d->identity, size);
    GS_CUDA_TRY(f, gs_cuda_scan_tagged(user_scan_scratch(tiles, size), user_scan_launch, &j));
    if (d->out == d->in)
        stage_out(&in, f);
    else
        stage_out(&out, f);
done:
    stage_free(&in);
    stage_free(&out);
    stage_free(&flags);
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
    gs_stage out = { 0 };
    if (host == NULL)
        return gs_fail_set(f, 'e', ENOMEM, "malloc", (size_t)d->rows * size);
    for (int64_t r = 0; r < d->rows; r++)
        memcpy(host + (size_t)r * size, d->initial != NULL ? d->initial : d->identity, size);
    if (stage_in(&out, d->out, (size_t)d->rows * size, 0, f) == 0) {
        cudaError_t e = cudaMemcpyAsync(out.dev, host, (size_t)d->rows * size,
                                        cudaMemcpyHostToDevice, gs_cuda_stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(gs_cuda_stream);
        if (e != cudaSuccess)
            gs_fail_set(f, 'c', (int)e, "cudaMemcpyAsync (an Operator's reduction)", 0);
        else
            stage_out(&out, f);
    }
    stage_free(&out);
    free(host);
    return f->kind ? -1 : 0;
}

int gs_cuda_user_reduce(const gs_user_desc *d, gs_fail *f)
{
    const size_t size = d->prog->size;
    const int64_t chunk = (int64_t)GS_USER_CHUNK_TILES * GS_USER_NT * GS_USER_VT((int64_t)size);
    const int64_t nch = (d->row_len + chunk - 1) / chunk;
    const int split = nch > 1 && d->rows < GS_USER_FEW_ROWS;
    gs_stage in = { 0 }, out = { 0 };
    gs_user_fold_params p;
    void *partials = NULL;

    if (d->rows <= 0)
        return 0;
    if (size > GS_USER_MAX_SIZE || d->row_len < 0)
        return gs_fail_set(f, 'e', EINVAL, "an Operator's reduction", 0);
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (d->row_len == 0)
        return reduce_empty(d, f);
    if (stage_in(&in, d->in, (size_t)(d->rows * d->row_len) * size, 1, f) < 0 ||
        stage_in(&out, d->out, (size_t)d->rows * size, 0, f) < 0)
        goto done;
    memset(&p, 0, sizeof(p));
    p.in = in.dev;
    p.out = out.dev;
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
        p.out = out.dev;
        p.nseg = 1;
        p.stride = p.len = p.chunk = nch;
    }
    p.has_init = d->initial != NULL;
    if (p.has_init)
        memcpy(p.init, d->initial, size);
    GS_CUDA_TRY(f, user_fold(d, &p));
    stage_out(&out, f);
done:
    gs_cuda_free(partials);
    stage_free(&in);
    stage_free(&out);
    return f->kind ? -1 : 0;
}

int gs_cuda_user_segreduce(const gs_user_desc *d, gs_fail *f)
{
    const size_t size = d->prog->size;
    gs_stage in = { 0 }, out = { 0 }, starts = { 0 }, ends = { 0 };
    gs_user_fold_params p;

    if (d->rows * d->nseg <= 0)
        return 0;
    if (size > GS_USER_MAX_SIZE)
        return gs_fail_set(f, 'e', EINVAL, "an Operator's segmented reduction", 0);
    GS_CUDA_TRY(f, gs_cuda_enter());
    if (stage_in(&in, d->in, (size_t)(d->rows * d->n) * size, 1, f) < 0 ||
        stage_in(&starts, d->starts, (size_t)d->nseg * 8, 1, f) < 0 ||
        stage_in(&ends, d->ends, d->ends != NULL ? (size_t)d->nseg * 8 : 0, 1, f) < 0 ||
        stage_in(&out, d->out, (size_t)(d->rows * d->nseg) * size, 0, f) < 0)
        goto done;
    memset(&p, 0, sizeof(p));
    p.in = in.dev;
    p.out = out.dev;
    p.starts = (const int64_t *)starts.dev;
    p.ends = (const int64_t *)ends.dev;
    p.rows = d->rows;
    p.nseg = d->nseg;
    p.stride = p.len = d->n;
    GS_CUDA_TRY(f, user_fold(d, &p));
    stage_out(&out, f);
done:
    stage_free(&in);
    stage_free(&out);
    stage_free(&starts);
    stage_free(&ends);
    return f->kind ? -1 : 0;
}

#endif /* GS_HAVE_CUDA */
