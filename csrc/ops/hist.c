/*
 * ops/hist.c - gpuscan.histogram() and gpuscan.bincount(): argument settling, bin edges, the runs
 * on either backend.
 *
 * Level: host layer.  As np.histogram and np.bincount, with NumPy's results and errors:
 *   edges     computed by NumPy itself (np.histogram_bin_edges), so that they are NumPy's in
 *             every NumPy version; for a device input the autodetected range is the device's
 *             min and max (the reduction of ops/reduce.c, gs_cuda_reduce) and NumPy sees only those
 *             two values (a string estimator needs the data: it is copied to the host);
 *   keeping   which values an explicit range keeps is NumPy's comparison of the input dtype
 *             with the outer edges, found once per call by asking NumPy about a few values of
 *             that dtype around the bounds (keep_bounds), so that every value on, or one ulp
 *             beside, a bound is kept or dropped as NumPy keeps or drops it;
 *   bins      equal-width bins: arithmetic checked against the edges near an edge
 * (gpuscan/hist_bin.h, with its tolerance settled here by uniform_setup); array edges: binary
 * search in the type NumPy's searchsorted compares in; 1-byte input: a table of its 256 values'
 * bins made by those rules (make_table); bincount: the value itself; backends  the CPU backend
 * counts NumPy buffers (cpu/hist.c); CUDA counts device memory (dispatch/hist.cu): device inputs in
 * place, NumPy inputs uploaded and the result brought back.  Device inputs give a DeviceArray of
 * counts (the edges are NumPy).
 */
#include "gpuscan.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "cpu/cpu.h"
#include "gpuscan/config.h"
#include "gpuscan/hist_bin.h"

const char gs_histogram_doc[] =
    "histogram(a, bins=10, range=None, density=None, weights=None, *, method='auto')\n"
    "--\n\n"
    "Compute the histogram of the flattened array, like ``np.histogram``.\n\n"
    "Parameters\n"
    "----------\n"
    "a : array_like or device array\n"
    "    bool, integer or float values (bool is counted as uint8, with NumPy's\n"
    "    RuntimeWarning).  Device arrays (``__cuda_array_interface__``, ``__dlpack__``,\n"
    "    ``DeviceArray``) are used in place.\n"
    "bins : int, sequence of scalars or str, optional\n"
    "    The number of equal-width bins (10), the increasing bin edges, or the name of an\n"
    "    estimator of ``np.histogram_bin_edges`` ('auto', 'fd', 'sturges', ...; for a device\n"
    "    input the data is copied to the host for it).\n"
    "range : (float, float), optional\n"
    "    The outer edges of equal-width bins; default (a.min(), a.max()), found on the device\n"
    "    for a device input.  Values outside it are ignored.\n"
    "density : bool, optional\n"
    "    If True, return ``counts / bin_width / counts.sum()`` as NumPy does.\n"
    "weights : array_like or device array, optional\n"
    "    One weight per value of ``a`` (same shape); each value adds its weight to its bin.\n"
    "    On the same side (host or device) as ``a``.\n"
    "method : {'auto', 'global', 'shared'}, optional\n"
    "    How the CUDA backend counts: 'global' takes one atomic add in device memory per\n"
    "    value; 'shared' counts into per-block histograms in shared memory (the bin range split\n"
    "    across blocks when it does not fit one) and merges them; 'auto' picks the fastest\n"
    "    for the bin count.  The CPU backend accepts all three (per-thread histograms, merged)\n"
    "    and every method gives the same counts.\n\n"
    "Returns\n"
    "-------\n"
    "hist : numpy.ndarray or DeviceArray\n"
    "    int64 counts, or the weights' dtype with weights, or float64 with density; a\n"
    "    DeviceArray when ``a`` is a device array.\n"
    "bin_edges : numpy.ndarray\n"
    "    The edges, always a NumPy array, equal to ``np.histogram``'s: ``len(hist) + 1``\n"
    "    values.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    NumPy's: bins < 1, decreasing edges, a range whose first value exceeds the last, a\n"
    "    non-finite range (given or autodetected), too many bins for the range, weights of\n"
    "    another shape, an unknown estimator; also an unknown method.\n"
    "TypeError\n"
    "    Unsupported dtypes (complex, object, str, ...), bins that are neither an int, a\n"
    "    sequence nor a string, weights with an estimator, a device array on the CPU backend,\n"
    "    ``a`` and ``weights`` on different sides.\n"
    "GpuscanError\n"
    "    A CUDA call failed (the message names it); MemoryError when device memory runs out.\n\n"
    "Notes\n"
    "-----\n"
    "Counts equal NumPy's exactly, including values on an edge or one ulp beside it and values\n"
    "equal to the range's maximum (the last bin is closed); NaN is never counted.  Integer\n"
    "weights are summed exactly (in int64, wrapping, then cast; NumPy sums each block of 65536\n"
    "values in float64, which agrees while those sums stay below 2**53).  Float weights are\n"
    "summed in float64 and cast to their dtype; with the 'shared' and 'global' CUDA methods the\n"
    "order of the additions varies from run to run, so the last bits of a weighted float sum\n"
    "may too (counts never do).\n\n"
    "Examples\n"
    "--------\n"
    ">>> import numpy as np, gpuscan\n"
    ">>> gpuscan.histogram([1, 2, 1], bins=[0, 1, 2, 3])\n"
    "(array([0, 2, 1]), array([0, 1, 2, 3]))\n"
    ">>> gpuscan.histogram(np.arange(4), bins=np.arange(5), density=True)\n"
    "(array([0.25, 0.25, 0.25, 0.25]), array([0, 1, 2, 3, 4]))\n";

const char gs_bincount_doc[] =
    "bincount(x, /, weights=None, minlength=0)\n"
    "--\n\n"
    "Count the occurrences of each value of a 1-D array of non-negative integers, like\n"
    "``np.bincount``.\n\n"
    "Parameters\n"
    "----------\n"
    "x : array_like or device array, 1-D\n"
    "    bool or integers (uint64 values of 2**63 and more count as negative, as NumPy's\n"
    "    intp cast makes them); floats: TypeError.\n"
    "weights : array_like or device array, optional\n"
    "    One weight per value (same length), summed in float64.\n"
    "minlength : int, optional\n"
    "    The least number of bins of the result.\n\n"
    "Returns\n"
    "-------\n"
    "numpy.ndarray or DeviceArray\n"
    "    ``max(x.max() + 1, minlength)`` values: int64 counts, or float64 sums of the weights;\n"
    "    a DeviceArray when ``x`` is a device array (its length and the check for negative\n"
    "    values are found on the device).\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    NumPy's: a negative value, a negative minlength, weights of another length, ``x`` not\n"
    "    1-D.\n"
    "TypeError\n"
    "    NumPy's: values that do not cast safely to int64, minlength=None.\n\n"
    "Examples\n"
    "--------\n"
    ">>> import gpuscan\n"
    ">>> gpuscan.bincount([0, 1, 1, 3, 2, 1, 7])\n"
    "array([1, 3, 1, 1, 0, 0, 0, 1])\n"
    ">>> gpuscan.bincount([0, 1, 1, 2], weights=[0.5, 1.0, 0.25, 2.0], minlength=5)\n"
    "array([0.5 , 1.25, 2.  , 0.  , 0.  ])\n";

/* ---- NumPy called from C -------------------------------------------------------------------- */

/* numpy.<name>(*args, **kwargs) (args a tuple, kwargs a dict or NULL); a new reference. */
static PyObject *np_call(const char *name, PyObject *args, PyObject *kwargs)
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

/* The kind letter the histogram reads values as: bool is unsigned. */
static char read_kind(gs_dtype t)
{
    char k = gs_dtype_kind(t);
    return k == 'b' ? 'u' : k;
}

static PyObject *dtype_repr(gs_dtype t)
{
    PyArray_Descr *descr = gs_descr(t);
    PyObject *r = descr != NULL ? PyObject_Repr((PyObject *)descr) : NULL;
    Py_XDECREF(descr);
    return r;
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
    if (read_kind(t) == 'u')
        return bits;
    if (read_kind(t) == 'i')
        return (bits ^ sign) & key_mask(t);
    return (bits & sign) ? ~bits & key_mask(t) : bits | sign;
}

static uint64_t bits_of_key(gs_dtype t, uint64_t key)
{
    const uint64_t sign = (uint64_t)1 << (key_bits(t) - 1);
    if (read_kind(t) == 'u')
        return key;
    if (read_kind(t) == 'i')
        return (key ^ sign) & key_mask(t);
    return (key & sign) ? key & ~sign : ~key & key_mask(t);
}

/* The smallest and largest keys of t's non-NaN values. */
static void key_range(gs_dtype t, uint64_t *kmin, uint64_t *kmax)
{
    if (read_kind(t) != 'f') {
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
    if (read_kind(t) == 'u') {
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
    } else if (read_kind(t) == 'i') {
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

/* ---- Equal-width bins: the arithmetic's tolerance (gpuscan/hist_bin.h)
 * ------------------------------- */

/*
 * The last call's edges, kept so that a repeated histogram (the same bins and range, the usual
 * case) neither recomputes the tolerance over every edge (setup_cache) nor uploads its edges or
 * table again (dev_cache): an upload from pageable memory waits for the work already enqueued,
 * which would serialise the host's preparation of a call with the device's work on the
 * previous one.  Touched with the GIL held; a device copy replaced while a kernel may still
 * read it is freed stream-ordered, after that kernel.
 */
static struct setup_cache {
    void *host; /* a copy of the edges (NULL: empty) */
    size_t bytes;
    gs_dtype type;
    double scale, fast_lo, fast_hi;
} setup_cache;

#ifdef GS_HAVE_CUDA
static struct dev_cache {
    void *host; /* a copy of what `dev` holds (NULL: empty) */
    size_t bytes;
    void *dev;
} dev_cache;
#endif

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
 * than an int32 holds.
 */
static int make_table(gs_hist_desc *d, gs_dtype t, const void *edges, PyArrayObject **table)
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
    for (int b = 0; b < 256; b++)
        bins[b] = (int32_t)gs_hist_bin(d, kind, d->mode, d->edge_type, (int8_t)(uint8_t)b,
                                       (uint64_t)b, 0.0);
    d->mode = GS_HIST_TABLE;
    d->edge_type = GS_INT32;
    d->edges = NULL;
    return 0;
}

/* ---- Operands as the backend reads them ----------------------------------------------------- */

/* One input (a, weights, x) as the backend reads it: `ptr` to n contiguous values of `type`
 * (host memory on the CPU backend, device memory on CUDA). */
typedef struct hist_input {
    gs_operand op;
    gs_dtype type;       /* what the backend reads (bool input of histogram: uint8) */
    PyArrayObject *host; /* host operand: a contiguous, native array of `type` */
    void *dev_tmp;       /* CUDA: an upload or a packed copy, freed at the end */
    const void *ptr;
} hist_input;

static void input_release(hist_input *in)
{
#ifdef GS_HAVE_CUDA
    gs_cuda_free(in->dev_tmp);
#endif
    in->dev_tmp = NULL;
    Py_CLEAR(in->host);
    gs_operand_release(&in->op);
}

/* Make in->ptr: for the CPU backend a NumPy buffer; for CUDA device memory (an upload of a
 * host operand, a device operand in place or packed when it is strided). */
static int input_place(hist_input *in, gs_backend backend, int64_t n)
{
    PyArray_Descr *descr;

    if (!in->op.on_device) {
        if ((descr = gs_descr(in->type)) == NULL)
            return -1;
        in->host = (PyArrayObject *)PyArray_FromAny(
            (PyObject *)in->op.host, descr, 0, 0, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL);
        if (in->host == NULL)
            return -1;
        in->ptr = PyArray_DATA(in->host);
        if (backend == GS_BACKEND_CPU)
            return 0;
    }
#ifdef GS_HAVE_CUDA
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    size_t bytes = (size_t)n * gs_dtype_size(in->type);
    GS_CUDA_CHECK(fail, gs_cuda_enter());
    if (!in->op.on_device) {
        GS_CUDA_ALLOC(fail, in->dev_tmp, bytes);
        if (gs_cuda_upload(in->dev_tmp, in->ptr, bytes) < 0)
            return -1;
        in->ptr = in->dev_tmp;
        return 0;
    }
    gs_devview view = in->op.dev;
    if (gs_dtype_size(view.dtype) == gs_dtype_size(in->type) &&
        read_kind(view.dtype) == read_kind(in->type))
        view.dtype = in->type; /* bool read as uint8: the same bits */
    if (gs_devview_is_c_contig(&view) && view.dtype == in->type) {
        in->ptr = view.ptr;
        return 0;
    }
    gs_devview packed = view;
    GS_CUDA_ALLOC(fail, in->dev_tmp, bytes);
    packed.ptr = in->dev_tmp;
    packed.dtype = in->type;
    gs_devview_set_c_strides(&packed);
    GS_CUDA_CHECK(fail, gs_cuda_copy_view(&view, &packed));
    in->ptr = in->dev_tmp;
    return 0;
error:
    return gs_cuda_raise(&fail);
#else
    (void)n;
    PyErr_SetString(PyExc_SystemError, "gpuscan: device array in a CPU-only build");
    return -1;
#endif
}

static int64_t shape_size(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

/* ---- Running: the backend, the result ------------------------------------------------------- */

#ifdef GS_HAVE_CUDA
/* Enqueue the histogram (no GIL needed). */
static cudaError_t hist_enqueue(const gs_hist_desc *d, gs_cuda_fail *fail)
{
    GS_CUDA_CHECK(*fail, gs_cuda_hist(d, gs_cuda_stream));
    if (gs_cuda_debug_sync)
        GS_CUDA_CHECK(*fail, cudaStreamSynchronize(gs_cuda_stream));
error:
    return fail->err;
}
#endif

/*
 * Run d (its `in`, `weights` and `edges` already where the backend reads them; `host_edges`
 * the edges in host memory, uploaded here for CUDA).  Returns the accumulators: a NumPy array,
 * or a DeviceArray when `on_device`.
 */
static PyObject *hist_run(gs_backend backend, gs_hist_desc *d, PyArrayObject *host_edges,
                          int on_device)
{
    npy_intp dims = (npy_intp)d->nbins;
    gs_dtype acc = gs_hist_acc_type(d);
    PyArrayObject *res = NULL;
    int rc;

    if (!on_device) {
        PyArray_Descr *descr = gs_descr(acc);
        if (descr == NULL || (res = (PyArrayObject *)PyArray_Empty(1, &dims, descr, 0)) == NULL)
            return NULL;
    }
    if (host_edges != NULL)
        d->edges = PyArray_DATA(host_edges);
    if (backend == GS_BACKEND_CPU) {
        d->out = PyArray_DATA(res);
        Py_BEGIN_ALLOW_THREADS rc = gs_cpu_hist(d);
        Py_END_ALLOW_THREADS if (rc < 0)
        {
            Py_DECREF(res);
            if (rc == -ENOMEM)
                return PyErr_NoMemory();
            PyErr_Format(PyExc_RuntimeError, "the CPU backend failed: %s", strerror(-rc));
            return NULL;
        }
        if (PyErr_CheckSignals() < 0) {
            Py_DECREF(res);
            return NULL;
        }
        return (PyObject *)res;
    }
#ifdef GS_HAVE_CUDA
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_DeviceArray *dres = NULL;
    void *dev_edges = NULL, *dev_out = NULL;
    size_t edge_bytes = host_edges != NULL ? (size_t)PyArray_NBYTES(host_edges) : 0;
    size_t out_bytes = (size_t)d->nbins * 8;
    PyObject *ret = NULL;
    int64_t shape = d->nbins;

    GS_CUDA_CHECK(fail, gs_cuda_enter());
    if (on_device) {
        if ((dres = gs_devarray_new(1, &shape, acc)) == NULL)
            goto error;
        dev_out = dres->data;
    } else {
        GS_CUDA_ALLOC(fail, dev_out, out_bytes);
    }
    if (edge_bytes > 0 && dev_cache.host != NULL && dev_cache.bytes == edge_bytes &&
        memcmp(dev_cache.host, PyArray_DATA(host_edges), edge_bytes) == 0) {
        d->edges = dev_cache.dev; /* the same as the last call's: already on the device */
    } else if (edge_bytes > 0) {
        void *copy;
        GS_CUDA_ALLOC(fail, dev_edges, edge_bytes);
        if (gs_cuda_upload(dev_edges, PyArray_DATA(host_edges), edge_bytes) < 0)
            goto error;
        d->edges = dev_edges;
        if ((copy = malloc(edge_bytes)) != NULL) { /* the cache owns them from now on */
            memcpy(copy, PyArray_DATA(host_edges), edge_bytes);
            free(dev_cache.host);
            gs_cuda_free(dev_cache.dev); /* stream-ordered: after any kernel reading it */
            dev_cache.host = copy;
            dev_cache.bytes = edge_bytes;
            dev_cache.dev = dev_edges;
            dev_edges = NULL;
        }
    }
    d->out = dev_out;
    Py_BEGIN_ALLOW_THREADS(void) hist_enqueue(d, &fail);
    Py_END_ALLOW_THREADS if (fail.err != cudaSuccess) goto error;
    if (on_device) {
        ret = (PyObject *)dres;
        dres = NULL;
    } else if (gs_cuda_download(PyArray_DATA(res), dev_out, out_bytes) == 0) {
        ret = (PyObject *)res;
        res = NULL;
    }
error:
    if (fail.err != cudaSuccess)
        gs_cuda_raise(&fail);
    gs_cuda_free(dev_edges);
    if (!on_device)
        gs_cuda_free(dev_out);
    Py_XDECREF(dres);
    Py_XDECREF(res);
    if (ret != NULL && PyErr_CheckSignals() < 0)
        Py_CLEAR(ret);
    return ret;
#else
    Py_XDECREF(res);
    PyErr_SetString(PyExc_SystemError, "gpuscan: CUDA backend in a CPU-only build");
    return NULL;
#endif
}

/* res.astype(t), on the host or on the device (C casts: integers wrap, bool is nonzero). */
static PyObject *cast_result(PyObject *res, gs_dtype t)
{
    if (!gs_DeviceArray_Check(res)) {
        PyArray_Descr *descr = gs_descr(t);
        return descr != NULL ? PyArray_CastToType((PyArrayObject *)res, descr, 0) : NULL;
    }
#ifdef GS_HAVE_CUDA
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    gs_devview src, dst;
    gs_DeviceArray *out = gs_devarray_new(1, ((gs_DeviceArray *)res)->shape, t);
    if (out == NULL)
        return NULL;
    gs_devarray_view((gs_DeviceArray *)res, &src);
    gs_devarray_view(out, &dst);
    GS_CUDA_CHECK(fail, gs_cuda_copy_view(&src, &dst));
    return (PyObject *)out;
error:
    Py_DECREF(out);
    gs_cuda_raise(&fail);
    return NULL;
#else
    PyErr_SetString(PyExc_SystemError, "gpuscan: device array in a CPU-only build");
    return NULL;
#endif
}

/* NumPy's density: n / np.array(np.diff(edges), float) / n.sum(), computed by NumPy on the host
 * (a device result is brought back and the density sent to the device). */
static PyObject *density_of(PyObject *res, PyObject *edges)
{
    PyObject *n = NULL, *diff = NULL, *db = NULL, *q = NULL, *sum = NULL, *ret = NULL, *args;
    int on_device = gs_DeviceArray_Check(res);

    n = on_device ? PyObject_CallMethod(res, "get", NULL) : Py_NewRef(res);
    if (n == NULL)
        goto done;
    if ((args = PyTuple_Pack(1, edges)) == NULL)
        goto done;
    diff = np_call("diff", args, NULL);
    Py_DECREF(args);
    if (diff == NULL)
        goto done;
    db = PyArray_FROM_OTF(diff, NPY_DOUBLE, 0);
    if (db == NULL || (q = PyNumber_TrueDivide(n, db)) == NULL ||
        (sum = PyObject_CallMethod(n, "sum", NULL)) == NULL)
        goto done;
    ret = PyNumber_TrueDivide(q, sum);
    if (ret != NULL && on_device)
        Py_SETREF(ret, gs_to_device(NULL, ret));
done:
    Py_XDECREF(n);
    Py_XDECREF(diff);
    Py_XDECREF(db);
    Py_XDECREF(q);
    Py_XDECREF(sum);
    return ret;
}

/* ---- histogram() ---------------------------------------------------------------------------- */

static int parse_method(const char *name, gs_hist_method *m)
{
    if (strcmp(name, "auto") == 0)
        *m = GS_HIST_AUTO;
    else if (strcmp(name, "global") == 0)
        *m = GS_HIST_GLOBAL;
    else if (strcmp(name, "shared") == 0)
        *m = GS_HIST_SHARED;
    else {
        PyErr_Format(PyExc_ValueError, "method must be 'auto', 'global' or 'shared', got '%s'",
                     name);
        return -1;
    }
    return 0;
}

/* The bits of the min and the max of n values of t where the backend reads them (zero-extended
 * into out[0], out[1]), reduced by the backend (ops/reduce.c's reduction). */
static int backend_min_max(gs_backend backend, const void *ptr, int64_t n, gs_dtype t,
                           uint64_t out[2])
{
    gs_reduce_desc r;
    int rc = 0;

    out[0] = out[1] = 0;
    memset(&r, 0, sizeof(r));
    r.in = ptr;
    r.rows = 1;
    r.row_len = n;
    r.in_type = r.out_type = t;
    if (backend == GS_BACKEND_CPU) {
        for (int k = 0; k < 2 && rc == 0; k++) {
            r.out = (char *)out + k * 8; /* little-endian: the low bytes */
            r.op = k == 0 ? GS_OP_MIN : GS_OP_MAX;
            Py_BEGIN_ALLOW_THREADS rc = gs_cpu_reduce(&r);
            Py_END_ALLOW_THREADS
        }
        if (rc < 0) {
            PyErr_NoMemory();
            return -1;
        }
        return 0;
    }
#ifdef GS_HAVE_CUDA
    gs_cuda_fail fail = { cudaSuccess, NULL, 0 };
    size_t sz = gs_dtype_size(t);
    void *dev = NULL;
    char host[16];

    GS_CUDA_CHECK(fail, gs_cuda_enter());
    GS_CUDA_ALLOC(fail, dev, 2 * sz);
    for (int k = 0; k < 2; k++) {
        r.out = (char *)dev + k * sz;
        r.op = k == 0 ? GS_OP_MIN : GS_OP_MAX;
        Py_BEGIN_ALLOW_THREADS(void) gs_cuda_enqueue(NULL, &r, &fail);
        Py_END_ALLOW_THREADS if (fail.err != cudaSuccess) goto error;
    }
    rc = gs_cuda_download(host, dev, 2 * sz);
    if (rc == 0) {
        memcpy(&out[0], host, sz);
        memcpy(&out[1], host + sz, sz);
    }
error:
    if (fail.err != cudaSuccess)
        rc = gs_cuda_raise(&fail);
    gs_cuda_free(dev);
    return rc;
#else
    PyErr_SetString(PyExc_SystemError, "gpuscan: CUDA backend in a CPU-only build");
    return -1;
#endif
}

/* Everything of one histogram call, released by hist_state_release. */
typedef struct hist_state {
    hist_input a, w;
    PyObject *range;       /* the range NumPy sees (a new reference) */
    PyObject *a_np;        /* the array NumPy's edge functions see */
    PyObject *edges;       /* the edges returned */
    PyArrayObject *kedges; /* the edges as the backend reads them */
    PyArrayObject *table;  /* or, for 1-byte input, the bins of the 256 values */
    PyObject *first, *last;
} hist_state;

static void hist_state_release(hist_state *s)
{
    input_release(&s->a);
    input_release(&s->w);
    Py_CLEAR(s->range);
    Py_CLEAR(s->a_np);
    Py_CLEAR(s->edges);
    Py_CLEAR(s->kedges);
    Py_CLEAR(s->table);
    Py_CLEAR(s->first);
    Py_CLEAR(s->last);
}

/* The array NumPy's edge function sees: the host input itself, or for a device input an empty
 * array of its dtype (int and array bins need no data), or the data copied back (estimators),
 * and for device input with no range and a number of bins (need_range), the device's (min,
 * max) as the range (array edges need none: NaN in the data is then fine, as in NumPy). */
static int numpy_side_device(hist_state *s, gs_backend backend, int64_t n, int is_str,
                             int need_range, PyArray_Descr *descr);

static int numpy_side(hist_state *s, gs_backend backend, int64_t n, int is_str, int need_range)
{
    PyArray_Descr *descr = gs_descr(s->a.type);
    npy_intp dims = is_str ? (npy_intp)n : 0;

    if (descr == NULL)
        return -1;
    if (!s->a.op.on_device) {
        Py_DECREF(descr);
        s->a_np = Py_NewRef((PyObject *)s->a.host);
        return 0;
    }
    Py_INCREF(descr); /* PyArray_Empty takes one reference; the scalars below use it too */
    s->a_np = PyArray_Empty(1, &dims, descr, 0);
    int rc = numpy_side_device(s, backend, n, is_str, need_range, descr);
    Py_DECREF(descr);
    return rc;
}

static int numpy_side_device(hist_state *s, gs_backend backend, int64_t n, int is_str,
                             int need_range, PyArray_Descr *descr)
{
    if (s->a_np == NULL)
        return -1;
#ifdef GS_HAVE_CUDA
    if (is_str)
        return gs_cuda_download(PyArray_DATA((PyArrayObject *)s->a_np), s->a.ptr,
                                (size_t)PyArray_NBYTES((PyArrayObject *)s->a_np));
    if (s->range == Py_None && need_range && n > 0) {
        uint64_t bits[2];
        PyObject *mm;
        if (backend_min_max(backend, s->a.ptr, n, s->a.type, bits) < 0)
            return -1;
        mm = Py_BuildValue("(NN)", PyArray_Scalar(&bits[0], descr, NULL),
                           PyArray_Scalar(&bits[1], descr, NULL));
        if (mm == NULL)
            return -1;
        if (gs_dtype_is_float(s->a.type)) {
            PyObject *mn = PyTuple_GET_ITEM(mm, 0), *mx = PyTuple_GET_ITEM(mm, 1);
            if (!isfinite(PyFloat_AsDouble(mn)) || !isfinite(PyFloat_AsDouble(mx))) {
                PyErr_Format(PyExc_ValueError, "autodetected range of [%S, %S] is not finite", mn,
                             mx);
                Py_DECREF(mm);
                return -1;
            }
        }
        Py_SETREF(s->range, mm);
    }
#endif
    return 0;
}

/* The outer edges NumPy keeps values with (_get_outer_edges: an empty range widened by 0.5
 * each way); none when the range was autodetected (every value is then kept). */
static int outer_edges(hist_state *s, PyObject *given_range)
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
        if (PyDataType_ELSIZE(common) == 4 || PyDataType_ELSIZE(common) == 8) {
            *out = PyDataType_ELSIZE(common) == 4 ? GS_FLOAT32 : GS_FLOAT64;
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

/* d's mode, edges and keep bounds from NumPy's edges. */
static int plan_bins(hist_state *s, gs_hist_desc *d, int uniform, PyObject *given_range)
{
    PyArrayObject *e = (PyArrayObject *)s->edges;
    PyArray_Descr *in_descr, *common;
    gs_dtype et;

    if (!PyArray_Check(s->edges) || PyArray_NDIM(e) != 1 || PyArray_DIM(e, 0) < 2) {
        PyErr_SetString(PyExc_ValueError, "histogram: NumPy gave no usable bin edges");
        return -1;
    }
    d->nbins = PyArray_DIM(e, 0) - 1;
    if (uniform) {
        int t = PyArray_TYPE(e);
        if (t != NPY_FLOAT32 && t != NPY_FLOAT64) {
            PyErr_Format(PyExc_TypeError,
                         "histogram: equal-width bin edges of dtype %R are not supported "
                         "(NumPy chose them from the range's and the input's types; float32 "
                         "and float64 are)",
                         (PyObject *)PyArray_DESCR(e));
            return -1;
        }
        et = t == NPY_FLOAT32 ? GS_FLOAT32 : GS_FLOAT64;
        d->mode = GS_HIST_UNIFORM;
        if (outer_edges(s, given_range) < 0 || keep_bounds(s->a.type, s->first, s->last, d) < 0)
            return -1;
    } else {
        if ((in_descr = gs_descr(s->a.type)) == NULL)
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
    PyArray_Descr *edescr = gs_descr(et);
    if (edescr == NULL)
        return -1;
    s->kedges = (PyArrayObject *)PyArray_FromAny(s->edges, edescr, 1, 1,
                                                 NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL);
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
    if (make_table(d, s->a.type, PyArray_DATA(s->kedges), &s->table) < 0)
        return -1;
    return 0;
}

PyObject *gs_histogram(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "a", "bins", "range", "density", "weights", "method", NULL };
    PyObject *a, *bins = NULL, *range = Py_None, *density = Py_None, *weights = Py_None;
    PyObject *res = NULL, *ret = NULL, *bargs = NULL, *bkw = NULL, *zeros_w = NULL;
    const char *method_name = "auto";
    int64_t shape[GS_MAX_NDIM], wshape[GS_MAX_NDIM];
    int ndim, wndim, is_str, uniform, dens;
    gs_dtype in_type;
    gs_backend backend;
    gs_hist_desc d;
    hist_state s;
    int64_t n;

    memset(&s, 0, sizeof(s));
    memset(&d, 0, sizeof(d));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO$s:histogram", kwlist, &a, &bins, &range,
                                     &density, &weights, &method_name))
        return NULL;
    if (parse_method(method_name, &d.method) < 0 || gs_backend_get(&backend) < 0)
        return NULL;
    s.range = Py_NewRef(range);
    bins = bins != NULL ? Py_NewRef(bins) : PyLong_FromLong(10);
    if (bins == NULL)
        goto finally;

    /* 1. The operands (NumPy: bool counted as uint8, with a warning), weights of a's shape. */
    if (gs_operand_get(a, &s.a.op) < 0 ||
        gs_operand_info(&s.a.op, "input", &in_type, &ndim, shape) < 0)
        goto finally;
    n = shape_size(ndim, shape);
    s.a.type = in_type == GS_BOOL ? GS_UINT8 : in_type;
    if (in_type == GS_BOOL &&
        PyErr_WarnEx(PyExc_RuntimeWarning,
                     "Converting input from bool to <class 'numpy.uint8'> for compatibility.",
                     1) < 0)
        goto finally;
    if (weights != Py_None) {
        if (gs_operand_get(weights, &s.w.op) < 0 ||
            gs_operand_info(&s.w.op, "weights", &s.w.type, &wndim, wshape) < 0)
            goto finally;
        if (wndim != ndim || memcmp(wshape, shape, sizeof(int64_t) * ndim) != 0) {
            PyErr_SetString(PyExc_ValueError, "weights should have the same shape as a.");
            goto finally;
        }
        if (s.w.op.on_device != s.a.op.on_device) {
            PyErr_SetString(PyExc_TypeError,
                            "histogram: a and weights must both be device arrays or both not");
            goto finally;
        }
    }
    if (input_place(&s.a, backend, n) < 0)
        goto finally;

    /* 2. The edges, by NumPy (device input: the device's min and max as the range). */
    is_str = PyUnicode_Check(bins);
    if (is_str) {
        uniform = 1;
    } else {
        PyObject *one = PyTuple_Pack(1, bins), *nd = one ? np_call("ndim", one, NULL) : NULL;
        Py_XDECREF(one);
        if (nd == NULL)
            goto finally;
        uniform = PyLong_AsLong(nd) == 0;
        Py_DECREF(nd);
    }
    if (numpy_side(&s, backend, n, is_str, uniform) < 0)
        goto finally;
    if (is_str && weights != Py_None) {
        /* NumPy's own checks of the estimator name, then its TypeError for weights. */
        zeros_w = PyArray_ZEROS(PyArray_NDIM((PyArrayObject *)s.a_np),
                                PyArray_DIMS((PyArrayObject *)s.a_np), NPY_DOUBLE, 0);
        if (zeros_w == NULL)
            goto finally;
    }
    bargs = PyTuple_Pack(2, s.a_np, bins);
    bkw = Py_BuildValue("{sOsO}", "range", s.range, "weights", zeros_w ? zeros_w : Py_None);
    if (bargs == NULL || bkw == NULL ||
        (s.edges = np_call("histogram_bin_edges", bargs, bkw)) == NULL)
        goto finally;

    /* 3. The bins: mode, edges as the backend reads them, which values are kept. */
    if (plan_bins(&s, &d, uniform, range) < 0)
        goto finally;
    if (weights != Py_None && input_place(&s.w, backend, n) < 0)
        goto finally;

    /* 4. Count (or sum), then the weights' dtype and the density, as NumPy. */
    d.in = s.a.ptr;
    d.n = n;
    d.in_type = s.a.type;
    d.weights = weights != Py_None ? s.w.ptr : NULL;
    d.w_type = s.w.type;
    res = hist_run(backend, &d, s.table != NULL ? s.table : s.kedges, s.a.op.on_device);
    if (res == NULL)
        goto finally;
    /* (An empty input has no weights to read: it counted zeros, int64, as the others.) */
    if (weights != Py_None && s.w.type != (d.weights != NULL ? gs_hist_acc_type(&d) : GS_INT64))
        Py_SETREF(res, cast_result(res, s.w.type));
    if (res == NULL || (dens = PyObject_IsTrue(density)) < 0)
        goto finally;
    if (dens)
        Py_SETREF(res, density_of(res, s.edges));
    if (res == NULL)
        goto finally;
#ifdef GS_HAVE_CUDA
    if ((s.a.op.on_device && gs_cuda_release_foreign(&s.a.op) < 0) ||
        (s.w.op.on_device && gs_cuda_release_foreign(&s.w.op) < 0))
        goto finally;
#endif
    ret = PyTuple_Pack(2, res, s.edges);
finally:
    Py_XDECREF(res);
    Py_XDECREF(bins);
    Py_XDECREF(bargs);
    Py_XDECREF(bkw);
    Py_XDECREF(zeros_w);
    hist_state_release(&s);
    return ret;
}

/* ---- bincount() ----------------------------------------------------------------------------- */

/* NumPy's checks of an array argument of bincount: 1-D, castable to `to` by the 'safe' rule. */
static int bincount_check(PyObject *obj, gs_operand *op, int to_typenum, gs_dtype *t, int64_t *n)
{
    PyArray_Descr *have = NULL, *want;
    int64_t shape[GS_MAX_NDIM];
    int ndim, ok;

    if (gs_operand_info(op, "bincount input", t, &ndim, shape) < 0)
        return -1;
    if (ndim != 1) {
        PyErr_SetString(PyExc_ValueError, ndim == 0 ? "object of too small depth for desired array"
                                                    : "object too deep for desired array");
        return -1;
    }
    *n = shape[0];
    have = gs_descr(*t);
    want = PyArray_DescrFromType(to_typenum);
    if (have == NULL || want == NULL) {
        Py_XDECREF(have);
        Py_XDECREF(want);
        return -1;
    }
    /* NumPy 2 takes uint64 too (values from 2**63 up then read as negative). */
    ok = *t == GS_UINT64 || PyArray_CanCastTypeTo(have, want, NPY_SAFE_CASTING);
    if (!ok)
        PyErr_Format(PyExc_TypeError,
                     "Cannot cast array data from %R to %R according to the rule 'safe'",
                     (PyObject *)have, (PyObject *)want);
    Py_DECREF(have);
    Py_DECREF(want);
    (void)obj;
    return ok ? 0 : -1;
}

/* An argument of bincount as an operand: arrays (host or device) as they are, anything else
 * through NumPy's own conversion (PyArray_ContiguousFromAny, as np.bincount), so its errors are
 * NumPy's. */
static int bincount_operand(PyObject *obj, int typenum, gs_operand *op)
{
    int dev = gs_is_device_object(obj);
    PyObject *arr;
    int rc;

    if (dev < 0)
        return -1;
    if (dev || PyArray_Check(obj)) {
        if (PyArray_Check(obj) && PyArray_TYPE((PyArrayObject *)obj) != NPY_BOOL &&
            gs_dtype_from_kind(PyArray_DESCR((PyArrayObject *)obj)->kind,
                               (int)PyArray_ITEMSIZE((PyArrayObject *)obj), &(gs_dtype){ 0 }) < 0) {
            /* Complex, object, ...: NumPy's cast error. */
            PyArray_Descr *want = PyArray_DescrFromType(typenum);
            PyErr_Format(PyExc_TypeError,
                         "Cannot cast array data from %R to %R according to the rule 'safe'",
                         (PyObject *)PyArray_DESCR((PyArrayObject *)obj), (PyObject *)want);
            Py_XDECREF(want);
            return -1;
        }
        return gs_operand_get(obj, op);
    }
    arr = PyArray_ContiguousFromAny(obj, typenum, 1, 1);
    if (arr == NULL)
        return -1;
    rc = gs_operand_get(arr, op);
    Py_DECREF(arr);
    return rc;
}

PyObject *gs_bincount(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "", "weights", "minlength", NULL }; /* x positional-only */
    PyObject *x, *weights = Py_None, *mlen = NULL, *ret = NULL;
    hist_input in, w;
    gs_backend backend;
    gs_hist_desc d;
    int64_t n = 0, wn = 0, mn = 0, mx = -1;
    uint64_t bits[2];
    npy_intp minlength = 0;
    gs_dtype wt;

    memset(&in, 0, sizeof(in));
    memset(&w, 0, sizeof(w));
    memset(&d, 0, sizeof(d));
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:bincount", kwlist, &x, &weights, &mlen))
        return NULL;
    if (mlen == Py_None) {
        PyErr_SetString(PyExc_TypeError, "use 0 instead of None for minlength");
        return NULL;
    }
    if (mlen != NULL) {
        minlength = PyArray_PyIntAsIntp(mlen);
        if (minlength == -1 && PyErr_Occurred())
            return NULL;
    }
    if (minlength < 0) {
        PyErr_SetString(PyExc_ValueError, "'minlength' must not be negative");
        return NULL;
    }
    if (gs_backend_get(&backend) < 0)
        return NULL;
    if (bincount_operand(x, NPY_INTP, &in.op) < 0 ||
        bincount_check(x, &in.op, NPY_INTP, &in.type, &n) < 0)
        goto finally;

    /* Empty input: minlength zeros, int64 whatever the weights (as NumPy). */
    if (n == 0) {
        npy_intp dims = minlength;
        PyObject *z = PyArray_ZEROS(1, &dims, NPY_INT64, 0);
        ret = z != NULL && in.op.on_device ? gs_to_device(NULL, z) : Py_XNewRef(z);
        Py_XDECREF(z);
        goto finally;
    }
    if (weights != Py_None) {
        if (bincount_operand(weights, NPY_DOUBLE, &w.op) < 0 ||
            bincount_check(weights, &w.op, NPY_DOUBLE, &wt, &wn) < 0)
            goto finally;
        if (wn != n) {
            PyErr_SetString(PyExc_ValueError, "The weights and list don't have the same length.");
            goto finally;
        }
        if (w.op.on_device != in.op.on_device) {
            PyErr_SetString(PyExc_TypeError,
                            "bincount: x and weights must both be device arrays or both not");
            goto finally;
        }
        w.type = GS_FLOAT64; /* NumPy sums the weights as float64 */
    }
    if (input_place(&in, backend, n) < 0)
        goto finally;

    /* The length (max + 1) and the check for negative values, by the backend's reduction. */
    if (backend_min_max(backend, in.ptr, n, in.type, bits) < 0)
        goto finally;
    for (int k = 0; k < 2; k++) {
        gs_hist_bound b;
        bound_of_key(in.type, key_of_bits(in.type, bits[k]), &b);
        *(k == 0 ? &mn : &mx) = read_kind(in.type) == 'i' ? b.i : (int64_t)b.u;
    }
    if (mn < 0 || mx < 0) { /* mx < 0: a uint64 from 2**63 up, negative as NumPy's intp */
        PyErr_SetString(PyExc_ValueError, "'list' argument must have no negative elements");
        goto finally;
    }
    if (weights != Py_None && input_place(&w, backend, n) < 0)
        goto finally;
    d.in = in.ptr;
    d.n = n;
    d.in_type = in.type;
    d.weights = weights != Py_None ? w.ptr : NULL;
    d.w_type = GS_FLOAT64;
    d.nbins = mx + 1 > minlength ? mx + 1 : minlength;
    d.mode = GS_HIST_INDEX;
    d.edge_type = GS_INT64;
    d.method = GS_HIST_AUTO;
    ret = hist_run(backend, &d, NULL, in.op.on_device);
#ifdef GS_HAVE_CUDA
    if (ret != NULL && ((in.op.on_device && gs_cuda_release_foreign(&in.op) < 0) ||
                        (w.op.on_device && gs_cuda_release_foreign(&w.op) < 0)))
        Py_CLEAR(ret);
#endif
finally:
    input_release(&in);
    input_release(&w);
    (void)self;
    return ret;
}

/* ---- test hooks ----------------------------------------------------------------------------- */

PyObject *gs_hist_last_launch(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
#ifdef GS_HAVE_CUDA
    gs_hist_launch l;
    gs_cuda_hist_last(&l);
    return Py_BuildValue("{sisisLsLsLsL}", "shared", l.shared, "replicas", l.replicas, "slices",
                         (long long)l.slices, "slice_bins", (long long)l.slice_bins, "blocks",
                         (long long)l.blocks, "smem_bytes", (long long)l.smem_bytes);
#else
    Py_RETURN_NONE;
#endif
}

PyObject *gs_hist_plan_py(PyObject *self, PyObject *args)
{
    long long nbins, budget;
    int acc_bytes, replicas;
    int64_t slices, slice_bins;

    (void)self;
    if (!PyArg_ParseTuple(args, "LiL:_hist_plan", &nbins, &acc_bytes, &budget))
        return NULL;
    if (nbins < 1 || (acc_bytes != 4 && acc_bytes != 8) || budget < 1) {
        PyErr_SetString(PyExc_ValueError, "_hist_plan: nbins >= 1, acc_bytes 4 or 8, budget >= 1");
        return NULL;
    }
    gs_hist_plan(nbins, acc_bytes, budget, &slices, &slice_bins, &replicas);
    return Py_BuildValue("(LLi)", (long long)slices, (long long)slice_bins, replicas);
}
