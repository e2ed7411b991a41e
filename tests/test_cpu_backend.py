"""The CPU backend on 1 and 2 threads and on every instruction set it has (issue #19).

The CPU backend runs a call on one thread below a size threshold per primitive and on all of
them above it, in loops compiled for several instruction sets (cpu/simd.h: "base" everywhere,
"avx2" and "avx512" on x86-64 processors that have them), and reads reduced and scanned axes in
place (rows x row_len x inner) instead of a transposed copy.  Every result must be the same bits
on every thread count and instruction set.  CI runs the suite once, at the host's thread count:
the tests here run the key checks in subprocesses with GPUSCAN_NUM_THREADS=1 and =2 (and the
base and AVX2 instruction sets), each against NumPy, and compare the bits of all their results.  The
sizes cross the thresholds (2^17 .. 2^18 values) and the blocks of the column loops (4096 rows).
"""
import json
import sys

import numpy as np
import pytest

import gpuscan
from conftest import run_python
from reference import bits, check_reduce, check_scan, check_segmented_scan, check_split

CPU_ONLY = pytest.mark.skipif(gpuscan.backend() != "cpu",
                              reason="the CPU backend's threads and instruction sets")

# The key checks, run in a fresh interpreter at a given thread count and instruction set: each
# result against NumPy (integers, min/max and moved values bit for bit, float sums within the
# contract's bound), then the SHA-256 of every result's bytes, in order, on the last line.
SCRIPT = r"""
import hashlib, json, sys
import numpy as np
import gpuscan
sys.path.insert(0, "tests")
from reference import check_reduce, check_scan, check_segmented_scan, check_split

h = hashlib.sha256()
def keep(res):
    h.update(np.ascontiguousarray(np.asarray(res)).tobytes())

rng = np.random.default_rng(19)
def data(dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.uniform(-1, 1, shape).astype(dtype)
    return rng.integers(-100 if dtype.kind == "i" else 0, 100, shape).astype(dtype)

# 1-D: below and above the thresholds, a chunk edge, odd tails.
for n in (1000, 4097, 2**17 + 3, 2**18 + 5, 2**20 + 17):
    for dt in (np.float32, np.float64, np.int32, np.uint8, np.int64):
        a = data(dt, n)
        for op in ("add", "max", "min"):
            for ex in (False, True):
                r = gpuscan.scan(a, op, exclusive=ex); check_scan(r, a, op, exclusive=ex); keep(r)
            r = gpuscan.reduce(a, op); check_reduce(r, a, op); keep(r)
        for p, op in ((0.01, "add"), (0.3, "add"), (0.05, "max"), (0.9, "min")):
            f = rng.random(n) < p
            for ex in (False, True):
                r = gpuscan.segmented_scan(a, f, op, exclusive=ex)
                check_segmented_scan(r, a, f, op, exclusive=ex); keep(r)
        for p in (0.5, 0.01, 0.999):
            m = rng.random(n) < p
            r = gpuscan.split(a, m); check_split(r, a, m); keep(r[0])
            r = gpuscan.compact(a, m); check_split(r, a, m, compact=True); keep(r)
    u = data(np.uint8, n)
    for r, e in ((gpuscan.histogram(u, 256, (0, 256))[0], np.histogram(u, 256, (0, 256))[0]),
                 (gpuscan.bincount(u), np.bincount(u))):
        assert np.array_equal(r, e); keep(r)
    x = data(np.float32, n)
    r, e = gpuscan.histogram(x, 100, (-1, 1))[0], np.histogram(x, 100, (-1, 1))[0]
    assert np.array_equal(r, e); keep(r)
    # Weighted: float sums in a grouping of n and nbins alone (the same bits on any thread count),
    # within the float bound of NumPy's; integer weights exact.
    w = data(np.float64, n)
    r, e = gpuscan.histogram(x, 100, (-1, 1), weights=w)[0], np.histogram(x, 100, (-1, 1), weights=w)[0]
    mag = np.histogram(x, 100, (-1, 1), weights=np.abs(w))[0]
    assert np.all(np.abs(r - e) <= (np.log2(n) + 2) * 2.0**-52 * mag * 2); keep(r)
    r, e = gpuscan.bincount(u, weights=w), np.bincount(u, weights=w)
    assert np.allclose(r, e, rtol=1e-12, atol=1e-9); keep(r)
    wi = data(np.int32, n)
    r = gpuscan.histogram(u, 256, (0, 256), weights=wi)[0]
    assert np.array_equal(r, np.histogram(u, 256, (0, 256), weights=wi)[0]); keep(r)

# Axes read in place: long columns (several 4096-row blocks), few columns (the blocks split
# between threads), wide rows (tiles of columns), 3-D runs of axes.
for shape in ((9000, 3), (70000, 5), (300, 2000), (2000, 600), (3, 5000, 40), (50, 3, 2000)):
    for dt, op in ((np.float32, "add"), (np.float64, "add"), (np.int32, "add"),
                   (np.uint8, "add"), (np.float32, "max"), (np.int16, "min"), (np.float32, "mul")):
        a = data(dt, shape)
        if op == "mul":
            a = (1 + a * 1e-3).astype(dt)
        for axis in list(range(a.ndim)) + [(0, 1)]:
            r = gpuscan.reduce(a, op, axis=axis); check_reduce(r, a, op, axis=axis); keep(r)
            if isinstance(axis, int):
                for ex in (False, True):
                    r = gpuscan.scan(a, op, axis=axis, exclusive=ex)
                    check_scan(r, a, op, exclusive=ex, axis=axis); keep(r)
print(json.dumps({"info": gpuscan.device_info(), "sha256": h.hexdigest()}))
"""


def run_checks(threads, simd):
    proc = run_python(SCRIPT, env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_NUM_THREADS": str(threads),
                                   "GPUSCAN_CPU_SIMD": simd}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["info"]["threads"] == threads, report
    return report


@CPU_ONLY
def test_same_bits_on_1_and_2_threads_and_every_instruction_set():
    runs = {(t, s): run_checks(t, s)
            for t, s in ((1, "auto"), (2, "auto"), (2, "base"), (1, "avx2"))}
    best = runs[(1, "auto")]["info"]["simd"]
    assert runs[(2, "auto")]["info"]["simd"] == best
    assert runs[(2, "base")]["info"]["simd"] == "base"
    hashes = {key: r["sha256"] for key, r in runs.items()}
    assert len(set(hashes.values())) == 1, hashes
    sets = {r["info"]["simd"] for r in runs.values()}
    if len(sets) == 1:
        pytest.skip("this processor has no instruction set beyond base: only threads compared")


@CPU_ONLY
def test_simd_setting():
    # An unknown name, like an unsupported one, gives the best set the processor has.
    best = run_python("import gpuscan, json; print(json.dumps(gpuscan.device_info()))",
                      env={"GPUSCAN_BACKEND": "cpu"})
    unknown = run_python("import gpuscan, json; print(json.dumps(gpuscan.device_info()))",
                         env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_CPU_SIMD": "sse9"})
    base = run_python("import gpuscan, json; print(json.dumps(gpuscan.device_info()))",
                      env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_CPU_SIMD": "base"})
    for proc in (best, unknown, base):
        assert proc.returncode == 0, proc.stderr[-2000:]
    simd = [json.loads(p.stdout)["simd"] for p in (best, unknown, base)]
    assert simd[0] in ("base", "avx2", "avx512") and simd[1] == simd[0] and simd[2] == "base", simd


# ------------------------------------------------------------------------------------------
# Axes read in place (every backend: CUDA keeps its transposes, the answers are the same).
# ------------------------------------------------------------------------------------------
def _nan(dtype, payload):
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    nmant = np.finfo(dtype).nmant
    word = ((2 ** (8 * np.dtype(dtype).itemsize - 1 - nmant) - 1) << nmant) | (1 << (nmant - 1))
    return np.array(word | payload, dtype=u).view(dtype)[()]


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_column_min_max_first_nan_and_zeros(dtype, op, rng):
    # Column c of a (rows, 37) array: NaNs with distinct payloads in some columns (the first
    # one, in row order, is the answer, bit for bit), -0 and +0 ties in others (the earlier
    # one), across several 4096-row blocks.
    a = rng.uniform(-1, 1, (3 * 4096 + 11, 37)).astype(dtype)
    a[:, 3] = np.abs(a[:, 3]) + 1 if op == "min" else -np.abs(a[:, 3]) - 1
    a[7, 3], a[5000, 3] = 0.0, -0.0
    a[[100, 9000], 5] = [_nan(dtype, 0x11), _nan(dtype, 0x22)]
    a[[8191, 8192], 6] = [_nan(dtype, 0x33), _nan(dtype, 0x44)]
    a[-1, 36] = _nan(dtype, 0x55)
    res = gpuscan.reduce(a, op, axis=0)
    np.testing.assert_array_equal(res, getattr(np, "minimum" if op == "min" else "maximum")
                                  .reduce(a, axis=0))
    if gpuscan.backend() != "cpu":
        # The CUDA reduction's threads take values strided, not in order: it returns a NaN,
        # not always the first one's payload, and either zero of a tie (the contract asks
        # neither; the CPU backend, which reads columns in order as NumPy does, gives both).
        return
    assert bits(res)[5] == bits(a[100, 5]) and bits(res)[6] == bits(a[8191, 6])
    assert bits(res)[36] == bits(a[-1, 36])
    assert bits(res)[3] == bits(a[7, 3])   # +0, the earlier of the two zeros


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_column_scans_stay_within_the_bound(dtype, rng):
    # Columns much longer than the 4096 rows after which a column scan renormalises its
    # compensated state: all positive (errors add up) and mixed signs (cancellation).
    for a in (rng.random((3 * 4096 + 7, 9), dtype=dtype),
              rng.uniform(-1, 1, (3 * 4096 + 7, 9)).astype(dtype)):
        for ex in (False, True):
            check_scan(gpuscan.scan(a, axis=0, exclusive=ex), a, "add", exclusive=ex, axis=0)
        check_reduce(gpuscan.reduce(a, axis=0), a, "add", axis=0)


def test_column_scan_infinities_and_signed_zeros():
    # An inf stays an inf (the compensation must not make it NaN), inf - inf is NaN, a column
    # of -0 sums to -0 (inclusive) as NumPy's, and an exclusive scan starts with +0.
    a = np.zeros((6, 4), np.float32)
    a[:, 0] = -0.0
    a[2, 1] = np.inf
    a[[1, 4], 2] = [np.inf, -np.inf]
    a[:, 3] = [1, 2, 3, 4, 5, 6]
    with np.errstate(invalid="ignore"):
        expected = np.cumsum(a, axis=0)
    res = gpuscan.scan(a, axis=0)
    np.testing.assert_array_equal(res, expected)
    # (the sign of inf - inf's NaN is the hardware's: set on x86, clear on a GPU or on ARM)
    number = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(res[number]), np.signbit(expected[number]))
    ex = gpuscan.scan(a, axis=0, exclusive=True)
    assert not np.signbit(ex[0]).any() and (ex[0] == 0).all()


@pytest.mark.parametrize("order", ["C", "F", "strided"])
def test_axes_of_other_layouts(order, rng):
    base = rng.integers(-50, 50, (40, 6, 300)).astype(np.int32)
    a = {"C": base, "F": np.asfortranarray(base), "strided": base[:, ::2, ::3]}[order]
    for axis in (0, 1, 2, (0, 1), (1, 2), (0, 2)):
        check_reduce(gpuscan.reduce(a, axis=axis), a, "add", axis=axis)
        check_reduce(gpuscan.reduce(a, "max", axis=axis, keepdims=True), a, "max", axis=axis,
                     keepdims=True)
    for axis in (0, 1, 2):
        check_scan(gpuscan.scan(a, axis=axis), a, "add", axis=axis)


def test_scan_axis_into_out(rng):
    a = rng.random((300, 7, 5))
    for axis in (0, 1):
        out = np.empty_like(a)
        res = gpuscan.scan(a, axis=axis, out=out)
        assert res is out
        check_scan(out, a, "add", axis=axis)
        inplace = a.copy()
        gpuscan.scan(inplace, axis=axis, out=inplace)
        np.testing.assert_array_equal(bits(inplace), bits(gpuscan.scan(a, axis=axis)))


def test_small_int_columns_widen(rng):
    # bool, int8, uint16 columns added into int64/uint64 down the rows, in place.
    for dt in (np.bool_, np.int8, np.uint16):
        a = rng.integers(0, 2 if dt is np.bool_ else 100, (5000, 70)).astype(dt)
        for axis in (0, 1):
            check_scan(gpuscan.scan(a, axis=axis), a, "add", axis=axis)
            check_reduce(gpuscan.reduce(a, axis=axis), a, "add", axis=axis)
