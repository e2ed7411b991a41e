"""The CUDA radix sort's data flow, proven on the host: tools/sort_model.c (the kernels' steps in
plain C, sharing gpuscan/radix.h and gpuscan/config.h with them) against NumPy's stable sort.

No GPU needed: the model is built with the system's C compiler and called through ctypes.  It
runs the device-wide sort (histogram, passes, look-back, store addresses, buffer plan) on tiles
and histogram chunks as small as the cases ask, so that a row of a few thousand keys crosses many
tiles and chunks, with 32- and 64-bit look-back words, and the block sort on small blocks; it
raises on what the device could only get wrong silently (a look-back that would wait forever or
leave its row, a count past its word's bits, a pass reading the buffer it writes, a store outside
its row or twice).  Each case names
the path it reaches.  The kernels' geometry itself (384 threads, gs_sort_nv keys a tile) runs in
the `real_geometry` cases.
"""
import ctypes
import os
import shutil
import subprocess
import sysconfig

import numpy as np
import pytest

from gpuscan import _gpuscan

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOURCE = os.path.join(ROOT, "tools", "sort_model.c")

pytestmark = pytest.mark.skipif(not os.path.exists(SOURCE),
                                reason="tools/sort_model.c is not in this tree")

# gpuscan/types.h's dtype codes (the order of GS_DTYPES).
CODES = {np.dtype(t): i for i, t in enumerate(
    [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
     np.float32, np.float64])}
DTYPES = list(CODES)
DTYPE_IDS = [d.name for d in DTYPES]

# The kernels' constants (gpuscan/config.h), for the real-geometry cases.
SORT_NT, REG_WORDS, KEYS_REG_WORDS, FLOAT_KEYS_REG_WORDS = 384, 54, 44, 40
HIST_TILES, HIST_MIN_BLOCKS = 8, 512
BLOCK_NT, BLOCK_VT = 256, 16


def real_vt(key_bytes, idx_bytes, is_float=False):
    """GS_SORT_VT."""
    alone = key_bytes <= 4 and idx_bytes == 0
    words = (REG_WORDS if not alone else FLOAT_KEYS_REG_WORDS if is_float else KEYS_REG_WORDS)
    return words // ((2 if key_bytes > 4 else 1) + 1 + idx_bytes // 4)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc}) to build tools/sort_model.c")
    lib = tmp_path_factory.mktemp("sort_model") / "sort_model.so"
    subprocess.run([cc, "-O2", "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC",
                    "-I" + os.path.join(ROOT, "include"), SOURCE, "-o", str(lib)], check=True)
    m = ctypes.CDLL(str(lib))
    m.gs_model_sort.restype = ctypes.c_int
    m.gs_model_sort.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                                ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                                ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                ctypes.c_uint64]
    m.gs_model_error.restype = ctypes.c_char_p
    return m


def run_model(model, keys, *, descending=False, want_keys=True, want_index=True, path=0,
              nt=64, vt=3, hist_tiles=2, wide=False, block_nt=64, block_vt=4, idx8=False,
              seed=1):
    """(sorted keys or None, index or None) of the model over the rows of 2-D `keys`."""
    keys = np.ascontiguousarray(keys)
    rows, row_len = keys.shape
    out = np.empty_like(keys) if want_keys else None
    idx = np.empty(keys.shape, np.int64) if want_index else None
    rc = model.gs_model_sort(keys.ctypes.data, None if out is None else out.ctypes.data,
                             None if idx is None else idx.ctypes.data, rows, row_len,
                             CODES[keys.dtype], int(descending), path, nt, vt, hist_tiles,
                             int(wide), block_nt, block_vt, int(idx8), seed)
    assert rc == 0, model.gs_model_error().decode()
    return out, idx


def reference_index(keys, descending):
    """NumPy's stable order along the last axis: ascending as np.argsort(kind="stable"); for
    descending, largest first with ties and NaNs (last) in input order."""
    if keys.dtype == np.bool_:
        keys = keys.view(np.uint8) != 0            # any nonzero byte is True
    if not descending:
        return np.argsort(keys, axis=-1, kind="stable")
    if keys.dtype.kind == "f":
        nan = np.isnan(keys)
        return np.lexsort((np.where(nan, 0, -keys), nan), axis=-1)
    return np.argsort(~keys, axis=-1, kind="stable")    # ~ reverses bool and integer order


def check(model, keys, descending=False, **kw):
    keys = np.atleast_2d(keys)
    want = reference_index(keys, descending)
    out, idx = run_model(model, keys, descending=descending, **kw)
    if idx is not None:
        bad = np.flatnonzero(idx != want)
        assert bad.size == 0, f"index differs at {bad[:5]}: {idx.flat[bad[:5]]} vs {want.flat[bad[:5]]}"
    if out is not None:
        u = np.dtype(f"u{keys.dtype.itemsize}")
        expect = np.take_along_axis(keys, want, axis=-1)
        bad = np.flatnonzero(out.view(u) != expect.view(u))
        assert bad.size == 0, f"keys differ (bit for bit) at {bad[:5]}"


def special_keys(rng, dtype, n):
    """Keys with ties and every special value of the dtype (NaN of both signs and odd payloads,
    +-0, +-inf, the extremes), and for bool, bytes other than 0 and 1."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.choice(np.array([0, 1, 2, 255], np.uint8), n).view(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        small = rng.integers(-3 if dtype.kind == "i" else 0, 4, n).astype(dtype)
        a = np.where(rng.random(n) < 0.5, small, a)
        a[rng.random(n) < 0.05] = info.min
        a[rng.random(n) < 0.05] = info.max
        return a
    u = np.dtype(f"u{dtype.itemsize}")
    bits = 32 if dtype.itemsize == 4 else 64
    exp_mask = {32: 0x7f800000, 64: 0x7ff0000000000000}[bits]
    nans = np.array([exp_mask | 1, exp_mask | (exp_mask >> 1) >> 3, (1 << (bits - 1)) | exp_mask | 5,
                     (1 << bits) - 1], dtype=u).view(dtype)
    special = np.concatenate([nans, np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0,
                                              np.finfo(dtype).tiny, -np.finfo(dtype).max],
                                             dtype)])
    a = rng.standard_normal(n).astype(dtype)
    a = np.where(rng.random(n) < 0.3, np.round(a), a).astype(dtype)   # ties
    pick = rng.random(n) < 0.2
    a[pick] = rng.choice(special, int(pick.sum()))
    return a


# ---- the device-wide path, small tiles (192 keys), histogram chunks of 2 tiles -----------------
DEVICE_SHAPES = [
    pytest.param((1, 1), id="one_key"),
    pytest.param((1, 191), id="tile_minus_one"),
    pytest.param((1, 192), id="one_tile"),
    pytest.param((1, 193), id="tile_plus_one"),
    pytest.param((1, 4000), id="many_tiles_and_chunks"),
    pytest.param((7, 450), id="rows_partial_tiles"),
    pytest.param((3, 768), id="rows_whole_chunks"),
]


@pytest.mark.parametrize("shape", DEVICE_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_device_path(model, rng, shape, dtype, descending):
    check(model, special_keys(rng, dtype, shape[0] * shape[1]).reshape(shape), descending,
          path=1)


@pytest.mark.parametrize("want", ["keys", "index"])
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.uint16], ids=["int64", "float64", "uint16"])
def test_device_path_one_output(model, rng, want, dtype):
    """sort alone (no index payload) and argsort alone (the passes alternate between two scratch
    key arrays and the last writes no keys)."""
    check(model, special_keys(rng, dtype, 2 * 1111).reshape(2, 1111), path=1,
          want_keys=want == "keys", want_index=want == "index")


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_device_path_wide_words(model, rng, descending):
    """64-bit look-back words and the index carried in 8 bytes between passes (rows of more than
    2^30 and 2^32 keys), on small rows."""
    check(model, special_keys(rng, np.float32, 3000).reshape(1, 3000), descending, path=1,
          idx8=True, wide=True)


@pytest.mark.parametrize("case", ["all_equal", "small_int64", "one_differing_byte",
                                  "rows_constant_but_different"])
def test_device_path_skipped_passes(model, rng, case):
    """Digit positions where no row's keys differ take no pass (the live passes alternate
    buffers among themselves); with none live, the top pass alone copies."""
    n = 2000
    if case == "all_equal":
        keys = np.full((1, n), -7, np.int64)
    elif case == "small_int64":
        keys = rng.integers(-100, 100, (1, n)).astype(np.int64)
    elif case == "one_differing_byte":
        keys = (rng.integers(0, 256, (1, n)).astype(np.uint64) << np.uint64(40)) | np.uint64(77)
    else:
        keys = np.repeat(np.array([[5], [1 << 20], [-3]], np.int32), 700, axis=1)
    for want_keys, want_index in ((True, True), (False, True), (True, False)):
        check(model, keys, path=1, want_keys=want_keys, want_index=want_index)


def test_device_path_many_waves_and_seeds(model, rng):
    """Look-backs in many random orders (the waves' sizes and orders come from the seed)."""
    keys = special_keys(rng, np.uint32, 5 * 1000).reshape(5, 1000)
    for seed in range(8):
        check(model, keys, path=1, seed=seed, nt=32, vt=2, hist_tiles=3, wide=seed % 2 == 1)


# ---- the block sort, small blocks (256 keys: up to 256 rows of 1) ----------------------------
BLOCK_SHAPES = [
    pytest.param((1, 1), id="one_key"),
    pytest.param((300, 1), id="rows_of_one"),
    pytest.param((1, 256), id="one_row_fills_block"),
    pytest.param((1, 255), id="one_row_block_minus_one"),
    pytest.param((40, 16), id="short_rows"),
    pytest.param((9, 100), id="two_rows_a_block"),
    pytest.param((33, 7), id="rows_partial_last_block"),
]


@pytest.mark.parametrize("shape", BLOCK_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_block_path(model, rng, shape, dtype, descending):
    check(model, special_keys(rng, dtype, shape[0] * shape[1]).reshape(shape), descending,
          path=2)


@pytest.mark.parametrize("want", ["keys", "index"])
def test_block_path_one_output(model, rng, want):
    check(model, special_keys(rng, np.float64, 50 * 30).reshape(50, 30), path=2,
          want_keys=want == "keys", want_index=want == "index")


# ---- the kernels' own geometry ---------------------------------------------------------------
REAL_SHAPES = [
    pytest.param((1, 4096), id="block_one_row_4096"),
    pytest.param((1000, 16), id="block_short_rows"),
    pytest.param((5, 1024), id="block_four_rows_a_block"),
    pytest.param((1, 4097), id="device_just_past_block"),
    pytest.param((1, 3 * 8832 + 5), id="device_many_tiles"),
    pytest.param((3, 9000), id="device_rows"),
]


@pytest.mark.parametrize("shape", REAL_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8], ids=["float32", "int64", "uint8"])
def test_real_geometry(model, rng, shape, dtype):
    """path 0 (the launcher's choice) with the kernels' tiles: 384 threads, GS_SORT_VT keys a
    thread, histogram chunks of GS_SORT_HIST_TILES tiles."""
    kb = np.dtype(dtype).itemsize
    check(model, special_keys(rng, dtype, shape[0] * shape[1]).reshape(shape), path=0,
          nt=SORT_NT, vt=real_vt(kb, 4), hist_tiles=HIST_TILES, block_nt=BLOCK_NT,
          block_vt=BLOCK_VT)


def test_constants_match_the_extension():
    """The constants above are the build's (a block sort's rows, the layout's tiles)."""
    assert _gpuscan._config()["sort_block_items"] == BLOCK_NT * BLOCK_VT
    for kb, fl, keys, index in ((4, False, True, True), (8, False, False, True),
                                (1, False, True, False), (4, False, True, False),
                                (4, True, True, False), (8, True, True, False)):
        lay = _gpuscan._sort_layout(3, 100_000, kb, fl, keys, index)
        ib = 4 if index else 0
        assert lay["idx_bytes"] == ib
        assert lay["nv"] == SORT_NT * real_vt(kb, ib, fl)
        tiles = 3 * -(-100_000 // lay["nv"])
        assert lay["hist_tiles"] == max(1, min(HIST_TILES, tiles // HIST_MIN_BLOCKS))
        assert lay["desc_bytes"] == 4
    assert _gpuscan._sort_layout(1, 2**30, 4, False, True, True)["desc_bytes"] == 8
    assert _gpuscan._sort_layout(1, 2**30 - 1, 4, False, True, True)["desc_bytes"] == 4
    assert _gpuscan._sort_layout(1, 2**32 + 1, 4, False, True, True)["idx_bytes"] == 8


def test_scratch_sizes():
    """gs_sort_scratch_bytes: none for rows a block sorts; the regions each aligned, in order,
    the key scratch only as the plan needs it."""
    assert _gpuscan._sort_scratch_bytes(10**6, 4096, 4, False, True, True) == 0
    assert _gpuscan._sort_scratch_bytes(0, 10**6, 4, False, True, True) == 0
    for rows, row_len, kb, keys, index in ((1, 10**6, 4, True, True), (3, 5000, 8, False, True),
                                           (2, 70_000, 1, True, False), (1, 4097, 2, True, True)):
        lay = _gpuscan._sort_layout(rows, row_len, kb, False, keys, index)
        assert lay["in_block"] == 0
        assert lay["bytes"] == _gpuscan._sort_scratch_bytes(rows, row_len, kb, False, keys, index)
        n = rows * row_len
        offsets = [lay[k] for k in ("hist", "desc0", "desc1", "ktmp0", "ktmp1", "itmp")
                   if lay[k] >= 0]
        assert offsets == sorted(offsets) and all(o % 128 == 0 for o in offsets)
        assert lay["desc1"] - lay["desc0"] >= lay["desc_bytes"] * 256 * lay["tiles"]
        assert lay["tiles"] == rows * -(-row_len // lay["nv"])
        assert (lay["ktmp0"] >= 0) == (kb >= 2)
        assert (lay["ktmp1"] >= 0) == (not keys and kb >= 3)
        assert (lay["itmp"] >= 0) == (index and kb >= 2)
        last = max(offsets)
        size = {"hist": 8 * rows * kb * 256, "desc0": 1024 * lay["tiles"],
                "desc1": 1024 * lay["tiles"], "ktmp0": n * kb, "ktmp1": n * kb,
                "itmp": n * lay["idx_bytes"]}
        tail = [k for k in size if lay[k] == last][0]
        assert lay["bytes"] >= last + size[tail]
        # the memset covers the header, and the counts only where several blocks add to them
        assert lay["zero_bytes"] == (lay["desc0"] if lay["row_chunks"] > 1 else lay["hist"])
