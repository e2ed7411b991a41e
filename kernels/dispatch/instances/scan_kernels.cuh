/*
 * dispatch/instances/scan_kernels.cuh - the single-pass scan's __global__ kernels: four families,
 * each stamped for every row of GS_TYPED_KERNELS (dispatch/kernel_table.cuh) in a translation unit
 * of its own, so a build compiles them in parallel:
 *   family     driver (agent/scan.cuh)              scans               file (instances/)
 *   one        scan_tiles: one tile per block       plain               scan_one.cu
 *   one_seg    scan_tiles                           rows and segments   scan_one_seg.cu
 *   ahead      scan_tiles_ahead: persistent grid    plain               scan_ahead.cu
 *   ahead_seg  scan_tiles_ahead                     rows and segments   scan_ahead_seg.cu
 * A plain scan's kernels are compiled without segment heads (no flag is computed, moved or
 * tested: measurably faster, docs/performance-notes.md). The operator and the dtypes are
 * compile-time constants; inclusive or exclusive, row length and flags are run-time parameters.
 * A kernel file defines GS_SCAN_FAMILY (the family's name), GS_SCAN_AHEAD and GS_SCAN_SEG (0
 * or 1) and includes this header, which stamps the family; dispatch/scan.cu includes it without
 * them and gets the declarations of all four.
 */
#ifndef GS_SCAN_KERNELS_CUH
#define GS_SCAN_KERNELS_CUH

#include "agent/scan_params.cuh"
#include "dispatch/kernel_table.cuh"

#define GS_SCAN_NAME_(family, op, in, out) gs_scan_##family##_##op##_##in##_##out
#define GS_SCAN_NAME(family, op, in, out) GS_SCAN_NAME_(family, op, in, out)

#ifdef GS_SCAN_FAMILY
#define GS_AGENT "agent/scan.cuh"
#include "stamp.cuh"

#if GS_SCAN_AHEAD
#define GS_SCAN_DRIVER(rs) scan_tiles_ahead_##rs
#define GS_SCAN_BLOCKS(rs, in) GS_AHEAD_BLOCKS(rs, in)
#else
#define GS_SCAN_DRIVER(rs) scan_tiles_##rs
#define GS_SCAN_BLOCKS(rs, in) GS_MIN_BLOCKS_##rs
#endif
#define GS_X_KERNEL(op, in, out, rs)                                 \
    __global__ void __launch_bounds__(GS_NT, GS_SCAN_BLOCKS(rs, in)) \
        GS_SCAN_NAME(GS_SCAN_FAMILY, op, in, out)(gs_scan_kparams p) \
    {                                                                \
        GS_SCAN_DRIVER(rs)(op, in, out, GS_SCAN_SEG, &p);            \
    }
GS_TYPED_KERNELS(GS_X_KERNEL)
#undef GS_X_KERNEL

#else /* dispatch/scan.cu: the declarations */
#define GS_X_DECLARE(op, in, out, rs)                                    \
    __global__ void GS_SCAN_NAME(one, op, in, out)(gs_scan_kparams);     \
    __global__ void GS_SCAN_NAME(one_seg, op, in, out)(gs_scan_kparams); \
    __global__ void GS_SCAN_NAME(ahead, op, in, out)(gs_scan_kparams);   \
    __global__ void GS_SCAN_NAME(ahead_seg, op, in, out)(gs_scan_kparams);
GS_TYPED_KERNELS(GS_X_DECLARE)
#undef GS_X_DECLARE
#endif

#endif /* GS_SCAN_KERNELS_CUH */
