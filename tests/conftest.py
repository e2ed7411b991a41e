"""Shared fixtures for gpuscan's tests.

The same tests run on whichever backend is active (GPUSCAN_BACKEND or the default choice).
Tests marked `gpu` need the CUDA backend and are skipped, with the reason, on the CPU backend;
CI runs everything else on the CPU backend.  Tests marked `slow` run by default (CI runs them
too); `-m "not slow"` leaves them out of a quick local run.
"""
import os
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pytest

import gpuscan
from gpuscan import _gpuscan

HERE = os.path.dirname(os.path.abspath(__file__))
# The source tree these tests came from (a clone or an unpacked sdist).  The package under test
# is the gpuscan that `import gpuscan` finds, which may be installed elsewhere: tests that read
# the tree (notebooks/, kernels/) skip, with the reason, when it is not there.
ROOT = os.path.dirname(HERE)
# The folder holding the gpuscan under test: fresh interpreters (run_python) import it from there.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(gpuscan.__file__)))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # tests/reference.py importable as `reference`

# Tile size of the device-wide scan, in elements: the sizes below reach the paths around it.
NV = _gpuscan._config()["scan_tile_items"]

# Sizes named after the path they exercise.  SMALL_SIZES go into the full op x dtype product;
# LARGE_SIZES only into a few cases.
SMALL_SIZES = [
    pytest.param(0, id="empty"),
    pytest.param(1, id="one"),
    pytest.param(31, id="sub_warp_31"),
    pytest.param(32, id="one_warp_32"),
    pytest.param(33, id="warp_plus_one_33"),
    pytest.param(NV - 1, id=f"tile_minus_one_{NV - 1}"),
    pytest.param(NV, id=f"one_tile_{NV}"),
    pytest.param(NV + 1, id=f"tile_plus_one_{NV + 1}"),
    pytest.param(7 * NV + 5, id=f"many_tiles_{7 * NV + 5}"),
]
LARGE_SIZES = [pytest.param(2**20 + 17, id="over_2^20")]
ALL_SIZES = SMALL_SIZES + LARGE_SIZES

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_DTYPES = [np.float32, np.float64]
DTYPES = [np.bool_] + INT_DTYPES + FLOAT_DTYPES
DTYPE_IDS = [np.dtype(d).name for d in DTYPES]

# (dtype, op) pairs that the axis tests of scan and reduce run: every op, narrow and wide, signed
# and unsigned, widening and not.
AXIS_CASES = [(np.int32, "add"), (np.uint8, "add"), (np.int64, "mul"), (np.float64, "add"),
              (np.float32, "max"), (np.int16, "min"), (np.uint32, "xor"), (np.bool_, "and")]
AXIS_CASE_IDS = [f"{np.dtype(d).name}-{o}" for d, o in AXIS_CASES]


# Memory layouts (make_layout) that the tests of two-operand functions cross for a and flags.
LAYOUT_KINDS = ["contiguous", "stride_3", "reversed", "byteswapped", "unaligned"]

# (a's shape, flags' shape) pairs that must be a ValueError: flags have exactly a's shape, with
# no broadcasting.
SHAPE_MISMATCHES = [
    pytest.param((8,), (7,), id="short"),
    pytest.param((8,), (9,), id="long"),
    pytest.param((2, 4), (8,), id="flat_flags_for_2d"),
    pytest.param((8,), (2, 4), id="2d_flags_for_flat"),
    pytest.param((2, 4), (4, 2), id="transposed"),
    pytest.param((8,), (), id="0d_flags"),
    pytest.param((8,), (1,), id="broadcastable_1"),
    pytest.param((2, 4), (1, 4), id="broadcastable_row"),
]


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: large sizes (run by default and in CI)")


def pytest_report_header(config):
    try:
        info = gpuscan.device_info()
    except Exception as exc:  # reported, then the tests show the failure
        info = f"device_info() raised {exc!r}"
    return [f"gpuscan from {os.path.dirname(os.path.abspath(gpuscan.__file__))}",
            f"gpuscan backend: {_backend_or_error()}, tile NV = {NV}, device: {info}"]


def _backend_or_error():
    try:
        return gpuscan.backend()
    except RuntimeError as exc:
        return f"unusable ({exc})"


def pytest_collection_modifyitems(config, items):
    active = _backend_or_error()
    if active == "cuda":
        return
    skip = pytest.mark.skip(reason=f"needs the CUDA backend; the active backend is {active}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def backend():
    """The active backend's name, "cuda" or "cpu"."""
    return gpuscan.backend()


@pytest.fixture
def rng(request):
    """A generator seeded from the test's id: fixed across runs, different across tests."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % 2**32
    return np.random.default_rng(seed)


def random_array(rng, dtype, shape, op="add"):
    """Random data for scanning `dtype` under `op`, never all zeros.

    Integers span the dtype's full range (so add wraps); for mul they are odd (so the running
    product wraps modulo 2^k without ever becoming 0); for and/or their bits are sparse.  Bool is
    mostly True for and/mul (long runs), else fair coins.  Floats are mixed-sign uniform for
    add/min/max and sign-mixed factors near 1 (times small powers of two) for mul, so products
    of up to 2^20 terms stay far from overflow and underflow.
    """
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "b":
        p_true = 0.999 if op in ("and", "mul", "min") else 0.5
        a = rng.random(n) < p_true
        if n:
            a[0] = True
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        if op == "mul":
            a |= dtype.type(1)
        elif op in ("and", "or"):
            # Sparse bits (each set with probability 2^-8), inverted for and: every bit lives
            # for a few hundred elements instead of dying (and) or saturating (or) at once.
            for _ in range(7):
                a &= rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
            if op == "and":
                a = ~a
        if n and not a.any():
            a[0] = 1
    else:
        if op == "mul":
            # Factors m * 2^k with m in [1, 2) followed by (the rounding of) 1/m, and k the steps
            # of a random walk over [-lim, lim]: every product stays within 2^(lim+1) of 1.
            lim = 6 if dtype.itemsize == 2 else 20
            m = rng.uniform(1.0, 2.0, n)
            m[1::2] = 1.0 / m[0::2][: n // 2].astype(dtype).astype(np.float64)
            walk = rng.integers(-lim, lim, size=n, endpoint=True)
            k = np.diff(walk, prepend=0)
            sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
            a = (sign * np.ldexp(m, k)).astype(dtype)
        else:
            a = rng.uniform(-1.0, 1.0, n).astype(dtype)
    return np.asarray(a, dtype=dtype).reshape(shape)


def make_layout(layout, base):
    """A view or copy of `base` (1-D) in the given memory layout, equal in value."""
    if layout == "stride_3":
        big = np.empty(3 * base.size, base.dtype)
        big[::3] = base
        return big[::3]
    if layout == "reversed":
        return base[::-1].copy()[::-1]
    if layout == "byteswapped":
        return base.astype(base.dtype.newbyteorder())
    if layout == "byteswapped_strided":
        big = np.empty(2 * base.size, base.dtype.newbyteorder())
        big[::2] = base
        return big[::2]
    if layout == "unaligned":
        raw = np.zeros(base.nbytes + 1, np.uint8)
        raw[1:] = np.ascontiguousarray(base).view(np.uint8)
        return raw[1:].view(base.dtype)  # starts one byte past an aligned address
    if layout == "fortran_column":
        m = np.asfortranarray(np.stack([base, base]).T)
        return m[:, 1]
    raise ValueError(layout)


def run_python(code, env=None, timeout=120):
    """Run `code` in a fresh interpreter that imports the gpuscan under test and the tests'
    helpers (reference.py), from outside the source tree; returns CompletedProcess."""
    full_env = dict(os.environ)
    full_env.pop("GPUSCAN_BACKEND", None)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_PARENT, HERE] + [p for p in [full_env.get("PYTHONPATH")] if p])
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], cwd=tempfile.gettempdir(), env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def run_in_threads(work, threads=6, timeout=300):
    """Call work(seed) in `threads` Python threads at once (seeds 0, 1, ...); assert that every
    call returned in time and raise the first exception one of them raised."""
    errors = []

    def worker(seed):
        try:
            work(seed)
        except Exception as exc:  # reported by the calling thread
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(s,)) for s in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in pool), f"{work.__name__} hung"
    if errors:
        raise errors[0]


def outputs_on_thread_counts(code, counts=("1", "2", "3")):
    """The stdout of `code` run on the CPU backend with each GPUSCAN_NUM_THREADS in counts (each
    run must succeed): a result printed by `code` must not depend on the thread count."""
    outs = []
    for threads in counts:
        p = run_python(code, env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_NUM_THREADS": threads})
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout)
    return outs
