/*
 * ops/hist_edges.c - the bins of a histogram exactly as NumPy draws them: which values an
 * explicit range keeps, the tolerance of equal-width bins, the type array edges are searched
 * in, and the 256-value table of a 1-byte input.
 *
 * Level: ops (the host side of gpuscan.histogram(); ops/hist.c runs it).  NumPy computes the
 * edges itself (np.histogram_bin_edges, in ops/hist.c); from those edges this file settles
 * everything the backends need to put every value in the bin NumPy would, before any data
 * moves:
 *   keeping   which values an explicit range keeps is NumPy's comparison of the input dtype
 *             with the outer edges, found once per call by asking NumPy about a few values of
 *             that dtype around the bounds (keep_bounds), so that every value on, or one ulp
 *             beside, a bound is kept or dropped as NumPy keeps or drops it;
 *   bins      equal-width bins: arithmetic checked against the edges near an edge
 *             (gpuscan/hist_bin.h, with its tolerance settled by uniform_setup); array edges:
 *             binary search in the type NumPy's searchsorted compares in; 1-byte input: a table
 *             of its 256 values' bins made by those rules (make_table);
 *   widths    every comparison is exact in the type the backends compare in: a value narrower
 *             than the edges is compared in the edges' type, as NumPy compares it.  float16
 *             input (widened to float32, exactly) is kept by NumPy's comparisons of float16
 *             values (keep_bounds_half), and float16 edges are float32 ones; long double edges,
 *             beyond every backend, become the doubles that split the doubles exactly where
 *             they do (kedges_long_double).
 */
#include "ops/hist.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "gpuscan/hist_bin.h"

/* ---- NumPy called from C -------------------------------------------------------------------- */

/* numpy.<name>(*args, **kwargs) (args a tuple, kwargs a dict or NULL); a new reference. */
PyObject *gs_np_call(const char *name, PyObject *args, PyObject *kwargs)
{
    PyObject *np = PyImport_ImportModule("numpy"), *fn, *res = NULL;
    if (np == NULL)
        return NULL;
    fn = PyObject_GetAttrString(np, name);
    Py_DECREF(np);
    if (fn != NULL)
        res = PyObject_Call(fn, args, kwargs);
    Py_XDECREF(fn);
    return res;
}

/* ---- Keeping values: NumPy's comparison of the input dtype with a bound --------------------- */

/*
 * Keys order the values of a dtype as numbers: unsigned integers are their bits, signed ones
 * their bits with the sign flipped, floats their bits with the sign flipped, negative ones
 * inverted (-0 and +0 adjacent, NaN outside [key(-inf), key(+inf)]).
 */
static int key_bits(gs_dtype t)
{
    return 8 * (int)gs_dtype_size(t);
}

static uint64_t key_mask(gs_dtype t)
{
    return key_bits(t) == 64 ? ~(uint64_t)0 : (((uint64_t)1 << key_bits(t)) - 1);
}

static uint64_t key_of_bits(gs_dtype t, uint64_t bits)
{
    const uint64_t sign = (uint64_t)1 << (key_bits(t) - 1);
    if (gs_dtype_read_kind(t) == 'u')
        return bits;
    if (gs_dtype_read_kind(t) == 'i')
        return (bits ^ sign) & key_mask(t);
    return (bits & sign) ? ~bits & key_mask(t) : bits | sign;
}

static uint64_t bits_of_key(gs_dtype t, uint64_t key)
{
    const uint64_t sign = (uint64_t)1 << (key_bits(t) - 1);
    if (gs_dtype_read_kind(t) == 'u')
        return key;
    if (gs_dtype_read_kind(t) == 'i')
        return (key ^ sign) & key_mask(t);
    return (key & sign) ? key & ~sign : ~key & key_mask(t);
}

/* The smallest and largest keys of t's non-NaN values. */
static void key_range(gs_dtype t, uint64_t *kmin, uint64_t *kmax)
{
    if (gs_dtype_read_kind(t) != 'f') {
        *kmin = 0;
        *kmax = key_mask(t);
    } else if (t == GS_FLOAT32) {
        *kmin = key_of_bits(t, 0xff800000u);
        *kmax = key_of_bits(t, 0x7f800000u);
    } else {
        *kmin = key_of_bits(t, 0xfff0000000000000u);
        *kmax = key_of_bits(t, 0x7ff0000000000000u);
    }
}

/* The key nearest to a double (where a search for NumPy's threshold starts). */
static uint64_t key_near(gs_dtype t, double v)
{
    uint64_t kmin, kmax, bits = 0;
    key_range(t, &kmin, &kmax);
    if (isnan(v))
        return kmin + (kmax - kmin) / 2;
    if (t == GS_FLOAT32) {
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        return key_of_bits(t, b);
    }
    if (t == GS_FLOAT64) {
        memcpy(&bits, &v, 8);
        return key_of_bits(t, bits);
    }
    if (gs_dtype_read_kind(t) == 'u') {
        double top = ldexp(1.0, key_bits(t));
        return v <= 0 ? 0 : v >= top ? kmax : (uint64_t)v;
    }
    double half = ldexp(1.0, key_bits(t) - 1);
    int64_t i = v <= -half  ? -(int64_t)(half - 1) - 1
                : v >= half ? (int64_t)(half - 1)
                            : (int64_t)v;
    return key_of_bits(t, (uint64_t)i & key_mask(t));
}

/* pred[k] = NumPy's `value(keys[k]) <op> bound`, values of dtype t, for m keys. */
static int numpy_compare(gs_dtype t, const uint64_t *keys, int m, PyObject *bound, int op,
                         int negate, unsigned char *pred)
{
    npy_intp dims = m;
    PyArray_Descr *descr = gs_descr(t);
    PyArrayObject *vals, *res_b = NULL;
    PyObject *res = NULL;
    size_t sz = gs_dtype_size(t);

    if (descr == NULL)
        return -1;
    vals = (PyArrayObject *)PyArray_Empty(1, &dims, descr, 0);
    if (vals == NULL)
        return -1;
    for (int k = 0; k < m; k++) {
        uint64_t b = bits_of_key(t, keys[k]);
        memcpy((char *)PyArray_DATA(vals) + k * sz, &b, sz); /* little-endian: the low bytes */
    }
    res = PyObject_RichCompare((PyObject *)vals, bound, op);
    if (res != NULL)
        res_b = (PyArrayObject *)PyArray_FROM_OTF(res, NPY_BOOL, NPY_ARRAY_CARRAY);
    Py_DECREF(vals);
    Py_XDECREF(res);
    if (res_b == NULL)
        return -1;
    if (PyArray_SIZE(res_b) != m) {
        Py_DECREF(res_b);
        PyErr_SetString(PyExc_ValueError, "range values must be scalars");
        return -1;
    }
    for (int k = 0; k < m; k++)
        pred[k] = (((const npy_bool *)PyArray_DATA(res_b))[k] != 0) != negate;
    Py_DECREF(res_b);
    return 0;
}

/* Half the keys a first guess looks at on each side of the bound: a cast of the bound lands
 * within an ulp (or one integer) of NumPy's threshold whenever the bound is a plain number. */
#define KEEP_WINDOW 4

/*
 * The smallest key of t whose value satisfies P = (`value <op> bound` != negate), P being
 * false then true along the keys; *found = 0 when no key does.  A window of keys around the
 * bound's cast is asked in one NumPy call; a bound that NumPy compares in some other way
 * falls back to a bisection over every key (at most 65 calls).
 */
static int first_true(gs_dtype t, PyObject *bound, int op, int negate, int *found, uint64_t *key)
{
    uint64_t kmin, kmax, keys[2 * KEEP_WINDOW + 1], lo, hi;
    unsigned char pred[2 * KEEP_WINDOW + 1];
    double guess = PyFloat_AsDouble(bound);
    int m = 0;

    if (guess == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        guess = NAN;
    }
    key_range(t, &kmin, &kmax);
    uint64_t g = key_near(t, guess);
    g = g < kmin ? kmin : g > kmax ? kmax : g;
    lo = g - kmin >= KEEP_WINDOW ? g - KEEP_WINDOW : kmin;
    hi = kmax - g >= KEEP_WINDOW ? g + KEEP_WINDOW : kmax;
    for (uint64_t k = lo;; k++) {
        keys[m++] = k;
        if (k == hi)
            break;
    }
    if (numpy_compare(t, keys, m, bound, op, negate, pred) < 0)
        return -1;
    if (pred[0] && lo == kmin) {
        *found = 1;
        *key = kmin;
        return 0;
    }
    if (!pred[m - 1] && hi == kmax) {
        *found = 0;
        return 0;
    }
    if (!pred[0] && pred[m - 1]) {
        for (int k = 0; k < m; k++)
            if (pred[k]) {
                *found = 1;
                *key = keys[k];
                return 0;
            }
    }
    /* Bisection: P(kmin) false, P(kmax) true, once checked. */
    keys[0] = kmin;
    keys[1] = kmax;
    if (numpy_compare(t, keys, 2, bound, op, negate, pred) < 0)
        return -1;
    *found = pred[1];
    if (pred[0] || !pred[1]) {
        *key = kmin;
        return 0;
    }
    lo = kmin; /* P(lo) false */
    hi = kmax; /* P(hi) true */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (numpy_compare(t, &mid, 1, bound, op, negate, pred) < 0)
            return -1;
        if (pred[0])
            hi = mid;
        else
            lo = mid;
    }
    *key = hi;
    return 0;
}

/* A key's value, widened to its kind. */
static void bound_of_key(gs_dtype t, uint64_t key, gs_hist_bound *b)
{
    uint64_t bits = bits_of_key(t, key);
    memset(b, 0, sizeof(*b));
    if (t == GS_FLOAT32) {
        float f;
        uint32_t b32 = (uint32_t)bits;
        memcpy(&f, &b32, 4);
        b->f = f;
    } else if (t == GS_FLOAT64) {
        memcpy(&b->f, &bits, 8);
    } else if (gs_dtype_read_kind(t) == 'i') {
        int sh = 64 - key_bits(t);
        b->i = (int64_t)(bits << sh) >> sh;
    } else {
        b->u = bits;
    }
}

/*
 * d->lo and d->hi: the values of dtype t that NumPy's `(a >= first) & (a <= last)` keeps are
 * exactly those in [lo, hi] (none: lo > hi).  first/last NULL: everything but NaN.
 */
static int keep_bounds(gs_dtype t, PyObject *first, PyObject *last, gs_hist_desc *d)
{
    uint64_t kmin, kmax, klo, khi;
    int found;

    key_range(t, &kmin, &kmax);
    klo = kmin;
    khi = kmax;
    if (first != NULL) {
        if (first_true(t, first, Py_GE, 0, &found, &klo) < 0)
            return -1;
        if (!found)
            goto none;
        /* The first value that is not <= last ends the kept values. */
        if (first_true(t, last, Py_LE, 1, &found, &khi) < 0)
            return -1;
        if (!found)
            khi = kmax;
        else if (khi == kmin)
            goto none;
        else
            khi--;
        if (klo > khi)
            goto none;
    }
    bound_of_key(t, klo, &d->lo);
    bound_of_key(t, khi, &d->hi);
    return 0;
none:
    bound_of_key(t, kmax, &d->lo);
    bound_of_key(t, kmin, &d->hi);
    return 0;
}

/* The value of float16 bits h, exactly. */
static double half_value(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

/*
 * keep_bounds for float16 values held widened in float32 (gs_hist_bins.half): d->lo and d->hi
 * (float32 values, so exact in both of its fields) bound the float16 values that NumPy's
 * `(a >= first) & (a <= last)` keeps, asked of NumPy over every float16 value at once (63490 of
 * them, in increasing order: -inf ... -0, +0 ... +inf).  The float32 widening of a float16 value
 * lies in [lo, hi] exactly when NumPy keeps the float16 one.
 */
static int keep_bounds_half(PyObject *first, PyObject *last, gs_hist_desc *d)
{
    const npy_intp n = 2 * (0x7c00 + 1); /* the non-NaN float16 values of either sign */
    PyArrayObject *vals = (PyArrayObject *)PyArray_SimpleNew(1, (npy_intp[]){ n }, NPY_HALF);
    PyArrayObject *ge = NULL, *le = NULL;
    PyObject *res;
    npy_intp lo, hi;
    int rc = -1;

    if (vals == NULL)
        return -1;
    for (npy_intp k = 0; k < n; k++) /* -inf (0xfc00) down to -0 (0x8000), then +0 to +inf */
        ((uint16_t *)PyArray_DATA(vals))[k] =
            (uint16_t)(k <= 0x7c00 ? 0xfc00 - k : k - (0x7c00 + 1));
    if ((res = PyObject_RichCompare((PyObject *)vals, first, Py_GE)) == NULL)
        goto done;
    ge = (PyArrayObject *)PyArray_FROM_OTF(res, NPY_BOOL, NPY_ARRAY_CARRAY);
    Py_DECREF(res);
    if (ge == NULL || (res = PyObject_RichCompare((PyObject *)vals, last, Py_LE)) == NULL)
        goto done;
    le = (PyArrayObject *)PyArray_FROM_OTF(res, NPY_BOOL, NPY_ARRAY_CARRAY);
    Py_DECREF(res);
    if (le == NULL)
        goto done;
    if (PyArray_SIZE(ge) != n || PyArray_SIZE(le) != n) {
        PyErr_SetString(PyExc_ValueError, "range values must be scalars");
        goto done;
    }
    /* NumPy's `a >= first` is false and then true along increasing values, `a <= last` true and
     * then false. */
    for (lo = 0; lo < n && !((const npy_bool *)PyArray_DATA(ge))[lo]; lo++)
        ;
    for (hi = n - 1; hi >= 0 && !((const npy_bool *)PyArray_DATA(le))[hi]; hi--)
        ;
    memset(&d->lo, 0, sizeof(d->lo));
    memset(&d->hi, 0, sizeof(d->hi));
    if (lo > hi) { /* none */
        d->lo.f = INFINITY;
        d->hi.f = -INFINITY;
    } else {
        d->lo.f = half_value(((const uint16_t *)PyArray_DATA(vals))[lo]);
        d->hi.f = half_value(((const uint16_t *)PyArray_DATA(vals))[hi]);
    }
    rc = 0;
done:
    Py_DECREF(vals);
    Py_XDECREF(ge);
    Py_XDECREF(le);
    return rc;
}

/* ---- Equal-width bins: the arithmetic's tolerance (gpuscan/hist_bin.h)
 * ------------------------------- */

/*
 * The last call's edges and their tolerance, kept so that a repeated histogram (the same bins
 * and range, the usual case) does not recompute the tolerance over every edge.  Touched with
 * the GIL held.  (The CUDA backend keeps the edges' device copy likewise: cuda/backend.c.)
 */
static struct setup_cache {
    void *host; /* a copy of the edges (NULL: empty) */
    size_t bytes;
    gs_dtype type;
    double scale, fast_lo, fast_hi;
} setup_cache;

/* The tolerance of gpuscan/hist_bin.h for edges e (nb + 1 values of d->edge_type), from the cache
 * when the same edges came last, else computed and cached. */
static void uniform_setup(const void *e, int64_t nb, gs_hist_desc *d)
{
    size_t bytes = (size_t)(nb + 1) * gs_dtype_size(d->edge_type);
    void *copy;

    if (setup_cache.host != NULL && setup_cache.bytes == bytes &&
        setup_cache.type == d->edge_type && memcmp(setup_cache.host, e, bytes) == 0) {
        d->scale = setup_cache.scale;
        d->fast_lo = setup_cache.fast_lo;
        d->fast_hi = setup_cache.fast_hi;
        return;
    }
    if (d->edge_type == GS_FLOAT32)
        gs_hist_uniform_setup_f32(e, nb, d);
    else
        gs_hist_uniform_setup_f64(e, nb, d);
    if ((copy = malloc(bytes)) == NULL)
        return; /* no cache: nothing lost but speed */
    memcpy(copy, e, bytes);
    free(setup_cache.host);
    setup_cache.host = copy;
    setup_cache.bytes = bytes;
    setup_cache.type = d->edge_type;
    setup_cache.scale = d->scale;
    setup_cache.fast_lo = d->fast_lo;
    setup_cache.fast_hi = d->fast_hi;
}

/*
 * 1-byte input: the bin of each of the 256 values, computed here by gs_hist_bin itself, so
 * that the backends look each value up (GS_HIST_TABLE) instead of converting and multiplying.
 * Replaces d's mode and edges; `table` (256 int32) must outlive the call.  Not for more bins
 * than an int32 holds.  from_bool: the bytes are bools, each the value 1 when nonzero.
 */
static int make_table(gs_hist_desc *d, gs_dtype t, const void *edges, PyArrayObject **table,
                      int from_bool)
{
    npy_intp dims = 256;
    char kind = gs_dtype_kind(t) == 'i' ? 'i' : 'u';
    int32_t *bins;

    if (gs_dtype_size(t) != 1 || d->nbins > INT32_MAX ||
        (d->mode != GS_HIST_UNIFORM && d->mode != GS_HIST_SEARCH))
        return 0;
    *table = (PyArrayObject *)PyArray_SimpleNew(1, &dims, NPY_INT32);
    if (*table == NULL)
        return -1;
    bins = PyArray_DATA(*table);
    d->edges = edges;
    for (int b = 0; b < 256; b++) {
        const int v = from_bool ? b != 0 : b;
        bins[b] = (int32_t)gs_hist_bin(d, kind, d->mode, d->edge_type, (int8_t)(uint8_t)v,
                                       (uint64_t)v, 0.0);
    }
    d->mode = GS_HIST_TABLE;
    d->edge_type = GS_INT32;
    d->edges = NULL;
    return 0;
}

/* The outer edges NumPy keeps values with (_get_outer_edges: an empty range widened by 0.5
 * each way); none when the range was autodetected (every value is then kept). */
static int outer_edges(gs_hist_bins *s, PyObject *given_range)
{
    PyObject *seq, *half;
    int eq;

    if (given_range == Py_None)
        return 0;
    seq = PySequence_Fast(given_range, "range must be a pair of numbers");
    if (seq == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 2) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "range must be a pair of numbers");
        return -1;
    }
    s->first = Py_NewRef(PySequence_Fast_GET_ITEM(seq, 0));
    s->last = Py_NewRef(PySequence_Fast_GET_ITEM(seq, 1));
    Py_DECREF(seq);
    if ((eq = PyObject_RichCompareBool(s->first, s->last, Py_EQ)) < 0)
        return -1;
    if (eq) {
        if ((half = PyFloat_FromDouble(0.5)) == NULL)
            return -1;
        Py_SETREF(s->first, PyNumber_Subtract(s->first, half));
        Py_SETREF(s->last, PyNumber_Add(s->last, half));
        Py_DECREF(half);
        if (s->first == NULL || s->last == NULL)
            return -1;
    }
    return 0;
}

/* The dtype code of a searchsorted comparison type, or -1 (TypeError set). */
static int search_type(PyArray_Descr *common, gs_dtype *out)
{
    switch (common->kind) {
    case 'b':
    case 'i':
        *out = GS_INT64;
        return 0;
    case 'u':
        *out = GS_UINT64;
        return 0;
    case 'f':
        /* float16 compares as float32 (every float16 is one, and the order is the same), and a
         * long double wider than double as the doubles of kedges_long_double */
        if (common->type_num == NPY_HALF || PyDataType_ELSIZE(common) == 4) {
            *out = GS_FLOAT32;
            return 0;
        }
        if (PyDataType_ELSIZE(common) == 8 || common->type_num == NPY_LONGDOUBLE) {
            *out = GS_FLOAT64;
            return 0;
        }
        break;
    default:
        break;
    }
    PyErr_Format(PyExc_TypeError,
                 "histogram: bin edges compared as %R are not supported "
                 "(bool, integer, float32 or float64 only)",
                 (PyObject *)common);
    return -1;
}

/*
 * Long double edges (wider than double) as doubles that split every double value as they do: a
 * double x is >= E exactly when x >= E rounded up to a double, and <= E exactly when x <= E rounded
 * down.  Every edge but the last is a lower bound of its bin (rounded up); the last is the upper
 * bound of the kept values in a search (rounded down: `last_down`), and an equal-width
 * histogram's keeping is settled by the range (keep_bounds), so there it is rounded up as well.
 * The doubles do not decrease, as the edges do not.  Returns a new float64 array, or NULL.
 */
static PyArrayObject *kedges_long_double(PyArrayObject *edges, int last_down)
{
    PyArrayObject *ld =
        (PyArrayObject *)PyArray_FROM_OTF((PyObject *)edges, NPY_LONGDOUBLE, NPY_ARRAY_CARRAY_RO);
    PyArrayObject *out;
    npy_intp n;

    if (ld == NULL)
        return NULL;
    n = PyArray_SIZE(ld);
    out = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_DOUBLE);
    if (out != NULL) {
        const long double *e = PyArray_DATA(ld);
        double *o = PyArray_DATA(out);
        for (npy_intp k = 0; k < n; k++) {
            double v = (double)e[k];
            if (last_down && k == n - 1) {
                if ((long double)v > e[k])
                    v = nextafter(v, -INFINITY);
            } else if ((long double)v < e[k]) {
                v = nextafter(v, INFINITY);
            }
            o[k] = v;
        }
    }
    Py_DECREF(ld);
    return out;
}

/* d's mode, edges and keep bounds from NumPy's edges. */
int gs_hist_plan_bins(gs_hist_bins *s, gs_hist_desc *d, gs_dtype t, int uniform,
                      PyObject *given_range)
{
    PyArrayObject *e = (PyArrayObject *)s->edges;
    PyArray_Descr *in_descr, *common;
    gs_dtype et;

    if (!PyArray_Check(s->edges) || PyArray_NDIM(e) != 1 || PyArray_DIM(e, 0) < 2) {
        PyErr_SetString(PyExc_ValueError, "histogram: NumPy gave no usable bin edges");
        return -1;
    }
    d->nbins = PyArray_DIM(e, 0) - 1;
    /* long double edges beyond double (kedges_long_double), for input that a double holds */
    const int wide = PyArray_TYPE(e) == NPY_LONGDOUBLE && LDBL_MANT_DIG > DBL_MANT_DIG;
    if (wide && !gs_dtype_is_float(t) && gs_dtype_size(t) > 4) {
        PyErr_Format(PyExc_TypeError,
                     "histogram: bin edges of dtype %R with 64-bit integer input are not "
                     "supported (NumPy compares them in long double)",
                     (PyObject *)PyArray_DESCR(e));
        return -1;
    }
    if (uniform) {
        const int etype = PyArray_TYPE(e);
        if (etype == NPY_FLOAT32 || (etype == NPY_HALF && s->half)) {
            et = GS_FLOAT32; /* float16 edges of float16 values: float32, exactly */
        } else if (etype == NPY_FLOAT64 || etype == NPY_LONGDOUBLE) {
            et = GS_FLOAT64;
        } else {
            PyErr_Format(PyExc_TypeError,
                         "histogram: equal-width bin edges of dtype %R are not supported "
                         "(NumPy chose them from the range's and the input's types; float32 "
                         "and float64 are)",
                         (PyObject *)PyArray_DESCR(e));
            return -1;
        }
        d->mode = GS_HIST_UNIFORM;
        if (outer_edges(s, given_range) < 0)
            return -1;
        if (s->half && s->first != NULL ? keep_bounds_half(s->first, s->last, d) < 0
                                        : keep_bounds(t, s->first, s->last, d) < 0)
            return -1;
    } else {
        in_descr = s->half ? PyArray_DescrFromType(NPY_HALF) : gs_descr(t);
        if (in_descr == NULL)
            return -1;
        common = PyArray_PromoteTypes(in_descr, PyArray_DESCR(e));
        Py_DECREF(in_descr);
        if (common == NULL)
            return -1;
        int rc = search_type(common, &et);
        Py_DECREF(common);
        if (rc < 0)
            return -1;
        d->mode = GS_HIST_SEARCH;
    }
    d->edge_type = et;
    if (wide && et == GS_FLOAT64) {
        s->kedges = kedges_long_double(e, !uniform);
    } else {
        PyArray_Descr *edescr = gs_descr(et);
        if (edescr == NULL)
            return -1;
        s->kedges = (PyArrayObject *)PyArray_FromAny(
            s->edges, edescr, 1, 1, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL);
    }
    if (s->kedges == NULL)
        return -1;
    if (uniform) {
        uniform_setup(PyArray_DATA(s->kedges), d->nbins, d);
        d->first = et == GS_FLOAT32 ? ((const float *)PyArray_DATA(s->kedges))[0]
                                    : ((const double *)PyArray_DATA(s->kedges))[0];
        d->first_f = (float)d->first;
        d->scale_f = (float)d->scale;
        d->fast_lo_f = (float)d->fast_lo;
        d->fast_hi_f = (float)d->fast_hi;
        d->lo_f = (float)d->lo.f; /* float32 input: float32 values */
        d->hi_f = (float)d->hi.f;
    }
    /* 1-byte input: a table of the 256 values' bins replaces the arithmetic. */
    if (make_table(d, t, PyArray_DATA(s->kedges), &s->table, s->from_bool) < 0)
        return -1;
    d->edges = PyArray_DATA(s->table != NULL ? s->table : s->kedges); /* host memory */
    return 0;
}

void gs_hist_bins_release(gs_hist_bins *b)
{
    Py_CLEAR(b->edges);
    Py_CLEAR(b->kedges);
    Py_CLEAR(b->table);
    Py_CLEAR(b->first);
    Py_CLEAR(b->last);
}

void gs_hist_value_of_bits(gs_dtype t, uint64_t bits, gs_hist_bound *b)
{
    bound_of_key(t, key_of_bits(t, bits), b);
}

/* ---- The settled bins of repeated calls ------------------------------------------------------ */

#define GS_HIST_CACHE 8

static struct {
    int used;
    gs_hist_key key;
    gs_hist_bins bins; /* edges, kedges, table, first, last (references) */
    gs_hist_desc d;    /* the settled fields */
} bins_cache[GS_HIST_CACHE];
static int bins_cache_next;

/* A range bound as a key part: an exact int (fitting 64 bits) or float. */
static int bound_key(PyObject *v, char *kind, int64_t *i, double *f)
{
    int overflow = 0;

    if (PyFloat_CheckExact(v)) {
        *kind = 'f';
        *f = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    if (!PyLong_CheckExact(v))
        return 0;
    *i = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (*i == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *kind = 'i';
    return 1;
}

int gs_hist_key_of(gs_dtype t, PyObject *bins, PyObject *range, gs_hist_key *key)
{
    int overflow = 0;

    memset(key, 0, sizeof(*key));
    key->t = t;
    if (!PyLong_CheckExact(bins) || !(PyTuple_CheckExact(range) || PyList_CheckExact(range)) ||
        PySequence_Fast_GET_SIZE(range) != 2)
        return 0;
    key->nbins = PyLong_AsLongLongAndOverflow(bins, &overflow);
    if (overflow || (key->nbins == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return key->nbins >= 1 &&
           bound_key(PySequence_Fast_GET_ITEM(range, 0), &key->lo_kind, &key->lo_i, &key->lo_f) &&
           bound_key(PySequence_Fast_GET_ITEM(range, 1), &key->hi_kind, &key->hi_i, &key->hi_f);
}

/* Two keys are one when every part is equal, floats bit for bit (-0.0 is not 0.0: NumPy's edges
 * keep the sign). */
static int same_key(const gs_hist_key *a, const gs_hist_key *b)
{
    return a->t == b->t && a->half == b->half && a->from_bool == b->from_bool &&
           a->nbins == b->nbins && a->lo_kind == b->lo_kind && a->hi_kind == b->hi_kind &&
           a->lo_i == b->lo_i && a->hi_i == b->hi_i &&
           memcmp(&a->lo_f, &b->lo_f, sizeof(double)) == 0 &&
           memcmp(&a->hi_f, &b->hi_f, sizeof(double)) == 0;
}

/* d's fields that gs_hist_plan_bins settles, from `from`. */
static void settled_fields(gs_hist_desc *d, const gs_hist_desc *from)
{
    d->nbins = from->nbins;
    d->mode = from->mode;
    d->edge_type = from->edge_type;
    d->edges = from->edges;
    d->lo = from->lo;
    d->hi = from->hi;
    d->first = from->first;
    d->scale = from->scale;
    d->fast_lo = from->fast_lo;
    d->fast_hi = from->fast_hi;
    d->first_f = from->first_f;
    d->scale_f = from->scale_f;
    d->fast_lo_f = from->fast_lo_f;
    d->fast_hi_f = from->fast_hi_f;
    d->lo_f = from->lo_f;
    d->hi_f = from->hi_f;
}

int gs_hist_bins_cached(const gs_hist_key *key, gs_hist_bins *b, gs_hist_desc *d)
{
    for (int i = 0; i < GS_HIST_CACHE; i++) {
        if (!bins_cache[i].used || !same_key(&bins_cache[i].key, key))
            continue;
        /* The edges are the caller's result: a copy, as NumPy makes new ones each call. */
        if ((b->edges = PyArray_NewCopy((PyArrayObject *)bins_cache[i].bins.edges, NPY_CORDER)) ==
            NULL)
            return -1;
        b->kedges = (PyArrayObject *)Py_XNewRef((PyObject *)bins_cache[i].bins.kedges);
        b->table = (PyArrayObject *)Py_XNewRef((PyObject *)bins_cache[i].bins.table);
        b->first = Py_XNewRef(bins_cache[i].bins.first);
        b->last = Py_XNewRef(bins_cache[i].bins.last);
        settled_fields(d, &bins_cache[i].d); /* d->edges: data that b now holds too */
        return 1;
    }
    return 0;
}

void gs_hist_bins_keep(const gs_hist_key *key, const gs_hist_bins *b, const gs_hist_desc *d)
{
    const int i = bins_cache_next;
    /* Private copies: b->edges is the caller's result, and b->kedges may be that very array
     * (NumPy's edges already in the type the bins are found in), which its owner may change. */
    PyObject *edges = PyArray_NewCopy((PyArrayObject *)b->edges, NPY_CORDER);
    PyArrayObject *kedges = (PyArrayObject *)PyArray_NewCopy(b->kedges, NPY_CORDER);

    if (edges == NULL || kedges == NULL) {
        Py_XDECREF(edges);
        Py_XDECREF(kedges);
        PyErr_Clear();
        return;
    }
    bins_cache_next = (i + 1) % GS_HIST_CACHE;
    gs_hist_bins_release(&bins_cache[i].bins);
    bins_cache[i].used = 1;
    bins_cache[i].key = *key;
    bins_cache[i].bins.edges = edges;
    bins_cache[i].bins.kedges = kedges;
    bins_cache[i].bins.table = (PyArrayObject *)Py_XNewRef((PyObject *)b->table); /* ours alone */
    bins_cache[i].bins.first = Py_XNewRef(b->first);
    bins_cache[i].bins.last = Py_XNewRef(b->last);
    bins_cache[i].d = *d;
    bins_cache[i].d.edges = PyArray_DATA(b->table != NULL ? b->table : kedges);
}
