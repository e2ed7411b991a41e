"""benchmarks/bench_cub.py - gpuscan against CUB, both timed in one job.

    python benchmarks/bench_cub.py [--quick] [--out DIR] [--min-log2 16] [--max-log2 28]
                                   [--step 4] [--cub-driver PATH] [--nvcc PATH]

Device-resident data, n = 2^16, 2^20, 2^24, 2^28 (by default; --min-log2, --max-log2 and
--step choose others).  First benchmarks/cub_driver.cu is built with the toolkit's nvcc for this
GPU's compute capability (or --cub-driver names a built one) and run with harness.py's timing
policy: it checks each CUB call once against the host at the smallest size, then times
cudaMemcpyAsync and CUB's InclusiveSum (int32, float32), InclusiveSumByKey (int32, segments of
1000), Reduce::Sum (float32, int32), HistogramEven (float32 in [0, 1), 256 and 4096 bins) and
Partition::Flagged (int32 values, uint8 flags, half set; a second time with its count copied to
the host and waited for, impl "cub+sync"), RadixSort SortKeys (uint32, int32, float32, int64,
float64: integers of the whole range, floats uniform in [-1, 1), so every digit position takes
a pass) and SortPairs (uint32 and float32 keys with an int64 payload 0 .. n-1: an argsort), and
once, at three fixed shapes, the segmented sorts of float32 rows (DeviceSegmentedSort and
DeviceSegmentedRadixSort; impls "cub" and "cub-radix").  Then gpuscan's calls for the same work
are timed by the harness: scan(x, out=o) (int32 with dtype=int32, as CUB's i32 -> i32;
float32), segmented_scan(x, heads, dtype=int32, out=o) with uint8 heads every 1000 values,
reduce(x), histogram(x, bins, range=(0, 1)), split(x, flags), sort(x) and argsort(x) (beside
CuPy's sort and argsort) and sort(x.reshape(rows, length), axis=-1) (beside
torch.sort(dim=-1, stable=True) where PyTorch is there).  gpuscan's calls are the ones
the other benchmarks time (reduce, histogram and split allocate their results; split reads its
count back to the host, CUB's partition leaves it on the device: "cub+sync" is CUB's partition
doing the same, as information beside the goal).

Rows: gpuscan's (timed here, checked on the host as bench_scan/segreduce/hist/split check
theirs, by gpuscan/_slow.py's twins) and CUB's (impl
"cub", kind "external": the driver's median, reps and buffer sets) under one case name, with the
case's byte count for both (CUB's by-key scan also reads 4-byte keys where gpuscan reads 1-byte
heads; its partition writes the unflagged values reversed, gpuscan keeps them in order).
"vs cub" = CUB's ms / gpuscan's ms (> 1: gpuscan faster); %memcpy against this process's
memcpy, the driver's own memcpy in a note beside it.  The summary has one goal per (primitive,
n): vs cub >= 1.00x.  Timing rules, the other columns and the result file: harness.py (the
file's tag is "cub").

Exit status: 0, or 1 if a gpuscan call failed or gave a wrong result (missed goals are in the
summary, not the status), 2 if CuPy, the CUDA backend, nvcc or the driver fail.

Sort goals (issue 45): sort of uint32, int32, float32, int64, float64 at least as fast as CUB's
SortKeys at 2^20, 2^24, 2^28; argsort at least as fast as SortPairs and twice CuPy's argsort;
each row shape at least as fast as the fastest of CUB's two segmented sorts and PyTorch's.  A
sort's byte count is its keys read and written once (argsort: keys read, int64 written).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(HERE))   # gpuscan from the checkout when it is not installed

import harness  # noqa: E402
from harness import fmt_n  # noqa: E402
import bench_hist  # noqa: E402
import bench_scan  # noqa: E402
import bench_segreduce  # noqa: E402
import bench_split  # noqa: E402

from gpuscan import _slow  # noqa: E402

TITLE = "gpuscan vs CUB (one job: cub_driver.cu beside the harness)"
DRIVER_SRC = os.path.join(HERE, "cub_driver.cu")
SEG_LEN = 1000            # segment length of both segmented scans (the driver's kSegLen)

SCAN_I32, SCAN_F32 = bench_scan.ADD_I32, bench_scan.ADD_F32
SEG = f"segscan add i32 heads/{SEG_LEN}"  # a u8 head every SEG_LEN values
RED_F32, RED_I32 = bench_segreduce.RED_F32, bench_segreduce.RED_I32
HIST256, HIST4096 = bench_hist.f32_case(256), bench_hist.f32_case(4096)
SPLIT = bench_split.case_name("split", np.int32)

# The sorts: key dtypes of sort (CUB's SortKeys) and argsort (SortPairs with an int64 payload).
SORT_KEYS = (np.uint32, np.int32, np.float32, np.int64, np.float64)
ARGSORT_KEYS = (np.uint32, np.float32)
# The row shapes (rows, length) of float32 keys sorted along the rows (axis -1).
ROW_SHAPES = ((2**14, 2**14), (2**20, 16), (2**16, 2**10))
SORT_GOAL_SIZES = (2**20, 2**24, 2**28)
ARGSORT_OVER_CUPY = 2.0


def sort_case(dt):
    return f"sort {harness.abbr(dt)}"


def argsort_case(dt):
    return f"argsort {harness.abbr(dt)}"


def rows_case(rows, length):
    return f"sort rows f32 {rows}x{length}"


def driver_key(dt):
    """The driver's suffix of a key dtype (cub_driver.cu's key_name)."""
    return {"uint32": "u32", "int32": "i32", "float32": "f32", "int64": "i64",
            "float64": "f64"}[np.dtype(dt).name]

# The driver's case names (cub_driver.cu) -> (this benchmark's case, CUB's call).
CUB_CASES = {
    "scan_i32": (SCAN_I32, "cub::DeviceScan::InclusiveSum(i32)"),
    "scan_f32": (SCAN_F32, "cub::DeviceScan::InclusiveSum(f32)"),
    "segscan_i32": (SEG, f"cub::DeviceScan::InclusiveSumByKey(i32 keys, segments of {SEG_LEN})"),
    "reduce_f32": (RED_F32, "cub::DeviceReduce::Sum(f32)"),
    "reduce_i32": (RED_I32, "cub::DeviceReduce::Sum(i32)"),
    "hist256_f32": (HIST256, "cub::DeviceHistogram::HistogramEven(f32, 257 levels, 0, 1)"),
    "hist4096_f32": (HIST4096, "cub::DeviceHistogram::HistogramEven(f32, 4097 levels, 0, 1)"),
    "split_i32": (SPLIT, "cub::DevicePartition::Flagged(i32, u8 flags)"),
    "split_i32_host": (SPLIT, "cub::DevicePartition::Flagged(i32, u8 flags), count to host, sync"),
}
CUB_CASES.update({f"sortkeys_{driver_key(dt)}": (
    sort_case(dt), f"cub::DeviceRadixSort::SortKeys({driver_key(dt)})") for dt in SORT_KEYS})
CUB_CASES.update({f"sortpairs_{driver_key(dt)}": (
    argsort_case(dt), f"cub::DeviceRadixSort::SortPairs({driver_key(dt)}, i64 iota)")
    for dt in ARGSORT_KEYS})
# The row cases, printed once each (at log2 of their keys): driver case -> (case, CUB's call).
CUB_ROW_CASES = {}
for _r, _l in ROW_SHAPES:
    CUB_ROW_CASES[f"segsort_f32_{_r}x{_l}"] = (
        rows_case(_r, _l), f"cub::DeviceSegmentedSort::SortKeys(f32, {_r} rows of {_l})")
    CUB_ROW_CASES[f"segradix_f32_{_r}x{_l}"] = (
        rows_case(_r, _l), f"cub::DeviceSegmentedRadixSort::SortKeys(f32, {_r} rows of {_l})")
# The impl name of a driver case's rows: "cub", but for the partition whose count is read back
# and the segmented radix sort (the segmented merge sort is "cub").
CUB_IMPL = {"split_i32_host": "cub+sync"}
CUB_IMPL.update({c: "cub-radix" for c in CUB_ROW_CASES if c.startswith("segradix")})
MEMCPY = "memcpy"
DRIVER_CASES = (MEMCPY,) + tuple(CUB_CASES)
# The goal: at least as fast as CUB at every size.  The segmented scan is compared too (CUB's
# by-key scan), as information.
GOAL_CASES = (RED_F32, RED_I32, HIST256, HIST4096, SPLIT, SCAN_I32, SCAN_F32)
# A segmented scan at most 1.15x the plain scan's time (at the large sizes).
SEG_OVER_PLAIN, SEG_RATIO_FROM = 1.15, 2**24

# harness.py's timing policy, handed to the driver so both sides are timed alike.
DRIVER_POLICY = {
    "target-ms": harness.TARGET_MS, "min-reps": harness.MIN_REPS, "max-reps": harness.MAX_REPS,
    "samples": harness.SAMPLES, "slow-ms": harness.SLOW_MS, "slow-reps": harness.SLOW_REPS,
    "very-slow-ms": harness.VERY_SLOW_MS, "rotate-l2": harness.ROTATE_L2,
    "max-sets": harness.MAX_SETS,
}
# Seconds the driver may take: ~20 s on an H100/H200 for the four sizes; a hang must not hold
# the job.
DRIVER_TIMEOUT_S = 900


# ================================================================================================
# The driver's output (pure: no GPU)
# ================================================================================================
class DriverError(RuntimeError):
    """The driver's output is not a complete, checked set of CUB times."""


@dataclass
class DriverRun:
    device: dict                                  # sms, l2_bytes, cc, cub, runtime, driver, name
    times: dict = field(default_factory=dict)     # (driver case, log2 n) -> Row fields
    checked: set = field(default_factory=set)     # cases that matched the host once


def _fields(tokens, line):
    out = {}
    for t in tokens:
        key, eq, value = t.partition("=")
        if not eq or not key or key in out:
            raise DriverError(f"cub_driver: cannot read {line!r}")
        out[key] = value
    return out


def parse_driver(text, logs, rows=True):
    """DriverRun from cub_driver's stdout; DriverError unless every case has a time at every
    log2 n in logs and a passed check at the smallest, and (rows) every row case a time and a
    passed check at its own log2 n."""
    run = None
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("FAIL"):
            raise DriverError(f"cub_driver: CUB gave a wrong result: {line}")
        head, _, rest = line.partition(" ")
        try:
            if head == "device":
                before, sep, name = rest.partition("name=")
                if not sep:
                    raise DriverError(f"cub_driver: no device name in {line!r}")
                run = DriverRun(device=dict(_fields(before.split(), line), name=name.strip()))
            elif head == "check":
                f = _fields(rest.split()[:-1], line)
                if rest.split()[-1] != "ok":
                    raise DriverError(f"cub_driver: check not ok: {line!r}")
                run.checked.add((f["case"], int(f["log2n"])))
            elif head.startswith("case="):
                f = _fields(line.split(), line)
                key = (f["case"], int(f["log2n"]))
                if key in run.times:
                    raise DriverError(f"cub_driver: {key} timed twice")
                run.times[key] = dict(ms=float(f["ms"]), min_ms=float(f["min_ms"]),
                                      spread=float(f["spread"]), reps=int(f["reps"]),
                                      sets=int(f["sets"]))
            else:
                raise DriverError(f"cub_driver: unexpected line {line!r}")
        except (KeyError, ValueError) as exc:
            raise DriverError(f"cub_driver: cannot read {line!r} ({exc!r})") from None
        except AttributeError:   # run is None: a line before the device line
            raise DriverError(f"cub_driver: {line!r} before the device line") from None
    if run is None:
        raise DriverError("cub_driver printed no device line")
    missing = [f"{c} 2^{k}" for k in logs for c in DRIVER_CASES if (c, k) not in run.times]
    missing += [f"check of {c} at 2^{min(logs)}" for c in DRIVER_CASES
                if (c, min(logs)) not in run.checked]
    if rows:
        timed = {c for c, _ in run.times}
        checked = {c for c, _ in run.checked}
        missing += [c for c in CUB_ROW_CASES if c not in timed]
        missing += [f"check of {c}" for c in CUB_ROW_CASES if c not in checked]
    if missing:
        raise DriverError("cub_driver's output lacks " + ", ".join(missing))
    return run


def cub_external(run, driver_case, log2n):
    """device_case's external= for one CUB case at 2^log2n."""
    label = (CUB_CASES.get(driver_case) or CUB_ROW_CASES[driver_case])[1]
    return [dict(impl=CUB_IMPL.get(driver_case, "cub"), label=label,
                 **run.times[(driver_case, log2n)])]


def row_log2(rows, length):
    """The log2n the driver prints for a row case: floor(log2(rows * length))."""
    return (rows * length).bit_length() - 1


# ================================================================================================
# Building and running the driver
# ================================================================================================
def find_nvcc(explicit):
    if explicit:
        return explicit
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    for path in (shutil.which("nvcc"), os.path.join(home, "bin", "nvcc")):
        if path and os.access(path, os.X_OK):
            return path
    harness.die("bench_cub: nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): it "
                "builds benchmarks/cub_driver.cu; give it with --nvcc, or a built driver with "
                "--cub-driver")


def build_driver(h):
    """nvcc -O3 -std=c++17 -arch=sm_<this GPU's cc> cub_driver.cu into a temporary folder,
    left there so a rerun can pass it as --cub-driver."""
    nvcc = find_nvcc(h.args.nvcc)
    arch = f"sm_{h.cp.cuda.Device().compute_capability}"
    out = os.path.join(tempfile.mkdtemp(prefix="gpuscan-cub-"), "cub_driver")
    cmd = [nvcc, "-O3", "-std=c++17", f"-arch={arch}", DRIVER_SRC, "-o", out]
    harness.log("building the CUB driver: " + " ".join(cmd))
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        harness.die(f"bench_cub: building the CUB driver failed (status {done.returncode}):\n"
                    f"{' '.join(cmd)}\n{(done.stdout + done.stderr)[-4000:]}")
    h.note(f"cub_driver built in {time.perf_counter() - t0:.0f} s: {' '.join(cmd)}")
    return out


def run_driver(path, logs, rows=True):
    cmd = [path] + [f"--{k}={v}" for k, v in DRIVER_POLICY.items()] + (
        [] if rows else ["--no-rows"]) + [str(k) for k in logs]
    harness.log("running the CUB driver: " + " ".join(cmd))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        harness.die(f"bench_cub: the CUB driver did not run: {exc}")
    for line in done.stdout.splitlines():
        print(f"  cub_driver: {line}", flush=True)
    if done.returncode != 0:
        harness.die(f"bench_cub: the CUB driver exited with status {done.returncode}:\n"
                    f"{done.stderr[-4000:]}")
    try:
        return parse_driver(done.stdout, logs, rows)
    except DriverError as exc:
        harness.die(f"bench_cub: {exc}")


# ================================================================================================
# Cases
# ================================================================================================
def heads_every(cp, size, dtype):
    """uint8 segment heads every SEG_LEN values, as the driver's keys change."""
    return (cp.arange(size, dtype=cp.int64) % SEG_LEN == 0).astype(dtype)


def full_range(cp, size, dtype):
    """Keys of every bit pattern (integers) or uniform in [-1, 1) (floats), as the driver's."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (cp.random.random(size, dtype=dtype) * 2 - 1).astype(dtype)
    words = cp.random.randint(0, 2**32, size, dtype=cp.int64).astype(cp.uint64)
    if dtype.itemsize == 8:
        words = (words << np.uint64(32)) | cp.random.randint(0, 2**32, size, dtype=cp.int64
                                                             ).astype(cp.uint64)
        return words.view(dtype)
    return words.astype(cp.uint32).view(dtype)


def check_sort(res, x):
    """sort: NumPy's np.sort of x, bit for bit (the inputs hold no NaN)."""
    u = f"u{x.dtype.itemsize}"
    return _slow.first_difference(np.asarray(res).view(u), np.sort(x).view(u))


def check_argsort(res, x):
    """argsort: a permutation that orders x, equal keys in input order (O(n): a stable argsort
    of 2^28 keys on the host would take minutes)."""
    res = np.asarray(res)
    if res.dtype != np.int64 or res.shape != x.shape:
        return f"result {res.dtype}{res.shape}, expected int64{x.shape}"
    if res.size and (res.min() < 0 or res.max() >= x.size):
        return "index out of range"
    seen = np.zeros(x.size, bool)
    seen[res] = True
    if not seen.all():
        return "not a permutation"
    k = x[res]
    if np.any(k[1:] < k[:-1]):
        return f"not sorted at {np.flatnonzero(k[1:] < k[:-1])[0]}"
    eq = k[1:] == k[:-1]
    if np.any(res[1:][eq] <= res[:-1][eq]):
        return "equal keys out of input order"
    return None


def check_rows(rows, length):
    def run(res, x):
        u = "u4"
        want = np.sort(x.reshape(rows, length), axis=-1)
        return _slow.first_difference(np.asarray(res).reshape(rows, length).view(u), want.view(u))
    return run


def sort_suite(h, run, sizes, row_shapes):
    """The sorts' cases and goals (see the module docstring)."""
    import gpuscan
    cp, torch = h.cp, h.torch

    def case(name, n, log2n, driver_cases, **kw):
        h.device_case(name, n, external=[e for d in driver_cases
                                         for e in cub_external(run, d, log2n)], **kw)

    for n in sizes:
        k = n.bit_length() - 1
        for dt in SORT_KEYS:
            size = np.dtype(dt).itemsize
            case(sort_case(dt), n, k, [f"sortkeys_{driver_key(dt)}"],
                 inputs=[(dt, full_range)], outputs=[],
                 impls=[("gpuscan", "gpuscan.sort(x)", lambda x: gpuscan.sort(x)),
                        ("cupy", "cupy.sort(x)", lambda x: cp.sort(x))],
                 check=h.on_host(check_sort), memcpy_elem=8 if size == 8 else 4,
                 nbytes=2 * size * n)
        for dt in ARGSORT_KEYS:
            case(argsort_case(dt), n, k, [f"sortpairs_{driver_key(dt)}"],
                 inputs=[(dt, full_range)], outputs=[],
                 impls=[("gpuscan", "gpuscan.argsort(x)", lambda x: gpuscan.argsort(x)),
                        ("cupy", "cupy.argsort(x)", lambda x: cp.argsort(x))],
                 check=h.on_host(check_argsort), memcpy_elem=4,
                 nbytes=(np.dtype(dt).itemsize + 8) * n)
    for rows, length in row_shapes:
        n = rows * length
        name = rows_case(rows, length)
        impls = [("gpuscan", f"gpuscan.sort(x.reshape({rows}, {length}))",
                  lambda x, r=rows, L=length: gpuscan.sort(x.reshape(r, L)))]
        if torch is not None:
            impls.append(("torch", f"torch.sort(x.view({rows}, {length}), stable=True)",
                          lambda x, r=rows, L=length: torch.sort(x.view(r, L), dim=-1,
                                                                 stable=True)[0]))
        case(name, n, row_log2(rows, length),
             [f"segsort_f32_{rows}x{length}", f"segradix_f32_{rows}x{length}"],
             inputs=[(np.float32, full_range)], outputs=[], impls=impls,
             check=h.on_host(check_rows(rows, length)), memcpy_elem=4, nbytes=8 * n)

    # ---- The goals ----
    for n in (n for n in SORT_GOAL_SIZES if n in sizes):
        for dt in SORT_KEYS:
            h.goal_vs_at(sort_case(dt), "cub", n)
        for dt in ARGSORT_KEYS:
            h.goal_vs_at(argsort_case(dt), "cub", n)
            h.goal_vs_at(argsort_case(dt), "cupy", n, target=ARGSORT_OVER_CUPY)
    for rows, length in row_shapes:
        name, n = rows_case(rows, length), rows * length
        mine = h.row(name, "gpuscan", n)
        others = [r for r in (h.row(name, lib, n) for lib in ("cub", "cub-radix", "torch"))
                  if r is not None and r.ms]
        figure = f"{name} vs the fastest of CUB's segmented sorts and torch"
        if mine is None or not mine.ms or not others:
            h.goal(figure, n, "-", ">= 1.00x", "n/a")
            continue
        best = min(others, key=lambda r: r.ms)
        ratio = best.ms / mine.ms
        h.goal(f"{figure} ({best.impl})", n, f"{ratio:.2f}x", ">= 1.00x",
               "ok" if ratio >= 1.0 else "MISS")


def suite(h):
    import gpuscan
    sizes = h.sizes()
    logs = [n.bit_length() - 1 for n in sizes]   # harness sizes are powers of two
    # The row cases (2^24 to 2^28 keys) run with the full sizes, not a quick run.
    row_shapes = () if h.args.no_sort_rows or h.args.max_log2 < 28 else ROW_SHAPES
    path = h.args.cub_driver or build_driver(h)
    run = run_driver(path, logs, rows=bool(row_shapes))
    dev = run.device
    h.note(f"cub_driver {path}: {dev['name']}, {dev['sms']} SMs, cc {dev['cc']}, L2 "
           f"{int(dev['l2_bytes']) / 2**20:.0f} MiB, CUB {dev['cub']}, CUDA runtime "
           f"{dev['runtime']}, driver {dev['driver']}; every CUB call checked against the host "
           f"at {fmt_n(sizes[0])}")
    if dev["name"] != h.info.get("name"):
        h.fail(f"cub_driver ran on {dev['name']!r}, gpuscan on {h.info.get('name')!r}")

    scan_i32, scan_f32 = (bench_scan.CASE[c] for c in (SCAN_I32, SCAN_F32))
    by_case = {}
    for driver_case, (case_name, _) in CUB_CASES.items():
        by_case.setdefault(case_name, []).append(driver_case)

    def case(name, n, **kw):
        h.device_case(name, n, external=[e for d in by_case[name]
                                         for e in cub_external(run, d, n.bit_length() - 1)],
                      **kw)

    for n, k in zip(h.each_size(4), logs):
        mine = h.memcpy(n, 4)   # the row each_size timed
        here = "failed" if mine.ms is None else f"{mine.ms:.4f} ms"
        h.note(f"memcpy d2d 4B n={fmt_n(n)}: cub_driver {run.times[(MEMCPY, k)]['ms']:.4f} ms, "
               f"harness {here} (the two timers should agree)")
        case(SCAN_I32, n, inputs=[(np.int32, "int")], outputs=[np.int32],
             impls=[("gpuscan", "gpuscan.scan(x, dtype=i32, out=o)",
                     lambda x, o: gpuscan.scan(x, dtype=np.int32, out=o))],
             check=h.on_host(bench_scan.host_check(scan_i32)))
        case(SCAN_F32, n, inputs=[(np.float32, "uniform")], outputs=[np.float32],
             impls=[("gpuscan", "gpuscan.scan(x, out=o)",
                     lambda x, o: gpuscan.scan(x, out=o))],
             check=h.on_host(bench_scan.host_check(scan_f32)))
        case(SEG, n, inputs=[(np.int32, "int"), (np.uint8, heads_every)], outputs=[np.int32],
             impls=[("gpuscan", "gpuscan.segmented_scan(x, f, dtype=i32, out=o)",
                     lambda x, f, o: gpuscan.segmented_scan(x, f, dtype=np.int32, out=o))],
             check=h.on_host(bench_segreduce.check_seg))
        for name, dt, kind in ((RED_F32, np.float32, "uniform"), (RED_I32, np.int32, "int")):
            case(name, n, inputs=[(dt, kind)], outputs=[],
                 impls=[("gpuscan", f"gpuscan.reduce(x, dtype={harness.abbr(dt)})",
                         lambda x, dt=dt: gpuscan.reduce(x, dtype=dt))],
                 check=h.on_host(bench_segreduce.check_sum()), memcpy_elem=4, nbytes=4 * n)
        for name, bins in ((HIST256, 256), (HIST4096, 4096)):
            case(name, n, inputs=[(np.float32, "uniform")], outputs=[],
                 impls=[("gpuscan", f"gpuscan.histogram(x, {bins}, (0, 1))",
                         lambda x, b=bins: gpuscan.histogram(x, bins=b, range=(0, 1))[0])],
                 check=h.on_host(bench_hist.check_hist(bins, 0.0, 1.0)), memcpy_elem=4,
                 nbytes=4 * n)
        case(SPLIT, n, inputs=[(np.int32, "int"), (np.uint8, bench_split.half_flags)],
             outputs=[], impls=[("gpuscan", "gpuscan.split(x, f)",
                                 lambda x, f: gpuscan.split(x, f))],
             check=h.on_host(bench_split.check(False)), memcpy_elem=4, nbytes=9 * n)

    if not h.args.no_sort and hasattr(gpuscan, "sort"):
        sort_suite(h, run, sizes, row_shapes)
    elif not h.args.no_sort:
        h.note("gpuscan.sort is not in this build: the sort cases are left out")

    # ---- The goals ----
    for name in GOAL_CASES:
        for n in sizes:
            h.goal_vs_at(name, "cub", n)
    for n in sizes:
        h.goal_vs_at(SEG, "cub", n, info=True)
    for n in sizes:   # CUB's partition with its count on the host, as gpuscan.split returns it
        h.goal_vs_at(SPLIT, "cub+sync", n, info=True)
    for n in (n for n in sizes if n >= SEG_RATIO_FROM):
        for impl in ("gpuscan", "cub"):
            seg, plain = h.row(SEG, impl, n), h.row(SCAN_I32, impl, n)
            figure = f"{SEG} / {SCAN_I32} time ({impl})"
            if seg is None or plain is None or not seg.ms or not plain.ms:
                h.goal(figure, n, "-", "", "n/a")
            elif impl == "cub":
                h.goal(figure, n, f"{seg.ms / plain.ms:.2f}", "", "info")
            else:
                ratio = seg.ms / plain.ms
                h.goal(figure, n, f"{ratio:.2f}", f"<= {SEG_OVER_PLAIN:.2f}",
                       "ok" if ratio <= SEG_OVER_PLAIN else "MISS")


def make_parser():
    p = harness.make_parser(TITLE)
    # 2^16 to 2^28 in steps of 2^4; PyTorch only in the sort rows cases (a goal's baseline).
    p.set_defaults(min_log2=16, step=4)
    p.add_argument("--no-sort", action="store_true", help="leave the sort cases out")
    p.add_argument("--no-sort-rows", action="store_true",
                   help="leave the fixed-shape sort rows cases out (CUB's and gpuscan's)")
    p.add_argument("--cub-driver", metavar="PATH", default=None,
                   help="a built benchmarks/cub_driver.cu (default: build it with nvcc)")
    p.add_argument("--nvcc", metavar="PATH", default=None,
                   help="the nvcc that builds the driver (default: PATH, $CUDA_HOME/bin, "
                        "/usr/local/cuda/bin)")
    return p


if __name__ == "__main__":
    sys.exit(harness.run_main(TITLE, suite, default_tag="cub", parser=make_parser()))
