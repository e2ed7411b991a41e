"""tools/profile/ncu_apps.py - two calls each of reduceat, segmented_reduce and linear_recurrence
on device arrays (float32, ~1000-value segments), and with --all of scan, reduce and histogram
(256 bins) too, for Nsight Compute to profile their kernels (the second round is the one to
read: the first loads modules and fills caches):

    ncu --clock-control none --section SpeedOfLight --section Occupancy \
        --section WarpStateStats python3 tools/profile/ncu_apps.py [log2n] [--all]

--clock-control none keeps the GPU's own clocks (ncu's default locks them to base, which
changes how a kernel's time splits).  Needs CuPy.  docs/gpu-verify.md has the workflow.
"""
import sys

import cupy as cp
import numpy as np

import gpuscan

args = [a for a in sys.argv[1:] if a != "--all"]
n = 1 << (int(args[0]) if args else 26)
x = cp.random.random(n, dtype=cp.float32)
f = (cp.random.random(n, dtype=cp.float32) < 1e-3).astype(cp.uint8)
idx = cp.asarray(np.flatnonzero(cp.asnumpy(f)) if int(f.sum()) else np.array([0]))
a = (0.9 + 0.1 * cp.random.random(n, dtype=cp.float32)).astype(cp.float32)
h = cp.empty_like(a)
for _ in range(2):                     # the second round is the one to look at
    gpuscan.reduceat(x, idx)
    gpuscan.segmented_reduce(x, f)
    gpuscan.linear_recurrence(a, x, out=h)
    if "--all" in sys.argv:
        gpuscan.scan(x)
        gpuscan.reduce(x)
        gpuscan.histogram(x, 256, (0, 1))
cp.cuda.Device().synchronize()
