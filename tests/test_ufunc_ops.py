"""The ufuncs that `op` takes beside the seven operators (SPEC "Operators you write"):
np.fmax, np.fmin, np.logaddexp, np.logaddexp2, np.logical_and, np.logical_or, np.logical_xor,
on whichever backend is active (GPUSCAN_BACKEND), with NumPy's accumulate/reduce results and
dtypes.

fmax, fmin and the logical ops are exact: bit for bit NumPy's (fmax and fmin up to the sign of
a zero tie, which NumPy's own accumulate and reduce break differently).  logaddexp rounds: its
results are deterministic and at least as accurate as NumPy's loop, measured against the same
recurrence in long double.  float16 results are computed in float32 and rounded once per output,
as every op's are.
"""
import numpy as np
import pytest

import gpuscan
from conftest import NV

UFUNCS = [np.fmax, np.fmin, np.logaddexp, np.logaddexp2, np.logical_and, np.logical_or,
          np.logical_xor]
UFUNC_IDS = [u.__name__ for u in UFUNCS]
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64]
DTYPE_IDS = [np.dtype(d).name for d in DTYPES]
SIZES = [pytest.param(0, id="empty"), pytest.param(1, id="one"), pytest.param(33, id="33"),
         pytest.param(NV + 1, id=f"tile_plus_one_{NV + 1}"),
         pytest.param(7 * NV + 5, id=f"many_tiles_{7 * NV + 5}")]
LOGS = (np.logaddexp, np.logaddexp2)


def data(rng, dtype, n, ufunc):
    """Values that keep every op busy: mixed-sign floats with NaNs (fmax, fmin, logical),
    integers of the dtype's range (fmax, fmin) or small ones (logaddexp: the log of a sum stays
    near the values), and sparse zeros for logical_and, sparse nonzeros for logical_or."""
    dtype = np.dtype(dtype)
    if ufunc in (np.logical_and, np.logical_or):
        keep = rng.random(n) < 0.995
        x = np.where(keep if ufunc is np.logical_and else ~keep, rng.integers(1, 100, n), 0)
        if dtype.kind == "f" and n > 2:
            x = x.astype(dtype)
            x[n // 2] = np.nan  # nonzero: True
        return x.astype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        if ufunc in LOGS:
            lo = 0 if dtype.kind == "u" else -40
            return rng.integers(lo, 40, n).astype(dtype)
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x = (rng.standard_normal(n) * 20).astype(dtype)
    if ufunc not in LOGS and n > 3:
        x[rng.integers(0, n, max(1, n // 50))] = np.nan
        x[:2] = np.nan  # a leading run of NaNs: fmax skips it
    return x


def lse_reference(x, ufunc):
    """NumPy's accumulate of ufunc over x in long double: the exact values, to far below the
    float64 rounding that the outputs carry."""
    return ufunc.accumulate(np.asarray(x, dtype=np.longdouble))


def assert_log_accurate(res, x, ufunc):
    """res (an accumulate of a logaddexp over x, in res's dtype) has the accuracy of NumPy's own
    loop in that dtype: within the loop's bound, (i + 2) eps max|z_j| for output i (one rounding
    of a value of the running total per step: gpuscan's path to output i has no more steps, each
    as accurate), and on the whole no less accurate (its RMS error from the long double
    reference within 3x NumPy's, a guard against a grouping that rounds more: both are random
    walks, so neither is smaller sample by sample)."""
    ref = lse_reference(x.astype(res.dtype), ufunc)
    eps = np.finfo(res.dtype).eps
    bound = (np.arange(ref.size) + 2) * eps * np.maximum.accumulate(np.abs(ref))
    mine = np.abs(res.astype(np.longdouble) - ref)
    theirs = np.abs(ufunc.accumulate(x.astype(res.dtype)).astype(np.longdouble) - ref)
    finite = np.isfinite(ref)
    assert np.array_equal(res[~finite], ref[~finite].astype(res.dtype))
    assert np.all(theirs[finite] <= bound[finite])  # the bound holds for NumPy's loop
    assert np.all(mine[finite] <= bound[finite])
    rms = [np.sqrt(np.sum(e[finite] ** 2) / max(1, finite.sum())) for e in (mine, theirs)]
    assert rms[0] <= 3 * rms[1] + eps


def assert_log_close(res, expected):
    """A logaddexp's res within the loop's bound of expected (another grouping's, or NumPy's,
    whose float16 loop rounds every step to float16): (n + 2) eps max|z| for n values."""
    res, expected = np.asarray(res), np.asarray(expected, np.float64)
    scale = np.max(np.abs(expected[np.isfinite(expected)]), initial=1)
    tol = (res.size + 2) * np.finfo(res.dtype).eps * scale
    np.testing.assert_allclose(res.astype(np.float64), expected, rtol=0, atol=tol)


def check_accumulate(res, x, ufunc):
    expected = ufunc.accumulate(x)
    assert res.dtype == expected.dtype
    assert res.shape == expected.shape
    if ufunc in LOGS and res.dtype == np.float16:
        # computed in float32 and rounded once: within an ulp of NumPy's float16 steps' values
        np.testing.assert_allclose(res, ufunc.accumulate(x.astype(np.float32)).astype(np.float16),
                                   rtol=2**-10, atol=0)
    elif ufunc in LOGS:
        assert_log_accurate(res, x, ufunc)
    else:
        np.testing.assert_array_equal(res, expected)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("ufunc", UFUNCS, ids=UFUNC_IDS)
def test_scan_matches_accumulate(ufunc, dtype, n, rng):
    x = data(rng, dtype, n, ufunc)
    check_accumulate(gpuscan.scan(x, ufunc), x, ufunc)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("ufunc", UFUNCS, ids=UFUNC_IDS)
def test_reduce_matches_numpy(ufunc, dtype, n, rng):
    x = data(rng, dtype, n, ufunc)
    if n == 0 and ufunc in (np.fmax, np.fmin):
        with pytest.raises(ValueError, match=f"zero-size array to reduction operation {ufunc.__name__}"):
            gpuscan.reduce(x, ufunc)
        return
    res, expected = gpuscan.reduce(x, ufunc), ufunc.reduce(x)
    assert np.asarray(res).dtype == np.asarray(expected).dtype
    if ufunc in LOGS and n > 0:
        # within the loop's bound of the exact value (of the float32 values for float16 results)
        exact = lse_reference(x.astype(np.float32 if res.dtype == np.float16 else res.dtype), ufunc)
        assert_log_close(np.full(n, res), exact[-1])
    else:
        np.testing.assert_array_equal(res, expected)


@pytest.mark.parametrize("name", ["fmax", "fmin", "logaddexp", "logaddexp2", "logical_and",
                                  "logical_or", "logical_xor"])
def test_names_as_strings(name, rng):
    x = rng.standard_normal(100)
    np.testing.assert_array_equal(gpuscan.scan(x, name), gpuscan.scan(x, getattr(np, name)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ufunc", LOGS, ids=["logaddexp", "logaddexp2"])
def test_logaddexp_accuracy_long(ufunc, dtype, rng):
    """Many tiles and every thread: at least as accurate as NumPy, and the same bits twice."""
    x = (rng.standard_normal(2**20 + 17) * 30).astype(dtype)
    res = gpuscan.scan(x, ufunc)
    assert_log_accurate(res, x, ufunc)
    np.testing.assert_array_equal(res.view(np.uint8), gpuscan.scan(x, ufunc).view(np.uint8))
    tot = gpuscan.reduce(x, ufunc)
    assert_log_close(np.full(x.size, tot), lse_reference(x, ufunc)[-1])
    assert gpuscan.reduce(x, ufunc).tobytes() == tot.tobytes()


def test_logaddexp_special_values():
    inf, nan = np.inf, np.nan
    x = np.array([-inf, -inf, 3.0, 3.0, inf, 1.0, nan, 2.0])
    with np.errstate(invalid="ignore"):  # NumPy warns at the NaN; gpuscan never does
        expected = np.logaddexp.accumulate(x)
    np.testing.assert_array_equal(gpuscan.scan(x, np.logaddexp), expected)
    np.testing.assert_array_equal(gpuscan.scan(x[:4], np.logaddexp2), [-inf, -inf, 3.0, 4.0])
    assert gpuscan.reduce(np.array([-inf, -inf]), np.logaddexp) == -inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ufunc", [np.fmax, np.fmin], ids=["fmax", "fmin"])
def test_fmax_skips_nans(ufunc, dtype):
    nan = np.nan
    x = np.array([nan, nan, 1.0, nan, 3.0, -2.0, nan], dtype=dtype)
    np.testing.assert_array_equal(gpuscan.scan(x, ufunc), ufunc.accumulate(x))
    assert np.isnan(gpuscan.reduce(np.full(5 * NV + 3, nan, dtype), ufunc))
    # the first of equal zeros, as np.fmax.reduce and np.fmax(a, b) keep a
    z = np.zeros(4 * NV + 7, dtype)
    z[::2] = -0.0
    assert np.signbit(gpuscan.reduce(z, ufunc)) == np.signbit(ufunc.reduce(z))
    assert np.signbit(gpuscan.reduce(z[1:], ufunc)) == np.signbit(ufunc.reduce(z[1:]))


IDENTITIES = [(np.logaddexp, np.float64, -np.inf), (np.logaddexp2, np.float32, -np.inf),
              (np.fmax, np.float64, np.nan), (np.fmin, np.float32, np.nan),
              (np.fmax, np.int16, np.iinfo(np.int16).min), (np.fmin, np.uint8, 255),
              (np.fmax, np.bool_, False), (np.fmin, np.bool_, True),
              (np.logical_and, np.int32, True), (np.logical_or, np.float64, False),
              (np.logical_xor, np.uint8, False)]


@pytest.mark.parametrize("ufunc, dtype, ident", IDENTITIES,
                         ids=[f"{u.__name__}-{np.dtype(d).name}" for u, d, _ in IDENTITIES])
@pytest.mark.parametrize("n", [1, 33, NV + 1])
def test_exclusive_scan(ufunc, dtype, ident, n, rng):
    x = data(rng, dtype, n, ufunc)
    inc = gpuscan.scan(x, ufunc)
    exc = gpuscan.scan(x, ufunc, exclusive=True)
    assert exc.dtype == inc.dtype
    np.testing.assert_array_equal(exc[:1], np.array([ident]).astype(inc.dtype))
    if ufunc in (np.logaddexp, np.logaddexp2) and gpuscan.backend() == "cuda":
        # a rounding op: CUDA's exclusive scan groups its tiles apart from the inclusive one's
        np.testing.assert_allclose(exc[1:], inc[:-1], rtol=4 * np.finfo(inc.dtype).eps)
    else:
        np.testing.assert_array_equal(exc[1:], inc[:-1])


@pytest.mark.parametrize("ufunc, empty", [(np.logaddexp, -np.inf), (np.logaddexp2, -np.inf),
                                          (np.logical_and, True), (np.logical_or, False),
                                          (np.logical_xor, False)])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_])
def test_empty_reduce_is_identity(ufunc, empty, dtype):
    x = np.zeros((3, 0), dtype)
    expected = ufunc.reduce(x, axis=1)
    res = gpuscan.reduce(x, ufunc, axis=1)
    assert res.dtype == expected.dtype
    np.testing.assert_array_equal(res, expected)
    np.testing.assert_array_equal(res, np.full(3, empty, expected.dtype))


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
@pytest.mark.parametrize("ufunc", [np.fmax, np.fmin], ids=["fmax", "fmin"])
def test_empty_fmax_needs_initial(ufunc, dtype):
    with pytest.raises(ValueError, match="has no identity"):
        gpuscan.reduce(np.zeros((2, 0), dtype), ufunc, axis=1)
    with pytest.raises(ValueError, match="identity"):
        gpuscan.reduce(np.ones(4, dtype), ufunc, where=np.array([1, 0, 1, 0], bool))
    np.testing.assert_array_equal(gpuscan.reduce(np.zeros((2, 0), dtype), ufunc, axis=1, initial=7),
                                  ufunc.reduce(np.zeros((2, 0), dtype), axis=1, initial=7))


@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("ufunc, dtype", [(np.logaddexp, np.float64), (np.fmax, np.float32),
                                          (np.fmin, np.int16), (np.logical_xor, np.int32),
                                          (np.logaddexp2, np.int16)],
                         ids=["logaddexp-f64", "fmax-f32", "fmin-i16", "logical_xor-i32",
                              "logaddexp2-i16"])
def test_axes_keepdims_where_initial(ufunc, dtype, axis, rng):
    x = data(rng, dtype, 37 * 129, ufunc).reshape(37, 129)
    where = rng.random(x.shape) < 0.7
    init = {np.logical_xor: True}.get(ufunc, 5)
    for kw in ({}, {"keepdims": True}, {"where": where, "initial": init}, {"initial": init}):
        res, expected = gpuscan.reduce(x, ufunc, axis=axis, **kw), ufunc.reduce(x, axis=axis, **kw)
        assert np.asarray(res).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(np.asarray(res, np.float64), np.asarray(expected, np.float64),
                                   rtol=1e-12 if np.dtype(dtype).itemsize == 8 else 1e-5)
    if axis is not None:
        res, expected = gpuscan.scan(x, ufunc, axis=axis), ufunc.accumulate(x, axis=axis)
        assert res.dtype == expected.dtype
        np.testing.assert_allclose(res.astype(np.float64), expected.astype(np.float64),
                                   rtol=1e-12 if np.dtype(dtype).itemsize == 8 else 1e-5)


def segments_of(rng, n):
    flags = rng.random(n) < 0.05
    if n:
        flags[0] = True
    heads = np.flatnonzero(flags)
    return flags, heads, np.append(heads[1:], n)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.bool_])
@pytest.mark.parametrize("ufunc", UFUNCS, ids=UFUNC_IDS)
def test_segmented_forms(ufunc, dtype, exclusive, rng):
    n = 3 * NV + 11
    x = data(rng, dtype, n, ufunc)
    flags, starts, ends = segments_of(rng, n)
    res = gpuscan.segmented_scan(x, flags.astype(np.uint8), ufunc, exclusive=exclusive)
    inc = gpuscan.scan(x, ufunc)
    for s, e in zip(starts, ends):
        expected = ufunc.accumulate(x[s:e])
        got = res[s:e]
        if exclusive:
            np.testing.assert_array_equal(got[:1], gpuscan.scan(x[s:e], ufunc, exclusive=True)[:1])
            got = got[1:]
            expected = expected[:-1]
        assert got.dtype == expected.dtype
        if ufunc in LOGS:
            assert_log_close(got, expected)
        else:
            np.testing.assert_array_equal(got, expected)
    assert res.dtype == inc.dtype
    red = gpuscan.segmented_reduce(x, flags, ufunc)
    at = gpuscan.reduceat(x, starts, ufunc)
    expected = ufunc.reduceat(x, starts)
    assert red.dtype == at.dtype == expected.dtype
    if ufunc in LOGS:
        assert_log_close(red, expected)
        assert_log_close(at, expected)
    else:
        np.testing.assert_array_equal(red, expected)
        np.testing.assert_array_equal(at, expected)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8])
@pytest.mark.parametrize("ufunc", LOGS, ids=["logaddexp", "logaddexp2"])
def test_logaddexp_of_small_ints_is_float16(ufunc, dtype, rng):
    """NumPy's first float loop that holds bool and 8-bit integers is float16's."""
    x = data(rng, dtype, 300, ufunc)
    for fn, ref in ((gpuscan.scan, ufunc.accumulate), (gpuscan.reduce, ufunc.reduce)):
        res = fn(x, ufunc)
        assert np.asarray(res).dtype == np.asarray(ref(x)).dtype == np.float16
        np.testing.assert_allclose(res, fn(x.astype(np.float32), ufunc).astype(np.float16))
    assert gpuscan.scan(x, ufunc, dtype=np.float32).dtype == np.float32
    assert gpuscan.scan(list(x), ufunc).dtype == ufunc.accumulate(list(x)).dtype
    # dtype=float16 (gpuscan.dask passes the probed dtype on) and a float16 out=, any input
    y = x.astype(np.int32)
    np.testing.assert_array_equal(gpuscan.reduce(y, ufunc, dtype=np.float16),
                                  gpuscan.reduce(x, ufunc))
    out = np.empty(x.shape, np.float16)
    assert gpuscan.scan(y, ufunc, out=out) is out
    np.testing.assert_array_equal(out, gpuscan.scan(x, ufunc))


@pytest.mark.parametrize("ufunc", [np.logical_and, np.logical_or, np.logical_xor],
                         ids=["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_errors_and_dtype(ufunc, rng):
    x = rng.standard_normal(50)
    for call in (lambda **k: gpuscan.scan(x, ufunc, **k), lambda **k: gpuscan.reduce(x, ufunc, **k)):
        with pytest.raises(TypeError, match="give bool"):
            call(dtype=np.int32)
        np.testing.assert_array_equal(call(dtype=bool), call())
    with pytest.raises(TypeError):
        ufunc.accumulate(x, dtype=np.int32)  # NumPy's, too


@pytest.mark.parametrize("ufunc", LOGS, ids=["logaddexp", "logaddexp2"])
def test_logaddexp_errors(ufunc):
    x = np.arange(10.0)
    with pytest.raises(TypeError, match="need float"):
        gpuscan.scan(x, ufunc, dtype=np.int64)
    with pytest.raises(TypeError):
        ufunc.accumulate(x, dtype=np.int64)  # NumPy's, too
    with pytest.raises(TypeError):
        gpuscan.scan(x, ufunc, out=np.zeros(10, np.int64))
    # dtype= picks the float
    res = gpuscan.scan(np.arange(10), ufunc, dtype=np.float32)
    np.testing.assert_allclose(res, ufunc.accumulate(np.arange(10), dtype=np.float32), rtol=1e-6)


def test_bitwise_ops_still_refuse_floats_and_names_list_new_ops():
    with pytest.raises(TypeError, match="bitwise"):
        gpuscan.scan(np.ones(3), "and")
    with pytest.raises(ValueError, match="logaddexp2.*logical_xor"):
        gpuscan.scan(np.ones(3), "logaddexp3")
    with pytest.raises(ValueError, match="np.fmax"):
        gpuscan.reduce(np.ones(3), np.arctan2)


@pytest.mark.parametrize("ufunc", [np.fmax, np.logaddexp, np.logical_or],
                         ids=["fmax", "logaddexp", "logical_or"])
def test_out_and_in_place(ufunc, rng):
    x = data(rng, np.float64, 1000, ufunc)
    expected = gpuscan.scan(x, ufunc)
    out = np.empty_like(expected)
    assert gpuscan.scan(x, ufunc, out=out) is out
    np.testing.assert_array_equal(out, expected)
    if expected.dtype == x.dtype:
        y = x.copy()
        gpuscan.scan(y, ufunc, out=y)
        np.testing.assert_array_equal(y, expected)


def test_trace_takes_the_new_ops(rng):
    x = data(rng, np.int32, 100, np.logical_or)
    t = gpuscan.trace.scan(x, "hillis_steele", op=np.logical_or)
    np.testing.assert_array_equal(t.result, np.logical_or.accumulate(x))
    y = rng.standard_normal(64)
    t = gpuscan.trace.scan(y, "blelloch", op="fmax", exclusive=True)
    np.testing.assert_array_equal(t.result[1:], np.fmax.accumulate(y)[:-1])


@pytest.mark.gpu
@pytest.mark.parametrize("ufunc, dtype", [(np.fmax, np.float32), (np.fmin, np.float64),
                                          (np.fmax, np.int16), (np.logaddexp, np.float64),
                                          (np.logaddexp2, np.float32), (np.logical_and, np.int32),
                                          (np.logical_xor, np.float64)],
                         ids=["fmax-f32", "fmin-f64", "fmax-i16", "logaddexp-f64",
                              "logaddexp2-f32", "logical_and-i32", "logical_xor-f64"])
def test_device_arrays(ufunc, dtype, rng):
    """Device arrays in, DeviceArrays out: the single-pass kernels of the CUDA backend, the same
    values as the host path (logaddexp: within the loop's bound of them)."""
    same = assert_log_close if ufunc in LOGS else np.testing.assert_array_equal
    x = data(rng, dtype, 5 * NV + 3, ufunc)
    flags, starts, _ = segments_of(rng, x.size)
    d = gpuscan.to_device(x)
    for fn, args in ((gpuscan.scan, ()), (gpuscan.reduce, ()),
                     (gpuscan.segmented_scan, (flags,)), (gpuscan.reduceat, (starts,))):
        dev = args and (gpuscan.to_device(args[0]),)
        got = fn(d, *dev, ufunc)
        assert isinstance(got, gpuscan.DeviceArray)
        same(np.atleast_1d(got.get()), np.atleast_1d(fn(x, *args, ufunc)))
    got = gpuscan.scan(d, ufunc, exclusive=True).get()
    same(got[1:], gpuscan.scan(x, ufunc)[:-1])


@pytest.mark.gpu
def test_device_logaddexp_of_int8_needs_a_float_dtype():
    d = gpuscan.to_device(np.arange(10, dtype=np.int8))
    with pytest.raises(TypeError, match="float16"):
        gpuscan.scan(d, np.logaddexp)
    res = gpuscan.scan(d, np.logaddexp, dtype=np.float32).get()
    np.testing.assert_allclose(res, np.logaddexp.accumulate(np.arange(10, dtype=np.float32)),
                               rtol=1e-6)


@pytest.mark.parametrize("ufunc", UFUNCS, ids=UFUNC_IDS)
def test_dask_forwards_the_ops(ufunc, rng):
    """gpuscan.dask takes the ops as they are: chunk by chunk, the carries combined by the ufunc
    itself, the same results as the one-array call (int8 logaddexp: float16, probed and passed
    on as dtype=)."""
    da = pytest.importorskip("dask.array")
    import gpuscan.dask as gsd

    for dtype in (np.float64, np.int8):
        x = data(rng, dtype, 1000, ufunc)
        dx = da.from_array(x, chunks=97)
        flags = rng.random(x.size) < 0.05
        for got, want in ((gsd.scan(dx, ufunc).compute(), gpuscan.scan(x, ufunc)),
                          (gsd.scan(dx, ufunc, method="blelloch").compute(),
                           gpuscan.scan(x, ufunc)),
                          (gsd.reduce(dx, ufunc).compute(), gpuscan.reduce(x, ufunc)),
                          (gsd.segmented_scan(dx, da.from_array(flags, chunks=97), ufunc).compute(),
                           gpuscan.segmented_scan(x, flags, ufunc))):
            assert got.dtype == want.dtype
            if ufunc in LOGS:
                assert_log_close(np.atleast_1d(got), np.atleast_1d(want))
            else:
                np.testing.assert_array_equal(got, want)
