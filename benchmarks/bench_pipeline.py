"""benchmarks/bench_pipeline.py - NumPy in, NumPy out: the host<->device pipeline's wall-clock
times against PCIe, CuPy and NumPy in the same run.

    python3 benchmarks/bench_pipeline.py [--max-log2 28] [--huge GIB [--huge-only]] [--out DIR]

Cases at n = 2^max-log2 float32 (1 GiB at 28), perf_counter, median (harness.host_case):
  scan round trip, fresh output        gpuscan.scan(h)  | CuPy asnumpy(cumsum(asarray(h))) | np.cumsum
                                       (the result a page-locked block from gpuscan's cache, which
                                       the previous call's freed result left there)
  the same, first call                 the cache emptied before each call: the block made anew
  the same, ordinary memory            the cache off: the result's pages faulted in ahead of the
                                       unpack (prefault), or by it (no prefault)
  scan round trip, out= preallocated   gpuscan.scan(h, out=o): o a NumPy array, and o an earlier
                                       (page-locked) result
  to_device, DeviceArray.get()         GB/s of the array's bytes
  ... used again                       the fresh and out= round trips and to_device once h and o
                                       are held page-locked (their second use on; every case
                                       before runs with holding off: first uses)
  histogram (256 bins), reduce         one direction: the array up, a few bytes back
  split round trip                     gpuscan.split(h, f) | CuPy | NumPy
  sort round trip                      gpuscan.sort(h) | CuPy asnumpy(sort(asarray(h))) | np.sort
References measured in the same run: pinned host->device, device->host and both at once
(CuPy, 1 GiB), and a fresh NumPy array's allocation + first touch.  --huge GIB streams an int32
scan of GIB gibibytes (input + output beyond the GPU's memory when large enough) and checks it
against NumPy piece by piece.  gpuscan's results are checked with gpuscan/_slow.py's twins (the
scans' first 2^20 values within the whole scan's bound, the histogram's counts exactly).
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import fmt_n  # noqa: E402

from gpuscan import _slow  # noqa: E402

TITLE = "host<->device pipeline: NumPy in, NumPy out"


def pinned_reference(h, n):
    """Pinned H2D, D2H and both directions at once (CuPy, n float32), ms (median of 5)."""
    cp = h.cp
    nbytes = 4 * n
    mem = cp.cuda.alloc_pinned_memory(2 * nbytes)
    host = np.frombuffer(mem, np.float32, 2 * n)
    a, b = host[:n], host[n:]
    a[:] = 1.0
    d1, d2 = cp.empty(n, cp.float32), cp.empty(n, cp.float32)
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)

    def timed(fn):
        ts = []
        for _ in range(6):
            cp.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            fn()
            cp.cuda.runtime.deviceSynchronize()
            ts.append((time.perf_counter() - t0) * 1e3)
        return sorted(ts[1:])[2]

    up = timed(lambda: d1.set(a, stream=s1))
    down = timed(lambda: d2.get(stream=s2, out=b))

    def both():
        d1.set(a, stream=s1)
        d2.get(stream=s2, out=b)
    return up, down, timed(both)


def first_touch_ms(n):
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        x = np.empty(n, np.float32)
        x[::1024] = 0   # one write per 4 KiB page: every page faulted in
        ts.append((time.perf_counter() - t0) * 1e3)
        del x
    return sorted(ts)[1]


def suite(h):
    import gpuscan
    from gpuscan import _gpuscan
    if h.args.huge_only:
        huge_scan(h, h.args.huge)
        return
    cp = h.cp
    n = 1 << h.args.max_log2
    rng = np.random.default_rng(h.args.seed)
    x = rng.random(n, dtype=np.float32)
    flags = (rng.random(n) < 0.5).astype(np.uint8)
    out = np.empty_like(x)
    # The cases below are first uses: no array held page-locked (core/hold.c) until the
    # "used again" cases at the end.
    hold_bytes = _gpuscan._hold_bytes(0)
    gib = x.nbytes / 2**30
    harness.log(f"n = {fmt_n(n)} float32 ({gib:.2f} GiB)")

    up, down, both = pinned_reference(h, n)
    touch = first_touch_ms(n)
    h.note(f"pinned host->device {up:.1f} ms ({x.nbytes / up / 1e6:.1f} GB/s), device->host "
           f"{down:.1f} ms ({x.nbytes / down / 1e6:.1f} GB/s), both at once {both:.1f} ms "
           f"(CuPy, {gib:.2f} GiB each way): the round trip's floor")
    h.note(f"np.empty + first touch of {gib:.2f} GiB on one thread: {touch:.1f} ms")

    def check_scan(res, a):
        """The shape and dtype, and the first 2^20 values within the whole scan's bound."""
        if res.shape != a.shape or res.dtype != np.float32:
            return f"result {res.dtype}{res.shape}"
        head = 1 << 20
        ratio = _slow.scan_error(res[:head], a[:head], n=a.size)
        return None if ratio <= 1 else f"error {ratio:.2f} x the bound in the first 2^20"

    scan_rows = h.host_case("scan f32 round trip (fresh out)", n, [x], [
        ("gpuscan", "gpuscan.scan(h)", lambda a: gpuscan.scan(a)),
        ("cupy", "cp.asnumpy(cp.cumsum(cp.asarray(h)))",
         lambda a: cp.asnumpy(cp.cumsum(cp.asarray(a)))),
        ("numpy", "np.cumsum(h)", lambda a: np.cumsum(a)),
    ], check=check_scan)
    first = []
    for _ in range(3):   # the first call of a size: a page-locked block made for the result
        gpuscan.free_cached_memory()
        t0 = time.perf_counter()
        r = gpuscan.scan(x)
        first.append((time.perf_counter() - t0) * 1e3)
        del r
    first_ms = sorted(first)[1]
    h.note(f"scan f32 round trip, first call (the page-locked result cache emptied before each "
           f"of 3 calls, median): {first_ms:.1f} ms")

    def ordinary(prefault):
        def call(a):
            old_limit = _gpuscan._pinned_limit(0)
            old = _gpuscan._pipeline_prefault(prefault)
            try:
                return gpuscan.scan(a)
            finally:
                _gpuscan._pipeline_prefault(old)
                _gpuscan._pinned_limit(old_limit)
        return call

    h.host_case("scan f32 round trip (fresh, ordinary memory)", n, [x], [
        ("gpuscan", "gpuscan.scan(h), no page-locked cache, pages faulted ahead",
         ordinary(True)),
    ], check=check_scan)
    h.host_case("scan f32 round trip (fresh, ordinary, no prefault)", n, [x], [
        ("gpuscan", "gpuscan.scan(h), no page-locked cache, pages faulted by the unpack",
         ordinary(False)),
    ], check=check_scan)
    gpuscan.free_cached_memory()
    h.host_case("scan f32 round trip (out= given)", n, [x], [
        ("gpuscan", "gpuscan.scan(h, out=o)", lambda a: gpuscan.scan(a, out=out)),
        ("numpy", "np.cumsum(h, out=o)", lambda a: np.cumsum(a, out=out)),
    ], check=check_scan, nbytes=2 * x.nbytes)
    locked = gpuscan.scan(x)
    h.host_case("scan f32 round trip (out= page-locked)", n, [x], [
        ("gpuscan", "gpuscan.scan(h, out=o), o = an earlier gpuscan result",
         lambda a: gpuscan.scan(a, out=locked)),
    ], check=check_scan, nbytes=2 * x.nbytes)
    del locked
    h.host_case("to_device f32", n, [x], [
        ("gpuscan", "gpuscan.to_device(h)", lambda a: gpuscan.to_device(a)),
        # (its first value read back: the harness keeps host results, and the read waits)
        ("cupy", "cp.asarray(h)", lambda a: cp.asarray(a)[:1].get()),
    ], nbytes=x.nbytes)
    d = gpuscan.to_device(x)
    c = cp.asarray(x)
    h.host_case("DeviceArray.get f32", n, [x], [
        ("gpuscan", "d.get()", lambda a: d.get()),
        ("cupy", "cp.asnumpy(c)", lambda a: cp.asnumpy(c)),
    ], nbytes=x.nbytes)
    del d, c
    h.host_case("histogram f32 256 bins (up only)", n, [x], [
        ("gpuscan", "gpuscan.histogram(h, 256, (0, 1))",
         lambda a: gpuscan.histogram(a, 256, range=(0, 1))[0]),
        ("cupy", "cp.histogram(cp.asarray(h), 256, (0, 1))",
         lambda a: cp.asnumpy(cp.histogram(cp.asarray(a), 256, range=(0, 1))[0])),
        ("numpy", "np.histogram(h, 256, (0, 1))", lambda a: np.histogram(a, 256, range=(0, 1))[0]),
    ], check=lambda r, a: _slow.first_difference(r, _slow.histogram(a, 256, range=(0, 1))[0]),
        check_libs=("gpuscan",), nbytes=x.nbytes)
    h.host_case("reduce f32 (up only)", n, [x], [
        ("gpuscan", "gpuscan.reduce(h)", lambda a: gpuscan.reduce(a)),
        ("cupy", "cp.asarray(h).sum()", lambda a: float(cp.asarray(a).sum())),
        ("numpy", "np.add.reduce(h)", lambda a: np.add.reduce(a)),
    ], nbytes=x.nbytes)
    h.host_case("split f32, u8 flags (round trip)", n, [x, flags], [
        ("gpuscan", "gpuscan.split(h, f)", lambda a, f: gpuscan.split(a, f)[0]),
        ("cupy", "concatenate((x[m], x[~m]))",
         lambda a, f: (lambda xx, m: cp.asnumpy(cp.concatenate((xx[m], xx[~m]))))(
             cp.asarray(a), cp.asarray(f).view(cp.bool_))),
        ("numpy", "concatenate((x[m], x[~m]))",
         lambda a, f: (lambda m: np.concatenate((a[m], a[~m])))(f.view(bool))),
    ], nbytes=2 * x.nbytes + flags.nbytes)
    want = np.sort(x)
    h.host_case("sort f32 round trip", n, [x], [
        ("gpuscan", "gpuscan.sort(h)", lambda a: gpuscan.sort(a)),
        ("cupy", "cp.asnumpy(cp.sort(cp.asarray(h)))",
         lambda a: cp.asnumpy(cp.sort(cp.asarray(a)))),
        ("numpy", "np.sort(h)", lambda a: np.sort(a)),
    ], check=lambda r, a: _slow.first_difference(r, want), check_libs=("gpuscan",),
        nbytes=2 * x.nbytes)
    del want

    # Arrays used again: x and o held page-locked from their second use on (64 MiB or more).
    _gpuscan._hold_bytes(hold_bytes)
    for _ in range(2):
        gpuscan.scan(x, out=out)
    h.host_case("scan f32 round trip (fresh out, input used again)", n, [x], [
        ("gpuscan", "gpuscan.scan(h), h held", lambda a: gpuscan.scan(a)),
    ], check=check_scan)
    h.host_case("scan f32 round trip (out= used again)", n, [x], [
        ("gpuscan", "gpuscan.scan(h, out=o), h and o held", lambda a: gpuscan.scan(a, out=out)),
    ], check=check_scan, nbytes=2 * x.nbytes)
    h.host_case("to_device f32 (used again)", n, [x], [
        ("gpuscan", "gpuscan.to_device(h), h held", lambda a: gpuscan.to_device(a)),
    ], nbytes=x.nbytes)
    h.note(f"held page-locked after the 'used again' cases: "
           f"{gpuscan.device_info()['pinned_bytes_in_use'] / 2**30:.2f} GiB in use "
           f"(x and o, and the results alive)")

    def ms(case):
        r = h.row(case, "gpuscan", n)
        return r.ms if r is not None and r.ms else float("nan")

    def goal(figure, value_ms, target_ms):
        ok = value_ms == value_ms and value_ms <= target_ms
        h.goal(figure, n, f"{value_ms:.1f} ms", f"<= {target_ms:g} ms", "ok" if ok else "MISS")

    big = n == 1 << 28
    if big:
        fresh = ms("scan f32 round trip (fresh out)")
        goal("scan round trip, fresh output", fresh, 28)
        cupy_row = h.row("scan f32 round trip (fresh out)", "cupy", n)
        ratio = cupy_row.ms / fresh if cupy_row and cupy_row.ms else float("nan")
        h.goal("scan round trip vs CuPy's", n, f"{ratio:.1f}x", ">= 8x",
               "ok" if ratio >= 8 else "MISS")
        h.goal("  (first call: page-locked block made)", n, f"{first_ms:.1f} ms", "-", "info")
        h.goal("  (ordinary memory, no cache)", n,
               f"{ms('scan f32 round trip (fresh, ordinary memory)'):.1f} ms", "-", "info")
        goal("scan round trip, out= a NumPy array", ms("scan f32 round trip (out= given)"),
             fresh)
        goal("  (out= page-locked)", ms("scan f32 round trip (out= page-locked)"), fresh)
        goal("scan round trip, out= used again", ms("scan f32 round trip (out= used again)"),
             ms("scan f32 round trip (fresh out, input used again)"))
        for case, floor in (("to_device f32", 50), ("to_device f32 (used again)", 50),
                            ("DeviceArray.get f32", 50)):
            gbps = x.nbytes / ms(case) / 1e6
            h.goal(f"{case} GB/s", n, f"{gbps:.1f}", f">= {floor}",
                   "ok" if gbps >= floor else "MISS")
        goal("histogram 256 bins (NumPy in)", ms("histogram f32 256 bins (up only)"), 25)
        goal("reduce (NumPy in)", ms("reduce f32 (up only)"), 25)
        goal("split round trip", ms("split f32, u8 flags (round trip)"), 60)
        goal("sort round trip", ms("sort f32 round trip"), 60)
    del scan_rows
    if h.args.huge:
        huge_scan(h, h.args.huge)


def huge_scan(h, gib):
    """An int32 scan (dtype=int32: it wraps, as np.cumsum(dtype=int32)) of `gib` GiB, streamed
    through the device: input + output beyond its memory for large `gib`; checked piece by
    piece against NumPy with the running carry."""
    import gpuscan
    n = int(gib * 2**30) // 4
    dev = gpuscan.device_info().get("memory_bytes", 0)
    harness.log(f"huge scan: {n:,} int32 ({gib} GiB in, {gib} GiB out; device {dev / 2**30:.0f} GiB)")
    x = np.empty(n, np.int32)
    step = 1 << 26
    # Cheap, varied values (a random fill of tens of GiB takes minutes): a pattern of random
    # values, shifted by one per piece so that no two pieces are alike.
    pattern = np.random.default_rng(h.args.seed).integers(-1000, 1000, step, dtype=np.int32)
    for s in range(0, n, step):
        m = min(n, s + step) - s
        x[s:s + m] = np.roll(pattern, s // step)[:m]
    t0 = time.perf_counter()
    res = gpuscan.scan(x, dtype=np.int32)
    dt = time.perf_counter() - t0
    t0 = time.perf_counter()   # again into the same result, its pages now resident
    gpuscan.scan(x, dtype=np.int32, out=res)
    dt_out = time.perf_counter() - t0
    carry = np.int32(0)
    bad = None
    for s in range(0, n, step):
        piece = _slow.scan(x[s:s + step], dtype=np.int32) + carry
        if not np.array_equal(res[s:s + step], piece):
            bad = s + int(np.flatnonzero(res[s:s + step] != piece)[0])
            break
        carry = piece[-1]
    gbps = x.nbytes / dt / 1e9
    beyond = 2 * x.nbytes > dev
    h.note(f"huge scan: {gib} GiB int32 in and out ({'beyond' if beyond else 'within'} the "
           f"device's {dev / 2**30:.0f} GiB) in {dt:.2f} s: {gbps:.1f} GB/s of input; "
           + ("matches NumPy piece by piece" if bad is None else f"FIRST DIFFERENCE at {bad}"))
    if bad is not None:
        h.fail(f"huge scan differs from NumPy at {bad}")
    h.note(f"huge scan again with out= the same result (its pages resident): {dt_out:.2f} s, "
           f"{x.nbytes / dt_out / 1e9:.1f} GB/s of input")
    h.goal("scan beyond device memory (GB/s of input)", f"{gib}G", f"{gbps:.1f}", ">= 35",
           "ok" if gbps >= 35 and beyond else ("MISS" if beyond else "n/a"))
    h.goal("  (again, out= the resident result)", f"{gib}G", f"{x.nbytes / dt_out / 1e9:.1f}",
           ">= 35", "info")


def extra_args(parser):
    parser.add_argument("--huge", type=float, default=0,
                        help="also stream an int32 scan of this many GiB (in and out each)")
    parser.add_argument("--huge-only", action="store_true",
                        help="with --huge: only that scan, not the 2^max-log2 cases")


if __name__ == "__main__":
    parser = harness.make_parser(TITLE)
    extra_args(parser)
    sys.exit(harness.run_main(TITLE, suite, default_tag="pipeline", parser=parser))
