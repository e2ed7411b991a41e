"""sort and argsort on the CUDA backend, by the kernel path each size reaches
(kernels/dispatch/sort.cu), against NumPy's stable sort.

Three paths:
- rows of at most 32 keys (gs_sort_warp_<kind>): a group of lanes a row, each key ranked
  against its row's; its ids say warp_*;
- the block sort (gs_sort_block_<kind>): rows of at most GS_SORT_BLOCK_NV keys
  (_config()["sort_block_items"]), up to 256 rows a block; its ids say block_*;
- the device-wide sort (gs_sort_hist_<kind>, then gs_sort_pass_<kind>_<index bytes> per digit
  position): longer rows, tiles of _sort_layout(...)["nv"] keys, a histogram block per
  hist_tiles tiles of a row; its ids say device_*.
Every case moves device arrays (gpuscan.to_device in, a DeviceArray out) unless it says numpy.
The expected order: np.argsort(kind="stable") ascending; descending: largest first, ties in
input order, NaNs (either sign) last in input order; sort moves the keys bit for bit.
"""
import numpy as np
import pytest

import gpuscan
from gpuscan import _gpuscan

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not hasattr(gpuscan, "sort") or not hasattr(gpuscan, "argsort"),
                       reason="gpuscan.sort/argsort are not in this build (the `sort` branch "
                              "brings them)"),
]

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float32, np.float64]
DTYPE_IDS = [np.dtype(d).name for d in DTYPES]
BLOCK = _gpuscan._config().get("sort_block_items", 4096)


def nv(dtype, argsort):
    """Keys per tile of a device-wide pass (sort: keys alone; argsort: a 4-byte index)."""
    dt = np.dtype(dtype)
    return _gpuscan._sort_layout(1, 10 * BLOCK, dt.itemsize, dt.kind == "f", not argsort,
                                 argsort)["nv"]


def reference_index(keys, descending):
    if keys.dtype == np.bool_:
        keys = keys.view(np.uint8) != 0
    if not descending:
        return np.argsort(keys, axis=-1, kind="stable")
    if keys.dtype.kind == "f":
        nan = np.isnan(keys)
        return np.lexsort((np.where(nan, 0, -keys), nan), axis=-1)
    return np.argsort(~keys, axis=-1, kind="stable")


def special_keys(rng, dtype, n):
    """Ties, the extremes, NaNs of both signs and payloads, +-0, +-inf; bools of bytes 0/1/2/255."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.choice(np.array([0, 1, 2, 255], np.uint8), n).view(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        small = rng.integers(-3 if dtype.kind == "i" else 0, 4, n).astype(dtype)
        a = np.where(rng.random(n) < 0.5, small, a)
        a[rng.random(n) < 0.02] = info.min
        a[rng.random(n) < 0.02] = info.max
        return a
    bits = 8 * dtype.itemsize
    u = np.dtype(f"u{dtype.itemsize}")
    exp = {32: 0x7f800000, 64: 0x7ff0000000000000}[bits]
    nans = np.array([exp | 1, exp | (exp >> 4), (1 << (bits - 1)) | exp | 5, (1 << bits) - 1],
                    dtype=u).view(dtype)
    special = np.concatenate([nans, np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0], dtype)])
    a = rng.standard_normal(n).astype(dtype)
    a = np.where(rng.random(n) < 0.3, np.round(a), a).astype(dtype)
    pick = rng.random(n) < 0.1
    a[pick] = rng.choice(special, int(pick.sum()))
    return a


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def check(keys, descending=False, on_device=True, what=("sort", "argsort")):
    want = reference_index(keys, descending)
    x = gpuscan.to_device(keys) if on_device else keys
    kw = {"descending": True} if descending else {}
    if "argsort" in what:
        got = host(gpuscan.argsort(x, axis=-1, **kw))
        assert got.dtype == np.int64 and got.shape == keys.shape
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, f"argsort differs at {bad[:5]} ({bad.size} places)"
    if "sort" in what:
        got = host(gpuscan.sort(x, axis=-1, **kw))
        assert got.dtype == keys.dtype and got.shape == keys.shape
        u = f"u{keys.dtype.itemsize}"
        expect = np.take_along_axis(keys, want, axis=-1)
        bad = np.flatnonzero(got.view(u) != expect.view(u))
        assert bad.size == 0, f"sort differs (bits) at {bad[:5]} ({bad.size} places)"


# ---- the block sort ----------------------------------------------------------------------------
BLOCK_SHAPES = [
    pytest.param((1,), id="warp_one_key"),
    pytest.param((2,), id="warp_two_keys"),
    pytest.param((1000, 7), id="warp_rows_of_seven"),
    pytest.param((333, 32), id="warp_rows_of_32"),
    pytest.param((33,), id="block_warp_plus_one"),
    pytest.param((BLOCK - 1,), id="block_row_minus_one"),
    pytest.param((BLOCK,), id="block_row_fills_block"),
    pytest.param((1000, 1), id="warp_rows_of_one"),
    pytest.param((1000, 16), id="warp_rows_of_16_partial_last_block"),
    pytest.param((37, 100), id="block_40_rows_a_block"),
    pytest.param((5, 1024), id="block_four_rows_a_block"),
    pytest.param((3, BLOCK // 2 + 1), id="block_one_row_a_block"),
]


@pytest.mark.parametrize("shape", BLOCK_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_block(rng, shape, dtype, descending):
    n = int(np.prod(shape))
    check(special_keys(rng, dtype, n).reshape(shape), descending)


# ---- the device-wide sort ----------------------------------------------------------------------
def device_sizes(dtype, argsort):
    t = nv(dtype, argsort)
    return [BLOCK + 1, t - 1, t, t + 1, 8 * t + 1, 3 * 8 * t + 17]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("which", ["sort", "argsort"])
def test_device_1d(rng, dtype, descending, which):
    """1-D past the block sort: just past it, a tile -1/0/+1 keys, one histogram chunk (8 tiles)
    + 1, several chunks."""
    for n in device_sizes(dtype, which == "argsort"):
        check(special_keys(rng, dtype, n), descending, what=(which,))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint16], ids=["float32", "int64", "uint16"])
def test_device_rows(rng, dtype):
    """device_rows: rows of several tiles each, their look-backs separate, histograms per row
    (one block per row, and several)."""
    for shape in ((3, BLOCK + 1), (4, 3 * nv(dtype, True) + 5), (2, 9 * nv(dtype, False) + 3)):
        check(special_keys(rng, dtype, shape[0] * shape[1]).reshape(shape), False)
        check(special_keys(rng, dtype, shape[0] * shape[1]).reshape(shape), True)


@pytest.mark.parametrize("case", ["all_equal", "small_int64", "one_byte_differs",
                                  "rows_constant"])
def test_device_skipped_passes(rng, case):
    """device_skip: digit positions where no row's keys differ run no pass (the others alternate
    buffers among themselves); none differing: the top pass alone copies."""
    n = 50_000
    if case == "all_equal":
        keys = np.full(n, -7, np.int64)
    elif case == "small_int64":
        keys = rng.integers(-100, 100, n).astype(np.int64)
    elif case == "one_byte_differs":
        keys = (rng.integers(0, 256, n).astype(np.uint64) << np.uint64(40)) | np.uint64(77)
    else:
        keys = np.repeat(np.array([[5], [1 << 20], [-3]], np.int32), 9000, axis=1)
    check(keys)
    check(keys, descending=True)


def test_device_numpy_in_out(rng):
    """device_numpy: NumPy in, NumPy out (the copies around the same kernels)."""
    keys = special_keys(rng, np.float32, 300_000)
    check(keys, on_device=False)
    got = gpuscan.sort(keys)
    assert isinstance(got, np.ndarray)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.float32, np.int64, np.float64],
                         ids=["uint32", "int32", "float32", "int64", "float64"])
def test_device_large(rng, dtype):
    """device_large: 2^22 + 1 keys (hundreds of tiles in flight: long look-backs)."""
    check(special_keys(rng, dtype, 2**22 + 1))


@pytest.mark.slow
def test_device_rows_goal_shape(rng):
    """device_rows (2^10, 2^14) float32: the (2^14, 2^14) goal's rows, fewer of them."""
    check(special_keys(rng, np.float32, 2**24).reshape(2**10, 2**14))


@pytest.mark.slow
def test_device_wide_descriptors(rng):
    """device_wide: a row of more than 2^30 - 1 keys takes 64-bit look-back words (uint8: one
    pass; sort alone, 3 GiB of device memory)."""
    n = 2**30 + 5
    keys = rng.integers(0, 256, n, dtype=np.uint8)
    got = host(gpuscan.sort(gpuscan.to_device(keys)))
    assert np.array_equal(np.bincount(got, minlength=256), np.bincount(keys, minlength=256))
    assert np.all(got[1:] >= got[:-1])


def test_scratch_none_for_short_rows():
    assert _gpuscan._sort_scratch_bytes(10**6, BLOCK, 4, False, True, True) == 0
    assert _gpuscan._sort_scratch_bytes(1, BLOCK + 1, 4, False, True, True) > 0
