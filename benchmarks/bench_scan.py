"""benchmarks/bench_scan.py - gpuscan.scan against memcpy, CuPy, PyTorch and NumPy.

    python benchmarks/bench_scan.py [--quick] [--out DIR] [--max-log2 28] [--no-torch]

Device-resident data (CuPy arrays, `out=` preallocated, so the time is the kernels' alone),
n = 2^10, 2^12, ..., 2^28: device-to-device memcpy of 4- and 8-byte elements; gpuscan.scan of
int32 (dtype=int32, i32 -> i32 like CUB's, and NumPy's default i32 -> i64), uint8 -> uint64
and bool -> int64 (NumPy's widening), float32, int64,
exclusive int32, min and max of int32 and float32; beside CuPy's cumsum (and its
minimum/maximum.accumulate when it has them) and PyTorch's cumsum/cummin/cummax.  Then the
float32 accuracy against the contract's bound, run-to-run determinism, and NumPy in/out
(gpuscan.scan(numpy) against np.cumsum and the CuPy/PyTorch round trips) at 2^20, 2^24, 2^28.
Every gpuscan result is checked on the host by the package's NumPy twins (gpuscan/_slow.py:
integers and min/max bit-exact, float add within (log2 n + 2) eps sum|x|).  Timing rules,
columns and the result file: harness.py (the file's tag is "scan").

Exit status: 0, or 1 if a gpuscan call failed or gave a wrong result (missed speed goals are
reported in the summary, not in the status), 2 if CuPy or the CUDA backend is missing.
"""

import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402
from harness import abbr, fmt_n  # noqa: E402

from gpuscan import _slow  # noqa: E402

TITLE = "scan (gpuscan.scan vs memcpy, CuPy, PyTorch, NumPy)"
EPS32 = float(np.finfo(np.float32).eps)

# Sizes of the done-when figures (issue #2) and of the NumPy in/out and accuracy sections.
N_BIG, N_MID, N_FROM = 2**28, 2**24, 2**16
HOST_SIZES = (2**20, 2**24, 2**28)
ACCURACY_SIZES = (2**24, 2**28)


class ScanCase:
    """One device case: gpuscan.scan(x, op, **kw, out=o) with x of in_dtype, o of out_dtype."""

    def __init__(self, in_dtype, kind, out_dtype, op="add", exclusive=False, dtype_arg=False):
        self.in_dtype, self.kind, self.out_dtype = np.dtype(in_dtype), kind, np.dtype(out_dtype)
        self.op, self.exclusive = op, exclusive
        self.kw = {"exclusive": True} if exclusive else {}
        if dtype_arg:
            self.kw["dtype"] = self.out_dtype.type
        types = abbr(in_dtype) if in_dtype == out_dtype else f"{abbr(in_dtype)}->{abbr(out_dtype)}"
        self.name = f"scan {op}{' excl' if exclusive else ''} {types}"


I32, I64, F32, U8, U64 = np.int32, np.int64, np.float32, np.uint8, np.uint64
CASES = [
    ScanCase(I32, "int", I32, dtype_arg=True),           # i32 -> i32, as CUB's InclusiveSum
    ScanCase(I32, "int", I64),                            # NumPy's rule: i32 -> i64
    ScanCase(U8, "int", U64),                             # NumPy's rule: u8 -> u64
    ScanCase(np.bool_, "int", I64),                       # cumsum of a mask
    ScanCase(F32, "uniform", F32),
    ScanCase(I64, "int", I64),
    ScanCase(I32, "int", I32, exclusive=True, dtype_arg=True),
    ScanCase(I32, "int", I32, op="min"),
    ScanCase(I32, "int", I32, op="max"),
    ScanCase(F32, "normal", F32, op="min"),
    ScanCase(F32, "normal", F32, op="max"),
]
CASE = {c.name: c for c in CASES}
ADD_I32 = CASES[0].name   # "scan add i32": the i32 -> i32 scan, the one CUB's figures time
ADD_F32 = CASES[4].name
# Widening scans (issue 16): the narrow input read in 16-byte vectors, % of memcpy at 2^28
# counting the bytes read and written.
WIDENING_GOALS = ((CASES[1].name, 80), (CASES[2].name, 75))


# ================================================================================================
# References and checks (CuPy arrays in; None when right, else what is wrong)
# ================================================================================================
def cupy_accumulate(cp, op):
    """cupy.minimum/maximum.accumulate when this CuPy has it (with out=) and it is right."""
    uf = {"min": cp.minimum, "max": cp.maximum}[op]
    try:
        x = cp.asarray([3, 1, 2, 5, 4], dtype=cp.int32)
        o = cp.empty_like(x)
        uf.accumulate(x, out=o)
        want = {"min": [3, 1, 1, 1, 1], "max": [3, 3, 3, 5, 5]}[op]
        return uf if cp.asnumpy(o).tolist() == want else None
    except Exception:
        return None


def add_units(cp, res, x):
    """max_i |res_i - exact_i| / (eps32 * sum_{j<=i} |x_j|), exact from a float64 cumsum (the
    accuracy figures, on the device: gpuscan's, CuPy's and PyTorch's, three runs each)."""
    ref = cp.cumsum(x, dtype=cp.float64)
    mag = cp.cumsum(cp.abs(x), dtype=cp.float64) if bool((x < 0).any()) else ref
    d = res.astype(cp.float64)
    d -= ref
    cp.abs(d, out=d)
    d /= cp.maximum(mag, np.finfo(np.float64).tiny)
    return float(d.max()) / EPS32


def host_check(c):
    """Case c's check on NumPy arrays: gpuscan/_slow.py's scan twin and float bound."""
    def check(res, x):
        if res.dtype != c.out_dtype or res.shape != x.shape:
            return f"result {res.dtype}{res.shape}, expected {c.out_dtype}{x.shape}"
        if c.op == "add" and c.out_dtype.kind == "f":
            ratio = _slow.scan_error(res, x, exclusive=c.exclusive)
            return None if ratio <= 1 else f"error {ratio:.2f} x the bound"
        return _slow.first_difference(res, _slow.scan(x, c.op, c.exclusive,
                                                      dtype=c.kw.get("dtype")))

    return check


# ================================================================================================
# Device cases
# ================================================================================================
def impls_for(h, c, minmax_acc):
    """(lib, label, fn) for gpuscan and the baselines that compute the same thing."""
    import gpuscan
    cp, torch = h.cp, h.torch
    kw = dict(c.kw)
    kws = "".join(f", {k}={abbr(v) if k == 'dtype' else v}" for k, v in kw.items())
    out = [("gpuscan", f"gpuscan.scan(x, {c.op!r}{kws}, out=o)",
            lambda x, o: gpuscan.scan(x, c.op, out=o, **kw))]
    if c.exclusive:
        return out   # neither CuPy nor PyTorch has an exclusive scan
    if c.op == "add":
        out.append(("cupy", f"cupy.cumsum(x, dtype={abbr(c.out_dtype)}, out=o)",
                    lambda x, o: cp.cumsum(x, dtype=c.out_dtype, out=o)))
        if torch is not None:
            tdt = getattr(torch, c.out_dtype.name)
            out.append(("torch", f"torch.cumsum(x, 0, dtype={abbr(c.out_dtype)}, out=o)",
                        lambda x, o: torch.cumsum(x, 0, dtype=tdt, out=o)))
    else:
        uf = minmax_acc.get(c.op)
        if uf is not None:
            out.append(("cupy", f"cupy.{uf.__name__}.accumulate(x, out=o)",
                        lambda x, o: uf.accumulate(x, out=o)))
        if torch is not None:
            tf = {"min": torch.cummin, "max": torch.cummax}[c.op]
            out.append(("torch", f"torch.{tf.__name__}(x, 0).values",
                        lambda x, o: tf(x, 0).values))
    return out


def device_cases(h, minmax_acc):
    for n in h.each_size(4, 8):
        for c in CASES:
            h.device_case(c.name, n, inputs=[(c.in_dtype, c.kind)], outputs=[c.out_dtype],
                          impls=impls_for(h, c, minmax_acc), check=h.on_host(host_check(c)))


# ================================================================================================
# Accuracy and determinism (float32 add, uniform [0, 1))
# ================================================================================================
def accuracy_and_determinism(h):
    """Notes per library and size; returns the summary's figures (h.goal arguments)."""
    import gpuscan
    goals = []
    cp, torch = h.cp, h.torch
    sizes = [n for n in ACCURACY_SIZES if n <= 2**h.args.max_log2] or [2**h.args.max_log2]
    for n in sizes:
        bound = math.log2(n) + 2
        x = h.random_device(np.float32, n, "uniform")
        runs = {
            "gpuscan": lambda o: gpuscan.scan(x, out=o),
            "cupy": lambda o: cp.cumsum(x, out=o),
        }
        if torch is not None:
            tx = torch.as_tensor(x, device="cuda")
            runs["torch"] = lambda o: torch.cumsum(tx, 0, out=torch.as_tensor(o, device="cuda"))
        for lib, run in runs.items():
            try:
                o1, o2 = cp.empty_like(x), cp.empty_like(x)
                run(o1)
                units = add_units(cp, o1, x)
                same = True
                for _ in range(2):          # three runs in all, each compared with the first
                    o2.fill(np.nan)
                    run(o2)
                    same = same and bool(cp.array_equal(o1.view(cp.uint32), o2.view(cp.uint32)))
                h.note(f"accuracy f32 add n={fmt_n(n)} uniform[0,1): {lib:7s} max rel err "
                       f"{units * EPS32:.3e} = {units:5.1f} of the bound's {bound:.0f} eps-units; "
                       f"same bits on 3 runs: {same}")
                if lib == "gpuscan":
                    goals.append(("gpuscan f32 add error, eps*sum|x| units", n, f"{units:.1f}",
                                  f"<= {bound:.0f}", "ok" if units <= bound else "FAIL"))
                    goals.append(("gpuscan f32 add deterministic (3 runs)", n, str(same),
                                  "True", "ok" if same else "FAIL"))
                    if units > bound:
                        h.fail(f"gpuscan f32 add n={fmt_n(n)}: error {units:.1f} > bound {bound:.0f}")
                    if not same:
                        h.fail(f"gpuscan f32 add n={fmt_n(n)}: different bits run to run")
                else:
                    goals.append((f"{lib} f32 add error units / deterministic", n,
                                  f"{units:.1f} / {same}", "", "info"))
                del o1, o2
            except Exception as exc:
                h.note(f"accuracy f32 add n={fmt_n(n)}: {lib} raised {type(exc).__name__}: {exc}")
                if lib == "gpuscan":
                    h.fail(f"accuracy gpuscan n={fmt_n(n)}: {type(exc).__name__}: {exc}")
        if n <= 2**24:   # NumPy's sequential float32 loop, for comparison (0.04 s at 2^24)
            xh = cp.asnumpy(x)
            units = add_units(cp, cp.asarray(np.cumsum(xh)), x)
            h.note(f"accuracy f32 add n={fmt_n(n)} uniform[0,1): numpy   max rel err "
                   f"{units * EPS32:.3e} = {units:5.1f} of the bound's {bound:.0f} eps-units")
            del xh
        del x, runs
        h.free()
    return goals


# ================================================================================================
# NumPy in, NumPy out
# ================================================================================================
def host_cases(h):
    import gpuscan
    cp, torch = h.cp, h.torch
    sizes = [n for n in HOST_SIZES if n <= 2**h.args.max_log2]
    for n in sizes:
        harness.log(f"NumPy in/out n = {fmt_n(n)}")
        for dtype, kind in ((np.int32, "int"), (np.float32, "uniform")):
            x = h.random_host(dtype, n, kind)
            out_dt = np.cumsum(x[:1]).dtype
            case = f"numpy-io scan add {abbr(dtype)}" + \
                (f"->{abbr(out_dt)}" if out_dt != x.dtype else "")
            check = host_check(ScanCase(dtype, kind, out_dt))
            impls = [
                ("gpuscan", "gpuscan.scan(x)", lambda a: gpuscan.scan(a)),
                ("numpy", "np.cumsum(x)", lambda a: np.cumsum(a)),
                ("cupy", "cupy.asnumpy(cupy.cumsum(cupy.asarray(x)))",
                 lambda a: cp.asnumpy(cp.cumsum(cp.asarray(a)))),
            ]
            if torch is not None:
                impls.append(("torch", "torch.cumsum(torch.from_numpy(x).cuda(), 0).cpu().numpy()",
                              lambda a: torch.cumsum(torch.from_numpy(a).cuda(), 0).cpu().numpy()))
            h.host_case(case, n, [x], impls, check=check)
            del x


# ================================================================================================
# Summary: the done-when figures of issue #2
# ================================================================================================
def summary(h, minmax_acc, accuracy_goals):
    """The figures; those whose size this run left out (--quick, --max-log2) show n/a."""
    for n, target in ((N_BIG, 80), (N_MID, 70)):
        for case in (ADD_I32, ADD_F32):
            h.goal_pct_memcpy(case, n, target)
    for case, target in WIDENING_GOALS:
        h.goal_pct_memcpy(case, N_BIG, target)
    for n in (N_MID, N_BIG):
        for op in ("min", "max"):
            h.goal_time_ratio(f"scan {op} i32", ADD_I32, n)
            h.goal_time_ratio(f"scan {op} f32", ADD_F32, n)
    for c in CASES:
        if c.exclusive or (c.op != "add" and minmax_acc.get(c.op) is None):
            continue
        h.goal_vs(c.name, "cupy", N_FROM)
    if h.torch is not None:
        for c in CASES[:6]:
            h.goal_vs(c.name, "torch", N_FROM, info=True)
    for g in accuracy_goals:
        h.goal(*g)
    host = [r for r in h.rows if r.kind == "host" and r.impl == "gpuscan" and "numpy" in r.ratios]
    if host:
        n_host = max(r.n for r in host)
        for r in host:
            if r.n == n_host:
                h.goal(f"{r.case} vs numpy cumsum", r.n, f"{r.ratios['numpy']:.2f}x", "", "info")


def suite(h):
    minmax_acc = {op: cupy_accumulate(h.cp, op) for op in ("min", "max")}
    for op, uf in minmax_acc.items():
        if uf is None:
            h.note(f"cupy.{'minimum' if op == 'min' else 'maximum'}.accumulate(out=) is not "
                   f"available or wrong in CuPy {h.cp.__version__}: no CuPy baseline for {op}")
    if h.torch is None:
        h.note(f"PyTorch baselines left out: {h.torch_version}")
    device_cases(h, minmax_acc)
    harness.log("accuracy and determinism")
    accuracy_goals = accuracy_and_determinism(h)
    if not h.args.no_host:
        host_cases(h)
    summary(h, minmax_acc, accuracy_goals)


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="scan"))
