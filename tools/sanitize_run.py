"""tools/sanitize_run.py - call every GPU kernel path of gpuscan on small inputs, check each.

Run under compute-sanitizer by tools/gpu_check.sh (memcheck, racecheck, synccheck); it also runs
alone.  Every result is compared with gpuscan/_slow.py's NumPy twin of the call (integers,
min/max and bitwise ops bit-exact; float sums within the contract's bound where the twin has
it, else within a tolerance: here a wrong index must not pass).  Exits 1 on any mismatch or
exception, 2 when the CUDA backend is not usable.

    python3 tools/sanitize_run.py [--reduced] [--only GROUPS] [--match TEXT] [--host]

--match runs only the cases whose name contains TEXT (one new case under the three tools).

--host runs every case on the active backend with NumPy operands instead of device arrays (the
CPU backend, on a machine without a GPU): a dry run of the cases and their checks, no kernel.

--reduced (for racecheck, which is slow): every dtype x op once at a many-tile size, inclusive;
the exclusive form, the other sizes and the layout cases for add only.

Paths: the decoupled look-back scan for every dtype x op, inclusive and exclusive, at sizes
1, 33, NV-1, NV+1, 3*NV+7 (NV = values per tile, from the extension), and the ufuncs' float
operators (fmax, fmin, logaddexp, logaddexp2) inclusive; a row-wise scan (axis=1)
and a column scan (axis=0); a non-contiguous CuPy input (strided copy kernel); dtype casts
(converting copy); NumPy in/out (host <-> device copies); in place (out is the input); the
other algorithms where the build has them; split and compact (every value and flag width, tile
edges, all and none flagged, unaligned CuPy views, NumPy in/out); histogram (every method at 256, 4096 and 65536
bins, weights, searched edges, uneven and unaligned n) and bincount; reduceat, segmented_reduce
and linear_recurrence (apps_cases; its lookahead driver: linrec_driver_cases); sort and argsort
(sort_cases: the block sort and the device-wide sort's histogram and passes); gpuscan.Operator's
NVRTC-built kernels (operator_cases).  Device buffers come from
gpuscan.to_device and from CuPy with its memory pool off, so each array is its own allocation
and memcheck sees out-of-bounds accesses at the array's end.
"""

import argparse
import contextlib
import os
import sys
import time
import traceback

import numpy as np

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpuscan  # noqa: E402
from gpuscan import _gpuscan, _slow  # noqa: E402

OPS = ("add", "mul", "min", "max", "and", "or", "xor")
# The ufuncs' float operators (fmax/fmin on integers run as max/min, the logical ops as and/or/xor
# on bool: the kernels above).
FLOAT_OPS = ("fmax", "fmin", "logaddexp", "logaddexp2")
BITWISE = ("and", "or", "xor")
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float32, np.float64]
# Where operands live: on the device (gpuscan.to_device), or with --host as NumPy arrays.
ON_HOST = False


def dev(a):
    """A copy of a as the calls' operand: a device array, or with --host a NumPy array."""
    return np.array(a) if ON_HOST else gpuscan.to_device(a)


@contextlib.contextmanager
def knob(setter, *value):
    """One of the extension's private kernel knobs set to value for the block, then restored
    (with --host nothing is set: the knobs steer CUDA kernels the CPU backend does not have)."""
    if ON_HOST:
        yield
        return
    was = setter(*value)
    try:
        yield
    finally:
        setter(*(was if isinstance(was, tuple) else (was,)))


class Run:
    def __init__(self, match=""):
        self.match = match
        self.cases = 0
        self.failures = []
        self.rng = np.random.default_rng(20261121)

    def case(self, name, fn):
        if self.match not in name:
            return
        self.cases += 1
        try:
            problem = fn()
        except Exception as exc:
            problem = f"raised {type(exc).__name__}: {exc}"
            if os.environ.get("SANITIZE_TRACEBACK"):
                traceback.print_exc()
        if problem:
            self.failures.append(f"{name}: {problem}")
            print(f"FAIL {name}: {problem}", flush=True)


# ---- data and references ------------------------------------------------------------------
def make_input(rng, dtype, n, op):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(n) < (0.9 if op == "and" else 0.3)
    if dtype.kind in "iu":
        if op == "mul":   # small factors, some negative: products wrap modulo 2^k like NumPy's
            lo = -3 if dtype.kind == "i" else 0
            return rng.integers(lo, 4, n).astype(dtype)
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True
                            ).astype(dtype)
    if op == "mul":       # near 1: no overflow or underflow over 12k factors
        return (1 + (rng.random(n) - 0.5) * 1e-3).astype(dtype)
    x = (rng.random(n) if op == "add" else rng.standard_normal(n)).astype(dtype)
    if op in ("min", "max") and n > 40:
        x[n // 2] = np.nan   # NaN propagates from here on, as np.maximum
    return x


def reference(x, op, exclusive, axis=None, dtype=None):
    """The scan's NumPy twin (gpuscan/_slow.py)."""
    return _slow.scan(x, op, exclusive, axis=axis, dtype=dtype)


def compare(res, ref, op):
    """None when res is ref: bit for bit, or for a float add or mul within a tolerance."""
    res = host(res)
    if res.dtype != ref.dtype or res.shape != ref.shape:
        return f"result {res.dtype}{res.shape}, NumPy {ref.dtype}{ref.shape}"
    if ref.dtype == np.float16 and op == "mul":
        return None   # (i+1)*eps with eps = 2^-10 allows any value here: dtype and shape only
    if ref.dtype.kind == "f" and op in ("add", "mul", "logaddexp", "logaddexp2"):
        tol = {2: 2e-2, 4: 2e-4}.get(ref.dtype.itemsize, 1e-12)
        if not np.allclose(res, ref, rtol=tol, atol=tol, equal_nan=True):
            bad = np.flatnonzero(~np.isclose(res, ref, rtol=tol, atol=tol, equal_nan=True))
            return f"{bad.size} differ, first at {bad[0]}: {res.flat[bad[0]]!r} vs {ref.flat[bad[0]]!r}"
        return None
    return _slow.first_difference(res, ref)


def within(ratio, what):
    """None for an error within the contract's bound (a ratio <= 1, gpuscan/_slow.py)."""
    return None if ratio <= 1 else f"{what}: error {ratio:.3g} x the contract's bound"


def host(a):
    """A result (DeviceArray, CuPy array, NumPy array) as NumPy."""
    if hasattr(a, "get"):
        return a.get()
    return np.asarray(a)


# ---- the cases -----------------------------------------------------------------------------
def matrix(run, sizes, dtypes, ops, exclusive_forms):
    for dtype in dtypes:
        for op in ops:
            if op in BITWISE and np.dtype(dtype).kind == "f":
                continue
            for n in sizes:
                x = make_input(run.rng, dtype, n, op)
                dx = dev(x)
                for exclusive in exclusive_forms:
                    name = f"scan {op} {np.dtype(dtype).name} n={n}" + (" excl" if exclusive else "")

                    def go(x=x, dx=dx, op=op, exclusive=exclusive):
                        res = gpuscan.scan(dx, op, exclusive=exclusive)
                        problem = compare(host(res), reference(x, op, exclusive), op)
                        if problem is None and not np.array_equal(host(dx), x, equal_nan=True):
                            problem = "the input was modified"
                        return problem

                    run.case(name, go)


def layout_cases(run, nv, cp):
    rng = run.rng
    # Rows: axis=1 scans each row (row starts are segment heads); axis=0 a column scan.
    m = rng.integers(-100, 100, (5, nv + 3)).astype(np.int32)
    dm = dev(m)
    for axis in (1, 0):
        for exclusive in (False, True):
            run.case(f"scan add int32 shape {m.shape} axis={axis}" + (" excl" if exclusive else ""),
                     lambda axis=axis, exclusive=exclusive: compare(
                         host(gpuscan.scan(dm, exclusive=exclusive, axis=axis)),
                         reference(m, "add", exclusive, axis=axis), "add"))
    mf = rng.standard_normal((3, 2 * nv + 1)).astype(np.float32)
    run.case("scan max float32 axis=1", lambda: compare(
        host(gpuscan.scan(dev(mf), "max", axis=1)),
        reference(mf, "max", False, axis=1), "max"))

    # NumPy in, NumPy out: host <-> device copies around the kernels.
    xh = rng.integers(-1000, 1000, 3 * nv + 7).astype(np.int16)
    run.case("scan add int16 NumPy in/out", lambda: compare(
        gpuscan.scan(xh), reference(xh, "add", False), "add"))
    xs = rng.standard_normal(2 * nv + 5)[::-3]        # NumPy, negative stride
    run.case("scan max float64 NumPy strided", lambda: compare(
        gpuscan.scan(xs, "max"), reference(xs, "max", False), "max"))

    # dtype casts: the converting copy kernel.
    xi8 = rng.integers(-100, 100, nv + 1).astype(np.int8)
    run.case("scan add int8 dtype=float32", lambda: compare(
        host(gpuscan.scan(dev(xi8), dtype=np.float32)),
        reference(xi8, "add", False, dtype=np.float32), "add"))
    xu = rng.integers(0, 1000, nv - 1).astype(np.uint16)
    run.case("scan add uint16 dtype=int32 excl", lambda: compare(
        host(gpuscan.scan(dev(xu), exclusive=True, dtype=np.int32)),
        reference(xu, "add", True, dtype=np.int32), "add"))

    if cp is None:
        print("SKIP CuPy cases (non-contiguous input, out=): CuPy not importable", flush=True)
        return
    # Non-contiguous CuPy input: the strided copy kernel gathers it first.
    base = cp.asarray(rng.integers(-1000, 1000, 3 * (3 * nv + 7)).astype(np.int32))
    strided = base[::3]
    run.case("scan add int32 CuPy stride 3", lambda: compare(
        host(gpuscan.scan(strided)), reference(cp.asnumpy(strided), "add", False), "add"))
    tr = cp.asarray(rng.standard_normal((nv + 1, 7)).astype(np.float64)).T   # F-order view
    run.case("scan add float64 CuPy transposed axis=1", lambda: compare(
        host(gpuscan.scan(tr, axis=1)), reference(cp.asnumpy(tr), "add", False, axis=1), "add"))
    # out= a CuPy array of another dtype (same_kind cast), and in place.
    xf = cp.asarray(rng.random(3 * nv + 7).astype(np.float32))
    o64 = cp.empty(xf.shape, dtype=cp.float64)
    run.case("scan add float32 out=float64 CuPy", lambda: compare(
        host(gpuscan.scan(xf, out=o64)), reference(cp.asnumpy(xf), "add", False,
                                                  dtype=np.float64), "add"))
    xin = cp.asarray(rng.integers(-1000, 1000, 2 * nv + 3).astype(np.int64))
    xin_h = cp.asnumpy(xin)
    run.case("scan add int64 CuPy in place", lambda: compare(
        host(gpuscan.scan(xin, out=xin)), reference(xin_h, "add", False), "add"))
    ostr = cp.empty(2 * (nv + 9), dtype=cp.int64)[::2]          # strided out
    xo = cp.asarray(rng.integers(-9, 9, nv + 9).astype(np.int64))
    try:
        gpuscan.scan(cp.ones(3, cp.int64), out=cp.empty(6, cp.int64)[::2])
    except (ValueError, TypeError) as exc:
        print(f"SKIP strided device out=: refused by this build ({exc})", flush=True)
    else:
        run.case("scan add int64 CuPy strided out", lambda: compare(
            host(gpuscan.scan(xo, out=ostr)), reference(cp.asnumpy(xo), "add", False), "add"))


def algorithm_cases(run, nv):
    """The teaching variants: Hillis-Steele (double buffering, in place), the Blelloch tiles
    (one tile, one recursion level, two levels; padded and unpadded shared memory), the flagged
    Blelloch, and the trace steps (one launch each, with the atomic work counter)."""
    tile = _gpuscan._config()["teach_tile_items"]
    for n in (1, 2, tile - 1, tile + 1, 3 * nv + 7, tile * tile + 5):
        x = run.rng.integers(-100, 100, n).astype(np.int32)
        dx = dev(x)
        f = run.rng.random(n) < 0.01
        for algo in ("hillis_steele", "blelloch"):
            for exclusive in (False, True):
                run.case(f"scan add int32 n={n} algorithm={algo}" + (" excl" if exclusive else ""),
                         lambda algo=algo, exclusive=exclusive, x=x, dx=dx: compare(
                             host(gpuscan.scan(dx, exclusive=exclusive, algorithm=algo)),
                             reference(x, "add", exclusive), "add"))
        def in_place(x=x):
            d = dev(x.astype(np.int64))
            return compare(host(gpuscan.scan(d, out=d, algorithm="hillis_steele")),
                           reference(x.astype(np.int64), "add", False), "add")
        run.case(f"scan add int64 in place n={n} hillis_steele", in_place)
        for unpadded in (False, True):
            def seg(x=x, f=f, unpadded=unpadded):
                with knob(_gpuscan._teach_set_unpadded, unpadded):
                    got = gpuscan.segmented_scan(x, f, exclusive=True, algorithm="blelloch")
                return compare(got, _slow.segmented_scan(x, f, exclusive=True), "add")
            run.case(f"segmented_scan blelloch n={n}" + (" unpadded" if unpadded else ""), seg)
    for algo in ("hillis_steele", "blelloch"):
        def tr(algo=algo):
            t = gpuscan.trace.scan(np.arange(1000), algo)
            if compare(t.result, reference(np.arange(1000), "add", False), "add"):
                raise AssertionError("trace result")
        run.case(f"trace.scan {algo}", tr)
    def trseg():
        a = np.arange(100)
        tr = gpuscan.trace.segmented_scan(a, a % 7 == 0, exclusive=True)
        return compare(np.asarray(tr.result), _slow.segmented_scan(a, a % 7 == 0, exclusive=True),
                       "add")
    run.case("trace.segmented_scan", trseg)


def segmented_and_reduce_cases(run, nv, reduced):
    """The segmented scan (flags at their own width, heads at tile edges) and the reduction
    (one chunk, several chunks with the last-chunk combine, many rows, unaligned rows, and
    more chunks than resident blocks: the two-launch path)."""
    rng = np.random.default_rng(7)
    chunk = _gpuscan._reduce_chunk_items(1)  # the shortest chunk
    long_row = 2048 * chunk + 5  # 2049 chunks: two launches where fewer blocks fit (H200: 1056)
    sizes = [1, nv + 1, 3 * nv + 7] if reduced else [1, 33, nv - 1, nv + 1, 3 * nv + 7]
    for n in sizes:
        for fdt in (np.bool_, np.uint8, np.int32, np.float64):
            x = rng.integers(-100, 100, n).astype(np.int32)
            f = (rng.random(n) < 0.01)
            f[[i for i in (nv - 1, nv, nv + 1) if i < n]] = True
            f = f.astype(fdt)

            def seg(x=x, f=f):
                return compare(gpuscan.segmented_scan(dev(x), dev(f)),
                               _slow.segmented_scan(x, f), "add")

            run.case(f"segmented_scan n={n} flags={np.dtype(fdt).name}", seg)
    shapes = [(1, 1), (1, chunk + 1), (1, 3 * chunk + 5), (64, 700), (3, chunk), (2, long_row)]
    if reduced:
        shapes = [(1, 3 * chunk + 5), (64, 700), (1, long_row)]
    for rows, cols in shapes:
        for dt in (np.int32, np.float32, np.float64):
            a = (rng.random((rows, cols)) * 100).astype(dt)

            def red(a, axis):
                res = host(gpuscan.reduce(dev(a), axis=axis))
                if a.dtype.kind == "f":
                    return within(_slow.reduce_error(res, a, axis), "reduce")
                return _slow.first_difference(res, _slow.reduce(a, axis=axis))

            run.case(f"reduce {rows}x{cols} {np.dtype(dt).name}", lambda a=a: red(a, 1))
            if rows == 1 and cols > 1:   # an unaligned row start
                run.case(f"reduce unaligned {cols - 1} {np.dtype(dt).name}",
                         lambda a=a: red(a[0, 1:], None))


def segreduce_level_cases(run, nv, rng):
    """The levels of a sorted partition (dispatch/segreduce.cu) at 2050 tiles: the values' tiles,
    their 4100 partials (two tiles), then one tile; slices of one value, ending at tile ends,
    crossing the second level's tile boundary, and one spanning 1500 tiles; segmented_reduce
    also in ranges of 8 tiles."""
    n = 2050 * nv - 7
    idx = np.unique(np.concatenate([[3, nv - 1, nv, nv + 1, 2 * nv, 5 * nv + 9, 1505 * nv + 9,
                                     2040 * nv + 7, 2049 * nv + 100, n - 1],
                                    rng.integers(1506 * nv, 2040 * nv, 300)]))
    f = np.zeros(n, np.uint8)
    f[idx] = 1
    for dt, op in ((np.int32, "add"), (np.float32, "add"), (np.float64, "max")):
        # Small integers: every float sum here is exact, so the comparison is bit for bit.
        x = rng.integers(-100, 100, n).astype(dt)

        def red(x=x, op=op):
            return compare(gpuscan.reduceat(dev(x), dev(idx), op), _slow.reduceat(x, idx, op),
                           "max")

        def seg(x=x, op=op):
            return compare(gpuscan.segmented_reduce(dev(x), dev(f), op),
                           _slow.segmented_reduce(x, f, op), "max")

        def seg_ranges(seg=seg):
            with knob(_gpuscan._segreduce_set_many, 1):  # ranges of 8 tiles at this size
                return seg()

        run.case(f"reduceat levels n={n} {np.dtype(dt).name} {op}", red)
        run.case(f"segmented_reduce levels n={n} {np.dtype(dt).name} {op}", seg)
        run.case(f"segmented_reduce ranges n={n} {np.dtype(dt).name} {op}", seg_ranges)


def apps_cases(run, nv, reduced):
    """reduceat (increasing indices: levels of a block per tile storing segment ends, one row and
    rows with a gap in front, and segreduce_level_cases; other indices: a warp per slice),
    segmented_reduce (the heads counted and placed from the split's count pass), the index
    check (a bad index), and
    linear_recurrence (float32 and float64, rows, reverse, h0, unaligned and uneven n)."""
    rng = np.random.default_rng(17)
    sizes = [nv + 1, 3 * nv + 7] if reduced else [1, 33, nv - 1, nv + 1, 3 * nv + 7]
    for n in sizes:
        for dt, op in ((np.int32, "add"), (np.int8, "add"), (np.float32, "add"),
                       (np.float64, "max"), (np.uint16, "xor")):
            x = rng.integers(0, 100, n).astype(dt)
            f = rng.random(n) < 0.02
            f[[i for i in (nv - 1, nv, nv + 1) if i < n]] = True
            up = np.flatnonzero(f)
            down = np.concatenate([up[:5], up[:3], [0]]) if up.size else np.array([0])

            def red(idx, x=x, op=op):
                if idx.size == 0:
                    return None
                return compare(gpuscan.reduceat(dev(x), dev(idx), op),
                               _slow.reduceat(x, idx, op), op)

            def seg(x=x, f=f, op=op):
                return compare(gpuscan.segmented_reduce(dev(x), dev(f), op),
                               _slow.segmented_reduce(x, f, op), op)

            name = f"n={n} {np.dtype(dt).name} {op}"
            run.case(f"reduceat increasing {name}", lambda red=red, up=up: red(up))
            run.case(f"reduceat any {name}", lambda red=red, down=down: red(down))
            run.case(f"segmented_reduce {name}", seg)
    if not reduced:
        segreduce_level_cases(run, nv, rng)
    m = rng.integers(0, 50, (5, 3 * nv + 1)).astype(np.int32)
    run.case("reduceat rows with a gap",
             lambda: compare(gpuscan.reduceat(dev(m), [3, nv, 2 * nv], axis=1),
                             _slow.reduceat(m, [3, nv, 2 * nv], axis=1), "add"))

    def bad_index():
        try:
            gpuscan.reduceat(dev(m[0]), dev(np.array([0, 10**9])))
        except IndexError:
            return None
        return "no IndexError"

    run.case("reduceat bad device index", bad_index)
    # The heads' positions take GS_HEADS_TILES (32) count tiles a block: two blocks, the second
    # partial, and the values' levels above 0.
    big = rng.integers(0, 100, 40 * nv + 5).astype(np.int32)
    bf = rng.random(big.size) < 0.05
    # A warp per 8 tiles as one range (the default takes it from 2^25 values on): runs carried
    # from tile to tile at level 0 and, with ids, at level 1.
    rw = 8 * _gpuscan._config()["segreduce_tile_items"]
    rx = rng.uniform(-1, 1, 300 * rw + 37).astype(np.float32)  # 2 tiles of partials
    ri = np.unique(np.concatenate([[0, rw - 1, rw, rw + 1], rng.integers(0, rx.size, 3000)]))

    def ranges():
        with knob(_gpuscan._segreduce_set_many, 1):
            got = host(gpuscan.reduceat(dev(rx), dev(ri)))
        return within(_slow.segments_error(got, rx, ri), "reduceat in ranges")

    run.case("reduceat in ranges of 8 tiles", ranges)
    def seg_big(flags):
        return compare(gpuscan.segmented_reduce(dev(big), dev(flags)),
                       _slow.segmented_reduce(big, flags), "add")

    run.case("segmented_reduce 41 tiles", lambda: seg_big(bf))
    # More heads than the positions written while the host waits for their count: the second
    # positions pass (csrc/ops/segreduce.c heads_room).
    run.case("segmented_reduce 41 tiles, heads past the room",
             lambda: seg_big(rng.random(big.size) < 0.6))
    for n in ([33, nv + 3, 3 * nv + 7] if reduced else [1, 2, 33, nv - 1, nv, nv + 3, 3 * nv + 7]):
        for dt in (np.float32, np.float64):
            a = rng.uniform(0.5, 1.0, n).astype(dt)
            b = rng.uniform(-1, 1, n).astype(dt)

            def lin(a=a, b=b, reverse=False, h0=None):
                res = host(gpuscan.linear_recurrence(dev(a), dev(b), reverse=reverse, h0=h0))
                return within(_slow.recurrence_error(res, a, b, h0=h0, reverse=reverse),
                              "linear_recurrence")

            name = f"n={n} {np.dtype(dt).name}"
            run.case(f"linear_recurrence {name}", lin)
            run.case(f"linear_recurrence reverse h0 {name}",
                     lambda lin=lin: lin(reverse=True, h0=0.5))
            if n > 1:  # unaligned views
                run.case(f"linear_recurrence unaligned {name}",
                         lambda lin=lin, a=a, b=b: lin(a[1:], b[1:]))
    r = rng.uniform(0.5, 1.0, (7, nv + 5))
    q = rng.uniform(-1, 1, (7, nv + 5))

    def rows():
        h0 = np.arange(7.0)
        res = host(gpuscan.linear_recurrence(dev(r), dev(q), axis=1, h0=h0))
        return within(_slow.recurrence_error(res, r, q, axis=1, h0=h0), "linear_recurrence rows")

    run.case("linear_recurrence rows", rows)


def driver_cases(run, nv, reduced):
    """The scan paths that only run over many tiles: float add/mul looking back from anchors
    (a nonzero anchor from tile 256 = LAG + EVERY) and the lookahead driver (tiles >= 4x the resident blocks: 2^23 + 2^22 + 7
    values reach it on any current GPU; without --reduced, 2^26 + 7 its L2 prefetch)."""
    rng = np.random.default_rng(11)
    n3 = 300 * nv + 5
    for dt in ((np.float32,) if reduced else (np.float32, np.float64)):
        for op in (("add",) if reduced else ("add", "mul")):
            x = make_input(rng, dt, n3, op)
            dx = dev(x)
            # Over hundreds of tiles a product of factors near 1 drifts past compare()'s fixed
            # tolerance (as NumPy's own sequential one does): the contract's bounds instead.
            run.case(f"anchored scan {op} {np.dtype(dt).name} n={n3}",
                     lambda dx=dx, x=x, op=op:
                     within(_slow.scan_error(host(gpuscan.scan(dx)), x), "anchored scan")
                     if op == "add" else _slow.mul_scan_problem(host(gpuscan.scan(dx, op)), x))
    x = rng.random(n3).astype(np.float32)
    f = rng.random(n3) < 1e-3
    f[[nv - 1, nv, 5 * nv, 288 * nv]] = True
    run.case("anchored segmented_scan float32",
             lambda: within(_slow.segmented_scan_error(
                 host(gpuscan.segmented_scan(dev(x), dev(f))), x, f), "segmented scan"))
    big = 2**23 + 2**22 + 7
    y = rng.integers(-100, 100, big).astype(np.int32)
    dy = dev(y)
    run.case(f"lookahead scan add int32 n={big}",
             lambda: compare(host(gpuscan.scan(dy)), reference(y, "add", False), "add"))
    if not reduced:
        run.case(f"lookahead scan max int32 excl n={big}",
                 lambda: compare(host(gpuscan.scan(dy, "max", exclusive=True)),
                                 reference(y, "max", True), "max"))
        g = (rng.random(big) < 1e-3).astype(np.uint8)
        run.case(f"lookahead segmented_scan int32 uint8 flags n={big}",
                 lambda: compare(host(gpuscan.segmented_scan(dy, dev(g))),
                                 _slow.segmented_scan(y, g), "add"))
        # The grid asking L2 for the tile a grid's width ahead (at least GS_SCAN_L2_ITERS
        # iterations of the persistent grid: 2^26 four-byte values on an H100 or H200).
        huge = 2**26 + 7
        z = rng.integers(-100, 100, huge).astype(np.int32)
        run.case(f"lookahead scan add int32 with L2 prefetch n={huge}",
                 lambda: compare(host(gpuscan.scan(dev(z))), reference(z, "add", False), "add"))


def linrec_driver_cases(run, cp, reduced):
    """linear_recurrence through the lookahead driver (tiles >= 4x its resident blocks: 4096
    tiles reach it on any current GPU): whole tiles streamed through shared memory, a tail tile,
    tiles read element by element (reversed with n not a multiple of a 16-byte piece; an
    unaligned CuPy view), rows starting inside tiles with h0, float64, in place."""
    rng = np.random.default_rng(17)
    lr_nv = _gpuscan._config()["linrec_tile_items"]
    n = 4096 * lr_nv + 5

    def prefix_sum(dt, reverse=False, cupy_offset=False, in_place=False):
        """a = 1: h is the running sum of b."""
        b = rng.uniform(0, 1, n).astype(dt)
        if cupy_offset:   # one element past a 16-byte boundary
            ca = cp.ones(n + 1, dt)[1:]
            cb = cp.asarray(np.concatenate([[0], b]).astype(dt))[1:]
            res = gpuscan.linear_recurrence(ca, cb, reverse=reverse)
        else:
            da, db = dev(np.ones(n, dt)), dev(b)
            res = gpuscan.linear_recurrence(da, db, reverse=reverse, out=db if in_place else None)
            if in_place and res is not db:
                return "out= not returned"
        return within(_slow.recurrence_error(host(res), np.ones(n, dt), b, reverse=reverse),
                      "prefix sum")

    def rows(dt, reverse=False):
        r = rng.uniform(0.5, 1.0, (1025, 4 * lr_nv + 3)).astype(dt)
        q = rng.uniform(-1, 1, r.shape).astype(dt)
        h0 = np.arange(r.shape[0], dtype=dt) / r.shape[0]
        res = host(gpuscan.linear_recurrence(dev(r), dev(q), axis=1, h0=h0, reverse=reverse))
        return within(_slow.recurrence_error(res, r, q, axis=1, h0=h0, reverse=reverse), "rows")

    run.case(f"lookahead linear_recurrence float32 n={n}", lambda: prefix_sum(np.float32))
    run.case("lookahead linear_recurrence float32 rows h0", lambda: rows(np.float32))
    run.case(f"lookahead linear_recurrence float64 n={n}", lambda: prefix_sum(np.float64))
    if reduced:
        return
    run.case(f"lookahead linear_recurrence float32 reverse n={n}",
             lambda: prefix_sum(np.float32, reverse=True))
    run.case("lookahead linear_recurrence float32 rows h0 reverse",
             lambda: rows(np.float32, reverse=True))
    run.case("lookahead linear_recurrence float64 rows h0 reverse",
             lambda: rows(np.float64, reverse=True))
    run.case(f"lookahead linear_recurrence float32 in place n={n}",
             lambda: prefix_sum(np.float32, in_place=True))
    if cp is not None:
        run.case(f"lookahead linear_recurrence float32 CuPy unaligned n={n}",
                 lambda: prefix_sum(np.float32, cupy_offset=True))


def split_cases(run, nv, cp, reduced):
    """split and compact: the count pass (every flag width, floats), the scatter pass (every
    value width), partial tiles, flags at tile edges, all and none flagged, unaligned device
    input and flags (the element-wise paths), NumPy in/out."""
    rng = np.random.default_rng(11)
    sizes = [nv + 1, 3 * nv + 7] if reduced else [1, 33, nv - 1, nv, nv + 1, 3 * nv + 7]
    flag_types = (np.uint8, np.float64) if reduced else (np.bool_, np.uint8, np.int16, np.int32,
                                                         np.uint64, np.float32, np.float64)

    def check(res, x, f, compact):
        """The values moved bit for bit (and split's count) as gpuscan/_slow.py's twin."""
        want, count = (_slow.compact(x, f), None) if compact else _slow.split(x, f)
        out = host(res if compact else res[0])
        if out.shape != want.shape:
            return f"result {out.shape}, expected {want.shape}"
        u = f"u{x.dtype.itemsize}"
        problem = _slow.first_difference(out.view(u), want.view(u))
        if problem is None and not compact and res[1] != count:
            return f"count {res[1]}, expected {count}"
        return problem

    for n in sizes:
        for dt in (np.int8, np.int16, np.int32, np.float64):
            for fdt in flag_types:
                x = rng.integers(-100, 100, n).astype(dt)
                f = rng.random(n) < 0.5
                f[[i for i in (nv - 1, nv, nv + 1) if i < n]] = True
                f = f.astype(fdt)
                dx, df = dev(x), dev(f)
                for compact in (False, True):
                    fn = gpuscan.compact if compact else gpuscan.split
                    run.case(f"{fn.__name__} {np.dtype(dt).name} n={n} "
                             f"flags={np.dtype(fdt).name}",
                             lambda fn=fn, dx=dx, df=df, x=x, f=f, compact=compact:
                             check(fn(dx, df), x, f, compact))
    n = 3 * nv + 7
    x = rng.standard_normal(n)
    for name, f in (("all", np.ones(n, np.uint8)), ("none", np.zeros(n, np.uint8))):
        for compact in (False, True):
            fn = gpuscan.compact if compact else gpuscan.split
            run.case(f"{fn.__name__} float64 {name} flagged",
                     lambda fn=fn, f=f, compact=compact: check(
                         fn(dev(x), dev(f)), x, f, compact))
    f = rng.random(n) < 0.3
    run.case("split float64 NumPy in/out", lambda: check(gpuscan.split(x, f), x, f, False))
    run.case("compact float64 NumPy in/out", lambda: check(gpuscan.compact(x, f), x, f, True))
    if cp is None:
        return
    # One element past a 16-byte boundary: the element-wise loads of values and flags.
    cx = cp.asarray(rng.integers(-1000, 1000, n + 1).astype(np.int32))
    cf = cp.asarray((rng.random(n + 1) < 0.5).astype(np.uint8))
    for compact in (False, True):
        fn = gpuscan.compact if compact else gpuscan.split
        run.case(f"{fn.__name__} int32 CuPy unaligned", lambda fn=fn, compact=compact: check(
            fn(cx[1:], cf[1:]), cp.asnumpy(cx[1:]), cp.asnumpy(cf[1:]), compact))


def sort_cases(run, reduced):
    """sort and argsort (kernels/dispatch/sort.cu): rows of a few keys (a thread a row: pairs,
    and the keys alone where no zero or NaN is in a warp's rows), the block sort (one key, a row
    filling the block, many short rows a block, rows of one), the device-wide sort (just past the block, a
    few tiles, several histogram chunks, rows of several tiles, skipped digit positions), every
    dtype, descending, NaNs of both signs, -0.0."""
    if not hasattr(gpuscan, "sort"):
        print("SKIP sort: gpuscan.sort is not in this build", flush=True)
        return
    rng = np.random.default_rng(45)
    block = _gpuscan._config().get("sort_block_items", 4096)
    nv = _gpuscan._sort_layout(1, 10 * block, 4, False, False, True)["nv"]
    shapes = [(1,), (block,), (300, 16), (2 * block + 3,), (3 * nv + 5,), (2, 9 * nv + 1)]
    if reduced:
        shapes = [(300, 16), (3 * nv + 5,)]
    dtypes = [np.int8, np.float32, np.int64, np.float64] if reduced else DTYPES

    def keys_of(dt, n):
        dt = np.dtype(dt)
        if dt.kind == "b":
            return rng.random(n) < 0.5
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return rng.integers(max(info.min, -1000), min(info.max, 1000), n).astype(dt)
        x = rng.standard_normal(n).astype(dt)
        x[::7] = np.round(x[::7])
        x[::97] = np.nan
        x[1::97] = -np.nan
        x[2::53] = -0.0
        return x

    def reference(x, descending):
        if not descending:
            return np.argsort(x, axis=-1, kind="stable")
        if x.dtype.kind == "f":
            nan = np.isnan(x)
            return np.lexsort((np.where(nan, 0, -x), nan), axis=-1)
        return np.argsort(~x, axis=-1, kind="stable")

    def one(x, descending):
        want = reference(x, descending)
        kw = {"descending": True} if descending else {}
        idx = host(gpuscan.argsort(dev(x), **kw))
        if not np.array_equal(idx, want):
            return f"argsort differs at {np.flatnonzero(idx != want)[:3]}"
        u = f"u{x.dtype.itemsize}"
        got = host(gpuscan.sort(dev(x), **kw))
        if not np.array_equal(got.view(u), np.take_along_axis(x, want, -1).view(u)):
            return "sort differs"
        return None

    for shape in shapes:
        for dt in dtypes:
            x = keys_of(dt, int(np.prod(shape))).reshape(shape)
            for descending in ((False,) if reduced else (False, True)):
                run.case(f"sort/argsort {np.dtype(dt).name} {shape} descending={descending}",
                         lambda x=x, d=descending: one(x, d))
    x = rng.integers(-100, 100, 3 * nv + 5).astype(np.int64)   # six digit positions skipped
    run.case("sort/argsort int64 small values (skipped passes)", lambda: one(x, False))
    for dt in (np.float32, np.float64):   # no zero, no NaN: a thread a row sorts the keys alone
        for shape in ((1000, 16), (777, 3)):
            x = (rng.random(int(np.prod(shape))) + 0.5).astype(dt).reshape(shape)
            x[::2] *= -1
            run.case(f"sort/argsort {np.dtype(dt).name} {shape} no zero or NaN",
                     lambda x=x: one(x, False) or one(x, True))


def histogram_cases(run, cp):
    """histogram: every method at 256 / 4096 / 65536 bins (65536: the bin range split across
    blocks), uneven n and unaligned starts (vector head and tail), weights (float and int),
    searched edges, autodetected range (device min/max); bincount with and without weights."""
    rng = np.random.default_rng(11)
    n = 3 * 4096 + 7
    x = (rng.random(n) * 4 - 1).astype(np.float32)
    x[::97] = np.nan
    w = rng.random(n).astype(np.float32)
    wi = rng.integers(-5, 5, n).astype(np.int16)
    dx, dw, dwi = dev(x), dev(w), dev(wi)

    def hist_case(dev, ref, **kw):
        h, e = gpuscan.histogram(dev, **kw)
        kw.pop("method", None)
        if "weights" in kw:
            kw["weights"] = host(kw["weights"])
        want_h, want_e = _slow.histogram(ref, **kw)
        if not np.array_equal(e, want_e):
            return "edges differ"
        return compare(host(h), want_h, "max" if want_h.dtype.kind != "f" else "add")

    for method in ("auto", "global", "shared"):
        for bins in (256, 4096, 65536):
            run.case(f"histogram float32 n={n} bins={bins} {method}",
                     lambda m=method, b=bins: hist_case(dx, x, bins=b, range=(-1, 3), method=m))
            run.case(f"histogram float32 weights bins={bins} {method}",
                     lambda m=method, b=bins: hist_case(dx, x, bins=b, range=(-1, 3), method=m,
                                                        weights=dw))
        run.case(f"histogram int16-weights {method}",
                 lambda m=method: hist_case(dx, x, bins=100, range=(0, 1), method=m,
                                            weights=dwi))
        u8 = rng.integers(0, 256, n + 5).astype(np.uint8)
        run.case(f"histogram uint8 bins=256 {method}", lambda m=method: hist_case(
            dev(u8), u8, bins=256, range=(0, 256), method=m))
        i64 = rng.integers(-1000, 1000, 2 * 4096 + 3)
        run.case(f"histogram int64 autodetected {method}", lambda m=method: hist_case(
            dev(i64), i64, bins=77, method=m))
        run.case(f"histogram float32 searched edges {method}", lambda m=method: hist_case(
            dx, x, bins=np.array([-1, -0.5, 0, 0.1, 2.5]), method=m))
    xi = rng.integers(0, 1000, n).astype(np.int32)
    run.case("bincount int32", lambda: compare(
        host(gpuscan.bincount(dev(xi))), _slow.bincount(xi), "max"))
    for label, top in [("past the guess", 5000), ("at the last call's guess", 5000),
                       ("inside the guess", 900)]:
        xs = rng.integers(0, top, 50_001).astype(np.int32)
        run.case(f"bincount int32 {label}", lambda xs=xs: compare(
            host(gpuscan.bincount(dev(xs))), _slow.bincount(xs), "max"))
    neg = xi.copy()
    neg[-1] = -3

    def negative():
        try:
            gpuscan.bincount(dev(neg))
        except ValueError:
            return None
        return "no ValueError"

    run.case("bincount negative", negative)
    run.case("bincount int32 weights minlength", lambda: compare(
        host(gpuscan.bincount(dev(xi), weights=dw, minlength=2000)),
        _slow.bincount(xi, weights=w, minlength=2000), "add"))
    if cp is not None:   # unaligned starts: the vector loop's head and tail
        cx = cp.asarray(x)
        for off in (1, 3):
            run.case(f"histogram float32 CuPy offset {off}", lambda o=off: hist_case(
                cx[o:], x[o:], bins=4096, range=(-1, 3)))


def streamed_cases(run):
    """The host<->device pipeline with tiny chunks: carries from chunk to chunk (flat and
    segmented scans), rows per chunk and rows longer than a chunk, partial reductions, counts
    accumulated, split's two passes, to_device and get through the staging ring."""
    old = _gpuscan._pipeline_chunk_bytes(4096)
    try:
        rng = run.rng
        for dtype, op in ((np.int32, "add"), (np.float32, "add"), (np.float64, "add"),
                          (np.int64, "max"), (np.float64, "mul")):
            for n in (5, 4103) + ((20_011,) if op != "mul" else ()):
                x = make_input(rng, dtype, n, op)
                for exclusive in (False, True):
                    run.case(f"streamed scan {np.dtype(dtype).name} {op} n={n} excl={exclusive}",
                             lambda x=x, op=op, e=exclusive:
                             compare(gpuscan.scan(x, op, exclusive=e), reference(x, op, e), op))
        x = make_input(rng, np.int32, 20_011, "add")
        f = rng.random(x.size) < 0.01
        run.case("streamed segmented scan int32",
                 lambda: compare(gpuscan.segmented_scan(x, f), _slow.segmented_scan(x, f), "add")
                 or compare(gpuscan.segmented_scan(x, f), host(gpuscan.segmented_scan(dev(x), f)),
                            "add"))
        m = make_input(rng, np.float64, 40 * 3001, "add").reshape(40, 3001)
        run.case("streamed scan axis=1 (rows longer than a chunk)",
                 lambda: compare(gpuscan.scan(m, axis=1), reference(m, "add", False, axis=1),
                                 "add"))
        run.case("streamed scan axis=0",
                 lambda: compare(gpuscan.scan(m[:, :50], axis=0),
                                 reference(m[:, :50], "add", False, axis=0), "add"))
        run.case("streamed reduce rows and long rows",
                 lambda: within(_slow.reduce_error(gpuscan.reduce(m, axis=1), m, 1), "rows")
                 or within(_slow.reduce_error(gpuscan.reduce(m), m), "whole"))
        h = rng.normal(size=30_001).astype(np.float32)
        run.case("streamed histogram",
                 lambda: compare(gpuscan.histogram(h, 64)[0], _slow.histogram(h, 64)[0], "max"))
        b = rng.integers(0, 500, 30_001)
        run.case("streamed bincount",
                 lambda: compare(gpuscan.bincount(b), _slow.bincount(b), "max"))
        fl = rng.random(h.size) < 0.3
        run.case("streamed split",
                 lambda: compare(gpuscan.split(h, fl)[0], _slow.split(h, fl)[0], "max"))
        if not ON_HOST:
            run.case("streamed to_device and get",
                     lambda: compare(gpuscan.to_device(h[::-3]).get(), h[::-3], "max"))
        _gpuscan._pipeline_chunk_bytes(64 << 10)
        big = rng.integers(-1, 2, (5 << 20) // 8 + 3)             # int64 results > 4 MiB

        def page_locked():
            p = gpuscan.scan(big)                    # a page-locked result (the cache)
            q = gpuscan.scan(p)                      # read and written directly
            gpuscan.scan(p, out=p)                   # in place, directly
            want = reference(reference(big, "add", False), "add", False)
            return None if np.array_equal(q, want) and np.array_equal(p, want) else "differs"
        run.case("streamed page-locked results and operands", page_locked)
    finally:
        _gpuscan._pipeline_chunk_bytes(old)


def operator_cases(run):
    """gpuscan.Operator's kernels, built by NVRTC (kernels/agent/user.cuh): the plain scan
    (device arrays, 4- and 32-byte T: tiles of 4096 and 1024 values), exclusive, rows and flags
    (the segmented scan), reduce (one pass and chunked; a device array's too) and reduceat; a non-commutative
    operator, so that an operand swapped anywhere shows."""
    add = gpuscan.Operator("x + y", dtype=np.int64, identity=0, name="add")
    mat = gpuscan.Operator(
        "T r; r.a = x.a * y.a + x.b * y.c; r.b = x.a * y.b + x.b * y.d;"
        " r.c = x.c * y.a + x.d * y.c; r.d = x.c * y.b + x.d * y.d; return r;",
        dtype=[("a", "u8"), ("b", "u8"), ("c", "u8"), ("d", "u8")], identity=(1, 0, 0, 1),
        name="matmul2")
    rng = np.random.default_rng(46)

    def add_scan(n, exclusive):
        a = rng.integers(-1000, 1000, n)
        got = host(gpuscan.scan(dev(a), add, exclusive=exclusive))
        want = np.cumsum(a) - (a if exclusive else 0)
        return None if np.array_equal(got, want) else "mismatch"

    def mat_ref(a):
        out, acc = np.empty_like(a), None
        for i, v in enumerate(a.tolist()):
            if acc is None:
                acc = v
            else:
                x, y = acc, v
                acc = tuple(int(t) & ((1 << 64) - 1) for t in (
                    x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
                    x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]))
            out[i] = acc
        return out

    def mat_case(n, form):
        a = np.zeros(n, mat.dtype)
        for f in mat.dtype.names:
            a[f] = rng.integers(0, 1 << 64, n, dtype=np.uint64)
        if form == "scan":
            got, want = gpuscan.scan(a, mat), mat_ref(a)
        elif form == "rows":
            m = a.reshape(4, -1)
            got, want = gpuscan.scan(m, mat, axis=1), np.stack([mat_ref(r) for r in m])
        elif form == "flags":
            flags = rng.random(n) < 0.01
            got = gpuscan.segmented_scan(a, flags, mat)
            heads = np.flatnonzero(flags | (np.arange(n) == 0))
            want = np.concatenate([mat_ref(s) for s in np.split(a, heads[1:])])
        elif form == "reduce":
            got, want = gpuscan.reduce(a, mat), mat_ref(a)[-1]
        else:  # reduceat
            idx = np.array([0, 5, n // 3, n // 2, n - 1])
            got = gpuscan.reduceat(a, idx, mat)
            want = np.array([mat_ref(s)[-1] for s in np.split(a, idx[1:])], mat.dtype)
        return None if got.tobytes() == np.asarray(want, mat.dtype).tobytes() else "mismatch"

    for n in (1, 33, 4095, 4097, 3 * 4096 + 7, 70000):
        for exclusive in (False, True):
            run.case(f"Operator add int64 scan n={n} exclusive={exclusive}",
                     lambda n=n, e=exclusive: add_scan(n, e))

    def many_tiles(dtype, n):
        # more tiles than two grids of resident blocks: the lookahead driver's later iterations
        # (a look-back every iteration, the barriers it spares, tiles drained by warps)
        op = gpuscan.Operator("x + y", dtype=dtype, identity=0, name="add_" + np.dtype(dtype).name)
        a = rng.integers(-8, 8, n).astype(dtype)
        got = host(gpuscan.scan(dev(a), op))
        return None if np.array_equal(got, np.cumsum(a, dtype=dtype)) else "mismatch"

    run.case("Operator add float32 scan, 4096 tiles + 5 values",
             lambda: many_tiles(np.float32, 4096 * 4096 + 5))  # small integers: sums exact
    run.case("Operator add uint64 scan, 2048 tiles + 3 values",
             lambda: many_tiles(np.uint64, 2048 * 2048 + 3))

    def seg_anchors():
        # segment heads hundreds of tiles apart, past the first anchors (tile 256 on)
        op = gpuscan.Operator("x + y", dtype=np.int32, identity=0, name="add_int32")
        n = 600 * 4096 + 3
        a = rng.integers(-8, 8, n).astype(np.int32)
        flags = np.zeros(n, bool)
        flags[[5, 700_000, 2_000_000]] = True
        got = host(gpuscan.segmented_scan(dev(a), dev(flags), op))
        want = np.concatenate([np.cumsum(p, dtype=np.int32)
                               for p in np.split(a, [5, 700_000, 2_000_000])])
        return None if np.array_equal(got, want) else "mismatch"

    run.case("Operator add int32 segmented scan, 600 tiles, heads far apart", seg_anchors)
    for n in (1, 70000):  # a device array reduced to a NumPy scalar
        a = rng.integers(-1000, 1000, n)
        run.case(f"Operator add int64 reduce of a device array n={n}",
                 lambda a=a: None if gpuscan.reduce(dev(a), add) == a.sum() else "mismatch")
    for n in (1, 1025, 3 * 1024 + 5):
        run.case(f"Operator matmul2 scan n={n}", lambda n=n: mat_case(n, "scan"))
    run.case("Operator matmul2 rows", lambda: mat_case(4 * 3001, "rows"))
    run.case("Operator matmul2 flags", lambda: mat_case(5000, "flags"))
    for n in (7, 5000, 1 << 18):
        run.case(f"Operator matmul2 reduce n={n}", lambda n=n: mat_case(n, "reduce"))
    run.case("Operator matmul2 reduceat", lambda: mat_case(9000, "reduceat"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reduced", action="store_true", help="fewer cases (racecheck)")
    ap.add_argument("--only", default="", help="comma-separated groups to run (matrix, layout, "
                    "algorithm, segmented, driver, split, apps, streamed, histogram, sort, operator; "
                    "linrec: "
                    "the recurrence's part of driver); default all")
    ap.add_argument("--match", default="", help="only the cases whose name contains this text")
    ap.add_argument("--host", action="store_true",
                    help="NumPy operands on the active backend (the CPU backend without a GPU): "
                         "a dry run of the cases and their checks")
    args = ap.parse_args()
    global ON_HOST
    ON_HOST = args.host
    only = {g for g in args.only.split(",") if g}

    def want(group):
        return not only or group in only

    t0 = time.perf_counter()
    try:
        be = gpuscan.backend()
    except RuntimeError as exc:
        print(f"sanitize_run: the CUDA backend is not usable: {exc}", flush=True)
        return 2
    if be != "cuda" and not ON_HOST:
        print(f"sanitize_run: gpuscan.backend() is {be!r}; this script needs 'cuda' "
              f"(set GPUSCAN_BACKEND=cuda on a GPU machine, or --host for a dry run)", flush=True)
        return 2
    cp = None
    if not ON_HOST:
        try:
            import cupy as cp
            cp.cuda.set_allocator(None)          # no pool: every array its own cudaMalloc
            cp.cuda.set_pinned_memory_allocator(None)
        except ImportError:
            pass
    nv = _gpuscan._config()["scan_tile_items"]
    print(f"sanitize_run: device {gpuscan.device_info().get('name')}, NV = {nv}, "
          f"{'reduced' if args.reduced else 'full'} set"
          + (", NumPy operands (--host)" if ON_HOST else ""), flush=True)

    dtypes = list(DTYPES)
    try:
        gpuscan.scan(dev(np.ones(3, np.float16)))
        dtypes.append(np.float16)
    except (TypeError, ValueError):
        print("SKIP float16: not supported by this build (optional in the contract)", flush=True)

    run = Run(args.match)
    every = [1, 33, nv - 1, nv + 1, 3 * nv + 7]
    if want("matrix") and args.reduced:
        matrix(run, [3 * nv + 7], dtypes, OPS, (False,))
        matrix(run, every, [np.int32, np.float64], ("add",), (False, True))
    elif want("matrix"):
        matrix(run, every, dtypes, OPS, (False, True))
    if want("matrix"):
        matrix(run, [3 * nv + 7] if args.reduced else every, [np.float32, np.float64], FLOAT_OPS,
               (False,))
    if want("layout"):
        layout_cases(run, nv, cp)
    if want("algorithm"):
        algorithm_cases(run, nv)
    if want("segmented"):
        segmented_and_reduce_cases(run, nv, args.reduced)
    if want("driver"):
        driver_cases(run, nv, args.reduced)
    if want("driver") or want("linrec"):
        linrec_driver_cases(run, cp, args.reduced)
    if want("split"):
        split_cases(run, nv, cp, args.reduced)
    if want("apps"):
        apps_cases(run, nv, args.reduced)
    if want("streamed"):
        streamed_cases(run)
    if want("histogram"):
        histogram_cases(run, cp)
    if want("sort"):
        sort_cases(run, args.reduced)
    if want("operator"):
        operator_cases(run)
    # Everything enqueued has finished before the sanitizer's summary is read.
    if cp is not None:
        cp.cuda.runtime.deviceSynchronize()

    dt = time.perf_counter() - t0
    if run.failures:
        print(f"sanitize_run: {len(run.failures)} of {run.cases} cases FAILED ({dt:.1f} s)")
        for f in run.failures[:50]:
            print(f"  {f}")
        return 1
    print(f"sanitize_run: all {run.cases} cases match NumPy ({dt:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
