"""tools/segreduce_ranges.py - how many warp tiles a warp of the segmented reductions should take
as one range (dispatch/segreduce.cu: GS_SEG_PER_WARP), measured in one job on one binary:

    python3 tools/segreduce_ranges.py [log2n] [per_warp ...]

For each per_warp (the private knob _gpuscan._segreduce_set_many), reduceat of float32 CuPy
values with CuPy int64 indices ~1000 apart and segmented_reduce with uint8 flags, device time per
call with CUDA events (median of 15 batches of 8 calls, after a warm-up), against a
device-to-device memcpy of the values in the same job, bytes counted as benchmarks/bench_apps.py
counts them (reduceat 4 n, segmented_reduce 5 n read; memcpy 2 x 4 n).  Every result is compared
with the default setting's to 1e-5 (the test suite checks the contract's bound).  An experiment tool: bench_apps.py is the benchmark.
"""
import sys

import cupy as cp
import numpy as np

import gpuscan
from gpuscan import _gpuscan

log2n = int(sys.argv[1]) if len(sys.argv) > 1 else 28
choices = [int(v) for v in sys.argv[2:]] or [1, 4, 8, 16, 32]
n = 1 << log2n
rng = np.random.default_rng(3)
x = cp.asarray(rng.random(n, dtype=np.float32))
f_host = rng.random(n) < 1e-3
f = cp.asarray(f_host.astype(np.uint8))
idx = cp.asarray(np.flatnonzero(f_host))


def device_ms(fn, batches=15, batch=8):
    """Median over batches of the device time per call, `batch` calls between two events (the
    host's work before a call's first launch overlaps the calls before it)."""
    fn()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(batches):
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / batch)
    return float(np.median(times))


dst = cp.empty_like(x)
memcpy_ms = device_ms(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, x.data.ptr, 4 * n,
                                                          cp.cuda.runtime.memcpyDeviceToDevice, 0))
memcpy_gbps = 8 * n / memcpy_ms / 1e6
default = _gpuscan._segreduce_set_many(1 << 62)
_gpuscan._segreduce_set_many(*default)
want_r = gpuscan.reduceat(x, idx).get()
want_s = gpuscan.segmented_reduce(x, f).get()
print(f"n = 2^{log2n}, {idx.size} slices; memcpy d2d {memcpy_ms:.4f} ms ({memcpy_gbps:.0f} GB/s); "
      f"default (many, per_warp) = {default}")
print(f"{'per_warp':>8}  {'reduceat ms':>11}  {'%memcpy':>7}  {'seg_reduce ms':>13}  {'%memcpy':>7}")
for pw in choices:
    _gpuscan._segreduce_set_many(default[0], pw)
    try:
        r = gpuscan.reduceat(x, idx).get()
        s = gpuscan.segmented_reduce(x, f).get()
        assert np.allclose(r, want_r, rtol=1e-5) and np.allclose(s, want_s, rtol=1e-5), pw
        rm = device_ms(lambda: gpuscan.reduceat(x, idx))
        sm = device_ms(lambda: gpuscan.segmented_reduce(x, f))
    finally:
        _gpuscan._segreduce_set_many(*default)
    print(f"{pw:>8}  {rm:>11.4f}  {100 * 4 * n / rm / 1e6 / memcpy_gbps:>6.1f}%  {sm:>13.4f}  "
          f"{100 * 5 * n / sm / 1e6 / memcpy_gbps:>6.1f}%")
