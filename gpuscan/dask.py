"""gpuscan.dask: gpuscan's primitives over dask arrays, one chunk at a time on the workers.

Level: Python package (an optional layer over the extension).  Needs Dask
(``pip install "gpuscan[dask]"``); ``import gpuscan`` never imports this module.

Every function here is lazy: it checks its arguments at once (the same exceptions as the
single-array function, raised here rather than inside a worker), builds a task graph and returns
dask arrays.  Each chunk is run by gpuscan on the worker that holds it: NumPy chunks on that
worker's backend (the CUDA backend where it has a GPU, else the multi-threaded CPU one), CuPy
chunks on its GPU, where the results stay (CuPy in, CuPy out: no host copy).

The results are gpuscan's single-array results on the whole array: integers (and float
min/max) bit for bit, a float sum within the contract's bound for the whole length, and the
same bits on every run for the same chunking and method.

``scan``, ``segmented_scan``, ``reduce``, ``histogram``, ``bincount``, ``compact`` and ``split``
are the single-array functions over dask arrays, ``sort`` and ``argsort`` sort each chunk's
rows where they lie (along an axis whose chunks span it whole); ``gpu_cluster`` makes a local
cluster of one worker per GPU.
"""

import functools
import itertools
import math
import os

import numpy as np

try:
    import dask.array as da
    from dask.array.utils import meta_from_array
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        f"gpuscan.dask needs Dask (dask.array): {exc}.  Install it with "
        "`python3 -m pip install \"gpuscan[dask]\"` (from a clone: `pip install -e \".[dask]\"`)."
    ) from exc

import gpuscan
from gpuscan._ops import UFUNCS, op_name

__all__ = ["argsort", "bincount", "compact", "gpu_cluster", "histogram", "reduce", "scan",
           "segmented_scan", "sort", "split"]

# Partial results (histogram and bincount counts, split counts) are summed in a tree that joins
# this many at each level: the depth is log8(chunks) and no task holds more than eight partials.
_SPLIT_EVERY = 8


# ================================================================================================
# Arguments: checked on the client, by gpuscan itself where it can be
# ================================================================================================
def _as_dask(x, name="x"):
    """x as a dask array; masked chunks are refused (their mask would be dropped)."""
    if not isinstance(x, da.Array):
        x = da.asarray(x)
    if isinstance(x._meta, np.ma.MaskedArray):
        raise TypeError(f"gpuscan.dask: {name} is a masked dask array; gpuscan does not take "
                        "masks (it would drop them): fill it first (x.filled(...))")
    return x


def _probe(x, shape=None):
    """A small NumPy array of x's dtype (shape: all ones of x's ndim, or `shape`) on which the
    single-array function is called to check the arguments and find the result's dtype."""
    return np.zeros((1,) * x.ndim if shape is None else shape, dtype=x.dtype)


def _same_shape(x, flags):
    """x and flags (dask arrays) must have the same shape, as in the single-array functions."""
    if x.shape != flags.shape:
        raise ValueError(f"flags has shape {flags.shape} but a has shape {x.shape}")


def _aligned(x, other):
    """`other` rechunked to x's chunks (same shape), so blocks pair up."""
    return other if other.chunks == x.chunks else other.rechunk(x.chunks)


def _flat(x):
    """x flattened in C order (dask rechunks so that every block is a run of the flat order)."""
    return x if x.ndim == 1 else x.reshape(-1)


def _meta(x, dtype, ndim):
    return meta_from_array(x._meta, ndim=ndim, dtype=dtype)


# ================================================================================================
# Chunk-level helpers: run on the workers, NumPy or CuPy chunks
# ================================================================================================
def _xp(a):
    """The array module of a chunk: CuPy for CuPy chunks, else NumPy."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy  # type: ignore[import-not-found, unused-ignore]

        return cupy
    return np


def _like(result, chunk):
    """gpuscan's result in the chunk's type: a DeviceArray (from CuPy chunks) becomes a CuPy
    array over the same memory (no copy), and a NumPy array from a CuPy chunk (an Operator's
    reduction of a device array comes to the host) goes back to the device; a NumPy chunk's
    results, and scalars, are returned as they are."""
    xp = _xp(chunk)
    if isinstance(result, gpuscan.DeviceArray) or (xp is not np and isinstance(result, np.ndarray)):
        return xp.asarray(result)
    return result


def _two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth), elementwise; e is 0 where
    s is inf or NaN (s alone is then IEEE's answer)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, _xp(s).where(_xp(s).isfinite(s), e, 0)


class _Carry:
    """A combined value of the carry chain: `hi` (and, for a float add, the rounding error
    `lo` that hi + lo leaves out, so a chain of many chunks still rounds once)."""

    __slots__ = ("hi", "lo")

    def __init__(self, hi, lo=None):
        self.hi, self.lo = hi, lo

    def value(self):
        if self.lo is None:
            return self.hi
        with np.errstate(all="ignore"):
            return self.hi + self.lo


class _Op:
    """An op as the tasks hold it (names, ufuncs, a gpuscan.Operator, which pickles by its
    constructor's arguments: gpuscan's caches then find its compiled code on each worker);
    `dtype` is the result's, passed to gpuscan only for built-in ops (an Operator fixes its own);
    `ufunc` the op's NumPy ufunc, if any."""

    __slots__ = ("op", "dtype", "kw", "ufunc", "compensated")

    def __init__(self, op, dtype):
        self.op, self.dtype = op, np.dtype(dtype)
        self.kw = {} if isinstance(op, gpuscan.Operator) else {"dtype": self.dtype}
        self.ufunc = op if isinstance(op, np.ufunc) else UFUNCS.get(op_name(op))
        # A float sum carries its rounding error from chunk to chunk (TwoSum).
        self.compensated = bool(self.kw) and op_name(op) == "add" and self.dtype.kind == "f"

    def __getstate__(self):
        return self.op, self.dtype

    def __setstate__(self, state):
        self.__init__(*state)

    def __dask_tokenize__(self):
        op = self.op
        if isinstance(op, gpuscan.Operator):
            op = ("Operator", op.combine, str(op.dtype), repr(op.identity), op.name)
        return op, self.dtype.str, str(self.dtype)


def _combine(op, axis, a, b):
    """a op b for carries (a comes first in the array) along axis; None is the empty carry."""
    if a is None:
        return b
    if b is None:
        return a
    with np.errstate(all="ignore"):     # IEEE results (inf, NaN) as gpuscan's, no warnings
        if op.compensated:
            s, e = _two_sum(a.hi, b.hi)
            return _Carry(s, a.lo + b.lo + e)
        pair = _xp(a.hi).concatenate([a.hi, b.hi], axis=axis)
        return _Carry(_like(gpuscan.reduce(pair, op.op, axis=axis, keepdims=True, **op.kw),
                            a.hi))


def _exclusive_sequential(combine, totals):
    """carries[k] = totals[0] op ... op totals[k-1], in order (None for k = 0)."""
    carries, carry = [], None
    for total in totals:
        carries.append(carry)
        carry = combine(carry, total)
    return carries


def _exclusive_blelloch(combine, totals):
    """The same carries from a work-efficient tree: pairs are combined going up (the up-sweep),
    then each pair's carry is handed to its left member and combined with the left member's
    total for the right one (the down-sweep)."""
    if len(totals) <= 1:
        return [None] * len(totals)
    pairs = [combine(totals[i], totals[i + 1]) for i in range(0, len(totals) - 1, 2)]
    if len(totals) % 2:
        pairs.append(totals[-1])
    above = _exclusive_blelloch(combine, pairs)
    return [above[i // 2] if i % 2 == 0 else combine(above[i // 2], totals[i - 1])
            for i in range(len(totals))]


_CARRY_METHODS = {"sequential": _exclusive_sequential, "blelloch": _exclusive_blelloch}


def _scan_total(block, op, axis):
    """The op-total of a block along axis (keepdims), or None for a block empty along it."""
    if block.shape[axis] == 0:
        return None
    total = _like(gpuscan.reduce(block, op.op, axis=axis, keepdims=True, **op.kw), block)
    return _Carry(total, _xp(total).zeros_like(total) if op.compensated else None)


def _scan_carries(totals, op, axis, method):
    """The carry-in of every chunk of a row (None for the first) from the totals of all but
    the last: one task for the row, a few values per chunk."""
    return _CARRY_METHODS[method](functools.partial(_combine, op, axis), totals + [None])


def _with_carry(block, carry, axis, dtype):
    """A new array of `dtype`: the carry, then the block, along axis (block cast as NumPy
    casts a scan's input to its dtype)."""
    shape = list(block.shape)
    shape[axis] += 1
    buf = _xp(block).empty(shape, dtype)
    first = [slice(None)] * block.ndim
    rest = list(first)
    first[axis], rest[axis] = slice(0, 1), slice(1, None)
    buf[tuple(first)] = carry
    buf[tuple(rest)] = block
    return buf, tuple(rest)


def _scan_block(block, carries, k, op, axis, exclusive):
    """gpuscan.scan of one block (block k of its row) continuing the blocks before it: the
    block is scanned and its carry combined into every value in place (an op with a ufunc),
    or the carry is put before the block and the two scanned as one, in place."""
    carry = None if carries is None else carries[k]
    if carry is None or block.shape[axis] == 0 or op.ufunc is not None:
        out = _like(gpuscan.scan(block, op.op, axis=axis, exclusive=exclusive, **op.kw), block)
        if carry is not None and out.size:
            with np.errstate(all="ignore"):
                op.ufunc(out, carry.value(), out=out)
        return out
    buf, rest = _with_carry(block, carry.value(), axis, op.dtype)
    return _like(gpuscan.scan(buf, op.op, axis=axis, exclusive=exclusive, out=buf),
                 block)[rest]


def _first_head(flags):
    """Index of the first nonzero flag of a 1-D block, or its length when there is none."""
    nz = flags != 0
    i = int(nz.argmax()) if nz.size else 0
    return i if nz.size and bool(nz[i]) else nz.size


def _seg_summary(block, flags, op):
    """(has a head, op-total from the block's last head, or from its start, to its end), as a
    _SegCarry; None for an empty block."""
    if block.size == 0:
        return None
    rev = flags[::-1] != 0      # contiguous: its argmax is a fast scan, the view's is not
    i = int(rev.argmax())
    has_head = bool(rev[i])
    tail = block[rev.size - 1 - i:] if has_head else block
    total = _like(gpuscan.reduce(tail, op.op, keepdims=True, **op.kw), block)
    lo = _xp(total).zeros_like(total) if op.compensated else None
    return _SegCarry(has_head, _Carry(total, lo))


class _SegCarry:
    """A carry of the segmented scan: whether a head was crossed, and the running value since
    the last head crossed (or since the start)."""

    __slots__ = ("head", "carry")

    def __init__(self, head, carry):
        self.head, self.carry = head, carry


def _seg_combine(op, a, b):
    """The segmented operator: b restarts the value when it holds a head."""
    if a is None:
        return b
    if b is None or b.head:
        return a if b is None else b
    return _SegCarry(a.head, _combine(op, 0, a.carry, b.carry))


def _seg_carries(summaries, op):
    """As _scan_carries, from the summaries of all blocks but the last."""
    return _exclusive_sequential(functools.partial(_seg_combine, op), summaries + [None])


def _seg_block(block, flags, carries, k, op, exclusive):
    """gpuscan.segmented_scan of one block; the values before its first head continue the
    segment that the carry ends: the carry is combined into them in place (an op with a
    ufunc), or put before the block, the values up to the first head joining its segment, and
    the two scanned as one, in place."""
    carry = None if carries is None else carries[k]
    if carry is None or block.size == 0 or op.ufunc is not None:
        out = _like(gpuscan.segmented_scan(block, flags, op.op, exclusive=exclusive,
                                           **op.kw), block)
        first = 0 if carry is None else _first_head(flags)
        if first:
            head = out[:first]
            with np.errstate(all="ignore"):
                op.ufunc(head, carry.carry.value(), out=head)
        return out
    buf, rest = _with_carry(block, carry.carry.value(), 0, op.dtype)
    heads, _ = _with_carry(flags, 1, 0, flags.dtype)
    return _like(gpuscan.segmented_scan(buf, heads, op.op, exclusive=exclusive, out=buf),
                 block)[rest]


# ================================================================================================
# Task graphs
# ================================================================================================
class _Graph:
    """A task dict under one name ("gpuscan-<function>-<token>"); its inner tasks are named
    "gpuscan-<function>-<tag>-<token>", so that Dask's task stream and profiles, which drop
    the token and what follows it, tell their kinds apart."""

    def __init__(self, name):
        self.name, self.dsk, self._count = name, {}, 0

    def task(self, tag, task):
        head, _, token = self.name.rpartition("-")
        key = (f"{head}-{tag}-{token}", self._count)
        self._count += 1
        self.dsk[key] = task
        return key


def _tree(g, keys, fn):
    """The task of fn over all `keys` (a list of partial results), joined _SPLIT_EVERY at a
    time (the levels below it added to g); fn takes a list and returns a partial of the same
    kind.  The caller puts the task under its own key."""
    while len(keys) > _SPLIT_EVERY:
        keys = [g.task("tree", (fn, keys[i:i + _SPLIT_EVERY]))
                for i in range(0, len(keys), _SPLIT_EVERY)]
    return (fn, keys)


def _lines(x, axis):
    """Block indices of x grouped by their index along axis: [[idx at 0...], [idx at 1...]]."""
    others = [range(n) if i != axis else [None] for i, n in enumerate(x.numblocks)]
    rest = list(itertools.product(*others))
    return [[tuple(k if i != axis else j for i, k in enumerate(r)) for r in rest]
            for j in range(x.numblocks[axis])]


# ================================================================================================
# Public functions
# ================================================================================================
def scan(x, op="add", *, axis=None, exclusive=False, dtype=None, method="sequential"):
    """Lazy ``gpuscan.scan`` of a dask array, as a reduce-then-scan over its chunks.

    Three kinds of task: the total of every chunk along the axis (``gpuscan.reduce``; the last
    chunk needs none), one task that finds every chunk's carry from the totals before it, and
    the scan of every chunk (``gpuscan.scan``) with its carry combined in: two tasks a chunk.
    Float sums combine their carries with compensated (TwoSum) additions, so the number of
    chunks adds no error.

    Parameters
    ----------
    x : dask.array.Array or array_like
        The input (other array-likes become one-chunk dask arrays).
    op : str, numpy.ufunc or gpuscan.Operator, optional
        As for :func:`gpuscan.scan` (an ``Operator`` is compiled once on each worker).
    axis : int or None, optional
        None (default) scans the C-order flattening (dask rechunks an N-D array so that each
        block is a run of that order) and gives a 1-D result; an integer axis scans along it,
        the result keeping ``x``'s shape and chunks (blocks are combined along that axis only).
    exclusive : bool, optional
        As for :func:`gpuscan.scan`.
    dtype : dtype, optional
        As for :func:`gpuscan.scan`.
    method : {"sequential", "blelloch"}, optional
        The order in which the carries task combines the totals: one after another
        (``"sequential"``, as ``dask.array.cumsum``), or an up-sweep/down-sweep over them
        (``"blelloch"``).  Integers come out the same; floats differ in their roundings only.

    Returns
    -------
    dask.array.Array
        ``gpuscan.scan(x.compute(), op, axis=axis, exclusive=exclusive, dtype=dtype)``, lazily:
        integer results and float min/max bit-identical to it, a float sum within the
        contract's bound for the whole length, the same bits on every run for a given chunking
        and method.  CuPy chunks give CuPy chunks.

    Raises
    ------
    ValueError, TypeError, numpy.exceptions.AxisError
        At once, for the arguments ``gpuscan.scan`` refuses, and for an unknown ``method``.

    Examples
    --------
    >>> import dask.array as da, gpuscan.dask as gsd
    >>> x = da.arange(10, chunks=4)
    >>> gsd.scan(x).compute()
    array([ 0,  1,  3,  6, 10, 15, 21, 28, 36, 45])
    >>> gsd.scan(x, method="blelloch", exclusive=True).compute()
    array([ 0,  0,  1,  3,  6, 10, 15, 21, 28, 36])
    """
    x = _as_dask(x)
    dt = gpuscan.scan(_probe(x), op, axis=axis, exclusive=exclusive, dtype=dtype).dtype
    if method not in _CARRY_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _CARRY_METHODS))}, "
                         f"not {method!r}")
    op = _Op(op, dt)
    if axis is None or x.ndim == 0:     # a 0-d x scans as one value along axis 0 (as NumPy)
        x, axis = _flat(x), 0
    axis = axis % x.ndim
    name = "gpuscan-scan-" + tokenize(x, op, axis, exclusive, method)
    g = _Graph(name)
    lines = _lines(x, axis)
    total = functools.partial(_scan_total, op=op, axis=axis)
    carries = functools.partial(_scan_carries, op=op, axis=axis, method=method)
    block = functools.partial(_scan_block, op=op, axis=axis, exclusive=exclusive)
    # Per row of blocks along the axis (the blocks at the same other indices): a total of every
    # block but the last, one task for all their carries, a scan of every block from its carry.
    for r in range(len(lines[0])):
        row = [(x.name,) + line[r] for line in lines]
        chain = None
        if len(row) > 1:
            chain = g.task("carries", (carries, [g.task("total", (total, k)) for k in row[:-1]]))
        for k, key in enumerate(row):
            g.dsk[(name,) + key[1:]] = (block, key, chain if k else None, k)
    graph = HighLevelGraph.from_collections(name, g.dsk, dependencies=[x])
    return da.Array(graph, name, x.chunks, meta=_meta(x, dt, x.ndim))


def segmented_scan(x, flags, op="add", *, exclusive=False, dtype=None):
    """Lazy ``gpuscan.segmented_scan`` of a dask array.

    ``x`` and ``flags`` are read together in C order; a segment's running value crosses chunk
    boundaries until the next nonzero flag.  The graph has :func:`scan`'s shape: a summary of
    every chunk, one carries task, a segmented scan of every chunk from its carry.

    Parameters
    ----------
    x : dask.array.Array or array_like
        The values.
    flags : dask.array.Array or array_like
        ``x``'s shape (rechunked to ``x``'s chunks); a nonzero flag starts a segment.
    op, exclusive, dtype : optional
        As for :func:`gpuscan.segmented_scan` (``op`` a ``gpuscan.Operator`` too).

    Returns
    -------
    dask.array.Array
        ``x``'s shape: the single-array call's result (bit for bit for integers; floats within
        the bound per segment).

    Raises
    ------
    ValueError, TypeError
        At once: shapes that differ, and the arguments ``gpuscan.segmented_scan`` refuses.

    Examples
    --------
    >>> import numpy as np, dask.array as da, gpuscan.dask as gsd
    >>> x = da.arange(10, chunks=4)
    >>> heads = da.from_array(np.array([1, 0, 0, 1, 0, 0, 1, 0, 0, 0]), chunks=4)
    >>> gsd.segmented_scan(x, heads).compute()
    array([ 0,  1,  3,  3,  7, 12,  6, 13, 21, 30])
    """
    x, flags = _as_dask(x), _as_dask(flags, "flags")
    _same_shape(x, flags)
    dt = gpuscan.segmented_scan(_probe(x), _probe(flags), op, exclusive=exclusive,
                                dtype=dtype).dtype
    op = _Op(op, dt)
    shape = x.shape
    xf = _flat(x)
    ff = _aligned(xf, _flat(flags))
    name = "gpuscan-segmented-scan-" + tokenize(xf, ff, op, exclusive)
    g = _Graph(name)
    nb = xf.numblocks[0]
    summary = functools.partial(_seg_summary, op=op)
    chain = None
    if nb > 1:
        chain = g.task("carries", (functools.partial(_seg_carries, op=op),
                                   [g.task("summary", (summary, (xf.name, i), (ff.name, i)))
                                    for i in range(nb - 1)]))
    block = functools.partial(_seg_block, op=op, exclusive=exclusive)
    for i in range(nb):
        g.dsk[(name, i)] = (block, (xf.name, i), (ff.name, i), chain if i else None, i)
    graph = HighLevelGraph.from_collections(name, g.dsk, dependencies=[xf, ff])
    out = da.Array(graph, name, xf.chunks, meta=_meta(x, dt, 1))
    return out if len(shape) == 1 else out.reshape(shape)


def _reduce_part(block, axis, keepdims, op, identity):
    """gpuscan.reduce of a block over axis (keepdims for the partial steps).  A block empty
    along axis gives the op's identity (min/max have none in NumPy, but +/-inf or the dtype's
    extremes are neutral in a combination of partials); an empty min/max of the whole array is
    refused on the client."""
    if any(block.shape[a] == 0 for a in axis) and identity is not None:
        shape = tuple(1 if i in axis else s for i, s in enumerate(block.shape))
        if not keepdims:
            shape = tuple(s for i, s in enumerate(shape) if i not in axis)
        out = _xp(block).empty(shape, op.dtype)
        out[...] = identity
        return out
    return _like(gpuscan.reduce(block, op.op, axis=axis, keepdims=keepdims, **op.kw), block)


def reduce(x, op="add", *, axis=None, dtype=None, keepdims=False, split_every=None):
    """Lazy ``gpuscan.reduce`` of a dask array.

    Each chunk is reduced by ``gpuscan.reduce``, then the partial results by ``gpuscan.reduce``
    in a tree, as ``dask.array.sum`` does.

    Parameters
    ----------
    x : dask.array.Array or array_like
        The input.
    op, axis, dtype, keepdims : optional
        As for :func:`gpuscan.reduce` (``axis`` None, an int or a tuple of ints; ``op`` a
        ``gpuscan.Operator`` too, whose values over several axes are combined in C order, as
        by the single-array call, whatever the chunking).
    split_every : int or dict, optional
        How many partial results each task of the tree combines, as in ``dask.array.sum``.

    Returns
    -------
    dask.array.Array
        The single-array call's result, lazily (a 0-d dask array for a full reduction).

    Raises
    ------
    ValueError, TypeError, numpy.exceptions.AxisError
        At once, for the arguments ``gpuscan.reduce`` refuses; an empty min or max is NumPy's
        ``ValueError``.

    Examples
    --------
    >>> import numpy as np, dask.array as da, gpuscan.dask as gsd
    >>> gsd.reduce(da.arange(10, chunks=4)).compute()
    np.int64(45)
    >>> m = da.ones((4, 6), dtype=np.int32, chunks=(2, 3))
    >>> gsd.reduce(m, axis=0).compute()
    array([4, 4, 4, 4, 4, 4])
    """
    x = _as_dask(x)
    known = not any(math.isnan(s) for s in x.shape)
    empty = known and 0 in x.shape
    # The probe has x's real shape when x is empty (no memory), so an empty min/max raises
    # NumPy's ValueError here; otherwise all ones.
    probe = _probe(x, x.shape if empty else None)
    res = np.asarray(gpuscan.reduce(probe, op, axis=axis, dtype=dtype, keepdims=keepdims))
    op = _Op(op, res.dtype)
    axes = np.lib.array_utils.normalize_axis_tuple(range(x.ndim) if axis is None else axis,
                                                   x.ndim)
    if isinstance(op.op, gpuscan.Operator) and any(x.numblocks[a] > 1 for a in axes[1:]):
        # An Operator need not commute: its values are combined in C order over the reduced
        # axes, which the blocks' order is not when an inner reduced axis has several blocks;
        # reduce one axis made of them, in C order, instead.
        kept = [a for a in range(x.ndim) if a not in axes]
        x = x.transpose(kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])
        out = reduce(x, op.op, axis=-1, keepdims=False, split_every=split_every)
        return out.reshape(res.shape) if keepdims else out
    # The identity from gpuscan itself: the first value of an exclusive scan.
    identity = gpuscan.scan(np.zeros(1, op.dtype), op.op, exclusive=True, **op.kw)[0]
    part = functools.partial(_reduce_part, op=op)
    return da.reduction(x, functools.partial(part, identity=identity),
                        functools.partial(part, identity=None), axis=axis, keepdims=keepdims,
                        dtype=op.dtype, split_every=split_every,
                        combine=functools.partial(part, identity=identity),
                        name="gpuscan-reduce", concatenate=True,
                        meta=_meta(x, op.dtype, res.ndim))


def _sum_padded(parts, dtype):
    """The elementwise sum, in dtype, of 1-D partials of possibly different lengths (shorter
    ones are zeros past their end: bincount's)."""
    out = _xp(parts[0]).zeros(max(p.shape[0] for p in parts), dtype)
    for p in parts:
        out[: p.shape[0]] += p
    return out


def _hist_chunk(block, weights, edges, bins, range):
    counts, _ = gpuscan.histogram(block, edges if edges is not None else bins, range=range,
                                  weights=weights)
    return _like(counts, block)


def _density(counts, edges):
    """NumPy's density: counts / bin width / total count."""
    xp = _xp(counts)
    widths = xp.asarray(np.diff(edges).astype(float))
    return counts / widths / counts.sum()


def histogram(x, bins, range=None, weights=None, density=None):
    """Lazy ``gpuscan.histogram`` of a dask array, as ``dask.array.histogram``.

    Parameters
    ----------
    x : dask.array.Array or array_like
        The values (bool, integers or floats).
    bins : int or sequence of scalars
        An int, in which case ``range`` is required (a dask array's min and max are not known
        without computing them), or the monotonically increasing edges.  An estimator name is
        a ``ValueError``.
    range : (float, float), optional
        The outer edges of ``bins`` equal-width bins.
    weights : dask.array.Array or array_like, optional
        ``x``'s shape (rechunked to ``x``'s chunks).
    density : bool, optional
        As for :func:`gpuscan.histogram`.

    Returns
    -------
    counts : dask.array.Array
        1-D: int64 counts (the weights' dtype with ``weights``, float64 with ``density``),
        equal to NumPy's on the whole array exactly.
    edges : numpy.ndarray
        NumPy's edges.

    Raises
    ------
    ValueError, TypeError
        At once: an int ``bins`` without ``range``, an estimator name, weights of another
        shape, and what ``gpuscan.histogram`` refuses.

    Examples
    --------
    >>> import dask.array as da, gpuscan.dask as gsd
    >>> counts, edges = gsd.histogram(da.arange(10, chunks=4), 5, range=(0, 10))
    >>> counts.compute(), edges
    (array([2, 2, 2, 2, 2]), array([ 0.,  2.,  4.,  6.,  8., 10.]))
    """
    x = _as_dask(x)
    if isinstance(bins, str):
        raise ValueError(f"bins={bins!r}: an estimator needs the data; for a dask array give "
                         "an int and range, or the edges")
    if np.ndim(bins) == 0 and range is None:
        raise ValueError("dask arrays need range= with an integer bins (as "
                         "dask.array.histogram): the data's min and max are not known")
    if weights is not None:
        weights = _as_dask(weights, "weights")
        if weights.shape != x.shape:
            raise ValueError("weights should have the same shape as a.")
        weights = _aligned(x, weights)
    wprobe = None if weights is None else np.zeros(0, weights.dtype)
    with np.errstate(all="ignore"):     # density of no values: 0/0, on the probe only
        counts, edges = gpuscan.histogram(np.zeros(0, x.dtype), bins, range=range,
                                          weights=wprobe, density=density)
    uniform = np.ndim(bins) == 0
    name = "gpuscan-histogram-" + tokenize(x, weights, bins, range, density)
    g = _Graph(name)
    edge_key = None
    if not uniform:
        edge_key = g.task("edges", edges)    # one copy of the edges in the graph, not one a task
    chunk = functools.partial(_hist_chunk, bins=bins if uniform else None,
                              range=range if uniform else None)
    parts = []
    for idx in np.ndindex(*x.numblocks):
        w = None if weights is None else (weights.name,) + idx
        parts.append(g.task("part", (chunk, (x.name,) + idx, w, edge_key)))
    dt = counts.dtype
    total = _tree(g, parts, functools.partial(_sum_padded, dtype=dt))
    g.dsk[(name, 0)] = (_density, g.task("tree", total), edges) if density else total
    deps = [x] if weights is None else [x, weights]
    graph = HighLevelGraph.from_collections(name, g.dsk, dependencies=deps)
    return da.Array(graph, name, ((edges.size - 1,),), meta=_meta(x, dt, 1)), edges


def _bincount_chunk(block, weights, minlength):
    return _like(gpuscan.bincount(block, weights=weights, minlength=minlength), block)


def bincount(x, weights=None, minlength=0):
    """Lazy ``gpuscan.bincount`` of a 1-D dask array of non-negative integers.

    Parameters
    ----------
    x : dask.array.Array or array_like
        1-D, bool or integers.
    weights : dask.array.Array or array_like, optional
        ``x``'s shape (rechunked to ``x``'s chunks).
    minlength : int, optional
        The least number of bins.

    Returns
    -------
    dask.array.Array
        ``np.bincount(x.compute(), weights, minlength)``: int64 counts (float64 with weights).
        Its length is ``max(x) + 1`` (at least ``minlength``), known only once computed, so the
        result's one chunk has an unknown size (``nan``).

    Raises
    ------
    ValueError, TypeError
        At once, for weights of another shape and what ``gpuscan.bincount`` refuses; a
        negative value raises NumPy's ``ValueError`` when the result is computed.

    Examples
    --------
    >>> import numpy as np, dask.array as da, gpuscan.dask as gsd
    >>> x = da.from_array(np.array([0, 1, 1, 3, 2, 1, 7]), chunks=3)
    >>> gsd.bincount(x).compute()
    array([1, 3, 1, 1, 0, 0, 0, 1])
    """
    x = _as_dask(x)
    if weights is not None:
        weights = _as_dask(weights, "weights")
        if weights.shape != x.shape:
            raise ValueError("The weights and list don't have the same length.")
        weights = _aligned(x, weights)
    # A one-value probe: NumPy's weighted bincount of nothing is int64, of anything float64;
    # the probe is empty only when x is.
    size = 0 if x.shape and x.shape[0] == 0 else 1
    wprobe = None if weights is None else np.zeros((size,) * weights.ndim, weights.dtype)
    dt = gpuscan.bincount(np.zeros((size,) * x.ndim, x.dtype), weights=wprobe,
                          minlength=minlength).dtype
    name = "gpuscan-bincount-" + tokenize(x, weights, minlength)
    g = _Graph(name)
    chunk = functools.partial(_bincount_chunk, minlength=minlength)
    parts = [g.task("part", (chunk, (x.name, i), None if weights is None else (weights.name, i)))
             for i in range(x.numblocks[0])]
    g.dsk[(name, 0)] = _tree(g, parts, functools.partial(_sum_padded, dtype=dt))
    deps = [x] if weights is None else [x, weights]
    graph = HighLevelGraph.from_collections(name, g.dsk, dependencies=deps)
    return da.Array(graph, name, ((math.nan,),), meta=_meta(x, dt, 1))



def _flat_pair(x, flags):
    """x and flags (same shape) flattened in C order with the same chunks; the checks of the
    single-array split/compact (dtypes, shapes) made on the client."""
    x, flags = _as_dask(x), _as_dask(flags, "flags")
    _same_shape(x, flags)
    gpuscan.split(_probe(x), _probe(flags))
    xf = _flat(x)
    return xf, _aligned(xf, _flat(flags))


def _compact_chunk(block, flags):
    return _like(gpuscan.compact(block, flags), block)


def compact(x, flags):
    """Lazy ``gpuscan.compact``: ``x[flags != 0]`` flattened in C order.

    Parameters
    ----------
    x : dask.array.Array or array_like
        The values (any dtype ``gpuscan.compact`` moves).
    flags : dask.array.Array or array_like
        ``x``'s shape; nonzero is kept.

    Returns
    -------
    dask.array.Array
        1-D, with one chunk of unknown size per chunk of the flattened ``x`` (as dask's
        boolean indexing gives).

    Raises
    ------
    ValueError, TypeError
        At once: shapes that differ, and what ``gpuscan.compact`` refuses.

    Examples
    --------
    >>> import dask.array as da, gpuscan.dask as gsd
    >>> x = da.arange(10, chunks=4)
    >>> gsd.compact(x, x % 3 == 0).compute()
    array([0, 3, 6, 9])
    """
    xf, ff = _flat_pair(x, flags)
    return da.map_blocks(_compact_chunk, xf, ff, chunks=((math.nan,) * xf.numblocks[0],),
                         dtype=xf.dtype, meta=_meta(xf, xf.dtype, 1),
                         name="gpuscan-compact-" + tokenize(xf, ff))


def _others_chunk(block, flags):
    """The block's unflagged values, in order."""
    return _like(gpuscan.compact(block, flags == 0), block)


def _count_chunk(flags):
    """The number of nonzero flags of a block, as a Python int (CuPy's count comes to the
    host)."""
    return int(_xp(flags).count_nonzero(flags))


def _count_total(counts):
    """A NumPy int64 scalar, as a dask sum computes to."""
    return np.int64(sum(counts))


def split(x, flags):
    """Lazy ``gpuscan.split``: the stable partition of the C-order flattening of ``x``.

    Three tasks a chunk, where it lies: its flagged values and its others (``gpuscan.compact``
    each), and its count of flags; one more task sums the counts.

    Parameters
    ----------
    x : dask.array.Array or array_like
        The values (any dtype ``gpuscan.split`` moves, bit for bit).
    flags : dask.array.Array or array_like
        ``x``'s shape; an element is flagged when its flag is nonzero.

    Returns
    -------
    out : dask.array.Array
        The flagged values, in order, then the others, in order: 1-D, two chunks of unknown
        size per chunk of ``x`` (its flagged values, then, after all of those, its others).
    count : dask.array.Array
        The number flagged, a 0-d int64 dask array.

    Raises
    ------
    ValueError, TypeError
        At once: shapes that differ, and what ``gpuscan.split`` refuses.

    Examples
    --------
    >>> import dask.array as da, gpuscan.dask as gsd
    >>> x = da.arange(10, chunks=4)
    >>> out, count = gsd.split(x, x % 3 == 0)
    >>> out.compute(), count.compute()
    (array([0, 3, 6, 9, 1, 2, 4, 5, 7, 8]), np.int64(4))
    """
    xf, ff = _flat_pair(x, flags)
    nb = xf.numblocks[0]
    name = "gpuscan-split-" + tokenize(xf, ff)
    # Each chunk's flagged values, then each chunk's others, each from the chunk where it lies.
    dsk = {(name, i): (_compact_chunk, (xf.name, i), (ff.name, i)) for i in range(nb)}
    dsk.update({(name, nb + i): (_others_chunk, (xf.name, i), (ff.name, i)) for i in range(nb)})
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[xf, ff])
    out = da.Array(graph, name, ((math.nan,) * (2 * nb),), meta=_meta(xf, xf.dtype, 1))
    # The count: a count of the flags of each chunk, where it lies, and their sum.
    cname = "gpuscan-split-count-" + tokenize(xf, ff)
    c = _Graph(cname)
    c.dsk[(cname,)] = (_count_total, [c.task("part", (_count_chunk, (ff.name, i)))
                                      for i in range(nb)])
    graph = HighLevelGraph.from_collections(cname, c.dsk, dependencies=[ff])
    count = da.Array(graph, cname, (), meta=np.empty((), np.int64))
    return out, count


def _sort_chunk(block, axis, descending, arg):
    fn = gpuscan.argsort if arg else gpuscan.sort
    return _like(fn(block, axis=axis, descending=descending), block)


def _sorted_rows(x, axis, descending, arg):
    """sort or argsort of every row of x along `axis`, each chunk where it lies: the rows must
    lie whole in their chunks (axis None: the array in one chunk); the checks of the
    single-array function made on the client."""
    name = "argsort" if arg else "sort"
    x = _as_dask(x)
    fn = gpuscan.argsort if arg else gpuscan.sort
    probe = fn(_probe(x), axis=axis, descending=descending)  # dtype, axis
    if axis is None:
        if any(n > 1 for n in x.numblocks):
            raise ValueError(f"gpuscan.dask.{name}: axis=None sorts the flattened array, which "
                             f"is in {math.prod(x.numblocks)} chunks; it must be one: "
                             f"x.rechunk(-1) (or sort along an axis whose rows lie in chunks)")
        x, axis = _flat(x), 0
    axis = axis % x.ndim
    if x.numblocks[axis] > 1:
        raise ValueError(f"gpuscan.dask.{name}: axis {axis} is split into "
                         f"{x.numblocks[axis]} chunks; each row along it must lie in one chunk "
                         f"(sorted where it lies): rechunk first, x.rechunk({{{axis}: -1}})")
    return da.map_blocks(_sort_chunk, x, axis=axis, descending=descending, arg=arg,
                         dtype=probe.dtype, meta=_meta(x, probe.dtype, x.ndim),
                         name=f"gpuscan-{name}-" + tokenize(x, axis, descending))


def sort(x, axis=-1, *, descending=False):
    """Lazy ``gpuscan.sort`` along an axis whose chunks span it whole.

    Each chunk's rows along ``axis`` are sorted where they lie (``map_blocks``, no data moves
    between workers), so every row must lie in one chunk: ``x.chunks[axis]`` one chunk long.
    A sort across chunks would move every value, and is not done silently: rechunk first.

    Parameters
    ----------
    x : dask.array.Array or array_like
        Values of a dtype ``gpuscan.sort`` takes.
    axis : int or None, optional
        The axis sorted along (default -1); None sorts the flattened array, which must then be
        one chunk.
    descending : bool, optional
        Largest first (equal values in input order, NaNs last), as ``gpuscan.sort``.

    Returns
    -------
    dask.array.Array
        ``x``'s shape, dtype and chunks (1-D for ``axis=None``).

    Raises
    ------
    ValueError
        At once: ``axis`` spread over several chunks (the message says how to rechunk).
    TypeError, numpy.exceptions.AxisError
        At once: what ``gpuscan.sort`` refuses.

    Examples
    --------
    >>> import dask.array as da, gpuscan.dask as gsd
    >>> x = da.from_array([[3, 1, 2], [9, 7, 8]], chunks=(1, 3))
    >>> gsd.sort(x).compute()
    array([[1, 2, 3],
           [7, 8, 9]])
    """
    return _sorted_rows(x, axis, descending, False)


def argsort(x, axis=-1, *, descending=False):
    """Lazy ``gpuscan.argsort`` along an axis whose chunks span it whole.

    As :func:`sort`: each chunk's rows are argsorted where they lie, so the positions are those
    along the whole axis.

    Parameters
    ----------
    x : dask.array.Array or array_like
        Values of a dtype ``gpuscan.argsort`` takes.
    axis : int or None, optional
        As for :func:`sort`.
    descending : bool, optional
        Largest first.

    Returns
    -------
    dask.array.Array
        int64, ``x``'s shape and chunks (1-D for ``axis=None``).

    Raises
    ------
    ValueError, TypeError, numpy.exceptions.AxisError
        At once, as for :func:`sort`.

    Examples
    --------
    >>> import dask.array as da, gpuscan.dask as gsd
    >>> x = da.from_array([[3, 1, 2], [9, 7, 8]], chunks=(1, 3))
    >>> gsd.argsort(x).compute()
    array([[1, 2, 0],
           [1, 2, 0]])
    """
    return _sorted_rows(x, axis, descending, True)


# ================================================================================================
# One worker per GPU
# ================================================================================================
def gpu_cluster(devices=None, *, threads_per_worker=1, env=None, **kwargs):
    """A local ``distributed.SpecCluster`` with one worker process per GPU.

    Worker i runs with ``CUDA_VISIBLE_DEVICES`` set to ``devices[i]``, so gpuscan and CuPy in
    it see that one GPU as device 0 and never touch the others: the same layout as
    ``dask_cuda.LocalCUDACluster``, without needing dask-cuda.  The workers share the host's
    page-locked memory: unless ``env`` or this process sets ``GPUSCAN_PINNED_BYTES``, each
    worker's limit is the default (a quarter of physical memory) divided among them.

    Parameters
    ----------
    devices : sequence of int or str, optional
        The GPUs, one worker each (default: every GPU that ``nvidia-smi -L`` lists, else those
        named by this process's ``CUDA_VISIBLE_DEVICES``).
    threads_per_worker : int, optional
        Threads of each worker (default 1).
    env : dict, optional
        More environment variables for every worker (e.g. ``GPUSCAN_NUM_THREADS``).
    **kwargs
        Passed to ``SpecCluster`` (e.g. ``asynchronous``).

    Returns
    -------
    distributed.SpecCluster
        Connect with ``distributed.Client(cluster)``.

    Raises
    ------
    RuntimeError
        No GPU found and none named.
    """
    from distributed import Nanny, Scheduler, SpecCluster

    if devices is None:
        devices = _visible_gpus()
    devices = [str(d) for d in devices]
    if not devices:
        raise RuntimeError("gpu_cluster: no GPU found (nvidia-smi -L lists none and "
                           "CUDA_VISIBLE_DEVICES is unset); name them with devices=[...]")
    workers = {
        f"gpu-{d}": {"cls": Nanny,
                     "options": {"nthreads": threads_per_worker,
                                 "env": _worker_env(d, len(devices), env),
                                 "name": f"gpu-{d}"}}
        for d in devices
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard": False, "dashboard_address": ":0"}}
    return SpecCluster(workers=workers, scheduler=scheduler, **kwargs)


def _worker_env(device, workers, env):
    """The environment of gpu_cluster's worker on `device`, one of `workers`: `env`, the device,
    and a share of the default page-locked limit when nobody chose one."""
    out = {**(env or {}), "CUDA_VISIBLE_DEVICES": str(device)}
    if "GPUSCAN_PINNED_BYTES" not in out and not os.environ.get("GPUSCAN_PINNED_BYTES"):
        try:
            physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            physical = 0
        if physical > 0:
            out["GPUSCAN_PINNED_BYTES"] = str(physical // 4 // max(workers, 1))
    return out


def _visible_gpus():
    """GPU ids this process may use: CUDA_VISIBLE_DEVICES if set, else nvidia-smi's list."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip()]
    import subprocess

    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(listing.splitlines()) if line.startswith("GPU ")]
