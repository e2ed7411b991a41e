"""python -m gpuscan: the backend (and why), the device, and every primitive against NumPy.

The first lines name the backend and why it is the one (on the CPU backend: the build had no
CUDA kernels and why, no driver, no device, or GPUSCAN_BACKEND=cpu).  Then a table with a row
per sample case of every primitive (ROWS), and after it the teaching variants (TEACHING:
algorithm="hillis_steele" and "blelloch", the textbook algorithms, written to be read, not to
be fast) under a heading of their own.  Each row runs the case on the active backend and on
NumPy - NumPy's own function, or where NumPy has none a plain NumPy formulation, both from
gpuscan._slow - checks gpuscan's result against NumPy's, and times both calls the way the
benchmarks time theirs (gpuscan._timing).  A legend under the table says what each column
means.  Exits 1 if any check fails, 2 if the backend cannot be used.
"""

import argparse
import math
import platform
import sys
import textwrap
from dataclasses import dataclass
from typing import Callable

import numpy as np

import gpuscan
from gpuscan import _gpuscan, _slow, _timing

WIDTH = 100          # every line the demo prints fits this many columns
SEGMENT = 1000       # average length of the segments and slices (flags set with p = 1/SEGMENT)
LINE_ROWS = 1000     # rows of the 2-D samples (axis=1) and columns of the axis=0 ones


# --------------------------------------------------------------------------------------------
# Sample data: uniform in [-1, 1) for floats, so sums cancel and rounding shows.
# --------------------------------------------------------------------------------------------
class Data:
    """The samples, made once each on first use (several rows share one)."""

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

    def _make_keys(self):
        return self.rng.integers(0, 1000, self.n, dtype=np.int32)

    def _make_f64_rows(self):
        return self.rng.random((LINE_ROWS, self.n // LINE_ROWS)) * 2 - 1

    def _make_f32_cols(self):
        return self.get("f32")[: self.n // LINE_ROWS * LINE_ROWS].reshape(-1, LINE_ROWS)

    def _make_half(self):
        return self.rng.random(self.n) < 0.5

    def _make_heads(self):
        return self.rng.random(self.n) < 1 / SEGMENT

    def _make_starts(self):
        # reduceat's indices: 0 and the heads, increasing (slices of ~SEGMENT values).
        return np.flatnonzero(np.r_[True, self.get("heads")[1:]])

    def _make_decay(self):
        # A recurrence's a in [0.9, 1): h stays bounded, as an exponential moving average's.
        return (0.9 + 0.1 * self.rng.random(self.n)).astype(np.float32)

    def _make_decay_rows(self):
        return 0.9 + 0.1 * self.rng.random((LINE_ROWS, self.n // LINE_ROWS))


# --------------------------------------------------------------------------------------------
# Checks: check(result, numpy_result, samples) -> (ok, note).
# --------------------------------------------------------------------------------------------
def fmt_ratio(value):
    """A ratio to the bound in at most 6 characters."""
    if not math.isfinite(value):
        return "inf"
    if value < 1e-3:
        return "<0.001"
    return f"{value:.2g}" if value < 100 else f"{value:.0f}"


def exact(result, reference, _samples):
    """Integers, bool, min, max, bitwise ops, counts: NumPy's dtype, shape and bits (each
    array of a tuple: histogram's counts and edges)."""
    pairs = zip(result, reference) if isinstance(reference, tuple) else [(result, reference)]
    problem = next(filter(None, (_slow.first_difference(r, w) for r, w in pairs)), None)
    return problem is None, problem or "exact"


def within_bound(error):
    """A float result within the contract's bound: error(result, *samples) is the largest
    error as a fraction of the bound (gpuscan._slow); NumPy's own beside it."""
    def check(result, reference, samples):
        result, reference = np.asarray(result), np.asarray(reference)
        if result.dtype != reference.dtype or result.shape != reference.shape:
            return False, _slow.first_difference(result, reference)
        ratio = error(result, *samples)
        return ratio <= 1, f"{fmt_ratio(ratio)} (NumPy {fmt_ratio(error(reference, *samples))})"

    return check


def split_check(result, reference, samples):
    """split's (values, count): the values bit for bit, the count as a Python int."""
    ok, note = exact(result[0], reference[0], samples)
    if ok and (type(result[1]) is not int or result[1] != reference[1]):
        return False, f"count {result[1]!r}, NumPy {reference[1]!r}"
    return ok, note


# --------------------------------------------------------------------------------------------
# The rows.  A row: the primitive, a label, the samples (names of Data), gpuscan's call, NumPy's
# (gpuscan._slow's twin: NumPy's own function where it has one), and the check.
# --------------------------------------------------------------------------------------------
@dataclass
class Row:
    primitive: str
    label: str
    samples: tuple
    run: Callable
    numpy: Callable
    check: Callable


def row(primitive, label, samples, *args, check=exact, algorithm=None, **kwargs):
    """A row whose gpuscan call and NumPy twin take the samples and the same arguments
    (algorithm=, a teaching variant, goes to gpuscan's alone).  The functions are looked up
    when the row runs."""
    teach = {} if algorithm is None else {"algorithm": algorithm}
    return Row(primitive, label, tuple(samples.split()),
               lambda *s: getattr(gpuscan, primitive)(*s, *args, **kwargs, **teach),
               lambda *s: getattr(_slow, primitive)(*s, *args, **kwargs), check)


SCAN_BOUND = within_bound(_slow.scan_error)


def main_rows():
    """Every primitive's rows, in the order of the table."""
    return [
        row("scan", "float32 add", "f32", check=SCAN_BOUND),
        row("scan", "int32 add -> int64", "i32"),
        row("scan", "int32 add, exclusive", "i32", exclusive=True),
        row("scan", "int64 mul (wraps)", "odd_i64", "mul"),
        row("scan", "float32 max", "f32", "max"),
        row("scan", "uint8 xor, exclusive", "u8", np.bitwise_xor, exclusive=True),
        row("scan", "float64 add, axis=1", "f64_rows", axis=1,
            check=within_bound(lambda r, x: _slow.scan_error(r, x, axis=1))),
        row("scan", "float32 min, axis=0", "f32_cols", "min", axis=0),
        row("segmented_scan", "int32 add, exclusive", "i32 heads", exclusive=True),
        row("segmented_scan", "int32 max", "i32 heads", "max"),
        row("reduce", "float32 add", "f32", check=within_bound(_slow.reduce_error)),
        row("reduce", "int32 add -> int64", "i32"),
        row("reduce", "float32 max", "f32", "max"),
        row("reduce", "uint8 xor", "u8", "xor"),
        row("reduce", "float64 add, axis=1", "f64_rows", axis=1,
            check=within_bound(lambda r, x: _slow.reduce_error(r, x, 1))),
        row("reduce", "float32 add, axis=0", "f32_cols", axis=0,
            check=within_bound(lambda r, x: _slow.reduce_error(r, x, 0))),
        row("reduceat", "float32 add", "f32 starts", check=within_bound(_slow.segments_error)),
        row("reduceat", "int32 max", "i32 starts", "max"),
        row("segmented_reduce", "float32 add", "f32 heads",
            check=within_bound(lambda r, x, f: _slow.segments_error(
                r, x, np.flatnonzero(np.r_[True, f[1:]])))),
        row("segmented_reduce", "int32 min", "i32 heads", "min"),
        row("linear_recurrence", "float32, a in [0.9, 1)", "decay f32",
            check=within_bound(_slow.recurrence_error)),
        row("linear_recurrence", "float64, axis=1", "decay_rows f64_rows",
            check=within_bound(_slow.recurrence_error)),
        row("split", "float32, half flagged", "f32 half", check=split_check),
        row("compact", "int32, half flagged", "i32 half"),
        row("histogram", "float32, 256 bins", "f32", bins=256, range=(-1, 1)),
        row("histogram", "float32, 65536 bins", "f32", bins=65536),
        row("histogram", "uint8, 256 bins", "u8", bins=256, range=(0, 256)),
        row("bincount", "uint8", "u8"),
        row("bincount", "int32 in [0, 1000)", "keys"),
        row("sort", "float32", "f32"),
        row("sort", "float64, axis=1", "f64_rows", axis=1),
        row("argsort", "int32", "i32"),
        row("argsort", "float32, descending", "f32", descending=True),
    ]


def teaching_rows():
    """The teaching variants (algorithm=): the same answers, by the textbook algorithms."""
    return [
        row("scan", "int32 add, hillis_steele", "i32", algorithm="hillis_steele"),
        row("scan", "float32 add, hillis_steele", "f32", algorithm="hillis_steele",
            check=SCAN_BOUND),
        row("scan", "int32 add excl, blelloch", "i32", exclusive=True, algorithm="blelloch"),
        row("scan", "float32 add, blelloch", "f32", algorithm="blelloch", check=SCAN_BOUND),
        row("segmented_scan", "int32 add excl, blelloch", "i32 heads", exclusive=True,
            algorithm="blelloch"),
        row("segmented_scan", "int32 max, blelloch", "i32 heads", "max", algorithm="blelloch"),
    ]


TEACHING_HEADING = ('Teaching variants (algorithm="hillis_steele", "blelloch"): the textbook '
                    "algorithms, one parallel\nstep at a time, written to be read, not to be "
                    "fast (gpuscan.trace shows their steps):")


def legend(n):
    """What the columns mean, as (term, explanation) pairs (printed under the tables)."""
    return [
        ("gpuscan, NumPy",
         f"milliseconds per call, NumPy arrays in and out (on the CUDA backend the copies to "
         f"and from the GPU included): the median of the two calls made in turn for about "
         f"{_timing.TARGET_S:g} s ({_timing.MIN_REPS} to {_timing.MAX_REPS} times each) after a "
         f"warm-up, the way the benchmarks time their host cases (gpuscan/_timing.py).  NumPy "
         f"is NumPy's own function; segmented_scan, segmented_reduce, linear_recurrence and "
         f"split, which NumPy lacks, are timed as plain NumPy formulations (gpuscan/_slow.py)."),
        ("speed-up", "NumPy's time over gpuscan's: above 1, gpuscan is faster."),
        ("check", "ok when gpuscan's result is NumPy's: the same dtype, shape and bits, or for a "
                  "float sum within the contract's bound, (log2 n + 2) * eps * sum|x| over the "
                  "n values added."),
        ("of the bound", '"exact" when the bits are NumPy\'s; for a float sum, the largest '
                         "error as a fraction of that bound (1: at the bound), and NumPy's own "
                         "in brackets."),
        ("samples", f"{n:,} elements; axis=1 runs along {LINE_ROWS} rows, axis=0 along "
                    f"{LINE_ROWS} columns; the segments and reduceat's slices hold {SEGMENT} "
                    f"values on average."),
    ]


# --------------------------------------------------------------------------------------------
# Running and reporting.
# --------------------------------------------------------------------------------------------
COLUMNS = (("primitive", 17, "<"), ("case", 26, "<"), ("check", 5, "<"), ("gpuscan", 8, ">"),
           ("NumPy", 8, ">"), ("speed-up", 8, ">"), ("of the bound", 0, "<"))


def fmt_line(*cells):
    """One line of the table: the cells in their columns, two spaces before the last."""
    *fixed, last = (f"{c:{a}{w}}" for c, (_, w, a) in zip(cells, COLUMNS))
    return (" ".join(fixed) + "  " + last).rstrip()


def fmt_ms(ms):
    """Milliseconds in at most 8 characters."""
    if not math.isfinite(ms):
        return "-"
    return f"{ms:.3f}" if ms < 1000 else f"{ms:.1f}"


def fmt_speedup(ratio):
    """A speed-up in at most 8 characters."""
    if not math.isfinite(ratio):
        return "-"
    return f"{ratio:.2f}x" if ratio < 100 else f"{ratio:.0f}x"


@dataclass
class Outcome:
    ok: bool
    gpuscan_ms: float
    numpy_ms: float
    note: str


def run_row(data, row):
    """Check the row's call against NumPy's (one call each), then time both by the benchmarks'
    host policy; a call that raises fails the row, and the others still run."""
    samples = tuple(data.get(name) for name in row.samples)
    try:
        ok, note = row.check(row.run(*samples), row.numpy(*samples), samples)
        mine, numpys = _timing.time_calls(lambda: row.run(*samples),
                                          lambda: row.numpy(*samples))
    except Exception as exc:
        return Outcome(False, math.inf, math.inf, f"{type(exc).__name__}: {exc}")
    return Outcome(ok, mine.ms, numpys.ms, note)


def print_row(row, outcome):
    speedup = outcome.numpy_ms / outcome.gpuscan_ms if outcome.gpuscan_ms > 0 else math.inf
    cells = [row.primitive, row.label, "ok" if outcome.ok else "FAIL", fmt_ms(outcome.gpuscan_ms),
             fmt_ms(outcome.numpy_ms), fmt_speedup(speedup)]
    line = fmt_line(*cells, outcome.note)
    if len(line) <= WIDTH:
        print(line, flush=True)
        return
    # A long note (what a failed check found, an exception): on the lines under the row.
    print(fmt_line(*cells, "(below)"), flush=True)
    print(textwrap.fill(outcome.note, WIDTH, initial_indent="    ", subsequent_indent="    "),
          flush=True)


def run_table(rows, data):
    """Print one line per row; returns the number of failures."""
    failures = 0
    for row in rows:
        if not hasattr(gpuscan, row.primitive):
            continue
        outcome = run_row(data, row)
        failures += not outcome.ok
        print_row(row, outcome)
    return failures


def backend_line():
    """The backend, and why it is this one (raises as backend() does)."""
    active = gpuscan.backend()
    config = _gpuscan._config()
    note = config["build_note"]  # setup.py's: the kernels' targets, or why there are none
    if active == "cuda":
        return f"backend: cuda ({note})"
    if not config["built_with_cuda"]:
        line = f"backend: cpu, because this build has {note}"
        if "no GPU was visible" in note:
            line += ("\n  (for a GPU that was not visible then, build again with its "
                     "architecture: GPUSCAN_CUDA_ARCHS=90 python3 -m pip install -e . for Hopper)")
        return line
    return f"backend: cpu, because {_gpuscan._backend_reason()} (this build has {note})"


def say(text):
    """Print text with every line folded to WIDTH columns (continuations indented)."""
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        print(textwrap.fill(line, WIDTH, subsequent_indent=indent) if line else "", flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m gpuscan",
        description="Run every gpuscan primitive on sample data on the active backend, check "
                    "each result against NumPy's and time both calls.",
        epilog="Exit status: 0 when every check passes, 1 when one fails, 2 when the backend "
               "cannot be used.  GPUSCAN_BACKEND=cpu or cuda picks the backend.")
    parser.add_argument("-n", type=int, default=10**7,
                        help="elements per sample (default: 10000000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    args = parser.parse_args(argv)
    if args.n < 10 * SEGMENT:
        parser.error(f"-n must be at least {10 * SEGMENT}")
    return args


def main(argv=None):
    args = parse_args(argv)
    print(f"gpuscan {gpuscan.__version__}, NumPy {np.__version__}, "
          f"Python {platform.python_version()}")
    try:
        line = backend_line()
        info = gpuscan.device_info()
    except Exception as exc:
        print(f"backend unusable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    say(line)
    for key, value in info.items():
        if key != "backend":
            say(f"  {key}: {value}")
    if info["backend"] == "cuda":
        print("NumPy in, NumPy out: gpuscan's times include the copies to and from the GPU.")
    print()
    header = fmt_line(*(name for name, _, _ in COLUMNS))
    print(header)
    print("-" * WIDTH)
    data = Data(args.n, args.seed)
    failures = run_table(main_rows(), data)
    print()
    say(TEACHING_HEADING)
    failures += run_table(teaching_rows(), data)
    print()
    print("Columns:")
    for term, text in legend(args.n):
        print(textwrap.fill(f"{term}: {text}", WIDTH, initial_indent="  ",
                            subsequent_indent="    "))
    print()
    if failures:
        print(f"{failures} case(s) FAILED", file=sys.stderr)
        return 1
    print("all cases agree with NumPy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
