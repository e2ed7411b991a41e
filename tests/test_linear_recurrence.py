"""gpuscan.linear_recurrence against the step-by-step loop in long double (issue #17).

h[t] = a[t] h[t-1] + b[t] along an axis, h[-1] = h0.  The contract: float32 and float64 only,
deterministic, and |h[t] - exact[t]| <= 4 (log2(n) + 2) eps m[t], m being the same recurrence on
|a|, |b| and |h0|; NaN where the loop has NaN.  Lengths are named after the path they reach: the
tile NV (the CUDA kernels' tiles and their look-back), the CPU backend's chunk of 16384 steps,
more than 224 tiles (the anchored look-back's lag) and AHEAD (the CUDA lookahead driver).  The same
tests run on whichever backend is active; the GPU-only ones are marked `gpu`.
"""
import numpy as np
import pytest

import gpuscan
from conftest import make_layout, outputs_on_thread_counts
from gpuscan import _gpuscan
from reference import bits, check_linrec, linrec_python

CPU_CHUNK = 16384  # cpu/linrec.c's GS_LR_CHUNK: steps per chunk of a row
NV = _gpuscan._config()["linrec_tile_items"]  # the CUDA kernels' tile (GS_LR_NV, half the scan's)
# The CUDA lookahead driver runs once the tiles number 4x its resident blocks: float32 2112
# tiles on an H100 or H200 (4 blocks on each of 132 multiprocessors), float64 1056; this many
# steps reach it on any current GPU (B200: 148 multiprocessors, 2368 float32 tiles).
AHEAD = 4096 * NV

LENGTHS = [
    pytest.param(1, id="one"),
    pytest.param(2, id="two"),
    pytest.param(31, id="sub_warp_31"),
    pytest.param(33, id="warp_plus_one_33"),
    pytest.param(NV - 1, id=f"tile_minus_one_{NV - 1}"),
    pytest.param(NV, id=f"one_tile_{NV}"),
    pytest.param(NV + 1, id=f"tile_plus_one_{NV + 1}"),
    pytest.param(7 * NV + 5, id=f"many_tiles_{7 * NV + 5}"),
    pytest.param(3 * CPU_CHUNK + 7, id=f"cpu_chunks_{3 * CPU_CHUNK + 7}"),
]
FLOATS = [np.float32, np.float64]
FLOAT_IDS = ["float32", "float64"]


def coefficients(rng, n, kind, dtype, shape=None):
    """(a, b) of one kind: 'decay' |a| <= 1 (random signs), 'grow' 1 < |a| (mostly slightly: m
    stays finite), 'ones' a = 1 (a prefix sum of b, where a sequential float32 sum fails the bound
    at large n), 'zeros' a with exact zeros that cut the recurrence."""
    shape = (n,) if shape is None else shape
    b = rng.uniform(-1, 1, shape)
    if kind == "decay":
        a = rng.uniform(-1, 1, shape)
    elif kind == "grow":
        total = shape[-1]
        a = np.where(rng.random(shape) < 0.5, -1, 1) * (1 + rng.uniform(0, 4.0 / max(total, 1),
                                                                           shape))
    elif kind == "ones":
        a = np.ones(shape)
    else:
        a = rng.uniform(0.5, 1.0, shape)
        a[rng.random(shape) < 0.01] = 0.0
    return a.astype(dtype), b.astype(dtype)


# ------------------------------------------------------------------------------------------
# Lengths x dtypes x kinds of coefficients.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", ["decay", "grow", "ones", "zeros"])
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_lengths(dtype, kind, n, rng):
    a, b = coefficients(rng, n, kind, dtype)
    a0, b0 = a.copy(), b.copy()
    h = gpuscan.linear_recurrence(a, b)
    check_linrec(h, a, b)
    assert np.array_equal(bits(a), bits(a0)) and np.array_equal(bits(b), bits(b0))


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_h0(dtype, rng):
    a, b = coefficients(rng, (5, 3 * NV + 2), "decay", dtype, shape=(5, 3 * NV + 2))
    for h0 in (2.5, np.float32(-1), rng.uniform(-3, 3, 5).astype(dtype), rng.uniform(-3, 3, 5)):
        check_linrec(gpuscan.linear_recurrence(a, b, h0=h0), a, b, h0=h0)
    # h0 of every row, the axis not the last.
    h0 = rng.uniform(-1, 1, 5).astype(dtype)
    check_linrec(gpuscan.linear_recurrence(a.T, b.T, axis=0, h0=h0), a.T, b.T, h0=h0, axis=0)
    np.testing.assert_array_equal(gpuscan.linear_recurrence([0.5], [1.0], h0=4.0), [3.0])


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_axes_and_reverse(dtype, axis, rng):
    shape = (3, 2 * NV + 5, 4) if axis in (1,) else (6, 7, NV + 9)
    a, b = coefficients(rng, None, "decay", dtype, shape=shape)
    h0 = rng.uniform(-1, 1, tuple(s for i, s in enumerate(shape) if i != axis % 3)).astype(dtype)
    for reverse in (False, True):
        h = gpuscan.linear_recurrence(a, b, axis=axis, reverse=reverse)
        check_linrec(h, a, b, axis=axis, reverse=reverse)
        h = gpuscan.linear_recurrence(a, b, axis=axis, reverse=reverse, h0=h0)
        check_linrec(h, a, b, h0=h0, axis=axis, reverse=reverse)


@pytest.mark.parametrize("n", [1, 33, NV + 1, 3 * CPU_CHUNK + 7])
def test_reverse_is_flipped_forward(n, rng):
    a, b = coefficients(rng, n, "decay", np.float64)
    fwd = gpuscan.linear_recurrence(a[::-1].copy(), b[::-1].copy(), h0=0.25)[::-1]
    rev = gpuscan.linear_recurrence(a, b, reverse=True, h0=0.25)
    check_linrec(rev, a, b, h0=0.25, reverse=True)
    np.testing.assert_allclose(rev, fwd, rtol=0, atol=1e-12)


def test_examples():
    np.testing.assert_array_equal(gpuscan.linear_recurrence(np.full(4, 0.5), np.ones(4)),
                                  [1.0, 1.5, 1.75, 1.875])
    np.testing.assert_array_equal(
        gpuscan.linear_recurrence(np.full(3, 2.0), np.zeros(3), h0=1.0), [2.0, 4.0, 8.0])
    # An exponential moving average: h = (1 - alpha) h + alpha x.
    x = np.arange(6, dtype=np.float64)
    alpha = 0.25
    h = gpuscan.linear_recurrence(np.full(6, 1 - alpha), alpha * x, h0=x[0])
    want, acc = [], x[0]
    for v in x:
        acc = (1 - alpha) * acc + alpha * v
        want.append(acc)
    np.testing.assert_allclose(h, want, rtol=1e-15)


def test_python_twin_small():
    # The long double reference against plain Python floats on a case exact in both.
    a = np.array([0.5, 2.0, -1.0, 0.0, 3.0])
    b = np.array([1.0, 1.0, 2.0, 5.0, -1.0])
    h, acc = [], 1.0
    for x, y in zip(a, b):
        acc = x * acc + y
        h.append(acc)
    ref, m = linrec_python(a, b, h0=1.0)
    np.testing.assert_array_equal(ref.astype(np.float64), h)
    np.testing.assert_array_equal(gpuscan.linear_recurrence(a, b, h0=1.0), h)
    assert (m >= np.abs(ref)).all()


# ------------------------------------------------------------------------------------------
# dtypes, out=, layouts.
# ------------------------------------------------------------------------------------------
def test_dtypes(rng):
    a32, b32 = coefficients(rng, 100, "decay", np.float32)
    assert gpuscan.linear_recurrence(a32, b32).dtype == np.float32
    assert gpuscan.linear_recurrence(a32, b32.astype(np.float64)).dtype == np.float64
    assert gpuscan.linear_recurrence(a32.astype(np.float64), b32).dtype == np.float64
    h = gpuscan.linear_recurrence(a32.tolist(), b32.tolist())  # lists are float64
    assert h.dtype == np.float64
    check_linrec(gpuscan.linear_recurrence(a32, b32.astype(np.float64)), a32,
                 b32.astype(np.float64))


def test_out(rng):
    a, b = coefficients(rng, (4, 300), "decay", np.float64, shape=(4, 300))
    out = np.empty((4, 300))
    assert gpuscan.linear_recurrence(a, b, out=out) is out
    check_linrec(out, a, b)
    big = np.zeros((4, 600))
    gpuscan.linear_recurrence(a, b, out=big[:, ::2])
    check_linrec(big[:, ::2], a, b)
    assert not big[:, 1::2].any()
    o32 = np.empty((4, 300), np.float32)  # out fixes the dtype: the recurrence runs in float32
    gpuscan.linear_recurrence(a, b, out=o32)
    check_linrec(o32, a, b, dtype=np.float32)
    with pytest.raises(ValueError):
        gpuscan.linear_recurrence(a, b, out=np.empty((4, 299)))
    with pytest.raises(TypeError):
        gpuscan.linear_recurrence(a, b, out=np.empty((4, 300), np.int64))
    ro = np.empty((4, 300))
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        gpuscan.linear_recurrence(a, b, out=ro)


@pytest.mark.parametrize("which", ["a", "b"])
@pytest.mark.parametrize("n", [NV + 1, 3 * CPU_CHUNK + 7])
def test_in_place(which, n, rng):
    a, b = coefficients(rng, n, "decay", np.float32)
    want = gpuscan.linear_recurrence(a, b)
    a2, b2 = a.copy(), b.copy()
    target = a2 if which == "a" else b2
    res = gpuscan.linear_recurrence(a2, b2, out=target)
    assert res is target
    assert np.array_equal(bits(res), bits(want))


def test_overlapping_out(rng):
    a, b = coefficients(rng, 1000, "decay", np.float64)
    buf = np.concatenate([a, np.zeros(10)])
    want = gpuscan.linear_recurrence(a, b)
    res = gpuscan.linear_recurrence(buf[:1000], b, out=buf[5:1005])
    np.testing.assert_array_equal(res, want)


@pytest.mark.parametrize("layout", ["stride_3", "reversed", "byteswapped", "unaligned"])
def test_layouts(layout, rng):
    a, b = coefficients(rng, 2 * NV + 3, "decay", np.float64)
    h = gpuscan.linear_recurrence(make_layout(layout, a), make_layout(layout, b))
    check_linrec(h, a, b)


def test_zero_d_and_empty():
    h = gpuscan.linear_recurrence(np.float64(0.5), np.float64(1.0), h0=2.0)
    assert h.shape == () and float(h) == 2.0
    h = gpuscan.linear_recurrence(np.zeros(0, np.float32), np.zeros(0, np.float32))
    assert h.shape == (0,) and h.dtype == np.float32
    h = gpuscan.linear_recurrence(np.zeros((3, 0)), np.zeros((3, 0)), axis=0)
    assert h.shape == (3, 0)


# ------------------------------------------------------------------------------------------
# NaN, infinities, zeros.
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [100, 3 * NV + 1, 3 * CPU_CHUNK + 7])
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_nan_inf(dtype, n, rng):
    a, b = coefficients(rng, n, "zeros", dtype)
    k = n // 3
    for what, where, value in (("b", k, np.nan), ("a", k, np.nan), ("b", k, np.inf),
                               ("b", k, -np.inf)):
        aa, bb = a.copy(), b.copy()
        (aa if what == "a" else bb)[where] = value
        h = gpuscan.linear_recurrence(aa, bb)
        check_linrec(h, aa, bb)
        assert not np.isfinite(h[where])


def test_zero_cuts_overflowed_product(rng):
    # A long run of a = 2 overflows any product of the a's, but from h = 0 with b = 0 the loop
    # stays at exactly 0; an a of 0 later cuts the recurrence: no NaN anywhere.
    n = 3 * CPU_CHUNK + 7
    for dtype in FLOATS:
        a = np.full(n, 2.0, dtype)
        b = np.zeros(n, dtype)
        a[n // 2] = 0.0
        b[n // 2 + 1:] = 0.0
        h = gpuscan.linear_recurrence(a, b)
        assert np.array_equal(h, np.zeros(n, dtype))


def test_prefix_sum_accuracy(rng):
    # a = 1: h is the prefix sum of b; the bound is NumPy's cumsum bound times 4.
    n = 2**20 + 17
    b = rng.uniform(0, 1, n).astype(np.float32)
    a = np.ones(n, np.float32)
    h = gpuscan.linear_recurrence(a, b)
    exact = np.cumsum(b.astype(np.float64))
    bound = 4 * (np.log2(n) + 2) * np.finfo(np.float32).eps * exact
    assert (np.abs(h - exact) <= bound).all()


# ------------------------------------------------------------------------------------------
# Determinism.
# ------------------------------------------------------------------------------------------
def test_deterministic(rng):
    a, b = coefficients(rng, 5 * CPU_CHUNK + 3, "ones", np.float32)
    first = gpuscan.linear_recurrence(a, b)
    for _ in range(3):
        assert np.array_equal(bits(gpuscan.linear_recurrence(a, b)), bits(first))


def test_same_bits_on_any_thread_count():
    code = (
        "import numpy as np, gpuscan\n"
        "rng = np.random.default_rng(3)\n"
        "a = rng.uniform(-1, 1, 1031 * 1017).astype(np.float32)\n"
        "b = rng.uniform(-1, 1, a.size).astype(np.float32)\n"
        "h = gpuscan.linear_recurrence(a, b)\n"
        "g = gpuscan.linear_recurrence(a.reshape(-1, 1031), b.reshape(-1, 1031), reverse=True)\n"
        "print(h.view(np.uint32).sum(dtype=np.uint64), g.view(np.uint32).sum(dtype=np.uint64))\n"
    )
    outs = outputs_on_thread_counts(code)
    assert outs[0] == outs[1] == outs[2]


# ------------------------------------------------------------------------------------------
# Errors.
# ------------------------------------------------------------------------------------------
def test_errors():
    f = np.ones(4)
    for bad in (np.ones(4, np.int64), np.ones(4, np.float16), np.ones(4, np.complex64),
                np.ones(4, bool)):
        with pytest.raises(TypeError):
            gpuscan.linear_recurrence(bad, f)
        with pytest.raises(TypeError):
            gpuscan.linear_recurrence(f, bad)
    with pytest.raises(ValueError):
        gpuscan.linear_recurrence(np.ones(4), np.ones(5))
    with pytest.raises(ValueError):
        gpuscan.linear_recurrence(np.ones((2, 4)), np.ones(4))  # no broadcasting
    with pytest.raises(ValueError):
        gpuscan.linear_recurrence(np.ones((2, 4)), np.ones((2, 4)), h0=np.ones(4))
    with pytest.raises(ValueError):
        gpuscan.linear_recurrence(np.ones((2, 4)), np.ones((2, 4)), h0=np.ones((2, 1)))
    with pytest.raises(TypeError):
        gpuscan.linear_recurrence(f, f, h0=np.ones((), np.complex128))
    with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError):
        gpuscan.linear_recurrence(f, f, axis=1)
    with pytest.raises(TypeError):
        gpuscan.linear_recurrence(f, f, axis=0.5)
    with pytest.raises(TypeError):
        gpuscan.linear_recurrence(f, f, 0)  # axis is keyword-only
    with pytest.raises(TypeError):
        gpuscan.linear_recurrence(f, f, out=[0.0] * 4)


def test_scratch_bytes():
    assert _gpuscan._linrec_scratch_bytes(0) == 0
    one = _gpuscan._linrec_scratch_bytes(1)
    assert one >= 32 + 64  # a tile's pair and an anchor's
    tiles = 100
    assert _gpuscan._linrec_scratch_bytes(tiles * NV) >= 32 * tiles + 64 * (tiles // 32)
    with pytest.raises(ValueError):
        _gpuscan._linrec_scratch_bytes(-1)


# ------------------------------------------------------------------------------------------
# Device arrays and long recurrences (CUDA).
# ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_device(dtype, rng):
    a, b = coefficients(rng, (3, 5 * NV + 7), "decay", dtype, shape=(3, 5 * NV + 7))
    h0 = rng.uniform(-1, 1, 3).astype(dtype)
    da, db = gpuscan.to_device(a), gpuscan.to_device(b)
    for reverse in (False, True):
        h = gpuscan.linear_recurrence(da, db, h0=gpuscan.to_device(h0), reverse=reverse)
        assert isinstance(h, gpuscan.DeviceArray)
        check_linrec(h.get(), a, b, h0=h0, reverse=reverse)
    h = gpuscan.linear_recurrence(da, db, axis=0)
    check_linrec(h.get(), a, b, axis=0)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["decay", "grow", "ones", "zeros"])
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_device_past_anchor_lag(dtype, kind, rng):
    n = 300 * NV + 11  # more than the 224 tiles of the anchored look-back's lag
    a, b = coefficients(rng, n, kind, dtype)
    d = gpuscan.linear_recurrence(gpuscan.to_device(a), gpuscan.to_device(b), h0=0.5)
    first = d.get()
    check_linrec(first, a, b, h0=0.5)
    for _ in range(3):
        again = gpuscan.linear_recurrence(gpuscan.to_device(a), gpuscan.to_device(b), h0=0.5)
        assert np.array_equal(bits(again.get()), bits(first))
    rev = gpuscan.linear_recurrence(gpuscan.to_device(a), gpuscan.to_device(b), reverse=True)
    check_linrec(rev.get(), a, b, reverse=True)


@pytest.mark.gpu
def test_cupy_inputs(rng):
    cp = pytest.importorskip("cupy")
    a, b = coefficients(rng, None, "decay", np.float32, shape=(4, 2 * NV + 3))
    ca, cb = cp.asarray(a), cp.asarray(b)
    h = gpuscan.linear_recurrence(ca, cb, h0=cp.ones(4, cp.float32))
    assert isinstance(h, gpuscan.DeviceArray)
    check_linrec(h.get(), a, b, h0=np.ones(4, np.float32))
    h = gpuscan.linear_recurrence(ca[:, ::2], cb[:, ::2], reverse=True)
    check_linrec(h.get(), a[:, ::2], b[:, ::2], reverse=True)
    out = cp.empty_like(ca)
    assert gpuscan.linear_recurrence(ca, cb, out=out) is out
    check_linrec(cp.asnumpy(out), a, b)
    assert gpuscan.linear_recurrence(ca, cb, out=ca) is ca  # in place on the device
    check_linrec(cp.asnumpy(ca), a, b)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["decay", "zeros"])
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_device_lookahead_rows(dtype, kind, rng):
    # The lookahead driver (AHEAD steps and more) over rows that start inside tiles, a tail tile,
    # h0 and both directions; bits the same on every run.
    rows, row_len = AHEAD // (4 * NV) + 1, 4 * NV + 3
    a, b = coefficients(rng, None, kind, dtype, shape=(rows, row_len))
    h0 = rng.uniform(-1, 1, rows).astype(dtype)
    da, db, dh0 = gpuscan.to_device(a), gpuscan.to_device(b), gpuscan.to_device(h0)
    for reverse in (False, True):
        first = gpuscan.linear_recurrence(da, db, h0=dh0, reverse=reverse).get()
        check_linrec(first, a, b, h0=h0, reverse=reverse)
        for _ in range(2):
            again = gpuscan.linear_recurrence(da, db, h0=dh0, reverse=reverse).get()
            assert np.array_equal(bits(again), bits(first))


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_device_lookahead_one_row(dtype, rng):
    # One recurrence through the lookahead driver, a = 1 (a prefix sum: the bound against the
    # float64 cumsum, as test_prefix_sum_accuracy): forward (whole tiles through shared memory,
    # the tail element by element) and reversed (n not a multiple of the 16-byte piece: every tile
    # element by element), the same bits on every run.
    n = AHEAD + 5
    # Multiples of 2^-10 below 1: the float64 cumsum below is exact (sums < 2^33 units).
    b = (rng.integers(0, 1 << 10, n) / (1 << 10)).astype(dtype)
    da, db = gpuscan.to_device(np.ones(n, dtype)), gpuscan.to_device(b)
    eps = np.finfo(dtype).eps
    for reverse in (False, True):
        h = gpuscan.linear_recurrence(da, db, reverse=reverse).get()
        x = b.astype(np.float64)
        exact = np.cumsum(x[::-1])[::-1] if reverse else np.cumsum(x)
        assert (np.abs(h - exact) <= 4 * (np.log2(n) + 2) * eps * exact).all()
        again = gpuscan.linear_recurrence(da, db, reverse=reverse).get()
        assert np.array_equal(bits(again), bits(h))


def signed_prefix(s, b, reverse=False):
    """h[t] = s[t] h[t-1] + b[t] (h[-1] = 0) along the last axis for s = +-1, exactly in float64
    when b's values are multiples of 2^-10 below 1 and the rows shorter than 2^40 steps: with S
    the running product of s (its own inverse), h = S cumsum(S b).  Also m (the recurrence on
    |s|, |b|): the running sum of |b|."""
    s, b = np.asarray(s, np.float64), np.asarray(b, np.float64)
    if reverse:
        h, m = signed_prefix(s[..., ::-1], b[..., ::-1])
        return h[..., ::-1], m[..., ::-1]
    S = np.cumprod(s, axis=-1)
    return S * np.cumsum(S * b, axis=-1), np.cumsum(np.abs(b), axis=-1)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_device_signed_long(dtype, rng):
    # Long recurrences through the look-back's chain of anchors (device/pair_lookback.cuh), with
    # a = +-1 (the sign carried through every composite) and an exact oracle: one row of AHEAD
    # steps and rows long enough that anchors' windows hold a row's first step; forward and
    # reversed (a tail that is not a whole 16-byte piece); the same bits on every run.
    eps = np.finfo(dtype).eps
    for shape in [(AHEAD + 5,), (3, 700 * NV + 3)]:
        s = np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(dtype)
        b = (rng.integers(0, 1 << 10, shape) / (1 << 10)).astype(dtype)
        da, db = gpuscan.to_device(s), gpuscan.to_device(b)
        for reverse in (False, True):
            h = gpuscan.linear_recurrence(da, db, reverse=reverse).get()
            exact, m = signed_prefix(s, b, reverse)
            bound = 4 * (np.log2(shape[-1]) + 2) * eps * m
            assert (np.abs(h - exact) <= bound).all(), (shape, reverse)
            again = gpuscan.linear_recurrence(da, db, reverse=reverse).get()
            assert np.array_equal(bits(again), bits(h))
