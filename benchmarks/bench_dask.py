"""benchmarks/bench_dask.py - gpuscan.dask against dask.array on the same Dask cluster.

    python benchmarks/bench_dask.py [--log2 30] [--chunks 64] [--workers 2] [--out DIR]
    python benchmarks/bench_dask.py --threads [--workers 2]          # the threaded scheduler
    python benchmarks/bench_dask.py --cupy [--gpus 0,1] [--log2 31 --chunks 128] [--scaling]
    python benchmarks/bench_dask.py --host-chunks [--gpus 0,1] [--log2 33 --chunks 128] [--scaling]
    ... [--cases "scan f32,split"]        # only the cases whose names begin so

One float32 array of 2^log2 values in `chunks` equal chunks, with uint8 segment heads set with
probability 2^-10 (segments of about a thousand) and uint8 split flags set with probability
1/2.  Every chunk is made on the worker that keeps it, from its own seed (map_blocks: a hash of
the position, the same values on NumPy and CuPy), and kept there (persisted).  Each case is one
lazy call computed on the cluster and kept there (persist + wait, then cancelled, so that the
next call's keys are new), timed wall-clock from the call to the last chunk in place
(harness.host_case: gpuscan/_timing.py's policy, a warm-up, then the median of at least 3):
  gsd.scan (sequential and blelloch carries)   vs  dask.array.cumsum (the same two methods)
  gsd.histogram (256 bins, range given)        vs  dask.array.histogram
  gsd.split                                    vs  dask.array.concatenate([x[m], x[~m]])
  gsd.segmented_scan                           (Dask has no segmented scan)
  one task per chunk that does nothing         (the cluster's cost of a task)
Bytes per call count what a call must read and write once (scan 8n, segmented scan 9n, split
9n, histogram 4n).  Where the time goes: one more call of each case under Dask's task stream
(the threaded scheduler: dask.diagnostics.Profiler) gives its tasks, their compute time per
kind of task, and the time per task outside compute, (wall * slots - compute) / tasks, slots
being the cluster's threads.  Before timing, the same calls on int32 data of 2^22 values in the
same number of chunks are checked against gpuscan/_slow.py's NumPy twins (bit for bit), and at
full size the last chunk of each float scan is checked against a float64 prefix (the
contract's bound for the whole length), so a carry lost anywhere in the chain shows.

CPU mode (default): a LocalCluster of --workers processes of one thread each; each worker's
gpuscan gets GPUSCAN_NUM_THREADS = cores / workers, so gpuscan and NumPy use the same cores.
--threads: Dask's threaded scheduler in this process, --workers threads (gpuscan's own threads
as the environment sets them).  GPU modes, on gsd.gpu_cluster() workers, one per GPU (--gpus,
default all): --cupy, CuPy chunks made on the GPUs and never leaving them (dask.array then runs
CuPy); --host-chunks, NumPy chunks on those workers, each streamed through its worker's GPU by
gpuscan (gsd's calls alone: dask.array would run them on the workers' CPU threads), with each
GPU's rate beside its pinned host-to-device copy rate (CuPy, where installed).  --scaling runs the GPU cases on one
GPU, then on all of them, and reports the scaling efficiency T(1 GPU) / (N * T(N GPUs)) of each
case.  Timing rules, columns and the result file: harness.py (the file's tag is "dask",
"dask-threads", "dask-cupy" or "dask-host").
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

from gpuscan import _slow  # noqa: E402

TITLE = "gpuscan.dask vs dask.array on one Dask cluster"
BINS, RANGE = 256, (0.0, 1.0)
HEAD_P, SPLIT_P = 2.0**-10, 0.5
CHECK_LOG2 = 22
# Data modes: where the chunks live, and the result file's tag.
TAGS = {"cpu": "dask", "threads": "dask-threads", "cupy": "dask-cupy", "host": "dask-host"}


def make_parser():
    p = harness.make_parser(TITLE)
    p.add_argument("--log2", type=int, default=None,
                   help="log2 of the array's length (default 30; 31 with --scaling, 33 with "
                        "--host-chunks)")
    p.add_argument("--chunks", type=int, default=None,
                   help="number of equal chunks (default 64; 128 with --scaling or "
                        "--host-chunks)")
    p.add_argument("--workers", type=int, default=2,
                   help="CPU modes: worker processes (--threads: threads)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--threads", action="store_true", help="Dask's threaded scheduler")
    mode.add_argument("--cupy", action="store_true", help="CuPy chunks on one worker per GPU")
    mode.add_argument("--host-chunks", action="store_true",
                      help="NumPy chunks on one worker per GPU, streamed through its GPU")
    p.add_argument("--gpus", default=None,
                   help="GPU modes: comma-separated device ids (default: every GPU)")
    p.add_argument("--scaling", action="store_true",
                   help="GPU modes: the cases on one GPU, then on all (scaling efficiency)")
    p.add_argument("--cases", default=None,
                   help="comma-separated beginnings of the case names to run, e.g. 'scan f32' "
                        "(default: every case)")
    return p


def data_mode(args):
    return ("threads" if args.threads else "cupy" if args.cupy
            else "host" if args.host_chunks else "cpu")


# ---- data, made on the workers ------------------------------------------------------------------
def _hash(xp, size, key):
    """size uint32 values, a bijective hash (lowbias32) of the positions mixed with key (every
    constant a NumPy uint32, so that NumPy and CuPy both keep uint32 arithmetic)."""
    u = np.uint32
    h = xp.arange(size, dtype=u)
    h *= u(0x9E3779B1)
    h ^= u(key)
    for shift, mul in ((16, 0x7FEB352D), (15, 0x846CA68B)):
        h ^= h >> u(shift)
        h *= u(mul)
    h ^= h >> u(16)
    return h


def _random_block(size, seed, kind, cupy, block_id=None):
    """One chunk, from its seed and position: float32 values uniform in [0, 1), int32 values
    in [-1000, 1000), or uint8 head or split flags."""
    if cupy:
        import cupy as xp
    else:
        xp = np
    u = np.uint32
    h = _hash(xp, size, (seed * 0x85EBCA6B + block_id[0] * 0xC2B2AE35) & 0xFFFFFFFF)
    if kind == "values":
        return (h >> u(8)).astype(np.float32) * np.float32(2.0**-24)
    if kind == "ints":
        return (h % u(2000)).astype(np.int32) - np.int32(1000)
    p = HEAD_P if kind == "heads" else SPLIT_P
    return (h < u(p * 2**32)).astype(np.uint8)


def random_array(da, n, chunks, kind, seed, cupy):
    size = n // chunks
    dtype = {"values": np.float32, "ints": np.int32}.get(kind, np.uint8)
    if cupy:
        import cupy as cp
        meta = cp.empty(0, dtype)
    else:
        meta = np.empty(0, dtype)
    return da.map_blocks(_random_block, size, seed, kind, cupy, chunks=((size,) * chunks,),
                         dtype=dtype, meta=meta)


def _nothing(block):
    return block[:0]


def host(a):
    """A computed result as NumPy (CuPy results are copied back)."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


# ---- running a call: on a distributed cluster, or on the threaded scheduler ---------------------
class Runner:
    """Runs a lazy call to the last chunk in place, and profiles one: `slots` threads."""

    def __init__(self, client, slots):
        self.client, self.slots = client, slots

    def persist(self, *arrays):
        import dask

        if self.client is None:
            return dask.persist(*arrays)
        from distributed import wait

        out = self.client.persist(list(arrays))
        wait(out)
        return out

    def run(self, result):
        """Compute `result` (an array or a tuple of them) and keep it until all is in place;
        then forget it, so that the same call again (the same keys) computes again: the
        client releases a key on the event loop's thread, so wait until it has."""
        import time

        from distributed import futures_of

        kept = self.persist(*(result if isinstance(result, tuple) else (result,)))
        if self.client is not None:
            keys = {f.key for f in futures_of(kept)}
            del kept
            while keys & self.client.refcount.keys():
                time.sleep(1e-4)

    def profile(self, result):
        """(wall s, {task kind: [tasks, compute s]}) of one run."""
        import time

        from dask.utils import key_split

        kinds = {}
        if self.client is None:
            from dask.diagnostics import Profiler

            with Profiler() as prof:
                t0 = time.perf_counter()
                self.run(result)
                wall = time.perf_counter() - t0
            spans = [(r.key, r.end_time - r.start_time) for r in prof.results]
        else:
            from distributed import get_task_stream

            with get_task_stream(self.client) as ts:
                t0 = time.perf_counter()
                self.run(result)
                wall = time.perf_counter() - t0
            spans = [(r["key"], sum(s["stop"] - s["start"] for s in r["startstops"]
                                    if s["action"] == "compute")) for r in ts.data]
        for key, seconds in spans:
            k = kinds.setdefault(key_split(key), [0, 0.0])
            k[0] += 1
            k[1] += seconds
        return wall, kinds


def where_the_time_goes(h, runner, case, impl, result):
    """A note on one run of `result`: its tasks per kind, their compute time, and the time per
    task outside compute; returns that time per task (ms)."""
    wall, kinds = runner.profile(result)
    tasks = sum(k[0] for k in kinds.values())
    compute = sum(k[1] for k in kinds.values())
    outside = (wall * runner.slots - compute) / max(tasks, 1) * 1e3
    parts = ", ".join(f"{name} {k[0]} x {k[1] / k[0] * 1e3:.2f} ms"
                      for name, k in sorted(kinds.items(), key=lambda kv: -kv[1][1]))
    h.note(f"{case}, {impl}: {tasks} tasks, wall {wall * 1e3:.1f} ms, compute "
           f"{compute * 1e3:.1f} ms on {runner.slots} slots, {outside:.2f} ms per task outside "
           f"compute; per kind (tasks x mean compute): {parts}")
    return outside


# ---- checks -------------------------------------------------------------------------------------
def check_small(h, da, gsd, chunks, cupy):
    """int32 data of 2^CHECK_LOG2 values in `chunks` chunks: every gsd call bit for bit against
    gpuscan/_slow.py's twin on the whole array."""
    import dask

    n = 1 << CHECK_LOG2
    x = random_array(da, n, chunks, "ints", 7, cupy)
    heads = random_array(da, n, chunks, "heads", 8, cupy)
    flags = random_array(da, n, chunks, "split", 9, cupy)
    out, count = gsd.split(x, flags)
    got = dask.compute(x, heads, flags, gsd.scan(x), gsd.scan(x, method="blelloch"),
                       gsd.segmented_scan(x, heads), out, count,
                       gsd.histogram(x, BINS, range=(-1000, 1000))[0])
    a, hd, fl, *res = [host(r) for r in got]
    want = [_slow.scan(a), _slow.scan(a), _slow.segmented_scan(a, hd), *_slow.split(a, fl),
            _slow.histogram(a, BINS, range=(-1000, 1000))[0]]
    names = ["scan", "scan blelloch", "segmented_scan", "split", "split count", "histogram"]
    for name, r, w in zip(names, res, want):
        problem = _slow.first_difference(r, w)
        if problem:
            h.fail(f"check at 2^{CHECK_LOG2} in {chunks} chunks: gsd.{name}: {problem}")
    h.note(f"checked at 2^{CHECK_LOG2} int32 in {chunks} chunks: gsd.scan (both methods), "
           f"segmented_scan, split (+count), histogram equal gpuscan/_slow.py's NumPy twins bit "
           f"for bit")


def check_last_chunk(h, da, x, r, label):
    """The last chunk of a float32 scan of x against a float64 prefix: within the contract's
    bound (log2(n) + 2) * eps * sum|x| for the whole length."""
    import dask

    m = x.chunks[0][-1]
    n = x.shape[0]
    before, tail, got = dask.compute(x[:-m].astype(np.float64).sum(),
                                     x[-m:].astype(np.float64), r[-m:])
    exact = float(host(before)) + _slow.scan(host(tail))
    # The values are non-negative: sum|x| is the sum itself.
    worst = _slow.sum_error(host(got), exact, exact, n, float(np.finfo(np.float32).eps))
    if not worst <= 1.0:
        h.fail(f"{label}: the last chunk is off by {worst:.2f} of the bound")
    h.note(f"{label} at {fmt_n(n)}: last chunk within {worst:.3f} of the contract's bound "
           f"(largest error / bound)")


# ---- the timed cases ----------------------------------------------------------------------------
def run_cases(h, runner, da, gsd, n, chunks, cupy, label="", theirs=True):
    """Time every case with this runner (dask.array's calls too where `theirs`); returns
    {case: gpuscan ms}."""
    seed = h.args.seed
    x, heads, flags = runner.persist(*(random_array(da, n, chunks, kind, seed + i, cupy)
                                       for i, kind in enumerate(("values", "heads", "split"))))
    harness.log(f"{label}data in place: 2^{int(math.log2(n))} float32 in {chunks} chunks")

    suffix = f" ({label.strip().rstrip(':')})" if label else ""
    cases = [
        (f"scan f32{suffix}", 8 * n,
         [("gpuscan", "gsd.scan(x)", lambda: gsd.scan(x)),
          ("dask", "da.cumsum(x, axis=0)", lambda: da.cumsum(x, axis=0))]),
        (f"scan blelloch f32{suffix}", 8 * n,
         [("gpuscan", "gsd.scan(x, method='blelloch')", lambda: gsd.scan(x, method="blelloch")),
          ("dask", "da.cumsum(x, axis=0, method='blelloch')",
           lambda: da.cumsum(x, axis=0, method="blelloch"))]),
        (f"segmented_scan f32 u8{suffix}", 9 * n,
         [("gpuscan", "gsd.segmented_scan(x, heads)", lambda: gsd.segmented_scan(x, heads))]),
        (f"histogram f32 {BINS} bins{suffix}", 4 * n,
         [("gpuscan", "gsd.histogram(x, 256, range=(0, 1))",
           lambda: gsd.histogram(x, BINS, range=RANGE)[0]),
          ("dask", "da.histogram(x, 256, range=(0, 1))",
           lambda: da.histogram(x, BINS, range=RANGE)[0])]),
        (f"split f32 u8{suffix}", 9 * n,
         [("gpuscan", "gsd.split(x, flags)", lambda: gsd.split(x, flags)),
          ("dask", "m = flags != 0; da.concatenate([x[m], x[~m]])",
           lambda: (lambda m: da.concatenate([x[m], x[~m]]))(flags != 0))]),
        (f"no-op task per chunk{suffix}", 0,
         [("gpuscan", "x.map_blocks(lambda b: b[:0])",
           lambda: x.map_blocks(_nothing, chunks=((0,) * chunks,), dtype=x.dtype))]),
    ]
    if h.args.cases:
        cases = [c for c in cases if c[0].startswith(tuple(h.args.cases.split(",")))]
    times = {}
    for case, nbytes, impls in cases:
        impls = [i for i in impls if theirs or i[0] == "gpuscan"]
        timed = [(lib, call, lambda make=make: runner.run(make())) for lib, call, make in impls]
        rows = h.host_case(case, n, inputs=[], impls=timed, nbytes=nbytes or None)
        ours = [r for r in rows if r.impl == "gpuscan"][0]
        dask_rows = [r for r in rows if r.impl == "dask"]
        if nbytes:      # the no-op row has no scaling to report
            times[case.replace(suffix, "")] = ours.ms
        outside = {lib: where_the_time_goes(h, runner, case, lib, make())
                   for lib, _, make in impls}
        h.goal(f"{case}: time per task outside compute, ms (gsd)", n,
               f"{outside['gpuscan']:.2f}")
        if nbytes == 0:
            h.goal(f"{case}: per task, ms (wall x slots / tasks)", n,
                   f"{ours.ms * runner.slots / chunks:.2f}")
        elif dask_rows and ours.ms and dask_rows[0].ms:
            ratio = dask_rows[0].ms / ours.ms
            h.goal(f"{case}: dask.array's time / gsd's", n, f"{ratio:.2f}x", ">= 1.00x",
                   "ok" if ratio >= 1 else "MISS")
        elif theirs and not dask_rows:
            h.goal(f"{case}: dask.array's time / gsd's", n, "-", "Dask has no such function",
                   "n/a")
    for method in ("sequential", "blelloch"):
        check_last_chunk(h, da, x, gsd.scan(x, method=method),
                         f"{label}gsd.scan(method={method!r})")
    return times


def host_rates(h, client, k, n, t_ms):
    """--host-chunks: the scan's rate per GPU (its bytes over PCIe: the input twice, for the
    totals and the scan, and the result once) beside each worker's pinned host-to-device
    copy rate (CuPy, where installed)."""
    h.goal(f"scan f32, {k} GPU(s): GB/s per GPU over PCIe (12 bytes a value)", n,
           f"{12 * n / (t_ms * 1e-3) / k / 1e9:.1f}")

    def pinned_rate():
        import time

        import cupy

        nbytes = 1 << 30
        src = np.frombuffer(cupy.cuda.alloc_pinned_memory(nbytes), np.uint8, nbytes)
        dst = cupy.empty(nbytes, np.uint8)
        dst.set(src)
        cupy.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            dst.set(src)
        cupy.cuda.runtime.deviceSynchronize()
        return 5 * nbytes / (time.perf_counter() - t0) / 1e9

    try:
        rates = client.run(pinned_rate)
    except ImportError:
        h.note("pinned copy rate: CuPy is not installed on the workers")
        return
    h.note(f"pinned host-to-device copy, 1 GiB: " + ", ".join(
        f"{w}: {r:.1f} GB/s" for w, r in sorted(rates.items())))


def suite(h):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    import gpuscan
    import gpuscan.dask as gsd

    args = h.args
    mode = data_mode(args)
    load = "load average %.1f %.1f %.1f" % os.getloadavg()
    h.note(f"at the start: {load} on {os.cpu_count()} cores (other work on this machine shows "
           "here)")
    big = args.scaling or mode == "host"
    log2 = args.log2 or (33 if mode == "host" else 31 if args.scaling else 30)
    chunks = args.chunks or (128 if big else 64)
    if args.quick:
        log2 = min(log2, 24)
    n = 1 << log2
    cupy = mode == "cupy"
    if mode in ("cupy", "host"):
        devices = args.gpus.split(",") if args.gpus else gsd._visible_gpus()
        counts = [1, len(devices)] if args.scaling and len(devices) > 1 else [len(devices)]
        per = {}
        for k in counts:
            with gsd.gpu_cluster(devices[:k]) as cluster, Client(cluster) as client:
                client.wait_for_workers(k)
                backends = set(client.run(gpuscan.backend).values())
                h.note(f"{k} GPU worker(s), CUDA_VISIBLE_DEVICES {devices[:k]}, backends "
                       f"{sorted(backends)}, {mode} chunks of {fmt_n(n // chunks)} values")
                if backends != {"cuda"}:
                    h.fail(f"GPU workers run the {sorted(backends)} backend")
                check_small(h, da, gsd, chunks, cupy)
                # NumPy chunks: dask.array would run them on the workers' CPU threads, not
                # the comparison here (the GPUs' scaling is).
                per[k] = run_cases(h, Runner(client, k), da, gsd, n, chunks, cupy,
                                   f"{k} GPU: ", theirs=cupy)
                if mode == "host" and per[k].get("scan f32"):
                    host_rates(h, client, k, n, per[k]["scan f32"])
        if len(counts) == 2:
            k = counts[1]
            for case, t1 in per[1].items():
                tk = per[k].get(case)
                if t1 and tk:
                    h.goal(f"{case}: scaling efficiency 1 -> {k} GPUs, T1 / ({k} T{k})", n,
                           f"{t1 / (k * tk):.2f}")
    elif mode == "threads":
        with dask.config.set(scheduler="threads", num_workers=args.workers):
            h.note(f"threaded scheduler: {args.workers} threads, gpuscan backend "
                   f"{gpuscan.backend()}; {os.cpu_count()} cores")
            check_small(h, da, gsd, chunks, False)
            run_cases(h, Runner(None, args.workers), da, gsd, n, chunks, False)
    else:
        cores = os.cpu_count() or 1
        threads = max(1, cores // args.workers)
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          memory_limit=0, dashboard_address=None,
                          env={"GPUSCAN_NUM_THREADS": str(threads)}) as cluster, \
                Client(cluster) as client:
            backends = set(client.run(gpuscan.backend).values())
            h.note(f"LocalCluster: {args.workers} worker processes x 1 thread, "
                   f"GPUSCAN_NUM_THREADS={threads} each, backends {sorted(backends)}; "
                   f"{cores} cores")
            check_small(h, da, gsd, chunks, False)
            run_cases(h, Runner(client, args.workers), da, gsd, n, chunks, False)
    h.note("at the end: load average %.1f %.1f %.1f" % os.getloadavg())
    h.note("Dask has no segmented scan and no split; its split row is two boolean indexings "
           "and a concatenation.  Wall-clock times include Dask's scheduling.  "
           "dask.array.cumsum is called with axis=0: with axis=None, method='blelloch' "
           "rechunks even a 1-D array into chunks of `npartitions` values "
           "(x.flatten().rechunk(chunks=x.npartitions) in dask/array/reductions.py), 2^18 "
           "chunks and a graph of 1.5 million tasks at 2^24.")


if __name__ == "__main__":
    parser = make_parser()
    argv = sys.argv[1:]
    sys.exit(harness.run_main(TITLE, suite, argv, default_tag=TAGS[data_mode(parser.parse_args(argv))],
                              device=False, parser=parser))
