"""``python -m gpuscan`` (gpuscan/__main__.py): it names its backend once and says why; every
public primitive has a row; every row runs on the active backend, agrees with NumPy, fits 100
columns and has its own gpuscan and NumPy times, taken by the benchmarks' host policy
(gpuscan/_timing.py); a wrong answer fails its row and the demo; the columns are explained; and
``--help`` is plain text.  The policy itself is tested at the end."""
import re

import numpy as np
import pytest

import gpuscan
from gpuscan import __main__ as demo
from gpuscan import _gpuscan, _timing
from conftest import run_python

N = 10_000   # the demo's smallest sample
# gpuscan.__all__'s names that are not primitives (types, helpers, the teaching tracer).
NOT_PRIMITIVES = {"DeviceArray", "GpuscanError", "__version__", "backend", "device_info",
                  "free_cached_memory", "to_device", "trace", "dask",
                  "Operator", "CompileError"}  # an op of the primitives, and its error
TEACHING_ROWS = [("scan", "int32 add, hillis_steele"), ("scan", "float32 add, hillis_steele"),
                 ("scan", "int32 add excl, blelloch"), ("scan", "float32 add, blelloch"),
                 ("segmented_scan", "int32 add excl, blelloch"),
                 ("segmented_scan", "int32 max, blelloch")]
ROW = re.compile(r"^(\S+) +(.+?) +(ok|FAIL) +(\S+) +(\S+) +(\S+)  (.*)$")


class FakeTiming:
    """time_calls replaced: each call calls every callable once and returns made-up, distinct
    medians (gpuscan's k, NumPy's 1000 + k for the k-th comparison), so a printed figure shows
    which comparison it came from."""

    def __init__(self):
        self.calls = 0

    def __call__(self, *fns):
        assert len(fns) == 2, "a row compares gpuscan's call with NumPy's"
        for fn in fns:
            fn()
        self.calls += 1
        k = self.calls
        return [_timing.Timing(float(k), float(k), 0.0, 3),
                _timing.Timing(1000.0 + k, 1000.0 + k, 0.0, 3)]


@pytest.fixture
def fake_timing(monkeypatch):
    fake = FakeTiming()
    monkeypatch.setattr(demo._timing, "time_calls", fake)
    return fake


def rows_of(lines):
    """(primitive, label, check, gpuscan ms, NumPy ms, speed-up, note) of each table row."""
    return [m.groups() for m in map(ROW.match, lines) if m]


def primitives():
    return sorted(name for name in gpuscan.__all__ if name not in NOT_PRIMITIVES)


def test_demo_all_rows_agree(capsys):
    # The real timing policy: the run a user sees, at the smallest sample.
    assert demo.main(["-n", str(N)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    too_wide = [ln for ln in lines if len(ln) > demo.WIDTH]
    assert not too_wide, too_wide
    backend_lines = [ln for ln in lines if ln.startswith("backend")]
    assert len(backend_lines) == 1 and backend_lines[0].startswith(f"backend: {gpuscan.backend()}")
    if gpuscan.backend() == "cpu":
        assert ", because " in backend_lines[0]
    rows = rows_of(lines)
    assert len(rows) == len(demo.main_rows()) + len(demo.teaching_rows())
    assert all(r[2] == "ok" for r in rows), [r for r in rows if r[2] != "ok"]
    assert all(float(r[3]) > 0 and float(r[4]) > 0 for r in rows), rows
    heading = demo.TEACHING_HEADING.splitlines()[0]
    assert heading in lines
    first_teaching = lines.index(heading)
    where = {(m.group(1), m.group(2)): i for i, m in enumerate(map(ROW.match, lines)) if m}
    assert where[("scan", "float32 add")] < first_teaching
    for key in TEACHING_ROWS:
        assert where[key] > first_teaching, key
    assert "all cases agree with NumPy" in lines


def test_every_public_primitive_has_a_row():
    names = primitives()
    assert "reduceat" in names and "linear_recurrence" in names and "segmented_reduce" in names
    have = {row.primitive for row in demo.main_rows()}
    assert set(names) <= have, sorted(set(names) - have)
    assert have <= set(names), sorted(have - set(names))   # no row for something not public


def test_rows_fit_and_each_has_its_own_numpy_time(capsys, fake_timing):
    assert demo.main(["-n", str(N)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(ln) for ln in lines) <= demo.WIDTH
    rows = rows_of(lines)
    assert len(rows) == fake_timing.calls == len(demo.main_rows()) + len(demo.teaching_rows())
    # Row k shows the k-th comparison's figures: its own timing, gpuscan's and NumPy's together.
    for k, r in enumerate(rows, start=1):
        assert (float(r[3]), float(r[4])) == (k, 1000 + k), r
        assert r[5] == demo.fmt_speedup((1000 + k) / k), r


def test_the_legend_explains_every_column(capsys, fake_timing):
    demo.main(["-n", str(N)])
    out = capsys.readouterr().out
    terms = " ".join(term for term, _ in demo.legend(N))
    for name, _, _ in demo.COLUMNS:
        if name not in ("primitive", "case"):
            assert name in terms, name
    legend = out[out.index("Columns:"):]
    for words in ("of the bound", "speed-up", "above 1, gpuscan is faster", "(log2 n + 2) * eps",
                  "gpuscan/_timing.py", "gpuscan/_slow.py"):
        assert words in legend, words


def perturbed(result):
    """result with one element changed (the first of a tuple: split's values, histogram's
    counts); a NumPy scalar stays a NumPy scalar."""
    if isinstance(result, tuple):
        return (perturbed(result[0]),) + result[1:]
    arr = np.array(result, copy=True)
    flat = arr.reshape(-1)
    if flat.size:
        i = flat.size // 2
        flat[i] = ~flat[i] if arr.dtype == bool else flat[i] + 1
    return arr[()] if arr.ndim == 0 else arr


@pytest.mark.parametrize("name", primitives())
def test_a_wrong_answer_fails_its_rows(name, monkeypatch, fake_timing):
    real = getattr(gpuscan, name)
    monkeypatch.setattr(gpuscan, name, lambda *a, **k: perturbed(real(*a, **k)))
    data = demo.Data(N, 0)
    rows = [row for row in demo.main_rows() + demo.teaching_rows() if row.primitive == name]
    assert rows
    for row in rows:
        outcome = demo.run_row(data, row)
        assert not outcome.ok, (row.label, outcome.note)


def test_a_raising_call_fails_its_row_and_the_demo(monkeypatch, capsys, fake_timing):
    def broken(*args, **kwargs):
        raise RuntimeError("a message long enough to be printed under its row " * 3)

    monkeypatch.setattr(gpuscan, "bincount", broken)
    assert demo.main(["-n", str(N)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert max(len(ln) for ln in lines) <= demo.WIDTH
    failed = [r for r in rows_of(lines) if r[2] == "FAIL"]
    assert failed and all(r[0] == "bincount" for r in failed)
    assert any(ln.startswith("    RuntimeError: a message long enough") for ln in lines)


def test_demo_teaching_rows_call_the_variants(monkeypatch, capsys, fake_timing):
    # A variant that answers wrongly must make its row, and the demo, fail.
    real = gpuscan.scan

    def broken(a, *args, algorithm="auto", **kw):
        out = real(a, *args, algorithm=algorithm, **kw)
        return out + 1 if algorithm == "hillis_steele" else out

    monkeypatch.setattr(gpuscan, "scan", broken)
    assert demo.main(["-n", str(N)]) == 1
    failed = [r for r in rows_of(capsys.readouterr().out.splitlines()) if r[2] == "FAIL"]
    assert failed and all("hillis_steele" in r[1] for r in failed)
    assert np.array_equal(real(np.arange(4)), [0, 1, 3, 6])


def test_help_is_plain_text():
    proc = run_python("import sys; from gpuscan import __main__ as d; d.main(['--help'])")
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    assert text.startswith("usage: python -m gpuscan")
    for rst in ("``", ":func:", ":class:", ".. ", "**"):
        assert rst not in text, rst
    assert "-n N" in text and "--seed" in text and "Exit status" in text


def test_build_note_matches_the_build():
    note = _gpuscan._config()["build_note"]
    if _gpuscan._config()["built_with_cuda"]:
        assert note.startswith("CUDA kernels for sm_") and "PTX compute_" in note, note
    else:
        assert note.startswith("no CUDA kernels: ") and len(note) > len("no CUDA kernels: "), note


DEMO_HEAD = r"""
import sys
from gpuscan import __main__ as demo, _gpuscan
print(repr(_gpuscan._backend_reason()))
print(demo.backend_line())
"""


def test_demo_says_why_the_backend_is_the_cpu():
    proc = run_python(DEMO_HEAD, env={"GPUSCAN_BACKEND": "cpu"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    reason, line = proc.stdout.splitlines()[:2]
    assert reason == repr("GPUSCAN_BACKEND=cpu")
    config = _gpuscan._config()
    if config["built_with_cuda"]:
        assert line == (f"backend: cpu, because GPUSCAN_BACKEND=cpu (this build has "
                        f"{config['build_note']})")
    else:  # the build's reason comes first: without kernels CUDA was never a choice
        assert line.startswith(f"backend: cpu, because this build has {config['build_note']}")


def test_backend_reason_in_process(backend):
    reason = _gpuscan._backend_reason()
    if backend == "cuda":
        assert reason is None
    else:
        assert isinstance(reason, str) and len(reason) > 10


# ---- the timing policy (gpuscan/_timing.py), shared with benchmarks/harness.py -------------
def test_time_calls_takes_turns_and_counts(monkeypatch):
    order = []
    clock = iter(range(10**6))
    monkeypatch.setattr(_timing.time, "perf_counter", lambda: next(clock) * 1e-3)  # 1 ms a tick
    fns = [lambda k=k: order.append(k) for k in range(3)]
    timings = _timing.time_calls(*fns)
    reps = timings[0].reps
    assert all(t.reps == reps for t in timings)
    assert _timing.MIN_REPS <= reps <= _timing.MAX_REPS
    assert order[:6] == [0, 1, 2, 0, 1, 2]            # the warm-up round, then the sizing round
    timed = order[6:]
    assert len(timed) == 3 * reps
    for r in range(reps):                              # the order rotates by one a repetition
        assert timed[3 * r:3 * r + 3] == [(r + j) % 3 for j in range(3)]
    assert all(t.ms == pytest.approx(1.0) and t.min_ms == pytest.approx(1.0) for t in timings)


def test_time_calls_slow_calls_get_the_minimum(monkeypatch):
    calls = []
    now = [0.0]

    def slow():
        calls.append(1)
        now[0] += _timing.SLOW_ROUND_S + 0.1         # one call longer than a whole round

    monkeypatch.setattr(_timing.time, "perf_counter", lambda: now[0])
    (t,) = _timing.time_calls(slow)
    assert t.reps == _timing.MIN_REPS and len(calls) == 1 + _timing.MIN_REPS   # no sizing round


def test_repetitions_follow_the_target():
    assert _timing.repetitions(10.0) == _timing.MIN_REPS
    assert _timing.repetitions(1e-9) == _timing.MAX_REPS
    assert _timing.repetitions(_timing.TARGET_S / 10) == 10
