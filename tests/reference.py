"""NumPy twins of gpuscan.scan, segmented_scan, reduce and split, and the error measures for
float sums.

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
  segmented_scan_python(a, flags, op, exclusive)  the plain-Python segmented scan (one loop, slow)
  segmented_scan_reference(a, flags, op, ...)     the same, vectorised: the flagged Hillis-Steele
                                                 doubling in NumPy (exact where the op is)
  check_segmented_scan(res, a, flags, op, ...)    assert that res is what segmented_scan must
                                                 return (float add: the bound per segment)
  reduce_reference(a, op, axis, dtype, keepdims)  np.<ufunc>.reduce with the contract's dtypes
  check_reduce(res, a, op, axis, dtype, keepdims) assert that res is what reduce must return
  reduceat_slices(indices, n)                     [start, end) of each slice np.ufunc.reduceat takes
  reduceat_python(a, indices, op, dtype)          reduceat of 1-D a, one slice at a time in Python
  check_reduceat(res, a, indices, op, axis, dtype) assert that res is what reduceat must return
                                                 (float add: the bound per slice; mul: len*eps)
  check_segmented_reduce(res, a, flags, op, dtype) the same for segmented_reduce (reduceat of the
                                                 flattened a at the heads)
  linrec_python(a, b, h0, axis, reverse, dtype)   the linear recurrence step by step in long double,
                                                 with m, the same recurrence on |a|, |b|, |h0|
  check_linrec(res, a, b, h0, axis, reverse)      assert that res is what linear_recurrence must
                                                 return: |h - exact| <= 4 (log2 n + 2) eps m
  split_python(a, flags)                          the plain-Python split (one loop, slow)
  split_reference(a, flags)                       the same from NumPy: concatenate(a[f], a[~f])
  check_split(res, a, flags, compact)             assert that res is what split (or compact)
                                                 must return, bit for bit
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


def _same_values(got, expected):
    """Elementwise: the same bits, except that floats may differ in a NaN's bits (at the same
    places) and in the sign of a zero (min/max ties of +0 and -0)."""
    same = bits(got) == bits(expected)
    if np.asarray(expected).dtype.kind == "f":
        nan = np.isnan(expected)
        assert np.array_equal(np.isnan(got), nan), "NaN positions differ"
        same |= nan | ((got == 0) & (expected == 0))
    return same


# ------------------------------------------------------------------------------------------
# Segmented scan.
# ------------------------------------------------------------------------------------------
def segment_heads(flags):
    """flags (any dtype, any shape) -> 1-D bool heads in C order; element 0 is always a head."""
    heads = np.asarray(flags).ravel() != 0
    if heads.size:
        heads[0] = True
    return heads


def segmented_scan_python(a, flags, op="add", exclusive=False, dtype=None):
    """The definition, one element at a time in plain Python (for small inputs): a running value
    that restarts at every head.  Returns a 1-D array of the result dtype."""
    a = np.asarray(a).ravel()
    rt = result_dtype(a.dtype, op, dtype)
    x = a.astype(rt, casting="unsafe")
    heads = segment_heads(flags)
    ufunc = UFUNCS[op]
    ident = identity(op, rt)[()]
    out = np.empty(x.size, rt)
    acc = ident
    with np.errstate(all="ignore"):
        for i in range(x.size):
            if heads[i]:
                acc = ident
            if exclusive:
                out[i] = acc
                acc = ufunc(acc, x[i], dtype=rt)
            else:
                acc = ufunc(acc, x[i], dtype=rt)
                out[i] = acc
    return out


def _segmented_inclusive(x, heads, ufunc):
    """Inclusive segmented scan of 1-D x by doubling: after step k, v[i] combines the values of
    (i - 2^k, i] that lie in i's segment, and f[i] says whether that window reaches a head."""
    v, f = x.copy(), heads.copy()
    d = 1
    with np.errstate(all="ignore"):
        while d < x.size:
            grow = ~f[d:]
            nv = v.copy()
            nv[d:][grow] = ufunc(v[:-d][grow], v[d:][grow])
            f[d:] |= f[:-d]
            v = nv
            d *= 2
    return v


def segmented_scan_reference(a, flags, op="add", exclusive=False, dtype=None, wide=None):
    """What gpuscan.segmented_scan must return, 1-D in C order (floats: up to the rounding of add
    and mul).  `wide`: accumulate in that dtype instead (for the exact float sums)."""
    a = np.asarray(a).ravel()
    rt = result_dtype(a.dtype, op, dtype)
    x = a.astype(rt, casting="unsafe")
    if wide is not None:
        x = x.astype(wide)
    heads = segment_heads(flags)
    inc = _segmented_inclusive(x, heads, UFUNCS[op])
    if not exclusive:
        return inc
    out = np.empty_like(inc)
    out[1:] = inc[:-1]
    out[heads] = identity(op, rt).astype(out.dtype)
    return out


def check_segmented_scan(res, a, flags, op="add", exclusive=False, dtype=None):
    """Assert that res is what segmented_scan(a, flags, op, exclusive=, dtype=) must return:
    a's shape, the contract's dtype; integers, bool and float min/max bit-identical (NaN: any
    NaN); float add within (log2(n)+2)*eps*sum|x| over the segment up to i; float mul within
    (i+1)*eps relative, i counted from the segment's head."""
    a = np.asarray(a)
    rt = result_dtype(a.dtype, op, dtype)
    assert isinstance(res, np.ndarray)
    assert res.shape == a.shape, (res.shape, a.shape)
    assert res.dtype.type is rt.type, (res.dtype, rt)
    got = np.ascontiguousarray(res).ravel()
    heads = segment_heads(flags)
    n = got.size
    if rt.kind == "f" and op in ("add", "mul"):
        x = a.ravel().astype(rt, casting="unsafe")
        wide = np.longdouble if rt.itemsize == 8 else np.float64
        if rt.itemsize == 8 and np.finfo(np.longdouble).nmant < 60:
            raise RuntimeError("no extended long double on this platform")
        exact = segmented_scan_reference(x, heads, op, exclusive, wide=wide)
        eps, eps_w = float(np.finfo(rt).eps), float(np.finfo(wide).eps)
        if op == "add":
            mag = segmented_scan_reference(np.abs(x), heads, "add", exclusive, wide=wide)
            bound = (math.log2(max(n, 1)) + 2) * eps * mag
            bound += (math.log2(max(n, 1)) + 2) * eps_w * mag  # the reference's own rounding
        else:
            # Position within the segment, counted from its head.
            idx = np.arange(n)
            start = np.maximum.accumulate(np.where(heads, idx, 0))
            k = (idx - start + 1).astype(wide)
            bound = k * (eps + 2 * eps_w) * np.abs(exact)
        with np.errstate(all="ignore"):
            err = np.abs(got.astype(wide) - exact)
        bad = ~(err <= bound) & ~((got == exact) | (np.isnan(got) & np.isnan(exact)))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise AssertionError(
                f"float {op} bound violated at {int(bad.sum())} of {n} elements; first at {i}: "
                f"out {got[i]!r}, exact {exact[i]!r}, bound {bound[i]!r}")
        return
    expected = segmented_scan_reference(a, heads, op, exclusive, dtype)
    same = _same_values(got, expected)
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        raise AssertionError(f"differs at {int((~same).sum())} of {n} elements; first at {i}: "
                             f"{got[i]!r}, expected {expected[i]!r}")


# ------------------------------------------------------------------------------------------
# Reduce.
# ------------------------------------------------------------------------------------------
def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        return tuple(ax % ndim for ax in axis)
    return (axis % ndim,)


def reduce_reference(a, op="add", axis=None, dtype=None, keepdims=False):
    """What gpuscan.reduce must return (floats: up to the rounding of add and mul): NumPy's
    ufunc.reduce of the input cast to the contract's accumulation dtype."""
    a = np.asarray(a)
    rt = result_dtype(a.dtype, op, dtype)
    with np.errstate(all="ignore"):
        return UFUNCS[op].reduce(a.astype(rt, casting="unsafe"), axis=axis, dtype=rt,
                                 keepdims=keepdims)


def check_reduce(res, a, op="add", axis=None, dtype=None, keepdims=False):
    """Assert that res is what reduce(a, op, axis=, dtype=, keepdims=) must return: NumPy's type
    of result (a NumPy scalar for a full reduction), shape and dtype; integers, bool and float
    min/max bit-identical (NaN: any NaN); float add within (log2(n)+2)*eps*sum|x| of the exact
    sum (n values reduced), float mul within (n-1)*eps relative."""
    a = np.asarray(a)
    expected = reduce_reference(a, op, axis, dtype, keepdims)
    rt = np.dtype(expected.dtype)
    assert type(res) is type(expected), (type(res), type(expected))
    assert np.shape(res) == np.shape(expected), (np.shape(res), np.shape(expected))
    assert np.asarray(res).dtype.type is rt.type, (np.asarray(res).dtype, rt)
    got = np.asarray(res)
    if rt.kind == "f" and op in ("add", "mul"):
        axes = _axes(axis, a.ndim)
        n = int(np.prod([a.shape[ax] for ax in axes], dtype=np.int64))
        wide = np.longdouble if rt.itemsize == 8 else np.float64
        x = a.astype(rt, casting="unsafe").astype(wide)
        eps, eps_w = float(np.finfo(rt).eps), float(np.finfo(wide).eps)
        with np.errstate(all="ignore"):
            if op == "add":
                exact = np.add.reduce(x, axis=axis, keepdims=keepdims)
                mag = np.add.reduce(np.abs(x), axis=axis, keepdims=keepdims)
                # NumPy's pairwise sum in the wide type: its own error is far below the bound.
                bound = (math.log2(max(n, 1)) + 2) * (eps + eps_w) * mag
            else:
                exact = np.multiply.reduce(x, axis=axis, keepdims=keepdims)
                bound = (max(n, 1) * (eps + 2 * eps_w)) * np.abs(exact)
            err = np.abs(got.astype(wide) - exact)
        ok = (err <= bound) | (got == exact) | (np.isnan(got) & np.isnan(exact))
        assert np.all(ok), (f"float {op} bound violated at {int(np.sum(~ok))} results: "
                            f"got {got[~ok][:3]!r}, exact {exact[~ok][:3]!r}")
        return
    exp = np.asarray(expected)
    assert np.all(_same_values(got, exp)), f"differs: got {got!r}, expected {exp!r}"


def split_python(a, flags):
    """The plain-Python split (one loop, slow): (out, count), flagged values first, in order."""
    a, flags = np.asarray(a).ravel(), np.asarray(flags).ravel()
    first, rest = [], []
    for i in range(a.size):
        (first if flags[i] != 0 else rest).append(a[i])
    out = np.array(first + rest, dtype=a.dtype).reshape(a.size)
    return out, len(first)


def split_reference(a, flags):
    """What gpuscan.split(a, flags) must return: np.concatenate([a[f], a[~f]]), f = flags != 0
    (flattened; NumPy's truth value of a float flag: -0.0 false, NaN true)."""
    a, f = np.asarray(a).ravel(), np.asarray(flags).ravel() != 0
    return np.concatenate([a[f], a[~f]]), int(f.sum())


def check_split(res, a, flags, compact=False):
    """Assert that res is what split (or compact) must return: the same bits, dtype and count."""
    want, count = split_reference(a, flags)
    if compact:
        out = res
        want = want[:count]
    else:
        out, got_count = res
        assert type(got_count) is int, f"count is {type(got_count).__name__}, not int"
        assert got_count == count, f"count {got_count}, expected {count}"
    out = np.asarray(out.get() if hasattr(out, "get") else out)
    assert out.dtype == want.dtype.newbyteorder("="), f"dtype {out.dtype}, expected {want.dtype}"
    assert out.shape == want.shape, f"shape {out.shape}, expected {want.shape}"
    got_bits, want_bits = bits(out), bits(want.astype(out.dtype))
    if not np.array_equal(got_bits, want_bits):
        i = int(np.flatnonzero(got_bits != want_bits)[0])
        raise AssertionError(f"first difference at {i} of {out.size}: {out[i]!r}, expected "
                             f"{want[i]!r} (count {count})")


# ------------------------------------------------------------------------------------------
# Reduceat and segmented reduce.
# ------------------------------------------------------------------------------------------
def reduceat_slices(indices, n):
    """The [start, end) of each slice np.ufunc.reduceat reduces: from an index to the next one
    when that is larger (the last index: to n), else the one value at the index."""
    idx = np.asarray(indices, dtype=np.int64)
    ends = np.empty_like(idx)
    if idx.size:
        nxt = idx[1:]
        ends[:-1] = np.where(nxt > idx[:-1], nxt, idx[:-1] + 1)
        ends[-1] = n
    return idx, ends


def reduceat_python(a, indices, op="add", dtype=None):
    """reduceat of 1-D a, one slice at a time in plain Python (for small inputs)."""
    a = np.asarray(a)
    rt = result_dtype(a.dtype, op, dtype)
    x = a.astype(rt, casting="unsafe")
    starts, ends = reduceat_slices(indices, a.size)
    out = np.empty(len(starts), rt)
    with np.errstate(all="ignore"):
        for i, (s, e) in enumerate(zip(starts, ends)):
            acc = x[s]
            for j in range(s + 1, e):
                acc = UFUNCS[op](acc, x[j], dtype=rt)
            out[i] = acc
    return out


def _slice_sums(x, starts, ends, wide):
    """The exact sums (float64 input: math.fsum, correctly rounded) of x[:, s:e] per slice, and
    the sums of |x|, each (rows, slices)."""
    rows = x.shape[0]
    exact = np.empty((rows, len(starts)), wide)
    mag = np.empty((rows, len(starts)), np.float64)
    for r in range(rows):
        for i, (s, e) in enumerate(zip(starts, ends)):
            v = x[r, s:e]
            exact[r, i] = math.fsum(v.astype(np.float64)) if wide is np.float64 else \
                np.sum(v.astype(wide))
            mag[r, i] = math.fsum(np.abs(v.astype(np.float64)))
    return exact, mag


def check_reduceat(res, a, indices, op="add", axis=0, dtype=None):
    """Assert that res is what reduceat(a, indices, op, axis=, dtype=) must return: a's shape
    with len(indices) along axis, the contract's dtype; integers, bool and float min/max
    bit-identical to np.<ufunc>.reduceat (NaN: any NaN, zeros of either sign); float add within
    (log2(len)+2)*eps*sum|x| of each slice's exact sum; float mul within len*eps relative."""
    a = np.asarray(a)
    idx = np.asarray(indices, dtype=np.int64).ravel()
    rt = result_dtype(a.dtype, op, dtype)
    axis = axis % a.ndim
    want_shape = a.shape[:axis] + (idx.size,) + a.shape[axis + 1:]
    assert isinstance(res, np.ndarray)
    assert res.shape == want_shape, (res.shape, want_shape)
    assert res.dtype.type is rt.type, (res.dtype, rt)
    x = np.moveaxis(a.astype(rt, casting="unsafe"), axis, -1)
    x = x.reshape(-1, x.shape[-1]) if x.size else x.reshape(-1, a.shape[axis])
    got = np.moveaxis(res, axis, -1).reshape(x.shape[0], idx.size)
    if rt.kind == "f" and op in ("add", "mul") and idx.size:
        starts, ends = reduceat_slices(idx, a.shape[axis])
        lens = (ends - starts).astype(np.float64)
        eps = float(np.finfo(rt).eps)
        if op == "add":
            exact, mag = _slice_sums(x, starts, ends, np.float64)
            # float64 slices are correctly rounded (half an ulp of the sum); float32 slices are
            # summed in float64 (len * 2^-53 of sum|x|).
            slack = np.abs(exact) * 2.0**-52 + mag * lens * 2.0**-53
            bound = (np.log2(lens) + 2) * eps * mag + slack
        else:
            wide = np.longdouble if rt.itemsize == 8 else np.float64
            if rt.itemsize == 8 and np.finfo(np.longdouble).nmant < 60:
                raise RuntimeError("no extended long double on this platform")
            exact = np.stack([np.multiply.reduceat(row.astype(wide), idx) for row in x]) \
                if x.shape[0] else np.empty((0, idx.size), wide)
            bound = lens * (eps + 2 * float(np.finfo(wide).eps)) * np.abs(exact)
        with np.errstate(all="ignore"):
            err = np.abs(got.astype(exact.dtype) - exact)
        bad = ~(err <= bound) & ~((got == exact) | (np.isnan(got) & np.isnan(exact)))
        if bad.any():
            r, i = np.argwhere(bad)[0]
            raise AssertionError(
                f"float {op} bound violated at {int(bad.sum())} of {bad.size} slices; first at "
                f"(row {r}, slice {i}) [{starts[i]}, {ends[i]}): out {got[r, i]!r}, exact "
                f"{exact[r, i]!r}, bound {bound[r, i]!r}")
        return
    with np.errstate(all="ignore"):
        expected = UFUNCS[op].reduceat(a.astype(rt, casting="unsafe"), idx, axis=axis, dtype=rt) \
            if idx.size else np.empty(want_shape, rt)
    same = _same_values(res, expected)
    if not same.all():
        i = tuple(int(v) for v in np.argwhere(~same)[0])
        raise AssertionError(f"differs at {int((~same).sum())} of {same.size}; first at {i}: "
                             f"{res[i]!r}, expected {expected[i]!r}")


def check_segmented_reduce(res, a, flags, op="add", dtype=None):
    """Assert that res is what segmented_reduce(a, flags, op, dtype=) must return: reduceat of
    the flattened a at the segment heads (element 0 and every nonzero flag)."""
    heads = np.flatnonzero(segment_heads(flags))
    check_reduceat(res, np.asarray(a).ravel(), heads, op, 0, dtype)


# ------------------------------------------------------------------------------------------
# Linear recurrence.
# ------------------------------------------------------------------------------------------
def linrec_python(a, b, h0=None, axis=-1, reverse=False):
    """h[t] = a[t] h[t-1] + b[t] along axis, step by step in long double (every row at once),
    and m, the same recurrence on |a|, |b|, |h0|.  Returns (h, m) in long double, a's shape."""
    if np.finfo(np.longdouble).nmant < 60:
        raise RuntimeError("no extended long double on this platform")
    a = np.moveaxis(np.asarray(a), axis, -1).astype(np.longdouble)
    b = np.moveaxis(np.asarray(b), axis, -1).astype(np.longdouble)
    shape = a.shape
    n = shape[-1] if a.ndim else 1
    a, b = a.reshape(-1, n), b.reshape(-1, n)
    h = np.zeros(a.shape[0], np.longdouble)
    if h0 is not None:
        h = h + np.asarray(h0, dtype=np.longdouble).reshape(-1)
    m = np.abs(h)
    hs, ms = np.empty_like(a), np.empty_like(a)
    order = range(n - 1, -1, -1) if reverse else range(n)
    with np.errstate(all="ignore"):
        for t in order:
            h = a[:, t] * h + b[:, t]
            m = np.abs(a[:, t]) * m + np.abs(b[:, t])
            hs[:, t], ms[:, t] = h, m
    hs, ms = hs.reshape(shape), ms.reshape(shape)
    return np.moveaxis(hs, -1, axis), np.moveaxis(ms, -1, axis)


def check_linrec(res, a, b, h0=None, axis=-1, reverse=False, dtype=None):
    """Assert that res is what linear_recurrence(a, b, axis=, h0=, reverse=) must return: a's
    shape, float64 if a or b is (else float32, or `dtype`); NaN where the step-by-step loop has
    NaN, its infinities where it overflows, and elsewhere |h - exact| <= 4 (log2 n + 2) eps m
    (plus the long double reference's own error, (t+1) eps_ld m)."""
    a, b = np.asarray(a), np.asarray(b)
    rt = np.dtype(dtype) if dtype is not None else np.result_type(a.dtype, b.dtype)
    assert isinstance(res, np.ndarray)
    assert res.shape == a.shape, (res.shape, a.shape)
    assert res.dtype.type is rt.type, (res.dtype, rt)
    # The recurrence runs in rt: its inputs are rounded to rt first.
    exact, m = linrec_python(a.astype(rt), b.astype(rt),
                             None if h0 is None else np.asarray(h0).astype(rt), axis, reverse)
    n = a.shape[axis] if a.ndim else 1
    t = np.moveaxis(np.indices(a.shape)[axis], 0, 0) if a.ndim else np.zeros(())
    t = (n - 1 - t) if reverse else t
    eps, eps_ld = float(np.finfo(rt).eps), float(np.finfo(np.longdouble).eps)
    bound = 4 * (math.log2(max(n, 1)) + 2) * eps * m + (t + 1) * eps_ld * m
    with np.errstate(all="ignore"):
        rounded = exact.astype(rt)
        err = np.abs(res.astype(np.longdouble) - exact)
    nan = np.isnan(exact)
    inf = np.isinf(rounded) & ~nan
    ok = np.where(nan, np.isnan(res), np.where(inf, res == rounded, err <= bound))
    if not ok.all():
        i = tuple(int(v) for v in np.argwhere(~ok)[0])
        raise AssertionError(
            f"linear_recurrence off at {int((~ok).sum())} of {ok.size}; first at {i}: out "
            f"{res[i]!r}, exact {exact[i]!r}, m {m[i]!r}, bound {bound[i]!r}")
