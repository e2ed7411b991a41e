/*
 * ops/axis_layout.h - whether the axes a reduction or a scan runs along can be read in place, as
 * rows x row_len x inner (gs_reduce_desc and gs_scan_desc's `inner`).
 * Level: ops (ops/reduce.c; ops/scan.c's single axis needs no search).  A C-contiguous array
 * whose picked axes are one run of consecutive axes is, with no copy, `rows` blocks (the axes
 * before the run) of `row_len` rows (the run) of `inner` values (the axes after it): a backend
 * whose table sets inner_axes (the CPU's) walks it in memory order, many columns at once,
 * instead of a transposed copy that puts the run last.  The others take inner == 1 only: the
 * ops move the run last for them.
 */
#ifndef GS_OPS_AXIS_LAYOUT_H
#define GS_OPS_AXIS_LAYOUT_H

#include "ops/ops.h"

/* The product of the lengths of the axes after the run of picked axes of `shape` (ndim axes,
 * picked[i] nonzero for a picked axis), or 0 when the picked axes are not one run (or none is
 * picked).  1 means the run is last: the layout with no inner columns. */
static inline int64_t gs_axis_inner(int ndim, const int64_t *shape, const unsigned char *picked)
{
    int first = -1, last = -1;
    int64_t inner = 1;
    for (int i = 0; i < ndim; i++) {
        if (!picked[i])
            continue;
        if (first < 0)
            first = i;
        else if (last != i - 1)
            return 0; /* a gap: two runs */
        last = i;
    }
    if (first < 0)
        return 0;
    for (int i = last + 1; i < ndim; i++)
        inner *= shape[i];
    return inner;
}

#endif /* GS_OPS_AXIS_LAYOUT_H */
