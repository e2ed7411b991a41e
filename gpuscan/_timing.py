"""How a call is timed on the host: the one policy of the demo and of the benchmarks' host cases.

Level: Python package (private).  ``python -m gpuscan`` times every row with :func:`time_calls`,
and ``benchmarks/harness.py`` (its host cases: NumPy in, NumPy out) and
``benchmarks/bench_cpu.py`` import it, so a speed-up the demo prints is measured the way the
benchmarks measure theirs.  (The benchmarks' device cases time with CUDA events instead, in
``harness.py``: that needs CuPy, which the package does not.)

The policy, for one or several callables compared with each other (gpuscan's call and NumPy's):

1. a warm-up round: one call of each (module loads, allocator caches, first touch of memory);
2. a sizing round: one more call of each, timed together; it is skipped when the warm-up round
   alone took more than ``SLOW_ROUND_S`` (then ``MIN_REPS`` repetitions follow);
3. repetitions for about ``TARGET_S`` seconds of all the callables together, at least
   ``MIN_REPS`` and at most ``MAX_REPS``; in each the callables take turns, the order rotating
   by one from one repetition to the next, so that a change of load on a shared host falls on
   each of them alike.

Each callable's repetitions give its median time per call (the figure reported and compared),
its fastest call and the spread (p90 - p10) / median.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

# Half a second of calls per comparison: a pair of 10^7-element calls (a few to tens of ms
# each) gets 5-50 repetitions, and a comparison of slow calls still ends within seconds.
TARGET_S = 0.5
# At least 3 repetitions, so that one descheduled call cannot be the median.
MIN_REPS = 3
# At most 400: a call of a few microseconds (10^3 elements) then takes well under a second.
MAX_REPS = 400
# A warm-up round slower than this (a call of seconds: NumPy at 2^28, a Dask cluster) is not
# followed by a sizing round: the repetitions are MIN_REPS.
SLOW_ROUND_S = 2 * TARGET_S


@dataclass(frozen=True)
class Timing:
    """One callable's repetitions: median and fastest call (ms), spread, count."""

    ms: float
    min_ms: float
    spread: float | None
    reps: int


def stats(sorted_ms: Sequence[float]) -> tuple[float, float, float | None]:
    """(median, fastest, (p90 - p10) / median) of ascending times."""
    med = statistics.median(sorted_ms)
    lo = sorted_ms[int(0.1 * (len(sorted_ms) - 1))]
    hi = sorted_ms[int(math.ceil(0.9 * (len(sorted_ms) - 1)))]
    return med, sorted_ms[0], ((hi - lo) / med if med > 0 else None)


def _round(fns: Sequence[Callable[[], object]]) -> float:
    t0 = time.perf_counter()
    for fn in fns:
        fn()
    return time.perf_counter() - t0


def repetitions(round_s: float) -> int:
    """How many repetitions a round of round_s seconds gets."""
    return min(MAX_REPS, max(MIN_REPS, math.ceil(TARGET_S / max(round_s, 1e-7))))


def time_calls(*fns: Callable[[], object]) -> list[Timing]:
    """Time the callables by the policy above; one Timing per callable, in their order.

    An exception from a call propagates (the caller reports it): time only what ran once.
    """
    if not fns:
        return []
    warm = _round(fns)
    reps = MIN_REPS if warm > SLOW_ROUND_S else repetitions(_round(fns))
    times: list[list[float]] = [[] for _ in fns]
    for r in range(reps):
        for k in range(len(fns)):
            i = (k + r) % len(fns)
            t0 = time.perf_counter()
            fns[i]()
            times[i].append((time.perf_counter() - t0) * 1e3)
    out = []
    for ts in times:
        ts.sort()
        med, fastest, spread = stats(ts)
        out.append(Timing(med, fastest, spread, len(ts)))
    return out
