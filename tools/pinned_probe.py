"""tools/pinned_probe.py - what page-locked host memory costs on this machine (CuPy): cudaHostAlloc
and cudaFreeHost of 1 GiB, an anonymous mapping populated by 16 threads then cudaHostRegister'd
(whole, and in 32 MiB pieces) and unregistered, and copies into each kind of memory.  The
measurements behind csrc/cuda/pinned.c's design (benchmarks/results/*-pinned.txt).

    python3 tools/pinned_probe.py
"""
import time, numpy as np, cupy as cp, ctypes, os, sys
from concurrent.futures import ThreadPoolExecutor
rt = cp.cuda.runtime
G = 1 << 30
def t(f, *a):
    s = time.perf_counter(); r = f(*a); return (time.perf_counter() - s) * 1e3, r
libc = ctypes.CDLL("libc.so.6")
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
def populate(a, threads=16):
    base = a.ctypes.data; n = a.nbytes; step = 2 << 20
    lo = base // 4096 * 4096
    def one(i):
        s = max(lo + i * step, lo); e = min(s + step, base + n)
        libc.madvise(s, e - s, 23)
    with ThreadPoolExecutor(threads) as ex: list(ex.map(one, range((base + n - lo + step - 1) // step)))
dev = cp.empty(G // 4, cp.float32); dev.fill(1); cp.cuda.Device().synchronize()
for rep in range(3):
    ms, p = t(rt.hostAlloc, G, 0); print(f"hostAlloc 1GiB {ms:.1f} ms")
    ms, _ = t(rt.memcpy, p, dev.data.ptr, G, 2); print(f"  D2H into it {ms:.1f} ms")
    ms, _ = t(rt.memcpy, p, dev.data.ptr, G, 2); print(f"  D2H into it again {ms:.1f} ms")
    ms, _ = t(rt.freeHost, p); print(f"freeHost 1GiB {ms:.1f} ms")
for rep in range(3):
    a = np.empty(G // 4, np.float32)
    ms, _ = t(populate, a); print(f"np.empty + populate 16 thr {ms:.1f} ms")
    ms, _ = t(rt.hostRegister, a.ctypes.data, G, 0); print(f"hostRegister 1GiB (populated) {ms:.1f} ms")
    ms, _ = t(rt.memcpy, a.ctypes.data, dev.data.ptr, G, 2); print(f"  D2H into registered {ms:.1f} ms")
    ms, _ = t(rt.hostUnregister, a.ctypes.data); print(f"hostUnregister {ms:.1f} ms")
    del a
for rep in range(2):
    a = np.empty(G // 4, np.float32)
    ms, _ = t(rt.hostRegister, a.ctypes.data, G, 0); print(f"hostRegister 1GiB (fresh, unpopulated) {ms:.1f} ms")
    ms, _ = t(rt.hostUnregister, a.ctypes.data); print(f"hostUnregister {ms:.1f} ms")
    del a
# chunked register of 32 MiB pieces of a populated array
a = np.empty(G // 4, np.float32); populate(a)
base = (a.ctypes.data + 4095) // 4096 * 4096
s = time.perf_counter(); ptrs = []
for i in range(31):
    rt.hostRegister(base + i * (32 << 20), 32 << 20, 0); ptrs.append(base + i * (32 << 20))
ms = (time.perf_counter() - s) * 1e3; print(f"31 x hostRegister 32MiB {ms:.1f} ms")
s = time.perf_counter()
for q in ptrs: rt.hostUnregister(q)
print(f"31 x hostUnregister {(time.perf_counter()-s)*1e3:.1f} ms")
h = np.ones(G // 4, np.float32)
p = rt.hostAlloc(G, 0)
ms, _ = t(rt.memcpy, dev.data.ptr, p, G, 1); print(f"H2D pinned {ms:.1f} ms")
ms, _ = t(rt.memcpy, dev.data.ptr, h.ctypes.data, G, 1); print(f"H2D pageable {ms:.1f} ms")
ms, _ = t(rt.memcpy, h.ctypes.data, dev.data.ptr, G, 2); print(f"D2H pageable (touched) {ms:.1f} ms")
import gpuscan
