"""benchmarks/bench_dask.py - gpuscan.dask against dask.array on the same Dask cluster.

    python benchmarks/bench_dask.py [--log2 30] [--chunks 64] [--workers 2] [--out DIR]
    python benchmarks/bench_dask.py --cupy [--gpus 0,1] [--log2 31 --chunks 128] [--scaling]

One float32 array of 2^log2 values in `chunks` equal chunks, made on the workers (random,
uniform in [0, 1)) and kept there (persisted), with uint8 segment heads set with probability
2^-10 (segments of about a thousand) and uint8 split flags set with probability 1/2.  Each case
is one lazy call computed on the cluster and kept there (persist + wait, then released), timed
wall-clock from the call to the last chunk in place (harness.host_case: gpuscan/_timing.py's
policy, a warm-up, then the median of at least 3):
  gsd.scan (sequential and blelloch carries)   vs  dask.array.cumsum (the same two methods)
  gsd.histogram (256 bins, range given)        vs  dask.array.histogram
  gsd.split                                    vs  dask.array.concatenate([x[m], x[~m]])
  gsd.segmented_scan                           (Dask has no segmented scan)
Bytes per call count what a call must read and write once (scan 8n, segmented scan 9n, split
9n, histogram 4n).  Before timing, the same calls on int32 data of 2^22 values in the same
number of chunks are checked against gpuscan/_slow.py's NumPy twins (bit for bit), and at full
size the last chunk of each float scan is checked against a float64 prefix (the contract's
bound for the whole length), so a carry lost anywhere in the chain shows.

CPU mode (default): a LocalCluster of --workers processes of one thread each; each worker's
gpuscan gets GPUSCAN_NUM_THREADS = cores / workers, so gpuscan and NumPy use the same cores.
GPU mode (--cupy): CuPy chunks on gsd.gpu_cluster() workers, one per GPU (--gpus, default all);
the chunks are made on the GPUs and never leave them (dask.array.cumsum then runs CuPy's
cumsum).  --scaling runs the GPU cases on one GPU, then on all of them, and reports the scaling
efficiency T(1 GPU) / (N * T(N GPUs)) of each case.  Timing rules, columns and the result file:
harness.py (the file's tag is "dask", or "dask-cupy").
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


def make_parser():
    p = harness.make_parser(TITLE)
    p.add_argument("--log2", type=int, default=None,
                   help="log2 of the array's length (default 30; 31 with --scaling)")
    p.add_argument("--chunks", type=int, default=None,
                   help="number of equal chunks (default 64; 128 with --scaling)")
    p.add_argument("--workers", type=int, default=2, help="CPU mode: worker processes")
    p.add_argument("--cupy", action="store_true", help="CuPy chunks on one worker per GPU")
    p.add_argument("--gpus", default=None,
                   help="GPU mode: comma-separated device ids (default: every GPU)")
    p.add_argument("--scaling", action="store_true",
                   help="GPU mode: the cases on one GPU, then on all (scaling efficiency)")
    return p


# ---- data, made on the workers ------------------------------------------------------------------
def _random_block(size, seed, kind, cupy, block_id=None):
    """One chunk, from its own seed: float32 values, head flags or split flags."""
    if cupy:
        import cupy as xp
    else:
        xp = np
    rng = xp.random.default_rng(seed * 100003 + block_id[0])
    if kind == "values":
        return rng.random(size, dtype=np.float32)
    if kind == "ints":
        return rng.integers(-1000, 1000, size, dtype=np.int32)
    p = HEAD_P if kind == "heads" else SPLIT_P
    return (rng.random(size, dtype=np.float32) < p).astype(np.uint8)


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


def _same(block):
    return block


def _alias(a):
    """a under a new name (its chunks as they are, where they are)."""
    import uuid

    return a.map_blocks(_same, name=f"alias-{uuid.uuid4().hex}", dtype=a.dtype, meta=a._meta)


def host(a):
    """A computed result as NumPy (CuPy results are copied back)."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


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
def run_cases(h, client, da, gsd, n, chunks, cupy, label=""):
    """Time every case on this client's cluster; returns {case: gpuscan ms}."""
    from distributed import wait

    seed = 12345
    x = random_array(da, n, chunks, "values", seed, cupy).persist()
    heads = random_array(da, n, chunks, "heads", seed + 1, cupy).persist()
    flags = random_array(da, n, chunks, "split", seed + 2, cupy).persist()
    wait([x, heads, flags])
    harness.log(f"{label}data in place: 2^{int(math.log2(n))} float32 in {chunks} chunks")

    def timed(make):
        # The same call on the same arrays makes the same keys, which the scheduler may still
        # hold from the call before: each call gets the inputs under new names (one task per
        # chunk that returns the chunk as it is, on its worker), so its keys are new.
        def call():
            r = client.persist(make(*(_alias(a) for a in (x, heads, flags))))
            wait(r)
            del r
        return call

    suffix = f" ({label.strip().rstrip(':')})" if label else ""
    cases = [
        (f"scan f32{suffix}", 8 * n,
         [("gpuscan", "gsd.scan(x)", lambda x, hd, f: gsd.scan(x)),
          ("dask", "da.cumsum(x, axis=0)", lambda x, hd, f: da.cumsum(x, axis=0))]),
        (f"scan blelloch f32{suffix}", 8 * n,
         [("gpuscan", "gsd.scan(x, method='blelloch')",
           lambda x, hd, f: gsd.scan(x, method="blelloch")),
          ("dask", "da.cumsum(x, axis=0, method='blelloch')",
           lambda x, hd, f: da.cumsum(x, axis=0, method="blelloch"))]),
        (f"segmented_scan f32 u8{suffix}", 9 * n,
         [("gpuscan", "gsd.segmented_scan(x, heads)", lambda x, hd, f: gsd.segmented_scan(x, hd))]),
        (f"histogram f32 {BINS} bins{suffix}", 4 * n,
         [("gpuscan", "gsd.histogram(x, 256, range=(0, 1))",
           lambda x, hd, f: gsd.histogram(x, BINS, range=RANGE)[0]),
          ("dask", "da.histogram(x, 256, range=(0, 1))",
           lambda x, hd, f: da.histogram(x, BINS, range=RANGE)[0])]),
        (f"split f32 u8{suffix}", 9 * n,
         [("gpuscan", "gsd.split(x, flags)", lambda x, hd, f: gsd.split(x, f)),
          ("dask", "m = flags != 0; da.concatenate([x[m], x[~m]])",
           lambda x, hd, f: (lambda m: da.concatenate([x[m], x[~m]]))(f != 0))]),
    ]
    times = {}
    for case, nbytes, impls in cases:
        impls = [(lib, call, timed(make)) for lib, call, make in impls]
        rows = h.host_case(case, n, inputs=[], impls=impls, nbytes=nbytes)
        ours = [r for r in rows if r.impl == "gpuscan"][0]
        theirs = [r for r in rows if r.impl == "dask"]
        times[case.replace(suffix, "")] = ours.ms
        if theirs and ours.ms and theirs[0].ms:
            h.goal(f"{case}: dask.array's time / gsd's", n, f"{theirs[0].ms / ours.ms:.2f}x")
        elif not theirs:
            h.goal(f"{case}: dask.array's time / gsd's", n, "-", "Dask has no such function",
                   "n/a")
    for method in ("sequential", "blelloch"):
        check_last_chunk(h, da, x, gsd.scan(x, method=method),
                         f"{label}gsd.scan(method={method!r})")
    for a in (x, heads, flags):
        client.cancel(a)
    return times


def suite(h):
    import dask.array as da
    from distributed import Client, LocalCluster

    import gpuscan
    import gpuscan.dask as gsd

    args = h.args
    load = "load average %.1f %.1f %.1f" % os.getloadavg()
    h.note(f"at the start: {load} on {os.cpu_count()} cores (other work on this machine shows "
           "here)")
    log2 = args.log2 or (31 if args.scaling else 30)
    chunks = args.chunks or (128 if args.scaling else 64)
    if args.quick:
        log2 = min(log2, 24)
    n = 1 << log2
    if args.cupy:
        devices = args.gpus.split(",") if args.gpus else gsd._visible_gpus()
        counts = [1, len(devices)] if args.scaling and len(devices) > 1 else [len(devices)]
        per = {}
        for k in counts:
            with gsd.gpu_cluster(devices[:k]) as cluster, Client(cluster) as client:
                client.wait_for_workers(k)
                backends = set(client.run(gpuscan.backend).values())
                h.note(f"{k} GPU worker(s), CUDA_VISIBLE_DEVICES {devices[:k]}, backends "
                       f"{sorted(backends)}")
                if backends != {"cuda"}:
                    h.fail(f"GPU workers run the {sorted(backends)} backend")
                check_small(h, da, gsd, chunks, True)
                per[k] = run_cases(h, client, da, gsd, n, chunks, True, f"{k} GPU: ")
        if len(counts) == 2:
            k = counts[1]
            for case, t1 in per[1].items():
                tk = per[k].get(case)
                if t1 and tk:
                    h.goal(f"{case}: scaling efficiency 1 -> {k} GPUs, T1 / ({k} T{k})", n,
                           f"{t1 / (k * tk):.2f}")
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
            run_cases(h, client, da, gsd, n, chunks, False)
    h.note("at the end: load average %.1f %.1f %.1f" % os.getloadavg())
    h.note("Dask has no segmented scan and no split; its split row is two boolean indexings "
           "and a concatenation.  Wall-clock times include Dask's scheduling (a few hundred "
           "tasks per call) and one task per input chunk that renames it (so that every call's "
           "keys are new).  dask.array.cumsum is called with axis=0: with axis=None, "
           "method='blelloch' rechunks even a 1-D array into chunks of `npartitions` values "
           "(x.flatten().rechunk(chunks=x.npartitions) in dask/array/reductions.py), 2^18 "
           "chunks and a graph of 1.5 million tasks at 2^24.")


if __name__ == "__main__":
    parser = make_parser()
    argv = sys.argv[1:]
    tag = "dask-cupy" if "--cupy" in argv else "dask"
    sys.exit(harness.run_main(TITLE, suite, argv, default_tag=tag, device=False,
                              parser=parser))
