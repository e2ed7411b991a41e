"""``python -m gpuscan`` (gpuscan/__main__.py): it names its backend once and says why, every
row (the teaching variants', under their own heading, included) runs on the active backend and
agrees with NumPy, and a wrong answer makes it fail."""
import numpy as np

import gpuscan
from gpuscan import __main__ as demo
from gpuscan import _gpuscan
from conftest import run_python

TEACHING_ROWS = [("scan", "int32 add, hillis_steele"), ("scan", "float32 add, hillis_steele"),
                 ("scan", "int32 add, exclusive, blelloch"), ("scan", "float32 add, blelloch"),
                 ("segmented_scan", "int32 add, exclusive, blelloch"),
                 ("segmented_scan", "int32 max, blelloch")]


def row_index(lines, primitive, label):
    rows = [i for i, ln in enumerate(lines) if ln.startswith(f"{primitive:<15} {label:<33} ")]
    assert len(rows) == 1, (label, rows)
    return rows[0]


def test_demo_all_rows_agree(capsys):
    assert demo.main(["-n", "5000", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    backend_lines = [ln for ln in lines if "backend" in ln and ":" in ln]
    assert len(backend_lines) == 1 and backend_lines[0].startswith(f"backend: {gpuscan.backend()}")
    if gpuscan.backend() == "cpu":
        assert ", because " in backend_lines[0]
    heading = demo.TEACHING_HEADING.splitlines()[0]
    assert heading in lines
    first_teaching = lines.index(heading)
    assert row_index(lines, "scan", "float32 add") < first_teaching
    for primitive, label in TEACHING_ROWS:
        i = row_index(lines, primitive, label)
        assert i > first_teaching
        assert lines[i].split()[len(label.split()) + 1] == "ok", lines[i]
    assert "all cases agree with NumPy" in lines


def test_demo_teaching_rows_call_the_variants(monkeypatch, capsys):
    # A variant that answers wrongly must make its row, and the demo, fail.
    real = gpuscan.scan

    def broken(a, *args, algorithm="auto", **kw):
        out = real(a, *args, algorithm=algorithm, **kw)
        return out + 1 if algorithm == "hillis_steele" else out

    monkeypatch.setattr(gpuscan, "scan", broken)
    assert demo.main(["-n", "2000", "--repeat", "1"]) == 1
    out = capsys.readouterr().out
    failed = [ln for ln in out.splitlines() if " FAIL " in ln]
    assert failed and all("hillis_steele" in ln for ln in failed)
    assert np.array_equal(real(np.arange(4)), [0, 1, 3, 6])


def test_build_note_matches_the_build():
    note = _gpuscan._build_note()
    if _gpuscan._built_with_cuda():
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
    if _gpuscan._built_with_cuda():
        assert line == (f"backend: cpu, because GPUSCAN_BACKEND=cpu (this build has "
                        f"{_gpuscan._build_note()})")
    else:  # the build's reason comes first: without kernels CUDA was never a choice
        assert line.startswith(f"backend: cpu, because this build has {_gpuscan._build_note()}")


def test_backend_reason_in_process(backend):
    reason = _gpuscan._backend_reason()
    if backend == "cuda":
        assert reason is None
    else:
        assert isinstance(reason, str) and len(reason) > 10
