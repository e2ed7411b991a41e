"""Bool arrays whose bytes are not 0 and 1 (issue 44).

A bool array may hold any byte: a view of uint8 (np.frombuffer(b"\\xff\\xff", bool),
u8.view(bool)).  NumPy reads any nonzero byte as True: np.sum of 200 bytes 0xff is 200
(NumPy's TestBool::test_sum).  Every primitive must read bools so, wherever a bool is read as a
number: values of scan, reduce, segmented_scan, reduceat, segmented_reduce (bool arithmetic, and
bool added or multiplied into int64), conversions (dtype=), histogram and bincount input and
weights, split and compact flags; split and compact move the values themselves bit for bit.  The
results are compared with NumPy's of the same array made canonical (u8 != 0), where NumPy's
own bool results keep a byte as it is (a single value's reduction, an accumulate's first value);
gpuscan's bools are always 0 or 1.  The same tests run on the CUDA backend on the GPU machine,
where the kernels read the bools; the `gpu` ones pass device arrays too.  Sizes: one tile and
more (NV), several CPU chunks (4096) and a 2-thread split (2^17 + 3).
"""
import warnings

import numpy as np
import pytest

import gpuscan
from conftest import NV
from reference import (check_reduce, check_reduceat, check_scan, check_segmented_reduce,
                       check_segmented_scan, check_split)

SIZES = [pytest.param(200, id="200"), pytest.param(3 * NV + 5, id="tiles"),
         pytest.param(2**17 + 3, id="2^17+3")]
BOOL_OPS = ["add", "mul", "min", "max", "and", "or", "xor"]


def odd_bools(rng, n, p_true=0.5):
    """A bool array of n values whose True bytes are random nonzero bytes (1 among them)."""
    u8 = np.where(rng.random(n) < p_true, rng.integers(1, 256, n, dtype=np.uint8), 0)
    return u8.astype(np.uint8).view(np.bool_)


def canonical(b):
    """The same bools with bytes 0 and 1 only."""
    return np.asarray(b).view(np.uint8) != 0


def assert_canonical(res):
    res = np.asarray(res)
    if res.dtype == np.bool_:
        assert np.all(res.view(np.uint8) <= 1), "a bool result byte other than 0 or 1"


def test_numpys_bool_sum():
    # NumPy's TestBool::test_sum.
    d = np.frombuffer(b"\xff\xff" * 100, dtype=bool)
    assert gpuscan.reduce(d) == 200 == np.sum(d)
    assert gpuscan.reduce(d[1:]) == 199
    assert gpuscan.scan(d)[-1] == 200
    d = np.frombuffer(b"\xff\x00" * 100, dtype=bool)
    assert gpuscan.reduce(d) == 100 == np.sum(d)
    assert gpuscan.reduce(d[1:]) == 99


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", BOOL_OPS)
def test_scan_and_reduce(op, n, rng):
    b = odd_bools(rng, n, p_true=0.999 if op in ("mul", "min", "and") else 0.5)
    ref = canonical(b)
    for exclusive in (False, True):
        res = gpuscan.scan(b, op, exclusive=exclusive)
        check_scan(res, ref, op, exclusive=exclusive)
        assert_canonical(res)
    res = gpuscan.reduce(b, op)
    check_reduce(res, ref, op)
    assert_canonical(res)


@pytest.mark.parametrize("op", ["add", "max", "xor"])
@pytest.mark.parametrize("shape,axis", [((5000, 7), 0), ((7, 5000), 1), ((3, 4097, 9), 1)],
                         ids=["columns", "rows", "3d"])
def test_axes(shape, axis, op, rng):
    b = odd_bools(rng, int(np.prod(shape))).reshape(shape)
    ref = canonical(b)
    check_scan(gpuscan.scan(b, op, axis=axis), ref, op, axis=axis)
    res = gpuscan.reduce(b, op, axis=axis)
    check_reduce(res, ref, op, axis=axis)
    assert_canonical(res)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.float32, np.float64])
def test_dtype_argument(dtype, rng):
    # bool into another accumulation dtype: the conversion reads any nonzero byte as 1.
    b = odd_bools(rng, 3 * NV + 5)
    ref = canonical(b)
    check_scan(gpuscan.scan(b, dtype=dtype), ref, dtype=dtype)
    check_reduce(gpuscan.reduce(b, dtype=dtype), ref, dtype=dtype)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", ["add", "max", "xor", "and"])
def test_segmented(op, n, rng):
    b = odd_bools(rng, n, p_true=0.999 if op == "and" else 0.5)
    flags = odd_bools(rng, n, 0.05)
    ref, ref_flags = canonical(b), canonical(flags)
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(b, flags, op, exclusive=exclusive)
        check_segmented_scan(res, ref, ref_flags, op, exclusive=exclusive)
        assert_canonical(res)
    res = gpuscan.segmented_reduce(b, flags, op)
    check_segmented_reduce(res, ref, ref_flags, op)
    assert_canonical(res)


@pytest.mark.parametrize("op", ["add", "mul", "max", "xor"])
def test_reduceat(op, rng):
    n = 3 * NV + 5
    b = odd_bools(rng, n, p_true=0.999 if op == "mul" else 0.5)
    indices = np.sort(rng.choice(n, 40, replace=False))
    res = gpuscan.reduceat(b, indices, op)
    check_reduceat(res, canonical(b), indices, op)
    assert_canonical(res)


@pytest.mark.parametrize("n", SIZES)
def test_split_and_compact_flags(n, rng):
    # Flags: any nonzero byte flags; values moved bit for bit (odd bytes included).
    a = rng.integers(0, 1000, n)
    flags = odd_bools(rng, n)
    check_split(gpuscan.split(a, flags), a, canonical(flags))
    check_split(gpuscan.compact(a, flags), a, canonical(flags), compact=True)
    out, count = gpuscan.split(flags, flags)
    assert count == int(np.count_nonzero(canonical(flags)))
    want = np.concatenate((flags[canonical(flags)], flags[~canonical(flags)]))
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def histogram_same(a, a_ref, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # bool input: NumPy's conversion note
        got, edges = gpuscan.histogram(a, **kw)
        want, want_edges = np.histogram(a_ref, **kw)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(edges, want_edges)


@pytest.mark.parametrize("n", SIZES)
def test_histogram_and_bincount_input(n, rng):
    b = odd_bools(rng, n)
    ref = canonical(b)
    for kw in (dict(bins=3, range=(0, 3)), dict(bins=4), dict(bins=[0, 0.5, 1, 256]),
               dict(bins=2, range=(0.5, 300))):
        histogram_same(b, ref, **kw)
    np.testing.assert_array_equal(gpuscan.bincount(b), np.bincount(ref))
    np.testing.assert_array_equal(gpuscan.bincount(b, minlength=5), np.bincount(ref, minlength=5))


@pytest.mark.parametrize("n", SIZES)
def test_histogram_and_bincount_weights(n, rng):
    w = odd_bools(rng, n)
    ref = canonical(w)
    x = rng.integers(0, 10, n)
    # bincount sums the weights in float64 (a bool weight is 0 or 1); histogram's sums of bool
    # weights come back as bool, as NumPy's.
    np.testing.assert_array_equal(gpuscan.bincount(x, weights=w), np.bincount(x, weights=ref))
    got, _ = gpuscan.histogram(x, bins=5, weights=w)
    want, _ = np.histogram(x, bins=5, weights=ref)
    assert got.dtype == want.dtype == np.bool_
    np.testing.assert_array_equal(got, want)
    assert_canonical(got)
    got, _ = gpuscan.histogram(x, bins=5, weights=w, density=True)
    np.testing.assert_allclose(got, np.histogram(x, bins=5, weights=ref, density=True)[0])


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["add", "xor", "max", "mul"])
def test_device_arrays(op, rng):
    n = 3 * NV + 5
    b = odd_bools(rng, n, p_true=0.999 if op == "mul" else 0.5)
    d = gpuscan.to_device(b)
    ref = canonical(b)
    check_scan(gpuscan.scan(d, op).get(), ref, op)
    res = gpuscan.reduce(d, op)
    assert isinstance(res, gpuscan.DeviceArray) and res.ndim == 0  # results stay on the device
    check_reduce(res.get()[()], ref, op)  # the 0-d array as the NumPy scalar np.add.reduce gives
    flags = gpuscan.to_device(odd_bools(rng, n, 0.05))
    check_segmented_scan(gpuscan.segmented_scan(d, flags, op).get(), ref, canonical(flags.get()),
                         op)
    np.testing.assert_array_equal(gpuscan.bincount(d).get(), np.bincount(ref))
    np.testing.assert_array_equal(gpuscan.scan(d, dtype=np.int16).get(), np.cumsum(ref,
                                                                                  dtype=np.int16))
