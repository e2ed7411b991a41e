"""gpuscan.trace: the teaching scans, one parallel step at a time, for reading and drawing.

Each function runs its algorithm on the active backend (``gpuscan.backend()``): on CUDA every
step is one kernel launch, on the CPU one parallel loop, exactly the steps the algorithm names.
After each step the working array is copied out, and the operator applications the step made
are counted as they happen (an atomic counter in the kernel, a counter in the CPU loop).  The
steps themselves run in the C extension (``gpuscan._gpuscan._trace``); this module only labels
and draws them (``split`` puts a traced scan together with gpuscan's own scan and split).
Inputs of more than 2**16 elements raise ``ValueError`` (every step is kept).

``scan`` traces Hillis-Steele and Blelloch, ``segmented_scan`` the flagged Blelloch sweeps,
``split`` the classic split and ``sort`` the two sorts built from it (the LSB radix sort, one
split per key bit, and the segmented-split quicksort); each returns a ``Trace``.  The same algorithms run at full size as
``gpuscan.scan(..., algorithm="hillis_steele" | "blelloch")`` and
``gpuscan.segmented_scan(..., algorithm="blelloch")``.
"""

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from gpuscan import _gpuscan
from gpuscan._ops import op_name

if TYPE_CHECKING:
    from gpuscan._gpuscan import _Op

__all__ = ["Trace", "scan", "segmented_scan", "sort", "split"]

_SYMBOL = {"add": "+", "mul": "×", "min": "min", "max": "max", "and": "&", "or": "|",
           "xor": "^"}


class Trace:
    """The steps of one traced algorithm.

    Attributes
    ----------
    algorithm : str
        ``"hillis_steele"``, ``"blelloch"``, ``"segmented_blelloch"``, ``"split"``,
        ``"radix_sort"`` or ``"quicksort"``.
    steps : list of (str, numpy.ndarray)
        ``steps[0]`` is the working array the algorithm starts from (the input, padded or
        shifted as the algorithm needs it); each later entry is the array after one parallel
        step, with a label naming the step.  For ``split`` the entries are the named arrays;
        ``sort`` has no entry for the input, only one per step.
    flag_steps : list of numpy.ndarray or None
        For the flagged sweeps, the up-swept flags after each step (beside ``steps``).
    result : numpy.ndarray or tuple
        The scan (the first n values of the last array), or ``(out, count)`` for ``split``.
    work : int
        Operator applications performed, counted while the steps ran.
    step_work : list of int
        The same count for each entry of ``steps`` (0 for the start).
    span : int
        Parallel steps (kernel launches on CUDA).
    arrays : dict
        ``split``: ``e``, ``f``, ``NF``, ``t``, ``addr``, ``out``.  ``sort``: ``bits`` (radix:
        for each step the bit its split went by, of the values in the order before it) or
        ``heads`` (quicksort: for each step the segment heads it started from), and
        ``pivots`` (quicksort: each segment's pivot, beside every value).
    """

    algorithm: str
    op: str
    steps: list[tuple[str, npt.NDArray[Any]]]
    result: Any  # numpy.ndarray, or (numpy.ndarray, int) for split
    work: int
    span: int
    flag_steps: list[npt.NDArray[Any] | None] | None
    arrays: dict[str, Any]
    n: int | None
    step_work: list[int]

    def __init__(self, algorithm: str, op: str, steps: list[tuple[str, npt.NDArray[Any]]],
                 result: Any, work: int, span: int, kinds: Any = (),
                 flag_steps: list[npt.NDArray[Any] | None] | None = None,
                 arrays: dict[str, Any] | None = None, n: int | None = None) -> None:
        self.algorithm = algorithm
        self.op = op
        self.steps = steps
        self.result = result
        self.work = int(work)
        self.span = int(span)
        self.flag_steps = flag_steps
        self.arrays = arrays if arrays is not None else {}
        self.n = n
        self.step_work = []
        self._kinds = list(kinds)  # (kind, stride) per entry of steps, for plot()

    def __repr__(self) -> str:
        return (f"Trace({self.algorithm!r}, op={self.op!r}, {len(self.steps)} arrays, "
                f"work={self.work}, span={self.span})")

    def plot(self, ax: Any = None, values: bool = True) -> Any:  # matplotlib Axes
        """Draw the steps as a grid of cells, one row per step, with an arrow from each input of
        every combine to its result (the textbook picture).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw; a new figure sized to the grid when omitted.
        values : bool, optional
            Write each cell's value in it (default True).

        Returns
        -------
        matplotlib.axes.Axes

        Raises
        ------
        ImportError
            matplotlib is not installed (``pip install matplotlib``).
        """
        try:
            import matplotlib.pyplot as plt
            from matplotlib.patches import Rectangle
        except ImportError as exc:
            raise ImportError("Trace.plot() needs matplotlib: pip install matplotlib") from exc
        rows = len(self.steps)
        cols = max((len(v) for _, v in self.steps), default=1) or 1
        if ax is None:
            _, ax = plt.subplots(figsize=(max(4.0, 0.75 * cols + 2.5), 0.75 * rows + 0.6))
        ax.set_xlim(-0.6, cols)
        ax.set_ylim(rows - 0.4, -0.7)
        ax.set_axis_off()
        prev = None
        for r, (label, vals) in enumerate(self.steps):
            changed = None
            if prev is not None and len(prev) == len(vals):
                changed = np.asarray(prev) != np.asarray(vals)
            for c, v in enumerate(vals):
                hot = changed is not None and bool(changed[c])
                ax.add_patch(Rectangle((c, r - 0.3), 0.8, 0.6, facecolor="#ffe39b" if hot
                                       else "#e8eef7", edgecolor="#44546a", lw=0.8))
                if values:
                    ax.text(c + 0.4, r, _fmt(v), ha="center", va="center", fontsize=9)
            ax.text(-0.15, r, label, ha="right", va="center", fontsize=9)
            for src_c, dst_c in self._arrows(r):
                ax.annotate("", xy=(dst_c + 0.4, r - 0.3), xytext=(src_c + 0.4, r - 0.7),
                            arrowprops=dict(arrowstyle="->", color="#c0504d", lw=0.9,
                                            shrinkA=0, shrinkB=0))
            prev = vals
        ax.set_title(f"{self.algorithm}  (op {self.op}: work {self.work}, span {self.span})",
                     fontsize=10)
        ax.text(cols / 2, rows - 0.45, "one row per step, top to bottom; arrows: the inputs each"
                " cell read; yellow: the cells the step changed", ha="center", va="top",
                fontsize=8, color="#44546a")
        return ax

    def _arrows(self, r):
        """(source column in row r-1, destination column in row r) of the combines of step r."""
        if r == 0 or r >= len(self._kinds):
            return []
        kind, s = self._kinds[r]
        m = len(self.steps[r][1])
        flags = self.flag_steps[r - 1] if self.flag_steps else None
        out = []
        if kind == "hs":
            for i in range(s, m):
                out += [(i - s, i), (i, i)]
        elif kind == "up":
            for k in range(0, m, 2 * s):
                ai, bi = k + s - 1, k + 2 * s - 1
                if flags is None or not flags[bi]:
                    out += [(ai, bi), (bi, bi)]
        elif kind == "down":
            heads = self.flag_steps[0] if self.flag_steps else None
            for k in range(0, m, 2 * s):
                ai, bi = k + s - 1, k + 2 * s - 1
                out.append((bi, ai))  # the left child takes the parent's value
                if flags is None or not (heads[ai + 1] or flags[ai]):
                    out += [(ai, bi), (bi, bi)]  # the right child: parent op left sum
                elif not heads[ai + 1]:
                    out.append((ai, bi))  # a head in the left child: its sum alone
                # a head just right of the left child: the identity, no input
        elif kind == "inclusive":
            out = [(i, i) for i in range(self.n or m)]
        return out


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        return f"{v:.3g}"
    return str(int(v)) if isinstance(v, (bool, np.bool_)) else str(v)


def _label(kind, s, op, first_down, shifted, padded):
    sym = _SYMBOL.get(op, op)
    if kind == "input":
        if shifted:
            return "input, shifted right (identity first)"
        return "input, padded with the identity" if padded else "input"
    d = int(s).bit_length() - 1
    if kind == "hs":
        return f"d={d}: x[i-{s}] {sym} x[i]"
    if kind == "up":
        return f"up-sweep d={d}"
    if kind == "down":
        return f"down-sweep d={d}" + (" (root cleared)" if first_down else "")
    return f"inclusive: x[i] {sym} input[i]"


def _run(algorithm, a, flags, op, exclusive):
    raw, result, work, span = _gpuscan._trace(algorithm, a, flags, op, exclusive)
    n = np.asarray(a).size
    name = op_name(op)
    steps, kinds, flag_steps, step_work = [], [], [], []
    first_down = True
    for kind, s, vals, fl, w in raw:
        step_work.append(int(w))
        steps.append((_label(kind, s, name, kind == "down" and first_down,
                             algorithm == "hillis_steele" and exclusive, len(vals) > n), vals))
        if kind == "down":
            first_down = False
        kinds.append((kind, s))
        flag_steps.append(fl)
    algo = "segmented_blelloch" if flags is not None else algorithm
    t = Trace(algo, name, steps, result[:n], work, span, kinds,
              flag_steps if flags is not None else None, n=n)
    t.step_work = step_work
    return t


def scan(a: npt.ArrayLike, algorithm: Literal["blelloch", "hillis_steele"] = "blelloch",
         op: "_Op" = "add", *, exclusive: bool = False) -> Trace:
    """Trace a scan step by step on the active backend.

    Hillis-Steele (``"hillis_steele"``) takes ceil(log2 n) steps, step d combining each element
    with the one 2**d before it.  Blelloch (``"blelloch"``) pads the input with the identity
    to the next power of two, sweeps up (each step combining pairs of partial sums one level
    up the tree), clears the root and sweeps down (each step handing a node's value to its left
    child and combining it with the left child's sum into the right one); an inclusive scan
    adds one step combining the input back in.

    Parameters
    ----------
    a : array_like
        At most 2**16 values (flattened); cast to the scan's accumulation dtype (NumPy's rule:
        add and mul take bool and narrow integers to 64 bits).
    algorithm : {"blelloch", "hillis_steele"}
        The algorithm traced.
    op : str or numpy.ufunc
        As for :func:`gpuscan.scan`.
    exclusive : bool
        Exclusive scan (Hillis-Steele shifts the input right with the identity first; Blelloch
        skips its final inclusive step).

    Returns
    -------
    Trace
        Hillis-Steele: span ceil(log2 n), work the sum over steps d of (n - 2**d), which is
        n*log2(n) - n + 1 for n a power of two.  Blelloch, exclusive: span 2*log2(m) and work
        2*(m - 1) for the padded length m; inclusive adds one step and n applications.

    Raises
    ------
    ValueError
        More than 2**16 elements, an unknown algorithm or op.

    Examples
    --------
    >>> import gpuscan
    >>> t = gpuscan.trace.scan([3, 1, 4, 1, 5, 9, 2, 6], "hillis_steele")
    >>> t
    Trace('hillis_steele', op='add', 4 arrays, work=17, span=3)
    >>> for label, values in t.steps:
    ...     print(f"{label:20} {values}")
    input                [3 1 4 1 5 9 2 6]
    d=0: x[i-1] + x[i]   [ 3  4  5  5  6 14 11  8]
    d=1: x[i-2] + x[i]   [ 3  4  8  9 11 19 17 22]
    d=2: x[i-4] + x[i]   [ 3  4  8  9 14 23 25 31]
    >>> t = gpuscan.trace.scan([3, 1, 4, 1, 5, 9, 2, 6], "blelloch", exclusive=True)
    >>> t.result, t.work, t.span
    (array([ 0,  3,  4,  8,  9, 14, 23, 25]), 14, 6)
    """
    return _run(algorithm, a, None, op, exclusive)


def segmented_scan(a: npt.ArrayLike, flags: npt.ArrayLike, op: "_Op" = "add", *,
                   exclusive: bool = False, algorithm: Literal["blelloch"] = "blelloch") -> Trace:
    """Trace the flagged Blelloch scan (``segmented_scan(..., algorithm="blelloch")``).

    The up-sweep combines only into nodes with no segment head below them and ORs the flags up
    the tree; the down-sweep resets the right child to the identity where the original flag
    just right of the left child is set.  ``Trace.flag_steps`` holds the up-swept flags after
    each step.

    Parameters
    ----------
    a : array_like
        At most 2**16 values (flattened), as for :func:`scan`.
    flags : array_like
        ``a``'s size; a nonzero flag starts a segment (element 0 always starts one).
    op : str or numpy.ufunc
        As for :func:`gpuscan.segmented_scan`.
    exclusive : bool
        Exclusive scan within each segment.
    algorithm : {"blelloch"}
        The one algorithm traced (accepted as :func:`scan` and
        :func:`gpuscan.segmented_scan` take it).

    Returns
    -------
    Trace

    Raises
    ------
    ValueError
        More than 2**16 elements, sizes that differ, another algorithm, an unknown op.

    Examples
    --------
    >>> import gpuscan
    >>> t = gpuscan.trace.segmented_scan([4, 2, 1, 3, 0, 2, 1, 5], [1, 0, 0, 1, 0, 0, 1, 0])
    >>> t.result
    array([4, 6, 7, 3, 3, 5, 1, 6])
    """
    if algorithm != "blelloch":
        raise ValueError(f"trace.segmented_scan: algorithm must be 'blelloch', got {algorithm!r}")
    return _run("blelloch", a, flags, op, exclusive)


def split(a: npt.ArrayLike, flags: npt.ArrayLike) -> Trace:
    """Trace the classic split: flagged elements first, each group in order.

    The arrays of the formulation are in ``Trace.arrays`` and, in this order, ``Trace.steps``:
    ``e`` (the flags as 0/1), ``f`` (the exclusive scan of e, run as a traced Blelloch scan),
    ``NF`` (the number of flagged elements: the last f plus the last e), ``t`` (i - f + NF: where
    an unflagged element goes), ``addr`` (e ? f : t) and ``out`` (out[addr] = a).  The parallel
    steps run on the active backend through gpuscan's own primitives: f is the traced scan, t is
    NF plus the exclusive scan of 1 - e (i - f counts the unflagged elements before i), and the
    scatter out[addr] = a is :func:`gpuscan.split`; the element-wise maps (1 - e, + NF, the
    select e ? f : t) and NF's one addition are NumPy.

    Parameters
    ----------
    a : array_like
        At most 2**16 values (flattened).
    flags : array_like
        ``a``'s size; an element is flagged when its flag is nonzero.

    Returns
    -------
    Trace
        ``result`` is ``(out, NF)``; ``work`` counts the scan's operator applications and NF's
        one addition; ``span`` is the scan's steps plus one step each for NF, t, addr and the
        scatter.

    Raises
    ------
    ValueError
        More than 2**16 elements, or sizes that differ.

    Examples
    --------
    >>> import gpuscan
    >>> t = gpuscan.trace.split([5, 7, 3, 1, 4, 2, 7, 2], [1, 1, 0, 1, 0, 0, 1, 0])
    >>> t.arrays["addr"]
    array([0, 1, 4, 2, 5, 6, 3, 7])
    >>> t.result
    (array([5, 7, 1, 7, 3, 4, 2, 2]), 4)
    """
    import gpuscan  # the package's primitives (gpuscan imports this module)

    a = np.asarray(a).ravel()
    e = (np.asarray(flags).ravel() != 0).astype(np.int64)
    if e.size != a.size:
        raise ValueError(f"flags has {e.size} elements but a has {a.size}")
    f_trace = scan(e, "blelloch", "add", exclusive=True)
    f = f_trace.result
    nf = int(f[-1] + e[-1]) if a.size else 0
    t = gpuscan.scan(1 - e, exclusive=True) + nf
    addr = np.where(e != 0, f, t)
    out, count = gpuscan.split(a, e)
    if count != nf:  # two computations of one number on the backend: a disagreement is a bug
        raise RuntimeError(f"gpuscan.split counted {count} flags, the scan {nf}")
    arrays = {"e": e, "f": f, "NF": nf, "t": t, "addr": addr, "out": out}
    steps = [("e", e), ("f = exclusive scan of e", f), ("NF = f[-1] + e[-1]", np.array([nf])),
             ("t = i - f + NF", t), ("addr = e ? f : t", addr), ("out: out[addr] = a", out)]
    work = f_trace.work + (1 if a.size else 0)
    return Trace("split", "add", steps, (out, nf), work, f_trace.span + 4, arrays=arrays,
                 n=a.size)


def _radix_key(a):
    """The unsigned key whose order is a's integer order: the sign bit flipped for signed."""
    u = a.view(f"u{a.dtype.itemsize}")
    if a.dtype.kind == "i":
        u = u ^ (np.array(1, u.dtype) << (8 * a.dtype.itemsize - 1))
    return u


def _sort_radix(a):
    """The LSB radix sort: one traced split per key bit, the values whose bit is 0 first."""
    steps, bits, work, span = [], [], 0, 0
    for b in range(8 * a.dtype.itemsize):
        bit = ((_radix_key(a) >> b) & 1).astype(np.uint8)
        t = split(a, 1 - bit)  # flagged (first): the 0s
        a = t.result[0]
        bits.append(bit)
        steps.append((f"bit {b}: split, 0s first", a))
        work += t.work
        span += t.span
    return Trace("radix_sort", "add", steps, a, work, span, arrays={"bits": bits}, n=a.size)


def _quicksort_level(a, heads):
    """One level: every segment (heads) split around its first value, stably, into the values
    below it, equal to it and above it.  (values, new heads, pivots, work, span)"""
    n = a.size
    # The pivots: each head's value carried over its segment (a traced segmented sum of the
    # heads' values, zero elsewhere).
    carry = segmented_scan(np.where(heads, a, 0), heads)
    pivot = carry.result.astype(a.dtype)
    cls = (a > pivot).astype(np.int64) + (a >= pivot)  # 0 below, 1 equal, 2 above
    # Each class's rank within its segment: a traced segmented exclusive scan per class.  The
    # three ranks add up to the position in the segment.
    scans = [segmented_scan((cls == c).astype(np.int64), heads, exclusive=True)
             for c in range(3)]
    ranks = np.stack([t.result for t in scans])
    start = np.arange(n) - ranks.sum(axis=0)
    # Each segment's count per class (its last rank plus its last flag: one addition each),
    # then every value's address: its segment's start, the classes before its own, its rank.
    first = np.flatnonzero(heads)
    last = np.r_[first[1:] - 1, n - 1]
    count = ranks[:, last] + (cls[last] == np.arange(3)[:, None])
    before = np.cumsum(count, axis=0) - count
    seg = np.cumsum(heads) - 1
    out = np.empty_like(a)
    out[start + before[cls, seg] + ranks[cls, np.arange(n)]] = a
    new_heads = heads.copy()
    for c in (1, 2):  # the equal and the upper part start segments where they are not empty
        new_heads[(first + before[c])[count[c] > 0]] = True
    work = carry.work + sum(t.work for t in scans) + 3 * len(first)
    span = carry.span + max(t.span for t in scans) + 3  # + counts, addresses, scatter
    return out, new_heads, pivot, work, span


def _sort_quicksort(a):
    """The segmented-split quicksort: a level per step, until no segment has two values."""
    n = a.size
    heads = np.zeros(n, bool)
    heads[:1] = True
    steps, all_heads, pivots, work, span = [], [], [], 0, 0
    level = 0
    while n and not _settled(a, heads):
        all_heads.append(heads)
        a, heads, pivot, w, s = _quicksort_level(a, heads)
        pivots.append(pivot)
        steps.append((f"level {level}: every segment split around its pivot", a))
        work += w
        span += s
        level += 1
    return Trace("quicksort", "add", steps, a, work, span,
                 arrays={"heads": all_heads, "pivots": pivots}, n=n)


def _settled(a, heads):
    """Whether every segment holds one value, repeated."""
    same = np.r_[True, a[1:] == a[:-1]]
    return bool(np.all(same | heads))


def sort(a: npt.ArrayLike, algorithm: Literal["radix", "quicksort"] = "radix") -> Trace:
    """Trace a sort built from split, one parallel step at a time.

    ``"radix"`` is the LSB radix sort: one stable split per key bit, least significant first,
    the values whose bit is 0 going first, so that after the split by bit b the values are in
    the order of their lowest b + 1 bits (stably: equal keys keep their input order).  The key
    is the integer's unsigned bits, the sign bit flipped for signed types (negatives first).
    ``"quicksort"`` is the segmented-split quicksort: at every level each segment is split at
    once, stably, around its first value (its pivot) into the values below, equal to and above
    it, which become the next level's segments; it ends when every segment holds one value.
    Each split runs as :func:`split` does (traced scans and gpuscan's primitives on the active
    backend, element-wise maps in NumPy).

    Parameters
    ----------
    a : array_like
        Integers (any width, signed or not), at most 2**16 values (flattened).
    algorithm : {"radix", "quicksort"}
        The sort traced.

    Returns
    -------
    Trace
        ``steps``: radix, one per key bit (``a.dtype.itemsize * 8``, no step for the input),
        each the values after that bit's split; quicksort, one per level, the values after
        it.  ``result`` is the sorted array (``np.sort(a, kind="stable")``).  Radix: ``work``
        and ``span`` are the sums of its splits' (:func:`split`'s count).  Quicksort, per level:
        ``work`` counts the operator applications of its traced segmented scans (the pivots
        carried over their segments, then the ranks among the values below, equal to and
        above the pivot, three independent scans) and three additions per segment (its
        counts); ``span`` is the pivots' scan, the longest of the three, and one step each
        for the counts, the addresses and the scatter.

    Raises
    ------
    TypeError
        Input that is not integer (bool, floats, ...).
    ValueError
        More than 2**16 elements, an unknown algorithm.

    Examples
    --------
    >>> import gpuscan
    >>> t = gpuscan.trace.sort([5, 2, 7, 1, 4, 6, 3, 0], "radix")
    >>> t.result, len(t.steps)
    (array([0, 1, 2, 3, 4, 5, 6, 7]), 64)
    >>> for label, values in t.steps[:3]:
    ...     print(f"{label:22} {values}")
    bit 0: split, 0s first [2 4 6 0 5 7 1 3]
    bit 1: split, 0s first [4 0 5 1 2 6 7 3]
    bit 2: split, 0s first [0 1 2 3 4 5 6 7]
    >>> t = gpuscan.trace.sort([5, 2, 7, 1, 4, 6, 3, 0], "quicksort")
    >>> for label, values in t.steps:
    ...     print(f"{label:47} {values}")
    level 0: every segment split around its pivot   [2 1 4 3 0 5 7 6]
    level 1: every segment split around its pivot   [1 0 2 4 3 5 6 7]
    level 2: every segment split around its pivot   [0 1 2 3 4 5 6 7]
    >>> t.arrays["heads"][1].astype(int)
    array([1, 0, 0, 0, 0, 1, 1, 0])
    """
    a = np.asarray(a).ravel()
    if a.dtype.kind not in "iu":
        raise TypeError(f"trace.sort sorts integers, not {a.dtype}")
    if a.size > 2**16:
        raise ValueError(f"trace.sort takes at most 2**16 values, got {a.size}")
    if algorithm == "radix":
        return _sort_radix(a)
    if algorithm == "quicksort":
        return _sort_quicksort(a)
    raise ValueError(f"trace.sort: algorithm must be 'radix' or 'quicksort', got {algorithm!r}")
