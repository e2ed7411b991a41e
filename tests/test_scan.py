"""gpuscan.scan against NumPy (issue #2).

Integers, bool and float min/max must be bit-identical to NumPy's ufunc.accumulate; float add
must meet the contract's bound (log2(n)+2)*eps*sum|x| against the exact prefix sums, float mul
(i+1)*eps relative.  Sizes are named after the path they reach (see conftest.py).  The same tests
run on whichever backend is active; the GPU-only ones are marked `gpu`.
"""
import sys
import threading

import numpy as np
import pytest

import gpuscan
from conftest import (ALL_SIZES, AXIS_CASE_IDS, AXIS_CASES, DTYPE_IDS, DTYPES, NV, SMALL_SIZES,
                      make_layout, random_array, run_in_threads, run_python)
from reference import (BITWISE_OPS, OPS, UFUNCS, assert_prod_within_bound,
                       assert_sum_within_bound, bits, check_scan, check_segmented_scan, identity,
                       result_dtype, scan_reference, sum_error)


def frozen_copy(a):
    """A copy to compare the input with after the call (inputs are never modified)."""
    return np.array(a, copy=True)


def assert_unchanged(a, before):
    assert a.dtype == before.dtype and a.shape == before.shape
    assert np.array_equal(bits(a), bits(before)), "scan modified its input"


# ------------------------------------------------------------------------------------------
# The matrix: every dtype x op x inclusive/exclusive x size.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", ALL_SIZES)
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scan_matrix(dtype, op, exclusive, n, rng):
    a = random_array(rng, dtype, (n,), op)
    before = frozen_copy(a)
    if op in BITWISE_OPS and np.dtype(dtype).kind == "f":
        with pytest.raises(TypeError):
            gpuscan.scan(a, op, exclusive=exclusive)
        return
    res = gpuscan.scan(a, op, exclusive=exclusive)
    check_scan(res, a, op, exclusive=exclusive)
    assert_unchanged(a, before)


# ------------------------------------------------------------------------------------------
# Exclusive scans start with the identity, and result dtypes follow the contract.
# ------------------------------------------------------------------------------------------
# Every (dtype, op) pair the contract defines (bitwise ops on floats are a TypeError instead).
VALID_PAIRS = [(d, o) for d in DTYPES for o in OPS
               if not (o in BITWISE_OPS and np.dtype(d).kind == "f")]
VALID_PAIR_IDS = [f"{np.dtype(d).name}-{o}" for d, o in VALID_PAIRS]


@pytest.mark.parametrize("dtype,op", VALID_PAIRS, ids=VALID_PAIR_IDS)
def test_exclusive_starts_with_identity(dtype, op, rng):
    a = random_array(rng, dtype, (5,), op)
    res = gpuscan.scan(a, op, exclusive=True)
    ident = identity(op, result_dtype(dtype, op))
    assert res.dtype == ident.dtype
    assert bits(res[:1])[0] == bits(ident.reshape(1))[0], (res[0], ident)


@pytest.mark.parametrize("dtype,op", VALID_PAIRS, ids=VALID_PAIR_IDS)
def test_result_dtype(dtype, op):
    a = np.ones(3, dtype=dtype)
    res = gpuscan.scan(a, op)
    widen = op in ("add", "mul") and a.dtype.itemsize < 8 and a.dtype.kind in "biu"
    expected = (np.uint64 if a.dtype.kind == "u" else np.int64) if widen else dtype
    assert res.dtype == np.dtype(expected)
    # Same rule as NumPy's own accumulate.
    assert res.dtype == UFUNCS[op].accumulate(a, dtype=result_dtype(a.dtype, op)).dtype
    if op == "add":
        assert res.dtype == np.cumsum(a).dtype
    if op == "mul":
        assert res.dtype == np.cumprod(a).dtype


# ------------------------------------------------------------------------------------------
# The op may be given as the NumPy ufunc; np.cumsum / np.cumprod / accumulate equivalences.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float64], ids=["int32", "uint8",
                                                                         "float64"])
def test_ufunc_op_same_as_name(dtype, op, rng):
    if op in BITWISE_OPS and np.dtype(dtype).kind == "f":
        with pytest.raises(TypeError):
            gpuscan.scan(np.ones(3, dtype), UFUNCS[op])
        return
    a = random_array(rng, dtype, (NV + 1,), op)
    by_name = gpuscan.scan(a, op, exclusive=True)
    by_ufunc = gpuscan.scan(a, UFUNCS[op], exclusive=True)
    assert by_ufunc.dtype == by_name.dtype
    assert np.array_equal(bits(by_ufunc), bits(by_name))
    check_scan(by_ufunc, a, op, exclusive=True)


@pytest.mark.parametrize("shape", [(NV + 3,), (7, 33), (2, 3, 65)], ids=["1d", "2d", "3d"])
def test_numpy_equivalences(shape, rng):
    a = rng.integers(-50, 50, size=shape, dtype=np.int32)
    np.testing.assert_array_equal(gpuscan.scan(a), np.cumsum(a))
    assert gpuscan.scan(a).dtype == np.cumsum(a).dtype
    odd = (a | 1).astype(np.int64)
    np.testing.assert_array_equal(gpuscan.scan(odd, "mul"), np.cumprod(odd))
    np.testing.assert_array_equal(gpuscan.scan(a, "add", axis=-1), np.cumsum(a, axis=-1))
    np.testing.assert_array_equal(gpuscan.scan(a, "mul", axis=0), np.cumprod(a, axis=0))
    flat = a.ravel()
    np.testing.assert_array_equal(gpuscan.scan(flat, "max"), np.maximum.accumulate(flat))
    np.testing.assert_array_equal(gpuscan.scan(flat, "min"), np.minimum.accumulate(flat))


def test_default_op_is_inclusive_add(rng):
    a = rng.integers(-9, 9, size=100, dtype=np.int16)
    np.testing.assert_array_equal(gpuscan.scan(a), np.cumsum(a))
    np.testing.assert_array_equal(gpuscan.scan(a, exclusive=False), np.cumsum(a))
    np.testing.assert_array_equal(gpuscan.scan(a, algorithm="auto"), np.cumsum(a))


# ------------------------------------------------------------------------------------------
# axis on 2-D and 3-D arrays.
# ------------------------------------------------------------------------------------------
AXIS_SHAPES = [
    pytest.param((3, NV + 1), id="2d_rows_past_one_tile"),
    pytest.param((NV + 1, 3), id="2d_long_columns"),
    pytest.param((5, 33), id="2d_small"),
    pytest.param((4, 5, 33), id="3d_small"),
    pytest.param((2, 3, 2 * NV + 7), id="3d_rows_over_tiles"),
    pytest.param((33, 1, 7), id="3d_unit_axis"),
    pytest.param((777, 33), id="2d_many_short_rows"),
    pytest.param((2, 7 * NV + 5), id="2d_rows_of_many_tiles"),
    pytest.param((0, 5), id="2d_empty_rows"),
    pytest.param((3, 0), id="2d_empty_axis"),
    pytest.param((2, 0, 4), id="3d_empty_middle"),
]


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("dtype,op", AXIS_CASES, ids=AXIS_CASE_IDS)
@pytest.mark.parametrize("shape", AXIS_SHAPES)
def test_axis(shape, dtype, op, exclusive, rng):
    a = random_array(rng, dtype, shape, op)
    before = frozen_copy(a)
    for axis in [None] + list(range(-a.ndim, a.ndim)):
        res = gpuscan.scan(a, op, exclusive=exclusive, axis=axis)
        check_scan(res, a, op, exclusive=exclusive, axis=axis)
        if axis is not None:
            assert res.shape == a.shape
        else:
            assert res.shape == (a.size,)
    assert_unchanged(a, before)


@pytest.mark.parametrize("order", ["C", "F"])
def test_axis_none_flattens_in_c_order(order, rng):
    a = np.asarray(rng.integers(-100, 100, size=(3, 4, 5)), order=order)
    np.testing.assert_array_equal(gpuscan.scan(a), np.cumsum(a))
    np.testing.assert_array_equal(gpuscan.scan(a, "max"), np.maximum.accumulate(a.ravel()))


# ------------------------------------------------------------------------------------------
# dtype=: the accumulation and output type, wrapping like NumPy.
# ------------------------------------------------------------------------------------------
DTYPE_ARG_CASES = [
    (np.int8, "add", np.int8),        # wraps in int8: np.cumsum(a, dtype=np.int8)
    (np.uint8, "add", np.uint8),
    (np.uint16, "add", np.uint8),     # input narrowed (wrapping cast), then wraps
    (np.int64, "add", np.int16),
    (np.int32, "add", np.int32),
    (np.uint32, "add", np.uint32),
    (np.bool_, "add", np.int8),
    (np.int8, "add", np.uint64),
    (np.uint8, "add", np.int64),
    (np.int32, "mul", np.int8),
    (np.uint64, "mul", np.uint16),
    (np.int16, "max", np.int8),
    (np.uint32, "min", np.uint8),
    (np.uint32, "xor", np.uint8),
    (np.int64, "or", np.int32),
    (np.int32, "add", np.float64),
    (np.int16, "add", np.float32),
    (np.float32, "add", np.float64),
    (np.float64, "add", np.float32),
    (np.float32, "mul", np.float64),
    (np.float64, "max", np.float32),
]


@pytest.mark.parametrize("spelling", ["type", "dtype", "str"])
@pytest.mark.parametrize("n", [pytest.param(33, id="warp_plus_one_33"),
                               pytest.param(7 * NV + 5, id=f"many_tiles_{7 * NV + 5}")])
@pytest.mark.parametrize("in_dtype,op,dtype", DTYPE_ARG_CASES,
                         ids=[f"{np.dtype(i).name}-{o}-to-{np.dtype(d).name}"
                              for i, o, d in DTYPE_ARG_CASES])
def test_dtype_argument(in_dtype, op, dtype, n, spelling, rng):
    a = random_array(rng, in_dtype, (n,), op)
    arg = {"type": dtype, "dtype": np.dtype(dtype), "str": np.dtype(dtype).name}[spelling]
    for exclusive in (False, True):
        res = gpuscan.scan(a, op, exclusive=exclusive, dtype=arg)
        assert res.dtype == np.dtype(dtype)
        check_scan(res, a, op, exclusive=exclusive, dtype=dtype)


def test_dtype_int8_wraps_like_numpy():
    a = np.full(1000, 100, dtype=np.int8)
    res = gpuscan.scan(a, dtype=np.int8)
    np.testing.assert_array_equal(res, np.cumsum(a, dtype=np.int8))
    assert res.dtype == np.int8
    assert res.min() < 0  # it did wrap


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, object, "U3", "M8[s]"],
                         ids=["complex64", "complex128", "object", "str", "datetime64"])
def test_dtype_argument_unsupported(dtype):
    with pytest.raises(TypeError):
        gpuscan.scan(np.arange(5, dtype=np.int32), dtype=dtype)


@pytest.mark.parametrize("op", BITWISE_OPS)
def test_dtype_argument_float_bitwise(op):
    with pytest.raises(TypeError):
        gpuscan.scan(np.arange(5, dtype=np.int32), op, dtype=np.float64)


# ------------------------------------------------------------------------------------------
# out=: returns out, fixes the accumulation dtype, any strides, in place, errors.
# ------------------------------------------------------------------------------------------
OUT_LAYOUTS = ["contiguous", "stride_2", "reversed"]


def make_out(layout, n, dtype):
    if layout == "contiguous":
        return np.empty(n, dtype)
    if layout == "stride_2":
        return np.full(2 * n, 77, dtype)[::2]
    return np.empty(n, dtype)[::-1]


@pytest.mark.parametrize("layout", OUT_LAYOUTS)
@pytest.mark.parametrize("n", SMALL_SIZES)
@pytest.mark.parametrize("dtype,op", [(np.int64, "add"), (np.int32, "add"), (np.float32, "add"),
                                      (np.uint16, "max"), (np.float64, "min")],
                         ids=["int64-add", "int32-add", "float32-add", "uint16-max",
                              "float64-min"])
def test_out_returns_out(dtype, op, n, layout, rng):
    a = random_array(rng, dtype, (n,), op)
    before = frozen_copy(a)
    rt = result_dtype(a.dtype, op)
    out = make_out(layout, n, rt)
    if layout == "stride_2" and n:
        guard = out.base
        guard_before = guard[1::2].copy()
    for exclusive in (False, True):
        res = gpuscan.scan(a, op, exclusive=exclusive, out=out)
        assert res is out
        check_scan(out, a, op, exclusive=exclusive)
    if layout == "stride_2" and n:
        np.testing.assert_array_equal(guard[1::2], guard_before)  # gaps untouched
    assert_unchanged(a, before)


# (input dtype, out dtype): out fixes the accumulation dtype; same_kind decides what is allowed.
OUT_DTYPE_PAIRS = [(i, o) for i in [np.bool_, np.int8, np.int16, np.int64, np.uint8,
                                    np.uint32, np.uint64, np.float32, np.float64]
                   for o in [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint64,
                             np.float32, np.float64]]


@pytest.mark.parametrize("in_dtype,out_dtype", OUT_DTYPE_PAIRS,
                         ids=[f"{np.dtype(i).name}-into-{np.dtype(o).name}"
                              for i, o in OUT_DTYPE_PAIRS])
def test_out_dtype(in_dtype, out_dtype, rng):
    n = NV + 1
    a = random_array(rng, in_dtype, (n,), "add")
    if np.dtype(in_dtype).kind in "iu" and np.dtype(out_dtype).kind == "f":
        a = (a % 100).astype(in_dtype)  # keep the float sum's magnitudes modest
    out = np.empty(n, dtype=out_dtype)
    if not np.can_cast(in_dtype, out_dtype, "same_kind"):
        with pytest.raises(TypeError):
            gpuscan.scan(a, out=out)
        return
    res = gpuscan.scan(a, out=out)
    assert res is out
    assert out.dtype == np.dtype(out_dtype)
    # As NumPy: np.add.accumulate(a, out=out) accumulates in out's dtype.
    check_scan(out, a, "add", dtype=out_dtype)


def test_float_into_int_out_as_numpy_ufunc_calls():
    # The README's claim: gpuscan keeps the same_kind rule of NumPy's element-wise ufunc calls,
    # while np.cumsum and np.add.accumulate cast a float input into an integer out unsafely.
    f = np.array([1.5, 2.5, -0.25], dtype=np.float32)
    with pytest.raises(TypeError):
        np.add(f, f, out=np.empty(3, np.int64))
    with pytest.raises(TypeError, match="same_kind"):
        gpuscan.scan(f, out=np.empty(3, np.int64))
    np.testing.assert_array_equal(np.cumsum(f, out=np.empty(3, np.int64)), [1, 4, 3])
    np.testing.assert_array_equal(np.add.accumulate(f, out=np.empty(3, np.int64)), [1, 4, 3])


def test_out_int8_wraps():
    a = np.full(300, 100, dtype=np.int8)
    out = np.empty(300, dtype=np.int8)
    assert gpuscan.scan(a, out=out) is out
    np.testing.assert_array_equal(out, np.add.accumulate(a, dtype=np.int8))
    assert out.min() < 0


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("n", SMALL_SIZES[1:] + [pytest.param(2**20 + 17, id="over_2^20")])
@pytest.mark.parametrize("dtype,op", [(np.int64, "add"), (np.int8, "add"), (np.uint32, "mul"),
                                      (np.float64, "add"), (np.float32, "max"),
                                      (np.int16, "xor"), (np.uint64, "min")],
                         ids=["int64-add", "int8-add-wraps", "uint32-mul", "float64-add",
                              "float32-max", "int16-xor", "uint64-min"])
def test_in_place(dtype, op, n, exclusive, rng):
    a = random_array(rng, dtype, (n,), op)
    original = a.copy()
    res = gpuscan.scan(a, op, exclusive=exclusive, out=a)
    assert res is a
    # In place accumulates in a's own dtype, as np.add.accumulate(a, out=a) does.
    check_scan(a, original, op, exclusive=exclusive, dtype=dtype)


@pytest.mark.parametrize("view", ["stride_3", "reversed", "column_of_2d"])
def test_in_place_strided(view, rng):
    base = rng.integers(-1000, 1000, size=(3 * (NV + 5), 3), dtype=np.int64)
    keep = base.copy()
    v = {"stride_3": base[::3, 0], "reversed": base[::-1, 1], "column_of_2d": base[:, 2]}[view]
    original = v.copy()
    assert gpuscan.scan(v, out=v) is v
    np.testing.assert_array_equal(v, np.cumsum(original))
    # Everything outside the view is untouched.
    mask = np.ones(base.shape, bool)
    mask[{"stride_3": (slice(None, None, 3), 0), "reversed": (slice(None), 1),
          "column_of_2d": (slice(None), 2)}[view]] = False
    np.testing.assert_array_equal(base[mask], keep[mask])


def test_out_overlapping_input(rng):
    # out is the input seen backwards: NumPy's semantics are those of a copy of the input.
    a = rng.integers(-1000, 1000, size=NV + 3, dtype=np.int64)
    original = a.copy()
    out = a[::-1]
    assert gpuscan.scan(a, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(original))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_out_with_axis(axis, order, rng):
    a = rng.integers(-1000, 1000, size=(NV + 1, 3), dtype=np.int32)
    out = np.empty(a.shape, dtype=np.int64, order=order)
    assert gpuscan.scan(a, axis=axis, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(a, axis=axis))
    out2 = np.empty(a.shape, dtype=np.int64, order=order)
    assert gpuscan.scan(a, axis=axis, out=out2, exclusive=True) is out2
    check_scan(out2, a, "add", exclusive=True, axis=axis)


@pytest.mark.parametrize("dtype,op", [(np.int64, "add"), (np.float64, "max"),
                                      (np.uint32, "xor")], ids=["int64-add", "float64-max",
                                                                "uint32-xor"])
def test_out_byteswapped(dtype, op, rng):
    # A non-native out, as NumPy allows: the values land in out's byte order.
    a = random_array(rng, dtype, (NV + 1,), op)
    out = np.empty(NV + 1, dtype=np.dtype(dtype).newbyteorder())
    assert gpuscan.scan(a, op, out=out) is out
    check_scan(out, a, op)
    np.testing.assert_array_equal(out, scan_reference(a, op))


def test_out_axis_none_on_2d(rng):
    a = rng.integers(-1000, 1000, size=(7, 9), dtype=np.int64)
    out = np.empty(63, dtype=np.int64)
    assert gpuscan.scan(a, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(a))


@pytest.mark.parametrize("a_shape,axis,out_shape", [
    ((10,), None, (11,)), ((10,), None, (9,)), ((10,), None, (10, 1)), ((10,), None, ()),
    ((2, 5), None, (2, 5)), ((2, 5), 0, (5, 2)), ((2, 5), 1, (10,)), ((2, 5), 1, (2, 6)),
], ids=["one_long", "one_short", "2d_for_1d", "0d_for_1d", "2d_for_flattened", "transposed",
        "flat_for_2d", "wrong_2d"])
def test_out_wrong_shape(a_shape, axis, out_shape):
    a = np.arange(10, dtype=np.int64).reshape(a_shape)
    out = np.zeros(out_shape, dtype=np.int64)
    with pytest.raises(ValueError):
        gpuscan.scan(a, axis=axis, out=out)
    assert not out.any()


def test_out_read_only():
    a = np.arange(10, dtype=np.int64)
    out = np.empty(10, dtype=np.int64)
    out.flags.writeable = False
    with pytest.raises(ValueError):
        gpuscan.scan(a, out=out)
    b = np.arange(10, dtype=np.int64)
    b.flags.writeable = False
    with pytest.raises(ValueError):
        gpuscan.scan(b, out=b)
    np.testing.assert_array_equal(b, np.arange(10))


@pytest.mark.parametrize("out", [[0] * 10, (0,) * 10, "abcdefghij"], ids=["list", "tuple", "str"])
def test_out_not_an_array(out):
    with pytest.raises(TypeError):
        gpuscan.scan(np.arange(10, dtype=np.int64), out=out)


@pytest.mark.parametrize("out_dtype", [np.complex128, object], ids=["complex128", "object"])
def test_out_unsupported_dtype(out_dtype):
    with pytest.raises(TypeError):
        gpuscan.scan(np.arange(10, dtype=np.int64), out=np.empty(10, dtype=out_dtype))


@pytest.mark.parametrize("op", BITWISE_OPS)
def test_out_float_with_bitwise(op):
    with pytest.raises(TypeError):
        gpuscan.scan(np.arange(10, dtype=np.int32), op, out=np.empty(10, np.float64))


def test_out_and_dtype_agree(rng):
    a = rng.integers(-100, 100, size=50, dtype=np.int32)
    out = np.empty(50, dtype=np.int16)
    assert gpuscan.scan(a, dtype=np.int16, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(a, dtype=np.int16))


# ------------------------------------------------------------------------------------------
# Any input layout: strides, negative strides, byte order, alignment, broadcasts, array-likes.
# ------------------------------------------------------------------------------------------
LAYOUTS = ["stride_3", "reversed", "byteswapped", "byteswapped_strided", "unaligned",
           "fortran_column"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("dtype,op", [(np.int16, "add"), (np.int64, "add"), (np.uint32, "xor"),
                                      (np.int64, "mul"), (np.float32, "add"),
                                      (np.float64, "add"), (np.float64, "max"),
                                      (np.uint8, "min"), (np.bool_, "add")],
                         ids=["int16-add", "int64-add", "uint32-xor", "int64-mul",
                              "float32-add", "float64-add", "float64-max", "uint8-min",
                              "bool-add"])
def test_input_layouts(dtype, op, exclusive, layout, rng):
    base = random_array(rng, dtype, (7 * NV + 5,), op)
    a = make_layout(layout, base)
    np.testing.assert_array_equal(a, base)
    if layout == "unaligned" and a.dtype.itemsize > 1:
        assert not a.flags.aligned
    before = frozen_copy(a)
    res = gpuscan.scan(a, op, exclusive=exclusive)
    assert res.dtype.isnative
    check_scan(res, base, op, exclusive=exclusive)
    assert_unchanged(a, before)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("layout", ["transposed", "byteswapped_2d", "sliced_2d"])
def test_input_layouts_2d(layout, axis, rng):
    base = rng.integers(-2**31, 2**31, size=(NV + 1, 5), dtype=np.int64)
    a = {"transposed": np.ascontiguousarray(base.T).T,
         "byteswapped_2d": base.astype(">i8" if sys.byteorder == "little" else "<i8"),
         "sliced_2d": np.ascontiguousarray(np.repeat(base, 2, axis=1))[:, ::2]}[layout]
    np.testing.assert_array_equal(a, base)
    for exclusive in (False, True):
        check_scan(gpuscan.scan(a, exclusive=exclusive, axis=axis), base, exclusive=exclusive,
                   axis=axis)
        check_scan(gpuscan.scan(a, "max", exclusive=exclusive, axis=axis), base, "max",
                   exclusive=exclusive, axis=axis)


def test_broadcast_input(rng):
    a = np.broadcast_to(np.int32(7), (NV + 1,))  # stride 0, read-only
    np.testing.assert_array_equal(gpuscan.scan(a), np.cumsum(a))
    b = np.broadcast_to(rng.integers(0, 9, size=(1, 40), dtype=np.int16), (NV + 1, 40))
    np.testing.assert_array_equal(gpuscan.scan(b, axis=0), np.cumsum(b, axis=0))
    np.testing.assert_array_equal(gpuscan.scan(b, "xor", axis=1),
                                  np.bitwise_xor.accumulate(b, axis=1))


@pytest.mark.parametrize("value,op", [
    ([1, 2, 3, -4], "add"),
    ([1.5, 2.25, -3.0], "add"),
    ([True, False, True, True], "add"),
    ((5, 3, 9, 1, 7), "max"),
    ([[1, 2, 3], [4, 5, 6]], "mul"),
    (7, "add"),
    (2.5, "mul"),
    (np.int8(100), "add"),
    ([], "add"),
], ids=["int_list", "float_list", "bool_list", "tuple", "nested_list", "python_int",
        "python_float", "numpy_scalar", "empty_list"])
def test_array_likes(value, op):
    res = gpuscan.scan(value, op)
    assert isinstance(res, np.ndarray)
    check_scan(res, np.asarray(value), op)
    if op == "add":
        np.testing.assert_array_equal(res, np.cumsum(value))
        assert res.dtype == np.cumsum(value).dtype


def test_zero_dim_with_axis():
    # As np.cumsum: a 0-d input scans as a 1-element 1-D array, so axis 0 and -1 are valid.
    for axis in (0, -1):
        res = gpuscan.scan(np.int32(5), axis=axis)
        np.testing.assert_array_equal(res, np.cumsum(np.int32(5), axis=axis))
        assert res.shape == (1,) and res.dtype == np.int64
    with pytest.raises(np.exceptions.AxisError):
        gpuscan.scan(np.int32(5), axis=1)


# ------------------------------------------------------------------------------------------
# Floats: NaN and infinities, signed zeros, the accuracy bound, determinism.
# ------------------------------------------------------------------------------------------
def _nan_with_payload(dtype, payload, negative=False):
    dtype = np.dtype(dtype)
    u = np.dtype(f"u{dtype.itemsize}")
    nmant = np.finfo(dtype).nmant
    exp_bits = (2 ** (8 * dtype.itemsize - 1 - nmant) - 1) << nmant
    quiet = 1 << (nmant - 1)
    word = exp_bits | quiet | (payload % quiet)
    if negative:
        word |= 1 << (8 * dtype.itemsize - 1)
    return np.array(word, dtype=u).view(dtype)[()]


def _first_nan_bits(a, expected, axis=None):
    """The bits a min/max scan must give: NumPy's where NumPy's result is a number; where it is
    NaN, those of the first NaN of the input in scan order (both backends return that NaN, bit
    for bit).  NumPy's own NaN bits depend on its SIMD path (AVX-512 builds return the default
    NaN, others the operand), so they cannot be the oracle there."""
    a = np.asarray(a)
    if axis is None:
        a2, e2 = a.reshape(1, -1), np.asarray(expected).reshape(1, -1)
    else:
        a2, e2 = np.moveaxis(a, axis, -1), np.moveaxis(np.asarray(expected), axis, -1)
    out, abits = bits(e2).copy(), bits(a2)
    for idx in np.ndindex(a2.shape[:-1]):
        nans = np.flatnonzero(np.isnan(a2[idx]))
        if nans.size:
            out[idx][np.isnan(e2[idx])] = abits[idx][nans[0]]
    return out if axis is None else np.moveaxis(out, -1, axis)


NAN_POSITIONS = {
    "first": [0],
    "last": [-1],
    "tile_edge": [NV - 1, NV + 5],
    "next_tile_first": [NV],
    "two_payloads": [40, 3 * NV + 1],
    "many": list(range(17, 7 * NV, 997)),
}


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("where", list(NAN_POSITIONS))
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_min_max_nan_propagation(dtype, op, where, exclusive, rng):
    a = rng.uniform(-1e3, 1e3, 7 * NV + 5).astype(dtype)
    a[rng.integers(0, a.size, 50)] = np.inf
    a[rng.integers(0, a.size, 50)] = -np.inf
    for k, pos in enumerate(NAN_POSITIONS[where]):
        a[pos] = _nan_with_payload(dtype, 0x123 + 7 * k, negative=bool(k % 2))
    res = gpuscan.scan(a, op, exclusive=exclusive)
    expected = scan_reference(a, op, exclusive=exclusive)
    np.testing.assert_array_equal(res, expected)  # NaNs compare equal here
    np.testing.assert_array_equal(bits(res), _first_nan_bits(a, expected).reshape(-1))


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_min_max_nan_along_axis(dtype, op, rng):
    a = rng.uniform(-1, 1, (6, NV + 3)).astype(dtype)
    a[1, 5] = np.nan
    a[3, NV] = _nan_with_payload(dtype, 0x55, negative=True)
    a[4, 2] = a[4, 9] = np.nan
    for axis in (0, 1):
        res = gpuscan.scan(a, op, axis=axis)
        expected = scan_reference(a, op, axis=axis)
        np.testing.assert_array_equal(res, expected)
        np.testing.assert_array_equal(bits(res), _first_nan_bits(a, expected, axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_min_max_infinities_and_extremes(dtype, rng):
    info = np.finfo(dtype)
    a = rng.choice(np.array([np.inf, -np.inf, info.max, info.min, info.tiny, -info.tiny,
                             info.smallest_subnormal, 1.0], dtype=dtype), size=3 * NV)
    for op in ("min", "max"):
        for exclusive in (False, True):
            check_scan(gpuscan.scan(a, op, exclusive=exclusive), a, op, exclusive=exclusive)


@pytest.mark.parametrize("pattern", ["inf_once", "inf_then_minus_inf", "nan_once",
                                     "inf_at_tile_edge"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_add_non_finite_like_numpy(dtype, pattern, rng):
    # The contract is silent: NumPy's behaviour is the reference.  An infinity stays one (a
    # compensated sum must not turn it into NaN), inf + -inf is NaN, NaN stays NaN.
    a = rng.uniform(-1, 1, 3 * NV + 7).astype(dtype)
    if pattern == "inf_once":
        a[100] = np.inf
    elif pattern == "inf_then_minus_inf":
        a[100], a[2 * NV + 3] = np.inf, -np.inf
    elif pattern == "nan_once":
        a[NV + 1] = np.nan
    else:
        a[NV - 1] = -np.inf
    with np.errstate(invalid="ignore"):
        expected = np.cumsum(a)
    res = gpuscan.scan(a)
    np.testing.assert_array_equal(np.isnan(res), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(res), np.isposinf(expected))
    np.testing.assert_array_equal(np.isneginf(res), np.isneginf(expected))
    first_non_finite = int(np.argmin(np.isfinite(a)))
    assert_sum_within_bound(a[:first_non_finite], res[:first_non_finite])


@pytest.mark.parametrize("where", ["rows_of_one_tile", "across_tiles"])
def test_float32_add_overflow_stays_inf_like_numpy(where):
    # NumPy's running float32 sum is inf from the value that overflows it on, even where later
    # values would bring the exact sum back into range; the scan must not come back either (its
    # prefixes of earlier rows and tiles are kept wider than float32).  The three big values
    # sit a quarter tile apart (different rows of a tile: gpuscan/config.h) or in three tiles.
    a = np.zeros(3 * NV, np.float32)
    step = NV // 4 if where == "rows_of_one_tile" else NV
    a[[5, step + 5, 2 * step + 5]] = [3e38, 3e38, -3e38]
    with np.errstate(over="ignore"):
        expected = np.cumsum(a)
    res = gpuscan.scan(a)
    assert np.isposinf(expected[step + 5:]).all()
    np.testing.assert_array_equal(res, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_add_exact_on_integers_in_float(dtype, rng):
    # Small integers: every partial sum of any subset is exactly representable, so a sum built
    # from float additions in any order has nothing to round and equals NumPy's exactly.
    a = rng.integers(-3, 4, 7 * NV + 5).astype(dtype)
    res = gpuscan.scan(a)
    assert_sum_within_bound(a, res)
    np.testing.assert_array_equal(res, np.cumsum(a))
    np.testing.assert_array_equal(gpuscan.scan(a, exclusive=True)[1:], np.cumsum(a)[:-1])


BOUND_SIZES = [pytest.param(3 * 2**20, id="3x2^20"),
               pytest.param(2**24 + 3, id="2^24+3", marks=pytest.mark.slow)]


@pytest.mark.parametrize("data", ["uniform_0_1", "mixed_sign"])
@pytest.mark.parametrize("n", BOUND_SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_add_float_bound(dtype, n, data, rng):
    if data == "uniform_0_1":
        a = rng.random(n, dtype=dtype)
    else:
        a = rng.uniform(-1, 1, n).astype(dtype)
    res = gpuscan.scan(a)
    assert res.dtype == np.dtype(dtype)
    assert_sum_within_bound(a, res)


def test_numpy_float32_cumsum_misses_the_bound():
    # Shows that the bound test can fail: NumPy's sequential float32 cumsum of 3*2^20 uniform
    # [0, 1) values is off by several times the contract's bound.
    a = np.random.default_rng(3).random(3 * 2**20, dtype=np.float32)
    err, bound, slack = sum_error(a, np.cumsum(a))
    assert np.max(err - bound - slack) > 0
    assert np.max(err / np.maximum(bound, 1e-300)) > 2
    with pytest.raises(AssertionError, match="bound violated"):
        assert_sum_within_bound(a, np.cumsum(a))


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_add_float_bound_2_to_28(dtype):
    n = 2**28
    a = np.random.default_rng(28).random(n, dtype=dtype)
    res = gpuscan.scan(a)
    assert_sum_within_bound(a, res)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_add_bound_along_axis(dtype, rng):
    a = rng.random((3, 2**18 + 9), dtype=dtype)
    for axis in (0, 1):
        for exclusive in (False, True):
            res = gpuscan.scan(a, axis=axis, exclusive=exclusive)
            assert_sum_within_bound(a, res, exclusive=exclusive, axis=axis)


@pytest.mark.parametrize("op", ["add", "mul", "max"])
@pytest.mark.parametrize("n", [pytest.param(7 * NV + 5, id=f"many_tiles_{7 * NV + 5}"),
                               pytest.param(2**20 + 17, id="over_2^20")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_deterministic(dtype, n, op, rng):
    a = random_array(rng, dtype, (n,), op)
    first = gpuscan.scan(a, op)
    for _ in range(3):
        again = gpuscan.scan(a.copy(), op)
        assert np.array_equal(bits(first), bits(again)), "different bits on the same input"
    excl = gpuscan.scan(a, op, exclusive=True)
    assert np.array_equal(bits(excl), bits(gpuscan.scan(a, op, exclusive=True)))


REPEAT_CASES = [(np.int8, "xor"), (np.uint16, "add"), (np.int32, "xor"), (np.uint32, "mul"),
                (np.int64, "add"), (np.bool_, "or")]


@pytest.mark.parametrize("n", [pytest.param(2**20 + 17, id="over_2^20"),
                               pytest.param(2**22 + 3, id="over_2^22")])
@pytest.mark.parametrize("dtype,op", REPEAT_CASES,
                         ids=[f"{np.dtype(d).name}-{o}" for d, o in REPEAT_CASES])
def test_repeated_runs_stay_exact(dtype, op, n, rng):
    # A race between tiles (look-back, thread hand-off) shows up only on some runs: run each
    # large scan several times, in place and not, each time against NumPy.
    a = random_array(rng, dtype, (n,), op)
    expected = scan_reference(a, op, dtype=dtype)
    for exclusive in (False, True):
        want = scan_reference(a, op, exclusive=exclusive)
        for _ in range(4):
            assert np.array_equal(bits(gpuscan.scan(a, op, exclusive=exclusive)), bits(want))
    for _ in range(3):
        b = a.copy()
        gpuscan.scan(b, op, out=b)
        assert np.array_equal(bits(b), bits(expected))


def test_float16_optional(rng):
    a = rng.uniform(-1, 1, NV + 1).astype(np.float16)
    try:
        res = gpuscan.scan(a)
    except TypeError:
        # Optional in the contract; an unsupported float16 must be a TypeError like the others.
        pytest.skip("float16 is optional in the contract and this build rejects it (TypeError)")
    assert res.dtype == np.float16
    assert_sum_within_bound(a, res)
    for op in ("min", "max"):
        check_scan(gpuscan.scan(a, op, exclusive=True), a, op, exclusive=True)
    for op in BITWISE_OPS:
        with pytest.raises(TypeError):
            gpuscan.scan(a, op)


# ------------------------------------------------------------------------------------------
# algorithm=
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["hillis_steele", "blelloch"])
@pytest.mark.parametrize("dtype,op", [(np.int32, "add"), (np.int64, "mul"), (np.uint8, "max"),
                                      (np.int16, "xor"), (np.float64, "min")],
                         ids=["int32-add", "int64-mul", "uint8-max", "int16-xor",
                              "float64-min"])
def test_algorithm_variants_identical(algorithm, dtype, op, rng):
    a = random_array(rng, dtype, (7 * NV + 5,), op)
    res = gpuscan.scan(a, op, algorithm=algorithm)
    auto = gpuscan.scan(a, op, algorithm="auto")
    assert np.array_equal(bits(res), bits(auto))
    excl = gpuscan.scan(a, op, exclusive=True, algorithm=algorithm)
    assert np.array_equal(bits(excl), bits(gpuscan.scan(a, op, exclusive=True)))
    two_d = gpuscan.scan(a[:7 * NV].reshape(7, NV), op, axis=1, algorithm=algorithm)
    check_scan(two_d, a[:7 * NV].reshape(7, NV), op, axis=1)


@pytest.mark.parametrize("algorithm", ["bogus", "", "Auto", "cub", "hillis-steele"])
def test_algorithm_bad(algorithm):
    with pytest.raises(ValueError):
        gpuscan.scan(np.arange(10), algorithm=algorithm)


@pytest.mark.parametrize("algorithm", [None, 3], ids=["None", "int"])
def test_algorithm_not_a_string(algorithm):
    with pytest.raises((ValueError, TypeError)):
        gpuscan.scan(np.arange(10), algorithm=algorithm)


# ------------------------------------------------------------------------------------------
# Errors of the contract that concern scan.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["sum", "plus", "", "ADD", "prod", np.subtract,
                                np.hypot, np.fmod, len, None, 1.5, True],
                         ids=["sum", "plus", "empty", "ADD", "prod", "np.subtract",
                              "np.hypot", "np.fmod", "builtin_len", "None", "float",
                              "bool"])
def test_bad_op(op):
    with pytest.raises(ValueError) as info:
        gpuscan.scan(np.arange(10), op)
    message = str(info.value)
    for name in OPS:
        assert name in message, f"the ValueError should list the choices: {message!r}"


@pytest.mark.parametrize("axis", [0, 1, -1, np.int64(1)])
def test_integer_op_is_numpys_axis_habit(axis):
    # np.cumsum(m, 1) means axis=1; here the second argument is the operator.  NumPy's answer
    # for the call the user meant is what the hint leads to.
    m = np.arange(12).reshape(3, 4)
    with pytest.raises(TypeError, match=f"axis={int(axis)}"):
        gpuscan.scan(m, axis)
    np.testing.assert_array_equal(gpuscan.scan(m, axis=int(axis)), np.cumsum(m, int(axis)))
    with pytest.raises(TypeError, match="axis="):
        gpuscan.reduce(m, axis)
    np.testing.assert_array_equal(gpuscan.reduce(m, axis=int(axis)), np.sum(m, int(axis)))


@pytest.mark.parametrize("value", [
    np.array([1 + 2j, 3j], dtype=np.complex64),
    np.array([1 + 2j, 3j], dtype=np.complex128),
    np.array([1, 2], dtype=object),
    np.array(["a", "b"]),
    np.array([b"a", b"b"]),
    np.array(["2020-01-01", "2021-01-01"], dtype="M8[D]"),
    np.array([1, 2], dtype="m8[s]"),
    np.zeros(2, dtype=[("x", np.int32)]),
    [1, "a"],
], ids=["complex64", "complex128", "object", "str", "bytes", "datetime64", "timedelta64",
        "structured", "mixed_list"])
@pytest.mark.parametrize("op", ["add", "max"])
def test_unsupported_dtype(value, op):
    with pytest.raises(TypeError) as info:
        gpuscan.scan(value, op)
    message = str(info.value)
    assert "int32" in message and "float64" in message, \
        f"the TypeError should name the supported dtypes: {message!r}"


@pytest.mark.parametrize("op", BITWISE_OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_bitwise_on_float(dtype, op):
    for exclusive in (False, True):
        with pytest.raises(TypeError):
            gpuscan.scan(np.ones(5, dtype), op, exclusive=exclusive)
        with pytest.raises(TypeError):
            gpuscan.scan(np.ones((2, 3), dtype), op, exclusive=exclusive, axis=1)


@pytest.mark.parametrize("shape,axis", [((5,), 1), ((5,), -2), ((2, 3), 2), ((2, 3), -3),
                                         ((2, 3, 4), 3)],
                         ids=["1d_axis1", "1d_axis-2", "2d_axis2", "2d_axis-3", "3d_axis3"])
def test_axis_out_of_range(shape, axis):
    with pytest.raises(np.exceptions.AxisError):
        gpuscan.scan(np.ones(shape, np.int32), axis=axis)


@pytest.mark.parametrize("axis", [1.0, "0", (0,)], ids=["float", "str", "tuple"])
def test_axis_bad_type(axis):
    with pytest.raises(TypeError):
        gpuscan.scan(np.ones((2, 3), np.int32), axis=axis)


def test_keyword_only_arguments():
    a = np.arange(5)
    with pytest.raises(TypeError):
        gpuscan.scan(a, "add", True)  # exclusive is keyword-only
    with pytest.raises(TypeError):
        gpuscan.scan(a, bogus=1)
    with pytest.raises(TypeError):
        gpuscan.scan()


def test_arguments_by_keyword():
    a = np.arange(5)
    np.testing.assert_array_equal(gpuscan.scan(a=a, op="max"), np.maximum.accumulate(a))
    np.testing.assert_array_equal(gpuscan.scan(a, op=np.multiply, exclusive=True, axis=0,
                                               dtype=np.int64, out=None, algorithm="auto"),
                                  np.concatenate([[1], np.cumprod(a)[:-1]]))


def test_errors_leave_package_usable_and_leak_nothing(rng):
    a = rng.integers(-100, 100, size=NV + 1, dtype=np.int32)
    out = np.empty(NV + 1, dtype=np.int64)
    bad_out = np.empty(NV + 2, dtype=np.int64)
    ref_a, ref_out, ref_bad = sys.getrefcount(a), sys.getrefcount(out), sys.getrefcount(bad_out)
    for _ in range(50):
        with pytest.raises(ValueError):
            gpuscan.scan(a, "nope")
        with pytest.raises(ValueError):
            gpuscan.scan(a, out=bad_out)
        with pytest.raises(TypeError):
            gpuscan.scan(a.astype(np.float32), "xor")
        with pytest.raises(TypeError):
            gpuscan.scan(a.astype(np.float64), out=out)
        with pytest.raises(ValueError):
            gpuscan.scan(a, algorithm="nope")
        gpuscan.scan(a, out=out)
        gpuscan.scan(a, exclusive=True)
    assert sys.getrefcount(a) == ref_a
    assert sys.getrefcount(out) == ref_out
    assert sys.getrefcount(bad_out) == ref_bad
    np.testing.assert_array_equal(gpuscan.scan(a), np.cumsum(a))


@pytest.mark.parametrize("op", ["add", "max"])
def test_result_is_a_new_array(op, rng):
    a = rng.integers(1, 9, size=100, dtype=np.int64)
    res = gpuscan.scan(a, op)
    expected = res.copy()
    assert not np.shares_memory(res, a)
    assert res.flags.writeable and res.flags.c_contiguous
    a[:] = 0
    del a
    np.testing.assert_array_equal(res, expected)


# ------------------------------------------------------------------------------------------
# Threads: calls from several Python threads at once; the CPU backend at other thread counts.
# ------------------------------------------------------------------------------------------
def test_concurrent_calls():
    def scans(seed):
        r = np.random.default_rng(seed)
        for _ in range(10):
            a = r.integers(-2**31, 2**31, size=int(r.integers(1, 4 * NV)), dtype=np.int64)
            np.testing.assert_array_equal(gpuscan.scan(a), np.cumsum(a))
            f = r.random(int(r.integers(1, 4 * NV)), dtype=np.float32)
            assert_sum_within_bound(f, gpuscan.scan(f))

    run_in_threads(scans, timeout=120)


CPU_THREADS_SCRIPT = r"""
import numpy as np
import gpuscan
from reference import assert_sum_within_bound, scan_reference
assert gpuscan.backend() == "cpu", gpuscan.backend()
assert gpuscan.device_info()["threads"] == {threads}, gpuscan.device_info()
nv = gpuscan._gpuscan._config()["scan_tile_items"]
rng = np.random.default_rng(5)
for n in (0, 1, 33, nv - 1, nv + 1, 7 * nv + 5, 2**20 + 17):
    a = rng.integers(-2**62, 2**62, size=n, dtype=np.int64)
    for op in ("add", "mul", "min", "xor"):
        for exclusive in (False, True):
            assert np.array_equal(gpuscan.scan(a, op, exclusive=exclusive),
                                  scan_reference(a, op, exclusive=exclusive)), (n, op, exclusive)
    i8 = a.astype(np.int8)
    assert np.array_equal(gpuscan.scan(i8, dtype=np.int8), np.cumsum(i8, dtype=np.int8))
    f = rng.random(n, dtype=np.float32)
    assert_sum_within_bound(f, gpuscan.scan(f))
    assert_sum_within_bound(f, gpuscan.scan(f, exclusive=True), exclusive=True)
    m = rng.integers(-9, 9, size=(3, n), dtype=np.int32)
    assert np.array_equal(gpuscan.scan(m, axis=1), np.cumsum(m, axis=1))
    assert np.array_equal(gpuscan.scan(m, axis=0), np.cumsum(m, axis=0))
print("ok")
"""


@pytest.mark.parametrize("threads", [1, 3, 7, 16])
def test_cpu_backend_thread_counts(threads):
    proc = run_python(CPU_THREADS_SCRIPT.replace("{threads}", str(threads)),
                      env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_NUM_THREADS": str(threads)},
                      timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_long_call_releases_the_gil():
    # While one thread is inside a long scan, another thread keeps running Python: the longest
    # pause it sees is far shorter than the call (a call holding the GIL would stall it whole).
    import time
    n = 2**22
    while True:
        a = np.random.default_rng(9).random(n)
        gpuscan.scan(a)  # warm up (first-touch of pages, thread pool, device)
        t0 = time.perf_counter()
        gpuscan.scan(a)
        single = time.perf_counter() - t0
        if single >= 0.2 or n >= 2**27:
            break
        n *= 2
    if single < 0.05:
        pytest.skip(f"a scan of 2^27 doubles takes only {single:.3f} s here: nothing to measure")
    done = threading.Event()

    def worker():
        for _ in range(3):
            gpuscan.scan(a)
        done.set()

    thread = threading.Thread(target=worker)
    last = time.perf_counter()
    longest = 0.0
    thread.start()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    thread.join()
    assert longest < 0.5 * single, \
        f"the main thread stalled {longest:.3f} s during {single:.3f} s scans: GIL held?"


# ------------------------------------------------------------------------------------------
# Scale: more than 2^31 elements (64-bit sizes and indices everywhere).
# ------------------------------------------------------------------------------------------
def _available_memory():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@pytest.mark.slow
def test_more_than_2_31_elements():
    n = 2**31 + 2 * NV + 5
    if _available_memory() < 12 * 2**30:
        pytest.skip("needs 12 GiB of free host memory for 2^31+ one-byte elements")
    step = 2**27

    # add with dtype=int8 over ones: out[i] = (i + 1) mod 256 as int8 (exclusive: i mod 256).
    a = np.ones(n, dtype=np.int8)
    for exclusive in (False, True):
        res = gpuscan.scan(a, dtype=np.int8, exclusive=exclusive)
        assert res.shape == (n,) and res.dtype == np.int8
        period = ((np.arange(256) + (0 if exclusive else 1)) % 256).astype(np.uint8)
        period = period.view(np.int8)
        whole = n // 256 * 256
        for start in range(0, whole, step):  # step is a multiple of the period
            block = res[start:min(start + step, whole)].reshape(-1, 256)
            assert (block == period).all(), f"wrong values in [{start}, {start + step})"
        np.testing.assert_array_equal(res[whole:], period[: n - whole])
        np.testing.assert_array_equal(res[2**31 - 2: 2**31 + 2],
                                      period[np.arange(2**31 - 2, 2**31 + 2) % 256])
        del res

    # max over a few steps placed around the 2^31 boundary.
    a[:] = 0
    marks = {5: 1, 2**31 - 1: 2, 2**31: 3, 2**31 + NV: 4, n - 1: 5}
    for pos, val in marks.items():
        a[pos] = val
    res = gpuscan.scan(a, "max")
    assert res.dtype == np.int8
    edges = [0] + list(marks) + [n]
    levels = [0] + list(marks.values())
    for lo, hi, level in zip(edges[:-1], edges[1:], levels):
        for start in range(lo, hi, step):
            assert (res[start:min(start + step, hi)] == level).all(), (lo, hi, level)


# ---- Large scans: the drivers that only run over many tiles -------------------------------
# Every scan runs agent/scan.cuh's lookahead driver once the tiles fill the device several
# times over (dispatch/scan.cu: from about 2^23 values of 4 bytes, 2^22 of 8 bytes on an H200), one tile
# per block below; float add and mul look back from anchors 224 to 255 tiles back
# (device/lookback.cuh, gpuscan/config.h).  LOOKAHEAD_N reaches the lookahead driver on any current GPU, ANCHORED_N
# the anchors with one tile per block on the larger ones.
LOOKAHEAD_N = 2**23 + 2**22 + 7
ANCHORED_N = 700 * NV + 3

LOOKAHEAD_CASES = [(np.int32, np.int32, "add"), (np.int32, np.int32, "max"),
                   (np.uint8, np.uint64, "add"), (np.int64, np.int64, "add"),
                   (np.uint32, np.uint32, "xor"), (np.int16, np.int64, "add")]


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("dtype,acc,op", LOOKAHEAD_CASES,
                         ids=[f"{np.dtype(d).name}-{np.dtype(a).name}-{o}"
                              for d, a, o in LOOKAHEAD_CASES])
def test_large_exact_scan(dtype, acc, op, exclusive, rng):
    a = random_array(rng, dtype, (LOOKAHEAD_N,), op)
    res = gpuscan.scan(a, op, exclusive=exclusive, dtype=acc)
    np.testing.assert_array_equal(res, scan_reference(a, op, exclusive=exclusive, dtype=acc))


def test_large_exact_scan_along_axis(rng):
    a = rng.integers(-1000, 1000, size=(3, 2**22 + 5), dtype=np.int32)
    np.testing.assert_array_equal(gpuscan.scan(a, axis=1), np.cumsum(a, axis=1))
    np.testing.assert_array_equal(gpuscan.scan(a, "max", axis=1), np.maximum.accumulate(a, axis=1))


@pytest.mark.parametrize("n", [ANCHORED_N, LOOKAHEAD_N], ids=["anchored", "lookahead"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_large_float_add_deterministic_and_bounded(dtype, n, rng):
    a = rng.uniform(-1, 1, n).astype(dtype)
    first = gpuscan.scan(a)
    assert_sum_within_bound(a, first)
    assert np.array_equal(bits(first), bits(gpuscan.scan(a))), "different bits on the same input"
    excl = gpuscan.scan(a, exclusive=True)
    assert excl[0] == 0 and not np.signbit(excl[0])
    assert_sum_within_bound(a, excl, exclusive=True)


@pytest.mark.parametrize("n", [ANCHORED_N, LOOKAHEAD_N], ids=["anchored", "lookahead"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_large_float_mul_within_relative_bound(dtype, n, rng):
    # Factors near 1 keep the product finite; mul's bound is (i+1) eps relative, as NumPy's.
    a = (1 + rng.uniform(-1, 1, n) * 2.0**-12).astype(dtype)
    res = gpuscan.scan(a, "mul")
    assert_prod_within_bound(a, res)
    assert np.array_equal(bits(res), bits(gpuscan.scan(a, "mul")))


@pytest.mark.parametrize("n", [ANCHORED_N, LOOKAHEAD_N], ids=["anchored", "lookahead"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_large_float_segmented_and_rows(dtype, n, rng):
    # Heads anywhere, at tile starts and at anchor tiles: the look-back must cut the prefix there.
    x = rng.uniform(-1, 1, n).astype(dtype)
    f = rng.random(n) < 1e-4
    f[[NV - 1, NV, 32 * NV, 288 * NV, 289 * NV - 1, 600 * NV + 1]] = True
    check_segmented_scan(gpuscan.segmented_scan(x, f), x, f)
    rows = x[: (n // 3) * 3].reshape(3, -1)
    assert_sum_within_bound(rows, gpuscan.scan(rows, axis=1), axis=1)


# From GS_SCAN_L2_ITERS iterations of the lookahead grid on (2^26 four-byte values on an H100 or
# H200, kernels/agent/scan.cuh) each block also asks L2 for the tile a grid's width ahead: device
# arrays, so that one launch scans them whole.
L2_AHEAD_N = 2**26 + 7


@pytest.mark.gpu
def test_large_scans_asking_l2_ahead(rng):
    a = rng.integers(-1000, 1000, L2_AHEAD_N, dtype=np.int32)
    da = gpuscan.to_device(a)
    np.testing.assert_array_equal(gpuscan.scan(da, dtype=np.int32).get(),
                                  np.cumsum(a, dtype=np.int32))
    x = rng.uniform(-1, 1, L2_AHEAD_N).astype(np.float32)
    assert_sum_within_bound(x, gpuscan.scan(gpuscan.to_device(x)).get())
    f = rng.random(L2_AHEAD_N) < 1e-4
    check_segmented_scan(
        gpuscan.segmented_scan(da, gpuscan.to_device(f), dtype=np.int32).get(), a, f,
        dtype=np.int32)


# ---- Widening scans: the narrow input copied in 16-byte pieces -------------------------------
# Over many tiles the CUDA kernels copy a narrow input widened to 64 bits (uint8 -> uint64: two
# bytes a value of a thread's piece) into shared memory 16 bytes per copy, spread over the
# threads, which then read each other's values (kernels/agent/scan.cuh).  The input's and the
# output's alignment are independent: each of them misaligned (a view one element in) takes the
# value-by-value path on its side only.
WIDENING_CASES = [(np.bool_, np.int64), (np.int8, np.int64), (np.uint8, np.uint64),
                  (np.int16, np.int64), (np.uint16, np.uint64), (np.int32, np.int64),
                  (np.uint32, np.uint64)]


@pytest.mark.parametrize("n", [NV - 3, 3 * NV + 17, 40 * NV + 1, LOOKAHEAD_N],
                         ids=["one_tile", "tiles_and_a_tail", "many_tiles", "lookahead"])
@pytest.mark.parametrize("skew", ["aligned", "input_off", "output_off"])
@pytest.mark.parametrize("dtype,acc", WIDENING_CASES,
                         ids=[f"{np.dtype(d).name}-{np.dtype(a).name}" for d, a in WIDENING_CASES])
def test_widening_scan_pieces(dtype, acc, skew, n, rng):
    base = random_array(rng, dtype, (n + 1,))
    a = base[1:] if skew == "input_off" else base[:n]
    want = np.cumsum(a, dtype=acc)
    store = np.full(n + 1, 7, dtype=acc)
    out = store[1:] if skew == "output_off" else store[:n]
    res = gpuscan.scan(a, dtype=acc, out=out)
    assert res is out
    np.testing.assert_array_equal(out, want)
    assert store[0 if skew == "output_off" else n] == 7   # nothing written outside `out`
    excl = gpuscan.scan(a, dtype=acc, exclusive=True)
    np.testing.assert_array_equal(excl, np.concatenate([np.zeros(1, acc), want[:-1]]))


@pytest.mark.parametrize("dtype,acc", [(np.uint8, np.uint64), (np.int32, np.int64),
                                       (np.bool_, np.int64)], ids=["uint8", "int32", "bool"])
def test_widening_segmented_scan_pieces(dtype, acc, rng):
    n = 9 * NV + 5
    a = random_array(rng, dtype, (n,))
    f = rng.random(n) < 0.01
    f[[15, 16, NV - 1, NV, 4 * NV + 3]] = True   # heads at piece and tile edges
    check_segmented_scan(gpuscan.segmented_scan(a, f, dtype=acc), a, f, dtype=acc)
