"""gpuscan.reduceat and gpuscan.segmented_reduce against NumPy's ufunc.reduceat (issue #17).

Integers, bool and float min/max must be bit-identical to np.<ufunc>.reduceat in the contract's
accumulation dtype; float add within (log2(len)+2)*eps*sum|x| of each slice's exact sum, float mul
within len*eps, and the same bits on every call.  Index patterns are named after the path they
reach: a sorted partition (strictly increasing indices: one pass over the values on CUDA, the
segments read from the starts), and any other indices (repeated, decreasing: explicit slices).
Sizes around the scan tile NV exercise the tiles' boundaries and the carries across them.  The
same tests run on whichever backend is active; the GPU-only ones are marked `gpu`.
"""
import numpy as np
import pytest

import gpuscan
from conftest import (DTYPE_IDS, DTYPES, NV, SHAPE_MISMATCHES, make_layout,
                      outputs_on_thread_counts, random_array)
from gpuscan import _gpuscan
from reference import (BITWISE_OPS, OPS, UFUNCS, bits, check_reduceat, check_segmented_reduce,
                       reduceat_python)

N_TILES = 3 * NV + 5  # three tiles and a tail


def data(rng, dtype, n, op):
    """Values for reducing slices under op: random_array's, except float mul (factors within 1% of
    +-1, whose products over any slice stay far from overflow and underflow)."""
    if op == "mul" and np.dtype(dtype).kind == "f":
        sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        return (sign * rng.uniform(0.99, 1.01, n)).astype(dtype)
    return random_array(rng, dtype, (n,), op)


def index_patterns(n):
    """Named index lists for an axis of n values (n > 2 * NV + 2)."""
    rng = np.random.default_rng(n)
    return {
        "one_from_0": [0],
        "one_from_middle": [n // 2],  # the values before it are in no slice
        "tile_boundaries": [0, NV - 1, NV, NV + 1, 2 * NV, 2 * NV + 2],
        "random_sorted": np.unique(rng.integers(0, n, 40)),
        "length_one": [5, 6, 7, 8, NV, NV + 1],
        "repeated": [0, 0, 3, 3, 3, NV + 1, NV + 1],
        "decreasing": [n - 1, NV + 3, 2 * NV, 7, 0, NV],
        "last_only": [n - 1],
    }


PATTERNS = list(index_patterns(N_TILES))


# ------------------------------------------------------------------------------------------
# reduceat: every dtype x op, index patterns.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reduceat_matrix(dtype, op, rng):
    a = data(rng, dtype, N_TILES, op)
    before = a.copy()
    if op in BITWISE_OPS and np.dtype(dtype).kind == "f":
        with pytest.raises(TypeError):
            gpuscan.reduceat(a, [0, 5], op)
        return
    for name, idx in index_patterns(N_TILES).items():
        res = gpuscan.reduceat(a, idx, op)
        check_reduceat(res, a, idx, op)
    assert np.array_equal(bits(a), bits(before))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_reduceat_patterns_int(pattern, rng):
    a = rng.integers(-1000, 1000, N_TILES).astype(np.int32)
    idx = index_patterns(N_TILES)[pattern]
    np.testing.assert_array_equal(gpuscan.reduceat(a, idx), np.add.reduceat(a, idx))
    np.testing.assert_array_equal(gpuscan.reduceat(a, idx, "max"), np.maximum.reduceat(a, idx))


@pytest.mark.parametrize("n", [1, 2, 31, 33, NV - 1, NV, NV + 1])
def test_reduceat_small_sizes(n, rng):
    a = rng.uniform(-1, 1, n).astype(np.float32)
    for idx in ([0], [n - 1], list(range(n)), [0, n // 2] if n > 1 else [0]):
        check_reduceat(gpuscan.reduceat(a, idx), a, idx)
        check_reduceat(gpuscan.reduceat(a, idx, "min"), a, idx, "min")


def test_reduceat_python_twin(rng):
    # NumPy's reduceat and the plain-Python definition agree, and gpuscan with both.
    a = rng.integers(-50, 50, 40).astype(np.int16)
    idx = [3, 3, 10, 2, 39, 0, 20]
    np.testing.assert_array_equal(reduceat_python(a, idx), np.add.reduceat(a, idx))
    np.testing.assert_array_equal(gpuscan.reduceat(a, idx), reduceat_python(a, idx))


def test_reduceat_empty_indices():
    a = np.arange(10.0)
    res = gpuscan.reduceat(a, [])
    assert res.shape == (0,) and res.dtype == np.float64
    m = np.ones((3, 4), np.int8)
    res = gpuscan.reduceat(m, np.array([], np.int64), axis=1)
    assert res.shape == (3, 0) and res.dtype == np.int64


def test_reduceat_empty_rows():
    m = np.ones((0, 5), np.int32)
    res = gpuscan.reduceat(m, [0, 2], axis=1)
    assert res.shape == (0, 2)
    np.testing.assert_array_equal(res, np.add.reduceat(m, [0, 2], axis=1))


def test_reduceat_one_slice_whole(rng):
    a = rng.uniform(-1, 1, N_TILES)
    check_reduceat(gpuscan.reduceat(a, [0]), a, [0])


def test_reduceat_all_heads(rng):
    a = rng.integers(-100, 100, N_TILES).astype(np.int64)
    idx = np.arange(N_TILES)
    np.testing.assert_array_equal(gpuscan.reduceat(a, idx), a)
    f = rng.uniform(-1, 1, N_TILES).astype(np.float32)
    assert np.array_equal(gpuscan.reduceat(f, idx, "max"), f)


def test_reduceat_float_add_adversarial(rng):
    # Large values that cancel inside each slice, a small remainder: a sequential float32 sum
    # loses it, the bound is relative to sum|x|.
    n = 5 * NV + 3
    big = rng.uniform(-1e6, 1e6, n // 2).astype(np.float32)
    a = np.zeros(n, np.float32)  # n is odd: the last value is only the remainder added below
    a[: 2 * (n // 2): 2] = big
    a[1: 2 * (n // 2): 2] = -big
    a += rng.uniform(-1, 1, n).astype(np.float32)
    idx = np.unique(np.concatenate([[0], rng.integers(0, n, 12), [NV, 2 * NV]]))
    check_reduceat(gpuscan.reduceat(a, idx), a, idx)


def test_reduceat_nan_and_inf(rng):
    a = rng.uniform(-1, 1, 3 * NV).astype(np.float64)
    a[10] = np.nan
    a[NV + 7] = np.inf
    a[NV + 9] = -np.inf
    a[2 * NV + 1] = np.nan
    idx = [0, 5, 11, NV, NV + 8, NV + 10, 2 * NV]
    for op in ("add", "min", "max", "mul"):
        res = gpuscan.reduceat(a, idx, op)
        with np.errstate(all="ignore"):
            want = UFUNCS[op].reduceat(a, idx)
        assert np.array_equal(np.isnan(res), np.isnan(want)), op
        fin = ~np.isnan(want)
        if op in ("min", "max"):
            assert np.array_equal(res[fin], want[fin]), op
        else:
            assert np.array_equal(np.isinf(res[fin]), np.isinf(want[fin])), op
            inf = np.isinf(want)
            assert np.array_equal(res[inf], want[inf]), op


def test_reduceat_min_max_nan_bits():
    # The first NaN of a slice, bit for bit, as np.minimum.reduceat.
    a = np.array([1.0, np.nan, 2.0, -np.nan, 0.0, -0.0, 5.0])
    payload = np.array([0x7FF8000000000123], np.uint64).view(np.float64)[0]
    a[3] = payload
    for op in ("min", "max"):
        res = gpuscan.reduceat(a, [0, 3, 4], op)
        want = UFUNCS[op].reduceat(a, [0, 3, 4])
        assert bits(res)[1] == bits(want)[1] == bits(a)[3:4][0]
        assert np.isnan(res[0]) and res[2] == want[2]


# ------------------------------------------------------------------------------------------
# reduceat: axes, dtype=, out=, layouts.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("idx", [[0, 2, 1], [1, 2], [0], [2, 0, 3]], ids=["dec", "inc_gap",
                                                                          "one", "mixed"])
def test_reduceat_axes(axis, idx, rng):
    a = rng.integers(-100, 100, (4, 5, 6)).astype(np.int32)
    idx = [i % a.shape[axis] for i in idx]
    check_reduceat(gpuscan.reduceat(a, idx, axis=axis), a, idx, axis=axis)
    f = rng.uniform(-1, 1, (4, 5, 6))
    check_reduceat(gpuscan.reduceat(f, idx, axis=axis), f, idx, axis=axis)
    check_reduceat(gpuscan.reduceat(f, idx, "max", axis=axis), f, idx, "max", axis=axis)


def test_reduceat_rows_with_gap(rng):
    # Increasing indices from past 0 along the last axis of many rows: each row's first values
    # belong to no slice, and its last slice stops at the row's end.
    a = rng.uniform(-1, 1, (37, 3 * NV + 1)).astype(np.float32)
    idx = [17, NV, NV + 1, 2 * NV + 5]
    check_reduceat(gpuscan.reduceat(a, idx, axis=1), a, idx, axis=1)
    i = rng.integers(0, 1000, (37, 3 * NV + 1)).astype(np.int64)
    np.testing.assert_array_equal(gpuscan.reduceat(i, idx, axis=1), np.add.reduceat(i, idx, axis=1))


def test_reduceat_dtype_and_widening(rng):
    a = rng.integers(-128, 127, 100, endpoint=True).astype(np.int8)
    idx = [0, 10, 50]
    res = gpuscan.reduceat(a, idx)
    assert res.dtype == np.int64
    np.testing.assert_array_equal(res, np.add.reduceat(a, idx))
    res = gpuscan.reduceat(a, idx, dtype=np.int8)
    assert res.dtype == np.int8
    np.testing.assert_array_equal(res, np.add.reduceat(a, idx, dtype=np.int8))
    assert gpuscan.reduceat(a.astype(np.uint16), idx).dtype == np.uint64
    assert gpuscan.reduceat(a, idx, "max").dtype == np.int8
    assert gpuscan.reduceat(a > 0, idx).dtype == np.int64
    check_reduceat(gpuscan.reduceat(a, idx, dtype=np.float32), a, idx, dtype=np.float32)


def test_reduceat_out(rng):
    a = rng.integers(0, 100, (6, 50)).astype(np.int32)
    idx = [0, 20, 10]
    out = np.zeros((6, 3), np.int64)
    assert gpuscan.reduceat(a, idx, axis=1, out=out) is out
    np.testing.assert_array_equal(out, np.add.reduceat(a, idx, axis=1))
    big = np.zeros((6, 9), np.int64)
    strided = big[:, ::3]
    gpuscan.reduceat(a, idx, axis=1, out=strided)
    np.testing.assert_array_equal(strided, np.add.reduceat(a, idx, axis=1))
    small = np.zeros((6, 3), np.int16)  # out fixes the accumulation dtype: it wraps
    gpuscan.reduceat(a * 1000, idx, axis=1, out=small)
    np.testing.assert_array_equal(small, np.add.reduceat((a * 1000).astype(np.int16), idx, axis=1,
                                                         dtype=np.int16))
    with pytest.raises(ValueError):
        gpuscan.reduceat(a, idx, axis=1, out=np.zeros((6, 4), np.int64))
    ro = np.zeros((6, 3), np.int64)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        gpuscan.reduceat(a, idx, axis=1, out=ro)
    with pytest.raises(TypeError):  # same_kind: float into int
        gpuscan.reduceat(a.astype(np.float64), idx, axis=1, out=np.zeros((6, 3), np.int64))
    with pytest.raises(TypeError):
        gpuscan.reduceat(a, idx, axis=1, out=[0, 0, 0])


def test_reduceat_out_overlaps_input(rng):
    a = rng.integers(0, 100, 64).astype(np.int64)
    want = np.add.reduceat(a, [0, 8, 16, 32])
    got = gpuscan.reduceat(a, [0, 8, 16, 32], out=a[2:6])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("layout", ["stride_3", "reversed", "byteswapped", "unaligned"])
def test_reduceat_layouts(layout, rng):
    base = rng.uniform(-1, 1, 2 * NV + 3)
    a = make_layout(layout, base)
    idx = [0, 3, NV, 7, NV + 2]
    check_reduceat(gpuscan.reduceat(a, idx), base, idx)


def test_reduceat_indices_kinds(rng):
    a = np.arange(10)
    for idx in (np.array([0, 5], np.int32), np.array([0, 5], np.uint8), (0, 5), [0, 5]):
        np.testing.assert_array_equal(gpuscan.reduceat(a, idx), np.add.reduceat(a, idx))
    np.testing.assert_array_equal(gpuscan.reduceat(a, np.array([0, 5])[::-1]),
                                  np.add.reduceat(a, [5, 0]))
    np.testing.assert_array_equal(gpuscan.reduceat([1, 2, 3], [0, 1], np.multiply),
                                  np.multiply.reduceat([1, 2, 3], [0, 1]))


def test_reduceat_deterministic(rng):
    a = rng.uniform(-1, 1, 9 * NV + 11).astype(np.float32)
    idx = np.unique(rng.integers(0, a.size, 30))
    first = gpuscan.reduceat(a, idx)
    for _ in range(3):
        assert np.array_equal(bits(gpuscan.reduceat(a, idx)), bits(first))


# 2050 scan tiles of NV values: on CUDA a sorted partition runs in levels of warp tiles of SEG_W
# values (dispatch/segreduce.cu; NV = 8 SEG_W): the values' 16400 tiles, their 2 partials each
# (32800 values: 65 tiles, a boundary every 32 NV values), then those tiles' (one tile), so slices
# cross tiles at the first level and at the second.
LEVELS_N = 2050 * NV - 7
SEG_W = _gpuscan._config()["segreduce_tile_items"]


def levels_indices(rng):
    """Slices for LEVELS_N values: short and length-one slices, slices ending exactly at tile
    ends, one crossing the second level's tile boundary (tiles 2040 .. 2049 of the values), and
    one spanning 1500 tiles; the values before the first index in no slice."""
    n = LEVELS_N
    fixed = [3, SEG_W - 1, SEG_W, 2 * SEG_W + 1, 3 * SEG_W - 1, NV - 1, NV, NV + 1, 2 * NV,
             2 * NV + 1, 5 * NV + 9, 1505 * NV + 9, 2040 * NV + 7, 2049 * NV + 100, n - 1]
    return np.unique(np.concatenate([fixed, rng.integers(1506 * NV, 2040 * NV, 300),
                                     rng.integers(6 * NV, 9 * NV, 40)]))


def test_reduceat_across_levels(rng):
    across_levels(rng)


def across_levels(rng):
    idx = levels_indices(rng)
    a = rng.uniform(-1, 1, LEVELS_N).astype(np.float32)
    first = gpuscan.reduceat(a, idx)
    check_reduceat(first, a, idx)
    assert np.array_equal(bits(gpuscan.reduceat(a, idx)), bits(first))  # deterministic
    i = rng.integers(-1000, 1000, LEVELS_N).astype(np.int32)
    check_reduceat(gpuscan.reduceat(i, idx, "max"), i, idx, "max")
    check_reduceat(gpuscan.reduceat(i, idx), i, idx)
    flags = np.zeros(LEVELS_N, np.uint8)
    flags[idx] = 1  # element 0 starts a segment too (the values before idx[0])
    s = gpuscan.segmented_reduce(a, flags)
    check_segmented_reduce(s, a, flags)
    assert np.array_equal(bits(gpuscan.segmented_reduce(a, flags)), bits(s))
    # Short segments: most values of every level settle one (on CUDA, the heads' positions come
    # from the prefixes of 2050 count tiles, published in three groups of 1024).
    dense = rng.random(LEVELS_N) < 0.3
    check_segmented_reduce(gpuscan.segmented_reduce(a, dense), a, dense)
    check_reduceat(gpuscan.reduceat(i, np.flatnonzero(dense), "min"), i, np.flatnonzero(dense),
                   "min")


def few_heads_indices(n):
    """Slices whose heads fall 0, 1, 2 and 3 to a warp tile of SEG_W values, in turn, at its first
    value, its last, next to each other and apart; a head on the value after a tile, and the end
    of the values inside the last tile."""
    offsets = {0: [], 1: [0], 2: [1, SEG_W - 1], 3: [5, 6, SEG_W // 2], 4: [SEG_W - 1],
               5: [0, 1], 6: [SEG_W // 3], 7: [2, 200, 201]}
    idx = [0] + [t * SEG_W + o for t in range(n // SEG_W) for o in offsets[t % 8]]
    return np.unique([i for i in idx if i < n])


@pytest.mark.parametrize("inside", [31, 63])
@pytest.mark.parametrize("dtype,op", [(np.int32, "add"), (np.float32, "min")])
def test_head_after_a_tile_of_many(warp_ranges, inside, dtype, op, rng):
    # On CUDA a warp tile finds its heads 32 starts at a time; with 31 (or 63) inside it, the
    # round that saw them ends on a head at the value after the tile, which the warp's next tile
    # (one head at its first value, none for three tiles after) must not skip.
    n = 8 * SEG_W
    idx = np.concatenate([[0], SEG_W + 16 * np.arange(inside) // (inside // 31),
                          [2 * SEG_W, 6 * SEG_W]])
    idx = np.unique(idx)
    assert np.count_nonzero((idx >= SEG_W) & (idx < 2 * SEG_W)) == inside
    a = data(rng, dtype, n, op)
    check_reduceat(gpuscan.reduceat(a, idx, op), a, idx, op)
    flags = np.zeros(n, np.uint8)
    flags[idx] = 1
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags, op), a, flags, op)


@pytest.mark.parametrize("dtype,op", [(np.float32, "add"), (np.float64, "add"),
                                      (np.int32, "add"), (np.int64, "mul"), (np.uint8, "xor"),
                                      (np.float32, "min"), (np.float32, "mul"), (np.int16, "max")])
def test_reduceat_few_heads_a_tile(dtype, op, rng):
    # On CUDA a tile with at most two heads is reduced as runs (agent/segreduce.cuh, seg_few);
    # with more, row by row.
    for n in (24 * SEG_W, 24 * SEG_W - 3):
        a = data(rng, dtype, n, op)
        idx = few_heads_indices(n)
        check_reduceat(gpuscan.reduceat(a, idx, op), a, idx, op)
        flags = np.zeros(n, np.uint8)
        flags[idx] = 1
        check_segmented_reduce(gpuscan.segmented_reduce(a, flags, op), a, flags, op)


@pytest.mark.gpu
@pytest.mark.parametrize("per_warp", [2, 3])
def test_ranges_of_other_lengths(per_warp, rng):
    # Ranges of 2 tiles (the launcher's choice at 2^24 values on an H100 or H200) and of 3.
    was = _gpuscan._segreduce_set_many(1, per_warp)
    try:
        across_levels(rng)
        n = 24 * SEG_W - 3
        a = rng.uniform(-1, 1, n).astype(np.float32)
        idx = few_heads_indices(n)
        check_reduceat(gpuscan.reduceat(gpuscan.to_device(a), idx).get(), a, idx)
    finally:
        _gpuscan._segreduce_set_many(*was)


# On CUDA a warp takes up to 8 consecutive tiles as one range where a level has many (2^24
# values and up on an H200: as many as leave half a wave of warps), carrying a run open at a
# tile's end into the next tile; _segreduce_set_many lowers "many" so that every level of these
# sizes takes that path.
RANGE = 8 * SEG_W


@pytest.fixture
def warp_ranges():
    was = _gpuscan._segreduce_set_many(1)
    yield
    _gpuscan._segreduce_set_many(*was)


def range_indices(rng, n):
    """Slices for n values in ranges of RANGE: heads at tile and range boundaries and next to
    them, length-one slices, a slice inside one tile, slices spanning several tiles of a range and
    several ranges, a range with no head (the run before it goes on), a head at the first range
    of the second tile of the level above (256 ranges: the run before it ends at that tile's
    boundary), random ones; for n a whole number of ranges, a last slice of several ranges that
    the end of the values closes at a tile's end, else two short ones at the end."""
    fixed = [1, SEG_W - 1, SEG_W, SEG_W + 1, 3 * SEG_W, RANGE - 1, RANGE, RANGE + 1,
             RANGE + 2, 2 * RANGE - SEG_W, 2 * RANGE, 4 * RANGE + 3 * SEG_W + 7,
             9 * RANGE - 1, 256 * RANGE] + ([n - 2, n - 1] if n % RANGE else [])
    return np.unique(np.concatenate([[i for i in fixed if i < n],
                                     rng.integers(10 * RANGE, 12 * RANGE, 60)]))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [14 * RANGE, 14 * RANGE + 37, 13 * RANGE + 3 * SEG_W,
                               300 * RANGE + 5])  # the last: 2 tiles of partials above
@pytest.mark.parametrize("dtype,op", [(np.float32, "add"), (np.float64, "add"),
                                      (np.int32, "add"), (np.int64, "mul"), (np.uint8, "xor"),
                                      (np.float32, "min"), (np.float64, "max"),
                                      (np.float32, "mul"), (np.bool_, "or")])
def test_ranges_of_warp_tiles(warp_ranges, n, dtype, op, rng):
    a = data(rng, dtype, n, op)
    idx = range_indices(rng, n)
    for first in (0, 5):  # from element 0; and with values before the first slice
        i = np.concatenate([[first], idx[idx > first]])
        check_reduceat(gpuscan.reduceat(gpuscan.to_device(a), i, op).get(), a, i, op)
    flags = np.zeros(n, np.uint8)
    flags[idx] = 1
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags, op), a, flags, op)


@pytest.mark.gpu
def test_ranges_across_levels(warp_ranges, rng):
    # LEVELS_N in ranges: 2050 ranges, then 9 tiles of their partials in 2 ranges (the ids
    # carried from tile to tile), then one tile.
    across_levels(rng)


PATTERNS_N = 40 * RANGE + 101


def range_patterns(rng, n, first):
    """Head positions over n values in ranges, by name: `first` (a case of its own), every
    value, every tile start, every range end, one per three ranges, dense random ones, and
    thousands in three clusters, at the front, a third of the way and at the end (on CUDA a
    warp's search of the starts first probes where even segments would put its rank: between
    the first two clusters that window lies wholly below the rank, between the last two wholly
    above it)."""
    return {
        **first,
        "all heads": np.arange(n),
        "every tile start": np.arange(0, n, SEG_W),
        "every range end": np.arange(RANGE - 1, n, RANGE),
        "one per three ranges": np.arange(7, n, 3 * RANGE),
        "dense": np.flatnonzero(rng.random(n) < 0.3),
        "clustered": np.concatenate([np.arange(1500), np.arange(n // 3, n // 3 + 1500),
                                     np.arange(n - 1500, n)]),
    }


@pytest.mark.gpu
def test_ranges_of_warp_tiles_patterns(warp_ranges, rng):
    n = PATTERNS_N
    a = rng.uniform(-1, 1, n).astype(np.float32)
    d = gpuscan.to_device(a)
    for name, idx in range_patterns(rng, n, {"one slice": [0]}).items():
        got = gpuscan.reduceat(d, idx).get()
        check_reduceat(got, a, idx)
        assert np.array_equal(bits(gpuscan.reduceat(d, idx).get()), bits(got)), name
    # NaN and inf carried across tiles and ranges; -0.0 sums.
    b = a.copy()
    b[3 * SEG_W + 5] = np.nan
    b[RANGE + 2] = np.inf
    idx = np.array([0, 2 * SEG_W, RANGE + 1, 2 * RANGE])
    check_reduceat(gpuscan.reduceat(gpuscan.to_device(b), idx).get(), b, idx)
    check_reduceat(gpuscan.reduceat(gpuscan.to_device(b), idx, "max").get(), b, idx, "max")
    z = np.full(3 * RANGE, -0.0, np.float32)
    assert np.signbit(gpuscan.reduceat(gpuscan.to_device(z), [0, SEG_W]).get()).all()


@pytest.mark.gpu
@pytest.mark.parametrize("flag_dtype", [np.uint8, np.bool_, np.int16, np.int64, np.float32])
def test_segmented_reduce_ranges_patterns(warp_ranges, flag_dtype, rng):
    # segmented_reduce's positions of the heads (from the count pass over the flags) reduced in
    # ranges of 8 warp tiles: flags of every width, aligned or not (CuPy views one element in),
    # element 0 flagged or not, the head patterns of range_patterns and a head at the last value.
    cp = pytest.importorskip("cupy")
    n = PATTERNS_N
    a = rng.uniform(-1, 1, n + 1).astype(np.float32)
    cases = range_patterns(rng, n, {"none": []})
    cases["last"] = [n - 1]
    for name, idx in cases.items():
        flags = np.zeros(n + 1, flag_dtype)
        flags[np.asarray(idx, np.int64)] = 1
        for off in (0, 1):  # off 1: neither the values nor the flags 16-byte aligned
            x, f = cp.asarray(a)[off:off + n], cp.asarray(flags)[off:off + n]
            got = gpuscan.segmented_reduce(x, f).get()
            check_segmented_reduce(got, a[off:off + n], flags[off:off + n])
            assert np.array_equal(bits(gpuscan.segmented_reduce(x, f).get()), bits(got)), name


def test_reduceat_same_bits_on_any_thread_count():
    code = (
        "import numpy as np, gpuscan\n"
        "rng = np.random.default_rng(5)\n"
        "a = rng.uniform(-1, 1, 2**21 + 3).astype(np.float32)\n"
        "idx = np.concatenate([[0], np.sort(rng.integers(1, a.size, 300)), [0, 5]])\n"
        "r = gpuscan.reduceat(a, idx)\n"
        "s = gpuscan.segmented_reduce(a, rng.random(a.size) < 1e-3)\n"
        "print(r.view(np.uint32).sum(dtype=np.uint64), s.view(np.uint32).sum(dtype=np.uint64))\n"
    )
    outs = outputs_on_thread_counts(code)
    assert outs[0] == outs[1] == outs[2]


# ------------------------------------------------------------------------------------------
# reduceat: errors, as NumPy's.
# ------------------------------------------------------------------------------------------
def test_reduceat_errors():
    a = np.arange(5)
    for idx in ([5], [-1], [0, 7]):
        with pytest.raises(IndexError, match="out-of-bounds in add.reduceat"):
            gpuscan.reduceat(a, idx)
    with pytest.raises(IndexError, match="multiply.reduceat"):
        gpuscan.reduceat(a, [9], "mul")
    with pytest.raises(IndexError):
        gpuscan.reduceat(np.zeros(0), [0])
    with pytest.raises(TypeError):
        gpuscan.reduceat(5, [0])
    with pytest.raises(TypeError):
        gpuscan.reduceat(np.array(5), [0])
    with pytest.raises(ValueError):
        gpuscan.reduceat(np.ones((2, 3)), [0, 1], axis=None)
    with pytest.raises(ValueError):
        gpuscan.reduceat(np.ones((2, 3)), [0, 1], axis=(0, 1))
    with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError):
        gpuscan.reduceat(np.ones((2, 3)), [0, 1], axis=2)
    with pytest.raises(ValueError):
        gpuscan.reduceat(a, [[0, 1]])
    with pytest.raises(ValueError):
        gpuscan.reduceat(a, [0], "nope")
    with pytest.raises(TypeError):
        gpuscan.reduceat(a.astype(np.float32), [0], "xor")
    with pytest.raises(TypeError):
        gpuscan.reduceat(a.astype(np.complex64), [0])
    with pytest.raises(ValueError):  # NumPy's own message: "object of too small depth"
        gpuscan.reduceat(a, "ab")


# ------------------------------------------------------------------------------------------
# segmented_reduce.
# ------------------------------------------------------------------------------------------
def heads_every(rng, n, mean):
    """uint8 flags, one head per `mean` values on average."""
    return (rng.random(n) < 1.0 / mean).astype(np.uint8)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_segmented_reduce_matrix(dtype, op, rng):
    a = data(rng, dtype, N_TILES, op)
    flags = heads_every(rng, N_TILES, 300)
    flags[[NV - 1, NV, 2 * NV + 1]] = 1
    if op in BITWISE_OPS and np.dtype(dtype).kind == "f":
        with pytest.raises(TypeError):
            gpuscan.segmented_reduce(a, flags, op)
        return
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags, op), a, flags, op)
    flags[0] = 1
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags, op), a, flags, op)


@pytest.mark.parametrize("n", [1, 2, 31, 33, NV - 1, NV, NV + 1, N_TILES])
@pytest.mark.parametrize("kind", ["one_segment", "all_heads", "sparse", "first_zero"])
def test_segmented_reduce_shapes_of_segments(n, kind, rng):
    a = rng.uniform(-1, 1, n).astype(np.float32)
    flags = {"one_segment": np.zeros(n, bool), "all_heads": np.ones(n, bool),
             "sparse": rng.random(n) < 0.01, "first_zero": rng.random(n) < 0.2}[kind]
    if kind == "first_zero":
        flags[0] = False
    res = gpuscan.segmented_reduce(a, flags)
    check_segmented_reduce(res, a, flags)
    i = rng.integers(-9, 9, n).astype(np.int32)
    np.testing.assert_array_equal(gpuscan.segmented_reduce(i, flags, "min"),
                                  np.minimum.reduceat(i, np.flatnonzero(np.r_[True, flags[1:]])))


HEADS_N = 1 << 17
HEADS_ROOM = 65536 + HEADS_N // 32  # csrc/ops/segreduce.c heads_room(): positions written early


@pytest.mark.parametrize("count", [HEADS_ROOM - 1, HEADS_ROOM, HEADS_ROOM + 1, HEADS_N])
def test_segmented_reduce_heads_around_the_room(count, rng):
    # The positions are written while the host waits for their count when they fit in the
    # room; one more takes the second positions pass.  Both must give the same segments.
    a = rng.integers(-1000, 1000, HEADS_N).astype(np.int64)
    flags = np.zeros(HEADS_N, np.uint8)
    flags[0] = 1
    flags[1 + rng.choice(HEADS_N - 1, count - 1, replace=False)] = 1
    res = gpuscan.segmented_reduce(a, flags)
    assert res.shape == (count,)
    check_segmented_reduce(res, a, flags)
    flags[0] = 0  # element 0 a head all the same: the count stays
    np.testing.assert_array_equal(gpuscan.segmented_reduce(a, flags, "max"), np.maximum.reduceat(
        a, np.flatnonzero(np.r_[True, flags[1:]])))


@pytest.mark.parametrize("flag_dtype", [np.bool_, np.uint8, np.int16, np.int64, np.float32,
                                        np.float64])
def test_segmented_reduce_flag_dtypes(flag_dtype, rng):
    n = 2 * NV + 9
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    flags = np.zeros(n, flag_dtype)
    pos = rng.integers(0, n, 40)
    flags[pos] = 1 if flag_dtype is np.bool_ else 3
    if np.dtype(flag_dtype).kind == "f":
        flags[5] = -0.0  # not a head
        flags[6] = np.nan  # a head
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags), a, flags)


def test_segmented_reduce_2d_and_empty(rng):
    a = rng.integers(0, 10, (7, 33)).astype(np.uint16)
    flags = rng.random((7, 33)) < 0.1
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags, "max"), a, flags, "max")
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags), a, flags)
    res = gpuscan.segmented_reduce(np.zeros(0, np.float32), np.zeros(0, bool))
    assert res.shape == (0,) and res.dtype == np.float32
    res = gpuscan.segmented_reduce(np.zeros((3, 0), np.int8), np.zeros((3, 0), bool))
    assert res.shape == (0,) and res.dtype == np.int64


def test_segmented_reduce_dtype(rng):
    a = rng.integers(-128, 127, 500).astype(np.int8)
    flags = rng.random(500) < 0.05
    res = gpuscan.segmented_reduce(a, flags, dtype=np.int8)
    assert res.dtype == np.int8
    check_segmented_reduce(res, a, flags, dtype=np.int8)
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags, dtype=np.float64), a, flags,
                           dtype=np.float64)


def test_segmented_reduce_example():
    a = [4, 2, 1, 3, 0, 2, 1, 5]
    np.testing.assert_array_equal(gpuscan.segmented_reduce(a, [1, 0, 0, 1, 0, 0, 1, 0]),
                                  [7, 5, 6])
    np.testing.assert_array_equal(
        gpuscan.segmented_reduce(a, [0, 0, 0, 1, 0, 0, 1, 0], np.maximum), [4, 3, 5])


def test_segmented_reduce_inputs_untouched(rng):
    a = rng.uniform(-1, 1, 1000)
    flags = (rng.random(1000) < 0.1).astype(np.float32)
    a0, f0 = a.copy(), flags.copy()
    gpuscan.segmented_reduce(a, flags)
    assert np.array_equal(bits(a), bits(a0)) and np.array_equal(bits(flags), bits(f0))


@pytest.mark.parametrize("a_shape,f_shape", SHAPE_MISMATCHES)
def test_segmented_reduce_shape_mismatch(a_shape, f_shape):
    with pytest.raises(ValueError):
        gpuscan.segmented_reduce(np.zeros(a_shape), np.zeros(f_shape))


def test_segmented_reduce_errors():
    with pytest.raises(ValueError):
        gpuscan.segmented_reduce([1, 2], [1, 0], "nope")
    with pytest.raises(TypeError):
        gpuscan.segmented_reduce([1.0, 2.0], [1, 0], "and")
    with pytest.raises(TypeError):
        gpuscan.segmented_reduce(np.ones(2, np.complex128), [1, 0])
    with pytest.raises(TypeError):
        gpuscan.segmented_reduce([1, 2], np.ones(2, np.complex64))
    with pytest.raises(TypeError):
        gpuscan.segmented_reduce([1, 2], [1, 0], out=np.zeros(1))


@pytest.mark.slow
def test_segmented_reduce_large(rng):
    n = 2**20 + 17
    a = rng.uniform(-1, 1, n).astype(np.float32)
    flags = heads_every(rng, n, 1000)
    check_segmented_reduce(gpuscan.segmented_reduce(a, flags), a, flags)
    i = rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32)
    check_segmented_reduce(gpuscan.segmented_reduce(i, flags, "max"), i, flags, "max")
    idx = np.flatnonzero(flags)
    check_reduceat(gpuscan.reduceat(a, idx), a, idx)


@pytest.mark.parametrize("tiles", [31, 32, 33, 64, 65, 1024, 1025, 1100, 2048])
def test_segmented_reduce_heads_blocks(tiles, rng):
    # On CUDA the heads' positions take 32 count tiles (of NV flags) a block: up to 32 tiles one
    # block from tile 0 (it looks back at nothing), then blocks that look back at the tile
    # before them, whose prefix the prefix pass published: a block of it per 1024 tiles, each
    # reading the sums of the groups before it (1025: one tile in the second group; 1100: heads
    # blocks that look back into it; 2048: two whole groups).  Element 0 unflagged (a head
    # anyway) and flagged.
    n = tiles * NV - 3
    a = rng.integers(-50, 50, n).astype(np.int32)
    flags = heads_every(rng, n, 300)
    edges = [NV - 1, NV, 32 * NV - 1, 32 * NV, 32 * NV + 1, 1024 * NV - 1, 1024 * NV]
    flags[[e for e in edges if e < n] if tiles > 32 else [NV - 1, NV]] = 1
    for first in (0, 1):
        flags[0] = first
        check_segmented_reduce(gpuscan.segmented_reduce(a, flags), a, flags)


def test_scratch_bytes():
    assert _gpuscan._segreduce_scratch_bytes(0, 5, True) == 0
    assert _gpuscan._segreduce_scratch_bytes(100, 0, True) == 0
    assert _gpuscan._segreduce_scratch_bytes(10 * NV, 7, False) == 0  # a warp per segment
    # Two buffers of 2 partials and an id per tile (a warp's SEG_W values): the values' tiles,
    # and the tiles of their 2 * tiles partials.
    w = _gpuscan._config()["segreduce_tile_items"]
    assert w % 32 == 0 and NV % w == 0
    for tiles in (1, 10, 5000):
        s = _gpuscan._segreduce_scratch_bytes(tiles * w, 7, True)
        assert s >= 24 * tiles + 24 * -(-2 * tiles // w)
        assert s < 24 * tiles + 24 * -(-2 * tiles // w) + 2 * 128  # each buffer rounded to 128
    with pytest.raises(ValueError):
        _gpuscan._segreduce_scratch_bytes(-1, 1, True)


# ------------------------------------------------------------------------------------------
# Device arrays (CUDA).
# ------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_device_in_device_out(rng):
    a = rng.uniform(-1, 1, 5 * NV + 7).astype(np.float32)
    flags = heads_every(rng, a.size, 200)
    idx = np.flatnonzero(flags)
    d = gpuscan.to_device(a)
    r = gpuscan.reduceat(d, idx)
    assert isinstance(r, gpuscan.DeviceArray)
    assert np.array_equal(bits(r.get()), bits(gpuscan.reduceat(a, idx)))
    r = gpuscan.reduceat(d, gpuscan.to_device(idx))  # device indices
    check_reduceat(r.get(), a, idx)
    s = gpuscan.segmented_reduce(d, gpuscan.to_device(flags))
    assert isinstance(s, gpuscan.DeviceArray)
    check_segmented_reduce(s.get(), a, flags)
    assert np.array_equal(bits(s.get()), bits(gpuscan.segmented_reduce(a, flags)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,op", [(np.int32, "add"), (np.int8, "add"), (np.float64, "add"),
                                      (np.float32, "mul"), (np.uint16, "min"), (np.float32, "max"),
                                      (np.int64, "xor"), (np.bool_, "and")])
def test_device_ops(dtype, op, rng):
    n = 300 * NV + 3  # past the anchored look-back's lag (224 tiles)
    a = data(rng, dtype, n, op)
    flags = heads_every(rng, n, 5000)
    d = gpuscan.to_device(a)
    check_segmented_reduce(gpuscan.segmented_reduce(d, flags, op).get(), a, flags, op)
    idx = np.flatnonzero(flags)
    check_reduceat(gpuscan.reduceat(d, idx, op).get(), a, idx, op)
    idx = np.concatenate([idx[:50], idx[:10]])  # not increasing: a warp per slice
    check_reduceat(gpuscan.reduceat(d, idx, op).get(), a, idx, op)


@pytest.mark.gpu
def test_device_deterministic_and_long_slice(rng):
    a = rng.uniform(-1, 1, 2**22 + 5).astype(np.float32)
    d = gpuscan.to_device(a)
    first = gpuscan.reduceat(d, [0, 3, 2**21]).get()
    for _ in range(5):
        assert np.array_equal(bits(gpuscan.reduceat(d, [0, 3, 2**21]).get()), bits(first))
    check_reduceat(first, a, [0, 3, 2**21])
    # One long slice taken by one warp (indices not increasing).
    check_reduceat(gpuscan.reduceat(d, [0, 0]).get(), a, [0, 0])


@pytest.mark.gpu
def test_device_reduced_ahead_of_the_check(rng):
    """One row of device indices is reduced behind their check before its answer is back: bad
    indices leave `out` untouched and raise NumPy's IndexError for the first bad one; indices that
    turn out not to increase are reduced again the general way; several calls in a row with no
    sync in between each get their own answer."""
    n = 40 * NV + 3
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    d = gpuscan.to_device(a)
    good = np.unique(rng.integers(0, n, 300))
    for bad, first in (([0, 5, n, 7, -1], n), ([3, -2, n + 4], -2), ([n - 1, n + 9], n + 9)):
        out = gpuscan.to_device(np.full(len(bad), 77, np.int64))
        with pytest.raises(IndexError, match=f"index {first} out-of-bounds in add.reduceat"):
            gpuscan.reduceat(d, gpuscan.to_device(np.array(bad)), out=out)
        np.testing.assert_array_equal(out.get(), 77)  # the guarded reduction wrote nothing
    down = np.concatenate([good[:40], good[10:20]])
    results = [gpuscan.reduceat(d, gpuscan.to_device(i)) for i in (good, down, good[::-1], good)]
    for got, idx in zip(results, (good, down, good[::-1], good)):
        np.testing.assert_array_equal(got.get(), np.add.reduceat(a, idx))
    # A bad call between good ones, all enqueued back to back.
    first = gpuscan.reduceat(d, gpuscan.to_device(good))
    with pytest.raises(IndexError):
        gpuscan.reduceat(d, gpuscan.to_device(np.array([0, n])))
    last = gpuscan.reduceat(d, gpuscan.to_device(good), "max")
    np.testing.assert_array_equal(first.get(), np.add.reduceat(a, good))
    np.testing.assert_array_equal(last.get(), np.maximum.reduceat(a, good))


@pytest.mark.gpu
def test_cupy_inputs(rng):
    cp = pytest.importorskip("cupy")
    a = rng.integers(-1000, 1000, (5, 3 * NV + 1)).astype(np.int32)
    c = cp.asarray(a)
    for view, host in ((c, a), (c[:, ::3], a[:, ::3]), (c.T, a.T)):
        got = gpuscan.reduceat(view, [0, 2, 1], axis=1 if view.shape[1] > 3 else 0)
        assert isinstance(got, gpuscan.DeviceArray)
        want = np.add.reduceat(host, [0, 2, 1], axis=1 if view.shape[1] > 3 else 0)
        np.testing.assert_array_equal(got.get(), want)
    out = cp.zeros((5, 2), dtype=cp.int64)
    assert gpuscan.reduceat(c, [0, NV], axis=1, out=out) is out
    np.testing.assert_array_equal(cp.asnumpy(out), np.add.reduceat(a, [0, NV], axis=1))
    flags = cp.asarray(rng.random(a.shape) < 0.01)
    got = gpuscan.segmented_reduce(c, flags, "max")
    check_segmented_reduce(got.get(), a, cp.asnumpy(flags), "max")
