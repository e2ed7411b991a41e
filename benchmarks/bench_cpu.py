"""benchmarks/bench_cpu.py - gpuscan's CPU backend against NumPy, on 1 thread and on all.

    python benchmarks/bench_cpu.py [--quick] [--out DIR] [--max-exp 8] [--threads 1,2]
                                   [--machine NAME] [--only SUBSTRING]

NumPy in, NumPy out, on the CPU backend (GPUSCAN_BACKEND=cpu): every primitive - scan,
segmented_scan (heads at 1e-3, 1% and half of the values), reduce (add, max, and xor of the
integers), reduceat and segmented_reduce (add, ~1000-value slices), histogram (256 bins),
bincount, compact and split (half and 1% of the flags set) - for float32, int32 and uint8 values
of 10^3 ... 10^8 elements (the largest capped by --max-exp), the linear recurrence of float32 (a
in [0.9, 1)), scan and reduce (add) along each axis of (10^4, 1000) and (1000, 10^4) arrays,
reduce (add, max) along each axis of (2, 5*10^6) and (5*10^6, 2) ones, an add gpuscan.Operator
(float32, int64, int32) against the built-in scan and reduce of its dtype, and sort and argsort of
int32, float32 and int64 keys (each dtype's whole range) up to 10^7 beside np.sort/np.argsort
of the default kind and of kind="stable".  Each thread count
runs in its own process (GPUSCAN_NUM_THREADS is read once), NumPy beside gpuscan in the same
process: the two calls alternate, the order flipping
every repetition, so a change of load on the host hits both alike.  The NumPy baseline of a
case is the call a NumPy user would write (np.cumsum, np.add.reduce, np.histogram, x[mask],
...; for segmented_scan, segmented_reduce and linear_recurrence, which NumPy lacks, the plain
NumPy formulations of gpuscan/_slow.py).

Timing (shared 2-core hosts are noisy): gpuscan's host policy (gpuscan/_timing.py, which the demo
and harness.py's host cases use too): a warm-up call of each, then repetitions for about
_timing.TARGET_S seconds of both (_timing.MIN_REPS.._timing.MAX_REPS); the table shows the median
per call of each and "vs numpy" = NumPy's median / gpuscan's median (> 1: gpuscan faster), and
"min ratio" = NumPy's fastest call / gpuscan's fastest (the quietest moment of each), with the
spread (p90 - p10) / median of gpuscan's calls and the host's 1-minute load average during the
case. Every gpuscan result is checked once, by the package's NumPy twins (gpuscan/_slow.py):
integers, min/max, counts and moved values bit for bit against NumPy's; float sums within the
contract's bound (log2(n)+2)*eps*sum|x| against a float64 reference. The summary checks the goals:
at least NumPy's speed from 10^4 elements, within 1.5x of its time below, and 1.5x its speed at
10^7 on all threads for the primitives of FAST_AT_1E7; for sort and argsort issue 45's (see
sort_goals); for the Operator issue 46's (at least 0.8x the built-in op from 10^6 on all threads,
and a new Operator's first call in a fresh process with an empty disk cache within 1 s). The result file is <machine>-<date>-cpu.txt
(plus .json) in --out (default benchmarks/results/), the machine being what gpuscan.device_info()
calls the CPU unless --machine names it, as harness.py names every result (result_paths); the
formatting helpers are harness.py's too.
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402
from harness import Goal, Row, format_summary, format_table, git_describe  # noqa: E402

from gpuscan import _slow, _timing  # noqa: E402

TITLE = "CPU backend vs NumPy (1 thread and all)"
# Below this size the goal is "within 1.5x of NumPy's time" (calls are then dominated by the
# Python call itself), from it on ">= 1.0x".
SMALL_N = 10**4
SMALL_GOAL = 1 / 1.5
# The primitives whose speed-up over NumPy at 10^7 on all threads should be >= 1.5x.
FAST_AT_1E7 = ("scan", "histogram", "bincount", "compact")
DTYPES = (np.float32, np.int32, np.uint8)


@dataclass
class CpuRow(Row):
    """A Row of harness.py with the thread count, the ratio of the fastest calls and the load."""

    threads: int = 1
    primitive: str = ""
    min_ratio: float | None = None
    np_ms: float | None = None
    load: float | None = None


def fmt_size(n):
    """10^k for powers of ten, else the number."""
    k = round(math.log10(n)) if n > 0 else 0
    return f"10^{k}" if 10**k == n else str(n)


def _ratio(v):
    return "-" if v is None else f"{v:.2f}x"


COLS = [
    ("case", 38, "<", lambda r: r.case),
    ("T", 2, ">", lambda r: str(r.threads)),
    ("n", 6, ">", lambda r: fmt_size(r.n)),
    ("gpuscan ms", 10, ">", lambda r: "ERROR" if r.error else harness._f(r.ms, ".4f")),
    ("numpy ms", 10, ">", lambda r: harness._f(r.np_ms, ".4f")),
    ("vs numpy", 8, ">", lambda r: _ratio(r.ratios.get("numpy"))),
    ("min ratio", 9, ">", lambda r: _ratio(r.min_ratio)),
    ("spread%", 7, ">", lambda r: harness._f(None if r.spread is None else 100 * r.spread,
                                             ".1f")),
    ("reps", 4, ">", lambda r: str(r.reps)),
    ("load", 4, ">", lambda r: harness._f(r.load, ".1f")),
    ("check", 5, "<", lambda r: r.check or "-"),
    ("call", 0, "<", lambda r: r.label + (f"  ERROR: {r.error}" if r.error else "")),
]


# ================================================================================================
# Data and reference checks
# ================================================================================================
def values(rng, dtype, shape):
    """float32 uniform in [-1, 1); int32 in [-1000, 1000); uint8 over its range."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.random(shape, dtype=np.float32) * 2 - 1).astype(dtype)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.integers(-1000, 1000, shape, dtype=dtype)


def float_bound_problem(res, x, axis, reduce_):
    """None if res is within the contract's float bound (gpuscan/_slow.py), else the ratio."""
    ratio = _slow.reduce_error(res, x, axis) if reduce_ else _slow.scan_error(res, x, axis=axis)
    return None if ratio <= 1 else f"float bound missed: {ratio:.3g}x"


def bound_problem(ratio):
    """None for an error within the contract's bound (a ratio <= 1), else the ratio."""
    return None if ratio <= 1 else f"float bound missed: {ratio:.3g}x"


def equal_problem(res, ref):
    return _slow.first_difference(res, ref)


def close_problem(res, x):
    """An Operator's plain float add: within n*eps*sum|x| of the float64 scan (the bound of a
    sequential sum; its chunks only group it)."""
    eps = np.finfo(x.dtype).eps
    err = np.abs(res.astype(np.float64) - np.cumsum(x, dtype=np.float64))
    bound = x.size * eps * np.cumsum(np.abs(x), dtype=np.float64)
    return None if np.all(err <= bound) else "outside n*eps*sum|x|"


def close_sum_problem(res, x):
    """An Operator's plain float add reduction: within n*eps*sum|x| of the float64 sum."""
    err = abs(float(res) - np.sum(x, dtype=np.float64))
    return None if err <= x.size * np.finfo(x.dtype).eps * np.sum(np.abs(x), dtype=np.float64) \
        else "outside n*eps*sum|x|"


def segmented_problem(res, x, flags):
    """Integers exactly as NumPy's segmented sum; floats within the bound per segment."""
    if x.dtype.kind != "f":
        return equal_problem(res, _slow.segmented_scan(x, flags))
    ratio = _slow.segmented_scan_error(res, x, flags)
    return None if ratio <= 1 else f"float bound missed in a segment: {ratio:.3g}x"


# ================================================================================================
# Cases: (primitive, case name, label, gpuscan call, NumPy call, check(result, numpy_result))
# ================================================================================================
def cases_1d(gs, rng, n, only):
    out = []
    for dt in DTYPES:
        a = harness.abbr(dt)
        x = values(rng, dt, n)
        is_f = x.dtype.kind == "f"
        half, sparse = rng.random(n) < 0.5, rng.random(n) < 0.01
        segf = rng.random(n) < 1e-3
        bins_range = (-1, 1) if is_f else (0, 256) if dt == np.uint8 else (-1000, 1000)
        bc = x if dt == np.uint8 else (x + 1000 if dt == np.int32 else None)
        out += [
            ("scan", f"scan add {a}", "scan(x) | np.cumsum(x)",
             lambda x=x: gs.scan(x), lambda x=x: np.cumsum(x),
             (lambda r, ref, x=x: float_bound_problem(r, x, None, False)) if is_f else equal_problem),
            *[("segmented_scan", f"segmented_scan add {a} ({name} heads)",
               "segmented_scan(x, f) | cumsum - sum before heads",
               lambda x=x, f=f: gs.segmented_scan(x, f),
               lambda x=x, f=f: _slow.segmented_scan(x, f),
               lambda r, ref, x=x, f=f: segmented_problem(r, x, f))
              for name, f in (("1e-3", segf), ("1%", sparse), ("half", half))],
            ("reduce", f"reduce add {a}", "reduce(x) | np.add.reduce(x)",
             lambda x=x: gs.reduce(x), lambda x=x: np.add.reduce(x),
             (lambda r, ref, x=x: float_bound_problem(r, x, None, True)) if is_f else equal_problem),
            ("reduce", f"reduce max {a}", "reduce(x, 'max') | np.maximum.reduce(x)",
             lambda x=x: gs.reduce(x, "max"), lambda x=x: np.maximum.reduce(x), equal_problem),
            *([("reduce", f"reduce xor {a}", "reduce(x, 'xor') | np.bitwise_xor.reduce(x)",
                lambda x=x: gs.reduce(x, "xor"), lambda x=x: np.bitwise_xor.reduce(x),
                equal_problem)] if not is_f else []),
            ("histogram", f"histogram {a} 256 bins", f"histogram(x, 256, {bins_range})",
             lambda x=x, r=bins_range: gs.histogram(x, bins=256, range=r)[0],
             lambda x=x, r=bins_range: np.histogram(x, bins=256, range=r)[0], equal_problem),
        ]
        starts = np.flatnonzero(np.r_[True, segf[1:]])
        out += [
            ("reduceat", f"reduceat add {a} (1e-3 slices)", "reduceat(x, i) | np.add.reduceat",
             lambda x=x, i=starts: gs.reduceat(x, i), lambda x=x, i=starts: _slow.reduceat(x, i),
             (lambda r, ref, x=x, i=starts: bound_problem(_slow.segments_error(r, x, i)))
             if is_f else equal_problem),
            ("segmented_reduce", f"segmented_reduce add {a} (1e-3 heads)",
             "segmented_reduce(x, f) | np.add.reduceat at the heads",
             lambda x=x, f=segf: gs.segmented_reduce(x, f),
             lambda x=x, f=segf: _slow.segmented_reduce(x, f),
             (lambda r, ref, x=x, i=starts: bound_problem(_slow.segments_error(r, x, i)))
             if is_f else equal_problem),
        ]
        if dt == np.float32:
            a_ = (0.9 + 0.1 * rng.random(n)).astype(np.float32)
            out.append(("linear_recurrence", "linear_recurrence f32",
                        "linear_recurrence(a, x) | blocked NumPy recurrence",
                        lambda a_=a_, x=x: gs.linear_recurrence(a_, x),
                        lambda a_=a_, x=x: _slow.linear_recurrence(a_, x),
                        lambda r, ref, a_=a_, x=x: bound_problem(
                            _slow.recurrence_error(r, a_, x))))
        if bc is not None:
            out.append(("bincount", f"bincount {a}", "bincount(x) | np.bincount(x)",
                        lambda b=bc: gs.bincount(b), lambda b=bc: np.bincount(b), equal_problem))
        for name, m in (("half", half), ("1%", sparse)):
            out += [
                ("compact", f"compact {a} ({name} set)", "compact(x, m) | x[m]",
                 lambda x=x, m=m: gs.compact(x, m), lambda x=x, m=m: x[m], equal_problem),
                ("split", f"split {a} ({name} set)", "split(x, m) | concatenate(x[m], x[~m])",
                 lambda x=x, m=m: gs.split(x, m)[0],
                 lambda x=x, m=m: np.concatenate((x[m], x[~m])), equal_problem),
            ]
    return [c for c in out if not only or only in c[1]]


# An add gpuscan.Operator (compiled at its first call, the check's) against the built-in op of
# the same accumulation dtype: the baseline of these rows is gpuscan (issue 46: >= 0.8x from 10^6
# on all threads, goals_of).
OPERATOR_DTYPES = (np.float32, np.int64, np.int32)


def cases_operator(gs, rng, n, only):
    out = []
    for dt in OPERATOR_DTYPES:
        a = harness.abbr(dt)
        x = values(rng, dt, n)
        op = gs.Operator("x + y", dtype=dt, identity=0, name="add")
        is_f = x.dtype.kind == "f"
        out += [
            ("operator", f"Operator add {a} vs built-in scan",
             "scan(x, Operator('x + y')) | scan(x, dtype=x.dtype)",
             lambda x=x, op=op: gs.scan(x, op), lambda x=x: gs.scan(x, dtype=x.dtype),
             (lambda r, ref, x=x: close_problem(r, x)) if is_f else equal_problem),
            ("operator", f"Operator add {a} vs built-in reduce",
             "reduce(x, Operator('x + y')) | reduce(x, dtype=x.dtype)",
             lambda x=x, op=op: gs.reduce(x, op), lambda x=x: gs.reduce(x, dtype=x.dtype),
             (lambda r, ref, x=x: close_sum_problem(r, x)) if is_f else equal_problem),
        ]
    return [c for c in out if not only or only in c[1]]


# Issue 46's CPU compile goal: a new Operator's first scan (2^20 float32) in a fresh process
# whose disk cache is empty: the C compiler's run, the load and the call, <= 1 s.
FIRST_CALL = """
import time, numpy as np, gpuscan
x = np.random.default_rng(0).random(1 << 20, dtype=np.float32)
gpuscan.scan(x)
op = gpuscan.Operator("x * 0.5f + y", dtype=np.float32, identity=0.0)
t = time.perf_counter()
gpuscan.scan(x, op)
print(1000 * (time.perf_counter() - t))
"""


def first_call_goal(threads):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GPUSCAN_BACKEND="cpu", GPUSCAN_NUM_THREADS=str(threads),
                   GPUSCAN_CACHE_DIR=tmp,
                   PYTHONPATH=os.pathsep.join([os.path.dirname(HERE)] + sys.path))
        r = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True,
                           text=True, timeout=120)
    if r.returncode != 0:
        return Goal("Operator first call, empty disk cache", "2^20", "failed", "<= 1000 ms",
                    "FAIL")
    ms = float(r.stdout.strip())
    return Goal("Operator first call, empty disk cache (compile + load + call)", "2^20",
                f"{ms:.0f} ms", "<= 1000 ms", "ok" if ms <= 1000 else "MISS")


def cases_axes(gs, rng, only):
    out = []
    for shape in ((10**4, 1000), (1000, 10**4)):
        for dt in DTYPES:
            a = harness.abbr(dt)
            x = values(rng, dt, shape)
            is_f = x.dtype.kind == "f"
            for axis in (0, 1):
                tag = f"{shape[0]}x{shape[1]} axis={axis}"
                out += [
                    ("scan", f"scan add {a} {tag}", f"scan(x, axis={axis}) | np.cumsum",
                     lambda x=x, ax=axis: gs.scan(x, axis=ax),
                     lambda x=x, ax=axis: np.cumsum(x, axis=ax),
                     (lambda r, ref, x=x, ax=axis: float_bound_problem(r, x, ax, False))
                     if is_f else equal_problem),
                    ("reduce", f"reduce add {a} {tag}", f"reduce(x, axis={axis}) | np.add.reduce",
                     lambda x=x, ax=axis: gs.reduce(x, axis=ax),
                     lambda x=x, ax=axis: np.add.reduce(x, axis=ax),
                     (lambda r, ref, x=x, ax=axis: float_bound_problem(r, x, ax, True))
                     if is_f else equal_problem),
                ]
    # Few long rows and many short ones: the reduced axis first (many columns read in place)
    # or last (rows of two values).
    for shape in ((2, 5 * 10**6), (5 * 10**6, 2)):
        for dt in DTYPES:
            a = harness.abbr(dt)
            x = values(rng, dt, shape)
            is_f = x.dtype.kind == "f"
            for axis in (0, 1):
                tag = f"{shape[0]}x{shape[1]} axis={axis}"
                out += [
                    ("reduce", f"reduce add {a} {tag}", f"reduce(x, axis={axis}) | np.add.reduce",
                     lambda x=x, ax=axis: gs.reduce(x, axis=ax),
                     lambda x=x, ax=axis: np.add.reduce(x, axis=ax),
                     (lambda r, ref, x=x, ax=axis: float_bound_problem(r, x, ax, True))
                     if is_f else equal_problem),
                    ("reduce", f"reduce max {a} {tag}",
                     f"reduce(x, 'max', axis={axis}) | np.maximum.reduce",
                     lambda x=x, ax=axis: gs.reduce(x, "max", axis=ax),
                     lambda x=x, ax=axis: np.maximum.reduce(x, axis=ax), equal_problem),
                ]
    return [c for c in out if not only or only in c[1]]


# Sort and argsort: random keys over each dtype's whole range (float32 uniform in [-1, 1)), at
# most 10^SORT_MAX_EXP values; each beside NumPy's default kind and kind="stable".  Issue 45's
# goals (goals_of): on all threads >= 1.0x the default and >= 2x stable at 10^6 and 10^7,
# never below SORT_SMALL_GOAL at 10^3 .. 10^5.
SORT_DTYPES = (np.int32, np.float32, np.int64)
SORT_MAX_EXP = 7
SORT_SMALL_GOAL = 0.8


def sort_keys(rng, dtype, n):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.random(n, dtype=np.float32) * 2 - 1).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def cases_sort(gs, rng, n, only):
    out = []
    if n > 10**SORT_MAX_EXP:
        return out
    for dt in SORT_DTYPES:
        a = harness.abbr(dt)
        x = sort_keys(rng, dt, n)
        for fn in ("sort", "argsort"):
            for kind in (None, "stable"):
                tag = "default" if kind is None else "stable"
                out.append((fn, f"{fn} {a} (vs {tag})", f"{fn}(x) | np.{fn}(x, kind={kind!r})",
                            lambda x=x, f=getattr(gs, fn): f(x),
                            lambda x=x, f=getattr(np, fn), k=kind: f(x, kind=k),
                            # against the stable sort (the default kind's ties are in any order)
                            lambda r, ref, x=x, f=getattr(np, fn), k=kind: equal_problem(
                                r, ref if k == "stable" else f(x, kind="stable"))))
    return [c for c in out if not only or only in c[1]]


# ================================================================================================
# Timing (one child process per thread count)
# ================================================================================================
def run_case(threads, n, case):
    primitive, name, label, fg, fn, check = case
    row = CpuRow(case=name, impl=harness.SUBJECT, n=n, nbytes=0, label=label, kind="host",
                 threads=threads, primitive=primitive)
    load0 = os.getloadavg()[0]
    try:
        problem = check(fg(), fn())
        row.check = "ok" if problem is None else f"FAIL: {problem}"
        tg, tn = _timing.time_calls(fg, fn)
        row.ms, row.min_ms, row.spread, row.reps = tg.ms, tg.min_ms, tg.spread, tg.reps
        row.np_ms = tn.ms
        row.ratios["numpy"] = tn.ms / tg.ms
        row.min_ratio = tn.min_ms / tg.min_ms
    except Exception as exc:   # reported in the row; the others still run
        row.error = f"{type(exc).__name__}: {exc}"[:300]
    row.load = (load0 + os.getloadavg()[0]) / 2
    return row


def child(args):
    """Run every case at this process's thread count; print one JSON row per line."""
    import gpuscan
    info = gpuscan.device_info()
    print(json.dumps({"info": {k: str(v) for k, v in info.items()}}), flush=True)
    rng = np.random.default_rng(args.seed)
    exps = range(3, args.max_exp + 1)
    for n in (10**k for k in exps):
        for case in (cases_1d(gpuscan, rng, n, args.only) + cases_operator(gpuscan, rng, n, args.only)
                     + cases_sort(gpuscan, rng, n, args.only)):
            print(json.dumps(asdict(run_case(info["threads"], n, case))), flush=True)
    if args.max_exp >= 7:
        for case in cases_axes(gpuscan, rng, args.only):
            print(json.dumps(asdict(run_case(info["threads"], 10**7, case))), flush=True)


# ================================================================================================
# The parent: children per thread count, the table, the goals, the file
# ================================================================================================
def goals_of(rows, all_threads):
    goals = []
    by_case = {}
    for r in rows:
        by_case.setdefault((r.case, r.threads), []).append(r)
    for (case, threads), rs in sorted(by_case.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if rs[0].primitive in ("sort", "argsort"):
            goals += sort_goals(case, rs) if threads == all_threads else []
            continue
        if rs[0].primitive == "operator":  # its baseline is gpuscan's built-in scan (issue 46)
            big = [r for r in rs if r.n >= 10**6 and "numpy" in r.ratios]
            if big and threads == all_threads:
                w = min(big, key=lambda r: r.ratios["numpy"])
                goals.append(Goal(f"{case} T={threads} worst n >= 10^6", fmt_size(w.n),
                                  f"{w.ratios['numpy']:.2f}x", ">= 0.80x",
                                  "ok" if w.ratios["numpy"] >= 0.8 else "MISS"))
            continue
        big = [r for r in rs if r.n >= SMALL_N and "numpy" in r.ratios]
        small = [r for r in rs if r.n < SMALL_N and "numpy" in r.ratios]
        if big:
            w = min(big, key=lambda r: r.ratios["numpy"])
            goals.append(Goal(f"{case} T={threads} worst n >= 10^4", fmt_size(w.n),
                              f"{w.ratios['numpy']:.2f}x", ">= 1.00x",
                              "ok" if w.ratios["numpy"] >= 1.0 else "MISS"))
        if small:
            w = min(small, key=lambda r: r.ratios["numpy"])
            goals.append(Goal(f"{case} T={threads} worst n < 10^4", fmt_size(w.n),
                              f"{w.ratios['numpy']:.2f}x", f">= {SMALL_GOAL:.2f}x",
                              "ok" if w.ratios["numpy"] >= SMALL_GOAL else "MISS"))
    # Issue 44: segmented_scan with half of the values heads within 1.3x of its time with 1%.
    for r in rows:
        if r.primitive == "segmented_scan" and "(half heads)" in r.case and r.n >= 10**6 and \
                r.ms is not None:
            sparse = by_case.get((r.case.replace("(half heads)", "(1% heads)"), r.threads), [])
            base = next((s for s in sparse if s.n == r.n and s.ms is not None), None)
            if base is not None:
                ratio = r.ms / base.ms
                goals.append(Goal(f"{r.case} T={r.threads} / 1% heads", fmt_size(r.n),
                                  f"{ratio:.2f}x", "<= 1.30x", "ok" if ratio <= 1.3 else "MISS"))
    for r in rows:
        if (r.threads == all_threads and all_threads > 1 and r.n == 10**7 and
                r.primitive in FAST_AT_1E7 and "numpy" in r.ratios and "(1%" not in r.case
                and "axis=" not in r.case):
            goals.append(Goal(f"{r.case} T={r.threads} (speed-up goal)", "10^7",
                              f"{r.ratios['numpy']:.2f}x", ">= 1.50x",
                              "ok" if r.ratios["numpy"] >= 1.5 else "MISS"))
    return goals


def sort_goals(case, rows):
    """Issue 45's goals of one sort case on all threads: at 10^6 and 10^7 at least 1.0x NumPy's
    default kind and 2x its stable sort; never below SORT_SMALL_GOAL at 10^3 .. 10^5."""
    goals = []
    want = 2.0 if "(vs stable)" in case else 1.0
    for r in rows:
        if "numpy" not in r.ratios:
            continue
        ratio = r.ratios["numpy"]
        if r.n >= 10**6:
            goals.append(Goal(f"{case} T={r.threads}", fmt_size(r.n), f"{ratio:.2f}x",
                              f">= {want:.2f}x", "ok" if ratio >= want else "MISS"))
    small = [r for r in rows if r.n < 10**6 and "numpy" in r.ratios]
    if small:
        w = min(small, key=lambda r: r.ratios["numpy"])
        goals.append(Goal(f"{case} T={w.threads} worst n < 10^6", fmt_size(w.n),
                          f"{w.ratios['numpy']:.2f}x", f">= {SORT_SMALL_GOAL:.2f}x",
                          "ok" if w.ratios["numpy"] >= SORT_SMALL_GOAL else "MISS"))
    return goals


def header_lines(args, infos, started, elapsed):
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return [
        f"gpuscan benchmark: {TITLE}",
        f"date           {started.date().isoformat()} (started {started.isoformat(timespec='seconds')})",
        f"host           {cpu}, {os.cpu_count()} cpus, {platform.machine()}, machine '{args.machine}'",
        f"gpuscan        {git_describe()}; device_info per run: "
        + "; ".join(json.dumps(i, sort_keys=True) for i in infos),
        f"python         {platform.python_version()}  numpy {np.__version__}",
        f"command        {' '.join([os.path.basename(sys.argv[0])] + sys.argv[1:])}",
        f"method         one process per thread count (GPUSCAN_NUM_THREADS); gpuscan and NumPy "
        f"in turn (gpuscan/_timing.py), ~{_timing.TARGET_S:g} s of both per case, "
        f"{_timing.MIN_REPS}..{_timing.MAX_REPS} repetitions; perf_counter",
        "columns        ms = median per call; vs numpy = NumPy's median / gpuscan's median "
        "(>1: gpuscan faster); min ratio = NumPy's fastest / gpuscan's fastest; spread = "
        "(p90-p10)/median of gpuscan's calls; load = the host's 1-minute load average",
        f"elapsed        {elapsed:.1f} s",
    ]


def parent(args):
    started = datetime.datetime.now()
    t0 = time.perf_counter()
    rows, infos = [], []
    failures = []
    for threads in args.threads:
        env = dict(os.environ, GPUSCAN_BACKEND="cpu", GPUSCAN_NUM_THREADS=str(threads))
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--max-exp",
               str(args.max_exp), "--seed", str(args.seed)] + (["--only", args.only]
                                                                 if args.only else [])
        harness.log(f"threads={threads}: {' '.join(cmd[1:])}")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            obj = json.loads(line)
            if "info" in obj:
                infos.append(obj["info"])
                continue
            r = CpuRow(**obj)
            rows.append(r)
            print(harness.format_row(r, COLS), flush=True)
            if r.error or r.check.startswith("FAIL"):
                failures.append(f"{r.case} n={fmt_size(r.n)} T={r.threads}: "
                                f"{r.error or r.check}")
        if proc.wait() != 0:
            failures.append(f"the run with {threads} threads exited with {proc.returncode}")
    elapsed = time.perf_counter() - t0
    if args.machine is None:  # harness.py's naming: the device as device_info() names it
        args.machine = infos[0].get("name", "cpu") if infos else "cpu"
    rows.sort(key=lambda r: (r.primitive, r.case, r.n, r.threads))
    goals = goals_of(rows, max(args.threads))
    if any(r.primitive == "operator" for r in rows):
        goals.append(first_call_goal(max(args.threads)))
    if failures:
        goals.append(Goal("failures (errors or wrong results of gpuscan)", "-",
                          str(len(failures)), "0", "FAIL"))
    misses = sum(g.status == "MISS" for g in goals)
    summary = format_summary(goals, f"gpuscan bench summary ({TITLE}): {misses} MISS")
    os.makedirs(args.out, exist_ok=True)
    txt, js = harness.result_paths(args.out, args.machine, started.date().isoformat(), args.tag)
    head = header_lines(args, infos, started, elapsed)
    loads = [r.load for r in rows if r.load is not None]
    with open(txt, "w") as f:
        f.write("\n".join(head) + "\n")
        if loads:
            f.write(f"load average   {min(loads):.1f} .. {max(loads):.1f} during the cases "
                    f"(median {statistics.median(loads):.1f})\n")
        f.write("\n" + format_table(rows, COLS) + "\n\n")
        if failures:
            f.write("failures\n" + "\n".join(f"  {s}" for s in failures) + "\n\n")
        f.write(summary + "\n")
    with open(js, "w") as f:
        json.dump({"header": head, "rows": [asdict(r) for r in rows], "failures": failures,
                   "summary": [asdict(g) for g in goals]}, f, indent=1)
    print(f"\nresult files: {txt}\n              {js}\n")
    print(summary)
    return 1 if failures else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument("--quick", action="store_true", help="sizes up to 10^6 only")
    p.add_argument("--max-exp", type=int, default=8, help="largest size, 10^k (default 8)")
    p.add_argument("--threads", default=None,
                   help="comma-separated thread counts (default: 1 and the online cores)")
    p.add_argument("--machine", default=None,
                   help="machine name in the result file's name (default: device_info()'s name)")
    p.add_argument("--tag", default="cpu", help="suffix of the result file's name (cpu)")
    p.add_argument("--out", default=None, help="folder for the result files (default: "
                   "$BENCH_OUT, else benchmarks/results/)")
    p.add_argument("--only", default=None, help="only the cases whose name contains this")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.max_exp = min(args.max_exp, 6)
    if args.child:
        child(args)
        return 0
    if args.threads is None:
        args.threads = sorted({1, os.cpu_count() or 1})
    else:
        args.threads = [int(t) for t in args.threads.split(",")]
    args.out = args.out or os.environ.get("BENCH_OUT") or harness.RESULTS_DIR
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
