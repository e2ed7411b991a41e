/*
 * gpuscan/user_params.h - the parameters of the kernels that NVRTC builds for an operator you
 * write (kernels/agent/user.cuh), passed by value; one definition read by both compilers: the
 * host's C (csrc/cuda/user.c fills them; gpuscan/backend.h names the families) and NVRTC (the
 * header is embedded in the extension and handed to nvrtcCreateProgram, never read from disk at run
 * time). Level: include (plain C, no CUDA type).  The integer types come from <stdint.h> on the
 * host and from the generated source's prelude under NVRTC.
 */
#ifndef GS_USER_PARAMS_H
#define GS_USER_PARAMS_H

#ifndef __CUDACC_RTC__
#include <stdint.h>
#endif

/* The scan (gs_user_scan and gs_user_scan_seg): n values of T from `in` into `out` (the same
 * buffer for in place), rows of row_len (0: one row) or 1-byte flags (NULL: none) restarting
 * it.  Its look-back state (kernels/agent/user.cuh) lies in the scans' shared scratch
 * (cuda/scan_scratch.c): the tile counter, zero when a scan starts and left zero by it; a slot
 * per tile (its aggregate) and one per anchor (its exclusive prefix), GS_USER_SLOT(size) bytes
 * each, published under the scan's epoch, so that what another scan left reads as unpublished. */
typedef struct gs_user_scan_params {
    const void *in;
    void *out;
    const unsigned char *flags;
    int64_t n, row_len;
    unsigned *counter;  /* tiles taken, in launch order */
    void *aggregates;   /* per tile, a slot (16-byte aligned) */
    void *prefixes;     /* per anchor, a slot */
    unsigned epoch;     /* 1 .. 2^(32 - GS_USER_TAG_SHIFT) - 1 */
    int nbuf;           /* tiles of dynamic shared memory: 3, or 2 where no more fit */
    int exclusive;
    unsigned char identity[256]; /* one T: the operator's neutral element (exclusive scans) */
} gs_user_scan_params;

/* The ordered fold (gs_user_fold): out[r * nseg + s] = [init combine] in[r * stride + b] combine
 * ... in[r * stride + e - 1] for each of nseg segments of each of `rows` rows, [b, e) being
 * starts[s], ends[s] (ends NULL: the next start, else len), or with starts NULL the chunks
 * [s * chunk, min((s + 1) * chunk, len)).  Every segment holds at least one value. */
typedef struct gs_user_fold_params {
    const void *in;
    void *out;
    const int64_t *starts, *ends;
    int64_t rows, nseg, stride, len, chunk;
    int has_init;
    unsigned char init[256]; /* one T */
} gs_user_fold_params;

/* Status bits, under the epoch's tag. */
#define GS_USER_AGG 1u    /* a tile's aggregate is published */
#define GS_USER_PREFIX 2u /* an anchor's exclusive prefix is published */
#define GS_USER_HEAD 4u   /* the tile holds a segment head: its aggregate is a prefix */
#define GS_USER_TAG_SHIFT 3

/* A slot: T's 4-byte words, each in an 8-byte cell beside the status, whole 16-byte pairs. */
#define GS_USER_SLOT(size) ((((size) + 3) / 4 + 1) / 2 * 16)

/* The anchored look-back: every GS_USER_EVERY(size)-th tile is an anchor; a tile starts from
 * the last anchor at least GS_USER_LAG(size) tiles back and reads the aggregates from there (at
 * most LAG + EVERY - 1 slots, one a thread).  H200, the kernels alone (tools/user_bench.cu):
 * float32 add at 2^28 87% of memcpy with a lag of 192, 85-86% with 128, 83-84% with 224 or 256;
 * a T of 32 bytes or more does better reading fewer, wider slots: Kadane's records at 2^24 64.5%
 * of memcpy with 64 against 61.4% with 192, two such records 42.5% against 36.4%, where 2x2
 * uint32 matrices (16 bytes) ran 80% with 64 against 83% with 192.  An anchor every 32 tiles
 * rather than 64 (fewer slots to read) for a T of 8 bytes or more: affine float32 pairs at 2^28
 * 84.7 -> 90.0% of memcpy, Kadane's records at 2^24 68.3 -> 69.8%, where float32 add fell from
 * 87 to 84%.  The anchors of `tiles` tiles: */
#define GS_USER_LAG(size) ((size) >= 32 ? 64 : 192)
#define GS_USER_EVERY(size) ((size) >= 8 ? 32 : 64)
#define GS_USER_ANCHORS(tiles, size) ((tiles) / GS_USER_EVERY(size) + 1)

/* The kernel families, one NVRTC program each (GS_USER_FAMILY), and their kernels' names. */
#define GS_USER_SCAN 0
#define GS_USER_SCAN_SEG 1
#define GS_USER_FOLD 2
#define GS_USER_FAMILIES 3
#define GS_USER_KERNEL_NAMES                               \
    {                                                      \
        "gs_user_scan", "gs_user_scan_seg", "gs_user_fold" \
    }

/* Threads per block of every such kernel. */
#define GS_USER_NT 256
/* Values per thread: 128 bytes of them (at most 16, at least 1): a tile of 32 KiB, or of 256
 * values for a T wider than 128 bytes. */
#define GS_USER_VT(size) ((size) >= 128 ? 1 : 128 / (size) > 16 ? 16 : 128 / (size))
/* Dynamic shared memory of a family's kernel: tiles of input in transit (the scan holds three,
 * or two on a device whose blocks cannot have three; the fold one). */
#define GS_USER_TILE_BYTES(size) (GS_USER_NT * GS_USER_VT(size) * (size))
#define GS_USER_SMEM(family, size) (((family) == GS_USER_FOLD ? 1 : 3) * GS_USER_TILE_BYTES(size))

#endif /* GS_USER_PARAMS_H */
