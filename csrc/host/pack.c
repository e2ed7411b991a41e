/*
 * host/pack.c - the host side of the transfer pipeline: a range of an array's elements gathered
 * into a contiguous staging buffer, or scattered back out of one.
 * Level: host; plain C, no Python and no CUDA call, so the pool's threads run it (the CUDA
 * pipeline splits a chunk among them).  An element range is taken in C order over a
 * view of any strides (negative, or zero for a broadcast), any byte order, converting the dtype
 * as NumPy's unsafe casting does (C casts through gpuscan/value.h).  The contiguous, native,
 * same-dtype case is one memcpy per run of the last dimension; a strided one copies element by
 * element by size; a conversion goes through the widest type of each kind, so it rounds at most
 * once.
 */
#include "host/pack.h"

#include "gpuscan/value.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static void swap_bytes(char *p, size_t size)
{
    for (size_t a = 0, b = size - 1; a < b; a++, b--) {
        char t = p[a];
        p[a] = p[b];
        p[b] = t;
    }
}

/* The value of dtype t at p (any alignment, swapped: the other byte order). */
static gs_value load(gs_dtype t, const char *p, int swapped)
{
    uint64_t buf; /* aligned for every dtype */

    memcpy(&buf, p, gs_dtype_size(t));
    if (swapped)
        swap_bytes((char *)&buf, gs_dtype_size(t));
    return gs_value_load(t, &buf);
}

/* Store v at p as dtype t (any alignment, swapped: the other byte order). */
static void store(gs_dtype t, char *p, int swapped, gs_value v)
{
    uint64_t buf;

    gs_value_store(t, &buf, v);
    if (swapped)
        swap_bytes((char *)&buf, gs_dtype_size(t));
    memcpy(p, &buf, gs_dtype_size(t));
}

/* Where the stores of a long run go.  A pack's go to the cache: the staging chunk is read next
 * by the copy engine, which takes it from a large last-level cache (a server's hundreds of MiB)
 * instead of memory; streamed there, it cost a write and a read of memory more per byte, and
 * the host's memory bandwidth bounded the upload (H200 host, 1 GiB to_device: 41 -> 53 GB/s
 * with cached stores and 16 MiB chunks, docs/performance-notes.md).  An unpack's stream past
 * the cache (non-temporal stores): its destination, the user's array, is not read again soon,
 * and streaming stores skip reading each destination line first.  Runs shorter than
 * GS_STREAM_MIN_BYTES are plain memcpy either way. */
#define GS_STREAM_MIN_BYTES ((size_t)64 << 10)

/* memcpy of a long run, with streaming stores (`stream`) where the processor has them. */
static void copy_long(char *dst, const char *src, size_t n, int stream)
{
#if defined(__SSE2__)
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;

    if (!stream || n < GS_STREAM_MIN_BYTES) {
        memcpy(dst, src, n);
        return;
    }
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    for (; n >= 64; n -= 64, src += 64, dst += 64) {
        const __m128i a = _mm_loadu_si128((const __m128i *)src);
        const __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
        const __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
        const __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
        _mm_stream_si128((__m128i *)dst, a);
        _mm_stream_si128((__m128i *)(dst + 16), b);
        _mm_stream_si128((__m128i *)(dst + 32), c);
        _mm_stream_si128((__m128i *)(dst + 48), d);
    }
    memcpy(dst, src, n);
    _mm_sfence(); /* the streamed stores visible before the task reports done */
#else
    (void)stream;
    memcpy(dst, src, n);
#endif
}

/* n values from `src` (byte stride ss) to `dst` (stride ds): moved as bits when the dtypes
 * match (a long contiguous run streamed when `stream`), else converted. */
static void copy_run(const char *src, int64_t ss, gs_dtype st, int sswap, char *dst, int64_t ds,
                     gs_dtype dt, int dswap, int64_t n, int stream)
{
    const size_t size = gs_dtype_size(st);

    if (st == dt && sswap == dswap) {
        if (ss == (int64_t)size && ds == (int64_t)size) {
            copy_long(dst, src, (size_t)n * size, stream);
            return;
        }
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * ds, src + i * ss, size); /* a fixed-size memcpy: one move */
        return;
    }
    for (int64_t i = 0; i < n; i++)
        store(dt, dst + i * ds, dswap, load(st, src + i * ss, sswap));
}

/* Walk elements [e0, e0 + n) of v in C order, one run of its last dimension at a time: calls
 * run(ctx, address of the run's first element, its stride, the run's length, the position of
 * its first element in the range). */
static void walk(const gs_view *v, int64_t e0, int64_t n,
                 void (*run)(void *ctx, char *p, int64_t stride, int64_t len, int64_t at),
                 void *ctx)
{
    int64_t idx[GS_MAX_NDIM], rest = e0, done = 0;
    const int nd = v->ndim;
    const int64_t inner = nd > 0 ? v->shape[nd - 1] : 1;
    const int64_t istride = nd > 0 ? v->strides[nd - 1] : 0;

    if (n <= 0)
        return;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rest % v->shape[d];
        rest /= v->shape[d];
    }
    while (done < n) {
        char *p = v->ptr;
        int64_t len;
        for (int d = 0; d < nd; d++)
            p += idx[d] * v->strides[d];
        len = nd > 0 ? inner - idx[nd - 1] : 1;
        if (len > n - done)
            len = n - done;
        run(ctx, p, istride, len, done);
        done += len;
        /* Advance the multi-index past the run: to the next row's first element. */
        if (nd == 0)
            break;
        idx[nd - 1] += len;
        for (int d = nd - 1; d > 0 && idx[d] == v->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

typedef struct pack_ctx {
    const gs_view *v;
    gs_dtype t; /* the staging buffer's dtype */
    char *buf;  /* the staging buffer's first element of the range */
    int to_buf; /* gather (1) or scatter (0) */
} pack_ctx;

static void pack_run(void *ctx, char *p, int64_t stride, int64_t len, int64_t at)
{
    const pack_ctx *c = ctx;
    const int64_t size = (int64_t)gs_dtype_size(c->t);
    char *b = c->buf + at * size;

    if (c->to_buf)
        copy_run(p, stride, c->v->dtype, c->v->swapped, b, size, c->t, 0, len, 0);
    else
        copy_run(b, size, c->t, 0, p, stride, c->v->dtype, c->v->swapped, len, 1);
}

void gs_pack(const gs_view *v, int64_t e0, int64_t n, gs_dtype to, void *dst)
{
    pack_ctx c = { v, to, dst, 1 };
    walk(v, e0, n, pack_run, &c);
}

void gs_unpack(const void *src, gs_dtype from, const gs_view *v, int64_t e0, int64_t n)
{
    pack_ctx c = { v, from, (char *)src, 0 };
    walk(v, e0, n, pack_run, &c);
}
