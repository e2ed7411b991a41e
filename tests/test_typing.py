"""The typed API: gpuscan ships py.typed and stubs for its C extension (gpuscan/_gpuscan.pyi), and
mypy's stubtest finds them consistent with the built module under test (every function,
parameter, default and class; a parameter added in C and not in the stub fails here), with the
package's Python type-checked on the way.  Skipped, with the reason, where mypy is not installed
(the `test` extra installs it)."""
import os
import subprocess
import sys
import sysconfig

import pytest

import gpuscan
from conftest import HERE, PACKAGE_PARENT

PACKAGE = os.path.dirname(os.path.abspath(gpuscan.__file__))


def test_the_package_is_typed():
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
    assert os.path.isfile(os.path.join(PACKAGE, "_gpuscan.pyi"))


def test_stubtest(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    env = dict(os.environ, MYPY_CACHE_DIR=str(tmp_path / "mypy_cache"))
    env.pop("PYTHONPATH", None)
    installed = {os.path.realpath(p) for p in (sysconfig.get_path("purelib"),
                                               sysconfig.get_path("platlib"))}
    if os.path.realpath(PACKAGE_PARENT) not in installed:
        # A clone (editable or in-place build): mypy cannot see an editable install's import
        # hook, so both mypy and the import read the package from its folder.
        env["MYPYPATH"] = env["PYTHONPATH"] = PACKAGE_PARENT
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "gpuscan",
         "--allowlist", os.path.join(HERE, "stubtest_allowlist.txt")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert "Success" in proc.stdout, proc.stdout
