"""benchmarks/bench_operator.py - gpuscan.Operator on CUDA (NVRTC-built kernels) against the
built-in scan, linear_recurrence, memcpy and jax.lax.associative_scan.

    python benchmarks/bench_operator.py [--min-log2 24 --step 4 --max-log2 28] [--no-jax]

Figures (issue 46's "Done when", GPU lines):
  add          an Operator "x + y" over float32 against the built-in scan, device-resident
               (CuPy in, DeviceArray out: the harness's CUDA events), each n;
  affine       the Operator {a, b} float32, r = (x.a y.a, y.a x.b + y.b), against
               gpuscan.linear_recurrence (the same recurrence), 2^24;
  kadane       Kadane's max-subarray monoid (four int64 fields) against memcpy, counting 64 bytes
               a value (32 read, 32 written), 2^24;
  vs JAX       each of the three against jax.lax.associative_scan of the same operator (jitted,
               on the wall clock around a call and block_until_ready), 2^24;
  first call   a new Operator's first scan in a fresh process with an empty disk cache (NVRTC
               compile + load + the call), and in another fresh process with the cache warm
               (disk + load + the call), n = 2^20, each after a built-in scan has set up CUDA;
  overhead     per call at n = 1024, device-resident, Operator scan minus the built-in scan;
  NumPy path   NumPy in and out on the wall clock (notes, no goal): the float64 affine Operator
               over records and over a tuple of two arrays beside linear_recurrence, 2^20; the
               float32 add Operator beside the built-in scan, 1 GiB.
Structured operators take NumPy arrays (no device array holds a structured dtype): their calls
copy in and out, so their device time is their kernels' own, read by the PyTorch profiler
(CUPTI) over 20 calls - gs_user_* for the Operator, gs_linrec_* for linear_recurrence - both
the same way.  Timing rules, columns and the result file: harness.py (tag "operator").
"""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed
import harness  # noqa: E402

TITLE = "Operator (NVRTC) vs built-in scan, linear_recurrence, memcpy, JAX"
N_STRUCT = 2**24
ADD_OP, ADD_BUILTIN = "Operator add f32 scan", "built-in scan f32"
AFFINE_SRC = "T r; r.a = x.a * y.a; r.b = y.a * x.b + y.b; return r;"
KADANE_SRC = """T r;
r.t = x.t + y.t;
r.p = x.p > x.t + y.p ? x.p : x.t + y.p;
r.s = y.s > x.s + y.t ? y.s : x.s + y.t;
r.b = x.b > y.b ? x.b : y.b;
if (x.s + y.p > r.b) r.b = x.s + y.p;
return r;"""
NEG = -(1 << 40)


def ops():
    import gpuscan
    fadd = gpuscan.Operator("x + y", dtype=np.float32, identity=0.0, name="fadd")
    affine = gpuscan.Operator(AFFINE_SRC, dtype=[("a", "f4"), ("b", "f4")], identity=(1.0, 0.0),
                              name="affine")
    kadane = gpuscan.Operator(KADANE_SRC, dtype=[("t", "i8"), ("p", "i8"), ("s", "i8"),
                                                 ("b", "i8")],
                              identity=(0, NEG, NEG, NEG), name="kadane")
    return fadd, affine, kadane


def kernel_ms(fn, match, reps=20):
    """Device time per call of the kernels whose name contains `match` (PyTorch profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    for e in prof.key_averages():
        if match in e.key:
            total += getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
    return total / reps / 1000.0


def wall_ms(fn, reps=20):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000.0 * float(np.median(times))


def jax_or_none():
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        return jax if any(d.platform == "gpu" for d in jax.devices()) else None
    except Exception:
        return None


def add_cases(h, fadd):
    import gpuscan
    cp = h.cp

    def check(res, x):
        exact = cp.cumsum(x.astype(cp.float64))
        bound = (np.log2(x.size) + 2) * np.finfo(np.float32).eps * exact
        bad = int((cp.abs(res.astype(cp.float64) - exact) > bound).sum())
        return None if bad == 0 else f"{bad} values outside the float bound"

    # Both make their result (an Operator takes no out= with a device array); the output slabs are
    # named so that GB/s counts the bytes each call writes as well as those it reads.
    for n in h.each_size(4):
        h.device_case(ADD_OP, n, inputs=[(np.float32, "uniform")], outputs=[np.float32],
                      impls=[("gpuscan", "gpuscan.scan(x, Operator('x + y', float32))",
                              lambda x, _o: gpuscan.scan(x, fadd))], check=check)
        h.device_case(ADD_BUILTIN, n, inputs=[(np.float32, "uniform")], outputs=[np.float32],
                      impls=[("gpuscan", "gpuscan.scan(x)", lambda x, _o: gpuscan.scan(x))])
        a, b = h.row(ADD_OP, "gpuscan", n), h.row(ADD_BUILTIN, "gpuscan", n)
        if a is not None and b is not None and a.ms and b.ms:
            h.goal("Operator add f32 speed / built-in scan", n, f"{b.ms / a.ms:.2f}x",
                   ">= 0.95x", "ok" if b.ms / a.ms >= 0.95 else "MISS")


def struct_cases(h, fadd, affine, kadane, jax):
    import gpuscan
    import torch
    n = N_STRUCT
    rng = np.random.default_rng(46)
    coef = (0.9 + 0.1 * rng.random(n)).astype(np.float32)
    inc = rng.random(n).astype(np.float32)
    pairs = np.empty(n, affine.dtype)
    pairs["a"], pairs["b"] = coef, inc
    got = gpuscan.scan(pairs, affine)["b"]
    want = gpuscan.linear_recurrence(coef, inc)
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        h.fail("affine Operator scan differs from linear_recurrence")
    t_aff = kernel_ms(lambda: gpuscan.scan(pairs, affine), "gs_user")
    ca, cb = torch.as_tensor(coef, device="cuda"), torch.as_tensor(inc, device="cuda")
    t_lin = kernel_ms(lambda: gpuscan.linear_recurrence(ca, cb), "gs_linrec")
    h.note(f"affine f32 2^24: Operator kernels {t_aff:.4f} ms, linear_recurrence kernels "
           f"{t_lin:.4f} ms (PyTorch profiler, 20 calls)")
    h.goal("affine Operator speed / linear_recurrence", n, f"{t_lin / t_aff:.2f}x", ">= 0.95x",
           "ok" if t_lin / t_aff >= 0.95 else "MISS")

    vals = rng.integers(-100, 100, n)
    kad = np.empty(n, kadane.dtype)
    for f in ("t", "p", "s", "b"):
        kad[f] = vals
    t_kad = kernel_ms(lambda: gpuscan.scan(kad, kadane), "gs_user")
    h.memcpy(n, 8)
    mem = h.memcpy_gbps(n, 8)
    gbps = 64 * n / (t_kad * 1e6)
    h.note(f"kadane i64x4 2^24: Operator kernels {t_kad:.4f} ms = {gbps:.0f} GB/s (64 B a value); "
           f"memcpy {mem:.0f} GB/s")
    h.goal("kadane Operator GB/s / memcpy GB/s", n, f"{gbps / mem:.2f}x", ">= 0.70x",
           "ok" if gbps / mem >= 0.7 else "MISS")
    res = gpuscan.scan(kad[:100000], kadane)["b"]
    ref, cur, top = [], 0, NEG
    for v in vals[:100000].tolist():
        cur = max(v, cur + v)
        top = max(top, cur)
        ref.append(top)
    if res.tolist() != ref:
        h.fail("kadane Operator scan differs from Kadane's loop")

    if jax is None:
        h.note("JAX: not importable with a GPU here: no associative_scan comparisons")
        return
    jnp = jax.numpy
    d = torch.as_tensor(inc, device="cuda")
    t_add = kernel_ms(lambda: gpuscan.scan(d, fadd), "gs_user")
    j_add = jax.jit(lambda x: jax.lax.associative_scan(jnp.add, x))
    jx = jax.device_put(inc)
    w_add = wall_ms(lambda: j_add(jx).block_until_ready())

    def aff(x, y):
        return x[0] * y[0], y[0] * x[1] + y[1]

    j_aff = jax.jit(lambda a, b: jax.lax.associative_scan(aff, (a, b)))
    ja, jb = jax.device_put(coef), jax.device_put(inc)
    w_aff = wall_ms(lambda: j_aff(ja, jb)[1].block_until_ready())

    def kad_op(x, y):
        t = x[0] + y[0]
        p = jnp.maximum(x[1], x[0] + y[1])
        s = jnp.maximum(y[2], x[2] + y[0])
        b = jnp.maximum(jnp.maximum(x[3], y[3]), x[2] + y[1])
        return t, p, s, b

    j_kad = jax.jit(lambda *f: jax.lax.associative_scan(kad_op, f))
    jk = [jax.device_put(kad[f]) for f in ("t", "p", "s", "b")]
    w_kad = wall_ms(lambda: j_kad(*jk)[3].block_until_ready())
    for name, ours, theirs in (("add f32", t_add, w_add), ("affine f32", t_aff, w_aff),
                               ("kadane i64x4", t_kad, w_kad)):
        h.note(f"JAX associative_scan {name} 2^24: {theirs:.4f} ms (wall); Operator kernels "
               f"{ours:.4f} ms")
        h.goal(f"Operator {name} vs jax.lax.associative_scan", n, f"{theirs / ours:.2f}x",
               ">= 5.00x", "ok" if theirs / ours >= 5 else "MISS")


FIRST = textwrap.dedent("""
    import time, numpy as np, cupy as cp, gpuscan
    x = cp.random.random(1 << 20, dtype=np.float32)
    gpuscan.scan(x); cp.cuda.runtime.deviceSynchronize()          # CUDA set up
    op = gpuscan.Operator("x * 0.5f + y /* {tag} */", dtype=np.float32, identity=0.0)
    t = time.perf_counter()
    gpuscan.scan(x, op); cp.cuda.runtime.deviceSynchronize()
    print(1000 * (time.perf_counter() - t))
""")


def first_calls(h, tmp):
    env = dict(os.environ, GPUSCAN_CACHE_DIR=os.path.join(tmp, "cache"),
               PYTHONPATH=os.pathsep.join(sys.path))
    tag = f"first-{os.getpid()}"
    got = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", FIRST.replace("{tag}", tag)], env=env,
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            h.fail(f"first-call process: {r.stderr[-400:]}")
            return
        got.append(float(r.stdout.strip()))
    h.goal("first call, empty disk cache (compile + load + call)", 2**20, f"{got[0]:.0f} ms",
           "<= 1000 ms", "ok" if got[0] <= 1000 else "MISS")
    h.goal("first call, new process, warm cache (disk + load + call)", 2**20,
           f"{got[1]:.1f} ms", "<= 50 ms", "ok" if got[1] <= 50 else "MISS")


def overhead(h, fadd):
    import gpuscan
    cp = h.cp
    x = cp.random.random(1024, dtype=np.float32)
    per = []
    for fn in (lambda: gpuscan.scan(x, fadd), lambda: gpuscan.scan(x)):
        for _ in range(100):
            fn()
        cp.cuda.runtime.deviceSynchronize()
        t = time.perf_counter()
        for _ in range(2000):
            fn()
        cp.cuda.runtime.deviceSynchronize()
        per.append(1e6 * (time.perf_counter() - t) / 2000)
    h.note(f"per call at n = 1024: Operator {per[0]:.2f} us, built-in {per[1]:.2f} us")
    h.goal("per-call overhead, Operator - built-in scan", 1024, f"{per[0] - per[1]:.2f} us",
           "<= 2 us", "ok" if per[0] - per[1] <= 2 else "MISS")


def numpy_path(h, fadd):
    import gpuscan
    n = 2**20
    rng = np.random.default_rng(2)
    ca, cb = rng.uniform(-0.99, 0.99, n), rng.standard_normal(n)
    aff = gpuscan.Operator(AFFINE_SRC, dtype=[("a", "f8"), ("b", "f8")], identity=(1.0, 0.0),
                           name="affine64")
    pairs = np.empty(n, aff.dtype)
    pairs["a"], pairs["b"] = ca, cb
    if not np.allclose(gpuscan.scan(pairs, aff)["b"], gpuscan.linear_recurrence(ca, cb)):
        h.fail("float64 affine Operator scan differs from linear_recurrence")
    t = [wall_ms(f) for f in (lambda: gpuscan.scan(pairs, aff),
                              lambda: gpuscan.scan((ca, cb), aff),
                              lambda: gpuscan.linear_recurrence(ca, cb))]
    h.note(f"NumPy in/out, affine f64 2^20: Operator over records {t[0]:.2f} ms, over a tuple of "
           f"two arrays {t[1]:.2f} ms; linear_recurrence {t[2]:.2f} ms (wall, median of 20)")
    x = rng.random(2**28, dtype=np.float32)
    t = [wall_ms(f, reps=10) for f in (lambda: gpuscan.scan(x, fadd), lambda: gpuscan.scan(x))]
    h.note(f"NumPy in/out, add f32 1 GiB: Operator {t[0]:.1f} ms, built-in scan {t[1]:.1f} ms "
           f"(wall, median of 10)")


def suite(h):
    import tempfile
    fadd, affine, kadane = ops()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GPUSCAN_CACHE_DIR"] = os.path.join(tmp, "bench-cache")
        first_calls(h, tmp)
        add_cases(h, fadd)
        overhead(h, fadd)
        numpy_path(h, fadd)
        struct_cases(h, fadd, affine, kadane, None if h.args.no_jax else jax_or_none())


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="operator"))
