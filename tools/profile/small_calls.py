"""tools/profile/small_calls.py - wall-clock time per call of gpuscan's primitives on small device
arrays (CuPy, 2^16 values by default) beside CuPy's and PyTorch's: a loop of calls, then one
device synchronisation, divided by the calls (median of 7 loops): what a call costs when the
device is not the limit.  The "part:" rows split a call's host cost: the same calls on
gpuscan.DeviceArray inputs (no __cuda_array_interface__ to read, no pointer to check), reading
CuPy's and PyTorch's interface, CUDA's pointer query, an empty kernel's launch, a C call that
does nothing on the device.  Host to host the same call moves by 30-50%: compare rows of one
run.

    python3 tools/profile/small_calls.py [log2n] [calls] [case substring]
"""
import datetime
import sys
import time

import cupy as cp
import numpy as np

import gpuscan

n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 16)
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
try:
    import torch
except ImportError:
    torch = None

x = cp.random.random(n, dtype=cp.float32)
xi = cp.random.randint(0, 1000, n, dtype=cp.int32)
f = (cp.random.random(n, dtype=cp.float32) < 0.01).astype(cp.uint8)
out = cp.empty_like(x)
outi = cp.empty_like(xi)


def per_call(fn):
    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        cp.cuda.Device().synchronize()
        ts.append((time.perf_counter() - t0) / calls * 1e6)
    return sorted(ts)[3]


cases = [
    ("scan f32", lambda: gpuscan.scan(x)),
    ("scan f32 out=", lambda: gpuscan.scan(x, out=out)),
    ("scan i32", lambda: gpuscan.scan(xi, dtype=np.int32)),
    ("segmented_scan f32 u8", lambda: gpuscan.segmented_scan(x, f)),
    ("segmented_scan i32 u8 out=", lambda: gpuscan.segmented_scan(xi, f, dtype=np.int32, out=outi)),
    ("reduce f32", lambda: gpuscan.reduce(x)),
    ("histogram f32 256", lambda: gpuscan.histogram(x, 256, range=(0, 1))),
    ("bincount i32 <1000", lambda: gpuscan.bincount(xi)),
    ("split f32 u8", lambda: gpuscan.split(x, f)),
    ("cupy cumsum f32", lambda: cp.cumsum(x)),
    ("cupy sum f32", lambda: x.sum()),
    ("cupy histogram 256", lambda: cp.histogram(x, 256, range=(0, 1))),
]
if torch is not None:
    tx = torch.as_tensor(x, device="cuda")
    cases += [("torch cumsum f32", lambda: torch.cumsum(tx, 0)),
              ("torch sum f32", lambda: tx.sum()),
              ("torch histc 256", lambda: torch.histc(tx, 256, 0, 1))]
d, di, df, dout, douti = (gpuscan.to_device(cp.asnumpy(v)) for v in (x, xi, f, out, outi))
empty = cp.RawKernel(r'extern "C" __global__ void empty() {}', "empty")
cases += [
    ("part: scan f32 DeviceArray", lambda: gpuscan.scan(d)),
    ("part: scan f32 DeviceArray out=", lambda: gpuscan.scan(d, out=dout)),
    ("part: segmented_scan DeviceArray", lambda: gpuscan.segmented_scan(d, df)),
    ("part: scan i32 DeviceArray out=", lambda: gpuscan.scan(di, dtype=np.int32, out=douti)),
    ("part: segmented_scan i32 DeviceArray out=",
     lambda: gpuscan.segmented_scan(di, df, dtype=np.int32, out=douti)),
    ("part: reduce f32 DeviceArray", lambda: gpuscan.reduce(d)),
    ("part: histogram DeviceArray", lambda: gpuscan.histogram(d, 256, range=(0, 1))),
    ("part: split DeviceArray", lambda: gpuscan.split(d, df)),
    ("part: cupy __cuda_array_interface__", lambda: x.__cuda_array_interface__),
    ("part: cudaPointerGetAttributes", lambda: cp.cuda.runtime.pointerGetAttributes(x.data.ptr)),
    ("part: empty kernel launch (CuPy)", lambda: empty((1,), (32,), ())),
    ("part: gpuscan.backend()", lambda: gpuscan.backend()),
]


class Fixed:
    """x's __cuda_array_interface__ read once, as a plain attribute (no producer's code per read)."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


fixed = Fixed(x.__cuda_array_interface__)
unnamed = Fixed({k: v for k, v in x.__cuda_array_interface__.items() if k != "stream"})
cases += [
    ("part: scan f32 fixed interface", lambda: gpuscan.scan(fixed)),
    ("part: scan f32 fixed, no stream", lambda: gpuscan.scan(unnamed)),
]
if torch is not None:
    cases += [("part: torch __cuda_array_interface__", lambda: tx.__cuda_array_interface__),
              ("part: scan f32 torch", lambda: gpuscan.scan(tx))]
only = sys.argv[3] if len(sys.argv) > 3 else ""
print(f"{gpuscan.device_info().get('name')}, {datetime.date.today().isoformat()}, "
      f"gpuscan {gpuscan.__version__}, CuPy {cp.__version__}")
print(f"n = 2^{n.bit_length() - 1}, {calls} calls per loop, median of 7 loops, us per call")
for name, fn in [c for c in cases if only in c[0]]:
    print(f"{name:28s} {per_call(fn):8.2f}")
