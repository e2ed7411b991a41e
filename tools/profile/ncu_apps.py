"""tools/profile/ncu_apps.py - two calls each of reduceat, segmented_reduce and linear_recurrence
on device arrays (float32, ~1000-value segments), for Nsight Compute to profile their kernels
(the second round is the one to read: the first loads modules and fills caches):

    ncu --clock-control none --section SpeedOfLight --section Occupancy \
        --section WarpStateStats python3 tools/profile/ncu_apps.py [log2n]

--clock-control none keeps the GPU's own clocks (ncu's default locks them to base, which
changes how a kernel's time splits).  Needs CuPy.  docs/gpu-verify.md has the workflow.
"""
import sys

import cupy as cp
import numpy as np

import gpuscan

n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 26)
x = cp.random.random(n, dtype=cp.float32)
f = (cp.random.random(n, dtype=cp.float32) < 1e-3).astype(cp.uint8)
idx = cp.asarray(np.flatnonzero(cp.asnumpy(f)) if int(f.sum()) else np.array([0]))
a = (0.9 + 0.1 * cp.random.random(n, dtype=cp.float32)).astype(cp.float32)
h = cp.empty_like(a)
for _ in range(2):                     # the second round is the one to look at
    gpuscan.reduceat(x, idx)
    gpuscan.segmented_reduce(x, f)
    gpuscan.linear_recurrence(a, x, out=h)
cp.cuda.Device().synchronize()
