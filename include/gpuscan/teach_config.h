/*
 * gpuscan/teach_config.h - geometry and scratch sizes of the teaching scans (Hillis-Steele and
 * Blelloch), defined once.
 * Level: configuration, shared by kernels/dispatch/teach.cu and csrc/ (which sizes the scratch and
 * reports the tile to the tests, so they pick sizes around it).  Pure functions only.
 */
#ifndef GS_TEACH_H
#define GS_TEACH_H

#include "gpuscan/desc.h"
#include "gpuscan/config.h"

/* Threads per block of the teaching kernels: 8 warps, as the production scan. */
#define GS_TEACH_NT 256
/* Values per Blelloch tile: two per thread, as in the textbook kernel (each thread owns one node
 * of the tree's lowest level); a power of two, so the tile is one complete tree. */
#define GS_TEACH_TILE (2 * GS_TEACH_NT)
/* Shared-memory padding against bank conflicts: one extra slot every 2^GS_TEACH_LOG_BANKS
 * slots (32 banks of 4 bytes).  GS_TEACH_PAD(i) is evaluated with a compile-time `padded`. */
#ifndef GS_TEACH_LOG_BANKS /* overridable: the padding for another bank geometry (tests) */
#define GS_TEACH_LOG_BANKS 5
#endif
#define GS_TEACH_PAD(i, padded) ((padded) ? (i) + ((i) >> GS_TEACH_LOG_BANKS) : (i))
#define GS_TEACH_SMEM_SLOTS (GS_TEACH_TILE + (GS_TEACH_TILE >> GS_TEACH_LOG_BANKS))

#if (GS_TEACH_TILE & (GS_TEACH_TILE - 1)) != 0
#error "GS_TEACH_TILE must be a power of two (one complete tree per tile)"
#endif

/* ceil(log2(n)) for n >= 1: the parallel steps of a Hillis-Steele scan of n values. */
static inline GS_HD int gs_ceil_log2(int64_t n)
{
    int d = 0;
    while (((int64_t)1 << d) < n)
        d++;
    return d;
}

/* Scratch of a teaching scan on the device, in bytes. Pure, so the tests can check it.
 *  Hillis-Steele: the second buffer of the double buffering (n values of out_type), and a third
 *    when the scan is in place (the first step must not write the array it reads).
 *  Blelloch: per level of the recursion over tiles, one total per tile (out_type) and, when
 *    segmented, one head flag per tile (bytes); a level of one tile per row needs none. */
static inline size_t gs_teach_scratch_bytes(const gs_scan_desc *d)
{
    const int64_t size = (int64_t)gs_dtype_size(d->out_type);
    if (d->n <= 0)
        return 0;
    if (d->algorithm == GS_ALGO_HILLIS_STEELE) {
        int64_t one = gs_round_up(d->n * size, GS_SCRATCH_ALIGN);
        return (size_t)(d->in == d->out ? 2 * one : one);
    }
    int64_t total = 0, row_len = d->row_len > 0 ? d->row_len : d->n;
    int64_t rows = d->n / row_len;
    for (;;) {
        int64_t tiles = (row_len + GS_TEACH_TILE - 1) / GS_TEACH_TILE;
        if (tiles <= 1)
            break;
        total += gs_round_up(rows * tiles * size, GS_SCRATCH_ALIGN);
        if (d->flags != NULL)
            total += gs_round_up(rows * tiles, GS_SCRATCH_ALIGN);
        row_len = tiles;
    }
    return (size_t)total;
}

#endif /* GS_TEACH_H */
