"""The package as a user meets it: `gpuscan.dask` is an attribute imported on first use (PEP 562)
and listed by dir() where Dask is installed, while `import gpuscan` never imports Dask; and a
type checker run from outside the source tree sees the stubs' types of the gpuscan installed in
this environment (an editable install included: pyproject.toml's package-dir makes it a path in
a .pth file, which mypy reads, rather than an import hook, which it cannot run).

Each check runs in a fresh interpreter (conftest.run_python), since this one has long imported
Dask through other tests.
"""
import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import PACKAGE_PARENT, run_python


def python(code):
    proc = run_python(textwrap.dedent(code))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_importing_gpuscan_does_not_import_dask():
    out = python("""
        import sys
        import gpuscan
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")))
    """)
    assert out.strip() == "[]"


def test_gpuscan_dask_is_imported_on_first_use():
    pytest.importorskip("dask.array", reason="Dask is not installed (pip install -e '.[dask]')")
    out = python("""
        import sys
        import gpuscan
        assert "dask" in dir(gpuscan)
        assert "gpuscan.dask" not in sys.modules
        first = gpuscan.dask
        import gpuscan.dask as again
        assert first is again and first.__name__ == "gpuscan.dask"
        assert callable(gpuscan.dask.scan) and "dask.array" in sys.modules
        print("ok")
    """)
    assert out.strip() == "ok"


def test_without_dask_the_attribute_says_what_to_install():
    out = python("""
        import sys
        sys.modules["dask"] = None  # as if Dask were not installed: `import dask` fails
        import gpuscan
        assert "dask" not in dir(gpuscan)
        try:
            gpuscan.dask
        except ImportError as exc:
            print(exc)
        else:
            raise AssertionError("gpuscan.dask imported without Dask")
    """)
    assert "pip install" in out and "gpuscan[dask]" in out


def test_other_missing_attributes_are_attribute_errors():
    import gpuscan

    with pytest.raises(AttributeError, match="no attribute 'scna'"):
        gpuscan.scna  # noqa: B018
    assert not hasattr(gpuscan, "dask_")


def test_mypy_sees_the_stubs_from_outside_the_tree(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    try:
        importlib.metadata.distribution("gpuscan")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("gpuscan is not installed in this environment (only on PYTHONPATH), so no "
                    "type checker can find it without being told where")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    check = subprocess.run([sys.executable, "-c", "import gpuscan; print(gpuscan.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    if check.returncode != 0 or not check.stdout.startswith(PACKAGE_PARENT):
        pytest.skip(f"the gpuscan under test ({PACKAGE_PARENT}) is not the one this "
                    f"environment imports from outside the tree: {check.stdout.strip()}")
    (tmp_path / "uses_gpuscan.py").write_text(textwrap.dedent("""
        import numpy as np

        import gpuscan

        reveal_type(gpuscan.backend())
        reveal_type(gpuscan.scan(np.arange(3)))
        reveal_type(gpuscan.trace.scan([1, 2]).work)
    """))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir",
                           str(tmp_path / "mypy_cache"), "uses_gpuscan.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "import-not-found" not in out and "Literal['cuda']" in out, out
    assert "numpy.ndarray" in out and re.search(r'Revealed type is "(builtins\.)?int"', out), out
