"""``python -m gpuscan``: the backend (and why), the device, and every primitive against NumPy.

The first lines name the backend and why it was chosen (on the CPU backend: the build had no
CUDA kernels and why, no driver, no device, or GPUSCAN_BACKEND=cpu).  Then, for each primitive
in ``PRIMITIVES`` that this build of gpuscan has, a few sample cases run on the active backend
and on NumPy (a plain NumPy formulation where NumPy has no such function, as for segmented
scans), and after them the teaching variants of ``TEACHING`` (``algorithm="hillis_steele"``,
``"blelloch"``: the textbook algorithms, written to be read, not to be fast), under their own
heading.  Each result is checked against NumPy's (integers and min/max: bit-identical; float
add: within the contract's bound (log2(n)+2)*eps*sum|x[j]| over the values combined), and a
table shows the best of ``--repeat`` wall-clock times (one run for a teaching variant).  Exits 1
if any check fails, 2 if the backend cannot be used.
"""

import argparse
import math
import platform
import sys
import time

import numpy as np

import gpuscan
from gpuscan import _gpuscan


# --------------------------------------------------------------------------------------------
# Sample data: uniform in [-1, 1), so sums cancel and rounding shows.
# --------------------------------------------------------------------------------------------
class Data:
    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self._cache = {}

    def get(self, name):
        if name not in self._cache:
            self._cache[name] = getattr(self, "_make_" + name)()
        return self._cache[name]

    def _make_f32(self):
        return self.rng.random(self.n, dtype=np.float32) * np.float32(2) - np.float32(1)

    def _make_i32(self):
        return self.rng.integers(-1000, 1000, self.n, dtype=np.int32)

    def _make_odd_i64(self):
        # Odd factors: the running product never becomes 0 and wraps modulo 2**64 all along.
        return self.rng.integers(0, 2**62, self.n, dtype=np.int64) | 1

    def _make_u8(self):
        return self.rng.integers(0, 256, self.n, dtype=np.uint8)

    def _make_f64_rows(self):
        return self.rng.random((1000, self.n // 1000)) * 2 - 1

    def _make_f32_cols(self):
        return self.get("f32")[: self.n // 1000 * 1000].reshape(-1, 1000)

    def _make_f32_half(self):
        # Values with their flags, each set with probability 1/2: (values, bool flags).
        return self.get("f32"), self.rng.random(self.n) < 0.5

    def _make_i32_half(self):
        return self.get("i32"), self.rng.random(self.n) < 0.5

    def _make_i32_seg(self):
        # Segments of 1000 elements on average: (values, bool flags).
        return self.get("i32"), self.rng.random(self.n) < 1e-3


# --------------------------------------------------------------------------------------------
# Checks: each returns (ok, note).
# --------------------------------------------------------------------------------------------
def check_equal(out, ref, x):
    """Same dtype, same shape, same values (NaN equal to NaN)."""
    if out.dtype != ref.dtype:
        return False, f"dtype {out.dtype}, NumPy {ref.dtype}"
    if out.shape != ref.shape:
        return False, f"shape {out.shape}, NumPy {ref.shape}"
    equal_nan = out.dtype.kind == "f"
    if not np.array_equal(out, ref, equal_nan=equal_nan):
        i = np.flatnonzero(~((out == ref) | (equal_nan & (out != out) & (ref != ref))))[0]
        got, want = out.flat[i].item(), ref.flat[i].item()
        return False, f"first difference at flat index {i}: {got!r}, NumPy {want!r}"
    return True, "bit-identical"


# (id(x), axis) -> (x, exact, bound) of add_bound_ratio: several rows check sums of one sample
# (gpuscan's and NumPy's, the teaching variants'), and the exact sums are the slow part.
_EXACT_SUMS: dict[tuple[int, int | None], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def add_bound_ratio(result, x, axis):
    """Largest |result - exact| / bound over the elements, bound = (log2(n)+2)*eps*sum|x[j]|.

    The "exact" sums are a sequential cumsum in a wider type (float64 for float32 input, long
    double for float64), whose own error, at most n*eps_wide*sum|x[j]|, is added to the bound so
    that a pass is never owed to the reference's rounding.
    """
    wide = np.float64 if x.dtype.itemsize < 8 else np.longdouble
    key = (id(x), axis)
    if key not in _EXACT_SUMS:  # x is kept in the value, so its id stays its own
        xw = x.astype(wide)
        total = np.cumsum(np.abs(xw), axis=axis)
        n = x.size if axis is None else x.shape[axis]
        bound = (math.log2(max(n, 1)) + 2) * np.finfo(x.dtype).eps * total
        bound += n * np.finfo(wide).eps * total
        _EXACT_SUMS[key] = (x, np.cumsum(xw, axis=axis), bound)
    _, exact, bound = _EXACT_SUMS[key]
    err = np.abs(result.astype(wide) - exact)
    if np.any(err[bound == 0] != 0):
        return math.inf
    nz = bound > 0
    return float(np.max(err[nz] / bound[nz])) if np.any(nz) else 0.0


def check_sum_bound(axis):
    """A float reduction: |result - exact| <= (log2(n)+2)*eps*sum|x| (n values reduced), the
    exact sums taken in a wider type whose own error is added to the bound."""
    def check(out, ref, x):
        if out.dtype != ref.dtype or out.shape != ref.shape:
            return check_equal(out, ref, x)
        wide = np.float64 if x.dtype.itemsize < 8 else np.longdouble
        xw = x.astype(wide)
        n = x.size if axis is None else x.shape[axis]
        mag = np.sum(np.abs(xw), axis=axis)
        bound = (math.log2(max(n, 1)) + 2) * (np.finfo(x.dtype).eps + np.finfo(wide).eps) * mag
        exact = np.sum(xw, axis=axis)
        ratio = float(np.max(np.abs(out.astype(wide) - exact) / bound))
        numpy_ratio = float(np.max(np.abs(ref.astype(wide) - exact) / bound))
        return ratio <= 1.0, f"max error {ratio:.3g} of the bound (NumPy's: {numpy_ratio:.3g})"

    return check


def segmented_reference(x, flags, exclusive, op):
    """A plain NumPy segmented scan of int32 values: add as the prefix sum less the sum before
    each segment's head; max by lifting each segment above the previous ones."""
    heads = flags.copy()
    heads[0] = True
    seg = np.cumsum(heads) - 1
    if op == "add":
        inc = np.cumsum(x, dtype=np.int64)
        starts = np.flatnonzero(heads)
        before = np.concatenate([[0], inc[starts[1:] - 1]])
        inc = inc - before[seg]
        if not exclusive:
            return inc
        out = np.empty_like(inc)
        out[1:] = inc[:-1]
        out[heads] = 0
        return out
    lift = seg.astype(np.int64) << 32
    return (np.maximum.accumulate(x.astype(np.int64) + lift) - lift).astype(x.dtype)


def check_add_bound(axis):
    def check(out, ref, x):
        if out.dtype != ref.dtype or out.shape != ref.shape:
            return check_equal(out, ref, x)
        ratio = add_bound_ratio(out, x, axis)
        numpy_ratio = add_bound_ratio(ref, x, axis)
        note = f"max error {ratio:.3g} of the bound (NumPy's: {numpy_ratio:.3g})"
        return ratio <= 1.0, note

    return check


# --------------------------------------------------------------------------------------------
# The cases, one table per primitive.  A case is (label, data name, gpuscan call, NumPy call,
# check).  NumPy has no exclusive scan: shift its inclusive one and put the identity first.
# --------------------------------------------------------------------------------------------
def exclusive(inclusive, identity):
    out = np.empty_like(inclusive)
    out[0] = identity
    out[1:] = inclusive[:-1]
    return out


SCAN_CASES = [
    ("float32 add", "f32",
     lambda x: gpuscan.scan(x),
     lambda x: np.cumsum(x),
     check_add_bound(None)),
    ("int32 add -> int64", "i32",
     lambda x: gpuscan.scan(x),
     lambda x: np.cumsum(x),
     check_equal),
    ("int32 add, exclusive", "i32",
     lambda x: gpuscan.scan(x, exclusive=True),
     lambda x: exclusive(np.cumsum(x), 0),
     check_equal),
    ("int64 mul (wraps)", "odd_i64",
     lambda x: gpuscan.scan(x, "mul"),
     lambda x: np.cumprod(x),
     check_equal),
    ("float32 max", "f32",
     lambda x: gpuscan.scan(x, "max"),
     lambda x: np.maximum.accumulate(x),
     check_equal),
    ("uint8 xor, exclusive", "u8",
     lambda x: gpuscan.scan(x, np.bitwise_xor, exclusive=True),
     lambda x: exclusive(np.bitwise_xor.accumulate(x), 0),
     check_equal),
    ("float64 add, axis=1 (1000 rows)", "f64_rows",
     lambda x: gpuscan.scan(x, axis=1),
     lambda x: np.cumsum(x, axis=1),
     check_add_bound(1)),
    ("float32 min, axis=0 (1000 cols)", "f32_cols",
     lambda x: gpuscan.scan(x, "min", axis=0),
     lambda x: np.minimum.accumulate(x, axis=0),
     check_equal),
]

# The teaching variants (algorithm=): the same answers, by the textbook algorithms.
TEACHING_SCAN_CASES = [
    ("int32 add, hillis_steele", "i32",
     lambda x: gpuscan.scan(x, algorithm="hillis_steele"),
     lambda x: np.cumsum(x),
     check_equal),
    ("float32 add, hillis_steele", "f32",
     lambda x: gpuscan.scan(x, algorithm="hillis_steele"),
     lambda x: np.cumsum(x),
     check_add_bound(None)),
    ("int32 add, exclusive, blelloch", "i32",
     lambda x: gpuscan.scan(x, exclusive=True, algorithm="blelloch"),
     lambda x: exclusive(np.cumsum(x), 0),
     check_equal),
    ("float32 add, blelloch", "f32",
     lambda x: gpuscan.scan(x, algorithm="blelloch"),
     lambda x: np.cumsum(x),
     check_add_bound(None)),
]

SEGMENTED_CASES = [
    ("int32 add, exclusive", "i32_seg",
     lambda xf: gpuscan.segmented_scan(xf[0], xf[1], exclusive=True),
     lambda xf: segmented_reference(xf[0], xf[1], True, "add"),
     check_equal),
    ("int32 max", "i32_seg",
     lambda xf: gpuscan.segmented_scan(xf[0], xf[1], "max"),
     lambda xf: segmented_reference(xf[0], xf[1], False, "max"),
     check_equal),
]

TEACHING_SEGMENTED_CASES = [
    ("int32 add, exclusive, blelloch", "i32_seg",
     lambda xf: gpuscan.segmented_scan(xf[0], xf[1], exclusive=True, algorithm="blelloch"),
     lambda xf: segmented_reference(xf[0], xf[1], True, "add"),
     check_equal),
    ("int32 max, blelloch", "i32_seg",
     lambda xf: gpuscan.segmented_scan(xf[0], xf[1], "max", algorithm="blelloch"),
     lambda xf: segmented_reference(xf[0], xf[1], False, "max"),
     check_equal),
]

REDUCE_CASES = [
    ("float32 add", "f32",
     lambda x: gpuscan.reduce(x),
     lambda x: np.add.reduce(x),
     check_sum_bound(None)),
    ("int32 add -> int64", "i32",
     lambda x: gpuscan.reduce(x),
     lambda x: np.add.reduce(x, dtype=np.int64),
     check_equal),
    ("float32 max", "f32",
     lambda x: gpuscan.reduce(x, "max"),
     lambda x: np.maximum.reduce(x),
     check_equal),
    ("uint8 xor", "u8",
     lambda x: gpuscan.reduce(x, "xor"),
     lambda x: np.bitwise_xor.reduce(x),
     check_equal),
    ("float64 add, axis=1 (1000 rows)", "f64_rows",
     lambda x: gpuscan.reduce(x, axis=1),
     lambda x: np.add.reduce(x, axis=1),
     check_sum_bound(1)),
    ("float32 add, axis=0 (1000 cols)", "f32_cols",
     lambda x: gpuscan.reduce(x, axis=0),
     lambda x: np.add.reduce(x, axis=0),
     check_sum_bound(0)),
]


def split_reference(x, flags):
    """NumPy's stable partition: the flagged values, then the others, and their count."""
    return np.concatenate([x[flags], x[~flags]]), int(flags.sum())


def check_split(out, ref, x):
    """split's (out, count) against NumPy's, bit for bit."""
    ok, note = check_equal(np.asarray(out[0]), np.asarray(ref[0]), x)
    if ok and out[1] != ref[1]:
        return False, f"count {out[1]}, NumPy {ref[1]}"
    return ok, note


SPLIT_CASES = [
    ("float32, bool flags (half set)", "f32_half",
     lambda xf: gpuscan.split(xf[0], xf[1]),
     lambda xf: split_reference(xf[0], xf[1]),
     lambda out, ref, xf: check_split(out, ref, xf[0])),
    ("int32 compact, bool flags", "i32_half",
     lambda xf: gpuscan.compact(xf[0], xf[1]),
     lambda xf: xf[0][xf[1]],
     lambda out, ref, xf: check_equal(out, ref, xf[0])),
]

HISTOGRAM_CASES = [
    ("float32, 256 bins", "f32",
     lambda x: gpuscan.histogram(x, bins=256, range=(-1, 1))[0],
     lambda x: np.histogram(x, bins=256, range=(-1, 1))[0],
     check_equal),
    ("float32, 65536 bins, autodetected", "f32",
     lambda x: gpuscan.histogram(x, bins=65536)[0],
     lambda x: np.histogram(x, bins=65536)[0],
     check_equal),
    ("uint8, 256 bins", "u8",
     lambda x: gpuscan.histogram(x, bins=256, range=(0, 256))[0],
     lambda x: np.histogram(x, bins=256, range=(0, 256))[0],
     check_equal),
]

BINCOUNT_CASES = [
    ("uint8", "u8",
     lambda x: gpuscan.bincount(x),
     lambda x: np.bincount(x),
     check_equal),
]

# Every primitive the demo knows; those this build lacks are skipped.  Adding one is one entry.
PRIMITIVES = {
    "scan": SCAN_CASES,
    "segmented_scan": SEGMENTED_CASES,
    "reduce": REDUCE_CASES,
    "split": SPLIT_CASES,
    "histogram": HISTOGRAM_CASES,
    "bincount": BINCOUNT_CASES,
}

# The teaching variants, shown after the production rows under a heading of their own.
TEACHING = {
    "scan": TEACHING_SCAN_CASES,
    "segmented_scan": TEACHING_SEGMENTED_CASES,
}
TEACHING_HEADING = ("Teaching variants (algorithm=\"hillis_steele\", \"blelloch\"): the textbook "
                    "algorithms, one parallel\nstep at a time, written to be read, not to be fast "
                    "(gpuscan.trace shows their steps); one run each:")


# --------------------------------------------------------------------------------------------
# Running and reporting.
# --------------------------------------------------------------------------------------------
def best_time(fn, x, repeat):
    result, best = None, math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn(x)
        best = min(best, time.perf_counter() - t0)
    return result, best


def fmt_ms(seconds):
    return f"{seconds * 1e3:9.2f} ms" if math.isfinite(seconds) else "        -   "


def run_case(data, label, data_name, run, reference, check, repeat):
    x = data.get(data_name)
    try:
        out, t_gs = best_time(run, x, repeat)
        ref, t_np = best_time(reference, x, repeat)
        # A tuple (split's (out, count)) goes to its check as it is.
        ok, note = check(*(r if isinstance(r, tuple) else np.asarray(r) for r in (out, ref)), x)
    except Exception as exc:  # a failing case is reported, and the others still run
        return False, math.inf, math.inf, f"{type(exc).__name__}: {exc}"
    return ok, t_gs, t_np, note


def backend_line():
    """One line: the backend, and why it is this one (raises as backend() does)."""
    active = gpuscan.backend()
    note = _gpuscan._build_note()  # setup.py's: the kernels' targets, or why there are none
    if active == "cuda":
        return f"backend: cuda ({note})"
    if not _gpuscan._built_with_cuda():
        line = f"backend: cpu, because this build has {note}"
        if "no GPU was visible" in note:
            line += ("\n  (for a GPU that was not visible then, build again with its "
                     "architecture: GPUSCAN_CUDA_ARCHS=90 python3 -m pip install -e . for Hopper)")
        return line
    return f"backend: cpu, because {_gpuscan._backend_reason()} (this build has {note})"


def run_table(title, tables, data, repeat):
    """Print one row per case of tables {primitive: cases}; returns the number of failures."""
    failures = 0
    if title:
        print(f"\n{title}")
    for primitive, cases in tables.items():
        if not hasattr(gpuscan, primitive):
            continue
        for label, data_name, run, reference, check in cases:
            ok, t_gs, t_np, note = run_case(data, label, data_name, run, reference, check, repeat)
            failures += not ok
            speedup = f"{t_np / t_gs:7.2f}x" if math.isfinite(t_gs) and t_gs > 0 else "       -"
            print(f"{primitive:<15} {label:<33} {'ok' if ok else 'FAIL':<5} {fmt_ms(t_gs)} "
                  f"{fmt_ms(t_np)} {speedup}  {note}", flush=True)
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpuscan", description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=10**7, help="elements per sample (10**7)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per call, best kept (3)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    args = parser.parse_args(argv)
    if args.n < 1000 or args.repeat < 1:
        parser.error("-n must be at least 1000 and --repeat at least 1")

    print(f"gpuscan {gpuscan.__version__}, NumPy {np.__version__}, "
          f"Python {platform.python_version()}")
    try:
        line = backend_line()
        info = gpuscan.device_info()
    except Exception as exc:
        print(f"backend unusable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(line)
    for key, value in info.items():
        if key != "backend":
            print(f"  {key}: {value}")
    if info["backend"] == "cuda":
        print("NumPy in, NumPy out: gpuscan times include the host<->device copies.")
    print(f"samples of {args.n:,} elements; best of {args.repeat} runs\n")

    header = (f"{'primitive':<15} {'case':<33} {'check':<5} {'gpuscan':>12} {'NumPy':>12} "
              f"{'speed-up':>8}  note")
    print(header)
    print("-" * len(header))
    data = Data(args.n, args.seed)
    failures = run_table(None, PRIMITIVES, data, args.repeat)
    failures += run_table(TEACHING_HEADING, TEACHING, data, 1)

    print()
    if failures:
        print(f"{failures} case(s) FAILED", file=sys.stderr)
        return 1
    print("all cases agree with NumPy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
