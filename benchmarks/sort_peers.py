"""benchmarks/sort_peers.py - CuPy's and PyTorch's sorts on device data, the peers of issue 45's
sort goals, in the line format of benchmarks/cub_driver.cu (bench_cub.parse_driver reads it):

    case=cupy_argsort_f32 log2n=24 ms=0.879 min_ms=0.870 reps=15

    python3 benchmarks/sort_peers.py [log2n ...]   (default 16 20 24 28)

Keys as the CUB driver's sort cases draw them: integers of the whole range, floats uniform in
[-1, 1).  Cases: cupy_sort / cupy_argsort / torch_sort (stable=True, values and indices) of
u32, i32, f32, i64, f64 (PyTorch: no uint32 sort on CUDA in older versions, skipped if it
fails), and the three row shapes of float32 along the last axis (cupy_rows_RxL, torch_rows_RxL).
Each time is the median of event-bracketed calls after three warm-up calls.
"""
import statistics
import sys

import numpy as np

try:
    import cupy as cp
except ImportError:  # pragma: no cover - the GPU machine has it
    cp = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def ev_ms(f, reps=15):
    for _ in range(3):
        f()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        f()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(ts), min(ts), reps


def line(name, lg, f):
    try:
        ms, mn, reps = ev_ms(f)
    except Exception as e:  # a peer that cannot do the case says so
        print(f"skip case={name} log2n={lg} {type(e).__name__}: {e}".splitlines()[0], flush=True)
        return
    print(f"case={name} log2n={lg} ms={ms:.6f} min_ms={mn:.6f} reps={reps}", flush=True)


def keys(rng, dt, n):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return cp.asarray((rng.random(n) * 2 - 1).astype(dt))
    return cp.asarray(rng.integers(0, 2**63, n, dtype=np.uint64).astype(dt))


def main():
    logs = [int(a) for a in sys.argv[1:]] or [16, 20, 24, 28]
    rng = np.random.default_rng(45)
    for lg in logs:
        for dt in (np.uint32, np.int32, np.float32, np.int64, np.float64):
            x = keys(rng, dt, 1 << lg)
            nm = {"uint32": "u32", "int32": "i32", "float32": "f32", "int64": "i64",
                  "float64": "f64"}[np.dtype(dt).name]
            line(f"cupy_sort_{nm}", lg, lambda: cp.sort(x))
            line(f"cupy_argsort_{nm}", lg, lambda: cp.argsort(x))
            if torch is not None:
                t = torch.as_tensor(x, device="cuda")
                line(f"torch_sort_{nm}", lg, lambda: torch.sort(t, stable=True))
                del t
            del x
            cp.get_default_memory_pool().free_all_blocks()
            if torch is not None:
                torch.cuda.empty_cache()
    for rows, length in ((1 << 14, 1 << 14), (1 << 20, 16), (1 << 16, 1 << 10)):
        lg = (rows * length).bit_length() - 1
        x = keys(rng, np.float32, rows * length).reshape(rows, length)
        line(f"cupy_rows_f32_{rows}x{length}", lg, lambda: cp.sort(x, axis=-1))
        if torch is not None:
            t = torch.as_tensor(x, device="cuda")
            line(f"torch_rows_f32_{rows}x{length}", lg,
                 lambda: torch.sort(t, dim=-1, stable=True))
            del t
        del x
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
