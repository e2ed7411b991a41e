"""The teaching algorithms: scan(algorithm="hillis_steele"|"blelloch"),
segmented_scan(algorithm="blelloch") and gpuscan.trace.

The variants must equal algorithm="auto" bit for bit on integers (every op and dtype, inclusive
and exclusive, axis=) and stay within the contract's bound on float sums.  Sizes are named after
the path they reach: the Blelloch tile on CUDA (T = _config()["teach_tile_items"]), one tile, one more,
several tiles (one recursion level) and T*T + more (two levels).  The traces' work and span are
checked against the formulas at powers of two and against an independent count (a plain Python
run of the same steps) at other sizes.
"""
import math
import os
import shutil
import subprocess

import numpy as np
import pytest

import gpuscan
from gpuscan import _gpuscan
from conftest import DTYPES, DTYPE_IDS, ROOT, random_array

T = _gpuscan._config()["teach_tile_items"]
OPS = ["add", "mul", "min", "max", "and", "or", "xor"]
ALGOS = ["hillis_steele", "blelloch"]

SIZES = [
    pytest.param(0, id="empty"),
    pytest.param(1, id="one"),
    pytest.param(2, id="two"),
    pytest.param(5, id="five"),
    pytest.param(33, id="33"),
    pytest.param(T - 1, id=f"tile_minus_one_{T - 1}"),
    pytest.param(T, id=f"one_tile_{T}"),
    pytest.param(T + 1, id=f"tile_plus_one_{T + 1}"),
    pytest.param(5 * T + 3, id=f"tiles_{5 * T + 3}"),
]
BIG = T * T + 3 * T + 7  # two levels of tile totals


def ops_for(dtype):
    return [o for o in OPS if np.dtype(dtype).kind != "f" or o not in ("and", "or", "xor")]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype.kind != "b" else a


# ------------------------------------------------------------------------------------------
# The variants against "auto".
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("algorithm", ALGOS)
def test_scan_variants_equal_auto(algorithm, dtype, n, rng):
    for op in ops_for(dtype):
        if np.dtype(dtype).kind == "f" and op in ("add", "mul"):
            continue  # other trees round differently: test_float_add_bound
        a = random_array(rng, dtype, (n,), op)
        for exclusive in (False, True):
            want = gpuscan.scan(a, op, exclusive=exclusive)
            got = gpuscan.scan(a, op, exclusive=exclusive, algorithm=algorithm)
            assert got.dtype == want.dtype
            assert np.array_equal(bits(got), bits(want)), (op, exclusive)


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("op", ["add", "max", "xor"])
def test_scan_variants_two_levels(algorithm, op, rng):
    a = random_array(rng, np.int32, (BIG,), op)
    for exclusive in (False, True):
        assert np.array_equal(gpuscan.scan(a, op, exclusive=exclusive, algorithm=algorithm),
                              gpuscan.scan(a, op, exclusive=exclusive))


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("shape,axis", [((3, 7, 5), 0), ((3, 7, 5), 1), ((3, 7, 5), 2),
                                        ((4, T + 3), 1), ((T + 3, 3), 0), ((6, 1), 1),
                                        ((2, 3 * T), -1)])
def test_scan_variants_axis(algorithm, shape, axis, rng):
    for dtype, op in [(np.int32, "add"), (np.uint8, "mul"), (np.int16, "min"), (np.bool_, "or")]:
        a = random_array(rng, dtype, shape, op)
        for exclusive in (False, True):
            want = gpuscan.scan(a, op, axis=axis, exclusive=exclusive)
            got = gpuscan.scan(a, op, axis=axis, exclusive=exclusive, algorithm=algorithm)
            assert got.shape == want.shape and np.array_equal(got, want), (dtype, op)


@pytest.mark.parametrize("algorithm", ALGOS)
def test_scan_variants_out_in_place_and_dtype(algorithm, rng):
    for n in (1, 2, 3, 4, T + 5):
        a = rng.integers(-50, 50, n)
        want = np.cumsum(a)
        x = a.copy()
        assert gpuscan.scan(x, out=x, algorithm=algorithm) is x
        assert np.array_equal(x, want)
    a = rng.integers(-100, 100, 3 * T).astype(np.int8)
    assert np.array_equal(gpuscan.scan(a, dtype=np.int8, algorithm=algorithm),
                          np.cumsum(a, dtype=np.int8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("n", [7, T + 1, 37 * T + 11, BIG])
def test_float_add_bound(algorithm, dtype, n, rng):
    a = rng.uniform(-1, 1, n).astype(dtype)
    # float32: float64 prefix sums of its values (error far below float32's bound); float64:
    # exact prefix sums rounded once.
    exact = np.cumsum(a.astype(np.float64)) if dtype == np.float32 else np.array(
        list(_fsum_prefix(a)))
    eps = np.finfo(dtype).eps
    bound = (math.log2(n) + 2) * eps * np.cumsum(np.abs(a.astype(np.float64)))
    for exclusive in (False, True):
        got = gpuscan.scan(a, exclusive=exclusive, algorithm=algorithm).astype(np.float64)
        want = np.concatenate([[0.0], exact[:-1]]) if exclusive else exact
        b = np.concatenate([[0.0], bound[:-1]]) if exclusive else bound
        assert np.all(np.abs(got - want) <= b + 1e-300), algorithm
    # Deterministic: the same bits again.
    assert np.array_equal(bits(gpuscan.scan(a, algorithm=algorithm)),
                          bits(gpuscan.scan(a, algorithm=algorithm)))


def _fsum_prefix(a):
    """Exact prefix sums of float64 values, each rounded once (math.fsum of a growing list is
    quadratic, so partial sums are kept as exact lists of non-overlapping parts)."""
    parts = []
    for v in a.tolist():
        # Shewchuk's grow-expansion: parts stays an exact, non-overlapping representation.
        x, new = v, []
        for p in parts:
            hi = x + p
            lo = p - (hi - x) if abs(x) >= abs(p) else x - (hi - p)
            if lo:
                new.append(lo)
            x = hi
        new.append(x)
        parts = new
        yield math.fsum(parts)


def _adversarial_float32(rng, n):
    """Float32 inputs that make tree sums round as much as they can: no cancellation (the
    bound's sum|x| is the sum itself), values whose partial sums are never exact, equal values
    (whole subtrees exact, the chains not), a large value followed by values below its half ulp,
    magnitudes spread over 40 binades, and alternating signs."""
    u = np.finfo(np.float32).eps
    tiny = np.full(n, 0.75 * u, np.float32)
    tiny[0] = 1
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return {
        "uniform[0,1)": rng.random(n, dtype=np.float32),
        "uniform[1,2)": (1 + rng.random(n)).astype(np.float32),
        "equal 0.1": np.full(n, 0.1, np.float32),
        "equal 1+3eps": np.full(n, 1 + 3 * u, np.float32),
        "1 then 0.75 eps": tiny,
        "binades": (2.0 ** rng.integers(-20, 20, n) * (1 + rng.random(n))).astype(np.float32),
        "alternating": (signs * (1 + rng.random(n)) + 1e-3).astype(np.float32),
    }


def _bound_ratio(got, a, exclusive):
    """Largest |got - exact| / ((log2 n + 2) eps sum|x|) of a float32 scan along the last axis (the
    float64 prefix sums of float32 values are exact to far below float32's bound)."""
    a64 = a.astype(np.float64)
    exact, mag = np.cumsum(a64, axis=-1), np.cumsum(np.abs(a64), axis=-1)
    if exclusive:  # shifted right by one, 0 in front
        pad = [(0, 0)] * (a.ndim - 1) + [(1, 0)]
        exact, mag = np.pad(exact, pad)[..., :-1], np.pad(mag, pad)[..., :-1]
    n = a.shape[-1]
    bound = (math.log2(n) + 2) * np.finfo(np.float32).eps * mag
    err = np.abs(got.astype(np.float64) - exact)
    assert np.all(err[bound == 0] == 0)
    return float(np.max(err[bound > 0] / bound[bound > 0], initial=0.0))


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("n", [2**16, 2**16 + 1, BIG])
def test_float_add_bound_adversarial(algorithm, n, rng):
    # Each output of Hillis-Steele goes through at most ceil(log2 n) roundings of at most eps/2
    # (relative to a partial sum of |x|), each of Blelloch at most 2*ceil(log2 n) + 2 (a path
    # up its tree, the chain of subtree sums down, the tiles' carry, the inclusive step): both
    # within the contract's (log2 n + 2) * eps * sum|x|.  These inputs push the trees hardest.
    for name, a in _adversarial_float32(rng, n).items():
        for exclusive in (False, True):
            got = gpuscan.scan(a, exclusive=exclusive, algorithm=algorithm)
            assert _bound_ratio(got, a, exclusive) <= 1.0, (name, exclusive)


@pytest.mark.parametrize("algorithm", ALGOS)
def test_float_add_bound_small_n_search(algorithm, rng):
    # Many short random rows (one scan along axis 1): where log2 n is small the bound has the
    # least room, and a worst case would be found by chance here first.
    for n in (2, 3, 4, 5, 7, 8, 9, 16, 33):
        rows = 20000
        scale = 2.0 ** rng.integers(-4, 5, (rows, n))
        sign = np.where(rng.random((rows, n)) < 0.2, -1.0, 1.0)
        a = (sign * scale * (1 + rng.random((rows, n)))).astype(np.float32)
        for exclusive in (False, True):
            got = gpuscan.scan(a, axis=1, exclusive=exclusive, algorithm=algorithm)
            assert _bound_ratio(got, a, exclusive) <= 1.0, (n, exclusive)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("algorithm", ["auto"] + ALGOS)
def test_exclusive_float_add_starts_with_plus_zero(algorithm, dtype, rng):
    # The identity of add is 0: +0.0 as NumPy writes it, on both backends (np.signbit: -0.0
    # compares equal to 0.0, so equality alone would not see it).
    for n in (1, 5, T + 3):
        a = -rng.random(n).astype(dtype) - 1  # all negative, so no sum is +0 by chance
        out = gpuscan.scan(a, exclusive=True, algorithm=algorithm)
        assert out[0] == 0 and not np.signbit(out[0]), n
        rows = gpuscan.scan(np.tile(a, (3, 1)), exclusive=True, axis=1, algorithm=algorithm)
        assert not np.any(np.signbit(rows[:, 0])), n
        cols = gpuscan.scan(np.tile(a, (3, 1)), exclusive=True, axis=0, algorithm=algorithm)
        assert not np.any(np.signbit(cols[0])), n
        heads = rng.random(n) < 0.1
        heads[0] = True
        if algorithm != "hillis_steele":  # segmented: "auto" and "blelloch"
            seg = gpuscan.segmented_scan(a, heads, exclusive=True, algorithm=algorithm)
            assert np.all(seg[heads] == 0) and not np.any(np.signbit(seg[heads])), n
    if algorithm == "hillis_steele":  # the traces: the identity shifted in front, the root
        t = gpuscan.trace.scan(a[:9], algorithm, exclusive=True)
        assert not np.signbit(t.steps[0][1][0]) and not np.signbit(t.result[0])
    elif algorithm == "blelloch":  # cleared to it, the heads reset to it
        t = gpuscan.trace.scan(a[:9], algorithm, exclusive=True)
        assert not np.signbit(t.result[0])
        t = gpuscan.trace.segmented_scan(a[:9], heads[:9], exclusive=True)
        assert not np.any(np.signbit(t.result[heads[:9]]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("algorithm", ALGOS)
def test_float_min_max_mul(algorithm, dtype, rng):
    a = random_array(rng, dtype, (3 * T + 5,), "max")
    a[[7, T + 2]] = np.nan
    for op in ("min", "max"):
        assert np.array_equal(bits(gpuscan.scan(a, op, algorithm=algorithm)),
                              bits(gpuscan.scan(a, op)))
    m = random_array(rng, dtype, (3 * T + 5,), "mul")
    got = gpuscan.scan(m, "mul", algorithm=algorithm).astype(np.float64)
    want = np.cumprod(m.astype(np.float64))
    rel = np.abs(got - want) / np.abs(want)
    assert np.all(rel <= (np.arange(m.size) + 2) * np.finfo(dtype).eps)


@pytest.mark.parametrize("n", SIZES + [pytest.param(BIG, id="two_levels")])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint64, np.float64],
                         ids=["bool", "int8", "int32", "uint64", "float64"])
def test_segmented_blelloch_equals_auto(dtype, n, rng):
    for op in ops_for(dtype):
        if np.dtype(dtype).kind == "f" and op in ("add", "mul"):
            continue
        a = random_array(rng, dtype, (n,), op)
        for density in (0.0, 0.003, 0.3):
            flags = rng.random(n) < density
            flags[[i for i in (T - 1, T, T + 1, T * T) if i < n]] = density > 0
            for exclusive in (False, True):
                want = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive)
                got = gpuscan.segmented_scan(a, flags, op, exclusive=exclusive,
                                             algorithm="blelloch")
                assert np.array_equal(bits(got), bits(want)), (op, density, exclusive)


def test_segmented_blelloch_flag_dtypes_and_classic(rng):
    a = np.array([4, 2, 1, 3, 0, 2, 1, 5])
    for fdt in (np.bool_, np.int32, np.float64, np.uint8):
        f = np.array([1, 0, 0, 1, 0, 0, 1, 0], dtype=fdt)
        assert gpuscan.segmented_scan(a, f, exclusive=True, algorithm="blelloch").tolist() == \
            [0, 4, 6, 0, 3, 3, 0, 1]
    x = rng.integers(-9, 9, (4, T))
    f = rng.random((4, T)) < 0.01
    assert np.array_equal(gpuscan.segmented_scan(x, f, algorithm="blelloch"),
                          gpuscan.segmented_scan(x, f))


def test_scratch_bytes():
    assert _gpuscan._teach_scratch_bytes("blelloch", 0, 0, 8, False, False) == 0
    assert _gpuscan._teach_scratch_bytes("blelloch", T, 0, 8, False, False) == 0
    one = _gpuscan._teach_scratch_bytes("blelloch", T + 1, 0, 8, False, False)
    assert one == 128  # two totals of 8 bytes, one aligned block
    seg = _gpuscan._teach_scratch_bytes("blelloch", T + 1, 0, 8, True, False)
    assert seg == 256  # and two head bytes, in their own block
    two = _gpuscan._teach_scratch_bytes("blelloch", T * T + 1, 0, 4, False, False)
    assert two == 128 * math.ceil((T + 1) * 4 / 128) + 128
    hs = _gpuscan._teach_scratch_bytes("hillis_steele", 1000, 0, 4, False, False)
    assert hs == 4096 and _gpuscan._teach_scratch_bytes("hillis_steele", 1000, 0, 4, False,
                                                        True) == 8192


# ------------------------------------------------------------------------------------------
# gpuscan.trace.
# ------------------------------------------------------------------------------------------
def count_hs(n):
    """Hillis-Steele's combines and steps, counted by running its loops in Python."""
    work, span, s = 0, 0, 1
    while s < n:
        work += sum(1 for i in range(n) if i >= s)
        span += 1
        s *= 2
    return work, span


def count_blelloch(n, exclusive, flags=None):
    """Blelloch's (flagged) combines and steps, counted by running its loops in Python."""
    m = 1 << max(0, (n - 1).bit_length()) if n else 0
    fup = [0] * m if flags is None else [int(f) for f in flags] + [0] * (m - n)
    forig = list(fup)
    work = span = 0
    s = 1
    while s < m:
        for k in range(0, m, 2 * s):
            if not fup[k + 2 * s - 1]:
                work += 1
            fup[k + 2 * s - 1] |= fup[k + s - 1]
        span += 1
        s *= 2
    s = m // 2
    while s >= 1:
        for k in range(0, m, 2 * s):
            if flags is not None and forig[k + s]:
                pass
            elif flags is not None and fup[k + s - 1]:
                pass
            else:
                work += 1
            fup[k + s - 1] = 0
        span += 1
        s //= 2
    if not exclusive and n:
        work += n
        span += 1
    return work, span


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 64, 256, 1024, 4096])
def test_trace_formulas_power_of_two(n, rng):
    a = rng.integers(0, 10, n)
    lg = int(math.log2(n))
    hs = gpuscan.trace.scan(a, "hillis_steele")
    assert hs.span == lg and hs.work == n * lg - n + 1
    assert np.array_equal(hs.result, np.cumsum(a))
    bl = gpuscan.trace.scan(a, "blelloch", exclusive=True)
    assert bl.work == 2 * (n - 1) and bl.span == 2 * lg
    assert np.array_equal(bl.result, np.cumsum(a) - a)
    inc = gpuscan.trace.scan(a, "blelloch")
    assert inc.work == 2 * (n - 1) + n and inc.span == 2 * lg + 1
    assert np.array_equal(inc.result, np.cumsum(a))
    assert len(inc.steps) == inc.span + 1  # the start, then one array per step


@pytest.mark.parametrize("n", [0, 3, 5, 7, 12, 100, 1000, 3001])
def test_trace_counts_other_sizes(n, rng):
    a = rng.integers(-5, 10, n)
    hs = gpuscan.trace.scan(a, "hillis_steele")
    assert (hs.work, hs.span) == count_hs(n)
    for exclusive in (False, True):
        bl = gpuscan.trace.scan(a, "blelloch", exclusive=exclusive)
        assert (bl.work, bl.span) == count_blelloch(n, exclusive)
        assert np.array_equal(bl.result, gpuscan.scan(a, exclusive=exclusive))
        hx = gpuscan.trace.scan(a, "hillis_steele", exclusive=exclusive)
        assert np.array_equal(hx.result, gpuscan.scan(a, exclusive=exclusive))
    flags = rng.random(n) < 0.2
    for exclusive in (False, True):
        sg = gpuscan.trace.segmented_scan(a, flags, exclusive=exclusive)
        assert (sg.work, sg.span) == count_blelloch(n, exclusive, flags)
        assert np.array_equal(sg.result, gpuscan.segmented_scan(a, flags, exclusive=exclusive))
        assert len(sg.flag_steps) == len(sg.steps)


def test_trace_hillis_steele_example():
    t = gpuscan.trace.scan([1, 4, 7, 1, 3], "hillis_steele")
    assert [v.tolist() for _, v in t.steps] == [[1, 4, 7, 1, 3], [1, 5, 11, 8, 4],
                                                [1, 5, 12, 13, 15], [1, 5, 12, 13, 16]]
    assert (t.work, t.span) == (4 + 3 + 1, 3)
    ex = gpuscan.trace.scan([1, 4, 7, 1, 3], "hillis_steele", exclusive=True)
    assert ex.steps[0][1].tolist() == [0, 1, 4, 7, 1] and ex.result.tolist() == [0, 1, 5, 12, 13]


def test_trace_segmented_example():
    t = gpuscan.trace.segmented_scan([4, 2, 1, 3, 0, 2, 1, 5], [1, 0, 0, 1, 0, 0, 1, 0],
                                     exclusive=True)
    assert t.result.tolist() == [0, 4, 6, 0, 3, 3, 0, 1]
    assert t.steps[1][1].tolist() == [4, 6, 1, 3, 0, 2, 1, 6]  # the flagged up-sweep, d=0
    assert t.span == 6


def test_trace_segmented_algorithm():
    # trace.segmented_scan takes algorithm= as trace.scan and segmented_scan do: its one
    # algorithm, the flagged Blelloch sweeps.
    a, flags = [4, 2, 1, 3, 0, 2, 1, 5], [1, 0, 0, 1, 0, 0, 1, 0]
    t = gpuscan.trace.segmented_scan(a, flags, exclusive=True, algorithm="blelloch")
    assert t.result.tolist() == [0, 4, 6, 0, 3, 3, 0, 1]
    default = gpuscan.trace.segmented_scan(a, flags, exclusive=True)
    assert len(t.steps) == len(default.steps)
    assert all(x[0] == y[0] and np.array_equal(x[1], y[1]) for x, y in zip(t.steps, default.steps))
    for bad in ("hillis_steele", "auto", "nope"):
        with pytest.raises(ValueError, match="blelloch"):
            gpuscan.trace.segmented_scan(a, flags, algorithm=bad)

def test_trace_ops_and_dtypes(rng):
    for dtype in (np.int8, np.uint16, np.float32, np.bool_):
        for op in ops_for(dtype):
            a = random_array(rng, dtype, (37,), op)
            for algo in ALGOS:
                got = gpuscan.trace.scan(a, algo, op).result
                want = gpuscan.scan(a, op)
                if np.dtype(dtype).kind == "f" and op in ("add", "mul"):
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
                else:
                    assert np.array_equal(got, want), (dtype, op, algo)


def test_trace_split_example():
    t = gpuscan.trace.split([5, 7, 3, 1, 4, 2, 7, 2], [1, 1, 0, 1, 0, 0, 1, 0])
    ar = t.arrays
    assert ar["e"].tolist() == [1, 1, 0, 1, 0, 0, 1, 0]
    assert ar["f"].tolist() == [0, 1, 2, 2, 3, 3, 3, 4]
    assert ar["NF"] == 4
    assert ar["t"].tolist() == [4, 4, 4, 5, 5, 6, 7, 7]
    assert ar["addr"].tolist() == [0, 1, 4, 2, 5, 6, 3, 7]
    assert ar["out"].tolist() == [5, 7, 1, 7, 3, 4, 2, 2]
    out, count = t.result
    assert out.tolist() == [5, 7, 1, 7, 3, 4, 2, 2] and count == 4
    assert [label.split(" ")[0].rstrip(":") for label, _ in t.steps] == ["e", "f", "NF", "t", "addr",
                                                                        "out"]
    assert t.work == 2 * (8 - 1) + 1 and t.span == 2 * 3 + 4


@pytest.mark.parametrize("n", [0, 1, 2, 37, 1000, T + 5])
def test_trace_split_random(n, rng, monkeypatch):
    a = rng.integers(-99, 99, n).astype(np.int32)
    flags = rng.integers(0, 3, n)  # any nonzero value is a flag
    calls = []
    for name in ("scan", "split"):  # the steps run through gpuscan's primitives
        real = getattr(gpuscan, name)
        monkeypatch.setattr(gpuscan, name, lambda *x, _r=real, _n=name, **k: (
            calls.append(_n), _r(*x, **k))[1])
    t = gpuscan.trace.split(a, flags)
    assert sorted(set(calls)) == ["scan", "split"]
    ar = t.arrays
    e = (flags != 0).astype(np.int64)
    assert np.array_equal(ar["e"], e)
    assert np.array_equal(ar["f"], np.cumsum(e) - e)
    assert ar["NF"] == e.sum() == t.result[1]
    assert np.array_equal(ar["t"], np.arange(n) - ar["f"] + ar["NF"])
    assert np.array_equal(np.sort(ar["addr"]), np.arange(n))  # a permutation
    assert np.array_equal(ar["out"][ar["addr"]], a)  # out[addr] = a
    assert ar["out"].dtype == a.dtype
    assert np.array_equal(ar["out"], np.concatenate([a[flags != 0], a[flags == 0]]))


def test_trace_errors():
    with pytest.raises(ValueError):
        gpuscan.trace.scan(np.zeros(2**16 + 1, np.int32))
    gpuscan.trace.scan(np.zeros(2**16, np.int32), "hillis_steele")  # the limit itself
    with pytest.raises(ValueError):
        gpuscan.trace.segmented_scan(np.zeros(2**16 + 1), np.zeros(2**16 + 1))
    with pytest.raises(ValueError):
        gpuscan.trace.split(np.zeros(2**16 + 1), np.zeros(2**16 + 1))
    with pytest.raises(ValueError):
        gpuscan.trace.scan([1, 2], "auto")
    with pytest.raises(ValueError):
        gpuscan.trace.scan([1, 2], "bogus")
    with pytest.raises(ValueError):
        gpuscan.trace.scan([1, 2], op="sub")
    with pytest.raises(TypeError):
        gpuscan.trace.scan([1.0, 2.0], op="xor")
    with pytest.raises(ValueError):
        gpuscan.trace.segmented_scan([1, 2, 3], [1, 0])


def test_trace_plot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    for t in (gpuscan.trace.scan([1, 4, 7, 1, 3], "hillis_steele"),
              gpuscan.trace.scan(np.arange(8)),
              gpuscan.trace.segmented_scan(np.arange(8), [1, 0, 0, 1, 0, 0, 1, 0]),
              gpuscan.trace.split([5, 7, 3, 1, 4, 2, 7, 2], [1, 1, 0, 1, 0, 0, 1, 0])):
        ax = t.plot()
        assert len(ax.patches) == sum(len(v) for _, v in t.steps)
    hs = gpuscan.trace.scan([1, 4, 7, 1, 3], "hillis_steele").plot()
    assert len(hs.texts) >= 15 + 4  # every value and every label
    # Arrows: two per combine of each step (the work).
    arrows = [c for c in hs.get_children() if type(c).__name__ == "Annotation" and
              c.arrow_patch is not None]
    assert len(arrows) == 2 * 8


# ------------------------------------------------------------------------------------------
# CUDA: both shared-memory layouts of the Blelloch tile, and the kernels under nvcc.
# ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("unpadded", [False, True], ids=["padded", "unpadded"])
def test_blelloch_tile_layouts(unpadded, rng):
    was = _gpuscan._teach_set_unpadded(unpadded)
    try:
        for n in (T - 1, T, 5 * T + 3, BIG):
            a = rng.integers(-1000, 1000, n).astype(np.int32)
            f = rng.random(n) < 0.01
            for exclusive in (False, True):
                assert np.array_equal(gpuscan.scan(a, exclusive=exclusive, algorithm="blelloch"),
                                      gpuscan.scan(a, exclusive=exclusive))
                assert np.array_equal(
                    gpuscan.segmented_scan(a, f, "max", exclusive=exclusive,
                                           algorithm="blelloch"),
                    gpuscan.segmented_scan(a, f, "max", exclusive=exclusive))
            x = rng.uniform(-1, 1, n)
            y = gpuscan.scan(x, algorithm="blelloch")
            _gpuscan._teach_set_unpadded(not unpadded)
            assert np.array_equal(bits(y), bits(gpuscan.scan(x, algorithm="blelloch")))
            _gpuscan._teach_set_unpadded(unpadded)
    finally:
        _gpuscan._teach_set_unpadded(was)


@pytest.mark.gpu
def test_teach_device_arrays(rng):
    a = rng.integers(-9, 9, 3 * T + 1)
    d = gpuscan.to_device(a)
    for algo in ALGOS:
        assert np.array_equal(gpuscan.scan(d, algorithm=algo).get(), np.cumsum(a))
    f = gpuscan.to_device(rng.random(a.size) < 0.1)
    assert np.array_equal(gpuscan.segmented_scan(d, f, algorithm="blelloch").get(),
                          gpuscan.segmented_scan(a, f.get()))


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
@pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, "kernels")),
                    reason=f"no kernels/ in {ROOT}: the tests run without the source tree")
@pytest.mark.parametrize("pad", ["", "-DGS_TEACH_LOG_BANKS=4"])
def test_teach_kernels_compile(pad, tmp_path):
    """dispatch/teach.cu builds without warnings, also with another bank geometry."""
    cmd = ["nvcc", "-O3", "-std=c++17", "-DGS_HAVE_CUDA", "-Ikernels", "-Iinclude", "-arch=sm_90", "-c",
           "kernels/dispatch/teach.cu", "-o", str(tmp_path / "teach.o")] + ([pad] if pad else [])
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "warning" not in res.stderr.lower(), res.stderr
    assert os.path.getsize(tmp_path / "teach.o") > 0


# ------------------------------------------------------------------------------------------
# trace.sort: the radix sort by one split per bit, the segmented-split quicksort.
# ------------------------------------------------------------------------------------------
def radix_steps_python(a):
    """The values after each bit's stable split (0s first) of the LSB radix sort, in plain
    Python: the key is the unsigned bits, the sign bit flipped for signed integers."""
    bits = 8 * a.dtype.itemsize
    key = [int(v) % (1 << bits) ^ ((1 << (bits - 1)) if a.dtype.kind == "i" else 0)
           for v in a.tolist()]
    order = list(range(len(key)))
    steps = []
    for b in range(bits):
        order = ([i for i in order if not key[i] >> b & 1] +
                 [i for i in order if key[i] >> b & 1])
        steps.append([a.tolist()[i] for i in order])
    return steps


def split_counts(n):
    """(work, span) of one trace.split of n values: the padded exclusive Blelloch scan and
    NF's addition; the scan's steps and four more."""
    m = 1 << max(0, (n - 1).bit_length()) if n else 0
    return (2 * (m - 1) + 1 if n else 0), (2 * (m.bit_length() - 1) if n else 0) + 4


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32, np.int64],
                         ids=["int8", "uint8", "int16", "uint32", "int64"])
@pytest.mark.parametrize("n", [0, 1, 8, 37])
def test_trace_sort_radix(dtype, n, rng):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    t = gpuscan.trace.sort(a, "radix")
    bits = 8 * np.dtype(dtype).itemsize
    assert t.algorithm == "radix_sort" and len(t.steps) == bits
    want = radix_steps_python(a)
    for b, (label, values) in enumerate(t.steps):
        assert label.startswith(f"bit {b}:") and values.dtype == a.dtype
        assert values.tolist() == want[b], b
    assert np.array_equal(t.result, np.sort(a, kind="stable"))
    work, span = split_counts(n)
    assert (t.work, t.span) == (bits * work, bits * span)
    assert len(t.arrays["bits"]) == bits


def quicksort_python(a):
    """The levels of the segmented-split quicksort in plain Python: each segment split stably
    around its first value into below, equal, above; (values after each level, heads before
    each level)."""
    vals, segs, levels, heads = list(a.tolist()), [len(a)] if len(a) else [], [], []
    while any(len(set(vals[s:s + k])) > 1 for s, k in zip(np.cumsum([0] + segs), segs)):
        start, out, new = 0, [], []
        heads.append(np.cumsum([0] + segs[:-1]).tolist())
        for k in segs:
            seg = vals[start:start + k]
            p = seg[0]
            parts = [[v for v in seg if v < p], [v for v in seg if v == p],
                     [v for v in seg if v > p]]
            out += sum(parts, [])
            new += [len(q) for q in parts if q]
            start += k
        vals, segs = out, new
        levels.append(vals)
    return levels, heads


@pytest.mark.parametrize("n", [0, 1, 2, 8, 100, 1000])
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64], ids=["int8", "uint16",
                                                                       "int64"])
def test_trace_sort_quicksort(dtype, n, rng):
    a = rng.integers(0 if np.dtype(dtype).kind == "u" else -20, 40, n).astype(dtype)
    t = gpuscan.trace.sort(a, "quicksort")
    levels, heads = quicksort_python(a)
    assert t.algorithm == "quicksort" and len(t.steps) == len(levels)
    assert [v.tolist() for _, v in t.steps] == levels
    assert [np.flatnonzero(h).tolist() for h in t.arrays["heads"]] == heads
    assert np.array_equal(t.result, np.sort(a))
    # Work: per level the traced segmented scans (the pivots, then three classes) and three
    # additions per segment; span: the pivots' scan, the longest class scan, and three steps.
    work = span = 0
    for h in t.arrays["heads"]:
        flags = h.astype(np.uint8)
        scans = [gpuscan.trace.segmented_scan(np.zeros(n, np.int64), flags, exclusive=e)
                 for e in (False, True)]
        work += scans[0].work + 3 * scans[1].work + 3 * int(h.sum())
        span += scans[0].span + scans[1].span + 3
    assert (t.work, t.span) == (work, span)


def test_trace_sort_examples_and_errors():
    t = gpuscan.trace.sort(np.array([3, -1, 2, -1], np.int8), "radix")
    assert t.steps[-1][1].tolist() == [-1, -1, 2, 3] and t.span == 8 * (4 + 4)
    assert gpuscan.trace.sort([5, 5, 5], "quicksort").steps == []  # sorted from the start
    for bad in (np.zeros(3, np.float32), np.zeros(3, bool), np.array(["a"])):
        for algo in ("radix", "quicksort"):
            with pytest.raises(TypeError, match="integers"):
                gpuscan.trace.sort(bad, algo)
    with pytest.raises(ValueError):
        gpuscan.trace.sort(np.zeros(2**16 + 1, np.int32))
    with pytest.raises(ValueError, match="algorithm"):
        gpuscan.trace.sort([1, 2], "merge")
    big = gpuscan.trace.sort(np.arange(2**16 - 1, -1, -1, dtype=np.uint16), "radix")  # the limit
    assert np.array_equal(big.result, np.arange(2**16))
