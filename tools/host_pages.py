"""tools/host_pages.py - what a fresh 1 GiB NumPy result costs the host, apart from the GPU.

    python3 tools/host_pages.py [--log2 28] [--threads 16] [--reps 3]

Prints the host's transparent huge page settings and the median time of: np.empty + first touch
on one thread (NumPy's madvise(MADV_HUGEPAGE) on and off), the same touch split among threads,
an anonymous mmap with MAP_POPULATE, a copy into already-touched pages on one thread and on
many, and - when gpuscan has a CUDA backend - gpuscan.scan of a NumPy array with a fresh result
(its pages populated ahead of the unpack, and not) and with out= (issue #14: the gap between a
fresh result and out= is the fresh result's pages).
"""

import argparse
import mmap
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

try:
    from numpy._core import multiarray as _ma
except ImportError:  # NumPy 1.x
    from numpy.core import multiarray as _ma


def med(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return f"({e.strerror})"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2", type=int, default=28)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    n = 1 << a.log2
    nt = a.threads
    src = np.ones(n, np.float32)
    print(f"n = 2^{a.log2} float32 ({n * 4 >> 20} MiB), {nt} threads, NumPy {np.__version__}, "
          f"Linux {os.uname().release}")
    for k in ("enabled", "defrag", "khugepaged/defrag"):
        print(f"  THP {k}: {read('/sys/kernel/mm/transparent_hugepage/' + k)}")
    print(f"  NumPy madvise hugepage: {_ma._get_madvise_hugepage()}")
    pool = ThreadPoolExecutor(nt)

    def touch_1t():
        b = np.empty(n, np.float32)
        b[...] = src

    def touch_mt():
        b = np.empty(n, np.float32)
        step = -(-n // nt)
        list(pool.map(lambda i: b.__setitem__(slice(i * step, (i + 1) * step),
                                              src[i * step:(i + 1) * step]), range(nt)))

    def populate():
        m = mmap.mmap(-1, n * 4, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
        b = np.frombuffer(m, np.float32)
        b[...] = src
        del b
        m.close()

    warm = np.empty(n, np.float32)
    warm[...] = src

    def copy_1t():
        warm[...] = src

    def copy_mt():
        step = -(-n // nt)
        list(pool.map(lambda i: warm.__setitem__(slice(i * step, (i + 1) * step),
                                                 src[i * step:(i + 1) * step]), range(nt)))

    rows = [("np.empty + copy, 1 thread (hugepage madvise on)", touch_1t),
            (f"np.empty + copy, {nt} threads", touch_mt),
            ("mmap MAP_POPULATE + copy, 1 thread", populate),
            ("copy into touched pages, 1 thread", copy_1t),
            (f"copy into touched pages, {nt} threads", copy_mt)]
    for name, fn in rows:
        fn()
        print(f"  {name:48s} {med(fn, a.reps):8.1f} ms")
    _ma._set_madvise_hugepage(False)
    touch_1t()
    print(f"  {'np.empty + copy, 1 thread (madvise off)':48s} {med(touch_1t, a.reps):8.1f} ms")
    print(f"  {f'np.empty + copy, {nt} threads (madvise off)':48s} "
          f"{med(touch_mt, a.reps):8.1f} ms")
    _ma._set_madvise_hugepage(True)

    sys.path.insert(0, os.getcwd())
    import gpuscan
    if gpuscan.backend() != "cuda":
        print("  (gpuscan backend is not cuda: no scan rows)")
        return
    out = np.empty(n, np.float32)
    gpuscan.scan(src, out=out)
    from gpuscan import _gpuscan
    print(f"  {'gpuscan.scan fresh result':48s} {med(lambda: gpuscan.scan(src), a.reps):8.1f} ms")
    _gpuscan._pipeline_prefault(False)
    print(f"  {'gpuscan.scan fresh result, no prefault':48s} "
          f"{med(lambda: gpuscan.scan(src), a.reps):8.1f} ms")
    _gpuscan._pipeline_prefault(True)
    print(f"  {'gpuscan.scan out=':48s} "
          f"{med(lambda: gpuscan.scan(src, out=out), a.reps):8.1f} ms")


if __name__ == "__main__":
    main()
