"""histogram() and bincount() against np.histogram and np.bincount.

Every test runs on the active backend (the CPU backend in CI, CUDA on the GPU machine) with NumPy
inputs; the `gpu` tests also pass device arrays (used in place, DeviceArray results) and check
which kernel ran (gpuscan._gpuscan._hist_last_launch()).  Counts must equal NumPy's exactly,
bin edges too (values and dtype); weighted float sums within a relative 1e-12 (float64) or
1e-5 (float32) of NumPy's.

Sizes: 0 (empty), 1, 1000 (one block), 2**20 + 17 (many blocks and CPU threads, an uneven
tail); bin counts 1 .. 65536, where 65536 is the count whose u32 shared histogram (256 KiB)
does not fit one block and is split into slices.
"""
import warnings

import numpy as np
import pytest

import gpuscan
from conftest import DTYPES, DTYPE_IDS
from gpuscan import _gpuscan

METHODS = ["auto", "global", "shared"]
BIN_COUNTS = [1, 2, 7, 100, 256, 1000, 4096, 65535, 65536]
NUMPY_ERRORS = (ValueError, TypeError)


def random_data(rng, dtype, n):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < 0.3
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return (rng.standard_normal(n) * 3 + 1).astype(dtype)


def np_histogram(a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # bool input: NumPy's conversion note
        return np.histogram(a, **kw)


def gs_histogram(a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        h, e = gpuscan.histogram(a, **kw)
    return (h.get() if isinstance(h, gpuscan.DeviceArray) else h), e


def check_same(a, **kw):
    """gpuscan.histogram(a, **kw) equals np.histogram(a, **kw) (without method=)."""
    method = kw.pop("method", "auto")
    try:
        want_h, want_e = np_histogram(a, **kw)
    except NUMPY_ERRORS as exc:   # e.g. too many bins for a narrow range: the same error
        with pytest.raises(type(exc)) as got:
            gs_histogram(a, method=method, **kw)
        assert str(got.value) == str(exc)
        return None, None
    got_h, got_e = gs_histogram(a, method=method, **kw)
    assert isinstance(got_e, np.ndarray)
    assert got_e.dtype == want_e.dtype and got_e.shape == want_e.shape
    np.testing.assert_array_equal(got_e, want_e)
    assert got_h.dtype == want_h.dtype and got_h.shape == want_h.shape
    if want_h.dtype.kind == "f":
        # Float sums: against NumPy's sums of the weights in float64 (NumPy's own float32
        # cumsum path is less accurate than the bound), within a few eps of sum |w|.
        ref = want_h
        eps = np.finfo(want_h.dtype).eps
        atol = 0.0
        w = kw.get("weights")
        if w is not None:
            w64 = np.asarray(w, dtype=np.float64)
            ref = np_histogram(a, **dict(kw, weights=w64))[0]
            # The contract's float bound: the atomics add in any order.
            atol = (np.log2(max(np.size(a), 2)) + 2) * eps * float(np.abs(w64).sum())
        np.testing.assert_allclose(got_h, ref, rtol=8 * eps, atol=atol)
    else:
        np.testing.assert_array_equal(got_h, want_h)
    return got_h, got_e


# ---- the settled bins of repeated calls (ops/hist_edges.c's cache) ----------------------------
# An int count of bins and a range of two Python numbers settle the same bins every time: the
# second call takes them from a cache.  It must tell apart every key NumPy's edges depend on.

def test_repeated_calls_take_the_cache(rng):
    a = random_data(rng, np.float32, 5000)
    first = check_same(a, bins=64, range=(-2, 3))
    for _ in range(3):
        h, e = check_same(a, bins=64, range=(-2, 3))
        assert e is not first[1]
    e[:] = 7.0                                     # the caller's edges are the caller's
    check_same(a, bins=64, range=(-2, 3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int64, np.bool_],
                         ids=["f32", "f64", "i8", "u16", "i64", "bool"])
def test_cache_keys_every_part(rng, dtype):
    """Calls that differ in one part of the key (dtype, bin count, int or float bound, -0.0,
    an empty range, a list) interleaved, each equal to NumPy, twice over (hits and misses)."""
    a = random_data(rng, dtype, 3000)
    other = random_data(rng, np.float64 if dtype != np.float64 else np.float32, 3000)
    calls = [(a, 10, (0, 1)), (a, 10, (0.0, 1.0)), (a, 11, (0, 1)), (other, 10, (0, 1)),
             (a, 10, (-0.0, 1.0)), (a, 10, (0.0, 1.0)), (a, 3, (5, 5)), (a, 3, [5, 5.0]),
             (a, 10, (-3, 120)), (a, 10, (-3.5, 120.25)), (a, np.int64(10), (0, 1)),
             (a, 10, (np.float32(0), 1)), (a, 10, (2**63 - 1, 2**64))]
    for _ in range(2):
        for x, bins, rng_ in calls:
            got_e = check_same(x, bins=bins, range=rng_)[1]
            if got_e is not None:
                want_e = np_histogram(x, bins=bins, range=rng_)[1]
                assert np.array_equal(np.signbit(got_e), np.signbit(want_e))


def test_cache_errors_are_numpys(rng):
    a = random_data(rng, np.float32, 100)
    for _ in range(2):
        check_same(a, bins=10, range=(1.0, 0.0))       # ValueError: max must be larger
        check_same(a, bins=0, range=(0.0, 1.0))        # ValueError: bins must be positive
        check_same(a, bins=10, range=(0.0, float("inf")))


def test_cache_cycles_through_more_keys_than_it_holds(rng):
    a = random_data(rng, np.float32, 2000)
    for _ in range(2):
        for k in range(20):
            check_same(a, bins=5 + k, range=(-1, 1 + k))


# ---- every dtype, bin counts, ranges -----------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [1, 1000, 2**20 + 17], ids=["one", "n1000", "over_2^20"])
def test_random_every_dtype_autodetected(rng, dtype, n):
    a = random_data(rng, dtype, n)
    for bins in rng.choice(BIN_COUNTS, size=3, replace=False):
        check_same(a, bins=int(bins))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("bins", BIN_COUNTS)
def test_random_explicit_range(rng, dtype, bins):
    a = random_data(rng, dtype, 20000)
    if np.dtype(dtype).kind == "b":
        ranges = [(0, 1), (0.25, 0.75)]
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        mid = int(info.min) // 2 + int(info.max) // 2
        ranges = [(int(info.min) // 3, int(info.max) // 3), (mid - 100.5, mid + 1000),
                  (float(info.min) - 10, float(info.max) + 10)]
    else:
        ranges = [(-1.0, 2.5), (np.float64(0.1), np.float64(0.7)), (0, 1)]
    for r in ranges:
        check_same(a, bins=bins, range=r)


def test_all_bin_counts_small(rng):
    """Every bin count from 1 to 300 once (float32 and int16)."""
    a = random_data(rng, np.float32, 3000)
    b = random_data(rng, np.int16, 3000)
    for bins in range(1, 301):
        check_same(a, bins=bins)
        check_same(b, bins=bins, range=(-20000, 20000))


# ---- values on an edge and one ulp beside it -------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bins", [3, 7, 256, 1000, 4096, 65536])
@pytest.mark.parametrize("how", ["autodetect", "pyfloat", "npfloat64", "int_range"])
def test_values_on_and_beside_edges(rng, dtype, bins, how):
    base = (rng.random(5000) * 10 - 3).astype(dtype)
    rng_arg = {"autodetect": None, "pyfloat": (-2.3, 5.9), "npfloat64": (np.float64(-2.3),
               np.float64(5.9)), "int_range": (-3, 7)}[how]
    edges = np.histogram_bin_edges(base, bins=bins, range=rng_arg)
    near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    near = near.astype(dtype)
    if rng_arg is None:
        near = near[(near >= base.min()) & (near <= base.max())]
    a = np.concatenate([base, near, near[::7]])
    rng.shuffle(a)
    check_same(a, bins=bins, range=rng_arg)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_integers_on_edges(dtype):
    a = np.arange(0, 101).astype(dtype)
    for bins in (1, 4, 10, 20, 50, 100, 3, 7):
        check_same(a, bins=bins)
        check_same(a, bins=bins, range=(0, 100))
        check_same(a, bins=bins, range=(10, 60))
        check_same(a, bins=bins, range=(0.5, 99.5))


def test_range_maximum_counted_in_last_bin():
    a = np.array([0.0, 0.5, 1.0, 1.0, 1.0000000000000002], dtype=np.float64)
    h, _ = check_same(a, bins=4, range=(0, 1))
    assert h[-1] == 2
    f = np.array([0, 1, 1], dtype=np.float32)
    check_same(f, bins=3, range=(0, 1))


def test_empty_range_widened():
    check_same(np.full(10, 3.0), bins=5)
    check_same(np.full(10, 3, dtype=np.int8), bins=5)
    check_same(np.arange(10.0), bins=4, range=(2, 2))
    check_same(np.arange(10, dtype=np.float32), bins=4, range=(np.float32(2), np.float32(2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_inf_dropped_with_range(rng, dtype):
    a = random_data(rng, dtype, 5000)
    a[::17] = np.nan
    a[::31] = np.inf
    a[::37] = -np.inf
    for bins in (10, 256, 65536):
        check_same(a, bins=bins, range=(-2, 4))
        check_same(a, bins=np.array([-np.inf, -1, 0, 1, np.inf]))


def test_range_outside_dtype_and_narrow_types():
    a = np.arange(256, dtype=np.uint8)
    check_same(a, bins=10, range=(-10, 300))
    check_same(a, bins=10, range=(300, 400))
    with pytest.raises(TypeError, match="float16"):   # NumPy bins in float16 here: not supported
        gpuscan.histogram(a, bins=7, range=(np.float16(1), np.float16(200)))
    b = np.arange(-128, 128, dtype=np.int8)
    check_same(b, bins=16, range=(np.float32(-100.5), np.float32(100.25)))


# ---- Input narrower than the edges: compared in the edges' dtype, as NumPy compares it ---------
def test_float16_range_beside_one():
    # The reproducer: 1.0 + eps (float64) rounds to 1.0 in float16 and float32, yet
    # NumPy compares the float16 value 1.0 with it in float64 and drops it.
    a = np.array([1.0], np.float16)
    eps = np.finfo(np.float64).eps
    for rng_ in ((1.0 + eps, 2.0), (0.0, 1.0 - eps / 2)):
        got, edges = gpuscan.histogram(a, bins=1, range=rng_)
        want, want_edges = np.histogram(a, bins=1, range=rng_)
        np.testing.assert_array_equal(got, want)
        assert edges.dtype == want_edges.dtype
        np.testing.assert_array_equal(edges, want_edges)


# NumPy's own TestHistogram::test_precision (numpy/lib/tests/test_histograms.py), as NumPy writes it.
def do_precision_lower_bound(float_small, float_large):
    eps = np.finfo(float_large).eps
    arr = np.array([1.0], float_small)
    range_ = np.array([1.0 + eps, 2.0], float_large)
    # test is looking for behavior when the bounds change between dtypes
    if range_.astype(float_small)[0] != 1:
        return
    count, x_loc = gpuscan.histogram(arr, bins=1, range=range_)
    np.testing.assert_equal(count, [0])
    np.testing.assert_equal(x_loc.dtype, float_large)


def do_precision_upper_bound(float_small, float_large):
    eps = np.finfo(float_large).eps
    arr = np.array([1.0], float_small)
    range_ = np.array([0.0, 1.0 - eps], float_large)
    # test is looking for behavior when the bounds change between dtypes
    if range_.astype(float_small)[-1] != 1:
        return
    count, x_loc = gpuscan.histogram(arr, bins=1, range=range_)
    np.testing.assert_equal(count, [0])
    np.testing.assert_equal(x_loc.dtype, float_large)


@pytest.mark.parametrize("float_small,float_large",
                         [(np.half, np.single), (np.half, np.double), (np.half, np.longdouble),
                          (np.single, np.double), (np.single, np.longdouble),
                          (np.double, np.longdouble)],
                         ids=["half-single", "half-double", "half-longdouble", "single-double",
                              "single-longdouble", "double-longdouble"])
def test_precision(float_small, float_large):
    do_precision_lower_bound(float_small, float_large)
    do_precision_upper_bound(float_small, float_large)


def every_float16():
    """Every float16 value: the finite ones, both infinities and a NaN."""
    return np.arange(2**16, dtype=np.uint16).view(np.float16)[::-1].copy()


def scalars_of(lo, hi):
    """A range (lo, hi) as NumPy users write it: Python floats and NumPy scalars of each width."""
    return [(lo, hi), (np.float16(lo), np.float16(hi)), (np.float32(lo), np.float32(hi)),
            (np.float64(lo), np.float64(hi)), (np.longdouble(lo), np.longdouble(hi))]


# (Not among them: float16 bounds among the subnormals with many bins, where NumPy's own float16
# arithmetic misses the bin by more than its one-step correction mends, and bounds whose width
# overflows float16, where NumPy fails; gpuscan's bins there are the exact E[i] <= x < E[i+1].)
FLOAT16_RANGES = [(0.1, 0.9), (-1.0, 1.0), (1.0 + 2.0**-52, 2.0), (-3.3, 7.7), (-0.0, 0.0),
                  (1e-4, 5e-3), (-30000.0, 30000.0), (2.0**-14, 1.0 - 2.0**-40)]


@pytest.mark.parametrize("bins", [1, 3, 10, 100, 256])
@pytest.mark.parametrize("lo,hi", FLOAT16_RANGES, ids=[f"{lo!r},{hi!r}" for lo, hi in FLOAT16_RANGES])
def test_every_float16_value_explicit_range(lo, hi, bins):
    # Every float16 value against every way of writing the range: the values NumPy keeps (its
    # float16 comparisons with the bounds) and their bins (compared in the edges' dtype).
    a = every_float16()
    for rng_ in scalars_of(lo, hi):
        check_same(a, bins=bins, range=rng_)
        if bins == 3:
            check_same(a, bins=bins, range=rng_, weights=np.linspace(-1, 1, a.size))
            check_same(a, bins=bins, range=rng_, density=True)


@pytest.mark.parametrize("edge_dtype", [np.float16, np.float32, np.float64, np.longdouble, np.int8,
                                        np.int16, np.int64, np.uint64])
def test_every_float16_value_array_bins(edge_dtype):
    # Array edges: NumPy's searchsorted in the common dtype of float16 and the edges.
    a = every_float16()
    finite = a[np.isfinite(a)]
    for edges in (np.array([-3, -1, 0, 1, 2, 100, 1000]), np.array([0, 1, 2, 3, 4]),
                  np.array([-65504, -100, 7, 65504])):
        check_same(a, bins=edges.astype(edge_dtype))
        check_same(finite, bins=edges.astype(edge_dtype), weights=np.ones(finite.size))
    if np.dtype(edge_dtype).kind == "f":
        e = np.array([0.1, 0.2, 0.30000001, 1 + 2.0**-30, 3.3], np.float64).astype(edge_dtype)
        check_same(a, bins=np.unique(e))


@pytest.mark.parametrize("bins", [10, 77, "auto", "sturges", "doane"])
def test_every_float16_value_autodetected(bins):
    a = every_float16()
    check_same(a[np.isfinite(a)], bins=bins)
    check_same(np.array([1.0, 1.0 + 2.0**-10, 1.5, 2.0], np.float16), bins=bins)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int32])
def test_long_double_edges(dtype, rng):
    # long double edges (NumPy compares in long double): the doubles that split the doubles as
    # the edges do, for input a double holds.
    a = random_data(rng, dtype, 5000)
    if np.dtype(dtype).kind == "f":
        a[:4] = [1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0), 2.0]
    ld = np.longdouble
    one_up = ld(1) + ld(np.finfo(ld).eps)
    for rng_ in ((one_up, ld(2)), (ld(0), ld(1) - ld(np.finfo(ld).eps)), (ld(-3.3), ld(7.7))):
        for bins in (1, 3, 100):
            check_same(a, bins=bins, range=rng_)
    check_same(a, bins=np.array([ld(-5), ld(0), one_up, ld(2), ld(50)]))
    check_same(a, bins=np.array([ld(0), one_up, ld(2) - ld(np.finfo(ld).eps)]))


def test_long_double_edges_of_int64_input():
    a = np.array([2**60 + 1, 5], np.int64)
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("long double is double here")
    with pytest.raises(TypeError, match="64-bit integer"):
        gpuscan.histogram(a, bins=np.array([0, 2**60 + 1, 2**61], np.longdouble))


def test_large_int64_values(rng):
    a = rng.integers(2**62, 2**62 + 2**20, 10000, dtype=np.int64)
    check_same(a, bins=1000)
    check_same(a, bins=7, range=(2**62 + 10, 2**62 + 2**19))
    u = rng.integers(2**63, 2**64 - 1, 10000, dtype=np.uint64, endpoint=True)
    check_same(u, bins=4096)


# ---- non-uniform edges -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_nonuniform_edges(rng, dtype):
    a = random_data(rng, dtype, 30000)
    lo, hi = float(a.min()), float(a.max())
    for m in (2, 3, 50, 1000):
        e = np.sort(rng.uniform(lo - 1, hi + 1, m))
        check_same(a, bins=e)
        check_same(a, bins=e.astype(np.float32))
    # Edges taken from the data (values on edges), repeated edges (empty bins).
    e = np.sort(rng.choice(a, 40))
    check_same(a, bins=e)
    check_same(a, bins=np.concatenate([e[:5], e[4:5], e[5:]]))
    if np.dtype(dtype).kind in "iu":
        check_same(a, bins=np.unique(e.astype(np.int64)) if np.dtype(dtype) != np.uint64
                   else np.unique(e))


# ---- weights and density -----------------------------------------------------------------------
@pytest.mark.parametrize("wdtype", [np.float32, np.float64, np.int32, np.int64, np.uint8,
                                    np.bool_])
@pytest.mark.parametrize("method", METHODS)
def test_weights(rng, wdtype, method):
    a = random_data(rng, np.float32, 50000)
    w = random_data(rng, wdtype, 50000)
    if np.dtype(wdtype).kind in "iu":
        w = (w % 100).astype(wdtype)
    for bins in (10, 4096, 65536):
        check_same(a, bins=bins, weights=w, method=method)
    if wdtype != np.bool_:   # NumPy's searchsorted path fails on bool weights (UFuncTypeError)
        check_same(a, bins=[-2.0, 0.0, 0.5, 3.0], weights=w, method=method)
    check_same(a.reshape(100, 500), bins=33, weights=w.reshape(100, 500), method=method)


@pytest.mark.parametrize("method", METHODS)
def test_density(rng, method):
    a = random_data(rng, np.float64, 10000)
    check_same(a, bins=50, density=True, method=method)
    check_same(a, bins=[-5, -1, 0, 2, 10], density=True, method=method)
    check_same(a, bins=20, density=True, weights=rng.random(10000), method=method)
    check_same(random_data(rng, np.int16, 1000), bins=7, density=True, method=method)


# ---- methods, empty input, estimators, bool -----------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.float64])
def test_every_method_equal(rng, dtype):
    a = random_data(rng, dtype, 2**18 + 3)
    for bins in (1, 256, 4096, 65536):
        results = [gs_histogram(a, bins=bins, method=m) for m in METHODS]
        for h, e in results[1:]:
            np.testing.assert_array_equal(h, results[0][0])
            np.testing.assert_array_equal(e, results[0][1])
        check_same(a, bins=bins)


def test_empty_input():
    for dtype in (np.float32, np.int64, np.uint8):
        a = np.array([], dtype=dtype)
        check_same(a)
        check_same(a, bins=7, range=(0, 3))
        check_same(a, bins=[0, 1, 5])
        check_same(a, bins=3, weights=np.array([], dtype=np.float32))


@pytest.mark.parametrize("estimator", ["auto", "fd", "doane", "scott", "stone", "rice",
                                       "sturges", "sqrt"])
def test_string_bins(rng, estimator):
    a = random_data(rng, np.float64, 3000)
    check_same(a, bins=estimator)
    check_same(a, bins=estimator, range=(-1, 2))
    check_same(random_data(rng, np.int16, 3000), bins=estimator)


def test_bool_input_warns_like_numpy():
    a = np.array([True, False, True, True])
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        gpuscan.histogram(a)
    check_same(a)
    check_same(a, bins=[0, 0.5, 1])


def test_strided_and_multidimensional(rng):
    a = random_data(rng, np.float32, 30000)
    check_same(a[::3], bins=100)
    check_same(a[::-1], bins=100)
    check_same(a.reshape(150, 200).T, bins=256, range=(-1, 1))
    check_same(a.astype(a.dtype.newbyteorder()), bins=64)


# ---- errors --------------------------------------------------------------------------------------
ERROR_CASES = [
    ("bins zero", dict(a=[1, 2], bins=0)),
    ("bins negative", dict(a=[1, 2], bins=-3)),
    ("bins float", dict(a=[1, 2], bins=2.5)),
    ("bins 2-d", dict(a=[1, 2], bins=[[1, 2]])),
    ("decreasing edges", dict(a=[1, 2], bins=[0, 2, 1])),
    ("range reversed", dict(a=[1, 2], range=(2, 1))),
    ("range inf", dict(a=[1, 2], range=(0, np.inf))),
    ("range nan", dict(a=[1, 2], range=(np.nan, 1))),
    ("autodetect nan", dict(a=[1, 2, np.nan])),
    ("autodetect inf", dict(a=[1, np.inf])),
    ("weights shape", dict(a=[1, 2, 3], weights=[1, 2])),
    ("unknown estimator", dict(a=[1.0, 2.0], bins="foo")),
    ("estimator with weights", dict(a=[1.0, 2.0], bins="auto", weights=[1, 1])),
    ("too many bins", dict(a=np.array([1.0, 1.0 + 2**-50]), bins=2**20)),
]


@pytest.mark.parametrize("label,kw", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_as_numpy(label, kw):
    with pytest.raises(NUMPY_ERRORS) as want:
        np.histogram(**kw)
    with pytest.raises(type(want.value)) as got:
        gpuscan.histogram(**kw)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("bad", [np.array([1j, 2j]), np.array(["a", "b"]),
                                 np.array([1, "x"], dtype=object)])
def test_unsupported_dtypes(bad):
    with pytest.raises(TypeError):
        gpuscan.histogram(bad)


def test_bad_method():
    with pytest.raises(ValueError, match="method"):
        gpuscan.histogram([1, 2], method="fast")
    with pytest.raises(TypeError):
        gpuscan.histogram([1, 2], 10, None, None, None, "shared")   # method is keyword-only


def test_plan_splits_large_bin_counts():
    budget = 115 * 1024
    for nbins in (1, 255, 256, 4096, 28000, 65536, 10**6):
        for acc in (4, 8):
            slices, slice_bins, replicas = _gpuscan._hist_plan(nbins, acc, budget)
            assert slices * slice_bins >= nbins > (slices - 1) * slice_bins
            assert replicas * slice_bins * acc <= budget or slices == slice_bins == nbins == 1
            assert 1 <= replicas <= 32 and (acc == 4 or replicas == 1)   # a warp each at most
    assert _gpuscan._hist_plan(65536, 4, budget)[0] > 1     # 256 KiB does not fit one block
    assert _gpuscan._hist_plan(65536, 4, 227 * 1024)[0] == 2
    assert _gpuscan._hist_plan(256, 4, budget) == (1, 256, 32)
    assert _gpuscan._hist_plan(4096, 4, budget) == (1, 4096, 7)


# ---- bincount ------------------------------------------------------------------------------------
BINCOUNT_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                   np.uint32, np.uint64]


def check_bincount(x, **kw):
    want = np.bincount(x, **kw)
    got = gpuscan.bincount(x, **kw)
    if isinstance(got, gpuscan.DeviceArray):
        got = got.get()
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", BINCOUNT_DTYPES, ids=[np.dtype(d).name for d in
                                                        BINCOUNT_DTYPES])
@pytest.mark.parametrize("n", [1, 1000, 2**20 + 17], ids=["one", "n1000", "over_2^20"])
def test_bincount_every_dtype(rng, dtype, n):
    top = 2 if dtype == np.bool_ else min(int(np.iinfo(dtype).max), 70000)
    x = rng.integers(0, top, n).astype(dtype)
    check_bincount(x)
    check_bincount(x, minlength=top + 5)
    check_bincount(x, weights=rng.random(n))
    check_bincount(x, weights=rng.integers(-5, 5, n).astype(np.int32), minlength=3)


@pytest.mark.parametrize("side", ["host", pytest.param("device", marks=pytest.mark.gpu)])
def test_bincount_guessed_bins(rng, side):
    """bincount counts into a guess of bins (those of the last call, at least 1024 and at least
    minlength) while the backend finds the largest value, and goes the exact way (maximum first)
    when a value lies past the guess or is negative.  A sequence of calls through each way and
    across the guess's edge, each equal to NumPy whatever the guess was."""
    to = gpuscan.to_device if side == "device" else (lambda a: a)

    def same(x, **kw):
        got = gpuscan.bincount(to(x), **kw)
        if side == "device":
            assert isinstance(got, gpuscan.DeviceArray)
            got = got.get()
        want = np.bincount(x, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)

    n = 100_003
    same(rng.integers(0, 1000, n).astype(np.int32))              # inside the first guess
    same(rng.integers(0, 5000, n).astype(np.int32))              # past it: the exact way
    x = rng.integers(0, 5000, n).astype(np.int32)
    x[7] = 4999
    same(x)                                                      # guess 5000: the last bin
    x[7] = 5000
    same(x)                                                      # one past the guess
    same(np.array([3, 1, 3], dtype=np.uint8))                    # a short result from a large guess
    same(rng.integers(0, 10, n).astype(np.int16), minlength=3000)     # minlength over the guess
    same(rng.integers(0, 10, n).astype(np.int16), minlength=100_000)  # ... over the largest guess
    same(rng.integers(0, 70_000, n).astype(np.int64))            # over the largest guess
    same(rng.integers(0, 300, n).astype(np.uint16))              # ... then the exact way once
    same(rng.integers(0, 300, n).astype(np.uint16))
    same(rng.random(n) < 0.5)                                    # bool
    for bad in [np.array([5, -1, 2], dtype=np.int8), np.array([5, -128], dtype=np.int8),
                np.array([1, -(2**40)], dtype=np.int64), np.array([-1], dtype=np.int32)]:
        with pytest.raises(ValueError, match="must have no negative elements"):
            gpuscan.bincount(to(bad))
        same(np.abs(bad.astype(np.int64)) % 50)                  # usable afterwards


def test_bincount_lists_and_small():
    check_bincount([0, 1, 1, 3, 2, 1, 7])
    check_bincount([0, 1, 1, 2], weights=[0.5, 1.0, 0.25, 2.0], minlength=5)
    check_bincount([5], minlength=2)
    check_bincount([True, False, True])
    check_bincount(np.array([3, 3, 3], dtype=np.int64)[::-1])


def test_bincount_empty():
    check_bincount(np.array([], dtype=np.int64))
    check_bincount(np.array([], dtype=np.int8), minlength=4)
    check_bincount([])
    check_bincount([], weights=[])
    check_bincount(np.array([], dtype=np.uint32), weights=np.array([]), minlength=3)


BINCOUNT_ERRORS = [
    ("negative", dict(x=[1, -1])),
    ("negative int8", dict(x=np.array([3, -128], dtype=np.int8))),
    ("float input", dict(x=np.array([1.0]))),
    ("float empty", dict(x=np.array([], dtype=np.float32))),
    ("uint64 from 2**63", dict(x=np.array([1, 2**63], dtype=np.uint64))),
    ("2-d", dict(x=np.ones((2, 2), dtype=np.int64))),
    ("0-d", dict(x=np.array(5))),
    ("scalar", dict(x=5)),
    ("minlength negative", dict(x=[1, 2], minlength=-1)),
    ("minlength None", dict(x=[1, 2], minlength=None)),
    ("weights length", dict(x=[1, 2], weights=[1.0])),
    ("weights complex", dict(x=[1, 2], weights=np.array([1j, 2j]))),
    ("complex input", dict(x=np.array([1j]))),
]


@pytest.mark.parametrize("label,kw", BINCOUNT_ERRORS, ids=[c[0] for c in BINCOUNT_ERRORS])
def test_bincount_errors_as_numpy(label, kw):
    kw = dict(kw)
    x = kw.pop("x")
    with pytest.raises(NUMPY_ERRORS) as want:
        np.bincount(x, **kw)
    with pytest.raises(type(want.value)) as got:
        gpuscan.bincount(x, **kw)
    assert str(got.value) == str(want.value)


# ---- device arrays (CUDA) ------------------------------------------------------------------------
def device_same(a, method="auto", **kw):
    """A device input gives a DeviceArray of counts equal to NumPy's, NumPy edges."""
    d = gpuscan.to_device(a)
    w = kw.pop("weights", None)
    if w is not None:
        kw["weights"] = gpuscan.to_device(w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        h, e = gpuscan.histogram(d, method=method, **kw)
    assert isinstance(h, gpuscan.DeviceArray) and isinstance(e, np.ndarray)
    if w is not None:
        kw["weights"] = w
    want_h, want_e = np_histogram(a, **kw)
    np.testing.assert_array_equal(e, want_e)
    assert h.dtype == want_h.dtype
    if want_h.dtype.kind == "f":
        np.testing.assert_allclose(h.get(), want_h, rtol=1e-5 if want_h.dtype == np.float32
                                   else 1e-12)
    else:
        np.testing.assert_array_equal(h.get(), want_h)
    return _gpuscan._hist_last_launch()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_device_every_dtype_and_method(rng, dtype):
    a = random_data(rng, dtype, 3 * 2**16 + 5)
    for bins in (1, 256, 4096, 65536):
        for method in METHODS:
            device_same(a, method=method, bins=bins)
            device_same(a, method=method, bins=bins, range=(a.min(), a.max() // 2 + 1)
                        if np.dtype(dtype).kind != "b" else (0, 1))
    device_same(a, bins=np.unique(rng.choice(a, 30)).astype(np.float64))


@pytest.mark.gpu
def test_device_methods_use_their_kernels(rng):
    a = random_data(rng, np.float32, 2**20 + 3)
    launch = device_same(a, method="shared", bins=256)
    assert launch["shared"] == 1 and launch["slices"] == 1 and launch["replicas"] > 1
    launch = device_same(a, method="shared", bins=65536)
    assert launch["shared"] == 1 and launch["slices"] > 1     # 256 KiB split across blocks
    launch = device_same(a, method="auto", bins=65536)
    assert launch["shared"] == 1 and launch["slices"] > 1     # auto: never global at 65536
    launch = device_same(a, method="global", bins=4096)
    assert launch["shared"] == 0 and launch["smem_bytes"] == 0
    big = random_data(rng, np.float32, 2**23 + 3)
    launch = device_same(big, method="auto", bins=4096)
    assert launch["shared"] == 1 and launch["smem_bytes"] > 48 * 1024   # the opt-in took


@pytest.mark.gpu
@pytest.mark.parametrize("n", [2**12, 2**16, 2**20 + 3])
def test_device_replicas_no_more_than_the_values_fill(rng, n):
    # A replica of the bins costs every block a clear and a merge: a small input over many bins
    # gets fewer replicas (down to one), and the counts stay NumPy's.
    a = random_data(rng, np.float32, n)
    launch = device_same(a, method="shared", bins=4096)
    per_block = -(-n // launch["blocks"])
    assert launch["shared"] == 1
    assert launch["replicas"] <= max(1, per_block // 4096)
    assert launch["smem_bytes"] == launch["replicas"] * 4096 * 4


@pytest.mark.gpu
def test_device_edges_nan_weights_density(rng):
    base = (rng.random(100000) * 10 - 3).astype(np.float32)
    edges = np.histogram_bin_edges(base, bins=4096, range=(-2.3, 5.9))
    near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    a = np.concatenate([base, near.astype(np.float32), [np.nan, np.inf, -np.inf]])
    for method in METHODS:
        device_same(a, method=method, bins=4096, range=(-2.3, 5.9))
        device_same(a, method=method, bins=65536, range=(-2.3, 5.9),
                    weights=rng.random(a.size).astype(np.float32))
        device_same(a, method=method, bins=10, range=(0, 1), weights=np.ones(a.size, np.int16))
        device_same(base, method=method, bins=50, density=True)
    with pytest.raises(ValueError, match="autodetected range of"):
        gpuscan.histogram(gpuscan.to_device(a))


@pytest.mark.gpu
def test_device_unaligned_and_strided():
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(5)
    a = (rng.random(2**16 + 9) * 4).astype(np.float32)
    d = cp.asarray(a)
    for sl in (slice(1, None), slice(3, -2), slice(None, None, 3)):
        h, e = gpuscan.histogram(d[sl], bins=100, range=(0, 4))
        want_h, want_e = np.histogram(a[sl], bins=100, range=(0, 4))
        np.testing.assert_array_equal(h.get(), want_h)
        np.testing.assert_array_equal(e, want_e)
    u = cp.asarray(rng.integers(0, 256, 2**16 + 7).astype(np.uint8))
    for off in range(1, 16):
        h, _ = gpuscan.histogram(u[off:], bins=256, range=(0, 256))
        np.testing.assert_array_equal(h.get(), np.histogram(cp.asnumpy(u[off:]), bins=256,
                                                            range=(0, 256))[0])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", BINCOUNT_DTYPES, ids=[np.dtype(d).name for d in
                                                        BINCOUNT_DTYPES])
def test_device_bincount(rng, dtype):
    top = 2 if dtype == np.bool_ else min(int(np.iinfo(dtype).max), 70000)
    x = rng.integers(0, top, 2**18 + 1).astype(dtype)
    got = gpuscan.bincount(gpuscan.to_device(x), minlength=5)
    assert isinstance(got, gpuscan.DeviceArray)
    np.testing.assert_array_equal(got.get(), np.bincount(x, minlength=5))
    w = rng.random(x.size)
    got = gpuscan.bincount(gpuscan.to_device(x), weights=gpuscan.to_device(w))
    np.testing.assert_allclose(got.get(), np.bincount(x, weights=w), rtol=1e-12)
    if np.dtype(dtype).kind == "i":
        x[x.size // 2] = -1
        with pytest.raises(ValueError, match="must have no negative elements"):
            gpuscan.bincount(gpuscan.to_device(x))
    empty = gpuscan.bincount(gpuscan.to_device(np.array([], dtype=dtype)), minlength=3)
    np.testing.assert_array_equal(empty.get(), np.zeros(3, np.int64))
