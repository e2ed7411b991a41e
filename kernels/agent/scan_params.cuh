/*
 * agent/scan_params.cuh - the parameters of every single-pass scan kernel (passed by value),
 * filled by the launcher (dispatch/scan.cu) and read by the agent (agent/scan.cuh).
 * Level: agent.
 */
#ifndef GS_SCAN_PARAMS_CUH
#define GS_SCAN_PARAMS_CUH

#include "device/tile_state.cuh"

/* Kernel parameters of every scan kernel (passed by value). */
typedef struct gs_scan_kparams {
    const void *in;
    void *out;
    const void *flags;
    int64_t n;
    int64_t row_len;
    gs_tile_state ts;
    int exclusive;
    int vec_in;           /* `in` is 16-byte aligned: whole runs load as vectors */
    int vec_out;          /* `out` is 16-byte aligned */
    int vec_flags;        /* `flags` (1 byte each) is 16-byte aligned */
    const void *carry_in; /* the running value before element 0 (gs_scan_desc), or NULL */
    void *carry_out;      /* where the last tile leaves the running value, or NULL */
} gs_scan_kparams;

#endif /* GS_SCAN_PARAMS_CUH */
