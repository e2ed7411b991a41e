"""Every teaching notebook runs top to bottom without raising (CI: on the CPU backend), and
tools/run_notebooks.py leaves the committed outputs alone unless asked (--save).

Executed with nbclient in a fresh kernel (tools/run_notebooks.py's `run`, without saving), on the
backend the environment selects.  Skipped, with the reason, where nbclient, nbformat, ipykernel
or matplotlib is not installed (the `test` extra installs them), or where the tests run without
the source tree's notebooks/ and tools/.
"""
import glob
import os
import sys

import pytest

from conftest import ROOT

for _mod in ("nbclient", "nbformat", "ipykernel", "matplotlib"):
    pytest.importorskip(_mod, reason=f"{_mod} is not installed (pip install -e '.[test]')")
if not os.path.isfile(os.path.join(ROOT, "tools", "run_notebooks.py")):
    pytest.skip(f"no notebooks/ and tools/ in {ROOT}: the tests run without the source tree",
                allow_module_level=True)

sys.path.insert(0, os.path.join(ROOT, "tools"))
import nbformat  # noqa: E402
import run_notebooks  # noqa: E402

NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def test_notebooks_exist():
    names = [os.path.basename(p) for p in NOTEBOOKS]
    for want in ("01_prefix_sum", "02_segmented_scan", "03_reduce_and_histogram",
                 "04_split_and_sort", "05_performance", "06_beyond_one_gpu",
                 "07_applications", "08_sort", "09_any_operator"):
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


def test_run_notebooks_saves_only_when_asked(tmp_path):
    # The committed notebooks carry GPU outputs: a plain run must not write over them.
    path = tmp_path / "tiny.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import gpuscan\nprint('backend:', gpuscan.backend())")]
    nbformat.write(nb, str(path))
    before = path.read_bytes()
    with pytest.raises(SystemExit) as done:
        run_notebooks.main([str(path)])
    assert done.value.code == 0
    assert path.read_bytes() == before
    with pytest.raises(SystemExit) as done:
        run_notebooks.main([str(path), "--save"])
    assert done.value.code == 0
    saved = nbformat.read(str(path), as_version=4)
    text = "".join(o.get("text", "") for o in saved.cells[0].outputs)
    assert text.startswith("backend: ")
