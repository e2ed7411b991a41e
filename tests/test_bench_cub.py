"""The CUB comparison's bookkeeping (benchmarks/bench_cub.py), without a GPU: cub_driver's output
read or refused, CUB's times becoming rows whose "vs cub" ratio and goals come out right, the
checks of gpuscan's results (on the host, by gpuscan/_slow.py's twins) passing right answers and
catching wrong ones, the harness's host cases timed by the package's policy, and the driver
built when nvcc is there.  The device timing itself needs a GPU: python
benchmarks/bench_cub.py.  Skipped, with the reason, without the source tree's benchmarks/."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gpuscan
from conftest import ROOT

BENCH = os.path.join(ROOT, "benchmarks")
if not os.path.isfile(os.path.join(BENCH, "bench_cub.py")):
    pytest.skip(f"no benchmarks/bench_cub.py in {ROOT}: the tests run without the source tree",
                allow_module_level=True)
sys.path.insert(0, BENCH)

import bench_cub  # noqa: E402
import bench_hist  # noqa: E402
import bench_scan  # noqa: E402
import bench_segreduce  # noqa: E402
import bench_split  # noqa: E402
import harness  # noqa: E402
from bench_cub import DriverError, parse_driver  # noqa: E402

LOGS = [16, 20]
DEVICE = ("device sms=132 l2_bytes=62914560 cc=9.0 cub=300001 runtime=13000 driver=13000 "
          "name=NVIDIA H200")


def driver_output(drop=(), extra=()):
    """What cub_driver prints for LOGS, with the lines starting with one of `drop` left out;
    every case at 2^k takes (k + position) / 1000 ms."""
    lines = [DEVICE]
    for k in LOGS:
        for i, case in enumerate(bench_cub.DRIVER_CASES):
            if k == min(LOGS):
                lines.append(f"check case={case} log2n={k} ok")
            lines.append(f"case={case} log2n={k} ms={(k + i) / 1000:.6f} "
                         f"min_ms={(k + i) / 1100:.6f} spread=0.0{i} reps={100 + i} sets={7 + k}")
    for i, case in enumerate(bench_cub.CUB_ROW_CASES):   # the fixed-shape cases, once each
        lines.append(f"check case={case} log2n=24 ok")
        lines.append(f"case={case} log2n=24 ms={(30 + i) / 1000:.6f} min_ms={(30 + i) / 1100:.6f} "
                     f"spread=0.01 reps=10 sets=1")
    lines = [ln for ln in lines if not any(ln.startswith(d) for d in drop)]
    return "\n".join(lines + list(extra)) + "\n"


def test_parse_reads_every_case():
    run = parse_driver(driver_output(), LOGS)
    assert run.device["name"] == "NVIDIA H200"
    assert run.device["sms"] == "132" and run.device["l2_bytes"] == "62914560"
    assert len(run.times) == len(LOGS) * len(bench_cub.DRIVER_CASES) + len(bench_cub.CUB_ROW_CASES)
    i = bench_cub.DRIVER_CASES.index("split_i32")
    assert run.times[("split_i32", 20)] == dict(ms=pytest.approx((20 + i) / 1000),
                                                min_ms=pytest.approx((20 + i) / 1100, abs=1e-6),
                                                spread=pytest.approx(i / 100),
                                                reps=100 + i, sets=27)
    assert run.checked == ({(c, 16) for c in bench_cub.DRIVER_CASES} |
                           {(c, 24) for c in bench_cub.CUB_ROW_CASES})
    # without the row cases (a quick run) their absence is no error
    drop = ("check case=segsort", "case=segsort", "check case=segradix", "case=segradix")
    run = parse_driver(driver_output(drop=drop), LOGS, rows=False)
    assert not any(c in bench_cub.CUB_ROW_CASES for c, _ in run.times)


@pytest.mark.parametrize("drop, extra, message", [
    ((), ["FAIL case=split_i32 log2n=16 partition differs first at 3"], "wrong result"),
    (("case=hist4096_f32 log2n=20",), (), "hist4096_f32 2^20"),
    (("check case=reduce_i32",), (), "check of reduce_i32 at 2^16"),
    (("device",), (), "before the device line"),
    ((), ["case=memcpy log2n=16 ms=1 min_ms=1 reps=1 sets=1"], "timed twice"),
    ((), ["case=memcpy log2n=24 ms=fast min_ms=1 reps=1 sets=1"], "cannot read"),
    ((), ["case=memcpy log2n=24 ms=1 reps=1 sets=1"], "cannot read"),
    ((), ["check case=memcpy log2n=24 failed"], "check not ok"),
    ((), ["warning: something"], "unexpected line"),
    (("case=segradix_f32_1048576x16",), (), "segradix_f32_1048576x16"),
    (("check case=segsort_f32_16384x16384",), (), "check of segsort_f32_16384x16384"),
], ids=["fail", "missing_time", "missing_check", "no_device", "twice", "bad_number",
        "missing_field", "check_not_ok", "stray_line", "missing_row_case", "missing_row_check"])
def test_parse_refuses_incomplete_or_wrong_output(drop, extra, message):
    with pytest.raises(DriverError, match=re.escape(message)):
        parse_driver(driver_output(drop, extra), LOGS)


def test_parse_refuses_no_output():
    with pytest.raises(DriverError, match="no device line"):
        parse_driver("", LOGS)


def test_driver_takes_the_harness_policy():
    """Every option bench_cub passes is one cub_driver.cu parses."""
    with open(bench_cub.DRIVER_SRC) as f:
        src = f.read()
    for key in bench_cub.DRIVER_POLICY:
        assert f'"--{key}"' in src, key


@pytest.fixture
def cpu_harness(tmp_path):
    args = harness.parse_args("test", ["--out", str(tmp_path)])
    return harness.Harness(args, "test", device=False)


def test_cub_rows_give_vs_cub_and_goals(cpu_harness):
    h = cpu_harness
    run = parse_driver(driver_output(), LOGS)
    n = 2**20
    cub_ms = run.times[("scan_i32", 20)]["ms"]
    for ms in (cub_ms / 1.25, cub_ms * 1.25):   # gpuscan faster, then slower
        rows = [harness.Row(case=bench_cub.SCAN_I32, impl="gpuscan", n=n, nbytes=8 * n, ms=ms)]
        rows += [harness.Row(case=bench_cub.SCAN_I32, n=n, nbytes=8 * n, kind="external", **e)
                 for e in bench_cub.cub_external(run, "scan_i32", 20)]
        h.rows = []
        h._finish_case(rows, n, None)   # what device_case does with its rows and external=
        gs, cub = h.rows
        assert cub.impl == "cub" and cub.kind == "external" and cub.reps == run.times[
            ("scan_i32", 20)]["reps"]
        assert cub.label == bench_cub.CUB_CASES["scan_i32"][1]
        assert gs.ratios["cub"] == pytest.approx(cub_ms / ms)
        assert f"{cub_ms / ms:.2f}x" in harness.format_row(gs)
        h.goal_vs_at(bench_cub.SCAN_I32, "cub", n)
    assert [g.status for g in h.goals] == ["ok", "MISS"]
    assert [g.value for g in h.goals] == ["1.25x", "0.80x"]
    h.goal_vs_at(bench_cub.SCAN_I32, "cub", 2**24)   # not measured
    assert h.goals[-1].status == "n/a" and h.goals[-1].n == "2^24"


def test_split_has_cub_and_cub_with_its_count_read_back(cpu_harness):
    """split's case gets both CUB partitions: "cub" (its count left on the device, the goal) and
    "cub+sync" (the count copied to the host and waited for, as gpuscan.split returns it)."""
    h = cpu_harness
    run = parse_driver(driver_output(), LOGS)
    n = 2**20
    ext = [e for d in ("split_i32", "split_i32_host") for e in bench_cub.cub_external(run, d, 20)]
    assert [e["impl"] for e in ext] == ["cub", "cub+sync"]
    assert ext[0]["ms"] < ext[1]["ms"]
    ms = ext[0]["ms"] * 1.01   # between the two: slower than CUB, faster than CUB + sync
    rows = [harness.Row(case=bench_cub.SPLIT, impl="gpuscan", n=n, nbytes=9 * n, ms=ms)]
    rows += [harness.Row(case=bench_cub.SPLIT, n=n, nbytes=9 * n, kind="external", **e)
             for e in ext]
    h._finish_case(rows, n, None)
    h.goal_vs_at(bench_cub.SPLIT, "cub", n)
    h.goal_vs_at(bench_cub.SPLIT, "cub+sync", n, info=True)
    assert [g.status for g in h.goals] == ["MISS", "info"]
    assert h.goals[1].figure == f"{bench_cub.SPLIT} vs cub+sync"
    assert h.goals[1].value == f"{ext[1]['ms'] / ms:.2f}x"


def wrong(result):
    """result with its middle element changed."""
    bad = np.array(result, copy=True)
    bad.reshape(-1)[bad.size // 2] += 1
    return bad


def test_the_checks_pass_right_answers_and_catch_wrong_ones():
    """The checks bench_cub hands the harness (through h.on_host, on NumPy copies)."""
    rng = np.random.default_rng(5)
    n = 3 * 2**16 + 7
    x_i = rng.integers(-1000, 1000, n).astype(np.int32)
    x_f = rng.random(n, dtype=np.float32)
    heads = (np.arange(n) % bench_cub.SEG_LEN == 0).astype(np.uint8)
    flags = (rng.random(n) < 0.5).astype(np.uint8)
    cases = [
        (bench_scan.host_check(bench_scan.CASE[bench_cub.SCAN_I32]),
         gpuscan.scan(x_i, dtype=np.int32), (x_i,)),
        (bench_scan.host_check(bench_scan.CASE[bench_cub.SCAN_F32]), gpuscan.scan(x_f), (x_f,)),
        (bench_segreduce.check_seg, gpuscan.segmented_scan(x_i, heads, dtype=np.int32),
         (x_i, heads)),
        (bench_segreduce.check_sum(), np.asarray(gpuscan.reduce(x_f)), (x_f,)),
        (bench_segreduce.check_sum(), np.asarray(gpuscan.reduce(x_i, dtype=np.int32)),
         (x_i,)),
        (bench_hist.check_hist(4096, 0.0, 1.0), gpuscan.histogram(x_f, 4096, range=(0, 1))[0],
         (x_f,)),
        (bench_split.check(False), gpuscan.split(x_i, flags)[0], (x_i, flags)),
    ]
    for check, result, inputs in cases:
        assert check(result, *inputs) is None
        assert check(wrong(result), *inputs), check


def test_sort_checks_pass_right_answers_and_catch_wrong_ones():
    """bench_cub's sort checks (on NumPy copies of the results): sort bit for bit, argsort a
    stable ordering permutation (without a host argsort), rows sorted one by one."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 50, 3001).astype(np.uint32)
    s = np.sort(x)
    assert bench_cub.check_sort(s, x) is None
    assert bench_cub.check_sort(wrong(s), x)
    idx = np.argsort(x, kind="stable")
    assert bench_cub.check_argsort(idx, x) is None
    unstable = idx.copy()
    first = np.flatnonzero(x[idx][1:] == x[idx][:-1])[0]   # two equal keys: swap them
    unstable[[first, first + 1]] = unstable[[first + 1, first]]
    assert "input order" in bench_cub.check_argsort(unstable, x)
    assert bench_cub.check_argsort(np.zeros_like(idx), x) == "not a permutation"
    assert bench_cub.check_argsort(idx[::-1].copy(), x).startswith("not sorted")
    r = rng.standard_normal(4 * 16).astype(np.float32)
    good = np.sort(r.reshape(4, 16), axis=-1).ravel()
    assert bench_cub.check_rows(4, 16)(good, r) is None
    assert bench_cub.check_rows(4, 16)(np.sort(r), r)


def test_sort_cases_name_every_driver_case():
    """Every sort case of the driver maps to a gpuscan case, and the rows' log2n is the
    driver's (floor of log2 of the keys)."""
    for dt in bench_cub.SORT_KEYS:
        assert f"sortkeys_{bench_cub.driver_key(dt)}" in bench_cub.DRIVER_CASES
    for dt in bench_cub.ARGSORT_KEYS:
        assert f"sortpairs_{bench_cub.driver_key(dt)}" in bench_cub.DRIVER_CASES
    assert len(bench_cub.CUB_ROW_CASES) == 2 * len(bench_cub.ROW_SHAPES)
    assert bench_cub.row_log2(2**16, 2**10) == 26 and bench_cub.row_log2(3, 5) == 3
    with open(bench_cub.DRIVER_SRC) as f:
        src = f.read()
    assert '"--no-rows"' in src


def test_host_cases_time_the_libraries_in_turn(cpu_harness, monkeypatch):
    h = cpu_harness
    x = np.arange(1000, dtype=np.int32)
    calls = []

    def lib(name, fn):
        def call(a):
            calls.append(name)
            return fn(a)
        return call

    def broken(a):
        raise ValueError("no such call")

    rows = h.host_case("scan", x.size, [x], [
        ("gpuscan", "gpuscan.scan(x)", lib("gpuscan", gpuscan.scan)),
        ("numpy", "np.cumsum(x)", lib("numpy", np.cumsum)),
        ("cupy", "a call that fails", broken),
    ], check=lambda r, a: None if np.array_equal(r, np.cumsum(a)) else "differs",
        check_libs=("gpuscan", "numpy"))
    gs, nps, bad = rows
    assert gs.check == nps.check == "ok" and not gs.error and not nps.error
    assert bad.error.startswith("ValueError") and bad.ms is None
    assert gs.reps == nps.reps >= harness._timing.MIN_REPS
    assert gs.ratios["numpy"] == pytest.approx(nps.ms / gs.ms)
    assert "cupy" not in gs.ratios
    # The two libraries' calls alternate once timed (gpuscan/_timing.py's turns).
    timed = calls[2:]
    assert len(timed) == 2 * (gs.reps + 2) and timed.count("gpuscan") == timed.count("numpy")
    assert all(timed[i] != timed[i + 1] for i in range(0, len(timed), 2))
    assert not h.failures
    h.host_case("scan", x.size, [x], [("gpuscan", "wrong", lambda a: np.cumsum(a) + 1)],
                check=lambda r, a: None if np.array_equal(r, np.cumsum(a)) else "differs")
    assert h.failures and "differs" in h.failures[-1]


@pytest.mark.slow
def test_driver_builds(tmp_path):
    """cub_driver.cu compiles against this toolkit's CUB (it runs only on a GPU)."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        pytest.skip("no nvcc: the CUB driver is built on the GPU machine")
    done = subprocess.run([nvcc, "-O3", "-std=c++17", "-arch=sm_90", bench_cub.DRIVER_SRC,
                           "-o", str(tmp_path / "cub_driver")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
