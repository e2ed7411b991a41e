"""``python -m gpuscan`` (gpuscan/__main__.py): every row of the demo, the teaching variants'
included, runs on the active backend and agrees with NumPy; a wrong answer makes it fail."""
import numpy as np

import gpuscan
from gpuscan import __main__ as demo

TEACHING_ROWS = [("scan", "int32 add, hillis_steele"), ("scan", "float32 add, hillis_steele"),
                 ("scan", "int32 add, exclusive, blelloch"), ("scan", "float32 add, blelloch"),
                 ("segmented_scan", "int32 add, exclusive, blelloch"),
                 ("segmented_scan", "int32 max, blelloch")]


def test_demo_all_rows_agree(capsys):
    assert demo.main(["-n", "5000", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"backend: {gpuscan.backend()}" in lines
    for primitive, label in TEACHING_ROWS:
        row = [ln for ln in lines if ln.startswith(f"{primitive:<15} {label:<33} ")]
        assert len(row) == 1 and row[0].split()[len(label.split()) + 1] == "ok", (label, row)
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
