"""gpuscan.reduce against NumPy's ufunc.reduce (issue #3).

Integers, bool and float min/max must be bit-identical to np.<ufunc>.reduce in the contract's
accumulation dtype; float add must be within (log2(n)+2)*eps*sum|x| of the exact sum (n values
reduced) and give the same bits on every call.  Sizes are named after the path they reach: the
backends cut each row into chunks (gs_reduce_chunk_len: 4096 values, or for rows of more than 4096
such chunks about 4096 longer ones, at most 16384 values long) and combine the chunks' partials:
on the device in one launch up to as many chunks as blocks fit on it at once, in two past that
(test_row_counts_in_turn and test_long_rows reach both).  The same tests run on whichever backend
is active; the GPU-only ones are marked `gpu`.
"""
import sys

import numpy as np
import pytest

import gpuscan
from conftest import AXIS_CASE_IDS, AXIS_CASES, DTYPE_IDS, DTYPES, NV, random_array, run_python
from gpuscan import _gpuscan
from reference import BITWISE_OPS, OPS, UFUNCS, bits, check_reduce, identity, result_dtype

CHUNK = _gpuscan._reduce_chunk_items(1)  # the shortest chunk
SPLIT = 4096  # rows longer than SPLIT shortest chunks are cut into about SPLIT longer ones
LONG = SPLIT * CHUNK + 5  # chunks of 2 * CHUNK values, SPLIT / 2 + 1 of them
MAX_CHUNK = 4 * CHUNK  # the longest chunk (rows past SPLIT * MAX_CHUNK values)

SIZES = [
    pytest.param(1, id="one"),
    pytest.param(33, id="warp_plus_one_33"),
    pytest.param(NV + 1, id=f"tile_plus_one_{NV + 1}"),
    pytest.param(CHUNK - 1, id=f"chunk_minus_one_{CHUNK - 1}"),
    pytest.param(CHUNK, id=f"one_chunk_{CHUNK}"),
    pytest.param(CHUNK + 1, id=f"chunk_plus_one_{CHUNK + 1}"),
    pytest.param(3 * CHUNK + 5, id=f"many_chunks_{3 * CHUNK + 5}"),
]


def reduce_data(rng, dtype, shape, op):
    """random_array's data, except float mul: factors within 1% of +-1, whose partial products
    stay far from overflow and underflow in any grouping (scan data only bounds the prefix
    products, and a reduction groups them otherwise)."""
    if op == "mul" and np.dtype(dtype).kind == "f":
        n = int(np.prod(shape, dtype=np.int64))
        sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        return (sign * rng.uniform(0.99, 1.01, n)).astype(dtype).reshape(shape)
    return random_array(rng, dtype, shape, op)


def test_chunks_of_a_row():
    # 4096 values (a whole number of the widest 16-byte steps of a block and of the CPU's blocks)
    # up to SPLIT chunks; longer rows get about SPLIT chunks, each a multiple of 4096 values, up
    # to MAX_CHUNK values; longer rows still get more chunks of MAX_CHUNK values.
    chunk = _gpuscan._reduce_chunk_items
    assert CHUNK == 4096 and chunk(0) == chunk(NV + 1) == chunk(SPLIT * CHUNK) == CHUNK
    assert chunk(SPLIT * CHUNK + 1) == chunk(LONG) == 2 * CHUNK
    assert chunk(SPLIT * MAX_CHUNK) == chunk(SPLIT * MAX_CHUNK + 1) == MAX_CHUNK
    assert chunk(10**12 + 7) == MAX_CHUNK
    for n in [SPLIT * CHUNK + 1, 3 << 24, 1 << 26, (1 << 26) + 1, 1 << 28, 10**12 + 7]:
        c = chunk(n)
        assert c % CHUNK == 0 and c <= MAX_CHUNK
        if n <= SPLIT * MAX_CHUNK:
            assert SPLIT // 2 < -(-n // c) <= SPLIT, n
    with pytest.raises(ValueError):
        chunk(-1)


def test_scratch_bytes():
    # One chunk per row needs no scratch; more: a partial (16 bytes) per chunk plus counters.
    assert _gpuscan._reduce_scratch_bytes(0, 10 * CHUNK) == 0
    assert _gpuscan._reduce_scratch_bytes(5, CHUNK) == 0
    one = _gpuscan._reduce_scratch_bytes(1, CHUNK + 1)
    assert one >= 2 * 16
    assert _gpuscan._reduce_scratch_bytes(1, 3 * CHUNK) >= 3 * 16
    assert _gpuscan._reduce_scratch_bytes(64, 2 * CHUNK) >= 64 * 2 * 16
    with pytest.raises(ValueError):
        _gpuscan._reduce_scratch_bytes(-1, 5)


# ------------------------------------------------------------------------------------------
# The matrix: every dtype x op x size, axis=None.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reduce_matrix(dtype, op, n, rng):
    a = reduce_data(rng, dtype, (n,), op)
    before = a.copy()
    if op in BITWISE_OPS and np.dtype(dtype).kind == "f":
        with pytest.raises(TypeError):
            gpuscan.reduce(a, op)
        return
    res = gpuscan.reduce(a, op)
    check_reduce(res, a, op)
    assert np.array_equal(bits(a), bits(before))


@pytest.mark.parametrize("dtype,op", [(d, o) for d in DTYPES for o in OPS
                                      if not (o in BITWISE_OPS and np.dtype(d).kind == "f")],
                         ids=[f"{np.dtype(d).name}-{o}" for d in DTYPES for o in OPS
                              if not (o in BITWISE_OPS and np.dtype(d).kind == "f")])
def test_result_type_is_numpys(dtype, op):
    a = np.ones(3, dtype)
    res = gpuscan.reduce(a, op)
    expected = UFUNCS[op].reduce(a, dtype=result_dtype(a.dtype, op))
    assert type(res) is type(expected)
    assert res.dtype == result_dtype(a.dtype, op)
    if op == "add":
        assert res.dtype == np.sum(a).dtype
    if op == "mul":
        assert res.dtype == np.prod(a).dtype


def test_ufunc_spelling_and_default_op(rng):
    a = rng.integers(-100, 100, size=1000, dtype=np.int32)
    assert gpuscan.reduce(a) == np.add.reduce(a)
    for op in OPS:
        assert bits(np.asarray(gpuscan.reduce(a, UFUNCS[op]))) == \
            bits(np.asarray(gpuscan.reduce(a, op)))


# ------------------------------------------------------------------------------------------
# axis and keepdims on 1-D, 2-D and 3-D arrays.
# ------------------------------------------------------------------------------------------
def axis_forms(ndim):
    forms = [None] + list(range(-ndim, ndim)) + [()]
    if ndim >= 2:
        forms += [(0, 1), (1, 0), (-1, 0), tuple(range(ndim))]
    if ndim >= 3:
        forms += [(0, 2), (2, 0), (1, 2), (-2, -1)]
    return forms


SHAPES = [
    pytest.param((NV + 3,), id="1d"),
    pytest.param((7, 33), id="2d_small"),
    pytest.param((3, CHUNK + 1), id="2d_rows_over_a_chunk"),
    pytest.param((CHUNK + 1, 3), id="2d_long_columns"),
    pytest.param((4, 5, 33), id="3d_small"),
    pytest.param((2, 3, 2 * NV + 7), id="3d_rows_over_tiles"),
    pytest.param((33, 1, 7), id="3d_unit_axis"),
]


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
@pytest.mark.parametrize("dtype,op", AXIS_CASES, ids=AXIS_CASE_IDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_axis(shape, dtype, op, keepdims, rng):
    a = reduce_data(rng, dtype, shape, op)
    before = a.copy()
    for axis in axis_forms(a.ndim):
        res = gpuscan.reduce(a, op, axis=axis, keepdims=keepdims)
        check_reduce(res, a, op, axis=axis, keepdims=keepdims)
    assert np.array_equal(bits(a), bits(before))


# Columns: a reduced axis that is not the last one, read in place.  The CPU backend folds blocks
# of 4096 rows (combined in order) in groups of 4 rows, over tiles of up to 16384 columns,
# vectors of 8 or 4 columns and the columns past them one by one (every column of 1- and 2-byte
# dtypes); float add and mul keep a state per block, the other ops fold into the result itself.
# The shapes reach each: 1 to 5 rows (every group length), 4097 and 8193 (several blocks), 1, 7,
# 9, 17 and 33 columns (vectors and what is past them), 16385 (two tiles), few columns under many
# rows (single blocks as units of work on several threads), and 3-D runs of both.
COLUMN_SHAPES = [
    pytest.param((1, 9), 0, id="1x9"),
    pytest.param((2, 33), 0, id="2x33"),
    pytest.param((3, 7), 0, id="3x7"),
    pytest.param((4, 9), 0, id="4x9"),
    pytest.param((5, 17), 0, id="5x17"),
    pytest.param((4097, 9), 0, id="4097x9"),
    pytest.param((8193, 3), 0, id="8193x3"),
    pytest.param((2, 16385), 0, id="2x16385"),
    pytest.param((6, 2, 40000), 1, id="6x2x40000_axis1"),
    pytest.param((3, 9000, 5), 1, id="3x9000x5_axis1"),
]
COLUMN_CASES = [(np.bool_, "add"), (np.bool_, "max"), (np.bool_, "xor"), (np.uint8, "max"),
                (np.int8, "add"), (np.int16, "min"), (np.uint16, "xor"), (np.int32, "add"),
                (np.uint32, "mul"), (np.int64, "max"), (np.float32, "add"), (np.float32, "mul"),
                (np.float32, "max"), (np.float64, "add"), (np.float64, "min")]


@pytest.mark.parametrize("dtype,op", COLUMN_CASES,
                         ids=[f"{np.dtype(d).name}-{o}" for d, o in COLUMN_CASES])
@pytest.mark.parametrize("shape,axis", COLUMN_SHAPES)
def test_columns(shape, axis, dtype, op, rng):
    a = reduce_data(rng, dtype, shape, op)
    if a.dtype == np.bool_:  # bools whose bytes are any nonzero value, as NumPy reads them
        a = (a.view(np.uint8) * rng.integers(1, 256, shape, dtype=np.uint8)).view(np.bool_)
    elif a.dtype.kind == "f" and op != "mul":
        a.ravel()[rng.choice(a.size, max(1, a.size // 1000), replace=False)] = np.nan
    res = gpuscan.reduce(a, op, axis=axis)
    if a.dtype == np.bool_:
        # NumPy returns a single row's bytes as they are; gpuscan's bools are 0 or 1
        check_reduce(res, a.view(np.uint8) != 0, op, axis=axis)
        assert res.dtype != np.bool_ or np.all(res.view(np.uint8) <= 1)
    else:
        check_reduce(res, a, op, axis=axis)
    if a.dtype.kind == "f":  # the same bits on every call
        assert np.array_equal(bits(res), bits(gpuscan.reduce(a, op, axis=axis)))


def test_columns_scratch_is_bounded():
    # Reducing (2, 2^26) uint8 over axis 0 needs no memory beyond the input and the output, what
    # ever the number of columns (the CPU backend once took 48 bytes of scratch per column:
    # 3 GiB here, and a MemoryError at (2, 2^30)).
    code = """
import resource, numpy as np, gpuscan
a = np.zeros((2, 2**26), np.uint8)
a[1, ::3] = 7
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = gpuscan.reduce(a, "max", axis=0)
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
assert r.shape == (2**26,) and r.dtype == np.uint8 and r[0] == 7 and r[1] == 0, r[:4]
print(grew * 1024)
"""
    proc = run_python(code, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    grew = int(proc.stdout.split()[-1])
    assert grew <= 2**26 + 256 * 2**20, f"the peak resident size grew by {grew} bytes"


def test_full_reduction_is_a_numpy_scalar():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    for axis in (None, (0, 1), (1, 0), (-1, -2)):
        res = gpuscan.reduce(a, axis=axis)
        assert type(res) is np.int64 and res == 66
    kept = gpuscan.reduce(a, axis=None, keepdims=True)
    assert isinstance(kept, np.ndarray) and kept.shape == (1, 1) and kept[0, 0] == 66
    zero_d = gpuscan.reduce(np.float32(2.5))
    assert type(zero_d) is np.float32 and zero_d == 2.5
    none = gpuscan.reduce(a, axis=())
    assert isinstance(none, np.ndarray) and none.shape == a.shape
    np.testing.assert_array_equal(none, np.add.reduce(a, axis=()))


@pytest.mark.parametrize("axis", [(0, 0), (1, -1), (0, 1, 0)], ids=["0_0", "1_-1", "0_1_0"])
def test_duplicate_axes(axis):
    with pytest.raises(ValueError, match="duplicate"):
        gpuscan.reduce(np.ones((2, 3)), axis=axis)


@pytest.mark.parametrize("shape,axis", [((5,), 1), ((5,), -2), ((2, 3), 2), ((2, 3), (0, 2)),
                                         ((2, 3), (-3,)), ((), (0,))],
                         ids=["1d_1", "1d_-2", "2d_2", "2d_tuple_0_2", "2d_tuple_-3", "0d_tuple_0"])
def test_axis_out_of_range(shape, axis):
    with pytest.raises(np.exceptions.AxisError):
        gpuscan.reduce(np.ones(shape), axis=axis)


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
@pytest.mark.parametrize("axis", [0, -1, (), None], ids=["0", "-1", "empty_tuple", "None"])
def test_zero_dim_axis_like_numpy(axis, keepdims):
    # NumPy's reductions take a plain axis of 0 or -1 on a 0-d array and reduce nothing.
    a = np.array(5, dtype=np.int32)
    res = gpuscan.reduce(a, axis=axis, keepdims=keepdims)
    expected = np.add.reduce(a, axis=axis, keepdims=keepdims)
    assert np.shape(res) == np.shape(expected)
    assert np.asarray(res).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(res, expected)


@pytest.mark.parametrize("axis", [(0,), 1, -2], ids=["tuple_0", "1", "-2"])
def test_zero_dim_axis_out_of_range(axis):
    with pytest.raises(np.exceptions.AxisError):
        np.add.reduce(np.array(5), axis=axis)
    with pytest.raises(np.exceptions.AxisError):
        gpuscan.reduce(np.array(5), axis=axis)


@pytest.mark.parametrize("axis", [1.0, "0", [0], (0.5,)],
                         ids=["float", "str", "list", "tuple_float"])
def test_axis_bad_type(axis):
    with pytest.raises(TypeError):
        gpuscan.reduce(np.ones((2, 3)), axis=axis)


def test_row_sums_of_a_wide_float32_matrix(rng):
    a = rng.uniform(-1, 1, size=(64, 70000)).astype(np.float32)
    res = gpuscan.reduce(a, axis=1)
    assert res.shape == (64,) and res.dtype == np.float32
    check_reduce(res, a, axis=1)
    # Each row gives the bits that reducing it alone gives.
    for r in (0, 31, 63):
        assert bits(np.asarray(gpuscan.reduce(a[r]))) == bits(res[r:r + 1])
    check_reduce(gpuscan.reduce(a, axis=0), a, axis=0)


# ------------------------------------------------------------------------------------------
# dtype=: accumulation and result type, wrapping like NumPy.
# ------------------------------------------------------------------------------------------
DTYPE_ARG_CASES = [
    (np.int8, "add", np.int8), (np.uint8, "add", np.uint8), (np.uint16, "add", np.uint8),
    (np.int64, "add", np.int16), (np.bool_, "add", np.int8), (np.int8, "add", np.uint64),
    (np.int32, "mul", np.int8), (np.int16, "max", np.int8), (np.uint32, "xor", np.uint8),
    (np.int32, "add", np.float64), (np.float32, "add", np.float64),
    (np.float64, "add", np.float32), (np.float64, "max", np.float32),
    (np.float64, "add", np.int32), (np.bool_, "add", np.bool_),
]


@pytest.mark.parametrize("in_dtype,op,dtype", DTYPE_ARG_CASES,
                         ids=[f"{np.dtype(i).name}-{o}-to-{np.dtype(d).name}"
                              for i, o, d in DTYPE_ARG_CASES])
def test_dtype_argument(in_dtype, op, dtype, rng):
    a = reduce_data(rng, in_dtype, (3, CHUNK + 7), op)
    for axis in (None, 1, 0):
        res = gpuscan.reduce(a, op, axis=axis, dtype=dtype)
        assert np.asarray(res).dtype == np.dtype(dtype)
        check_reduce(res, a, op, axis=axis, dtype=dtype)


def test_int8_sum_wraps_like_numpy():
    a = np.full(1000, 100, dtype=np.int8)
    res = gpuscan.reduce(a, dtype=np.int8)
    assert type(res) is np.int8 and res == np.add.reduce(a, dtype=np.int8)
    assert gpuscan.reduce(a) == 100000  # the default widens to int64


@pytest.mark.parametrize("dtype", [np.complex64, object, "U3", "M8[s]"],
                         ids=["complex64", "object", "str", "datetime64"])
def test_unsupported_dtype(dtype):
    with pytest.raises(TypeError):
        gpuscan.reduce(np.arange(5, dtype=np.int32), dtype=dtype)
    try:
        a = np.zeros(3, dtype=dtype)
    except TypeError:
        return
    with pytest.raises(TypeError) as info:
        gpuscan.reduce(a)
    assert "int32" in str(info.value) and "float64" in str(info.value)


@pytest.mark.parametrize("op", BITWISE_OPS)
def test_bitwise_on_float(op):
    with pytest.raises(TypeError):
        gpuscan.reduce(np.ones(5), op)
    with pytest.raises(TypeError):
        gpuscan.reduce(np.arange(5), op, dtype=np.float32)


@pytest.mark.parametrize("op", ["sum", "", np.subtract, np.arctan2, None, 1.0])
def test_bad_op(op):
    with pytest.raises(ValueError) as info:
        gpuscan.reduce(np.arange(5), op)
    assert all(name in str(info.value) for name in OPS)


# ------------------------------------------------------------------------------------------
# Empty reductions: the identity, or NumPy's ValueError for min/max.
# ------------------------------------------------------------------------------------------
EMPTY_CASES = [((0,), None), ((0, 3), 0), ((0, 3), None), ((3, 0), 1), ((0, 0), 0),
               ((2, 0, 4), (1,)), ((2, 0, 4), (0, 1))]


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
@pytest.mark.parametrize("shape,axis", EMPTY_CASES,
                         ids=[f"{'x'.join(map(str, s))}-axis{a}" for s, a in EMPTY_CASES])
@pytest.mark.parametrize("dtype,op", [(d, o) for d in (np.bool_, np.int8, np.uint16, np.int64,
                                                       np.float32) for o in OPS
                                      if not (o in BITWISE_OPS and np.dtype(d).kind == "f")],
                         ids=[f"{np.dtype(d).name}-{o}" for d in (np.bool_, np.int8, np.uint16,
                                                                  np.int64, np.float32)
                              for o in OPS
                              if not (o in BITWISE_OPS and np.dtype(d).kind == "f")])
def test_empty(dtype, op, shape, axis, keepdims):
    a = np.zeros(shape, dtype)
    if op in ("min", "max"):
        with pytest.raises(ValueError) as info:
            gpuscan.reduce(a, op, axis=axis, keepdims=keepdims)
        with pytest.raises(ValueError) as numpy_info:
            UFUNCS[op].reduce(a, axis=axis, keepdims=keepdims)
        assert str(info.value) == str(numpy_info.value)
        return
    res = gpuscan.reduce(a, op, axis=axis, keepdims=keepdims)
    check_reduce(res, a, op, axis=axis, keepdims=keepdims)
    ident = identity(op, result_dtype(dtype, op))
    assert np.all(bits(np.asarray(res).ravel()) == bits(ident.reshape(1)))


def test_empty_rows():
    # No rows to reduce (rows == 0): an empty result of the right shape, for min/max too.
    a = np.zeros((3, 0), np.float64)
    for op in ("add", "min", "max"):
        res = gpuscan.reduce(a, op, axis=0)
        assert isinstance(res, np.ndarray) and res.shape == (0,) and res.dtype == np.float64
        assert gpuscan.reduce(a, op, axis=0, keepdims=True).shape == (1, 0)


# ------------------------------------------------------------------------------------------
# Floats: accuracy, determinism, NaN.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [pytest.param(3 * CHUNK + 5, id=f"many_chunks_{3 * CHUNK + 5}"),
                               pytest.param(2**21 + 3, id="over_2^21"),
                               pytest.param(LONG, id=f"long_chunks_{LONG}")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_float_add_bound_and_determinism(dtype, n, rng):
    a = random_array(rng, dtype, (n,), "add")
    res = gpuscan.reduce(a)
    check_reduce(res, a)
    for _ in range(2):
        assert bits(np.asarray(gpuscan.reduce(a.copy()))) == bits(np.asarray(res))
    # A cancelling sum: large terms that cancel, small ones that remain.
    big = np.concatenate([a * 1e6, -a * 1e6, a])
    check_reduce(gpuscan.reduce(big), big)


@pytest.mark.parametrize("dtype,op", [(np.int32, "add"), (np.int64, "add"), (np.uint8, "max"),
                                      (np.float32, "max"), (np.float64, "min"), (np.int16, "or")],
                         ids=["int32-add", "int64-add", "uint8-max", "float32-max", "float64-min",
                              "int16-or"])
def test_long_rows(dtype, op, rng):
    # Rows past SPLIT shortest chunks: longer chunks, and rows of them side by side.
    a = reduce_data(rng, dtype, (LONG,), op)
    check_reduce(gpuscan.reduce(a, op), a, op)
    b = reduce_data(rng, dtype, (2, LONG), op)
    check_reduce(gpuscan.reduce(b, op, axis=1), b, op, axis=1)


def test_row_counts_in_turn(rng):
    # Reductions of several chunks per row, one after the other with more and fewer rows: on the
    # device they share one scratch, where an earlier call's partials lie where a later call
    # with more rows keeps its counters.
    for rows, cols in [(1, 3 * CHUNK + 5), (70, CHUNK + 1), (1, 2 * CHUNK), (300, CHUNK + 7),
                       (2, 5 * CHUNK), (70, CHUNK + 1), (1000, 2 * CHUNK), (3, CHUNK + 1)]:
        a = rng.integers(-1000, 1000, (rows, cols)).astype(np.int32)
        check_reduce(gpuscan.reduce(a, axis=1), a, "add", axis=1)
        b = rng.random((cols, rows)) < 0.5    # bool columns, as in test_cpu_backend
        check_reduce(gpuscan.reduce(b, axis=0), b, "add", axis=0)


@pytest.mark.parametrize("where", ["first", "last", "chunk_edge", "two", "only"])
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_nan_propagates(dtype, op, where, rng):
    n = 3 * CHUNK + 5
    a = reduce_data(rng, dtype, (n,), op)
    pos = {"first": [0], "last": [n - 1], "chunk_edge": [CHUNK - 1, CHUNK],
           "two": [17, 2 * CHUNK + 3], "only": list(range(n))}[where]
    a[pos] = np.nan
    res = gpuscan.reduce(a, op)
    assert np.isnan(res)
    # The first NaN, bit for bit.
    assert bits(np.asarray(res)) == bits(a[pos[0]:pos[0] + 1])
    rows = gpuscan.reduce(a[:3 * CHUNK].reshape(3, CHUNK), op, axis=1)
    np.testing.assert_array_equal(np.isnan(rows),
                                  np.isnan(a[:3 * CHUNK].reshape(3, CHUNK)).any(axis=1))


def test_infinities():
    a = np.array([1.0, np.inf, -2.0], np.float64)
    assert gpuscan.reduce(a) == np.inf
    assert np.isnan(gpuscan.reduce(np.array([np.inf, -np.inf])))
    assert gpuscan.reduce(a, "min") == -2.0 and gpuscan.reduce(a, "max") == np.inf


# ------------------------------------------------------------------------------------------
# Input layouts and array-likes.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["stride_3", "reversed", "byteswapped", "fortran", "unaligned"])
def test_layouts(layout, rng):
    base = rng.integers(-2**40, 2**40, size=(6, CHUNK // 4 + 3), dtype=np.int64)
    if layout == "stride_3":
        a = np.repeat(base, 3, axis=1)[:, ::3]
    elif layout == "reversed":
        a = base[::-1, ::-1].copy()[::-1, ::-1]
    elif layout == "byteswapped":
        a = base.astype(base.dtype.newbyteorder())
    elif layout == "fortran":
        a = np.asfortranarray(base)
    else:
        raw = np.zeros(base.nbytes + 1, np.uint8)
        raw[1:] = base.view(np.uint8).ravel()
        a = raw[1:].view(np.int64).reshape(base.shape)
    np.testing.assert_array_equal(a, base)
    for op in ("add", "max", "xor"):
        for axis in (None, 0, 1, (0, 1)):
            check_reduce(gpuscan.reduce(a, op, axis=axis), base, op, axis=axis)


@pytest.mark.parametrize("value", [[1, 2, 3], [1.5, -2.0], [[1, 2], [3, 4]], 7, True, []],
                         ids=["int_list", "float_list", "nested", "python_int", "python_bool",
                              "empty_list"])
def test_array_likes(value):
    res = gpuscan.reduce(value)
    check_reduce(res, np.asarray(value))
    np.testing.assert_array_equal(res, np.sum(value))


def test_errors_leak_nothing(rng):
    a = rng.integers(0, 9, size=NV + 1, dtype=np.int32)
    ref = sys.getrefcount(a)
    for _ in range(50):
        with pytest.raises(ValueError):
            gpuscan.reduce(a, "nope")
        with pytest.raises(ValueError):
            gpuscan.reduce(a[:0], "min")
        with pytest.raises(np.exceptions.AxisError):
            gpuscan.reduce(a, axis=3)
        gpuscan.reduce(a, axis=0)
    assert sys.getrefcount(a) == ref


def test_keyword_only_arguments():
    with pytest.raises(TypeError):
        gpuscan.reduce(np.arange(5), "add", 0)  # axis is keyword-only
    with pytest.raises(TypeError):
        gpuscan.reduce(np.arange(5), "add", None, None, np.empty(()))  # out is keyword-only
    assert gpuscan.reduce(a=np.arange(5), op="max", axis=0, dtype=None, keepdims=False) == 4


# ------------------------------------------------------------------------------------------
# Device arrays (CUDA backend only).
# ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype,op", [(np.int32, "add"), (np.float32, "add"),
                                      (np.float64, "max"), (np.uint8, "xor")],
                         ids=["int32-add", "float32-add", "float64-max", "uint8-xor"])
def test_device_input(dtype, op, rng):
    a = reduce_data(rng, dtype, (5, CHUNK + 3), op)
    d = gpuscan.to_device(a)
    full = gpuscan.reduce(d, op)
    assert isinstance(full, gpuscan.DeviceArray) and full.shape == ()
    host = gpuscan.reduce(a, op)
    assert bits(full.get()) == bits(np.asarray(host))
    for axis, keepdims in ((1, False), (0, True), ((0, 1), True)):
        res = gpuscan.reduce(d, op, axis=axis, keepdims=keepdims)
        assert isinstance(res, gpuscan.DeviceArray)
        want = gpuscan.reduce(a, op, axis=axis, keepdims=keepdims)
        assert res.shape == np.shape(want)
        assert np.array_equal(bits(res.get()), bits(np.asarray(want)))


@pytest.mark.gpu
def test_device_empty_and_errors():
    d = gpuscan.to_device(np.zeros((3, 0), np.int32))
    res = gpuscan.reduce(d, axis=1)
    assert isinstance(res, gpuscan.DeviceArray)
    np.testing.assert_array_equal(res.get(), np.zeros(3, np.int64))
    assert gpuscan.reduce(d, "mul", axis=0).shape == (0,)
    with pytest.raises(ValueError):
        gpuscan.reduce(d, "min", axis=1)
