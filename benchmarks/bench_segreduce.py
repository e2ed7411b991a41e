"""benchmarks/bench_segreduce.py - gpuscan.segmented_scan and gpuscan.reduce against memcpy,
CuPy and PyTorch.

    python benchmarks/bench_segreduce.py [--quick] [--out DIR] [--max-log2 28] [--no-torch]

Device-resident data, n = 2^10 ... 2^28: the int32 segmented scan with uint8 flags (one head
per 1000 values on average) beside the plain int32 scan of the same run; reductions of float32
and int32 (axis=None) beside CuPy's and PyTorch's sum; at 2^24 and 2^28 the row sums of a
(4096, n/4096) float32 array (axis=1).  Reductions count bytes read (their output is a few
values), against the same run's device-to-device memcpy (bytes read + written).  Every gpuscan
result is checked on the host by the package's NumPy twins (gpuscan/_slow.py): integers exactly,
float sums within (log2 n + 2) eps sum|x|.  Timing rules,
columns and the result file: harness.py (the file's tag is "segreduce").
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402

from gpuscan import _slow  # noqa: E402

TITLE = "segmented_scan and reduce (gpuscan vs memcpy, CuPy, PyTorch)"
SEG_LEN = 1000            # average segment length of the segmented scan
ROWS = 4096               # rows of the row-sum case
N_BIG, N_MID, N_FROM = 2**28, 2**24, 2**16

SEG = "segscan add i32 u8 flags"
PLAIN = "scan add i32"
RED_F32, RED_I32, ROW_F32 = "reduce add f32", "reduce add i32", f"rowsum f32 ({ROWS} rows)"


def heads(cp, size, dtype):
    """uint8 segment heads, one per SEG_LEN values on average."""
    return (cp.random.random(size, dtype=np.float32) < 1.0 / SEG_LEN).astype(dtype)


def check_seg(res, x, f):
    """The int32 segmented sum (dtype=int32: wrapping) against its NumPy twin."""
    return _slow.first_difference(res, _slow.segmented_scan(x, f, dtype=np.int32))


def check_sum(axis=None):
    """A sum of the whole array (axis None) or of each of ROWS rows (axis 1): floats within the
    contract's bound, integers (dtype=x.dtype: wrapping) exactly."""
    def check(res, x):
        xx = x if axis is None else x.reshape(ROWS, -1)
        if x.dtype.kind == "f":
            ratio = _slow.reduce_error(res, xx, axis)
            return None if ratio <= 1 else f"error {ratio:.2f} x the bound"
        return _slow.first_difference(res, _slow.reduce(xx, axis=axis, dtype=x.dtype))

    return check


def suite(h):
    import gpuscan
    cp, torch = h.cp, h.torch
    for n in h.each_size(4):
        h.device_case(PLAIN, n, inputs=[(np.int32, "int")], outputs=[np.int32],
                      impls=[("gpuscan", "gpuscan.scan(x, dtype=i32, out=o)",
                              lambda x, o: gpuscan.scan(x, dtype=np.int32, out=o))])
        h.device_case(SEG, n, inputs=[(np.int32, "int"), (np.uint8, heads)], outputs=[np.int32],
                      impls=[("gpuscan", "gpuscan.segmented_scan(x, f, dtype=i32, out=o)",
                              lambda x, f, o: gpuscan.segmented_scan(x, f, dtype=np.int32,
                                                                     out=o))],
                      check=h.on_host(check_seg))
        for case, dt, kind in ((RED_F32, np.float32, "uniform"), (RED_I32, np.int32, "int")):
            impls = [("gpuscan", f"gpuscan.reduce(x{', dtype=i32' if dt == np.int32 else ''})",
                      lambda x, dt=dt: gpuscan.reduce(x, dtype=dt)),
                     ("cupy", "cupy.sum(x)", lambda x, dt=dt: cp.sum(x, dtype=dt))]
            if torch is not None:
                tdt = getattr(torch, np.dtype(dt).name)
                impls.append(("torch", "torch.sum(x)", lambda x, tdt=tdt: torch.sum(x, dtype=tdt)))
            h.device_case(case, n, inputs=[(dt, kind)], outputs=[], impls=impls,
                          check=h.on_host(check_sum()), memcpy_elem=4, nbytes=4 * n)
        if n in (N_MID, N_BIG):
            impls = [("gpuscan", "gpuscan.reduce(x.reshape(R, -1), axis=1)",
                      lambda x: gpuscan.reduce(x.reshape(ROWS, -1), axis=1)),
                     ("cupy", "cupy.sum(x.reshape(R, -1), axis=1)",
                      lambda x: cp.sum(x.reshape(ROWS, -1), axis=1))]
            if torch is not None:
                impls.append(("torch", "torch.sum(x.reshape(R, -1), 1)",
                              lambda x: torch.sum(x.reshape(ROWS, -1), 1)))
            h.device_case(ROW_F32, n, inputs=[(np.float32, "uniform")], outputs=[], impls=impls,
                          check=h.on_host(check_sum(axis=1)), memcpy_elem=4, nbytes=4 * n)

    # ---- The goals (CUB's figures: bench_cub.py) ----
    for n in (N_MID, N_BIG):
        h.goal_time_ratio(SEG, PLAIN, n)
        seg, plain = h.row(SEG, "gpuscan", n), h.row(PLAIN, "gpuscan", n)
        if seg is not None and plain is not None and seg.ms and plain.ms:
            ratio = seg.ms / plain.ms
            h.goal(f"{SEG} time / {PLAIN} time", n, f"{ratio:.2f}", "<= 1.20",
                   "ok" if ratio <= 1.2 else "MISS")
    for case in (RED_F32, RED_I32):
        h.goal_pct_memcpy(case, N_BIG, 90)
    h.goal_pct_memcpy(ROW_F32, N_BIG, 80)
    for case in (RED_F32, RED_I32, ROW_F32):
        h.goal_vs(case, "cupy", N_FROM, info=True)
        if torch is not None:
            h.goal_vs(case, "torch", N_FROM, info=True)


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="segreduce"))
