"""benchmarks/bench_hist.py - gpuscan.histogram and gpuscan.bincount against memcpy, CuPy and
PyTorch.

    python benchmarks/bench_hist.py [--quick] [--out DIR] [--max-log2 28] [--no-torch]

Device-resident data, n = 2^10 ... 2^28: float32 uniform in [0, 1) into 256, 4096 and 65536
equal-width bins over range (0, 1) (CuPy: cupy.histogram with the same bins and range; PyTorch:
torch.histc); uint8 uniform in [0, 256) into 256 bins over (0, 256) (PyTorch: torch.bincount,
the same counts for unit-width bins); int32 uniform in [0, 1000) through bincount (CuPy and
PyTorch: their bincount).  A histogram reads its input once and writes a few kilobytes, so the
bandwidth counts bytes read, against the same run's device-to-device memcpy (bytes read +
written).  Every gpuscan result is checked exactly, on the host, against np.histogram and
np.bincount (gpuscan/_slow.py's twins).  Timing rules, columns and the result file: harness.py
(tag "hist").
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402

from gpuscan import _slow  # noqa: E402

TITLE = "histogram and bincount (gpuscan vs memcpy, CuPy, PyTorch)"
N_BIG, N_FROM = 2**28, 2**16
F32_BINS = (256, 4096, 65536)
U8 = "histogram u8 256 bins"
BINC = "bincount i32 1000 values"


def f32_case(bins):
    return f"histogram f32 {bins} bins"


def u8_values(cp, size, dtype):
    return cp.random.randint(0, 256, size, dtype=np.int32).astype(dtype)


def values_1000(cp, size, dtype):
    return cp.random.randint(0, 1000, size, dtype=dtype)


def check_hist(bins, lo, hi):
    """Counts equal to NumPy's np.histogram (gpuscan/_slow.py's twin) of the same values."""
    def check(res, x):
        return _slow.first_difference(res, _slow.histogram(x, bins=bins, range=(lo, hi))[0])

    return check


def check_bincount(res, x):
    return _slow.first_difference(res, _slow.bincount(x))


def suite(h):
    import gpuscan
    cp, torch = h.cp, h.torch
    for n in h.each_size(4):
        for bins in F32_BINS:
            impls = [("gpuscan", f"gpuscan.histogram(x, {bins}, (0, 1))",
                      lambda x, b=bins: gpuscan.histogram(x, bins=b, range=(0, 1))[0]),
                     ("cupy", f"cupy.histogram(x, {bins}, (0, 1))",
                      lambda x, b=bins: cp.histogram(x, bins=b, range=(0, 1))[0])]
            if torch is not None:
                impls.append(("torch", f"torch.histc(x, {bins}, 0, 1)",
                              lambda x, b=bins: torch.histc(x, bins=b, min=0, max=1)))
            h.device_case(f32_case(bins), n, inputs=[(np.float32, "uniform")], outputs=[],
                          impls=impls, check=h.on_host(check_hist(bins, 0.0, 1.0)), memcpy_elem=4,
                          nbytes=4 * n)
        impls = [("gpuscan", "gpuscan.histogram(x, 256, (0, 256))",
                  lambda x: gpuscan.histogram(x, bins=256, range=(0, 256))[0]),
                 ("cupy", "cupy.histogram(x, 256, (0, 256))",
                  lambda x: cp.histogram(x, bins=256, range=(0, 256))[0])]
        if torch is not None:
            impls.append(("torch", "torch.bincount(x, minlength=256)",
                          lambda x: torch.bincount(x, minlength=256)))
        h.device_case(U8, n, inputs=[(np.uint8, u8_values)], outputs=[], impls=impls,
                      check=h.on_host(check_hist(256, 0, 256)), memcpy_elem=4, nbytes=n)
        impls = [("gpuscan", "gpuscan.bincount(x)", lambda x: gpuscan.bincount(x)),
                 ("cupy", "cupy.bincount(x)", lambda x: cp.bincount(x))]
        if torch is not None:
            impls.append(("torch", "torch.bincount(x)", lambda x: torch.bincount(x)))
        h.device_case(BINC, n, inputs=[(np.int32, values_1000)], outputs=[], impls=impls,
                      check=h.on_host(check_bincount), memcpy_elem=4, nbytes=4 * n)

    # ---- The goals (CUB's figures: bench_cub.py) ----
    h.goal_pct_memcpy(f32_case(256), N_BIG, 85)
    h.goal_pct_memcpy(f32_case(4096), N_BIG, 50)
    for lib in ("cupy", "torch"):
        if lib == "torch" and torch is None:
            continue
        h.goal_vs(f32_case(65536), lib, N_BIG)
        for case in (f32_case(256), f32_case(4096), U8, BINC):
            h.goal_vs(case, lib, N_FROM, info=True)


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="hist"))
