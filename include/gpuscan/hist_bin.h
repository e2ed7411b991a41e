/*
 * gpuscan/hist_bin.h - the bin of one value, for both backends.
 *
 * Level: per-value (thread) functions shared by the CPU backend (csrc/cpu/hist.c) and the CUDA
 * kernels (kernels/agent/hist.cuh): plain C, callable from host and device (GS_HD), so both
 * backends put every value in the same bin by construction.  The modes are those of
 * gs_hist_desc (gpuscan/desc.h).
 *
 * Uniform bins.  The bin of xe among the edges E[0..nb] is the i with E[i] <= xe < E[i+1] (the
 * last bin closed), which is what NumPy's arithmetic followed by its one-step correction against
 * the same edges gives.  The fast arithmetic p(x) = (x - E[0]) * scale, in the edges' type, is
 * non-decreasing in x (a subtraction and a product by a positive constant, each rounded once), so
 * p(x) > p(E[k]) implies x > E[k] and p(x) < p(E[k]) implies x < E[k].  The host computes the
 * same p(E[k]) for every edge and D = max |p(E[k]) - k|; a value whose p has j = floor(p) and
 * frac(p) in (D, 1 - D) lies strictly between E[j] and E[j+1], so its bin is j with no edge
 * loaded (fast_lo = D rounded up, fast_hi = 1 - D rounded down).  Only values whose p is within
 * D of an integer compare themselves with the edges beside p (usually one or two loads);
 * a p that is not finite or out of [0, nb) is settled by binary search.
 */
#ifndef GS_HIST_H
#define GS_HIST_H

#include <float.h>
#include <math.h>

#include "gpuscan/desc.h"

/* Inlined everywhere: on the device a call would spill the unrolled loop's registers. */
#ifdef __CUDACC__
#define GS_HIST_FN static __forceinline__ GS_HD
#else
#define GS_HIST_FN static inline
#endif

/*
 * bincount's key of an integer value widened to (xi, xu) from a `size`-byte dtype of `kind`
 * ('i', or 'u' for unsigned and bool): the value itself when it is not negative; a negative one
 * is its 32-bit two's complement (1 to 4 bytes) or its 64 bits (8 bytes), read unsigned, which
 * is at least 2^31.  So for nbins <= 2^31 every value lies in [0, nbins) exactly when the
 * largest key is below nbins (gs_hist_desc.probe).
 */
GS_HIST_FN uint64_t gs_hist_index_key(size_t size, char kind, int64_t xi, uint64_t xu)
{
    if (kind != 'i')
        return xu;
    return size == 8 ? (uint64_t)xi : (uint64_t)(uint32_t)(int32_t)xi;
}

/* Largest i < nb with e[i] <= x, given e[lo] <= x (lo < nb): binary search of e[lo+1..nb-1]. */
#define GS_HIST_SEARCH_FROM(e, nb, x, lo)           \
    do {                                            \
        int64_t hi_ = (nb);                         \
        while (hi_ - (lo) > 1) {                    \
            int64_t mid_ = (lo) + (hi_ - (lo)) / 2; \
            if ((e)[mid_] <= (x))                   \
                (lo) = mid_;                        \
            else                                    \
                hi_ = mid_;                         \
        }                                           \
    } while (0)

/*
 * gs_hist_uniform_<sfx>(e, nb, scale, fast_lo, fast_hi, xe): the bin of xe, which the caller
 * kept (e[0] <= xe <= e[nb]), for edges of type T (float or double).
 */
#define GS_HIST_UNIFORM_DEF(sfx, T)                                                               \
    GS_HIST_FN int64_t gs_hist_uniform_##sfx(const T *e, int64_t nb, T first, T scale, T fast_lo, \
                                             T fast_hi, T xe)                                     \
    {                                                                                             \
        const T p = (xe - first) * scale;                                                         \
        int64_t j;                                                                                \
        if (!(p >= (T)0 && p < (T)nb)) { /* not finite, or beside the range: search */            \
            j = 0;                                                                                \
            GS_HIST_SEARCH_FROM(e, nb, xe, j);                                                    \
            return j;                                                                             \
        }                                                                                         \
        if (nb <= 0x7fffffff) { /* 32-bit conversions when they fit (p < nb): cheaper */          \
            const int32_t j32 = (int32_t)p;                                                       \
            const T frac = p - (T)j32;                                                            \
            if (frac > fast_lo && frac < fast_hi)                                                 \
                return j32;                                                                       \
            j = j32;                                                                              \
        } else {                                                                                  \
            j = (int64_t)p;                                                                       \
            const T frac = p - (T)j;                                                              \
            if (frac > fast_lo && frac < fast_hi)                                                 \
                return j;                                                                         \
        }                                                                                         \
        /* Near an edge: walk to the bin (a step or none, as p is within D of its place). */      \
        while (j > 0 && xe < e[j])                                                                \
            j--;                                                                                  \
        while (j < nb - 1 && xe >= e[j + 1])                                                      \
            j++;                                                                                  \
        return j;                                                                                 \
    }
GS_HIST_UNIFORM_DEF(f32, float)
GS_HIST_UNIFORM_DEF(f64, double)
#undef GS_HIST_UNIFORM_DEF

/*
 * gs_hist_search_<sfx>(e, nb, x): the bin of x among increasing edges e[0..nb] of type T, or -1
 * when x is outside [e[0], e[nb]] (NaN too).  Repeated edges give empty bins, as NumPy's
 * searchsorted formulation does.
 */
#define GS_HIST_SEARCH_DEF(sfx, T)                                       \
    GS_HIST_FN int64_t gs_hist_search_##sfx(const T *e, int64_t nb, T x) \
    {                                                                    \
        int64_t lo = 0;                                                  \
        if (!(e[0] <= x && x <= e[nb]))                                  \
            return -1;                                                   \
        GS_HIST_SEARCH_FROM(e, nb, x, lo);                               \
        return lo;                                                       \
    }
GS_HIST_SEARCH_DEF(i64, int64_t)
GS_HIST_SEARCH_DEF(u64, uint64_t)
GS_HIST_SEARCH_DEF(f32, float)
GS_HIST_SEARCH_DEF(f64, double)
#undef GS_HIST_SEARCH_DEF

/*
 * The bin of one value, or -1 when it is dropped.  The value comes widened to its kind (`kind`:
 * 'i' in xi, 'u' in xu, 'f' in xf; bool is 'u'); `kind`, `mode` and `et` (the edge type) are
 * compile-time constants at the device call sites, so the switches fold away there.
 */
GS_HIST_FN int64_t gs_hist_bin(const gs_hist_desc *d, char kind, gs_hist_mode mode, gs_dtype et,
                               int64_t xi, uint64_t xu, double xf)
{
    const int64_t nb = d->nbins;
    if (mode == GS_HIST_TABLE)
        return ((const int32_t *)d->edges)[kind == 'i' ? (uint8_t)xi : (uint8_t)xu];
    if (mode == GS_HIST_INDEX) {
        if (kind == 'i')
            return xi >= 0 && xi < nb ? xi : -1;
        return xu < (uint64_t)nb ? (int64_t)xu : -1;
    }
    if (mode == GS_HIST_UNIFORM && kind == 'f' && et == GS_FLOAT32) {
        /* float32 values with float32 edges: kept and binned in float (lo and hi are float32
         * values then, exact in either type). */
        const float xe = (float)xf;
        if (!(d->lo_f <= xe && xe <= d->hi_f))
            return -1;
        return gs_hist_uniform_f32((const float *)d->edges, nb, d->first_f, d->scale_f,
                                   d->fast_lo_f, d->fast_hi_f, xe);
    }
    if (mode == GS_HIST_UNIFORM) {
        int keep = kind == 'i'   ? d->lo.i <= xi && xi <= d->hi.i
                   : kind == 'u' ? d->lo.u <= xu && xu <= d->hi.u
                                 : d->lo.f <= xf && xf <= d->hi.f;
        if (!keep)
            return -1;
        if (et == GS_FLOAT32) {
            float xe = kind == 'i' ? (float)xi : (float)xu;
            return gs_hist_uniform_f32((const float *)d->edges, nb, d->first_f, d->scale_f,
                                       d->fast_lo_f, d->fast_hi_f, xe);
        }
        double xe = kind == 'i' ? (double)xi : kind == 'u' ? (double)xu : xf;
        return gs_hist_uniform_f64((const double *)d->edges, nb, d->first, d->scale, d->fast_lo,
                                   d->fast_hi, xe);
    }
    switch (et) {
    case GS_INT64:
        return gs_hist_search_i64((const int64_t *)d->edges, nb, kind == 'i' ? xi : (int64_t)xu);
    case GS_UINT64:
        return gs_hist_search_u64((const uint64_t *)d->edges, nb, xu);
    case GS_FLOAT32:
        return gs_hist_search_f32((const float *)d->edges, nb,
                                  kind == 'i'   ? (float)xi
                                  : kind == 'u' ? (float)xu
                                                : (float)xf);
    default:
        return gs_hist_search_f64((const double *)d->edges, nb,
                                  kind == 'i'   ? (double)xi
                                  : kind == 'u' ? (double)xu
                                                : xf);
    }
}

/*
 * scale = nb / (E[nb] - E[0]) and the fraction window (fast_lo, fast_hi) of gpuscan/hist_bin.h, in
 * the edges' type T: D = max |p(E[k]) - k| over the edges, with p computed exactly as the backends
 * compute it (so the window is exact: a wider one sends more values to the edges, and at 65536
 * bins a window of a few ulps of nb sent every warp there), widened by two ulps of 1; no window
 * at all when D >= 1/2 or when p is not finite at some edge.  Host code (csrc/ops/hist.c sets up
 * every call with it).
 */
#define GS_HIST_UNIFORM_SETUP_DEF(sfx, T, EPS, NEXT)                                        \
    static inline void gs_hist_uniform_setup_##sfx(const T *e, int64_t nb, gs_hist_desc *d) \
    {                                                                                       \
        const T scale = (T)nb / (e[nb] - e[0]);                                             \
        double dev = 0.0;                                                                   \
        for (int64_t k = 0; k <= nb; k++) {                                                 \
            const T p = (e[k] - e[0]) * scale;                                              \
            double off = fabs((double)p - (double)k);                                       \
            if (!isfinite(off))                                                             \
                dev = INFINITY;                                                             \
            else if (off > dev)                                                             \
                dev = off;                                                                  \
        }                                                                                   \
        dev += 2.0 * (EPS);                                                                 \
        d->scale = (double)scale;                                                           \
        if (!(dev < 0.5) || !isfinite((double)scale)) {                                     \
            d->fast_lo = 1.0;                                                               \
            d->fast_hi = 0.0;                                                               \
            return;                                                                         \
        }                                                                                   \
        T lo = (T)dev, hi = (T)(1.0 - dev);                                                 \
        if ((double)lo < dev)                                                               \
            lo = NEXT(lo, (T)1);                                                            \
        if ((double)hi > 1.0 - dev)                                                         \
            hi = NEXT(hi, (T)0);                                                            \
        d->fast_lo = (double)lo;                                                            \
        d->fast_hi = (double)hi;                                                            \
    }
GS_HIST_UNIFORM_SETUP_DEF(f32, float, FLT_EPSILON, nextafterf)
GS_HIST_UNIFORM_SETUP_DEF(f64, double, DBL_EPSILON, nextafter)
#undef GS_HIST_UNIFORM_SETUP_DEF

#endif /* GS_HIST_H */
