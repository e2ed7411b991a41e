"""benchmarks/bench_split.py - gpuscan.split and gpuscan.compact against memcpy, CuPy and PyTorch.

    python benchmarks/bench_split.py [--quick] [--out DIR] [--max-log2 28] [--no-torch]

Device-resident data, n = 2^16 ... 2^28 (smaller --min-log2 values are raised to 2^16: below
that every library is launch-bound): split and compact of int32 and float64 values with uint8
flags, half of them set at random, beside CuPy's boolean indexing (compact: `a[mask]`; split:
`cupy.concatenate((a[m], a[~m]))`) and PyTorch's (`a[mask]`, `torch.cat((a[m], a[~m]))`), the
mask being the same bytes viewed as bool.  Bytes per call count what a split must move once:
n values read, n flags read, n values written (int32: 9 n); compact the same with only the
flagged values written (int32: 7 n with half set).  %memcpy is against the same run's
device-to-device memcpy of elements of the values' width.  Every gpuscan result is checked
bit for bit on the host against gpuscan/_slow.py's twins (and split's count).  gpuscan returns new arrays (no out=), and both calls sync once
for the count, as CuPy's and PyTorch's boolean indexing do.  Timing rules, columns and the result
file: harness.py (the file's tag is "split").
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402
from harness import abbr  # noqa: E402

from gpuscan import _slow  # noqa: E402

TITLE = "split and compact (gpuscan vs memcpy, CuPy, PyTorch)"
N_BIG, N_FROM = 2**28, 2**16
VALUE_TYPES = (np.int32, np.float64)


def half_flags(cp, size, dtype):
    """uint8 flags, each set with probability 1/2."""
    return (cp.random.random(size, dtype=np.float32) < 0.5).astype(dtype)


def case_name(kind, dt):
    return f"{kind} {abbr(dt)} u8 flags"


def check(compact):
    """The values moved, bit for bit, against gpuscan/_slow.py's split or compact."""
    def run(res, x, f):
        want = _slow.compact(x, f) if compact else _slow.split(x, f)[0]
        if res.shape != want.shape:
            return f"shape {res.shape}, expected {want.shape}"
        u = f"u{x.dtype.itemsize}"
        return _slow.first_difference(res.view(u), want.view(u))

    return run


def check_count(gs, cp, x, f):
    """split's count, once: a Python int equal to the flags set."""
    count = gs.split(x, f)[1]
    want = _slow.split(cp.asnumpy(x), cp.asnumpy(f))[1]
    if type(count) is not int or count != want:
        return f"split count {count!r}, expected {want}"
    return None


def suite(h):
    import gpuscan
    cp, torch = h.cp, h.torch
    for n in h.each_size(min_n=N_FROM):
        for dt in VALUE_TYPES:
            size = np.dtype(dt).itemsize
            kind = "uniform" if np.dtype(dt).kind == "f" else "int"
            inputs = [(dt, kind), (np.uint8, half_flags)]
            split_impls = [
                ("gpuscan", "gpuscan.split(x, f)", lambda x, f: gpuscan.split(x, f)),
                ("cupy", "cupy.concatenate((x[m], x[~m]))",
                 lambda x, f: (lambda m: cp.concatenate((x[m], x[~m])))(f.view(cp.bool_))),
            ]
            compact_impls = [
                ("gpuscan", "gpuscan.compact(x, f)", lambda x, f: gpuscan.compact(x, f)),
                ("cupy", "x[m]", lambda x, f: x[f.view(cp.bool_)]),
            ]
            if torch is not None:
                split_impls.append(("torch", "torch.cat((x[m], x[~m]))",
                                    lambda x, f: (lambda m: torch.cat((x[m], x[~m])))(
                                        f.view(torch.bool))))
                compact_impls.append(("torch", "x[m]", lambda x, f: x[f.view(torch.bool)]))
            h.device_case(case_name("split", dt), n, inputs=inputs, outputs=[],
                          impls=split_impls, check=h.on_host(check(False)), memcpy_elem=size,
                          nbytes=(2 * size + 1) * n, check_libs=("gpuscan", "cupy", "torch"))
            h.device_case(case_name("compact", dt), n, inputs=inputs, outputs=[],
                          impls=compact_impls, check=h.on_host(check(True)), memcpy_elem=size,
                          nbytes=(size + 1) * n + size * n // 2,
                          check_libs=("gpuscan", "cupy", "torch"))
        if n == N_FROM:
            x = cp.arange(n, dtype=cp.int32)
            f = half_flags(cp, n, np.uint8)
            problem = check_count(gpuscan, cp, x, f)
            if problem:
                h.fail(problem)

    # ---- The goals (CUB's figures: bench_cub.py) ----
    h.goal_pct_memcpy(case_name("split", np.int32), N_BIG, 70)
    for dt in VALUE_TYPES:
        h.goal_vs(case_name("compact", dt), "cupy", N_FROM)
        h.goal_vs(case_name("split", dt), "cupy", N_FROM, info=True)
        if torch is not None:
            h.goal_vs(case_name("compact", dt), "torch", N_FROM, info=True)
            h.goal_vs(case_name("split", dt), "torch", N_FROM, info=True)


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="split"))
