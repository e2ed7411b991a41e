"""What NumPy's own test suites found (issue 44), each reproducer against NumPy's answer or
exception: operators spelled as NumPy's ufuncs, reduce's where=, reduceat's axis=None on 1-D
input, float16 from lists and scalars, bincount of every array-like NumPy takes."""
import numpy as np
import pytest

import gpuscan

UFUNC_NAMES = {"add": np.add, "multiply": np.multiply, "minimum": np.minimum,
               "maximum": np.maximum, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
               "bitwise_xor": np.bitwise_xor}


# ---- op names as NumPy's ufuncs spell them ----------------------------------------------------
@pytest.mark.parametrize("name", sorted(UFUNC_NAMES))
def test_op_named_as_the_ufunc(name):
    a = np.array([3, 1, 7, 0, 4, 1, 6, 3], dtype=np.int32)
    ufunc = UFUNC_NAMES[name]
    np.testing.assert_array_equal(gpuscan.scan(a, name), gpuscan.scan(a, ufunc))
    assert gpuscan.reduce(a, name) == ufunc.reduce(a)
    if name in ("add", "maximum"):
        np.testing.assert_array_equal(gpuscan.scan(a, name), ufunc.accumulate(a))


@pytest.mark.parametrize("name", ["sum", "max_", "Maximum"])
def test_other_names_still_refused(name):
    with pytest.raises(ValueError, match="maximum"):
        gpuscan.reduce(np.arange(3), name)


# ---- reduce(..., where=) ------------------------------------------------------------------------
A = np.arange(24.0).reshape(2, 3, 4) - 7.5
MASK = (np.arange(24).reshape(2, 3, 4) % 3) != 0


@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), (1, 2)])
@pytest.mark.parametrize("op,ufunc,initial", [("add", np.add, None), ("mul", np.multiply, None),
                                              ("max", np.maximum, -100.0),
                                              ("min", np.minimum, 100.0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_where(axis, op, ufunc, initial, keepdims):
    kw = {} if initial is None else {"initial": initial}
    got = gpuscan.reduce(A, op, axis=axis, where=MASK, keepdims=keepdims, **kw)
    want = ufunc.reduce(A, axis=axis, where=MASK, keepdims=keepdims, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.shape(got) == np.shape(want)


@pytest.mark.parametrize("where", [[True, False, True, True], [[True], [False], [True]],
                                   np.True_, False, None], ids=["row", "column", "np_true",
                                                                "false", "none"])
def test_reduce_where_broadcasts_as_numpy(where):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    np.testing.assert_array_equal(gpuscan.reduce(a, axis=1, where=where),
                                  np.add.reduce(a, axis=1, where=where))


def test_reduce_where_keeps_integer_results_exact():
    a = np.array([1, 2, 100], np.int8)
    got = gpuscan.reduce(a, where=[True, True, False])
    assert got == 3 and got.dtype == np.add.reduce(a).dtype
    assert gpuscan.reduce(np.arange(10, dtype=np.uint8), "and", where=np.arange(10) % 2 == 0) == \
        np.bitwise_and.reduce(np.arange(10, dtype=np.uint8), where=np.arange(10) % 2 == 0)


def test_reduce_where_nan_left_out():
    a = np.array([np.nan, 1.0, 4.0])
    assert gpuscan.reduce(a, "min", where=[False, True, True], initial=5.0) == 1.0
    assert np.isnan(gpuscan.reduce(a, "max", where=[True, True, False], initial=0.0))


def test_reduce_where_errors_as_numpy():
    with pytest.raises(ValueError, match="does not have an identity"):
        gpuscan.reduce(A, "max", where=MASK)
    with pytest.raises(TypeError, match="safe"):
        gpuscan.reduce(A, where=np.ones(A.shape, np.int8))
    with pytest.raises(ValueError):
        gpuscan.reduce(A, where=np.ones(5, bool))
    with pytest.raises(TypeError, match="safe"):
        np.add.reduce(A, where=np.ones(A.shape, np.int8))


@pytest.mark.gpu
def test_reduce_where_device(backend):
    d = gpuscan.to_device(A)
    got = gpuscan.reduce(d, axis=1, where=gpuscan.to_device(MASK))
    assert isinstance(got, gpuscan.DeviceArray)
    np.testing.assert_allclose(got.get(), np.add.reduce(A, axis=1, where=MASK))
    got = gpuscan.reduce(d, "max", axis=(0, 2), where=MASK[0, 0], initial=-1.0)
    np.testing.assert_array_equal(got.get(), np.maximum.reduce(A, axis=(0, 2), where=MASK[0, 0],
                                                               initial=-1.0))


# ---- reduceat: axis=None and (0,) on 1-D input ----------------------------------------------
@pytest.mark.parametrize("axis", [None, (0,), (-1,), 0, -1])
def test_reduceat_axis_of_1d(axis):
    a = np.arange(8)
    np.testing.assert_array_equal(gpuscan.reduceat(a, [0, 4], axis=axis),
                                  np.add.reduceat(a, [0, 4], axis=axis))


@pytest.mark.parametrize("axis", [None, (0, 1)])
def test_reduceat_many_axes_refused(axis):
    with pytest.raises(ValueError, match="multiple axes"):
        gpuscan.reduceat(np.arange(8).reshape(2, 4), [0, 1], axis=axis)


def test_reduceat_one_axis_tuple_of_2d():
    b = np.arange(8).reshape(2, 4)
    np.testing.assert_array_equal(gpuscan.reduceat(b, [0, 1], axis=(1,)),
                                  np.add.reduceat(b, [0, 1], axis=(1,)))


# ---- float16 from lists, scalars and array-likes ---------------------------------------------
def test_float16_list_and_scalar():
    h = [np.float16(1), np.float16(2.5)]
    got = gpuscan.reduce(h, "max")
    assert got == np.maximum.reduce(h) and type(got) is np.float16
    got = gpuscan.scan(np.float16(3))
    np.testing.assert_array_equal(got, np.cumsum(np.float16(3)))
    assert got.dtype == np.float16
    counts, edges = gpuscan.histogram(h, bins=2)
    want_counts, want_edges = np.histogram(h, bins=2)
    np.testing.assert_array_equal(counts, want_counts)
    assert edges.dtype == want_edges.dtype == np.float16


def test_float16_reduceat_and_segmented_reduce():
    a = (np.arange(16) / 4).astype(np.float16)
    got = gpuscan.reduceat(a, [0, 5, 9])
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.add.reduceat(a.astype(np.float32), [0, 5, 9])
                                  .astype(np.float16))
    flags = np.zeros(16, bool)
    flags[[0, 5, 9]] = True
    np.testing.assert_array_equal(gpuscan.segmented_reduce(a, flags), got)


# ---- bincount of every array-like NumPy accepts -------------------------------------------------
class ArrayNoCopy:
    def __array__(self):
        return np.array([0, 1, 1, 3], np.uint64)


class ArrayWithCopy:
    def __array__(self, dtype=None, copy=None):
        return np.array([0, 1, 1, 3], np.int32)


@pytest.mark.parametrize("x", [ArrayNoCopy(), ArrayWithCopy(),
                               memoryview(np.array([0, 1, 1, 3], np.uint64)),
                               memoryview(np.array([0, 1, 1, 3], np.int32)),
                               bytearray(b"\x00\x01\x01\x03"), [True, False, True], []],
                         ids=["array_no_copy", "array_copy", "memoryview_u64", "memoryview_i32",
                              "bytearray", "bools", "empty"])
def test_bincount_array_likes(x):
    np.testing.assert_array_equal(gpuscan.bincount(x), np.bincount(np.asarray(x, dtype=np.intp)
                                                                   if isinstance(x, list)
                                                                   else x))


def test_bincount_refuses_floats_as_numpy_2_5():
    with pytest.raises(TypeError, match="safe"):
        gpuscan.bincount([1.0, 2.0])
