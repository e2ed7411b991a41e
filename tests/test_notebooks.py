"""Every teaching notebook runs top to bottom without raising (CI: on the CPU backend).

Executed with nbclient in a fresh kernel (tools/run_notebooks.py's `run`, without saving), on the
backend the environment selects.  Skipped, with the reason, only where nbclient, nbformat,
ipykernel or matplotlib is not installed (the `test` extra installs them).
"""
import glob
import os
import sys

import pytest

from conftest import ROOT

for _mod in ("nbclient", "nbformat", "ipykernel", "matplotlib"):
    pytest.importorskip(_mod, reason=f"{_mod} is not installed (pip install -e '.[test]')")

sys.path.insert(0, os.path.join(ROOT, "tools"))
import run_notebooks  # noqa: E402

NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def test_notebooks_exist():
    names = [os.path.basename(p) for p in NOTEBOOKS]
    for want in ("01_prefix_sum", "02_segmented_scan", "03_reduce_and_histogram",
                 "04_split_and_sort", "05_performance", "06_beyond_one_gpu",
                 "07_applications"):
        assert want + ".ipynb" in names


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs(path):
    nb = run_notebooks.run(path, timeout=600, save=False)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    assert any("backend:" in o.get("text", "") for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", [])), "the notebook must print its backend"
