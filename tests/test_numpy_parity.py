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


# ---- signs of zero sums as NumPy's --------------------------------------------------------------
# reduce starts from +0.0, NumPy's identity (-0.0 values sum to +0.0), or from initial= (-0.0
# over them gives -0.0); reduceat, segmented_reduce and the inclusive scans start from each
# slice's first value (-0.0 values alone sum to -0.0, any other exact zero to +0.0); an exclusive
# scan's head is the identity, +0.0.  Sizes are named after the paths they reach.
ZERO_DTYPES = [np.float32, np.float64]
ZERO_DTYPE_IDS = ["float32", "float64"]
REDUCE_ZERO_SIZES = {
    "one value": 1,
    "short run": 31,                 # CPU: folded one value at a time
    "one chunk": 4096,               # CUDA: one item, written by its block at once
    "many chunks": 5 * 4096 + 3,     # CUDA: the row's last chunk combines its partials
    "chunks on threads": 2**20 + 7,  # CPU: both phases on the pool (from 1 MiB)
    "two launches": 2**23 + 5,       # CUDA: more chunks than resident blocks, then a combine
}
SEG_W = gpuscan._gpuscan._config()["segreduce_tile_items"]
NV_ = gpuscan._gpuscan._config()["scan_tile_items"]
SEG_ZERO_SIZES = {
    "one value": 1,
    "one tile": SEG_W - 3,           # CUDA: one warp tile, its end inside it
    "many tiles": 3 * NV_ + 5,       # CUDA: partials of level 0 reduced by a level above
    "many levels": 2050 * NV_ - 7,   # CUDA: three levels of warp tiles
}
SCAN_ZERO_SIZES = {
    "one value": 1,
    "one tile": NV_ - 3,
    "many tiles": 3 * NV_ + 5,       # CUDA: the tiles' look-back
    "anchored": 700 * NV_ + 3,       # CUDA: tiles past the anchored look-back's lag
}


def signs(x):
    return np.signbit(np.asarray(x))


def assert_zeros(got, want):
    """got is want's zeros, sign for sign (want: NumPy's answer)."""
    got = np.asarray(got)
    assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype
    assert (got == 0).all()
    np.testing.assert_array_equal(signs(got), signs(want))


@pytest.mark.parametrize("n", list(REDUCE_ZERO_SIZES.values()), ids=list(REDUCE_ZERO_SIZES))
@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_reduce(dtype, n):
    z = np.full(n, -0.0, dtype)
    assert_zeros(gpuscan.reduce(z), np.add.reduce(z))                      # +0.0
    assert_zeros(gpuscan.reduce(z, initial=-0.0), np.add.reduce(z, initial=-0.0))  # -0.0
    assert_zeros(gpuscan.reduce(z, initial=0.0), np.add.reduce(z, initial=0.0))    # +0.0
    m = z.copy()
    m[n // 2] = 0.0   # one +0.0: +0.0 from any start
    assert_zeros(gpuscan.reduce(m, initial=-0.0), np.add.reduce(m, initial=-0.0))
    if n > 1:
        u = np.full(n + 1, -0.0, dtype)[1:]   # a start off 16 bytes: read value by value
        assert_zeros(gpuscan.reduce(u, initial=-0.0), np.add.reduce(u, initial=-0.0))


@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_reduce_cancelling_values(dtype):
    # An exact zero from values that are not all -0.0 is +0.0, whatever the start.
    a = np.array([1.0, -0.0, -1.0, -0.0] * 3000, dtype)
    for kw in ({}, {"initial": -0.0}):
        got = gpuscan.reduce(a, **kw)
        assert got == 0 and not signs(got)
    got = gpuscan.reduceat(a, [0, 2, 4])
    np.testing.assert_array_equal(signs(got), signs(np.add.reduceat(a, [0, 2, 4])))


@pytest.mark.parametrize("shape,axis", [((3, 40), 1), ((3, 40), 0), ((5, 3 * 4096 + 5), 1),
                                        ((4096, 3), 0), ((3 * 4096 + 11, 37), 0),
                                        ((2**13 + 5, 2), 0), ((3, 5000, 4), 1)],
                         ids=["short rows", "short columns", "rows of many chunks",
                              "columns of one block", "columns of many blocks",
                              "few columns, blocks on threads", "middle axis"])
@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_reduce_along_an_axis(dtype, shape, axis):
    z = np.full(shape, -0.0, dtype)
    assert_zeros(gpuscan.reduce(z, axis=axis), np.add.reduce(z, axis=axis))
    assert_zeros(gpuscan.reduce(z, axis=axis, initial=-0.0),
                 np.add.reduce(z, axis=axis, initial=-0.0))
    assert_zeros(gpuscan.reduce(z, axis=axis, keepdims=True, initial=-0.0),
                 np.add.reduce(z, axis=axis, keepdims=True, initial=-0.0))


@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_reduce_where_and_float16(dtype):
    z = np.full((4, 6), -0.0, dtype)
    z[1, 2] = 0.0
    w = np.ones(z.shape, bool)
    w[1, 2] = False   # the +0.0 left out: the rest sums to -0.0 from initial=-0.0
    for kw in ({}, {"initial": -0.0}):
        assert_zeros(gpuscan.reduce(z, where=w, **kw), np.add.reduce(z, None, where=w, **kw))
        assert_zeros(gpuscan.reduce(z, axis=1, where=w, **kw),
                     np.add.reduce(z, axis=1, where=w, **kw))
    h = np.full(9, -0.0, np.float16)
    assert_zeros(gpuscan.reduce(h, initial=-0.0), np.add.reduce(h, initial=-0.0))
    assert_zeros(gpuscan.reduceat(h, [0, 4]), np.add.reduceat(h, [0, 4]))


@pytest.mark.parametrize("n", list(SEG_ZERO_SIZES.values()), ids=list(SEG_ZERO_SIZES))
@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_reduceat_and_segmented_reduce(dtype, n):
    z = np.full(n, -0.0, dtype)
    rng = np.random.default_rng(n)
    sorted_idx = np.unique(np.r_[0, rng.integers(0, n, 50)])
    cases = {"one slice": [0], "sorted": sorted_idx, "from the middle": [n // 2],
             "not increasing": [n - 1, 0, n // 2, n // 2]}   # any slices: one at a time
    for name, idx in cases.items():
        assert_zeros(gpuscan.reduceat(z, idx), np.add.reduceat(z, idx))
    flags = np.zeros(n, bool)
    flags[sorted_idx] = True
    assert_zeros(gpuscan.segmented_reduce(z, flags), np.add.reduceat(z, sorted_idx))
    m = z.copy()
    m[sorted_idx[-1]] = 0.0   # the last slice holds a +0.0: +0.0, the others -0.0
    assert_zeros(gpuscan.reduceat(m, sorted_idx), np.add.reduceat(m, sorted_idx))
    assert_zeros(gpuscan.segmented_reduce(m, flags), np.add.reduceat(m, sorted_idx))


@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_reduceat_along_an_axis(dtype):
    z = np.full((3, 2 * SEG_W + 9), -0.0, dtype)
    for idx in ([0, 5, SEG_W], [2, SEG_W + 1], [4, 1, 9]):   # a gap in front; not increasing
        assert_zeros(gpuscan.reduceat(z, idx, axis=1), np.add.reduceat(z, idx, axis=1))
        assert_zeros(gpuscan.reduceat(z.T, idx, axis=0), np.add.reduceat(z.T, idx, axis=0))


@pytest.mark.parametrize("n", list(SCAN_ZERO_SIZES.values()), ids=list(SCAN_ZERO_SIZES))
@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_scans(dtype, n):
    z = np.full(n, -0.0, dtype)
    assert_zeros(gpuscan.scan(z), np.cumsum(z))
    flags = np.zeros(n, bool)
    flags[[0, n // 3, n // 2]] = True
    assert_zeros(gpuscan.segmented_scan(z, flags), np.cumsum(z))
    m = z.copy()
    m[n // 2] = 0.0   # +0.0 from there on (its segment's and the whole scan's)
    want = np.cumsum(m)
    assert_zeros(gpuscan.scan(m), want)
    want_seg = want.copy()
    want_seg[n // 3:n // 2] = -0.0
    assert_zeros(gpuscan.segmented_scan(m, flags), want_seg)
    # Exclusive: the identity, +0.0, at every head.
    ex = gpuscan.scan(z, exclusive=True)
    assert (ex == 0).all() and not signs(ex[0])
    ex = gpuscan.segmented_scan(z, flags, exclusive=True)
    assert (ex == 0).all() and not signs(ex[np.flatnonzero(flags)]).any()


@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_scans_along_an_axis(dtype):
    z = np.full((3 * 4096 + 7, 9), -0.0, dtype)
    z[5, 4] = 0.0
    for axis in (0, 1):
        assert_zeros(gpuscan.scan(z, axis=axis), np.cumsum(z, axis=axis))
        assert_zeros(gpuscan.scan(z.T, axis=axis), np.cumsum(z.T, axis=axis))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 5 * 4096 + 3, 2**23 + 5], ids=["one value", "many chunks",
                                                                  "two launches"])
@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_device(dtype, n, backend):
    z = np.full(n, -0.0, dtype)
    d = gpuscan.to_device(z)
    got = gpuscan.reduce(d)   # a 0-d DeviceArray: +0.0 written by the kernel, no host trip
    assert isinstance(got, gpuscan.DeviceArray)
    assert_zeros(got.get(), np.add.reduce(z))
    assert_zeros(gpuscan.reduce(d, initial=-0.0).get(), np.add.reduce(z, initial=-0.0))
    rows = gpuscan.to_device(np.full((3, n), -0.0, dtype))
    assert_zeros(gpuscan.reduce(rows, axis=1).get(), np.zeros(3, dtype))
    assert_zeros(gpuscan.reduce(rows, axis=1, initial=-0.0).get(), np.full(3, -0.0, dtype))
    idx = [0, n // 2] if n > 1 else [0]
    assert_zeros(gpuscan.reduceat(d, idx).get(), np.add.reduceat(z, idx))
    assert_zeros(gpuscan.reduceat(d, idx[::-1]).get(), np.add.reduceat(z, idx[::-1]))
    flags = np.zeros(n, bool)
    flags[idx] = True
    assert_zeros(gpuscan.segmented_reduce(d, gpuscan.to_device(flags)).get(),
                 np.add.reduceat(z, idx))
    assert_zeros(gpuscan.scan(d).get(), np.cumsum(z))
    assert_zeros(gpuscan.segmented_scan(d, gpuscan.to_device(flags)).get(), np.cumsum(z))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ZERO_DTYPES, ids=ZERO_DTYPE_IDS)
def test_zero_signs_device_warp_ranges_and_streamed(dtype, backend):
    # Warp tiles taken in ranges (the knob lowers the tiles from which they are), and host input
    # streamed through the device in tiny chunks (partials and carries from chunk to chunk).
    n = 40 * 8 * SEG_W + 101
    z = np.full(n, -0.0, dtype)
    was = gpuscan._gpuscan._segreduce_set_many(1)
    try:
        idx = np.arange(7, n, 3 * 8 * SEG_W)
        assert_zeros(gpuscan.reduceat(gpuscan.to_device(z), idx).get(), np.add.reduceat(z, idx))
    finally:
        gpuscan._gpuscan._segreduce_set_many(*was)
    old = gpuscan._gpuscan._pipeline_chunk_bytes(4096)
    try:
        assert_zeros(gpuscan.reduce(z), np.add.reduce(z))
        assert_zeros(gpuscan.reduce(z, initial=-0.0), np.add.reduce(z, initial=-0.0))
        r = np.full((7, 3000), -0.0, dtype)
        assert_zeros(gpuscan.reduce(r, axis=1, initial=-0.0),
                     np.add.reduce(r, axis=1, initial=-0.0))
        assert_zeros(gpuscan.scan(z), np.cumsum(z))
    finally:
        gpuscan._gpuscan._pipeline_chunk_bytes(old)
