"""tools/profile/timeline.py - the device's timeline of gpuscan calls: every kernel, copy and memset of a
few calls on device arrays, with the idle time before each (the gap the host or the stream's
ordering left), from CUPTI's activity records through torch.profiler.

    python3 tools/profile/timeline.py [--n LOG2] [--calls K] [WORK ...]

WORK is any of: segmented_reduce, split, scan, segmented_scan, reduce, histogram, reduceat
(default: segmented_reduce).
Needs a CUDA machine with PyTorch and CuPy.  Prints, per work, one line per device activity of
the last call (start relative to the call's first activity, the gap before it, its duration)
and the call's span, busy time and idle time, with the host's CUDA runtime calls between them;
gaps are what a host sync, a copy engine's hop or a late launch costs between the kernels.
"""
import argparse
import json
import os
import tempfile

import numpy as np


def works(cp, gpuscan, n, rng):
    a = cp.asarray(rng.uniform(-1, 1, n).astype(np.float32))
    f = cp.asarray((rng.random(n) < 1e-3).astype(np.uint8))
    half = cp.asarray((rng.random(n) < 0.5).astype(np.uint8))
    idx = cp.asarray(np.unique(rng.integers(0, n, max(n // 1000, 1))))
    return {
        "segmented_reduce": lambda: gpuscan.segmented_reduce(a, f),
        "split": lambda: gpuscan.split(a, half),
        "scan": lambda: gpuscan.scan(a),
        "segmented_scan": lambda: gpuscan.segmented_scan(a, f),
        "histogram": lambda: gpuscan.histogram(a, 4096, range=(-1, 1)),
        "reduce": lambda: gpuscan.reduce(a),
        "reduceat": lambda: gpuscan.reduceat(a, idx),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=28, help="log2 of the values (default 28)")
    ap.add_argument("--calls", type=int, default=3, help="calls profiled (the last is printed)")
    ap.add_argument("work", nargs="*", default=["segmented_reduce"])
    args = ap.parse_args()

    import cupy as cp
    import torch  # noqa: F401  (CUPTI through torch.profiler)
    from torch.profiler import ProfilerActivity, profile

    import gpuscan

    table = works(cp, gpuscan, 1 << args.n, np.random.default_rng(0))
    for name in args.work:
        call = table[name]
        for _ in range(3):
            call()
        cp.cuda.runtime.deviceSynchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.calls):
                call()
                cp.cuda.runtime.deviceSynchronize()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            with open(path) as fh:
                events = json.load(fh)["traceEvents"]
        acts = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                      key=lambda e: e["ts"])
        # The last call's activities: after the longest idle stretch (the sync between calls).
        gaps = [acts[i]["ts"] - (acts[i - 1]["ts"] + acts[i - 1]["dur"]) for i in range(1, len(acts))]
        first = 1 + max(range(len(gaps)), key=lambda i: gaps[i]) if gaps else 0
        last = acts[first:]
        t0, end, busy = last[0]["ts"], last[0]["ts"], 0.0
        stop = max(e["ts"] + e["dur"] for e in last)
        # The host's runtime calls of the same call (from the previous call's last activity on).
        since = acts[first - 1]["ts"] + acts[first - 1]["dur"] if first > 0 else t0
        host = [e for e in events if e.get("cat") == "cuda_runtime" and since <= e["ts"] <= stop]
        print(f"== {name}, 2^{args.n} float32 values on the device (us; host: the runtime "
              f"calls, from the end of the call before)")
        print(f"{'start':>9} {'gap':>7} {'dur':>8}  activity")
        for e in sorted(last + host, key=lambda e: e["ts"]):
            if e.get("cat") == "cuda_runtime":
                print(f"{e['ts'] - t0:9.1f} {'':>7} {e['dur']:8.1f}    host: {e['name'][:60]}")
                continue
            gap = max(e["ts"] - end, 0.0) if e is not last[0] else 0.0
            print(f"{e['ts'] - t0:9.1f} {gap:7.1f} {e['dur']:8.1f}  {e['cat']}: {e['name'][:72]}")
            end = max(end, e["ts"] + e["dur"])
            busy += e["dur"]
        span = end - t0
        print(f"span {span:.1f} us, busy {busy:.1f} us, idle {span - busy:.1f} us\n")


if __name__ == "__main__":
    main()
