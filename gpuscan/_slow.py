"""gpuscan's primitives written again in plain NumPy: the slow twin that checks the fast ones.

Level: Python package (private).  bottleneck's ``slow/`` idea: one NumPy twin of each public
function, for the code that checks gpuscan outside the test suite - the demo
(``python -m gpuscan``, whose NumPy column times these twins), the sanitizer driver
(``tools/sanitize_run.py``) and the benchmarks' checks (``benchmarks/``).  The tests keep an
oracle of their own (``tests/reference.py``), written apart, so that one mistake here cannot
hide the same mistake in gpuscan.

A twin takes NumPy arrays and returns what gpuscan returns for the same call: the same dtype
and shape, and for integers, bool, min, max and the bitwise operators the same values.  It is
NumPy's own function where NumPy has one (``np.cumsum``, ``ufunc.reduceat``, ``np.histogram``,
...), else a plain NumPy formulation (segmented scans, segmented reductions, the linear
recurrence, split).  A twin computes in the dtype it is given; for float add and mul, whose
results depend on the grouping, the checks below call the twin on the values widened
(:func:`wide`) for the exact result, and on their magnitudes for the contract's bound:

    |result - exact| <= (log2(n) + 2) * eps * sum(|x|) over the n values combined

(the linear recurrence: 4 * (log2(n) + 2) * eps * m, m the recurrence of |a|, |b| and |h0|;
float mul: (i + 1) * eps * |exact| at element i).  The wide reference's own error, at most
n * eps_wide * sum(|x|), is added to the bound, so a pass is never owed to the reference.
"""

from __future__ import annotations

import math

import numpy as np

from gpuscan._ops import UFUNCS

__all__ = [
    "scan", "segmented_scan", "reduce", "reduceat", "segmented_reduce", "linear_recurrence",
    "split", "compact", "histogram", "bincount", "sort", "argsort",
    "identity", "wide", "first_difference", "sum_error", "scan_error", "reduce_error",
    "segmented_scan_error", "segments_error", "mul_scan_problem", "recurrence_error",
]

# NumPy has these as they are: the twin is NumPy.
histogram = np.histogram
bincount = np.bincount


# ---- helpers ------------------------------------------------------------------------------
def identity(op, dtype):
    """op's identity in dtype: what an exclusive scan starts each segment with."""
    dtype = np.dtype(dtype)
    if op in ("add", "or", "xor"):
        return np.zeros((), dtype)[()]
    if op == "mul":
        return np.ones((), dtype)[()]
    if op == "and":
        return np.array(True if dtype.kind == "b" else -1).astype(dtype)[()]
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    if dtype.kind == "b":
        return np.bool_(op == "min")
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


def wide(dtype):
    """The dtype a float reference is computed in: float64 for float16/32, long double for
    float64."""
    return np.dtype(np.float64 if np.dtype(dtype).itemsize < 8 else np.longdouble)


def _op_name(op):
    if isinstance(op, str):
        return op
    for name, ufunc in UFUNCS.items():
        if op is ufunc:
            return name
    raise ValueError(f"unknown op {op!r}")


def _heads(flags, size):
    """Segment heads of C-ordered flags: nonzero, and element 0 always."""
    heads = np.asarray(flags).ravel() != 0
    if heads.size != size:
        raise ValueError(f"flags of {heads.size} elements for {size} values")
    if size:
        heads[0] = True
    return heads


def _shift(inclusive, first, axis):
    """An exclusive scan from an inclusive one: `first`, then all but the last value."""
    out = np.empty_like(inclusive)
    lead = [slice(None)] * out.ndim
    lead[axis] = slice(0, 1)
    out[tuple(lead)] = first
    dst, src = list(lead), list(lead)
    dst[axis], src[axis] = slice(1, None), slice(None, -1)
    out[tuple(dst)] = inclusive[tuple(src)]
    return out


# ---- the primitives -----------------------------------------------------------------------
def scan(x, op="add", exclusive=False, axis=None, dtype=None):
    """gpuscan.scan: ``np.cumsum``/``np.cumprod`` (with their dtype rule) or ufunc.accumulate;
    exclusive shifts by one and starts from op's identity.  A float16 sum or product is
    accumulated in float64 and rounded once (NumPy's float16 accumulator stalls at 2048)."""
    op = _op_name(op)
    x = np.asarray(x)
    if axis is None:
        x, axis = x.ravel(), 0
    if op in ("add", "mul"):
        acc = np.cumsum if op == "add" else np.cumprod
        out_dtype = acc(np.zeros(1, x.dtype), dtype=dtype).dtype
        if out_dtype == np.float16:
            res = acc(x, axis=axis, dtype=np.float64).astype(np.float16)
        else:
            res = acc(x, axis=axis, dtype=dtype)
    else:
        res = UFUNCS[op].accumulate(x if dtype is None else x.astype(dtype), axis=axis)
    if exclusive and res.size:
        res = _shift(res, identity(op, res.dtype), axis)
    return res


def segmented_scan(x, flags, op="add", exclusive=False, dtype=None):
    """gpuscan.segmented_scan: the scan of each segment alone (x and flags in C order).

    An integer or bool sum is the running sum less the sum before each head (exact in the
    wrapping arithmetic); every other case scans the segments one by one."""
    op = _op_name(op)
    x = np.asarray(x)
    flat = x.ravel()
    heads = _heads(flags, flat.size)
    if flat.size == 0:
        return scan(x, op, exclusive, dtype=dtype).reshape(x.shape)
    starts = np.flatnonzero(heads)
    inc = scan(flat, op, dtype=dtype)
    if op == "add" and inc.dtype.kind in "biu":
        before = np.zeros(starts.size, inc.dtype)
        before[1:] = inc[starts[1:] - 1]
        with np.errstate(over="ignore"):
            res = inc - np.repeat(before, np.diff(np.append(starts, flat.size)))
    else:
        res = np.concatenate([scan(s, op, dtype=dtype) for s in np.split(flat, starts[1:])])
    if exclusive:
        res = _shift(res, identity(op, res.dtype), 0)
        res[heads] = identity(op, res.dtype)
    return res.reshape(x.shape)


def reduce(x, op="add", axis=None, dtype=None, keepdims=False):
    """gpuscan.reduce: ufunc.reduce, with NumPy's dtype rule (add and mul widen integers)."""
    return UFUNCS[_op_name(op)].reduce(np.asarray(x), axis=axis, dtype=dtype, keepdims=keepdims)


def reduceat(x, indices, op="add", axis=0, dtype=None):
    """gpuscan.reduceat: ufunc.reduceat, in reduce's dtype (add and mul widen integers)."""
    op = _op_name(op)
    x = np.asarray(x)
    if dtype is None:
        dtype = reduce(np.zeros(1, x.dtype), op).dtype
    return UFUNCS[op].reduceat(x, np.asarray(indices, np.intp), axis=axis, dtype=dtype)


def segmented_reduce(x, flags, op="add", dtype=None):
    """gpuscan.segmented_reduce: reduceat of x (C order) at its heads."""
    flat = np.asarray(x).ravel()
    starts = np.flatnonzero(_heads(flags, flat.size))
    if flat.size == 0:
        return reduceat(np.zeros(1, flat.dtype), [0], op, dtype=dtype)[:0]
    return reduceat(flat, starts, op, dtype=dtype)


def split(x, flags):
    """gpuscan.split: the flagged values then the others, each in order, and the count."""
    x = np.asarray(x).ravel()
    m = np.asarray(flags).ravel() != 0
    return np.concatenate((x[m], x[~m])), int(np.count_nonzero(m))


def compact(x, flags):
    """gpuscan.compact: the flagged values, in order."""
    return np.asarray(x).ravel()[np.asarray(flags).ravel() != 0]


def argsort(x, axis=-1, descending=False):
    """gpuscan.argsort: np.argsort(kind="stable"); descending, the stable argsort of an
    order-reversing map of the keys (-x for floats, which keeps NaNs last and the zeros equal;
    ~x for integers and bool, which never overflows)."""
    x = np.asarray(x)
    if axis is None:
        x, axis = x.ravel(), 0
    key = (-x if x.dtype.kind == "f" else ~x) if descending else x
    return np.argsort(key, axis=axis, kind="stable")


def sort(x, axis=-1, descending=False):
    """gpuscan.sort: np.sort(kind="stable"); descending, x's values in argsort's order."""
    if not descending:
        return np.sort(x, axis=axis, kind="stable")
    x = np.asarray(x)
    if axis is None:
        x, axis = x.ravel(), 0
    return np.take_along_axis(x, argsort(x, axis, True), axis)


def linear_recurrence(a, b, axis=-1, h0=None, reverse=False):
    """gpuscan.linear_recurrence: h[t] = a[t] h[t-1] + b[t] along axis, from h0 (0 if None),
    computed in a's and b's common dtype.

    In blocks of about sqrt(n) steps, every block of every recurrence at once: each block's
    own recurrence from 0 and the product of its a's, then the carries from block to block,
    then each block's values with its carry in.  Meant for recurrences whose products stay
    finite (an a product that overflows where the carry is 0 is taken as 0)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"a {a.shape} and b {b.shape}")
    dt = np.result_type(a.dtype, b.dtype, np.float32)
    a = np.moveaxis(a.astype(dt), axis, -1)
    b = np.moveaxis(b.astype(dt), axis, -1)
    if reverse:
        a, b = a[..., ::-1], b[..., ::-1]
    shape = a.shape
    n = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    carry = np.zeros(rows, dt) if h0 is None else \
        np.broadcast_to(np.asarray(h0, dt), shape[:-1]).reshape(rows).copy()
    if n == 0 or rows == 0:
        h = np.empty(shape, dt)
    else:
        block = max(1, math.isqrt(n))
        nb = -(-n // block)
        pad = nb * block - n            # identity steps (a = 1, b = 0) after the last one
        av = np.concatenate([a.reshape(rows, n), np.ones((rows, pad), dt)], 1)
        bv = np.concatenate([b.reshape(rows, n), np.zeros((rows, pad), dt)], 1)
        av, bv = av.reshape(rows, nb, block), bv.reshape(rows, nb, block)
        local = np.empty_like(bv)       # each block's recurrence from 0
        prod = np.empty_like(av)        # each block's product of a up to the step
        run, p = np.zeros((rows, nb), dt), np.ones((rows, nb), dt)
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(block):
                run = av[:, :, t] * run + bv[:, :, t]
                p = p * av[:, :, t]
                local[:, :, t], prod[:, :, t] = run, p
            carry_in = np.empty((rows, nb), dt)
            for k in range(nb):
                carry_in[:, k] = carry
                carry = local[:, k, -1] + prod[:, k, -1] * carry
            term = prod * carry_in[:, :, None]
            h = local + np.where(carry_in[:, :, None] == 0, 0, term)
        h = h.reshape(rows, nb * block)[:, :n].reshape(shape)
    if reverse:
        h = h[..., ::-1]
    return np.ascontiguousarray(np.moveaxis(h, -1, axis))


# ---- checks: None (or a ratio <= 1) when right, else what is wrong --------------------------
def first_difference(result, reference):
    """None when result has reference's dtype, shape and values (NaN equal to NaN; floats bit
    for bit, so -0.0 differs from 0.0), else a sentence saying where they part."""
    res, ref = np.asarray(result), np.asarray(reference)
    if res.dtype != ref.dtype or res.shape != ref.shape:
        return f"result {res.dtype}{res.shape}, reference {ref.dtype}{ref.shape}"
    if ref.dtype.kind == "f":
        same = (res == ref) & (np.signbit(res) == np.signbit(ref)) | (np.isnan(res) & np.isnan(ref))
    else:
        same = res == ref
    bad = np.flatnonzero(~np.asarray(same).ravel())
    if bad.size == 0:
        return None
    i = bad[0]
    return (f"{bad.size} of {res.size} differ, the first at flat index {i}: "
            f"{res.flat[i].item()!r}, reference {ref.flat[i].item()!r}")


def sum_error(result, exact, magnitude, n, eps):
    """The largest |result - exact| over its bound, (log2(n) + 2) * eps * magnitude plus the
    wide reference's own n * eps_wide * magnitude; n may be an array (segment lengths).
    inf where the bound is 0 and the result is not exact; NaN matching NaN counts as exact."""
    res = np.asarray(result).astype(exact.dtype)
    n = np.maximum(np.asarray(n, np.float64), 1)
    bound = ((np.log2(n) + 2) * eps + n * np.finfo(exact.dtype).eps) * magnitude
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(res - exact)
    err = np.where(np.isnan(res) & np.isnan(exact), 0, err)
    err = np.where(res == exact, 0, err)        # equal infinities
    if np.any(err[bound == 0] != 0):
        return math.inf
    nz = bound > 0
    return float(np.max(err[nz] / bound[nz])) if np.any(nz) else 0.0


def scan_error(result, x, exclusive=False, axis=None, n=None):
    """A float sum scan (gpuscan.scan, op add) against the bound, as a ratio (<= 1 passes).
    n: the scan length the bound is for, when result and x are the first values of a longer
    scan (default: x's length along axis)."""
    x = np.asarray(x)
    if axis is None:
        x, axis, result = x.ravel(), 0, np.asarray(result).ravel()
    w = x.astype(wide(x.dtype))
    exact = scan(w, "add", exclusive, axis=axis)
    magnitude = scan(np.abs(w), "add", exclusive, axis=axis)
    return sum_error(result, exact, magnitude, n or x.shape[axis], np.finfo(x.dtype).eps)


def reduce_error(result, x, axis=None):
    """A float sum reduction (gpuscan.reduce) against the bound, as a ratio."""
    x = np.asarray(x)
    w = x.astype(wide(x.dtype))
    n = x.size if axis is None else x.shape[axis]
    return sum_error(result, np.sum(w, axis=axis), np.sum(np.abs(w), axis=axis), n,
                     np.finfo(x.dtype).eps)


def segmented_scan_error(result, x, flags, exclusive=False):
    """A float segmented sum scan against the bound, n being each element's segment length."""
    x = np.asarray(x).ravel()
    w = x.astype(wide(x.dtype))
    heads = _heads(flags, x.size)
    starts = np.flatnonzero(heads)
    lengths = np.repeat(np.diff(np.append(starts, x.size)), np.diff(np.append(starts, x.size)))
    return sum_error(np.asarray(result).ravel(), segmented_scan(w, heads, "add", exclusive),
                     segmented_scan(np.abs(w), heads, "add", exclusive), lengths,
                     np.finfo(x.dtype).eps)


def segments_error(result, x, starts):
    """Float sums of the slices of 1-D x that begin at the strictly increasing `starts` (each to
    the next start, the last to the end: reduceat at increasing indices, segmented_reduce at its
    heads) against the bound, n being each slice's length; as a ratio."""
    x = np.asarray(x).ravel()
    starts = np.asarray(starts, np.intp)
    res = np.asarray(result).ravel()
    if res.size != starts.size:
        return math.inf
    if starts.size == 0:
        return 0.0
    w = x.astype(wide(x.dtype))
    lengths = np.diff(np.append(starts, x.size))
    return sum_error(res, np.add.reduceat(w, starts), np.add.reduceat(np.abs(w), starts),
                     lengths, np.finfo(x.dtype).eps)


def mul_scan_problem(result, x):
    """A float product scan against the contract's (i + 1) * eps * |exact| at element i."""
    x = np.asarray(x).ravel()
    res = np.asarray(result).ravel().astype(wide(x.dtype))
    exact = np.multiply.accumulate(x.astype(wide(x.dtype)))
    eps = np.finfo(x.dtype).eps
    bad = np.flatnonzero(~(np.abs(res - exact) <= (np.arange(x.size) + 1) * eps * np.abs(exact)))
    return f"{bad.size} past the mul bound, the first at {bad[0]}" if bad.size else None


def recurrence_error(result, a, b, axis=-1, h0=None, reverse=False):
    """A linear recurrence against 4 * (log2(n) + 2) * eps * m, m the recurrence of |a|, |b|
    and |h0|, exact the recurrence in the wide dtype; as a ratio."""
    a, b = np.asarray(a), np.asarray(b)
    dt = np.result_type(a.dtype, b.dtype, np.float32)
    w = wide(dt)
    exact = linear_recurrence(a.astype(w), b.astype(w), axis, h0, reverse)
    mag = linear_recurrence(np.abs(a).astype(w), np.abs(b).astype(w), axis,
                            None if h0 is None else np.abs(np.asarray(h0, w)), reverse)
    return sum_error(result, exact, 4 * mag, a.shape[axis] if a.ndim else 1, np.finfo(dt).eps)
