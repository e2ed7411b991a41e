"""gpuscan.split and gpuscan.compact against a stable-partition reference (issue #5).

split(a, flags) -> (out, count): the values whose flag is nonzero first, then the others, each
group in order; compact(a, flags) = a[flags != 0] flattened.  Every result is compared bit for
bit (values are moved, never computed: NaN payloads must survive).  Sizes and flag positions
are named after the path they reach (NV = values per tile of the device split, the scan's
tile); the same tests run on whichever backend is active, the GPU-only ones are marked `gpu`.
"""
import sys

import numpy as np
import pytest

import gpuscan
from conftest import (DTYPE_IDS, DTYPES, LAYOUT_KINDS, NV, SHAPE_MISMATCHES, SMALL_SIZES,
                      make_layout, random_array, run_in_threads)
from gpuscan import _gpuscan
from reference import bits, check_segmented_reduce, check_split, split_python, split_reference

FLAG_DTYPES = [np.bool_, np.uint8, np.int16, np.int32, np.uint64, np.float32, np.float64]
FLAG_IDS = [np.dtype(d).name for d in FLAG_DTYPES]


def random_flags(rng, n, density, dtype=np.uint8):
    """Flags set with probability `density`, as assorted nonzero values of `dtype` (negative ones
    where it has them, NaN and tiny values for floats), zero (-0.0 for floats) elsewhere."""
    on = rng.random(n) < density
    kind = np.dtype(dtype).kind
    values = {"b": [True], "u": [1, 2, 255, 128], "i": [1, -1, 100, -128],
              "f": [1.0, -2.5, 1e-30, np.inf, np.nan]}[kind]
    flags = np.zeros(n, dtype)
    if kind == "f":
        flags[:] = -0.0
    flags[on] = np.resize(np.array(values, dtype=dtype), int(on.sum()))
    return flags


# ------------------------------------------------------------------------------------------
# The classic examples, the plain-Python reference, compact.
# ------------------------------------------------------------------------------------------
def test_classic_examples():
    out, count = gpuscan.split(np.array([5, 7, 3, 1, 4, 2, 7, 2]),
                               np.array([1, 1, 0, 1, 0, 0, 1, 0]))
    np.testing.assert_array_equal(out, [5, 7, 1, 7, 3, 4, 2, 2])
    assert count == 4 and type(count) is int
    out, count = gpuscan.split([1, 5, 6, 2, 3, 7, 8, 4], [1, 0, 0, 1, 1, 0, 0, 1])
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 5, 6, 7, 8])
    assert count == 4
    np.testing.assert_array_equal(
        gpuscan.compact(np.array([5, 7, 3, 1, 4, 2, 7, 2]),
                        np.array([True, True, False, True, False, False, True, False])),
        [5, 7, 1, 7])
    # Keywords.
    out, count = gpuscan.split(a=[3, 4], flags=[0, 1])
    np.testing.assert_array_equal(out, [4, 3])
    np.testing.assert_array_equal(gpuscan.compact(a=[3, 4], flags=[0, 1]), [4])


def test_python_reference_agrees(rng):
    for n in (0, 1, 2, 3, 8, 33, 100):
        a = random_array(rng, np.int16, (n,))
        flags = random_flags(rng, n, 0.4)
        slow_out, slow_count = split_python(a, flags)
        fast_out, fast_count = split_reference(a, flags)
        assert np.array_equal(slow_out, fast_out) and slow_count == fast_count
        out, count = gpuscan.split(a, flags)
        assert np.array_equal(out, slow_out) and count == slow_count, n


# ------------------------------------------------------------------------------------------
# The matrix: every dtype of a x flag dtypes x size.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SMALL_SIZES)
@pytest.mark.parametrize("flag_dtype", [np.bool_, np.uint8, np.int32, np.float64],
                         ids=["bool", "uint8", "int32", "float64"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_split_matrix(dtype, flag_dtype, n, rng):
    a = random_array(rng, dtype, (n,))
    flags = random_flags(rng, n, 0.5, flag_dtype)
    before, flags_before = a.copy(), flags.copy()
    check_split(gpuscan.split(a, flags), a, flags)
    check_split(gpuscan.compact(a, flags), a, flags, compact=True)
    assert np.array_equal(bits(a), bits(before)) and np.array_equal(bits(flags),
                                                                     bits(flags_before))


@pytest.mark.parametrize("flag_dtype", FLAG_DTYPES, ids=FLAG_IDS)
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float64],
                         ids=["int8", "int32", "float64"])
def test_flag_dtypes(dtype, flag_dtype, rng):
    # Every flag dtype at its own width, over whole and partial tiles.
    n = 5 * NV + 77
    a = random_array(rng, dtype, (n,))
    for density in (0.03, 0.5, 0.97):
        flags = random_flags(rng, n, density, flag_dtype)
        check_split(gpuscan.split(a, flags), a, flags)
        check_split(gpuscan.compact(a, flags), a, flags, compact=True)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32, np.float64],
                         ids=["uint8", "int16", "int32", "float32", "float64"])
def test_large(dtype, rng):
    n = 2**20 + 17
    a = random_array(rng, dtype, (n,))
    flags = random_flags(rng, n, 0.5)
    check_split(gpuscan.split(a, flags), a, flags)
    check_split(gpuscan.compact(a, flags), a, flags, compact=True)


@pytest.mark.slow
def test_very_large(rng):
    # Many thousands of tiles: look-backs that walk far.
    n = 3 * 2**24 + 5
    a = np.arange(n, dtype=np.int32)
    flags = (rng.random(n) < 0.3).astype(np.uint8)
    check_split(gpuscan.split(a, flags), a, flags)


# ------------------------------------------------------------------------------------------
# All flagged, none flagged, flags at tile and warp boundaries, densities.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 33, NV - 1, NV, NV + 1, 7 * NV + 5])
@pytest.mark.parametrize("flagged", ["all", "none"])
def test_all_and_none(flagged, n, rng):
    a = random_array(rng, np.float32, (n,))
    flags = np.full(n, 3 if flagged == "all" else 0, np.int64)
    out, count = gpuscan.split(a, flags)
    assert count == (n if flagged == "all" else 0)
    assert np.array_equal(bits(out), bits(a))
    comp = gpuscan.compact(a, flags)
    assert np.array_equal(bits(comp), bits(a if flagged == "all" else a[:0]))


FLAG_POSITIONS = {
    "tile_minus_one": [NV - 1],
    "tile": [NV],
    "tile_plus_one": [NV + 1],
    "first_and_last": [0, 7 * NV + 4],
    "every_tile_start": [k * NV for k in range(8)],
    "around_every_tile": sorted({k * NV + d for k in range(1, 8) for d in (-1, 0, 1)}),
    "last_of_each_tile": [k * NV - 1 for k in range(1, 8)],
    "warp_edges": [31, 32, 33, 63, 64, NV + 31, NV + 32],
    "one_whole_tile": list(range(2 * NV, 3 * NV)),
}


@pytest.mark.parametrize("invert", [False, True], ids=["only_these", "all_but_these"])
@pytest.mark.parametrize("where", list(FLAG_POSITIONS))
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float64], ids=["int8", "int32",
                                                                        "float64"])
def test_flags_at_tile_boundaries(dtype, where, invert, rng):
    n = 7 * NV + 5
    a = random_array(rng, dtype, (n,))
    flags = np.zeros(n, np.bool_)
    flags[FLAG_POSITIONS[where]] = True
    if invert:
        flags = ~flags
    check_split(gpuscan.split(a, flags), a, flags)
    check_split(gpuscan.compact(a, flags), a, flags, compact=True)


@pytest.mark.parametrize("density", [1e-5, 1 / NV, 0.01, 0.5, 0.99, 1 - 1e-5])
def test_densities(density, rng):
    n = 2**18 + 3
    a = np.arange(n, dtype=np.int64)
    flags = random_flags(rng, n, density)
    check_split(gpuscan.split(a, flags), a, flags)
    check_split(gpuscan.compact(a, flags), a, flags, compact=True)


# ------------------------------------------------------------------------------------------
# Values moved bit for bit; float flags.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,patterns", [
    (np.float32, [0x7FC00001, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0x80000000, 0xFF800000]),
    (np.float64, [0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001,
                  0x8000000000000000, 0xFFF0000000000000]),
], ids=["float32", "float64"])
def test_nan_payloads_kept(dtype, patterns, rng):
    n = 3 * NV + 11
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    raw = rng.integers(0, 2**(8 * u.itemsize - 2), n, dtype=u)
    raw[::7] = np.resize(np.array(patterns, dtype=u), raw[::7].size)
    a = raw.view(dtype)
    flags = random_flags(rng, n, 0.5)
    check_split(gpuscan.split(a, flags), a, flags)
    check_split(gpuscan.compact(a, flags), a, flags, compact=True)


@pytest.mark.parametrize("flag_dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_float_flags_negative_zero_and_nan(flag_dtype):
    a = np.arange(1, 9, dtype=np.int32)
    flags = np.array([0.0, -0.0, np.nan, 0.0, -0.0, 0.5, -0.0, -np.nan], dtype=flag_dtype)
    out, count = gpuscan.split(a, flags)
    np.testing.assert_array_equal(out, [3, 6, 8, 1, 2, 4, 5, 7])
    assert count == 3
    np.testing.assert_array_equal(gpuscan.compact(a, flags), [3, 6, 8])


# ------------------------------------------------------------------------------------------
# Shapes and layouts: a and flags the same shape, flattened in C order.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (1,), (3, 5), (4, 1, 33), (2, NV + 1), (0,), (3, 0)],
                         ids=["0d", "one", "2d", "3d", "2d_past_a_tile", "empty", "2d_empty"])
def test_shapes_flattened(shape, rng):
    a = rng.integers(-100, 100, size=shape, dtype=np.int32)
    flags = rng.random(shape) < 0.4
    out, count = gpuscan.split(a, flags)
    assert out.ndim == 1 and out.size == a.size
    check_split((out, count), a, flags)
    comp = gpuscan.compact(a, flags)
    assert comp.ndim == 1
    np.testing.assert_array_equal(comp, a[flags != 0])


@pytest.mark.parametrize("flags_layout", LAYOUT_KINDS)
@pytest.mark.parametrize("a_layout", LAYOUT_KINDS)
def test_layouts(a_layout, flags_layout, rng):
    # Any strides, byte order and alignment of either operand: the values of base and on.
    base = rng.integers(-2**40, 2**40, size=3 * NV + 7, dtype=np.int64)
    on = rng.random(base.size) < 0.3
    views = [x if kind == "contiguous" else make_layout(kind, x)
             for kind, x in ((a_layout, base), (flags_layout, on.astype(np.int32)))]
    check_split(gpuscan.split(*views), base, on)
    check_split(gpuscan.compact(*views), base, on, compact=True)


def test_2d_non_contiguous(rng):
    a = rng.integers(-100, 100, size=(5, NV + 3), dtype=np.int32).T  # F order
    flags = (rng.random((NV + 3, 5)) < 0.3)[:, ::-1]
    check_split(gpuscan.split(a, flags), a, flags)
    np.testing.assert_array_equal(gpuscan.compact(a, flags), a[flags])


def test_result_is_new_and_native(rng):
    a = np.arange(100, dtype=">i4")
    flags = np.arange(100) % 3 == 0
    out, count = gpuscan.split(a, flags)
    assert out.dtype == np.dtype("=i4") and out.flags.c_contiguous and out.flags.writeable
    assert not np.shares_memory(out, a)
    np.testing.assert_array_equal(out, np.concatenate([a[flags], a[~flags]]))


# ------------------------------------------------------------------------------------------
# Errors.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("a_shape,flags_shape", SHAPE_MISMATCHES)
def test_shape_mismatch(a_shape, flags_shape):
    with pytest.raises(ValueError):
        gpuscan.split(np.zeros(a_shape), np.ones(flags_shape, bool))
    with pytest.raises(ValueError):
        gpuscan.compact(np.zeros(a_shape), np.ones(flags_shape, bool))


@pytest.mark.parametrize("dtype", [np.float16, np.complex64, object, "U1", "M8[s]"],
                         ids=["float16", "complex64", "object", "str", "datetime64"])
def test_unsupported_flag_dtypes(dtype):
    # Values of every fixed-size dtype move (tests/test_numpy_habits.py); flags are read as
    # numbers, of the supported dtypes only.
    with pytest.raises(TypeError):
        gpuscan.split(np.arange(4), np.zeros(4, dtype=dtype))
    with pytest.raises(TypeError):
        gpuscan.compact(np.arange(4), np.zeros(4, dtype=dtype))


def test_values_holding_python_objects_are_refused():
    with pytest.raises(TypeError):
        gpuscan.split(np.zeros(4, dtype=object), np.ones(4, bool))
    with pytest.raises(TypeError):
        gpuscan.compact(np.zeros(4, dtype=object), np.ones(4, bool))


def test_argument_errors():
    with pytest.raises(TypeError):
        gpuscan.split(np.arange(4))  # flags is required
    with pytest.raises(TypeError):
        gpuscan.compact(np.arange(4), np.ones(4), np.ones(4))
    with pytest.raises(TypeError):
        gpuscan.split(np.arange(4), np.ones(4), out=np.empty(4))


def test_errors_leak_nothing(rng):
    a = rng.integers(0, 9, size=NV + 1, dtype=np.int32)
    flags = rng.random(NV + 1) < 0.3
    refs = sys.getrefcount(a), sys.getrefcount(flags)
    for _ in range(50):
        with pytest.raises(ValueError):
            gpuscan.split(a, flags[:-1])
        with pytest.raises(TypeError):
            gpuscan.compact(a.astype(object), flags)
        gpuscan.split(a, flags)
        gpuscan.compact(a, flags)
    assert (sys.getrefcount(a), sys.getrefcount(flags)) == refs


def test_scratch_bytes():
    # The device split's scratch: a line for the total, a 32-byte descriptor per tile (padded
    # to a line), then one bit per value of whole tiles.
    assert _gpuscan._split_scratch_bytes(0) == 0
    for tiles in (1, 4, 5, 1000):
        desc = -(-32 * tiles // 128) * 128
        want = 128 + desc + tiles * NV // 8
        assert _gpuscan._split_scratch_bytes(tiles * NV) == want
        assert _gpuscan._split_scratch_bytes(tiles * NV - 1) == want
    with pytest.raises(ValueError):
        _gpuscan._split_scratch_bytes(-1)


# ------------------------------------------------------------------------------------------
# Device arrays (CUDA backend only).
# ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("where", ["a", "flags", "both"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float64],
                         ids=["uint8", "int16", "int32", "float64"])
def test_device_arrays(dtype, where, rng):
    n = 7 * NV + 5
    a = random_array(rng, dtype, (n,))
    flags = random_flags(rng, n, 0.5)
    da = gpuscan.to_device(a) if where in ("a", "both") else a
    df = gpuscan.to_device(flags) if where in ("flags", "both") else flags
    out, count = gpuscan.split(da, df)
    assert isinstance(out, gpuscan.DeviceArray) and type(count) is int
    check_split((out, count), a, flags)
    comp = gpuscan.compact(da, df)
    assert isinstance(comp, gpuscan.DeviceArray)
    assert comp.shape == (int((flags != 0).sum()),)
    check_split(comp, a, flags, compact=True)
    assert np.array_equal(bits(da.get() if where != "flags" else da), bits(a))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [0, 1, NV - 1, NV, NV + 1, 2**20 + 17])
@pytest.mark.parametrize("flagged", ["random", "all", "none"])
def test_device_sizes(n, flagged, rng):
    a = rng.integers(-2**31, 2**31, size=n, dtype=np.int64)
    flags = {"random": lambda: random_flags(rng, n, 0.5),
             "all": lambda: np.ones(n, np.uint8),
             "none": lambda: np.zeros(n, np.uint8)}[flagged]()
    da, df = gpuscan.to_device(a), gpuscan.to_device(flags)
    check_split(gpuscan.split(da, df), a, flags)
    comp = gpuscan.compact(da, df)
    assert comp.size == int((flags != 0).sum())
    check_split(comp, a, flags, compact=True)


@pytest.mark.gpu
def test_device_scratch_reused(rng):
    # One scratch is kept between splits (its header's running sum and counter left at zero by
    # each count pass, never memset): splits, compacts and segmented reductions (whose heads'
    # count shares it) of growing, shrinking and over-the-kept-size lengths, in an order that
    # hands each the scratch the one before left.  2^25 values need more than the kept 4 MiB.
    sizes = [5, NV * 3 + 1, 1, 2**20 + 17, 2**16, 2**25 + 3, NV, 2**22, 2, 2**25 + 3, 7 * NV]
    for i, n in enumerate(sizes):
        a = rng.integers(-2**31, 2**31, size=n, dtype=np.int32)
        flags = random_flags(rng, n, (0.5, 0.0, 1.0, 0.01)[i % 4])
        da, df = gpuscan.to_device(a), gpuscan.to_device(flags)
        check_split(gpuscan.split(da, df), a, flags)
        check_split(gpuscan.compact(da, df), a, flags, compact=True)
        check_segmented_reduce(gpuscan.segmented_reduce(da, df).get(), a, flags)
        check_split(gpuscan.split(da, df), a, flags)


@pytest.mark.gpu
def test_device_concurrent_splits():
    # Splits from several threads at once: while one holds the kept scratch (from its count
    # pass to its scatter, the GIL taken between them) another takes a new one.
    def splits(seed):
        r = np.random.default_rng(seed)
        for _ in range(20):
            n = int(r.integers(1, 40 * NV))
            a = r.integers(-2**31, 2**31, size=n, dtype=np.int32)
            flags = random_flags(r, n, r.random())
            da, df = gpuscan.to_device(a), gpuscan.to_device(flags)
            check_split(gpuscan.split(da, df), a, flags)
            check_split(gpuscan.compact(da, df), a, flags, compact=True)

    run_in_threads(splits)


@pytest.mark.gpu
def test_device_2d_and_flag_dtypes(rng):
    a = rng.standard_normal((3, NV + 1))
    for fdt in FLAG_DTYPES:
        flags = random_flags(rng, a.size, 0.3, fdt).reshape(a.shape)
        check_split(gpuscan.split(gpuscan.to_device(a), gpuscan.to_device(flags)), a, flags)


@pytest.mark.gpu
def test_split_cupy_input(rng):
    cp = pytest.importorskip("cupy")
    n = 7 * NV + 5
    a = rng.integers(-1000, 1000, 3 * n, dtype=np.int32)
    flags = rng.random(3 * n) < 0.5
    ca, cf = cp.asarray(a), cp.asarray(flags)
    out, count = gpuscan.split(ca, cf)
    assert isinstance(out, gpuscan.DeviceArray)
    check_split((out, count), a, flags)
    np.testing.assert_array_equal(cp.asnumpy(cp.asarray(out)), out.get())
    # Strided device views (gathered first) and a CuPy bool mask, against CuPy's a[mask].
    check_split(gpuscan.split(ca[::3], cf[1::3]), a[::3], flags[1::3])
    comp = gpuscan.compact(ca[::3], cf[1::3])
    np.testing.assert_array_equal(comp.get(), cp.asnumpy(ca[::3][cf[1::3]]))


@pytest.mark.gpu
def test_split_torch_input(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    n = 3 * NV + 9
    t = torch.rand(n, device="cuda", dtype=torch.float32)
    m = torch.rand(n, device="cuda") < 0.5
    out, count = gpuscan.split(t, m)
    check_split((out, count), t.cpu().numpy(), m.cpu().numpy())
    comp = gpuscan.compact(t, m)
    np.testing.assert_array_equal(torch.from_dlpack(comp).cpu().numpy(), t[m].cpu().numpy())


@pytest.mark.gpu
@pytest.mark.slow
def test_device_counts_past_2_to_32():
    # More than 2^32 values, more than 2^32 of them flagged: 64-bit tile offsets, and look-back
    # prefixes whose high half is in use.  Three of every four values flagged, values i % 256.
    cp = pytest.importorskip("cupy")
    n = 256 * 22_400_000  # 5.7e9 values, 4.3e9 flagged
    if gpuscan.device_info()["memory_bytes"] < 40 * 10**9:
        pytest.skip("needs about 27 GB of device memory")
    a = cp.tile(cp.arange(256, dtype=cp.uint8), n // 256)
    flags = cp.tile(cp.array([1, 1, 1, 0], dtype=cp.uint8), n // 4)
    out, count = gpuscan.split(a, flags)
    del flags
    assert count == 3 * n // 4 > 2**32
    got = cp.asarray(out)
    assert bool(cp.array_equal(got[count:], a[3::4]))
    assert bool(cp.array_equal(got[:count], a.reshape(-1, 4)[:, :3].ravel()))
    del got, out
    comp = gpuscan.compact(a, cp.tile(cp.array([0, 1, 0, 0], dtype=cp.uint8), n // 4))
    assert comp.shape == (n // 4,)
    assert bool(cp.array_equal(cp.asarray(comp), a[1::4]))
