"""gpuscan.segmented_scan against a plain-Python segmented scan and its vectorised twin (issue #3).

A nonzero flag starts a segment (element 0 always does); each segment is scanned on its own.
Integers, bool and float min/max must be bit-identical to the reference; float add must meet the
contract's bound per segment, (log2(n)+2)*eps*sum|x| over the segment up to i.  Sizes and head
positions are named after the path they reach (NV = values per tile of the device scan).  The
same tests run on whichever backend is active; the GPU-only ones are marked `gpu`.
"""
import sys

import numpy as np
import pytest

import gpuscan
from conftest import (DTYPE_IDS, DTYPES, LAYOUT_KINDS, NV, SHAPE_MISMATCHES, SMALL_SIZES,
                      make_layout, random_array)
from reference import (BITWISE_OPS, OPS, bits, check_segmented_scan, identity, result_dtype,
                       segmented_scan_python, segmented_scan_reference)


def random_flags(rng, n, density, dtype=np.bool_):
    """Flags with a head at each element with probability `density`, in `dtype`."""
    return (rng.random(n) < density).astype(dtype)


CLASSIC_FLAGS = [1, 0, 0, 1, 0, 0, 1, 0]
CLASSIC_A = [4, 2, 1, 3, 0, 2, 1, 5]


# ------------------------------------------------------------------------------------------
# The contract's example, and the plain-Python reference on small inputs.
# ------------------------------------------------------------------------------------------
def test_classic_example():
    a, flags = np.array(CLASSIC_A), np.array(CLASSIC_FLAGS)
    ex = gpuscan.segmented_scan(a, flags, exclusive=True)
    np.testing.assert_array_equal(ex, [0, 4, 6, 0, 3, 3, 0, 1])
    assert ex.dtype == np.int64
    np.testing.assert_array_equal(gpuscan.segmented_scan(a, flags), [4, 6, 7, 3, 3, 5, 1, 6])
    np.testing.assert_array_equal(gpuscan.segmented_scan(a, flags, "max"),
                                  [4, 4, 4, 3, 3, 3, 1, 5])
    # Lists, bool flags and the ufunc spelling give the same.
    np.testing.assert_array_equal(
        gpuscan.segmented_scan(CLASSIC_A, [bool(f) for f in CLASSIC_FLAGS], np.add,
                               exclusive=True), [0, 4, 6, 0, 3, 3, 0, 1])


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("op", OPS)
def test_python_reference_agrees(op, exclusive, rng):
    # The vectorised reference against the one-element-at-a-time definition, and gpuscan
    # against both, on small inputs with every kind of segment (length 1, long, at the ends).
    for n in (1, 2, 3, 8, 33, 100):
        a = random_array(rng, np.int16, (n,), op)
        flags = random_flags(rng, n, 0.3)
        slow = segmented_scan_python(a, flags, op, exclusive)
        fast = segmented_scan_reference(a, flags, op, exclusive)
        assert np.array_equal(bits(slow), bits(fast)), (n, op)
        res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
        assert np.array_equal(bits(res), bits(slow)), (n, op)


# ------------------------------------------------------------------------------------------
# The matrix: every dtype x op x inclusive/exclusive x size.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SMALL_SIZES)
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_segmented_matrix(dtype, op, exclusive, n, rng):
    a = random_array(rng, dtype, (n,), op)
    flags = random_flags(rng, n, 1 / 50)
    before, flags_before = a.copy(), flags.copy()
    if op in BITWISE_OPS and np.dtype(dtype).kind == "f":
        with pytest.raises(TypeError):
            gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
        return
    res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
    check_segmented_scan(res, a, flags, op, exclusive=exclusive)
    assert np.array_equal(bits(a), bits(before)) and np.array_equal(flags, flags_before)


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("dtype,op", [(np.int64, "add"), (np.float32, "add"),
                                      (np.float64, "add"), (np.int32, "max"), (np.uint8, "xor"),
                                      (np.float64, "min")],
                         ids=["int64-add", "float32-add", "float64-add", "int32-max",
                              "uint8-xor", "float64-min"])
def test_large(dtype, op, exclusive, rng):
    n = 2**20 + 17
    a = random_array(rng, dtype, (n,), op)
    flags = random_flags(rng, n, 1e-4)
    res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
    check_segmented_scan(res, a, flags, op, exclusive=exclusive)


@pytest.mark.parametrize("density", [1e-3, 1 / NV], ids=["every_1000th", "every_tile"])
@pytest.mark.parametrize("dtype,op", [(np.int32, "add"), (np.int64, "min")],
                         ids=["int32-add", "int64-min"])
def test_large_lookahead(dtype, op, density, rng):
    # Enough tiles for the lookahead driver of the exact operators (see test_scan.py).
    n = 2**23 + 2**22 + 7
    a = random_array(rng, dtype, (n,), op)
    flags = random_flags(rng, n, density, np.uint8)
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
        check_segmented_scan(res, a, flags, op, exclusive=exclusive)


# ------------------------------------------------------------------------------------------
# Head densities, from one head per 2 elements to one per 10^6; all heads; a single head.
# ------------------------------------------------------------------------------------------
DENSITIES = [
    pytest.param(1 / 2, 2**16, id="every_2nd"),
    pytest.param(1 / 10, 2**16, id="every_10th"),
    pytest.param(1 / 1000, 2**18, id="every_1000th"),
    pytest.param(1 / NV, 2**20, id="every_tile"),
    pytest.param(1e-6, 2**21, id="every_10^6th"),
]


@pytest.mark.parametrize("density,n", DENSITIES)
@pytest.mark.parametrize("dtype,op", [(np.int32, "add"), (np.float32, "add"),
                                      (np.int64, "min"), (np.uint16, "or")],
                         ids=["int32-add", "float32-add", "int64-min", "uint16-or"])
def test_densities(dtype, op, density, n, rng):
    a = random_array(rng, dtype, (n,), op)
    flags = random_flags(rng, n, density)
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
        check_segmented_scan(res, a, flags, op, exclusive=exclusive)


@pytest.mark.parametrize("n", [1, 33, NV + 1, 7 * NV + 5])
@pytest.mark.parametrize("op", OPS)
def test_all_heads(op, n, rng):
    # Every element its own segment: inclusive is the input (in the result dtype), exclusive
    # the identity everywhere.
    a = random_array(rng, np.int32, (n,), op)
    flags = np.ones(n, np.uint8)
    rt = result_dtype(a.dtype, op)
    np.testing.assert_array_equal(gpuscan.segmented_scan(a, flags, op), a.astype(rt))
    ex = gpuscan.segmented_scan(a, flags, op, exclusive=True)
    assert np.array_equal(bits(ex), bits(np.full(n, identity(op, rt))))


@pytest.mark.parametrize("where", ["none", "first", "middle", "last"])
@pytest.mark.parametrize("dtype,op", [(np.int64, "add"), (np.float64, "add"), (np.int8, "max"),
                                      (np.uint32, "mul")],
                         ids=["int64-add", "float64-add", "int8-max", "uint32-mul"])
def test_single_head(dtype, op, where, rng):
    # No head but element 0, or one more: the same as scan on each side of it.
    n = 7 * NV + 5
    a = random_array(rng, dtype, (n,), op)
    flags = np.zeros(n, np.int32)
    pos = {"none": 0, "first": 0, "middle": 3 * NV + 17, "last": n - 1}[where]
    if where != "none":
        flags[pos] = 7
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
        check_segmented_scan(res, a, flags, op, exclusive=exclusive)
        if pos == 0 and np.dtype(dtype).kind != "f":
            np.testing.assert_array_equal(res, gpuscan.scan(a, op, exclusive=exclusive))


HEAD_POSITIONS = {
    "tile_minus_one": [NV - 1],
    "tile": [NV],
    "tile_plus_one": [NV + 1],
    "every_tile_start": [k * NV for k in range(1, 8)],
    "around_every_tile": sorted({k * NV + d for k in range(1, 8) for d in (-1, 0, 1)}),
    "last_of_each_tile": [k * NV - 1 for k in range(1, 8)],
    "warp_edges": [31, 32, 33, 63, 64, NV + 31, NV + 32],
}


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("where", list(HEAD_POSITIONS))
@pytest.mark.parametrize("dtype,op", [(np.int64, "add"), (np.float32, "add"),
                                      (np.uint8, "max"), (np.int16, "xor"), (np.int64, "mul")],
                         ids=["int64-add", "float32-add", "uint8-max", "int16-xor",
                              "int64-mul"])
def test_heads_at_tile_boundaries(dtype, op, where, exclusive, rng):
    n = 7 * NV + 5
    a = random_array(rng, dtype, (n,), op)
    flags = np.zeros(n, np.bool_)
    flags[HEAD_POSITIONS[where]] = True
    res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
    check_segmented_scan(res, a, flags, op, exclusive=exclusive)


# Heads repeating with a stride (offset + k * stride).  On the device a lane holds a piece of 16
# bytes of each row (16, 8, 4 or 2 values: the dtypes below have each) and a warp 32 pieces, so
# these put the heads on the first or the last value of every piece, of every other piece, of
# every warp's span in a row, of every tile: patterns of the warp's ballot of heads that random
# flags seldom give.
LANE_PATTERNS = [(2, 0), (2, 1), (4, 0), (4, 3), (8, 5), (16, 15), (32, 0), (64, 63),
                 (128, 0), (128, 127), (128, 124), (512, 511), (NV, NV - 1)]


@pytest.mark.parametrize("stride,offset", LANE_PATTERNS,
                         ids=[f"{s}+{o}" for s, o in LANE_PATTERNS])
@pytest.mark.parametrize("dtype,op,kw", [(np.uint8, "max", {}), (np.int16, "xor", {}),
                                         (np.int32, "add", {"dtype": np.int32}),
                                         (np.float32, "add", {}), (np.int64, "max", {}),
                                         (np.uint8, "add", {}), (np.float64, "min", {})],
                         ids=["uint8-max", "int16-xor", "int32-add-int32", "float32-add",
                              "int64-max", "uint8-add", "float64-min"])
def test_heads_on_lane_patterns(dtype, op, kw, stride, offset, rng):
    n = 3 * NV + 5
    a = random_array(rng, dtype, (n,), op)
    flags = np.zeros(n, np.uint8)
    flags[offset::stride] = 1
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive, **kw)
        check_segmented_scan(res, a, flags, op, exclusive=exclusive, dtype=kw.get("dtype"))


# Heads per word of 64 values.  The CPU backend reads the heads of a chunk as words of 64 bits
# and restarts inside its loops: a word with no head takes the plain loops; a word with up to 4
# heads branches on them (1- and 2-byte dtypes: plain runs between the heads; 4- and 8-byte ones:
# the plain step for each vector of 8 or 4 values without a head, a segmented tree for the
# others); a denser word takes no branch (one value at a time with every start selected by a
# mask, or the segmented tree for every vector).  2^17 + 77 values: 32 chunks of 4096 (the carries, float add's and mul's
# carry-in before the first head), on several threads, and a tail of a partial word and vector.
HEADS_PER_WORD = [0, 1, 4, 5, 16, 63, 64]


def flags_per_word(rng, n, per_word):
    """Flags with exactly `per_word` heads, at random places, in every whole word of 64 values
    (and as many of the tail as fit)."""
    flags = np.zeros(n, np.bool_)
    for start in range(0, n, 64):
        width = min(64, n - start)
        flags[start + rng.choice(width, min(per_word, width), replace=False)] = True
    return flags


@pytest.mark.parametrize("per_word", HEADS_PER_WORD)
@pytest.mark.parametrize("dtype,op", [(np.bool_, "add"), (np.int8, "max"), (np.uint16, "xor"),
                                      (np.int16, "add"), (np.int32, "min"), (np.uint32, "add"),
                                      (np.int64, "mul"), (np.float32, "add"), (np.float32, "mul"),
                                      (np.float64, "add"), (np.float64, "max")],
                         ids=["bool-add", "int8-max", "uint16-xor", "int16-add", "int32-min",
                              "uint32-add", "int64-mul", "float32-add", "float32-mul",
                              "float64-add", "float64-max"])
def test_heads_per_word(dtype, op, per_word, rng):
    n = 2**17 + 77
    a = random_array(rng, dtype, (n,), op)
    flags = flags_per_word(rng, n, per_word)
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
        check_segmented_scan(res, a, flags, op, exclusive=exclusive)


# ------------------------------------------------------------------------------------------
# Flags of any dtype, at their own width; float flags: -0.0 is not a head, NaN is.
# ------------------------------------------------------------------------------------------
FLAG_DTYPES = [np.bool_, np.uint8, np.int8, np.int32, np.uint64, np.float32, np.float64]


@pytest.mark.parametrize("flag_dtype", FLAG_DTYPES,
                         ids=[np.dtype(d).name for d in FLAG_DTYPES])
def test_flag_dtypes(flag_dtype, rng):
    n = 3 * NV + 7
    a = rng.integers(-1000, 1000, size=n, dtype=np.int64)
    heads = rng.random(n) < 0.01
    flags = np.zeros(n, flag_dtype)
    # Heads as assorted nonzero values of the dtype (negative ones where it has them).
    values = {"b": [True], "u": [1, 2, 255], "i": [1, -1, 100], "f": [1.0, -2.5, 1e-30, np.inf]}
    kind = np.dtype(flag_dtype).kind
    flags[heads] = np.resize(np.array(values[kind], dtype=flag_dtype), int(heads.sum()))
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, exclusive=exclusive)
        expected = segmented_scan_reference(a, heads, "add", exclusive)
        np.testing.assert_array_equal(res, expected)


@pytest.mark.parametrize("flag_dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_float_flags_negative_zero_and_nan(flag_dtype):
    a = np.arange(1, 9, dtype=np.int32)
    flags = np.array([0.0, -0.0, np.nan, 0.0, -0.0, 0.5, -0.0, np.nan], dtype=flag_dtype)
    # Heads: 0 (always), 2 (NaN), 5 (0.5), 7 (NaN); -0.0 never.
    np.testing.assert_array_equal(gpuscan.segmented_scan(a, flags), [1, 3, 3, 7, 12, 6, 13, 8])
    np.testing.assert_array_equal(gpuscan.segmented_scan(a, flags, exclusive=True),
                                  [0, 1, 0, 3, 7, 0, 6, 0])


def test_bool_flags_take_one_byte_each(rng):
    # A bool flag array is passed as it is: no widened copy (the input would be 9 bytes per
    # element with int64 flags).  Checked through the result only; width is the backend's.
    n = NV + 3
    a = rng.integers(0, 9, size=n, dtype=np.int64)
    flags = rng.random(n) < 0.1
    res = gpuscan.segmented_scan(a, flags)
    check_segmented_scan(res, a, flags)
    assert flags.dtype == np.bool_


@pytest.mark.parametrize("flag_dtype", [np.float16, np.complex64, object, "U1"],
                         ids=["float16", "complex64", "object", "str"])
def test_unsupported_flag_dtype(flag_dtype):
    try:
        flags = np.zeros(4, dtype=flag_dtype)
    except TypeError:
        pytest.skip("NumPy cannot make these flags")
    if np.dtype(flag_dtype) == np.float16:
        try:
            gpuscan.scan(np.zeros(4, np.float16))
        except TypeError:
            pass
        else:
            pytest.skip("this build supports float16")
    with pytest.raises(TypeError):
        gpuscan.segmented_scan(np.arange(4), flags)


# ------------------------------------------------------------------------------------------
# Shapes: a and flags the same shape, scanned in C order, result of a's shape.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (4, 1, 33), (2, NV + 1), (0,), (3, 0)],
                         ids=["0d", "one", "2d", "3d", "2d_past_a_tile", "empty", "2d_empty"])
def test_shapes(shape, rng):
    a = rng.integers(-100, 100, size=shape, dtype=np.int32)
    flags = rng.random(shape) < 0.2
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, exclusive=exclusive)
        assert res.shape == a.shape
        check_segmented_scan(res, a, flags, exclusive=exclusive)


@pytest.mark.parametrize("a_shape,flags_shape", SHAPE_MISMATCHES)
def test_shape_mismatch(a_shape, flags_shape):
    with pytest.raises(ValueError):
        gpuscan.segmented_scan(np.zeros(a_shape), np.ones(flags_shape, bool))


# ------------------------------------------------------------------------------------------
# Layouts of a and flags; out= and in place; dtype=.
# ------------------------------------------------------------------------------------------
def layout(kind, base):
    return base if kind == "contiguous" else make_layout(kind, base)


@pytest.mark.parametrize("flags_layout", LAYOUT_KINDS)
@pytest.mark.parametrize("a_layout", LAYOUT_KINDS)
def test_layouts(a_layout, flags_layout, rng):
    n = 3 * NV + 7
    base = rng.integers(-2**40, 2**40, size=n, dtype=np.int64)
    heads = rng.random(n) < 0.01
    a = layout(a_layout, base)
    flags = layout(flags_layout, heads.astype(np.int32))
    for op in ("add", "max"):
        res = gpuscan.segmented_scan(a, flags, op, exclusive=True)
        check_segmented_scan(res, base, heads, op, exclusive=True)


def test_2d_non_contiguous(rng):
    a = rng.integers(-100, 100, size=(5, NV + 3), dtype=np.int32).T  # F order
    flags = (rng.random((NV + 3, 5)) < 0.05)[:, ::-1]
    res = gpuscan.segmented_scan(a, flags)
    assert res.shape == a.shape and res.flags.c_contiguous
    check_segmented_scan(res, a, flags)


@pytest.mark.parametrize("out_layout", ["contiguous", "stride_2", "reversed", "2d_fortran"])
def test_out(out_layout, rng):
    shape = (3, NV + 1) if out_layout == "2d_fortran" else (3 * NV + 3,)
    a = rng.integers(-1000, 1000, size=shape, dtype=np.int32)
    flags = rng.random(shape) < 0.01
    out = {"contiguous": lambda: np.empty(shape, np.int64),
           "stride_2": lambda: np.zeros(2 * shape[0], np.int64)[::2],
           "reversed": lambda: np.empty(shape, np.int64)[::-1],
           "2d_fortran": lambda: np.empty(shape, np.int64, order="F")}[out_layout]()
    for exclusive in (False, True):
        assert gpuscan.segmented_scan(a, flags, out=out, exclusive=exclusive) is out
        check_segmented_scan(out, a, flags, exclusive=exclusive)


def test_out_fixes_the_dtype_and_wraps(rng):
    a = np.full(300, 100, dtype=np.int8)
    flags = np.zeros(300, bool)
    flags[150] = True
    out = np.empty(300, np.int8)
    assert gpuscan.segmented_scan(a, flags, out=out) is out
    check_segmented_scan(out, a, flags, dtype=np.int8)
    assert out.min() < 0
    with pytest.raises(TypeError):  # same_kind: float into int
        gpuscan.segmented_scan(a.astype(np.float32), flags, out=out)


@pytest.mark.parametrize("dtype,op", [(np.int64, "add"), (np.float64, "add"), (np.int8, "max"),
                                      (np.uint32, "xor")],
                         ids=["int64-add", "float64-add", "int8-max", "uint32-xor"])
def test_in_place(dtype, op, rng):
    n = 7 * NV + 5
    a = random_array(rng, dtype, (n,), op)
    flags = random_flags(rng, n, 0.01)
    original = a.copy()
    for exclusive in (False, True):
        b = original.copy()
        assert gpuscan.segmented_scan(b, flags, op, exclusive=exclusive, out=b) is b
        check_segmented_scan(b, original, flags, op, exclusive=exclusive, dtype=dtype)


def test_out_is_the_flags(rng):
    # The flags are read while out is written: out=flags must still see the original flags.
    n = 3 * NV + 3
    a = rng.integers(0, 9, size=n, dtype=np.int64)
    flags = (rng.random(n) < 0.01).astype(np.int64)
    original = flags.copy()
    assert gpuscan.segmented_scan(a, flags, out=flags) is flags
    np.testing.assert_array_equal(flags, segmented_scan_reference(a, original))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.float32, np.float64],
                         ids=["int8", "int16", "float32", "float64"])
def test_dtype_argument(dtype, rng):
    n = NV + 5
    a = rng.integers(-100, 100, size=n, dtype=np.int32)
    flags = random_flags(rng, n, 0.01)
    for exclusive in (False, True):
        res = gpuscan.segmented_scan(a, flags, exclusive=exclusive, dtype=dtype)
        assert res.dtype == np.dtype(dtype)
        check_segmented_scan(res, a, flags, exclusive=exclusive, dtype=dtype)


def test_out_wrong_shape_and_read_only():
    a, flags = np.arange(8), np.array(CLASSIC_FLAGS)
    with pytest.raises(ValueError):
        gpuscan.segmented_scan(a, flags, out=np.empty(7, np.int64))
    with pytest.raises(ValueError):
        gpuscan.segmented_scan(a, flags, out=np.empty((2, 4), np.int64))
    ro = np.empty(8, np.int64)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        gpuscan.segmented_scan(a, flags, out=ro)


# ------------------------------------------------------------------------------------------
# Floats: NaN, determinism.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["min", "max"])
def test_nan_stays_in_its_segment(op):
    a = np.array([1.0, np.nan, 3.0, 0.5, 2.0, np.nan, 7.0], dtype=np.float64)
    flags = np.array([1, 0, 0, 1, 0, 1, 0], bool)
    res = gpuscan.segmented_scan(a, flags, op)
    assert np.isnan(res[[1, 2, 5, 6]]).all()
    assert not np.isnan(res[[0, 3, 4]]).any()
    check_segmented_scan(res, a, flags, op)


def test_deterministic(rng):
    n = 2**20 + 17
    a = random_array(rng, np.float32, (n,), "add")
    flags = random_flags(rng, n, 1e-5)
    first = gpuscan.segmented_scan(a, flags)
    again = gpuscan.segmented_scan(a.copy(), flags.copy())
    assert np.array_equal(bits(first), bits(again))


# ------------------------------------------------------------------------------------------
# Errors.
# ------------------------------------------------------------------------------------------
def test_algorithm():
    a, flags = np.arange(8), np.array(CLASSIC_FLAGS)
    np.testing.assert_array_equal(gpuscan.segmented_scan(a, flags, algorithm="auto"),
                                  segmented_scan_reference(a, flags))
    res = gpuscan.segmented_scan(a, flags, algorithm="blelloch")
    np.testing.assert_array_equal(res, segmented_scan_reference(a, flags))
    for bad in ("hillis_steele", "bogus", "", "Auto"):
        with pytest.raises(ValueError):
            gpuscan.segmented_scan(a, flags, algorithm=bad)


def test_errors():
    a, flags = np.arange(8), np.array(CLASSIC_FLAGS)
    with pytest.raises(ValueError):
        gpuscan.segmented_scan(a, flags, "sum")
    with pytest.raises(TypeError):
        gpuscan.segmented_scan(a.astype(np.float32), flags, "xor")
    with pytest.raises(TypeError):
        gpuscan.segmented_scan(a.astype(np.complex64), flags)
    with pytest.raises(TypeError):
        gpuscan.segmented_scan(a)  # flags is required
    with pytest.raises(TypeError):
        gpuscan.segmented_scan(a, flags, "add", True)  # exclusive is keyword-only


def test_errors_leak_nothing(rng):
    a = rng.integers(0, 9, size=NV + 1, dtype=np.int32)
    flags = rng.random(NV + 1) < 0.1
    refs = sys.getrefcount(a), sys.getrefcount(flags)
    for _ in range(50):
        with pytest.raises(ValueError):
            gpuscan.segmented_scan(a, flags[:-1])
        with pytest.raises(ValueError):
            gpuscan.segmented_scan(a, flags, out=np.empty(3, np.int64))
        gpuscan.segmented_scan(a, flags)
    assert (sys.getrefcount(a), sys.getrefcount(flags)) == refs


# ------------------------------------------------------------------------------------------
# Device arrays (CUDA backend only).
# ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("where", ["a", "flags", "both", "out"])
def test_device_arrays(where, rng):
    n = 7 * NV + 5
    a = rng.integers(-1000, 1000, size=n, dtype=np.int32)
    flags = random_flags(rng, n, 0.01)
    expected = segmented_scan_reference(a, flags, exclusive=True)
    da = gpuscan.to_device(a) if where in ("a", "both") else a
    df = gpuscan.to_device(flags) if where in ("flags", "both") else flags
    if where == "out":
        out = gpuscan.to_device(np.zeros(n, np.int64))
        assert gpuscan.segmented_scan(a, flags, exclusive=True, out=out) is out
        res = out
    else:
        res = gpuscan.segmented_scan(da, df, exclusive=True)
    assert isinstance(res, gpuscan.DeviceArray)
    np.testing.assert_array_equal(res.get(), expected)


@pytest.mark.gpu
def test_device_in_place_and_shapes(rng):
    a = rng.integers(-1000, 1000, size=(3, NV + 1), dtype=np.int64)
    flags = (rng.random((3, NV + 1)) < 0.01).astype(np.uint8)
    d = gpuscan.to_device(a)
    assert gpuscan.segmented_scan(d, gpuscan.to_device(flags), out=d) is d
    assert d.shape == a.shape
    np.testing.assert_array_equal(d.get(), segmented_scan_reference(a, flags).reshape(a.shape))
    df = gpuscan.to_device(flags.astype(np.int64))
    assert gpuscan.segmented_scan(a, df, out=df) is df  # out is the flags
    np.testing.assert_array_equal(df.get(), segmented_scan_reference(a, flags).reshape(a.shape))
