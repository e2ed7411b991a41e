"""benchmarks/bench_segreduce.py - gpuscan.segmented_scan and gpuscan.reduce against memcpy,
CuPy and PyTorch (issue #3).

    python benchmarks/bench_segreduce.py [--quick] [--out DIR] [--max-log2 28] [--no-torch]

Device-resident data, n = 2^10 ... 2^28: the int32 segmented scan with uint8 flags (one head
per 1000 values on average) beside the plain int32 scan of the same run; reductions of float32
and int32 (axis=None) beside CuPy's and PyTorch's sum; at 2^24 and 2^28 the row sums of a
(4096, n/4096) float32 array (axis=1).  Reductions count bytes read (their output is a few
values), against the same run's device-to-device memcpy (bytes read + written).  Every gpuscan
result is checked: integers exactly, float sums within (log2 n + 2) eps sum|x|.  Timing rules,
columns and the result file: harness.py (the file's tag is "segreduce").
"""

import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402
from harness import fmt_n  # noqa: E402

TITLE = "segmented_scan and reduce (gpuscan vs memcpy, CuPy, PyTorch)"
EPS32 = float(np.finfo(np.float32).eps)
SEG_LEN = 1000            # average segment length of the segmented scan (issue #3)
ROWS = 4096               # rows of the row-sum case
N_BIG, N_MID, N_FROM = 2**28, 2**24, 2**16

SEG = "segscan add i32 u8 flags"
PLAIN = "scan add i32"
RED_F32, RED_I32, ROW_F32 = "reduce add f32", "reduce add i32", f"rowsum f32 ({ROWS} rows)"


def heads(cp, size, dtype):
    """uint8 segment heads, one per SEG_LEN values on average."""
    return (cp.random.random(size, dtype=np.float32) < 1.0 / SEG_LEN).astype(dtype)


def check_seg(h):
    cp = h.cp

    def check(res, x, f):
        ref = np.empty(x.size, dtype=np.int32)
        xs, fs = cp.asnumpy(x).astype(np.int64), cp.asnumpy(f) != 0
        fs[0] = True
        starts = np.flatnonzero(fs)
        csum = np.cumsum(xs)
        base = np.repeat(np.concatenate([[0], csum[starts[1:] - 1]]),
                         np.diff(np.append(starts, x.size)))
        ref[:] = (csum - base).astype(np.int32)
        bad = np.flatnonzero(cp.asnumpy(res) != ref)
        return None if bad.size == 0 else f"{bad.size} differ, first at {bad[0]}"

    return check


def check_sum(h, axis=None):
    cp = h.cp

    def check(res, x):
        xx = x if axis is None else x.reshape(ROWS, -1)
        if x.dtype.kind == "f":
            exact = cp.sum(xx.astype(cp.float64), axis=axis)
            mag = cp.sum(cp.abs(xx).astype(cp.float64), axis=axis)
            units = float(cp.max(cp.abs(res.astype(cp.float64) - exact) / mag)) / EPS32
            n = xx.size if axis is None else xx.shape[1]
            bound = math.log2(max(n, 2)) + 2
            return None if units <= bound else f"error {units:.2f} eps-units > {bound:.1f}"
        ref = cp.sum(xx, axis=axis, dtype=x.dtype)
        return None if bool(cp.all(res == ref)) else "integer sum differs"

    return check


def suite(h):
    import gpuscan
    cp, torch = h.cp, h.torch
    for n in h.sizes():
        harness.log(f"n = {fmt_n(n)}")
        h.memcpy(n, 4)
        h.device_case(PLAIN, n, inputs=[(np.int32, "int")], outputs=[np.int32],
                      impls=[("gpuscan", "gpuscan.scan(x, dtype=i32, out=o)",
                              lambda x, o: gpuscan.scan(x, dtype=np.int32, out=o))])
        h.device_case(SEG, n, inputs=[(np.int32, "int"), (np.uint8, heads)], outputs=[np.int32],
                      impls=[("gpuscan", "gpuscan.segmented_scan(x, f, dtype=i32, out=o)",
                              lambda x, f, o: gpuscan.segmented_scan(x, f, dtype=np.int32,
                                                                     out=o))],
                      check=check_seg(h))
        for case, dt, kind in ((RED_F32, np.float32, "uniform"), (RED_I32, np.int32, "int")):
            impls = [("gpuscan", f"gpuscan.reduce(x{', dtype=i32' if dt == np.int32 else ''})",
                      lambda x, dt=dt: gpuscan.reduce(x, dtype=dt)),
                     ("cupy", "cupy.sum(x)", lambda x, dt=dt: cp.sum(x, dtype=dt))]
            if torch is not None:
                tdt = getattr(torch, np.dtype(dt).name)
                impls.append(("torch", "torch.sum(x)", lambda x, tdt=tdt: torch.sum(x, dtype=tdt)))
            h.device_case(case, n, inputs=[(dt, kind)], outputs=[], impls=impls,
                          check=check_sum(h), memcpy_elem=4, nbytes=4 * n)
        if n in (N_MID, N_BIG):
            impls = [("gpuscan", "gpuscan.reduce(x.reshape(R, -1), axis=1)",
                      lambda x: gpuscan.reduce(x.reshape(ROWS, -1), axis=1)),
                     ("cupy", "cupy.sum(x.reshape(R, -1), axis=1)",
                      lambda x: cp.sum(x.reshape(ROWS, -1), axis=1))]
            if torch is not None:
                impls.append(("torch", "torch.sum(x.reshape(R, -1), 1)",
                              lambda x: torch.sum(x.reshape(ROWS, -1), 1)))
            h.device_case(ROW_F32, n, inputs=[(np.float32, "uniform")], outputs=[], impls=impls,
                          check=check_sum(h, axis=1), memcpy_elem=4, nbytes=4 * n)

    # ---- The done-when figures of issue #3 (and CUB's, from shared/GPU.md, as notes). ----
    h.note("CUB on an H200 (shared/GPU.md): InclusiveSumByKey i32 1.058 ms at 2^28 "
           "(1.54x its InclusiveSum), Reduce Sum f32 0.244 ms (4393 GB/s).")
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
