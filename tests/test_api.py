"""The package's plumbing: backend choice, device_info, forcing a backend, the error type, the
private helpers the tests rely on, and device arrays (GPU-only, marked `gpu`)."""
import json

import numpy as np
import pytest

import gpuscan
from conftest import DTYPES, NV, random_array, run_python
from reference import BITWISE_OPS, OPS, check_scan
from gpuscan import _gpuscan

CUDA_INFO_KEYS = ("compute_capability", "multiprocessors", "memory_bytes", "driver_version",
                  "runtime_version")


# ------------------------------------------------------------------------------------------
# backend() and device_info()
# ------------------------------------------------------------------------------------------
def test_public_names():
    for name in ("scan", "segmented_scan", "reduce", "reduceat", "segmented_reduce",
                 "linear_recurrence", "backend", "device_info", "to_device", "DeviceArray",
                 "GpuscanError"):
        assert hasattr(gpuscan, name), name
    assert callable(gpuscan.scan)


def test_backend(backend):
    assert backend in ("cuda", "cpu")
    assert gpuscan.backend() == backend  # decided once, stable
    if backend == "cuda":
        assert _gpuscan._config()["built_with_cuda"]


def test_built_with_cuda_is_bool():
    assert isinstance(_gpuscan._config()["built_with_cuda"], bool)


def test_device_info(backend):
    info = gpuscan.device_info()
    assert isinstance(info, dict)
    assert info["backend"] == backend
    assert isinstance(info["name"], str) and info["name"]
    if backend == "cuda":
        for key in CUDA_INFO_KEYS:
            assert key in info, key
        assert isinstance(info["multiprocessors"], int) and info["multiprocessors"] > 0
        assert isinstance(info["memory_bytes"], int) and info["memory_bytes"] > 2**30
        assert info["compute_capability"]
        assert info["driver_version"] and info["runtime_version"]
    else:
        assert isinstance(info["threads"], int) and info["threads"] >= 1
    # A fresh dict each time: mutating one does not change the next.
    info["name"] = "changed"
    assert gpuscan.device_info()["name"] != "changed"


def test_gpuscan_error_is_runtime_error():
    assert issubclass(gpuscan.GpuscanError, RuntimeError)
    with pytest.raises(RuntimeError):
        raise gpuscan.GpuscanError("cudaMalloc failed: out of memory")


# ------------------------------------------------------------------------------------------
# Forcing a backend with GPUSCAN_BACKEND (each in a fresh interpreter: the choice is made once
# per process).
# ------------------------------------------------------------------------------------------
FORCED_CPU = r"""
import json, numpy as np, gpuscan
a = np.arange(1, 5000, dtype=np.int32)
ok = bool(np.array_equal(gpuscan.scan(a), np.cumsum(a)))
print(json.dumps({"backend": gpuscan.backend(), "info": gpuscan.device_info(), "ok": ok}))
"""


def test_force_cpu_backend():
    proc = run_python(FORCED_CPU, env={"GPUSCAN_BACKEND": "cpu"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["backend"] == "cpu"
    assert report["info"]["backend"] == "cpu"
    assert isinstance(report["info"]["threads"], int) and report["info"]["threads"] >= 1
    assert report["ok"]


def test_num_threads_setting():
    proc = run_python(FORCED_CPU, env={"GPUSCAN_BACKEND": "cpu", "GPUSCAN_NUM_THREADS": "3"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["info"]["threads"] == 3
    assert report["ok"]


def _gpu_present():
    proc = run_python("import gpuscan; print(gpuscan.backend())")
    return proc.returncode == 0 and proc.stdout.strip().endswith("cuda")


FORCED_CUDA = r"""
import numpy as np
import gpuscan  # importing must work without a GPU
results = []
for call in (gpuscan.backend, lambda: gpuscan.scan(np.arange(5))):
    try:
        call()
        results.append("no error")
    except RuntimeError as exc:
        results.append("RuntimeError: " + str(exc))
    except BaseException as exc:
        results.append(type(exc).__name__ + ": " + str(exc))
print("\n".join(results))
"""


def test_force_cuda_without_gpu():
    if _gpu_present():
        pytest.skip("a CUDA device is usable here: forcing cuda cannot fail")
    proc = run_python(FORCED_CUDA, env={"GPUSCAN_BACKEND": "cuda"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2, proc.stdout
    for line in lines:
        assert line.startswith("RuntimeError: "), line
        assert len(line) > len("RuntimeError: ") + 10, "the error should name the cause"


def test_bad_backend_name_does_not_break_import():
    proc = run_python("import gpuscan; print('imported')", env={"GPUSCAN_BACKEND": "tpu"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "imported" in proc.stdout


# ------------------------------------------------------------------------------------------
# The private helpers the tests and benchmarks rely on.
# ------------------------------------------------------------------------------------------
def test_scan_tile_items():
    nv = _gpuscan._config()["scan_tile_items"]
    assert isinstance(nv, int)
    assert nv == NV
    assert nv >= 64 and nv % 32 == 0  # whole warps of values


def test_scan_scratch_bytes():
    scratch = _gpuscan._scan_scratch_bytes
    assert scratch(0) == 0
    assert scratch(1) > 0
    # A function of the tile count: equal within a tile count, growing with it.
    assert scratch(1) == scratch(NV)
    assert scratch(NV + 1) == scratch(2 * NV)
    assert scratch(2 * NV + 1) > scratch(2 * NV)
    sizes = [1, NV + 1, 7 * NV + 5, 2**20 + 17, 2**28, 2**31 + 1, 2**34]
    values = [scratch(n) for n in sizes]
    assert all(isinstance(v, int) for v in values)
    assert values == sorted(values) and len(set(values)) == len(values)
    # 64-bit sizes: no wrap-around past 2^31 or 2^32 elements; at least a word per tile.
    assert scratch(2**34) >= 4 * (2**34 // NV)
    assert scratch(2**34) < 2**34  # far less than the data itself


def test_scan_scratch_bytes_bad_argument():
    with pytest.raises((ValueError, OverflowError)):
        _gpuscan._scan_scratch_bytes(-1)
    with pytest.raises(TypeError):
        _gpuscan._scan_scratch_bytes("10")


# ------------------------------------------------------------------------------------------
# Device arrays (CUDA backend only).
# ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.float64, np.bool_])
def test_to_device_round_trip(dtype):
    a = (np.arange(3 * NV + 7) % 251).astype(dtype)
    d = gpuscan.to_device(a)
    assert isinstance(d, gpuscan.DeviceArray)
    assert d.shape == a.shape and d.dtype == a.dtype and d.size == a.size
    back = d.get()
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, a)
    cai = d.__cuda_array_interface__
    assert tuple(cai["shape"]) == a.shape
    assert np.dtype(cai["typestr"]) == a.dtype
    assert cai["data"][0] != 0
    assert hasattr(d, "__dlpack__") and hasattr(d, "__dlpack_device__")


@pytest.mark.gpu
def test_small_results_to_the_host():
    # Up to 64 bytes come back through a reply (a one-warp kernel into page-locked memory), past
    # that through the pipeline: every size around the limit, odd sizes and 0-d arrays, CuPy
    # views at odd byte offsets, and the small answers gpuscan itself reads back (bincount's
    # largest key, histogram's range).
    for dtype in (np.int8, np.uint16, np.int32, np.float64):
        size = np.dtype(dtype).itemsize
        for n in sorted({1, 3, 64 // size - 1, 64 // size, 64 // size + 1, 100}):
            a = (np.arange(n) * 7 + 3).astype(dtype)
            np.testing.assert_array_equal(gpuscan.to_device(a).get(), a)
        z = np.array(5, dtype)
        np.testing.assert_array_equal(gpuscan.to_device(z).get(), z)
    x = np.arange(1000, dtype=np.int32)
    r = gpuscan.reduce(gpuscan.to_device(x)).get()
    assert r.shape == () and int(r) == int(x.sum())
    cp = pytest.importorskip("cupy")
    raw = cp.arange(40, dtype=cp.uint8)
    for off in (1, 3, 5):
        np.testing.assert_array_equal(gpuscan.bincount(raw[off:off + 9]).get(),
                                      np.bincount(np.arange(off, off + 9)))
    v = cp.asarray(np.array([3.5, -2.0, 7.25, 0.0], np.float32))[1:]
    counts, edges = gpuscan.histogram(v, 4)
    want_c, want_e = np.histogram(cp.asnumpy(v), 4)
    np.testing.assert_array_equal(counts.get(), want_c)
    np.testing.assert_array_equal(edges, want_e)


@pytest.mark.gpu
def test_small_device_results_kept_and_reused():
    # Device blocks of a few KiB are kept when a result is dropped and handed to the next result
    # of the same size (cuda/runtime.c): a live result is never handed out, a reused block holds
    # the new call's values, and free_cached_memory gives the kept blocks back.
    rng = np.random.default_rng(7)
    hosts = [rng.integers(-50, 50, 1000 + 7 * i).astype(np.int64) for i in range(40)]
    devs = [gpuscan.to_device(h) for h in hosts]
    alive = []
    for i, (h, d) in enumerate(zip(hosts, devs)):
        r = gpuscan.reduce(d)                                # 8 bytes
        c, _ = gpuscan.histogram(d, 64, range=(-50, 50))     # 512 bytes
        if i % 3 == 0:
            alive.append((h, r, c))                          # kept alive: never reused
        del r, c                                             # the rest go back to the keep
    for h, r, c in alive:
        assert int(r.get()) == int(h.sum())
        np.testing.assert_array_equal(c.get(), np.histogram(h, 64, range=(-50, 50))[0])
    assert len({int(r.__cuda_array_interface__["data"][0]) for _, r, _ in alive}) == len(alive)
    gpuscan.free_cached_memory()
    r = gpuscan.reduce(devs[0])
    assert int(r.get()) == int(hosts[0].sum())


@pytest.mark.gpu
def test_to_device_strided_and_2d():
    a = np.arange(60, dtype=np.int64).reshape(6, 10)[:, ::-2]
    d = gpuscan.to_device(a)
    assert d.shape == a.shape
    np.testing.assert_array_equal(d.get(), a)


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["add", "mul", "max", "xor"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan_device_array(op, exclusive):
    rng = np.random.default_rng(11)
    a = rng.integers(-1000, 1000, size=7 * NV + 5, dtype=np.int32) | 1
    d = gpuscan.to_device(a)
    res = gpuscan.scan(d, op, exclusive=exclusive)
    assert isinstance(res, gpuscan.DeviceArray)
    np.testing.assert_array_equal(res.get(), gpuscan.scan(a, op, exclusive=exclusive))
    np.testing.assert_array_equal(d.get(), a)  # input untouched


@pytest.mark.gpu
def test_scan_device_array_axis_and_dtype():
    a = np.arange(3 * 700, dtype=np.int16).reshape(3, 700)
    d = gpuscan.to_device(a)
    res = gpuscan.scan(d, axis=1, dtype=np.int8)
    assert isinstance(res, gpuscan.DeviceArray)
    assert res.dtype == np.int8 and res.shape == a.shape
    np.testing.assert_array_equal(res.get(), np.cumsum(a, axis=1, dtype=np.int8))


@pytest.mark.gpu
def test_scan_device_out():
    a = np.arange(1, 2 * NV, dtype=np.int64)
    d = gpuscan.to_device(a)
    out = gpuscan.to_device(np.zeros_like(a))
    res = gpuscan.scan(d, out=out)
    assert res is out
    np.testing.assert_array_equal(out.get(), np.cumsum(a))
    assert gpuscan.scan(d, out=d) is d  # in place on the device
    np.testing.assert_array_equal(d.get(), np.cumsum(a))
    with pytest.raises(ValueError):
        gpuscan.scan(d, out=gpuscan.to_device(np.zeros(5, np.int64)))


VALID_PAIRS = [(d, o) for d in DTYPES for o in OPS
               if not (o in BITWISE_OPS and np.dtype(d).kind == "f")]


@pytest.mark.gpu
@pytest.mark.parametrize("n", [pytest.param(7 * NV + 5, id=f"many_tiles_{7 * NV + 5}"),
                               pytest.param(2**20 + 17, id="over_2^20")])
@pytest.mark.parametrize("dtype,op", VALID_PAIRS,
                         ids=[f"{np.dtype(d).name}-{o}" for d, o in VALID_PAIRS])
def test_scan_device_array_matrix(dtype, op, n):
    rng = np.random.default_rng(n)
    a = random_array(rng, dtype, (n,), op)
    d = gpuscan.to_device(a)
    for exclusive in (False, True):
        res = gpuscan.scan(d, op, exclusive=exclusive)
        assert isinstance(res, gpuscan.DeviceArray)
        check_scan(res.get(), a, op, exclusive=exclusive)
    np.testing.assert_array_equal(d.get(), a)  # input untouched


@pytest.mark.gpu
def test_scan_numpy_input_device_out():
    a = np.arange(1, 3 * NV, dtype=np.int64)
    out = gpuscan.to_device(np.zeros_like(a))
    assert gpuscan.scan(a, out=out) is out
    np.testing.assert_array_equal(out.get(), np.cumsum(a))


@pytest.mark.gpu
def test_scan_cupy_input():
    cp = pytest.importorskip("cupy")
    a = np.random.default_rng(2).random(7 * NV + 5, dtype=np.float32)
    c = cp.asarray(a)
    res = gpuscan.scan(c)
    assert isinstance(res, gpuscan.DeviceArray)
    np.testing.assert_array_equal(res.get(), gpuscan.scan(a))
    back = cp.asarray(res)  # CuPy consumes __cuda_array_interface__
    np.testing.assert_array_equal(cp.asnumpy(back), res.get())
    via_dlpack = cp.from_dlpack(res)
    np.testing.assert_array_equal(cp.asnumpy(via_dlpack), res.get())
    ints = cp.arange(1000, dtype=cp.int32)
    out = cp.zeros(1000, dtype=cp.int64)
    assert gpuscan.scan(ints, out=out) is out  # out= a CuPy array: returned, written in place
    np.testing.assert_array_equal(cp.asnumpy(out), np.cumsum(np.arange(1000)))
    # Strided and transposed device inputs (any strides, as on the host).
    m = cp.asarray(np.arange(6 * 501, dtype=np.int32).reshape(6, 501))
    for view in (m[:, ::3], m.T, m[::-1]):
        for axis in (None, 0, 1):
            got = gpuscan.scan(view, "xor", axis=axis)
            want = gpuscan.scan(cp.asnumpy(view), "xor", axis=axis)
            np.testing.assert_array_equal(got.get(), want)


@pytest.mark.gpu
def test_scan_torch_input():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    t = torch.arange(1, 3 * NV, dtype=torch.int64, device="cuda")
    res = gpuscan.scan(t, "max", exclusive=True)
    assert isinstance(res, gpuscan.DeviceArray)
    np.testing.assert_array_equal(
        res.get(), gpuscan.scan(np.arange(1, 3 * NV, dtype=np.int64), "max", exclusive=True))
    back = torch.from_dlpack(res)
    assert back.is_cuda
    np.testing.assert_array_equal(back.cpu().numpy(), res.get())
    f = torch.rand(2 * NV + 1, device="cuda", dtype=torch.float64)
    fres = gpuscan.scan(f)
    np.testing.assert_array_equal(fres.get(), gpuscan.scan(f.cpu().numpy()))


@pytest.mark.gpu
def test_device_array_results_stay_on_device():
    a = gpuscan.to_device(np.arange(10, dtype=np.int32))
    r = gpuscan.scan(gpuscan.scan(a))  # a device result feeds another call
    assert isinstance(r, gpuscan.DeviceArray)
    np.testing.assert_array_equal(r.get(), np.cumsum(np.cumsum(np.arange(10))))


@pytest.mark.gpu
@pytest.mark.slow
def test_device_memory_exhaustion_is_memory_error():
    # A 16 GiB int8 device array whose int64 scan needs 128 GiB more than any current GPU has:
    # MemoryError naming the sizes, and the package still works afterwards.
    import re
    free_needed = 2**34 * 9
    if gpuscan.device_info()["memory_bytes"] >= free_needed:
        pytest.skip("this GPU is large enough to hold the scan")
    d = gpuscan.to_device(np.zeros(2**34, dtype=np.int8))  # calloc'd: no host pages touched
    with pytest.raises(MemoryError) as info:
        gpuscan.scan(d)
    assert re.search(r"\d", str(info.value)), f"the sizes should be named: {info.value}"
    del d
    small = gpuscan.to_device(np.arange(10, dtype=np.int32))
    np.testing.assert_array_equal(gpuscan.scan(small).get(), np.cumsum(np.arange(10)))
    np.testing.assert_array_equal(gpuscan.scan(np.arange(10)), np.cumsum(np.arange(10)))
