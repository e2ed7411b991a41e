"""gpuscan.sort and gpuscan.argsort against NumPy's stable sort (issue #45).

The oracle is NumPy itself: ``np.sort(a, axis, kind="stable")`` and ``np.argsort(a, axis,
kind="stable")`` (NaNs last in input order, -0.0 and +0.0 equal and kept in input order), and for
``descending=True`` the stable argsort of an order-reversing map of the keys (``-a`` for floats,
which keeps NaNs last and the two zeros equal; ``~a`` for integers and bool, which never
overflows).  Values are compared bit for bit (a sort moves them: a NaN's payload and a zero's
sign must survive), indices exactly.  Sizes are named after the CPU backend's paths
(cpu/sort.c): the comparison sort of at most 64 keys, a one-table histogram below 4096, one
thread below 2^16, the cache-sized LSD passes, a long row (2^19 keys and more) on every thread
with its MSD split; on AVX-512 hosts a sort alone of 32- and 64-bit keys, and an argsort alone
of more than 64 such keys on one thread, take the quicksort (cpu/sort_qs.h) instead.
Device variants are marked `gpu` and run with the CUDA backend.
"""
import json

import numpy as np
import pytest

import gpuscan
from conftest import (DTYPE_IDS, DTYPES, make_layout, outputs_on_thread_counts, random_array,
                      run_in_threads, run_python)
from reference import bits

SORT_DTYPES = DTYPES + [np.float16]
SORT_IDS = DTYPE_IDS + ["float16"]

SIZES = [
    pytest.param(0, id="empty"),
    pytest.param(1, id="one"),
    pytest.param(2, id="two"),
    pytest.param(64, id="small_sort_64"),
    pytest.param(65, id="radix_65"),
    pytest.param(1024, id="small_sort_8_byte_keys_1024"),
    pytest.param(1025, id="radix_8_byte_keys_1025"),
    pytest.param(4097, id="wide_histogram_4097"),
    pytest.param(2**16 + 3, id="one_task_2^16+3"),
]
LARGE = pytest.param(2**20 + 17, id="msd_split_2^20+17")


def descending_key(a):
    """An order-reversing map of a's values that NumPy's stable argsort sorts as sort's
    descending=True must: largest first, equal values in input order, NaNs last."""
    return -a if a.dtype.kind == "f" else ~a


def expected(a, axis=-1, descending=False):
    """(sorted values, indices) that sort/argsort must return."""
    a = np.asarray(a)
    if axis is None:
        a, axis = a.ravel(), 0
    idx = np.argsort(descending_key(a) if descending else a, axis=axis, kind="stable")
    return np.take_along_axis(a, idx, axis=axis), idx


def check(a, axis=-1, descending=False):
    """sort and argsort of a against NumPy, bit for bit; a itself untouched."""
    before = np.array(a, copy=True)
    want_values, want_idx = expected(a, axis, descending)
    got = gpuscan.sort(a, axis=axis, descending=descending)
    idx = gpuscan.argsort(a, axis=axis, descending=descending)
    assert type(got) is np.ndarray and type(idx) is np.ndarray
    assert got.dtype == np.dtype(a.dtype).newbyteorder("=") and got.shape == want_values.shape
    assert idx.dtype == np.int64 and idx.shape == want_idx.shape
    assert np.array_equal(bits(got), bits(np.ascontiguousarray(want_values).astype(got.dtype)))
    assert np.array_equal(idx, want_idx)
    if not descending:  # NumPy's own sort, as a second oracle
        assert np.array_equal(bits(got), bits(np.sort(a, axis=axis, kind="stable").astype(
            got.dtype)))
    assert np.array_equal(bits(np.asarray(a)), bits(before))


def special_floats(rng, dtype, n):
    """Floats with every special value NumPy orders: NaNs of both signs and several payloads,
    +-0.0, +-inf, subnormals, the largest and least finite values, repeats, and ordinary ones."""
    info = np.finfo(dtype)
    udt = np.dtype(f"u{np.dtype(dtype).itemsize}")
    nan_bits = np.array([np.array(np.nan, dtype).view(udt), np.array(-np.nan, dtype).view(udt)],
                        udt)
    payloads = np.concatenate([nan_bits, nan_bits | udt.type(1), nan_bits | udt.type(3)])
    pool = np.concatenate([payloads.view(dtype), np.array(
        [0.0, -0.0, np.inf, -np.inf, info.tiny, -info.tiny, info.smallest_subnormal,
         -info.smallest_subnormal, info.max, info.min, 1.0, -1.0, 2.5], dtype)])
    a = rng.uniform(-3, 3, n).astype(dtype)
    pick = rng.random(n) < 0.5
    a[pick] = rng.choice(pool, int(pick.sum()))
    return a


def keys(rng, dtype, n, kind):
    """Test keys: the dtype's full range ("full"), a few distinct values ("ties"), or for floats
    the special values ("special")."""
    dtype = np.dtype(dtype)
    if kind == "special" and dtype.kind == "f":
        return special_floats(rng, dtype, n)
    if kind == "ties":
        return rng.integers(-3, 4, n).astype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
    return random_array(rng, dtype, (n,))


# ------------------------------------------------------------------------------------------
# Every dtype x size x data, both orders.
# ------------------------------------------------------------------------------------------
def test_examples():
    assert gpuscan.sort([3, 1, 2]).tolist() == [1, 2, 3]
    assert gpuscan.argsort([3, 1, 2, 1]).tolist() == [1, 3, 2, 0]
    assert gpuscan.argsort([3, 1, 2, 1], descending=True).tolist() == [0, 2, 1, 3]
    x = np.array([2.0, np.nan, -np.inf, -0.0, 1.0, 0.0, -np.nan])
    assert gpuscan.argsort(x).tolist() == [2, 3, 5, 4, 0, 1, 6]
    assert gpuscan.argsort(x, descending=True).tolist() == [0, 4, 3, 5, 2, 1, 6]
    assert np.array_equal(bits(gpuscan.sort(x)), bits(x[[2, 3, 5, 4, 0, 1, 6]]))


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("data", ["full", "ties", "special"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=SORT_IDS)
def test_sort_matrix(dtype, n, data, descending, rng):
    if data == "special" and np.dtype(dtype).kind != "f":
        pytest.skip("special values are floats'")
    check(keys(rng, dtype, n, data), descending=descending)


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int64, np.float64, np.uint16,
                                   np.float16], ids=["int32", "float32", "int64", "float64",
                                                     "uint16", "float16"])
def test_sort_large(dtype, descending, rng):
    data = "special" if np.dtype(dtype).kind == "f" else "full"
    check(keys(rng, dtype, LARGE.values[0], data), descending=descending)


@pytest.mark.parametrize("span", [1, 200, 70000, 2**40], ids=["same", "one_digit",
                                                               "three_digits", "wide"])
@pytest.mark.parametrize("n", [1000, 2**20 + 17], ids=["one_thread", "every_thread"])
def test_digit_skipping(span, n, rng):
    # Keys that share their high digits (small integers of both signs in int64: every byte of -1
    # and 0 differs) and keys that are all equal: the passes a shared digit skips change nothing.
    a = rng.integers(-(span // 2), span - span // 2, n, dtype=np.int64)
    check(a)
    check(a.astype(np.float64), descending=True)
    check(a + (2**62))


def test_presorted_and_reversed(rng):
    for a in (np.arange(2**17, dtype=np.int32), np.arange(2**17, 0, -1, dtype=np.int32),
              np.repeat(np.arange(300, dtype=np.float32), 700)):
        check(a)
        check(a, descending=True)


def nans_and_zeros(rng):
    """2^16 float32 NaNs of distinct payloads and both signs shuffled among 2^16 +-0.0."""
    nans = (np.arange(2**16, dtype=np.uint32) | 0x7FC00000).view(np.float32)
    nans[1::2] = -nans[1::2]
    a = np.concatenate([nans, np.tile(np.float32([0.0, -0.0]), 2**15)])
    rng.shuffle(a)
    return a


def test_every_nan_and_zero_kept(rng):
    # NaNs last in input order, zeros in input order, in both directions.
    a = nans_and_zeros(rng)
    check(a)
    check(a, descending=True)


# ------------------------------------------------------------------------------------------
# The quicksort of a sort alone of 32- and 64-bit keys (cpu/sort_qs.h, AVX-512 hosts; the
# radix sort elsewhere): sizes at the edges of its networks (1 to 32 vectors of 16 or 8 keys)
# and of a partition's vectors, its worst cases, the floats it takes (NaNs of one pattern,
# zeros of one sign: put back bit for bit) and those it leaves to the radix sort.
# ------------------------------------------------------------------------------------------
QS_DTYPES = [np.int32, np.uint32, np.float32, np.int64, np.uint64, np.float64]
QS_IDS = ["int32", "uint32", "float32", "int64", "uint64", "float64"]


@pytest.mark.parametrize("n", [3, 8, 9, 15, 16, 17, 33, 63, 65, 127, 129, 255, 256, 257, 300,
                               511, 512, 513, 1000, 4099])
@pytest.mark.parametrize("dtype", QS_DTYPES, ids=QS_IDS)
def test_quicksort_sizes(dtype, n, rng):
    for data in ("full", "ties"):
        check(keys(rng, dtype, n, data))
        check(keys(rng, dtype, n, data), descending=True)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.int64, np.float64],
                         ids=["int32", "float32", "int64", "float64"])
def test_quicksort_past_the_cache(dtype, rng):
    # One row larger than the cache (cpu/sort.c: 2 MiB over both buffers) whose MSD split does
    # not pay (too few keys for its buckets): quicksorted whole.
    n = 2 * 1024 * 1024 // (2 * np.dtype(dtype).itemsize) + 1
    check(keys(rng, dtype, n, "full"))


@pytest.mark.parametrize("n", [5000, 300_001])
def test_quicksort_worst_cases(n, rng):
    # Inputs that defeat naive pivots or partitions: sorted, reversed, organ pipe, all equal,
    # two values, one key among equal ones, sawtooth, few distinct values.
    half = np.arange(n // 2, dtype=np.int64)
    for a in (np.arange(n), np.arange(n)[::-1], np.concatenate([half, half[::-1]]),
              np.full(n, 7), np.arange(n) % 2, np.where(np.arange(n) == n // 3, -1, 5),
              np.arange(n) % 1000, rng.integers(0, 4, n)):
        for dt in (np.int32, np.float64):
            check(np.ascontiguousarray(a).astype(dt))


@pytest.mark.parametrize("n", [65, 1000, 70_000], ids=["65", "1000", "70000"])
def test_argsort_64_bit_keys_by_halves(n, rng):
    # The argsort of 64-bit keys (cpu/sort_qs.h's gs_qs_argsort_k64): by the top 32 bits of the
    # keys' offsets from the least, then runs of equal top bits by the rest; ties (whole keys
    # equal) in position order; spans above and below 2^32, and spans of one or two bytes (the
    # radix passes' from 2^12 and 2^16 keys).
    high = rng.integers(-2, 3, n, dtype=np.int64) << 33
    for a in (high + rng.integers(0, 5, n), high + rng.integers(-2**40, 2**40, n),
              rng.integers(0, 2**32, n, dtype=np.int64) - 7, high.astype(np.float64) * 1.5,
              rng.integers(-2**39, 2**39, n), rng.integers(-100, 100, n),
              rng.integers(0, 2**12, n).astype(np.uint64) + 2**63):
        check(a)
        check(a, descending=True)


@pytest.mark.parametrize("n", [4095, 4096, 70_000], ids=["4095", "4096", "70000"])
def test_argsort_32_bit_keys_of_small_spans(n, rng):
    # An argsort of 32-bit keys whose span is one or two bytes takes the radix passes from 2^12
    # and 2^16 keys (cpu/sort_qs.h's gs_qs_arg_radix_pays), the quicksort below: both in the
    # stable order, across zero and at the spans' edges.
    for a in (rng.integers(-100, 100, n).astype(np.int32),
              rng.integers(0, 256, n).astype(np.uint32),
              (rng.integers(0, 2**16, n) - 2**15).astype(np.int32),
              (rng.integers(0, 2**16, n) + 2**31 - 2**15).astype(np.uint32),
              rng.integers(-3, 3, n).astype(np.float32)):
        check(a)
        check(a, descending=True)


@pytest.mark.parametrize("zeros", ["none", "positive", "negative", "both"])
@pytest.mark.parametrize("nans", ["none", "quiet", "negative", "all_ones", "two_patterns"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_quicksort_floats(dtype, zeros, nans, rng):
    udt = np.dtype(f"u{np.dtype(dtype).itemsize}")
    ones = udt.type(np.iinfo(udt).max)
    n = 3001
    a = rng.uniform(-2, 2, n).astype(dtype)
    if zeros != "none":
        z = {"positive": 0.0, "negative": -0.0}.get(zeros)
        a[rng.random(n) < 0.1] = z if z is not None else rng.choice(np.array([0.0, -0.0], dtype))
        if zeros == "both":
            a[:2] = np.array([0.0, -0.0], dtype)
    if nans != "none":
        quiet = np.array(np.nan, dtype).view(udt)
        pattern = {"quiet": [quiet], "negative": [quiet | (ones ^ (ones >> udt.type(1)))],
                   "all_ones": [ones], "two_patterns": [quiet, quiet | udt.type(1)]}[nans]
        where = np.flatnonzero(rng.random(n) < 0.05)
        a[where] = np.array(pattern, udt)[np.arange(where.size) % len(pattern)].view(dtype)
    check(a)
    check(a, descending=True)


@pytest.mark.skipif(gpuscan.backend() != "cpu", reason="the CPU backend's threads")
def test_quicksort_split_over_threads():
    # A long row of a sort alone is split into a bucket a thread by sampled splitters, each
    # bucket then quicksorted (cpu/sort_qs.h's sort_par): two buckets by compressed stores, more
    # by a bucket index a lane; keys equal to a splitter, buckets left empty or holding every
    # key, and floats it declines (both zeros, two NaN patterns: the radix sort then) all give
    # NumPy's stable order, in both directions and on every thread count.
    code = """
import hashlib, numpy as np, gpuscan
rng = np.random.default_rng(46)
n = 2**18 + 37
bad, h = 0, hashlib.sha256()
for dt in ("int32", "uint32", "float32", "int64", "uint64", "float64"):
    if dt.startswith("float"):
        full = (rng.standard_normal(n) * 1e3).astype(dt)
    else:
        full = rng.integers(0, 2**63, n, dtype=np.uint64).astype(dt)
    cases = [full, full[::-1].copy(), np.sort(full), rng.integers(-3, 4, n).astype(dt),
             np.full(n, 5, dt), np.where(np.arange(n) < n - 40, 1, 0).astype(dt),
             np.stack([full, full[::-1]])]
    if dt.startswith("float"):
        one = full.copy()
        one[::97] = np.nan
        one[5::89] = -0.0
        both = one.copy()
        both[7::101] = 0.0
        two = one.copy()
        two[3::103] = -np.nan
        cases += [one, both, two]
    for a in cases:
        want = np.sort(a, kind="stable").view(f"u{a.itemsize}")
        bad += not np.array_equal(gpuscan.sort(a).view(f"u{a.itemsize}"), want)
        h.update(gpuscan.sort(a, descending=True).tobytes())
print(bad, h.hexdigest())
"""
    # one thread: the quicksort (or the radix sort) of the whole row, the descending oracle
    outs = outputs_on_thread_counts(code, counts=("1", "2", "3", "5"))
    assert outs[0].split()[0] == "0" and outs == [outs[0]] * 4


@pytest.mark.skipif(gpuscan.backend() != "cpu", reason="the CPU backend's instruction sets")
def test_same_bits_on_every_instruction_set():
    # The quicksort (AVX-512) and the radix sort (every set) give the same bytes: NumPy's
    # stable order.
    code = """
import hashlib, json, numpy as np, gpuscan
rng = np.random.default_rng(45)
h = hashlib.sha256()
for dt in ("int32", "float32", "int64", "float64", "uint32"):
    for n in (1000, 70_000, 2**20 + 17):
        a = (rng.standard_normal(n) * 1000).astype(dt)
        a[::7] = 3
        for desc in (False, True):
            h.update(gpuscan.sort(a, descending=desc).tobytes())
            h.update(gpuscan.argsort(a, descending=desc).tobytes())
        h.update(gpuscan.sort(a[: n // 10 * 10].reshape(-1, 10)).tobytes())
print(json.dumps({"simd": gpuscan.device_info()["simd"], "sha": h.hexdigest()}))
"""
    outs = {}
    for simd in ("base", "avx2", "avx512"):
        proc = run_python(code, env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_CPU_SIMD": simd},
                          timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        outs[out["simd"]] = out["sha"]
    assert len(set(outs.values())) == 1, outs
    if len(outs) == 1:
        pytest.skip("this processor has no instruction set beyond base")


# ------------------------------------------------------------------------------------------
# Axes, rows, layouts.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("dtype", [np.int16, np.float64], ids=["int16", "float64"])
def test_axes(dtype, axis, rng):
    a = keys(rng, dtype, 5 * 70 * 9, "special" if dtype == np.float64 else "ties")
    check(a.reshape(5, 70, 9), axis=axis)
    check(a.reshape(5, 70, 9), axis=axis, descending=True)


@pytest.mark.parametrize("shape", [(200_000, 3), (30_000, 17), (3000, 65), (300, 4000),
                                   (3, 2**16 + 1), (2, 2**19 + 1)],
                         ids=["rows_of_3", "rows_of_17", "rows_of_65", "rows_of_4000",
                              "three_rows", "two_long_rows"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32], ids=["uint8", "int32",
                                                                          "float32"])
def test_many_rows(dtype, shape, rng):
    a = keys(rng, dtype, shape[0] * shape[1], "special" if dtype == np.float32 else "full")
    check(a.reshape(shape))
    check(a.reshape(shape[::-1]), axis=0, descending=True)


@pytest.mark.parametrize("layout", ["stride_3", "reversed", "byteswapped", "byteswapped_strided",
                                    "unaligned", "fortran_column"])
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float16, np.uint16],
                         ids=["int64", "float32", "float16", "uint16"])
def test_layouts(dtype, layout, rng):
    base = keys(rng, dtype, 5000, "special" if np.dtype(dtype).kind == "f" else "full")
    check(make_layout(layout, base))


def test_views_2d(rng):
    a = keys(rng, np.float64, 40 * 60, "special").reshape(40, 60)
    for view in (a.T, a[::2, ::-3], a[:, 5:6], np.broadcast_to(a[3], (4, 60))):
        for axis in (None, 0, -1):
            check(view, axis=axis)


def test_lists_and_scalars():
    assert gpuscan.sort([[3, 1], [0, 2]]).tolist() == [[1, 3], [0, 2]]
    assert gpuscan.argsort([True, False, True]).tolist() == [1, 0, 2]
    assert gpuscan.sort([2.5, -1.0]).dtype == np.float64


# ------------------------------------------------------------------------------------------
# Empty and 0-d, as NumPy.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3), (4, 0, 2)])
def test_empty(shape):
    a = np.zeros(shape, np.float32)
    for axis in (None, 0, -1):
        for fn, ref in ((gpuscan.sort, np.sort), (gpuscan.argsort, np.argsort)):
            got, want = fn(a, axis=axis), ref(a, axis=axis, kind="stable")
            assert got.shape == want.shape and got.dtype == want.dtype


def test_zero_d():
    a = np.array(5.0, np.float32)
    for fn, ref in ((gpuscan.sort, np.sort), (gpuscan.argsort, np.argsort)):
        for kwargs in ({}, {"axis": None}, {"axis": 0}, {"axis": -1}, {"axis": 1}):
            try:
                want = ref(a, **kwargs)
            except np.exceptions.AxisError:
                with pytest.raises(np.exceptions.AxisError):
                    fn(a, **kwargs)
                continue
            got = fn(a, **kwargs)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert np.array_equal(got, want), (fn, kwargs)


# ------------------------------------------------------------------------------------------
# kind and stable, as NumPy 2.x's; errors.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [None, "quicksort", "mergesort", "heapsort", "stable", "quick",
                                  "Q", "s"])
def test_kind_names(kind, rng):
    a = rng.integers(0, 5, 300).astype(np.float32)
    want = np.argsort(a, kind="stable")
    assert np.array_equal(gpuscan.argsort(a, kind=kind), want)  # always stable
    assert np.array_equal(gpuscan.sort(a, -1, kind), np.sort(a, kind=kind))
    np.sort(a, kind=kind)  # a name NumPy takes too


@pytest.mark.parametrize("stable", [True, False])
def test_stable_keyword(stable, rng):
    a = rng.integers(0, 5, 300).astype(np.int8)
    assert np.array_equal(gpuscan.argsort(a, stable=stable), np.argsort(a, kind="stable"))


def test_kind_errors():
    a = np.arange(4)
    for fn, ref in ((gpuscan.sort, np.sort), (gpuscan.argsort, np.argsort)):
        for kind in ("bogus", "", "x"):
            with pytest.raises(ValueError):
                ref(a, kind=kind)
            with pytest.raises(ValueError, match="kind"):
                fn(a, kind=kind)
        with pytest.raises(TypeError):
            fn(a, kind=3)
        with pytest.raises(ValueError):
            ref(a, kind="stable", stable=True)
        with pytest.raises(ValueError):
            fn(a, kind="stable", stable=True)


@pytest.mark.parametrize("value", [np.zeros(3, np.complex64), np.array(["a", "b"]),
                                   np.array([1, None], object), np.zeros(2, "M8[s]"),
                                   np.zeros(2, "m8[s]"), np.zeros(2, [("x", "i4")]),
                                   np.zeros(2, "V4")],
                         ids=["complex", "str", "object", "datetime", "timedelta", "structured",
                              "void"])
def test_dtype_errors(value):
    for fn in (gpuscan.sort, gpuscan.argsort):
        with pytest.raises(TypeError, match="not supported"):
            fn(value)


def test_other_errors():
    a = np.arange(6).reshape(2, 3)
    for fn in (gpuscan.sort, gpuscan.argsort):
        for axis in (2, -3):
            with pytest.raises(np.exceptions.AxisError):
                fn(a, axis=axis)
        with pytest.raises(TypeError):
            fn(a, axis=1.0)
        with pytest.raises(TypeError):
            fn(np.ma.array([1, 2]))
        with pytest.raises(TypeError):
            fn(a, -1, None, True)  # stable is keyword-only
        with pytest.raises(TypeError):
            fn()


@pytest.mark.skipif(gpuscan.backend() != "cpu", reason="the CPU backend's threads")
def test_same_bits_on_every_thread_count():
    code = """
import hashlib, numpy as np, gpuscan
rng = np.random.default_rng(45)
h = hashlib.sha256()
for dt in ("int32", "float32", "int64", "float64"):
    a = (rng.standard_normal(2**20 + 17) * 1000).astype(dt)
    for desc in (False, True):
        h.update(gpuscan.sort(a, descending=desc).tobytes())
        h.update(gpuscan.argsort(a, descending=desc).tobytes())
    h.update(gpuscan.argsort(a[: 2 * (2**19 + 1)].reshape(2, -1)).tobytes())
    h.update(gpuscan.sort(a[: 2**20].reshape(-1, 64)).tobytes())
print(h.hexdigest())
"""
    outs = outputs_on_thread_counts(code)
    assert outs[0] == outs[1] == outs[2]


def test_concurrent_calls_and_kept_temporaries():
    # Sorts from several Python threads at once, of growing and shrinking sizes: each call takes
    # the temporaries the last one kept, or makes its own (cpu/sort.c); free_cached_memory()
    # gives the kept ones back between them.
    def sorts(seed):
        r = np.random.default_rng(seed)
        for n in (70_000, 300, 2**17 + 5, 1000, 2**16 + 1):
            check(keys(r, (np.int32, np.float64)[seed % 2], n, "full"), descending=bool(seed & 2))
            if seed == 0:
                assert set(gpuscan.free_cached_memory()) == {"device_bytes", "pinned_bytes"}

    run_in_threads(sorts, threads=4)


# ------------------------------------------------------------------------------------------
# Device arrays (CUDA backend only).
# ------------------------------------------------------------------------------------------
def check_device(a, axis=-1, descending=False):
    """sort and argsort of a copy of a on the device: DeviceArrays, NumPy's results."""
    want_values, want_idx = expected(a, axis, descending)
    da = gpuscan.to_device(a)
    got = gpuscan.sort(da, axis=axis, descending=descending)
    idx = gpuscan.argsort(da, axis=axis, descending=descending)
    assert isinstance(got, gpuscan.DeviceArray) and isinstance(idx, gpuscan.DeviceArray)
    assert np.array_equal(bits(got.get()), bits(np.ascontiguousarray(want_values)))
    assert np.array_equal(idx.get(), want_idx)
    assert np.array_equal(bits(da.get()), bits(a))


@pytest.mark.gpu
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
@pytest.mark.parametrize("n", SIZES + [LARGE])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_device_matrix(dtype, n, descending, rng):
    data = "special" if np.dtype(dtype).kind == "f" else "full"
    check_device(keys(rng, dtype, n, data), descending=descending)
    check_device(keys(rng, dtype, n, "ties"), descending=descending)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2**14, 2**10), (2**16, 16), (1000, 3), (3, 2**18 + 5),
                                   (1, 2**20)],
                         ids=["rows_of_1024", "rows_of_16", "rows_of_3", "three_long_rows",
                              "one_row"])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64], ids=["int32", "float32",
                                                                            "float64"])
def test_device_rows(dtype, shape, rng):
    a = keys(rng, dtype, shape[0] * shape[1], "special" if dtype != np.int32 else "full")
    check_device(a.reshape(shape))
    check_device(a.reshape(shape), descending=True)
    check_device(a.reshape(shape), axis=None)
    check_device(a.reshape(shape[::-1]), axis=0)


@pytest.mark.gpu
@pytest.mark.parametrize("row_len", [2, 3, 4, 5, 8, 9, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint64],
                         ids=["float32", "float64", "int16", "uint64"])
def test_device_short_rows_keys_alone(dtype, row_len, rng):
    # Rows of at most 16 keys, a thread a row: the order keys alone where they are one-to-one in
    # a warp's 32 rows (integers; floats with no zero and no NaN), else (key, position) pairs.
    a = keys(rng, dtype, 1000 * row_len, "full").reshape(1000, row_len)
    if np.dtype(dtype).kind == "f":
        a[a == 0] = 1.5
        mixed = a.copy()
        mixed[500, 0] = -0.0       # one warp's rows with a zero: that warp sorts pairs
        mixed[500, -1] = 0.0
        mixed[900, 0] = np.nan
        check_device(mixed)
        check_device(mixed, descending=True)
    check_device(a)
    check_device(a, descending=True)


@pytest.mark.gpu
def test_device_digit_skipping_and_nans(rng):
    for span in (1, 200, 70000):
        check_device(rng.integers(-(span // 2), span - span // 2, 2**20, dtype=np.int64))
    a = nans_and_zeros(rng)
    check_device(a)
    check_device(a, descending=True)


@pytest.mark.gpu
def test_device_empty_and_errors():
    for shape in ((0,), (3, 0)):
        got = gpuscan.sort(gpuscan.to_device(np.zeros(shape, np.float32)))
        assert isinstance(got, gpuscan.DeviceArray) and got.shape == shape
    with pytest.raises(ValueError, match="kind"):
        gpuscan.sort(gpuscan.to_device(np.zeros(3)), kind="bogus")


@pytest.mark.gpu
def test_device_cupy_views(rng):
    cp = pytest.importorskip("cupy")
    a = keys(rng, np.float32, 3 * 50000, "special").reshape(3, 50000)
    ca = cp.asarray(a)
    for view, host in ((ca[:, ::3], a[:, ::3]), (ca.T, a.T), (ca[::-1], a[::-1])):
        got = gpuscan.argsort(view, axis=0)
        assert isinstance(got, gpuscan.DeviceArray)
        assert np.array_equal(got.get(), np.argsort(host, axis=0, kind="stable"))
        assert np.array_equal(bits(gpuscan.sort(view).get()),
                              bits(np.sort(host, kind="stable")))
