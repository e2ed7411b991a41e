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
 * it.  Tile states in scratch: a status word per tile beside two payloads (the tile's
 * aggregate, its inclusive prefix), zeroed before the launch with the tile counter. */
typedef struct gs_user_scan_params {
    const void *in;
    void *out;
    const unsigned char *flags;
    int64_t n, row_len;
    unsigned *counter; /* tiles taken, in launch order */
    unsigned *status;  /* per tile: 0, GS_USER_AGG or GS_USER_PREFIX, | GS_USER_HEAD */
    void *aggregates;  /* per tile, one T each (16-byte aligned) */
    void *prefixes;    /* per tile, one T each */
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

/* Tile status bits. */
#define GS_USER_AGG 1u    /* the aggregate is published */
#define GS_USER_PREFIX 2u /* the inclusive prefix is published */
#define GS_USER_HEAD 4u   /* the tile holds a segment head: its aggregate is a prefix */

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
/* Values per thread: 128 bytes of them (at most 16, at least 1), a tile of 32 KiB at most. */
#define GS_USER_VT(size) ((size) >= 128 ? 1 : 128 / (size) > 16 ? 16 : 128 / (size))

#endif /* GS_USER_PARAMS_H */
