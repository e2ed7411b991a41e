"""NumPy users' habits (issue 18, SPEC "Operators and dtypes"), each against NumPy's own answer or
exception: masked arrays refused, split/compact moving every fixed-size dtype bit for bit,
float16 computed in float32 and rounded once per output, reduce's out= and initial=,
histogram's single edge, error texts."""
import numpy as np
import pytest

import gpuscan

MASKED = np.ma.array(np.arange(6.0), mask=[0, 1, 0, 0, 1, 0])
FLAGS6 = np.array([1, 0, 0, 1, 0, 1])


# ---- masked arrays: a mask is never dropped --------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda m: gpuscan.scan(m),
    lambda m: gpuscan.segmented_scan(m, FLAGS6),
    lambda m: gpuscan.segmented_scan(np.arange(6.0), np.ma.array(FLAGS6, mask=[0, 0, 1, 0, 0, 0])),
    lambda m: gpuscan.reduce(m),
    lambda m: gpuscan.reduce(m, "max"),
    lambda m: gpuscan.histogram(m),
    lambda m: gpuscan.bincount(m.astype(np.int64)),
    lambda m: gpuscan.split(m, FLAGS6),
    lambda m: gpuscan.compact(m, FLAGS6),
    lambda m: gpuscan.reduceat(m, [0, 2]),
    lambda m: gpuscan.segmented_reduce(m, FLAGS6),
    lambda m: gpuscan.linear_recurrence(m, np.ones(6)),
    lambda m: gpuscan.scan(np.arange(6.0), out=np.ma.zeros(6)),
], ids=["scan", "segmented_scan", "masked_flags", "reduce", "reduce_max", "histogram",
        "bincount", "split", "compact", "reduceat", "segmented_reduce", "linear_recurrence",
        "out"])
def test_masked_arrays_are_refused(call):
    # NumPy itself honours the mask (np.cumsum(m) skips masked values); dropping it would be a
    # silent wrong answer, so gpuscan refuses, naming the way out.
    assert np.ma.cumsum(MASKED)[2] == 2.0  # the answer a dropped mask would get wrong (3.0)
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        call(MASKED)


def test_the_way_out_the_message_names_gives_numpys_answer():
    # a.filled(0): masked values contribute the identity, as np.ma.cumsum counts them.
    got = gpuscan.scan(MASKED.filled(0))
    expected = np.ma.cumsum(MASKED)
    np.testing.assert_array_equal(got[~MASKED.mask], expected[~MASKED.mask])


# ---- split and compact: every fixed-size dtype, bit for bit ---------------------------------
MOVED_DTYPES = [np.float16, np.complex64, np.complex128, np.longdouble, "datetime64[ns]",
                "timedelta64[s]", "S3", "U2", "V5", ">c8", "<f2",
                np.dtype([("a", "<i4"), ("b", ">f8")]), np.dtype([("s", "<i2", (3,))])]


@pytest.mark.parametrize("dtype", MOVED_DTYPES, ids=lambda d: np.dtype(d).str)
@pytest.mark.parametrize("layout", ["contiguous", "strided_2d"])
def test_split_and_compact_move_any_fixed_size_dtype(dtype, layout, rng):
    dtype = np.dtype(dtype)
    n = 1000
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)  # any bits: NaN payloads too
    a = raw.view(dtype)
    flags = rng.integers(0, 2, n).astype(bool)
    if layout == "strided_2d":
        a, flags = a.reshape(20, 50)[:, ::2], flags.reshape(20, 50)[:, ::2]
    expected_compact = a[flags]
    got = gpuscan.compact(a, flags)
    assert got.dtype == expected_compact.dtype
    assert got.tobytes() == expected_compact.tobytes()
    out, count = gpuscan.split(a, flags)
    expected = np.concatenate([a[flags], a[~flags]]).astype(a.dtype)
    assert out.dtype == a.dtype and count == np.count_nonzero(flags)
    assert out.tobytes() == expected.tobytes()


def test_split_refuses_object_dtypes():
    for a in (np.array([None, 1], dtype=object), np.array([(1,), (2,)], dtype=[("x", "O")])):
        with pytest.raises(TypeError, match="not supported"):
            gpuscan.compact(a, [1, 0])


def test_split_of_a_new_dtype_keeps_numpys_shape_errors():
    with pytest.raises(ValueError, match="shape"):
        gpuscan.compact(np.zeros(3, np.complex64), np.zeros(4))


# ---- float16: accumulated in float32, rounded once per output -------------------------------
def half_data(rng, n=4000):
    return (rng.standard_normal(n) * 4).astype(np.float16)


def test_float16_scan(rng):
    a = half_data(rng)
    got = gpuscan.scan(a)
    assert got.dtype == np.cumsum(a).dtype == np.float16
    # The float32 scan of the same values, rounded once (gpuscan's float32 scan is within its
    # bound of the exact sums, so it can differ from np.cumsum's float32 by an ulp).
    np.testing.assert_array_equal(got, gpuscan.scan(a.astype(np.float32)).astype(np.float16))
    # NumPy rounds every step to float16: gpuscan's error is the smaller one.
    exact = np.cumsum(a.astype(np.float64))
    assert np.abs(got - exact).max() <= np.abs(np.cumsum(a) - exact).max()
    for op, ufunc in (("min", np.minimum), ("max", np.maximum)):  # exact in any width
        np.testing.assert_array_equal(gpuscan.scan(a, op), ufunc.accumulate(a))
    near_one = (1 + a[:40] / 64).astype(np.float16)
    got = gpuscan.scan(near_one, "mul")
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64),
                               np.multiply.accumulate(near_one.astype(np.float64)), rtol=2e-3)
    assert gpuscan.scan(a, dtype=np.float64).dtype == np.cumsum(a, dtype=np.float64).dtype
    assert gpuscan.scan(a, dtype=np.float16).dtype == np.float16
    assert gpuscan.scan(a.reshape(40, 100), axis=0).dtype == np.float16


def test_float16_scan_out(rng):
    a = half_data(rng, 100)
    out = np.empty(100, np.float16)
    assert gpuscan.scan(a, out=out) is out
    np.testing.assert_array_equal(out, gpuscan.scan(a))
    wide = np.empty(100, np.float64)
    assert gpuscan.scan(a, out=wide) is wide
    np.testing.assert_allclose(wide, np.cumsum(a, out=np.empty(100)), rtol=1e-12)


class _HostHalf:
    """A host array-like whose type has a __cuda_array_interface__ property that raises
    AttributeError off the device (as old PyTorch's CPU tensors did), and no __dlpack_device__:
    float16 input, not a device array."""

    def __init__(self, a):
        self.a = a

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("not on the device")

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


def test_float16_array_like_with_a_raising_interface(rng):
    a = half_data(rng, 300)
    got = gpuscan.scan(_HostHalf(a))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, gpuscan.scan(a))
    assert gpuscan.reduce(_HostHalf(a)) == gpuscan.reduce(a)
    np.testing.assert_array_equal(gpuscan.scan(_HostHalf(a), "logaddexp"),
                                  gpuscan.scan(a, "logaddexp"))


def test_float16_segmented_scan(rng):
    a = half_data(rng)
    flags = rng.integers(0, 2, a.size)
    got = gpuscan.segmented_scan(a, flags)
    assert got.dtype == np.float16
    expected = gpuscan.segmented_scan(a.astype(np.float32), flags).astype(np.float16)
    np.testing.assert_array_equal(got, expected)


def test_float16_reduce(rng):
    a = half_data(rng)
    got = gpuscan.reduce(a)
    assert type(got) is type(np.sum(a)) is np.float16
    assert abs(float(got) - a.astype(np.float64).sum()) <= abs(float(np.sum(a)) -
                                                                a.astype(np.float64).sum()) + 0.1
    m = a.reshape(40, 100)
    for op, ref in (("max", np.max), ("min", np.min)):
        got = gpuscan.reduce(m, op, axis=1)
        assert got.dtype == ref(m, axis=1).dtype
        np.testing.assert_array_equal(got, ref(m, axis=1))


@pytest.mark.parametrize("bins", [10, 37, "auto", [-2.0, 0.0, 0.5, 3.0]])
def test_float16_histogram(rng, bins):
    a = half_data(rng)
    counts, edges = gpuscan.histogram(a, bins=bins)
    n_counts, n_edges = np.histogram(a, bins=bins)
    np.testing.assert_array_equal(counts, n_counts)
    assert edges.dtype == n_edges.dtype
    np.testing.assert_array_equal(edges, n_edges)
    counts, edges = gpuscan.histogram(a, bins=7, range=(-1, 1))
    n_counts, n_edges = np.histogram(a, bins=7, range=(-1, 1))
    np.testing.assert_array_equal(counts, n_counts)
    np.testing.assert_array_equal(edges, n_edges)


def test_float16_histogram_weights(rng):
    w = rng.random(1000).astype(np.float16)
    counts, _ = gpuscan.histogram(np.arange(1000), bins=5, weights=w)
    n_counts, _ = np.histogram(np.arange(1000), bins=5, weights=w)
    assert counts.dtype == n_counts.dtype == np.float16
    np.testing.assert_allclose(counts.astype(np.float64), n_counts.astype(np.float64), rtol=2e-3)


# ---- reduce: out= and initial= as NumPy's -----------------------------------------------------
def same(got, expected):
    assert np.asarray(got).dtype == np.asarray(expected).dtype, (got, expected)
    assert np.ndim(got) == np.ndim(expected)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("a, op, kwargs", [
    (np.arange(3), "add", dict(initial=1.5)),
    (np.arange(3, dtype=np.int8), "add", dict(initial=1000)),
    (np.arange(3, dtype=np.int8), "add", dict(initial=100, dtype=np.int8)),
    (np.array([], float), "max", dict(initial=3)),
    (np.zeros((2, 0)), "min", dict(axis=1, initial=3)),
    (np.arange(6).reshape(2, 3), "add", dict(axis=1, initial=np.int64(10))),
    (np.array([1.0, np.nan]), "max", dict(initial=3)),
    (np.array([], np.uint8), "and", dict(initial=5)),
    (np.arange(1, 6), "mul", dict(initial=2, keepdims=True)),
    (np.arange(10), "add", dict(initial=None)),
], ids=["float_into_int", "int8_widened", "int8_wraps", "empty_max", "empty_rows_min",
        "rows", "nan", "empty_and", "mul_keepdims", "none"])
def test_reduce_initial(a, op, kwargs):
    ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum,
             "and": np.bitwise_and}[op]
    same(gpuscan.reduce(a, op, **kwargs), ufunc.reduce(a, axis=kwargs.pop("axis", None),
                                                       **kwargs))


def test_reduce_initial_must_be_a_scalar():
    with pytest.raises(TypeError):
        np.add.reduce(np.arange(3), initial=[1, 2])
    with pytest.raises(TypeError):
        gpuscan.reduce(np.arange(3), initial=[1, 2])


def test_reduce_empty_min_without_initial_is_numpys_error():
    with pytest.raises(ValueError) as numpy_info:
        np.minimum.reduce(np.array([]))
    with pytest.raises(ValueError) as info:
        gpuscan.reduce(np.array([]), "min")
    assert str(info.value) == str(numpy_info.value)


def test_reduce_out():
    a = np.arange(12).reshape(4, 3) + 0.5
    out = np.zeros((4, 6))[:, ::2][:, 0]  # strided
    assert gpuscan.reduce(a, axis=1, out=out) is out
    np.testing.assert_array_equal(out, np.add.reduce(a, axis=1))
    full = np.empty(())
    assert gpuscan.reduce(a, out=full) is full and full == a.sum()
    kept = np.empty((1, 1))
    assert gpuscan.reduce(a, out=kept, keepdims=True) is kept and kept[0, 0] == a.sum()
    # out= fixes the accumulation dtype: an int8 out wraps as NumPy's does.
    ones = np.full((4, 200), 1, np.int8)
    o8, n8 = np.zeros(4, np.int8), np.zeros(4, np.int8)
    gpuscan.reduce(ones, axis=1, out=o8)
    np.add.reduce(ones, axis=1, out=n8)
    np.testing.assert_array_equal(o8, n8)
    # out= over the input: the input is read before it is written.
    b = np.arange(6.0).reshape(2, 3)
    before = b.copy()
    assert gpuscan.reduce(b, axis=(), out=b) is b
    np.testing.assert_array_equal(b, np.add.reduce(before, axis=()))


def test_reduce_out_errors():
    a = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError):
        np.add.reduce(a, axis=1, out=np.empty(3))
    with pytest.raises(ValueError, match="shape"):
        gpuscan.reduce(a, axis=1, out=np.empty(3))
    read_only = np.empty(2)
    read_only.flags.writeable = False
    with pytest.raises(ValueError):
        np.add.reduce(a, axis=1, out=read_only)
    with pytest.raises(ValueError, match="read-only"):
        gpuscan.reduce(a, axis=1, out=read_only)
    # The contract's same_kind rule for out (SPEC: stricter than np.cumsum).
    with pytest.raises(TypeError, match="same_kind"):
        gpuscan.reduce(a, axis=1, out=np.empty(2, np.int64))


@pytest.mark.gpu
def test_reduce_out_and_initial_on_the_device():
    a = np.arange(24.0).reshape(4, 6)
    out = gpuscan.to_device(np.zeros(4))
    assert gpuscan.reduce(gpuscan.to_device(a), axis=1, out=out, initial=1.0) is out
    np.testing.assert_array_equal(out.get(), np.add.reduce(a, axis=1, initial=1.0))
    got = gpuscan.reduce(gpuscan.to_device(a), "max", initial=100.0)
    assert isinstance(got, gpuscan.DeviceArray) and got.get() == 100.0
    host_out = np.zeros(4)
    assert gpuscan.reduce(gpuscan.to_device(a), axis=1, out=host_out) is host_out
    np.testing.assert_array_equal(host_out, a.sum(axis=1))


# ---- histogram: a single edge, as NumPy -----------------------------------------------------
@pytest.mark.parametrize("bins", [[1], [1.5], np.array([2])], ids=["int", "float", "array"])
@pytest.mark.parametrize("kwargs", [{}, {"density": True},
                                    {"weights": np.ones(5, np.float32)}],
                         ids=["counts", "density", "weights"])
def test_histogram_single_edge(bins, kwargs):
    counts, edges = gpuscan.histogram(np.arange(5), bins=bins, **kwargs)
    n_counts, n_edges = np.histogram(np.arange(5), bins=bins, **kwargs)
    assert counts.dtype == n_counts.dtype and counts.shape == n_counts.shape == (0,)
    assert edges.dtype == n_edges.dtype
    np.testing.assert_array_equal(edges, n_edges)


# ---- error texts --------------------------------------------------------------------------
def test_error_texts_name_the_dtype_once():
    with pytest.raises(TypeError) as info:
        gpuscan.scan(np.zeros(3, np.complex64))
    message = str(info.value)
    assert "complex64" in message and "dtype dtype" not in message
    with pytest.raises(TypeError) as info:
        gpuscan.scan(np.arange(3), dtype=np.complex64)
    assert "complex64" in str(info.value) and "dtype dtype" not in str(info.value)
