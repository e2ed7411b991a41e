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
    int half;               /* the values are float16 widened to float32 (exactly): NumPy keeps
                             * and bins them as float16 (set by the caller) */
    int from_bool;          /* 1-byte values that are bools read as uint8: a byte stands for 1
                             * when nonzero, as NumPy's conversion makes it (set by the caller) */
} gs_hist_bins;

void gs_hist_bins_release(gs_hist_bins *b);

/* d's mode, nbins, edge type, keep bounds and (equal-width bins) tolerance, and d->edges (host
 * memory held by `b`), for values of dtype t from NumPy's edges b->edges: equal-width bins when
 * `uniform` (an int bins or an estimator), with the range the caller gave (None: every value
 * but NaN is kept). */
int gs_hist_plan_bins(gs_hist_bins *b, gs_hist_desc *d, gs_dtype t, int uniform,
                      PyObject *given_range);

/*
 * The settled bins of equal-width histograms asked for the same way again: an int count of bins
 * and an explicit range of two Python ints or floats (exact types), for one input dtype.  NumPy's
 * edges and everything settled from them are a function of these alone, so a repeated call skips
 * np.histogram_bin_edges and the comparisons of gs_hist_plan_bins (tens of microseconds).  The
 * cache holds a few keys, under the GIL.
 */
typedef struct gs_hist_key {
    gs_dtype t;
    int half;      /* t is float32 holding float16 values (gs_hist_bins.half) */
    int from_bool; /* t is uint8 holding bools (gs_hist_bins.from_bool) */
    int64_t nbins;
    char lo_kind, hi_kind; /* 'i' (int) or 'f' (float) */
    int64_t lo_i, hi_i;
    double lo_f, hi_f;
} gs_hist_key;

/* *key for (t, bins, range) (key->half 0: the caller sets it); 0 when the call is not of the
 * cached kind (or an int does not fit 64 bits), with no exception. */
int gs_hist_key_of(gs_dtype t, PyObject *bins, PyObject *range, gs_hist_key *key);

/* A hit: b's arrays (its edges a fresh copy, the caller's to return) and d's settled fields
 * from the cache; returns 1.  A miss: 0.  -1 raised. */
int gs_hist_bins_cached(const gs_hist_key *key, gs_hist_bins *b, gs_hist_desc *d);

/* Keep what gs_hist_plan_bins settled for key (nothing on failure: the cache is an
 * optimisation). */
void gs_hist_bins_keep(const gs_hist_key *key, const gs_hist_bins *b, const gs_hist_desc *d);

/* The value of dtype t whose bits are `bits`, widened to its kind. */
void gs_hist_value_of_bits(gs_dtype t, uint64_t bits, gs_hist_bound *b);

#endif /* GS_OPS_HIST_H */
