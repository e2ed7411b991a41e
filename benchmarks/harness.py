"""benchmarks/harness.py - timing, bookkeeping and reports shared by gpuscan's benchmarks.

Level: benchmark infrastructure.  A benchmark script (bench_scan.py, and later bench_reduce.py,
bench_histogram.py, ...) only describes cases; this module times them the same way every time:

  device cases  CUDA events recorded on the legacy default stream (CuPy's null stream) around
                the region.  gpuscan computes on its own *blocking* stream and PyTorch on the
                legacy default stream, both ordered with it, so the events bracket their work.
                Warm-up first; then an estimate of one call decides the repetitions: enough for
                TARGET_MS of device time and at least MIN_REPS (SLOW_REPS for calls slower than
                SLOW_MS); they are timed as SAMPLES event-bracketed batches and the median of
                the per-call times is reported.  Inputs and outputs rotate among several buffer
                sets whose total exceeds ROTATE_L2 times the L2 cache, so repeated calls do not
                find their data in L2 (at large n one set already does).
  host cases    NumPy in, NumPy out: time.perf_counter around each call, by the package's own
                host policy (gpuscan/_timing.py, which `python -m gpuscan` uses too): a warm-up
                call of each library's, then the libraries' calls taking turns for about
                _timing.TARGET_S seconds (_timing.MIN_REPS.._timing.MAX_REPS rounds); the
                median per call.
  bytes         read + written once each (the inputs' and outputs' nbytes), GB/s = 1e9 B/s.
  external      times another program measured in the same job (CUB's, from cub_driver.cu,
                under this module's policy) join a device case as rows of kind "external"
                (device_case's external=): the harness keeps their ms and computes the rest.
  ratios        "vs cupy" = CuPy's time / gpuscan's time in the same case and n (> 1: gpuscan
                faster); likewise "vs torch", "vs cub" and, for host cases, "vs numpy".
                "%memcpy" is the row's GB/s over the same run's cudaMemcpyAsync
                device-to-device GB/s at the same n.

Extending it: a new benchmark builds a Harness from `parse_args()`, calls `memcpy()`,
`device_case()`, `host_case()`, `note()` and `goal()` for its figures, and ends with
`finish()`, which prints the summary table last and writes the result file
`<gpu-name-slug>-<YYYY-MM-DD>[-<tag>].txt` (plus a .json twin) into --out (default
benchmarks/results/).  `run_main()` wraps that pattern.

CuPy is required for device timing (events, buffers); PyTorch is optional.  The formatting
functions at the bottom need neither.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

from gpuscan import _timing

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS_DIR = os.path.join(HERE, "results")

# ---- timing policy: each constant says why its value ------------------------------------------
# 20 ms of device time per case keeps the median's noise under ~1% at every size while a full
# 2^10..2^28 sweep of ~25 cases per size still fits in about a minute.
TARGET_MS = 20.0
# At least 10 timed calls, so a single slow outlier cannot become the median.
MIN_REPS = 10
# Calls slower than 50 ms (PyTorch's cummax at 2^26+, NumPy at 2^28) get 3 timed calls: their
# run-to-run spread is far below the ratios they are compared by, and 10 would cost seconds.
SLOW_MS = 50.0
SLOW_REPS = 3
# A first call over 1 s (an untuned baseline at 2^28) gets one timed call after it, no more.
VERY_SLOW_MS = 1000.0
# Cap for launch-bound sizes (2^10: ~5 us a call): 20000 calls is ~0.2 s of host time.
MAX_REPS = 20000
# The repetitions are timed as this many event-bracketed batches; the median is over them.
SAMPLES = 30
# Buffers rotate until their total exceeds 4x the L2 cache (60 MB on an H200, 50 MB on an
# H100): a buffer is then evicted before it is used again.
ROTATE_L2 = 4
L2_FALLBACK_BYTES = 60 * 2**20
# Cap on rotated buffer sets: at 2^10-2^12 elements a call is launch-bound (microseconds of
# host work per call, nanoseconds of memory traffic), so L2 residency cannot move its time.
MAX_SETS = 2048
# The baselines a row's ratios are keyed by (the first four have columns, in this order;
# "cub+sync", CUB's partition with its count read back, appears in bench_cub's goals only).
RATIO_LIBS = ("cupy", "torch", "numpy", "cub", "cub+sync")
# The library whose rows get ratios; the others are baselines.
SUBJECT = "gpuscan"

DTYPE_ABBR = {
    "bool": "b1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64",
}


def abbr(dtype) -> str:
    """Short dtype name used in case names: int32 -> i32."""
    name = np.dtype(dtype).name
    return DTYPE_ABBR.get(name, name)


def fmt_n(n: int) -> str:
    """2^k for powers of two, else the number."""
    if n > 0 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def slug(text: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    s = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")
    return s or "unknown-gpu"


# ================================================================================================
# Rows
# ================================================================================================
@dataclass
class Row:
    """One timed (case, impl, n)."""

    case: str                       # what is computed, e.g. "scan add i32->i32"
    impl: str                       # library: gpuscan, cupy, torch, numpy, cub, cuda
    n: int
    nbytes: int                     # bytes read + written by one call
    label: str = ""                 # the call, e.g. "cumsum(x, dtype=i32, out=o)"
    kind: str = "device"            # device (CUDA events), host (perf_counter), external
    ms: float | None = None         # median per call
    min_ms: float | None = None
    spread: float | None = None     # (p90 - p10) / median of the samples
    reps: int = 0                   # calls timed
    sets: int = 0                   # buffer sets rotated
    pct_memcpy: float | None = None
    ratios: dict = field(default_factory=dict)   # lib -> lib's ms / this row's ms
    check: str = ""                 # "", "ok", or what was wrong
    error: str = ""                 # exception text when the call failed

    @property
    def gbps(self) -> float | None:
        if not self.ms or self.ms <= 0 or not self.nbytes:
            return None
        return self.nbytes / (self.ms * 1e-3) / 1e9


# ================================================================================================
# Formatting (pure: no GPU, no CuPy)
# ================================================================================================
def _f(value, spec, none="-"):
    return none if value is None else format(value, spec)


def _ratio(value):
    return "-" if value is None else f"{value:.2f}x"


SHORT_COLS = [
    # header, width, align, getter
    ("case", 30, "<", lambda r: r.case),
    ("impl", 7, "<", lambda r: r.impl),
    ("n", 5, ">", lambda r: fmt_n(r.n)),
    ("ms", 10, ">", lambda r: _f(r.ms, ".4f", "ERROR" if r.error else "-")),
    ("GB/s", 8, ">", lambda r: _f(r.gbps, ".1f")),
    ("%memcpy", 7, ">", lambda r: _f(r.pct_memcpy, ".1f")),
    ("vs cupy", 7, ">", lambda r: _ratio(r.ratios.get("cupy"))),
    ("vs torch", 8, ">", lambda r: _ratio(r.ratios.get("torch"))),
    ("vs numpy", 8, ">", lambda r: _ratio(r.ratios.get("numpy"))),
    ("vs cub", 7, ">", lambda r: _ratio(r.ratios.get("cub"))),
]
FULL_COLS = SHORT_COLS + [
    ("min ms", 10, ">", lambda r: _f(r.min_ms, ".4f")),
    ("spread%", 7, ">", lambda r: _f(None if r.spread is None else 100 * r.spread, ".1f")),
    ("reps", 5, ">", lambda r: str(r.reps)),
    ("sets", 4, ">", lambda r: str(r.sets)),
    ("check", 5, "<", lambda r: r.check or "-"),
    ("call", 0, "<", lambda r: r.label + (f"  ERROR: {r.error}" if r.error else "")),
]


def format_header(cols) -> str:
    return "  ".join(f"{h:{a}{w}}" for h, w, a, _ in cols).rstrip()


def format_row(row: Row, cols=SHORT_COLS) -> str:
    return "  ".join(f"{g(row):{a}{w}}" for _, w, a, g in cols).rstrip()


def format_table(rows, cols=SHORT_COLS) -> str:
    lines = [format_header(cols), "-" * len(format_header(cols))]
    lines += [format_row(r, cols) for r in rows]
    return "\n".join(lines)


@dataclass
class Goal:
    """One figure of the summary: a done-when goal (status ok / MISS) or information."""

    figure: str
    n: str
    value: str
    goal: str = ""
    status: str = "info"            # ok, MISS, FAIL, info, n/a


def format_summary(goals, title="summary") -> str:
    w_fig = max([len("figure")] + [len(g.figure) for g in goals])
    w_val = max([len("value")] + [len(g.value) for g in goals])
    w_goal = max([len("goal")] + [len(g.goal) for g in goals])
    head = f"{'figure':<{w_fig}}  {'n':>5}  {'value':>{w_val}}  {'goal':<{w_goal}}  status"
    lines = [f"=== {title} ===", head, "-" * len(head)]
    for g in goals:
        lines.append(f"{g.figure:<{w_fig}}  {g.n:>5}  {g.value:>{w_val}}  "
                     f"{g.goal:<{w_goal}}  {g.status}".rstrip())
    return "\n".join(lines)


def result_paths(out_dir, gpu_name, date, tag=None):
    """(<out>/<gpu-slug>-<date>[-<tag>].txt, same .json)."""
    base = f"{slug(gpu_name)}-{date}" + (f"-{slug(tag)}" if tag else "")
    return os.path.join(out_dir, base + ".txt"), os.path.join(out_dir, base + ".json")


# ================================================================================================
# Command line
# ================================================================================================
def make_parser(description) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true",
                   help="sizes up to 2^20 only (smoke test); host cases at 2^20 only")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="folder for the result file (default: $BENCH_OUT, else "
                        "benchmarks/results/)")
    p.add_argument("--min-log2", type=int, default=10,
                   help="smallest size, log2 (default %(default)s)")
    p.add_argument("--max-log2", type=int, default=28,
                   help="largest size, log2 (default %(default)s)")
    p.add_argument("--step", type=int, default=2,
                   help="log2 step between sizes (default %(default)s)")
    p.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    p.add_argument("--no-jax", action="store_true",
                   help="leave JAX out (the benchmarks that time jax.lax.associative_scan)")
    p.add_argument("--no-host", action="store_true", help="leave the NumPy in/out cases out")
    p.add_argument("--tag", default=None,
                   help="suffix of the result file name (<gpu>-<date>-<tag>.txt)")
    p.add_argument("--seed", type=int, default=12345, help="random seed of the inputs")
    return p


def parse_args(description, argv=None, default_tag=None, parser=None):
    args = (parser or make_parser(description)).parse_args(argv)
    if args.tag is None:
        args.tag = default_tag
    if args.quick:
        args.max_log2 = min(args.max_log2, 20)
    if args.out is None:
        args.out = os.environ.get("BENCH_OUT") or RESULTS_DIR
    if not (0 <= args.min_log2 <= args.max_log2 <= 40) or args.step < 1:
        raise SystemExit(f"bad sizes: --min-log2 {args.min_log2} --max-log2 {args.max_log2} "
                         f"--step {args.step}")
    return args


def sizes_from(args):
    """2^min, 2^(min+step), ..., up to 2^max, always ending at 2^max."""
    logs = list(range(args.min_log2, args.max_log2 + 1, args.step))
    if logs[-1] != args.max_log2:
        logs.append(args.max_log2)
    return [1 << k for k in logs]


def log(msg):
    print(f"[{datetime.datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


# ================================================================================================
# The harness
# ================================================================================================
def die(msg):
    """Exit with status 2: the benchmark cannot run here (no CuPy, no CUDA backend)."""
    print(msg, file=sys.stderr, flush=True)
    raise SystemExit(2)


def require_cupy():
    """CuPy, or a clear exit: device-resident timing needs its events and arrays."""
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except ImportError as exc:
        die(f"bench: CuPy is required for device timing (CUDA events, device buffers) and "
            f"cannot be imported: {exc}")
    except Exception as exc:  # cupy present, but no device/driver
        die(f"bench: CuPy is installed but no CUDA device is usable: {exc}")
    return cupy


def optional_torch(disabled):
    if disabled:
        return None, "disabled (--no-torch)"
    try:
        import torch
    except ImportError as exc:
        return None, f"not importable ({exc})"
    if not torch.cuda.is_available():
        return None, f"{torch.__version__}, CUDA not available"
    return torch, torch.__version__


class Harness:
    """Times cases, keeps the rows, prints progress and writes the result file."""

    def __init__(self, args, title, device=True):
        """device=False: host cases only (wall-clock timing of work that may run elsewhere,
        e.g. on Dask workers): no CuPy, PyTorch or CUDA backend needed in this process, and
        the result file is named after whatever gpuscan.device_info() calls this device."""
        self.args = args
        self.title = title
        self.t_start = time.perf_counter()
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.goals: list[Goal] = []
        self.failures: list[str] = []
        self._memcpy: dict = {}
        self._printed_header = False

        import gpuscan
        self.gpuscan = gpuscan
        self.device = device
        self.cp, self.torch, self.torch_version = None, None, "not used"
        if device:
            self.cp = require_cupy()
            self.torch, self.torch_version = optional_torch(args.no_torch)
            try:
                be = gpuscan.backend()  # raises with the cause when GPUSCAN_BACKEND=cuda fails
            except RuntimeError as exc:
                die(f"bench: gpuscan's CUDA backend is not usable: {exc}")
            if be != "cuda":
                die(f"bench: gpuscan.backend() is {be!r}: the device benchmark needs the CUDA "
                    f"backend (device_info: {gpuscan.device_info()})")
        self.info = dict(gpuscan.device_info())
        self.l2_bytes = self._l2_bytes() if device else None
        self.date = datetime.date.today().isoformat()
        self.started = datetime.datetime.now().isoformat(timespec="seconds")
        self.rng_seed = args.seed
        self._seed_counter = 0

    # ---- environment -------------------------------------------------------------------------
    def _l2_bytes(self):
        try:
            dev = self.cp.cuda.Device().id
            return int(self.cp.cuda.runtime.getDeviceProperties(dev)["l2CacheSize"]) \
                or L2_FALLBACK_BYTES
        except Exception:
            return L2_FALLBACK_BYTES

    def sizes(self):
        return sizes_from(self.args)

    def each_size(self, *memcpy_elems, min_n=0):
        """The run's sizes from min_n up, each logged and its memcpy rows (elements of these
        byte widths, the %memcpy references) timed before the benchmark's cases."""
        for n in self.sizes():
            if n < min_n:
                continue
            log(f"n = {fmt_n(n)}")
            for elem in memcpy_elems:
                self.memcpy(n, elem)
            yield n

    def on_host(self, check):
        """A device_case check made from one on NumPy arrays (gpuscan/_slow.py's twins and
        checks): the result and the inputs are copied to the host first."""
        cp = self.cp

        def run(result, *inputs):
            return check(cp.asnumpy(result), *(cp.asnumpy(a) for a in inputs))

        return run

    def header_lines(self):
        info = self.info
        cc = info.get("compute_capability")
        if isinstance(cc, (tuple, list)):
            cc = ".".join(str(c) for c in cc)
        mem = info.get("memory_bytes")
        mem = f"{mem / 2**30:.1f} GiB" if isinstance(mem, (int, float)) else str(mem)
        if info.get("backend") == "cuda":
            l2 = "" if self.l2_bytes is None else f"  L2 {self.l2_bytes / 2**20:.0f} MiB"
            where = [f"gpu            {info.get('name')}  SMs {info.get('multiprocessors')}  "
                     f"cc {cc}  memory {mem}{l2}",
                     f"driver/runtime {info.get('driver_version')} / "
                     f"{info.get('runtime_version')}"]
        else:
            where = [f"cpu            {info.get('name')}  gpuscan threads {info.get('threads')}"]
        lines = [
            f"gpuscan benchmark: {self.title}",
            f"date           {self.date} (started {self.started})",
            *where,
            f"gpuscan        {getattr(self.gpuscan, '__version__', '?')}  backend "
            f"{self.gpuscan.backend()}  {git_describe()}",
            f"python         {platform.python_version()}  numpy {np.__version__}  cupy "
            f"{self.cp.__version__ if self.cp else 'not used'}  torch {self.torch_version}",
            f"host           {platform.machine()}  {os.cpu_count()} cpus",
            f"command        {' '.join([os.path.basename(sys.argv[0])] + sys.argv[1:])}",
            "method         device: CUDA events on the legacy default stream, warm-up, median of "
            f">= {MIN_REPS} calls and >= {TARGET_MS:.0f} ms ({SLOW_REPS} calls when one takes "
            f"> {SLOW_MS:.0f} ms) in {SAMPLES} batches; inputs/outputs rotated over sets "
            f"totalling > {ROTATE_L2}x L2 (at most {MAX_SETS}); host: perf_counter, the "
            f"libraries' calls in turn, median of {_timing.MIN_REPS}-{_timing.MAX_REPS} "
            f"(~{_timing.TARGET_S:g} s)",
            "columns        GB/s counts bytes read + written once; %memcpy = GB/s over the same "
            "run's cudaMemcpyAsync D2D GB/s at that n; vs X = X's ms / gpuscan's ms (>1: "
            "gpuscan faster)",
        ]
        return lines

    # ---- data ----------------------------------------------------------------------------------
    def _next_seed(self):
        self._seed_counter += 1
        return self.rng_seed * 1000 + self._seed_counter

    def random_device(self, dtype, size, kind="int"):
        """A CuPy array of random values (never all zeros: see METHOD.md).

        kind: "int" (signed: [-1000, 1000), unsigned: [0, 1000), bool: coin flips),
              "uniform" ([0, 1)), "normal" (standard normal), or a callable(cp, size, dtype).
        """
        cp = self.cp
        dtype = np.dtype(dtype)
        cp.random.seed(self._next_seed())
        if callable(kind):
            return kind(cp, size, dtype)
        if dtype.kind == "b":
            return cp.random.random(size, dtype=np.float32) < 0.5
        if dtype.kind in "iu":
            lo = -1000 if dtype.kind == "i" and dtype.itemsize > 1 else (-100 if dtype.kind == "i" else 0)
            hi = 1000 if dtype.itemsize > 1 else 100
            try:
                return cp.random.randint(lo, hi, size, dtype=dtype)
            except (TypeError, ValueError):
                return cp.random.randint(lo, hi, size).astype(dtype)
        if dtype.kind == "f":
            wide = np.float32 if dtype.itemsize <= 4 else np.float64
            if kind == "normal":
                x = cp.random.standard_normal(size, dtype=wide)
            else:
                x = cp.random.random(size, dtype=wide)
            return x.astype(dtype, copy=False)
        raise TypeError(f"random_device: unsupported dtype {dtype}")

    def random_host(self, dtype, size, kind="int"):
        rng = np.random.default_rng(self._next_seed())
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            return rng.random(size, dtype=np.float32) < 0.5
        if dtype.kind in "iu":
            lo = -1000 if dtype.kind == "i" else 0
            return rng.integers(lo, 1000, size, dtype=dtype)
        if kind == "normal":
            return rng.standard_normal(size, dtype=np.float32 if dtype.itemsize <= 4 else
                                       np.float64).astype(dtype, copy=False)
        return rng.random(size, dtype=np.float32 if dtype.itemsize <= 4 else
                          np.float64).astype(dtype, copy=False)

    def buffer_sets(self, n, inputs, outputs):
        """m sets of (input views..., output views...), each view n elements of one slab.

        inputs: list of (dtype, kind); outputs: list of dtypes.  m = ceil(ROTATE_L2 * L2 /
        bytes per set), at most MAX_SETS.
        """
        cp = self.cp
        per_set = sum(np.dtype(d).itemsize for d, _ in inputs) * n + \
            sum(np.dtype(d).itemsize for d in outputs) * n
        m = max(1, min(MAX_SETS, math.ceil(ROTATE_L2 * self.l2_bytes / max(per_set, 1))))
        slabs = [self.random_device(d, m * n, k) for d, k in inputs]
        slabs += [cp.empty(m * n, dtype=d) for d in outputs]
        if m == 1:
            return [tuple(slabs)], per_set
        sets = [tuple(s[i * n:(i + 1) * n] for s in slabs) for i in range(m)]
        return sets, per_set

    def to_torch(self, arrays):
        t = self.torch
        return tuple(t.as_tensor(a, device="cuda") for a in arrays)

    def free(self):
        """Give cached device memory back between cases (2^28 int64 buffers are 2 GiB)."""
        if self.cp is None:
            return
        self.cp.cuda.Stream.null.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()
        if self.torch is not None:
            self.torch.cuda.empty_cache()

    # ---- timing cores --------------------------------------------------------------------------
    def time_device(self, fn, sets):
        """Median per-call device time (ms) of fn(*sets[i % m]) with CUDA events.

        Returns (median, min, spread, reps).
        """
        cp = self.cp
        null = cp.cuda.Stream.null
        m = len(sets)
        idx = 0

        def call():
            nonlocal idx
            fn(*sets[idx % m])
            idx += 1

        # Warm-up: module load, JIT, handle creation, allocator caches (the first call); the
        # second call, host-timed, tells a slow baseline from a first call that compiled.
        t0 = time.perf_counter()
        call()
        null.synchronize()
        first_ms = (time.perf_counter() - t0) * 1e3
        second_ms = first_ms
        if first_ms <= VERY_SLOW_MS:
            t0 = time.perf_counter()
            call()
            null.synchronize()
            second_ms = (time.perf_counter() - t0) * 1e3
        if first_ms > VERY_SLOW_MS:
            reps, batch = 1, 1
        elif second_ms > SLOW_MS:
            reps, batch = SLOW_REPS, 1
        else:
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            probe = 5
            e0.record(null)
            for _ in range(probe):
                call()
            e1.record(null)
            e1.synchronize()
            est = max(cp.cuda.get_elapsed_time(e0, e1) / probe, 1e-4)
            if est > SLOW_MS:
                reps = SLOW_REPS
            else:
                reps = min(MAX_REPS, max(MIN_REPS, math.ceil(TARGET_MS / est)))
            batch = max(1, math.ceil(reps / SAMPLES))
        samples = max(1, math.ceil(reps / batch))
        starts = [cp.cuda.Event() for _ in range(samples)]
        ends = [cp.cuda.Event() for _ in range(samples)]
        for s in range(samples):
            starts[s].record(null)
            for _ in range(batch):
                call()
            ends[s].record(null)
        ends[-1].synchronize()
        per_call = sorted(cp.cuda.get_elapsed_time(a, b) / batch for a, b in zip(starts, ends))
        return _timing.stats(per_call) + (samples * batch,)

    @staticmethod
    def time_host(*fns):
        """Median wall times (ms) of the callables, timed in turn by gpuscan's host policy
        (gpuscan/_timing.py); returns one (median, min, spread, reps) per callable."""
        return [(t.ms, t.min_ms, t.spread, t.reps) for t in _timing.time_calls(*fns)]

    # ---- cases ---------------------------------------------------------------------------------
    def memcpy(self, n, elem_bytes=4):
        """cudaMemcpyAsync device-to-device of n elements of elem_bytes, on the null stream.

        Its GB/s at this n is the %memcpy reference of the device cases of the same n.
        """
        key = (n, elem_bytes)
        if key in self._memcpy:
            return self._memcpy[key]
        rt = self.cp.cuda.runtime
        nbytes = n * elem_bytes
        dt = {4: np.uint32, 8: np.uint64}[elem_bytes]
        sets, _ = self.buffer_sets(n, [(dt, "int")], [dt])

        def copy(src, dst):
            rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, rt.memcpyDeviceToDevice, 0)

        row = Row(case=f"memcpy d2d ({elem_bytes}B elems)", impl="cuda", n=n, nbytes=2 * nbytes,
                  label="cudaMemcpyAsync(D2D, stream 0)", sets=len(sets))
        try:
            row.ms, row.min_ms, row.spread, row.reps = self.time_device(copy, sets)
        except Exception as exc:
            row.error = _exc_text(exc)
            self.failures.append(f"memcpy n={fmt_n(n)}: {row.error}")
        del sets
        self._memcpy[key] = row
        self._add_rows([row])
        return row

    def memcpy_gbps(self, n, elem_bytes):
        row = self._memcpy.get((n, elem_bytes))
        return row.gbps if row is not None else None

    def device_case(self, case, n, inputs, outputs, impls, check=None, check_libs=(SUBJECT,),
                    memcpy_elem=None, nbytes=None, external=()):
        """Time each impl on device-resident data; one row per impl, ratios on gpuscan's row.

        inputs   list of (dtype, kind) (see random_device); outputs: list of dtypes.
        impls    list of (lib, label, fn): fn(*inputs, *outputs) does one call and returns its
                 result (an array with __cuda_array_interface__); lib "torch" gets torch
                 tensors (zero-copy views of the same buffers).  An impl of None is skipped.
        check    check(result, *inputs) -> None if right, else what is wrong (CuPy arrays);
                 run once after timing, on buffer set 0 with poisoned outputs, for the libs in
                 check_libs.  A failed check of gpuscan is a failure of the run.
        memcpy_elem  which memcpy row is the %memcpy reference (default: the widest element).
        external list of dicts of Row fields (impl, label, ms; min_ms, spread, reps, sets when
                 known) for the same work at the same n timed by another program in this job
                 (bench_cub.py: CUB's driver); they join the case's rows with its byte count,
                 so %memcpy and the ratios come out as for the impls timed here.
        """
        cp = self.cp
        impls = [i for i in impls if i is not None]
        if memcpy_elem is None:
            memcpy_elem = max([np.dtype(d).itemsize for d, _ in inputs] +
                              [np.dtype(d).itemsize for d in outputs])
            memcpy_elem = 8 if memcpy_elem >= 8 else 4
        if (n, memcpy_elem) not in self._memcpy:
            self.memcpy(n, memcpy_elem)
        rows = []
        try:
            sets, per_set = self.buffer_sets(n, inputs, outputs)
        except Exception as exc:
            row = Row(case=case, impl=SUBJECT, n=n, nbytes=0, error=_exc_text(exc))
            self.failures.append(f"{case} n={fmt_n(n)}: buffers: {row.error}")
            self._add_rows([row])
            self.free()
            return [row]
        n_in = len(inputs)
        for lib, label, fn in impls:
            row = Row(case=case, impl=lib, n=n, nbytes=nbytes or per_set, label=label,
                      sets=len(sets))
            rows.append(row)
            try:
                use = sets
                if lib == "torch":
                    use = [self.to_torch(s) for s in sets]
                row.ms, row.min_ms, row.spread, row.reps = self.time_device(fn, use)
                if check is not None and lib in check_libs:
                    for o in use[0][n_in:]:
                        _poison(o if lib != "torch" else cp.asarray(o))
                    result = fn(*use[0])
                    cp.cuda.Stream.null.synchronize()
                    ins = sets[0][:n_in]
                    problem = check(cp.asarray(_first(result)), *ins)
                    row.check = "ok" if problem is None else f"FAIL: {problem}"
                del use
            except Exception as exc:
                row.error = _exc_text(exc)
                if os.environ.get("BENCH_TRACEBACK"):
                    traceback.print_exc()
            if lib == SUBJECT and (row.error or row.check.startswith("FAIL")):
                self.failures.append(f"{case} n={fmt_n(n)} {lib}: {row.error or row.check}")
        for fields in external:
            rows.append(Row(case=case, n=n, nbytes=nbytes or per_set, kind="external", **fields))
        del sets
        self._finish_case(rows, n, memcpy_elem)
        self.free()
        return rows

    def host_case(self, case, n, inputs, impls, check=None, check_libs=(SUBJECT,), nbytes=None):
        """Time each impl on host (NumPy) data with perf_counter; ratios on gpuscan's row.

        inputs   list of NumPy arrays; impls: (lib, label, fn) with fn(*inputs) -> result.
                 The impls whose first call succeeds are timed together, in turn.
        nbytes   bytes per call (default: the inputs' nbytes + the subject's result nbytes).
        """
        impls = [i for i in impls if i is not None]
        in_bytes = sum(a.nbytes for a in inputs)
        rows, timed = [], []
        for lib, label, fn in impls:   # one call each: its result's bytes, its check, or its error
            row = Row(case=case, impl=lib, n=n, nbytes=nbytes or 0, label=label, kind="host",
                      sets=1)
            rows.append(row)
            try:
                result = np.asarray(_first(fn(*inputs)))
                if not nbytes:
                    row.nbytes = in_bytes + result.nbytes
                if check is not None and lib in check_libs:
                    problem = check(result, *inputs)
                    row.check = "ok" if problem is None else f"FAIL: {problem}"
                del result
                timed.append((row, fn))
            except Exception as exc:
                row.error = _exc_text(exc)
                if os.environ.get("BENCH_TRACEBACK"):
                    traceback.print_exc()
        try:
            times = self.time_host(*[lambda fn=fn: fn(*inputs) for _, fn in timed])
            for (row, _), t in zip(timed, times):
                row.ms, row.min_ms, row.spread, row.reps = t
        except Exception as exc:   # a call that failed only when timed fails the case's rows
            for row, _ in timed:
                row.error = _exc_text(exc)
        for row in rows:
            if row.impl == SUBJECT and (row.error or row.check.startswith("FAIL")):
                self.failures.append(f"{case} n={fmt_n(n)} {row.impl}: "
                                     f"{row.error or row.check}")
        subject = [r for r in rows if r.impl == SUBJECT and r.nbytes]
        for r in rows:   # one byte count per case (the subject's), so GB/s compare like for like
            r.nbytes = subject[0].nbytes if subject else r.nbytes
        self._finish_case(rows, n, None)
        self.free()
        return rows

    def _finish_case(self, rows, n, memcpy_elem):
        ref = self.memcpy_gbps(n, memcpy_elem) if memcpy_elem else None
        subject = [r for r in rows if r.impl == SUBJECT]
        for r in rows:
            if ref and r.gbps:
                r.pct_memcpy = 100.0 * r.gbps / ref
        for s in subject:
            for r in rows:
                if r.impl in RATIO_LIBS and r.ms and s.ms:
                    s.ratios[r.impl] = r.ms / s.ms
        self._add_rows(rows)

    def _add_rows(self, rows):
        if not self._printed_header:
            print(format_header(SHORT_COLS), flush=True)
            self._printed_header = True
        for r in rows:
            self.rows.append(r)
            line = format_row(r)
            if r.error:
                line += f"  ERROR: {r.error}"
            elif r.check.startswith("FAIL"):
                line += f"  CHECK {r.check}"
            print(line, flush=True)

    # ---- lookups, notes, goals ----------------------------------------------------------------
    def row(self, case, impl, n):
        for r in self.rows:
            if r.case == case and r.impl == impl and r.n == n:
                return r
        return None

    def note(self, text):
        """A free-form result line (accuracy, determinism, skipped baselines)."""
        self.notes.append(text)
        print(f"# {text}", flush=True)

    def fail(self, text):
        self.failures.append(text)
        print(f"# FAILURE: {text}", flush=True)

    def goal(self, figure, n, value, goal="", status="info"):
        self.goals.append(Goal(figure, n if isinstance(n, str) else fmt_n(n), value, goal,
                               status))

    def goal_pct_memcpy(self, case, n, target_pct):
        """'case at n: X% of memcpy' against a >= target."""
        r = self.row(case, SUBJECT, n)
        if r is None or r.pct_memcpy is None:
            self.goal(f"{case} % of memcpy", n, "-", f">= {target_pct:.0f}%", "n/a")
            return
        ok = r.pct_memcpy >= target_pct
        self.goal(f"{case} % of memcpy", n, f"{r.pct_memcpy:.1f}%", f">= {target_pct:.0f}%",
                  "ok" if ok else "MISS")

    def goal_vs(self, case, lib, min_n, target=1.0, info=False):
        """Worst 'vs lib' ratio of case over the sizes >= min_n, against >= target (or, with
        info=True, shown without a verdict)."""
        rs = [r for r in self.rows if r.case == case and r.impl == SUBJECT and r.n >= min_n
              and lib in r.ratios]
        worst = min(rs, key=lambda r: r.ratios[lib]) if rs else None
        self._goal_ratio(f"{case} vs {lib} (worst n >= {fmt_n(min_n)})", worst, lib, target,
                         info)

    def goal_vs_at(self, case, lib, n, target=1.0, info=False):
        """'case vs lib' at n, against >= target (or, with info=True, without a verdict)."""
        self._goal_ratio(f"{case} vs {lib}", self.row(case, SUBJECT, n), lib, target, info, n)

    def _goal_ratio(self, figure, row, lib, target, info, n="-"):
        if row is None or lib not in row.ratios:
            self.goal(figure, n, "-", f">= {target:.2f}x", "n/a")
            return
        ratio = row.ratios[lib]
        if info:
            self.goal(figure, row.n, f"{ratio:.2f}x", "", "info")
            return
        self.goal(figure, row.n, f"{ratio:.2f}x", f">= {target:.2f}x",
                  "ok" if ratio >= target else "MISS")

    def goal_time_ratio(self, case, base_case, n, impl=SUBJECT, at_most=None):
        """case's time over base_case's time at n (e.g. max scan vs add): a goal when at_most
        is given, else information."""
        a, b = self.row(case, impl, n), self.row(base_case, impl, n)
        if a is None or b is None or not a.ms or not b.ms:
            self.goal(f"{case} / {base_case} time", n, "-", "", "n/a")
            return
        r = a.ms / b.ms
        if at_most is None:
            self.goal(f"{case} / {base_case} time", n, f"{r:.2f}", "", "info")
        else:
            self.goal(f"{case} / {base_case} time", n, f"{r:.2f}", f"<= {at_most:.2f}",
                      "ok" if r <= at_most else "MISS")

    # ---- output --------------------------------------------------------------------------------
    def finish(self):
        """Write the result files, print the summary table last; returns the exit status."""
        elapsed = time.perf_counter() - self.t_start
        if self.failures:
            self.goal("failures (errors or wrong results of gpuscan)", "-",
                      str(len(self.failures)), "0", "FAIL")
        summary = format_summary(self.goals, f"gpuscan bench summary ({self.title})")
        os.makedirs(self.args.out, exist_ok=True)
        txt, js = result_paths(self.args.out, self.info.get("name", "gpu"), self.date,
                               self.args.tag)
        with open(txt, "w") as f:
            f.write("\n".join(self.header_lines()) + "\n")
            f.write(f"elapsed        {elapsed:.1f} s\n\n")
            f.write(format_table(self.rows, FULL_COLS) + "\n\n")
            if self.notes:
                f.write("notes\n" + "\n".join(f"  {s}" for s in self.notes) + "\n\n")
            if self.failures:
                f.write("failures\n" + "\n".join(f"  {s}" for s in self.failures) + "\n\n")
            f.write(summary + "\n")
        with open(js, "w") as f:
            json.dump({"header": self.header_lines(), "info": _jsonable(self.info),
                       "l2_bytes": self.l2_bytes, "elapsed_s": elapsed,
                       "rows": [dict(asdict(r), gbps=r.gbps) for r in self.rows],
                       "notes": self.notes, "failures": self.failures,
                       "summary": [asdict(g) for g in self.goals]}, f, indent=1)
        print(flush=True)
        if self.failures:
            print("failures:\n" + "\n".join(f"  {s}" for s in self.failures))
        print(f"result files: {txt}\n              {js}\n(elapsed {elapsed:.1f} s)")
        print(summary, flush=True)
        return 1 if self.failures else 0


def run_main(title, suite, argv=None, default_tag=None, device=True, parser=None):
    """parse_args -> Harness -> suite(h) -> finish(); exit status 1 on failures.  parser: a
    make_parser() with the benchmark's own options added (parsed with the common ones)."""
    args = parse_args(title, argv, default_tag, parser)
    h = Harness(args, title, device=device)
    print("\n".join(h.header_lines()), flush=True)
    try:
        suite(h)
    except KeyboardInterrupt:
        h.fail("interrupted")
    except Exception as exc:   # the rows so far still get written
        traceback.print_exc()
        h.fail(f"suite stopped: {_exc_text(exc)}")
    return h.finish()


# ================================================================================================
# helpers
# ================================================================================================
def _poison(arr):
    """Fill with a byte pattern so an unwritten element cannot pass a check."""
    arr.view(np.uint8).fill(0xA5)


def _first(result):
    """torch.cummax and friends return (values, indices): keep the values."""
    if isinstance(result, tuple):
        return result[0]
    return result


def _exc_text(exc):
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 300 else text[:297] + "..."


def _jsonable(obj):
    try:
        json.dumps(obj)
        return obj
    except TypeError:
        return {k: str(v) for k, v in obj.items()} if isinstance(obj, dict) else str(obj)


def git_describe():
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            return f"commit {out.stdout.strip()}" + (" (modified)" if dirty.stdout.strip() else "")
    except Exception:
        pass
    return "commit unknown"
