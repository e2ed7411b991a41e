"""benchmarks/bench_apps.py - gpuscan.segmented_reduce, reduceat and linear_recurrence against
memcpy, and linear_recurrence against jax.lax.associative_scan with the same operator.

    python benchmarks/bench_apps.py [--quick] [--out DIR] [--max-log2 28] [--no-jax]

Device-resident data (CuPy), n = 2^10 ... 2^28:
  reduce            float32, the whole array: the time of a pass that reads the values once,
                    which the segmented reductions are held to (issue 47: reduceat <= 1.10x,
                    segmented_reduce <= 1.35x at 2^28);
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
Every gpuscan result is checked on the host with gpuscan/_slow.py's twins: the sums of all
segments within (log2 len + 2) eps sum|x|, recurrences on windows against the float64
recurrence restarted from gpuscan's own value 2000 steps earlier (a < 1: what came before has
faded below 1e-45).  Timing
rules, columns and the result file: harness.py (the file's tag is "apps").
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402

from gpuscan import _slow  # noqa: E402

TITLE = "segmented_reduce, reduceat, linear_recurrence (gpuscan vs memcpy, JAX)"
EPS32 = float(np.finfo(np.float32).eps)
SEG_LEN = 1000            # average segment length
ROWS = 4096               # rows of the 2-D recurrence at 2^28: (4096, 65536)
N_BIG, N_JAX = 2**28, 2**16
WINDOW = 4096             # steps of a recurrence checked per window
WARMUP = 2000             # steps a window's reference runs before it (0.9^2000 < 1e-91)

REDUCE = "reduce add f32"
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


def check_segments(res, x, starts):
    """Every slice's sum (slices of x from the sorted starts) within the contract's bound
    (gpuscan/_slow.py)."""
    ratio = _slow.segments_error(res, x, starts)
    return None if ratio <= 1 else f"error {ratio:.2f} x the bound"


def check_seg(res, x, f):
    return check_segments(res, x, np.flatnonzero(np.r_[True, f[1:] != 0]))


def check_windows(rows=1):
    """Windows at the start, the middle and the end of the first and last rows, each against
    gpuscan/_slow.py's recurrence in float64 from gpuscan's own value WARMUP steps before it
    (a < 1: what came before has faded), within 4 (log2 n + 2) eps m."""
    def check(res, a, b):
        a2, b2, r2 = (z.reshape(rows, -1) for z in (a, b, res))
        length = a2.shape[1]
        worst = 0.0
        for row in {0, rows - 1}:
            for w0 in {0, max(0, length // 2 - WINDOW // 2), max(0, length - WINDOW)}:
                s = max(0, w0 - WARMUP)
                part = slice(s, w0 + WINDOW)
                av, bv = a2[row, part].astype(np.float64), b2[row, part].astype(np.float64)
                h0 = None if s == 0 else float(r2[row, s - 1])
                exact = _slow.linear_recurrence(av, bv, h0=h0)
                mag = _slow.linear_recurrence(np.abs(av), np.abs(bv),
                                              h0=None if h0 is None else abs(h0))
                k = w0 - s
                worst = max(worst, _slow.sum_error(r2[row, part][k:], exact[k:], 4 * mag[k:],
                                                   length, EPS32))
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
    for n in h.each_size(4):
        h.device_case(REDUCE, n, inputs=[(np.float32, "uniform")], outputs=[],
                      impls=[("gpuscan", "gpuscan.reduce(x)", lambda x: gpuscan.reduce(x))],
                      check=h.on_host(lambda res, x: check_segments(res, x, [0])),
                      memcpy_elem=4, nbytes=4 * n)
        h.device_case(SEGRED, n, inputs=[(np.float32, "uniform"), (np.uint8, heads)], outputs=[],
                      impls=[("gpuscan", "gpuscan.segmented_reduce(x, f)",
                              lambda x, f: gpuscan.segmented_reduce(x, f))],
                      check=h.on_host(check_seg), memcpy_elem=4, nbytes=5 * n)
        cp.random.seed(n)
        idx = cp.unique(cp.random.randint(1, n, max(1, n // SEG_LEN)).astype(cp.int64))
        idx = cp.concatenate([cp.zeros(1, cp.int64), idx])
        idx_np = cp.asnumpy(idx)
        h.device_case(REDAT, n, inputs=[(np.float32, "uniform")], outputs=[],
                      impls=[("gpuscan", "gpuscan.reduceat(x, idx)",
                              lambda x: gpuscan.reduceat(x, idx))],
                      check=h.on_host(lambda res, x: check_segments(res, x, idx_np)),
                      memcpy_elem=4, nbytes=4 * n)
        h.device_case(REDAT_NP, n, inputs=[(np.float32, "uniform")], outputs=[],
                      impls=[("gpuscan", "gpuscan.reduceat(x, idx_numpy)",
                              lambda x: gpuscan.reduceat(x, idx_np))],
                      check=h.on_host(lambda res, x: check_segments(res, x, idx_np)),
                      memcpy_elem=4, nbytes=4 * n)
        h.device_case(LINREC, n, inputs=[(np.float32, coefficient), (np.float32, "uniform")],
                      outputs=[np.float32],
                      impls=[("gpuscan", "gpuscan.linear_recurrence(a, b, out=h)",
                              lambda a, b, o: gpuscan.linear_recurrence(a, b, out=o))],
                      check=h.on_host(check_windows()), memcpy_elem=4)
        if n == N_BIG:
            h.device_case(LINREC_ROWS, n,
                          inputs=[(np.float32, coefficient), (np.float32, "uniform")],
                          outputs=[np.float32],
                          impls=[("gpuscan", f"gpuscan.linear_recurrence(a.reshape({ROWS}, -1), "
                                  "..., out=h.reshape(...))",
                                  lambda a, b, o: gpuscan.linear_recurrence(
                                      a.reshape(ROWS, -1), b.reshape(ROWS, -1),
                                      out=o.reshape(ROWS, -1)))],
                          check=h.on_host(check_windows(ROWS)), memcpy_elem=4)
        if n >= N_JAX:
            wall_clock(h, n, jx)

    # ---- The goals ----
    h.goal_time_ratio(REDAT, REDUCE, N_BIG, at_most=1.10)
    h.goal_time_ratio(SEGRED, REDUCE, N_BIG, at_most=1.35)
    for n in (2**20, 2**24):
        h.goal_time_ratio(REDAT, REDUCE, n)
        h.goal_time_ratio(SEGRED, REDUCE, n)
    h.goal_pct_memcpy(SEGRED, N_BIG, 85)
    h.goal_pct_memcpy(REDAT, N_BIG, 85)
    h.goal_pct_memcpy(LINREC, N_BIG, 85)
    h.goal_pct_memcpy(LINREC_ROWS, N_BIG, 80)
    h.goal_pct_memcpy(REDAT_NP, N_BIG, 0)   # information: the indices' upload included


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="apps"))
