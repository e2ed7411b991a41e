/*
 * ops/hist.h - what the two halves of gpuscan.histogram() share: ops/hist_edges.c settles the
 * bins from NumPy's edges, ops/hist.c runs the histogram (and bincount) on the backend.
 *
 * Level: ops.
 */
#ifndef GS_OPS_HIST_H
#define GS_OPS_HIST_H

#include "ops/ops.h"

/* numpy.<name>(*args, **kwargs) (args a tuple, kwargs a dict or NULL); a new reference. */
PyObject *gs_np_call(const char *name, PyObject *args, PyObject *kwargs);

/* The bins of one histogram: NumPy's edges, and what the backend reads.  Zero it first;
 * gs_hist_bins_release gives back what it holds. */
typedef struct gs_hist_bins {
    PyObject *edges;        /* NumPy's edges (what histogram() returns); set by the caller */
    PyArrayObject *kedges;  /* the edges in the type the bins are found in */
    PyArrayObject *table;   /* 1-byte input: the bins of its 256 values */
    PyObject *first, *last; /* the outer edges NumPy keeps values with (explicit range) */
} gs_hist_bins;

void gs_hist_bins_release(gs_hist_bins *b);

/* d's mode, nbins, edge type, keep bounds and (equal-width bins) tolerance, and d->edges (host
 * memory held by `b`), for values of dtype t from NumPy's edges b->edges: equal-width bins when
 * `uniform` (an int bins or an estimator), with the range the caller gave (None: every value
 * but NaN is kept). */
int gs_hist_plan_bins(gs_hist_bins *b, gs_hist_desc *d, gs_dtype t, int uniform,
                      PyObject *given_range);

/* The value of dtype t whose bits are `bits`, widened to its kind. */
void gs_hist_value_of_bits(gs_dtype t, uint64_t bits, gs_hist_bound *b);

#endif /* GS_OPS_HIST_H */
