"""benchmarks/bench_apps.py - gpuscan.segmented_reduce, reduceat and linear_recurrence against
memcpy, and linear_recurrence against jax.lax.associative_scan with the same operator (issue #17).

    python benchmarks/bench_apps.py [--quick] [--out DIR] [--max-log2 28] [--no-jax]

Device-resident data (CuPy), n = 2^10 ... 2^28:
  segmented_reduce  float32 values, uint8 flags with one head per ~1000 values: bytes read
                    (5 n) against the same run's device-to-device memcpy;
  reduceat          float32 values, increasing CuPy int64 indices ~1000 apart (bytes read, 4 n),
                    and the same with NumPy indices (each call uploads them);
  linear_recurrence float32, a in (0.9, 1), h written (12 n bytes: a, b read, h written); at
                    2^28 also as a (4096, 65536) array along the last axis;
  vs JAX            where JAX is importable, h = jax.lax.associative_scan with the pair operator
                    (a1, b1) . (a2, b2) = (a1 a2, a2 b1 + b2), jitted, from 2^16 up: both timed
                    on the wall clock around a call and a device synchronisation (JAX runs on its
                    own streams, which the CUDA events of the other cases would not bracket).
Every gpuscan result is checked: sums of sampled segments against math.fsum within
(log2 len + 2) eps sum|x|, recurrences on windows against a float64 loop restarted from
gpuscan's own value 2000 steps earlier (a < 1: what came before has faded below 1e-45).  Timing
rules, columns and the result file: harness.py (the file's tag is "apps").
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

TITLE = "segmented_reduce, reduceat, linear_recurrence (gpuscan vs memcpy, JAX)"
EPS32 = float(np.finfo(np.float32).eps)
SEG_LEN = 1000            # average segment length (issue #17)
ROWS = 4096               # rows of the 2-D recurrence at 2^28: (4096, 65536)
N_BIG, N_JAX = 2**28, 2**16
SAMPLE = 200              # segments checked at each end
WINDOW = 4096             # steps of a recurrence checked per window
WARMUP = 2000             # steps a window's reference runs before it (0.9^2000 < 1e-91)

SEGRED = "segmented_reduce add f32 u8 flags"
REDAT = "reduceat add f32 (cupy indices)"
REDAT_NP = "reduceat add f32 (numpy indices)"
LINREC = "linear_recurrence f32"
LINREC_ROWS = f"linear_recurrence f32 ({ROWS} rows)"
LINREC_WALL = "linear_recurrence f32 (wall clock)"


def heads(cp, size, dtype):
    """uint8 segment heads, one per SEG_LEN values on average."""
    return (cp.random.random(size, dtype=np.float32) < 1.0 / SEG_LEN).astype(dtype)


def coefficient(cp, size, dtype):
    """a in (0.9, 1): the recurrence decays, so a window can be checked on its own."""
    return (0.9 + 0.1 * cp.random.random(size, dtype=np.float32)).astype(dtype)


def check_segments(cp, res, x, starts):
    """None if the first and last SAMPLE segments' sums are within the bound, else the worst."""
    starts = cp.asnumpy(starts).astype(np.int64)
    ends = np.append(starts[1:], x.size)
    got = cp.asnumpy(res)
    if got.size != starts.size:
        return f"{got.size} results for {starts.size} segments"
    worst = 0.0
    pick = list(range(min(SAMPLE, starts.size))) + list(range(max(0, starts.size - SAMPLE),
                                                              starts.size))
    for i in pick:
        v = cp.asnumpy(x[starts[i]:ends[i]]).astype(np.float64)
        exact, mag = math.fsum(v), math.fsum(np.abs(v))
        if mag == 0:
            continue
        units = abs(float(got[i]) - exact) / (mag * EPS32)
        bound = math.log2(max(v.size, 1)) + 2
        worst = max(worst, units / bound)
    return None if worst <= 1.0 else f"error {worst:.2f} x the bound"


def check_seg(h):
    cp = h.cp

    def check(res, x, f):
        fl = f != 0
        fl[0] = True
        return check_segments(cp, res, x, cp.flatnonzero(fl))

    return check


def check_windows(h, rows=1):
    """Windows at the start, the middle and the end of the first and last rows."""
    cp = h.cp

    def check(res, a, b):
        a2, b2, r2 = (z.reshape(rows, -1) for z in (a, b, res))
        L = a2.shape[1]
        worst = 0.0
        for row in {0, rows - 1}:
            for w0 in {0, max(0, L // 2 - WINDOW // 2), max(0, L - WINDOW)}:
                s = max(0, w0 - WARMUP)
                av = cp.asnumpy(a2[row, s:w0 + WINDOW]).astype(np.float64)
                bv = cp.asnumpy(b2[row, s:w0 + WINDOW]).astype(np.float64)
                got = cp.asnumpy(r2[row, s:w0 + WINDOW]).astype(np.float64)
                hv = 0.0 if s == 0 else float(r2[row, s - 1])
                mv = abs(hv)
                for t in range(av.size):
                    hv = av[t] * hv + bv[t]
                    mv = abs(av[t]) * mv + abs(bv[t])
                    if t >= w0 - s:
                        bound = 4 * (math.log2(L) + 2) * EPS32 * mv
                        worst = max(worst, abs(got[t] - hv) / bound if bound else 0.0)
        return None if worst <= 1.0 else f"error {worst:.2f} x the bound"

    return check


def jax_scan():
    """The jitted associative_scan of the pair operator, or None without JAX on a GPU."""
    try:
        import jax
        if not any(d.platform == "gpu" for d in jax.devices()):
            return None
    except Exception:
        return None

    def op(x, y):
        a1, b1 = x
        a2, b2 = y
        return a1 * a2, a2 * b1 + b2

    return jax, jax.jit(lambda a, b: jax.lax.associative_scan(op, (a, b))[1])


def wall_clock(h, n, jx):
    """linear_recurrence and JAX's associative_scan, each timed as call + synchronisation."""
    import gpuscan
    cp = h.cp
    a = coefficient(cp, n, np.float32)
    b = cp.random.random(n, dtype=np.float32)
    out = cp.empty_like(a)

    def ours():
        gpuscan.linear_recurrence(a, b, out=out)
        cp.cuda.runtime.deviceSynchronize()

    impls = [("gpuscan", "gpuscan.linear_recurrence(a, b, out=o); sync", ours)]
    if jx is not None:
        jax, fn = jx
        ja, jb = jax.device_put(cp.asnumpy(a)), jax.device_put(cp.asnumpy(b))
        impls.append(("jax", "jax.lax.associative_scan(pair op, (a, b)) jitted; block",
                      lambda: fn(ja, jb).block_until_ready()))
    rows = h.host_case(LINREC_WALL, n, [], impls, nbytes=12 * n)
    ours_row = [r for r in rows if r.impl == "gpuscan"]
    theirs = [r for r in rows if r.impl == "jax"]
    if ours_row and theirs and ours_row[0].ms and theirs[0].ms:
        ratio = theirs[0].ms / ours_row[0].ms
        h.goal(f"{LINREC} vs jax.lax.associative_scan (wall clock)", n, f"{ratio:.2f}x",
               ">= 1.00x", "ok" if ratio >= 1.0 else "MISS")
    del a, b, out
    h.free()


def suite(h):
    import gpuscan
    cp = h.cp
    jx = None if h.args.no_jax else jax_scan()
    if jx is None:
        h.note("JAX: not importable with a GPU here (or --no-jax): no associative_scan rows")
    for n in h.sizes():
        harness.log(f"n = {fmt_n(n)}")
        h.memcpy(n, 4)
        h.device_case(SEGRED, n, inputs=[(np.float32, "uniform"), (np.uint8, heads)], outputs=[],
                      impls=[("gpuscan", "gpuscan.segmented_reduce(x, f)",
                              lambda x, f: gpuscan.segmented_reduce(x, f))],
                      check=check_seg(h), memcpy_elem=4, nbytes=5 * n)
        cp.random.seed(n)
        idx = cp.unique(cp.random.randint(1, n, max(1, n // SEG_LEN)).astype(cp.int64))
        idx = cp.concatenate([cp.zeros(1, cp.int64), idx])
        idx_np = cp.asnumpy(idx)
        h.device_case(REDAT, n, inputs=[(np.float32, "uniform")], outputs=[],
                      impls=[("gpuscan", "gpuscan.reduceat(x, idx)",
                              lambda x: gpuscan.reduceat(x, idx))],
                      check=lambda res, x: check_segments(cp, res, x, idx),
                      memcpy_elem=4, nbytes=4 * n)
        h.device_case(REDAT_NP, n, inputs=[(np.float32, "uniform")], outputs=[],
                      impls=[("gpuscan", "gpuscan.reduceat(x, idx_numpy)",
                              lambda x: gpuscan.reduceat(x, idx_np))],
                      check=lambda res, x: check_segments(cp, res, x, idx),
                      memcpy_elem=4, nbytes=4 * n)
        h.device_case(LINREC, n, inputs=[(np.float32, coefficient), (np.float32, "uniform")],
                      outputs=[np.float32],
                      impls=[("gpuscan", "gpuscan.linear_recurrence(a, b, out=h)",
                              lambda a, b, o: gpuscan.linear_recurrence(a, b, out=o))],
                      check=check_windows(h), memcpy_elem=4)
        if n == N_BIG:
            h.device_case(LINREC_ROWS, n,
                          inputs=[(np.float32, coefficient), (np.float32, "uniform")],
                          outputs=[np.float32],
                          impls=[("gpuscan", f"gpuscan.linear_recurrence(a.reshape({ROWS}, -1), "
                                  "..., out=h.reshape(...))",
                                  lambda a, b, o: gpuscan.linear_recurrence(
                                      a.reshape(ROWS, -1), b.reshape(ROWS, -1),
                                      out=o.reshape(ROWS, -1)))],
                          check=check_windows(h, ROWS), memcpy_elem=4)
        if n >= N_JAX:
            wall_clock(h, n, jx)

    # ---- The done-when figures of issue #17. ----
    h.goal_pct_memcpy(SEGRED, N_BIG, 85)
    h.goal_pct_memcpy(REDAT, N_BIG, 85)
    h.goal_pct_memcpy(LINREC, N_BIG, 80)
    h.goal_pct_memcpy(LINREC_ROWS, N_BIG, 80)
    h.goal_pct_memcpy(REDAT_NP, N_BIG, 0)   # information: the indices' upload included


def parser():
    p = harness.make_parser(TITLE)
    p.add_argument("--no-jax", action="store_true", help="leave JAX's associative_scan out")
    return p


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="apps", parser=parser()))
