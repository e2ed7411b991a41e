"""NumPy twin of gpuscan.scan, and the exact error measure for float sums.

Level: test reference.  Everything here is plain NumPy, slow where it has to be exact, and
independent of the package under test, so a test compares two computations that share nothing.

  scan_reference(a, op, exclusive, axis, dtype)  what the contract says scan returns, built from
                                                 NumPy's ufunc.accumulate (bit-exact for
                                                 integers, bool and float min/max)
  result_dtype(in_dtype, op, dtype)              the contract's result dtype rule
  identity(op, dtype)                            the contract's identities
  sum_error(x, out, exclusive)                   |out - exact prefix sum| per element, with the
                                                 magnitude sum and the bound of the contract
  check_scan(res, a, op, exclusive, axis, dtype) assert that res is what scan must return
"""
import math

import numpy as np

# The contract's operators: name -> NumPy ufunc.
UFUNCS = {
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}
OPS = tuple(UFUNCS)
BITWISE_OPS = ("and", "or", "xor")


def result_dtype(in_dtype, op, dtype=None):
    """Result (and accumulation) dtype: dtype= wins; add/mul widen bool and narrow integers."""
    if dtype is not None:
        return np.dtype(dtype)
    in_dtype = np.dtype(in_dtype)
    if op in ("add", "mul"):
        if in_dtype.kind == "b" or (in_dtype.kind == "i" and in_dtype.itemsize < 8):
            return np.dtype(np.int64)
        if in_dtype.kind == "u" and in_dtype.itemsize < 8:
            return np.dtype(np.uint64)
    return in_dtype.newbyteorder("=")


def identity(op, dtype):
    """The identity element of op in dtype, as a 0-d array of that dtype."""
    dtype = np.dtype(dtype)
    if op in ("add", "or", "xor"):
        return np.zeros((), dtype)
    if op == "mul":
        return np.ones((), dtype)
    if op == "and":
        return np.array(True if dtype.kind == "b" else -1).astype(dtype)
    if dtype.kind == "f":
        return np.array(np.inf if op == "min" else -np.inf, dtype)
    if dtype.kind == "b":
        return np.array(op == "min", dtype)
    info = np.iinfo(dtype)
    return np.array(info.max if op == "min" else info.min, dtype)


def scan_reference(a, op="add", exclusive=False, axis=None, dtype=None):
    """What gpuscan.scan(a, op, exclusive=, axis=, dtype=) must return (floats: up to rounding
    for add and mul; exactly for everything else)."""
    a = np.asarray(a)
    if axis is None:
        a = a.ravel()
        axis = 0
    rt = result_dtype(a.dtype, op, dtype)
    # The input converted to the accumulation dtype first (value-preserving where the rule
    # widens, wrapping like NumPy's unsafe cast where dtype= narrows), then accumulated there.
    b = a.astype(rt, casting="unsafe")
    with np.errstate(all="ignore"):
        inc = UFUNCS[op].accumulate(b, axis=axis, dtype=rt)
    if not exclusive or inc.shape[axis] == 0:
        return inc
    head_shape = list(inc.shape)
    head_shape[axis] = 1
    head = np.full(head_shape, identity(op, rt), dtype=rt)
    body = np.take(inc, np.arange(inc.shape[axis] - 1), axis=axis)
    return np.concatenate([head, body], axis=axis)


def _rows(x, axis):
    """x as a 2-D (rows, length) array scanned along its last axis."""
    x = np.asarray(x)
    if axis is None:
        return x.reshape(1, -1)
    x = np.moveaxis(x, axis, -1)
    return x.reshape(-1, x.shape[-1]) if x.size else x.reshape(0, x.shape[-1])


def _shift_exclusive(c):
    """Exclusive form of an inclusive prefix array along axis 1 (0 first)."""
    z = np.zeros_like(c)
    z[:, 1:] = c[:, :-1]
    return z


def _exact_error_f64(x, out):
    """|out - exact inclusive prefix sum of x| along axis 1 for float64 x, and a rigorous bound
    on the rounding of that measurement itself.

    Each x is split exactly into fixed-point chunks a_k * s_k (s_k = 2^(e - k*w)), each chunk's
    integers are prefix-summed exactly in int64, and the chunks are subtracted from out one at a
    time, largest first.  w is small enough that every chunk's prefix sum is exact in a double,
    so the only roundings are those of the subtractions, each at most 2^-53 of its result; the
    sum of those results times 2^-53 is returned as the slack of the measurement.
    """
    rows, length = x.shape
    err = out.astype(np.float64)
    slack = np.zeros_like(err)
    if x.size == 0:
        return np.abs(err), slack
    big = float(np.max(np.abs(x)))
    if big == 0.0:
        return np.abs(err), slack
    # Bits per chunk: a prefix sum of `length` w-bit integers stays below 2^53.
    w = 53 - max(1, math.ceil(math.log2(length + 1)))
    e = math.frexp(big)[1]  # big < 2^e
    r = x.copy()
    k = 1
    while True:
        s = math.ldexp(1.0, e - k * w)
        if s == 0.0:  # below the smallest subnormal: nothing left to split
            break
        chunk = np.trunc(r / s)
        r -= chunk * s  # exact: the bits of r below s
        prefix = np.cumsum(chunk.astype(np.int64), axis=1)
        err -= prefix.astype(np.float64) * s
        slack += np.abs(err)
        if not r.any():
            break
        k += 1
    return np.abs(err), slack * 2.0**-53 * 1.0001


def sum_error(x, out, exclusive=False, axis=None):
    """Measure a float prefix sum against the contract's bound.

    x: the input already in the accumulation dtype (float16/32/64); out: the result, same shape.
    Returns (err, bound, slack), each float64 of shape (rows, length):
      err    |out[i] - exact[i]|
      bound  (log2(n) + 2) * eps * sum_{j<=i} |x[j]|  (j < i for exclusive), n the scanned length
      slack  how far err itself may be off (rounding of the reference; far below the bound)
    The contract holds where err <= bound + slack.
    """
    x = _rows(x, axis)
    out = _rows(out, axis)
    rows, length = x.shape
    eps = float(np.finfo(x.dtype).eps)
    x64 = x.astype(np.float64)
    mag = np.cumsum(np.abs(x64), axis=1)
    if x.dtype.itemsize < 8:
        # float16/float32 values: a float64 prefix sum is within (n-1) * 2^-53 * sum|x| of
        # exact (sequential summation), 2^-29 of the bound at n = 2^28 -- counted as slack.
        exact = np.cumsum(x64, axis=1)
        ref_slack = mag * (length * 2.0**-53)
        if exclusive:
            exact, ref_slack = _shift_exclusive(exact), _shift_exclusive(ref_slack)
        err = np.abs(out.astype(np.float64) - exact)
        slack = ref_slack + err * 2.0**-52
    else:
        if exclusive:
            shifted = np.zeros_like(x64)
            shifted[:, 1:] = x64[:, :-1]
            x64 = shifted
        err, slack = _exact_error_f64(x64, out)
    if exclusive:
        mag = _shift_exclusive(mag)
    bound = (math.log2(max(length, 1)) + 2.0) * eps * mag
    return err, bound, slack


def assert_sum_within_bound(x, out, exclusive=False, axis=None):
    """Assert the contract's float add bound at every element (and report the worst one)."""
    err, bound, slack = sum_error(x, out, exclusive=exclusive, axis=axis)
    bad = ~(err <= bound + slack)  # NaN errors count as violations
    if bad.any():
        with np.errstate(all="ignore"):
            ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1.0), np.inf)
        ratio = np.where(np.isnan(ratio), np.inf, ratio)
        worst = np.unravel_index(np.argmax(np.where(bad, ratio, -1.0)), err.shape)
        raise AssertionError(
            f"float add bound violated at {int(bad.sum())} of {err.size} elements; worst at "
            f"(row, i) = {tuple(int(v) for v in worst)}: error {err[worst]:.3e} > bound "
            f"{bound[worst]:.3e} ({ratio[worst]:.2f}x)")


def assert_prod_within_bound(x, out, exclusive=False, axis=None):
    """Float mul: |out[i] - exact[i]| <= (i+1) * eps * |exact[i]| (exact via long double
    products, or float64 products for float16/float32 input)."""
    x = _rows(x, axis)
    out = _rows(out, axis)
    eps = float(np.finfo(x.dtype).eps)
    wide = np.longdouble if x.dtype.itemsize == 8 else np.float64
    if x.dtype.itemsize == 8 and np.finfo(np.longdouble).nmant < 60:
        raise RuntimeError("no extended long double on this platform")
    with np.errstate(all="ignore"):
        exact = np.cumprod(x.astype(wide), axis=1)
        if exclusive:
            exact = np.concatenate([np.ones_like(exact[:, :1]), exact[:, :-1]], axis=1)
        i = np.arange(x.shape[1], dtype=np.float64)
        # The wide reference's own rounding, (i+1) * eps_wide relative, is added as slack.
        tol = ((i + 1) * eps + (i + 1) * float(np.finfo(wide).eps)) * np.abs(exact)
        err = np.abs(out.astype(wide) - exact)
    bad = ~(err <= tol)
    bad &= ~((out == exact) | (np.isnan(out) & np.isnan(exact)))
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise AssertionError(
            f"float mul bound violated at {int(bad.sum())} elements; first at (row, i) = "
            f"({r}, {c}): out {out[r, c]!r}, exact {exact[r, c]!r}")


def bits(a):
    """The raw bits of an array (for bit-identity checks), as native unsigned integers."""
    a = np.ascontiguousarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))  # a byte swap: every bit pattern kept
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind != "b" else a.view(np.uint8)


def check_scan(res, a, op="add", exclusive=False, axis=None, dtype=None):
    """Assert that res is what scan(a, op, exclusive=, axis=, dtype=) must return."""
    a = np.asarray(a)
    expected = scan_reference(a, op, exclusive=exclusive, axis=axis, dtype=dtype)
    assert isinstance(res, np.ndarray)
    assert res.shape == expected.shape
    assert res.dtype.type is expected.dtype.type, (res.dtype, expected.dtype)
    rt = expected.dtype
    if rt.kind == "f" and op == "add":
        x = (a.ravel() if axis is None else a).astype(rt)
        assert_sum_within_bound(x, res, exclusive=exclusive, axis=0 if axis is None else axis)
    elif rt.kind == "f" and op == "mul":
        x = (a.ravel() if axis is None else a).astype(rt)
        assert_prod_within_bound(x, res, exclusive=exclusive, axis=0 if axis is None else axis)
    else:
        np.testing.assert_array_equal(res, expected)
        # Bit-identical, except that min/max may pick either of +0 and -0 on a tie.
        same = bits(res) == bits(expected)
        if rt.kind == "f":
            same |= (np.ascontiguousarray(res) == 0) & (expected == 0)
        assert same.all(), f"bits differ at {np.argwhere(~same)[:5].tolist()}"
