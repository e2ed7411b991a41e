"""setup.py's choice of CUDA targets: the GPUs visible at build time, GPUSCAN_CUDA_ARCHS, or the
CPU backend alone with the reason.  nvidia-smi and nvcc are stand-in scripts, so every branch
runs here without a GPU.  Skipped, with the reason, without the source tree's setup.py."""
import importlib.util
import os
import stat

import pytest

from conftest import ROOT

SETUP_PY = os.path.join(ROOT, "setup.py")
if not os.path.isfile(SETUP_PY):
    pytest.skip(f"no setup.py in {ROOT}: the tests run without the source tree",
                allow_module_level=True)
pytest.importorskip("setuptools", reason="setuptools is not installed (setup.py imports it)")


@pytest.fixture(scope="module")
def setup_py():
    spec = importlib.util.spec_from_file_location("gpuscan_setup", SETUP_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the helpers; setup() runs only as __main__
    return module


def fake_tool(folder, name, stdout, code=0):
    path = folder / name
    quoted = stdout.replace("'", "'\\''")
    path.write_text(f"#!/bin/sh\nprintf '{quoted}'\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A PATH holding only the stand-ins written into it, and a fake nvcc that knows sm_80 to
    sm_120."""
    monkeypatch.setenv("PATH", str(tmp_path))
    nvcc = fake_tool(tmp_path, "nvcc", "compute_75\\ncompute_80\\ncompute_90\\ncompute_120\\n")
    return tmp_path, nvcc


def test_visible_archs(setup_py):
    assert setup_py.visible_archs("9.0\n8.6\n9.0\n") == [86, 90]
    assert setup_py.visible_archs("12.0\n") == [120]
    assert setup_py.visible_archs("") == []
    assert setup_py.visible_archs("No devices were found\n") == []


def test_gencode_adds_ptx_of_the_highest(setup_py):
    assert setup_py.gencode_flags([80, 90]) == [
        "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90"]


def test_no_gpu_visible_builds_the_cpu_backend(setup_py, tools):
    folder, nvcc = tools
    archs, note = setup_py.cuda_plan(None, nvcc)  # no nvidia-smi on PATH
    assert archs == [] and note == "no GPU was visible at build time (nvidia-smi: not found)"
    fake_tool(folder, "nvidia-smi", "NVIDIA-SMI has failed because it couldn't communicate "
              "with the NVIDIA driver.\\n", code=9)
    archs, note = setup_py.cuda_plan("", nvcc)
    assert archs == [] and note.startswith("no GPU was visible at build time (nvidia-smi: "
                                           "NVIDIA-SMI has failed")


def test_visible_gpus_pick_the_targets(setup_py, tools):
    folder, nvcc = tools
    fake_tool(folder, "nvidia-smi", "9.0\\n9.0\\n8.0\\n")
    archs, note = setup_py.cuda_plan(None, nvcc)
    assert archs == [80, 90] and note == "the GPUs visible at build time (sm_80, sm_90)"


def test_gpus_nvcc_or_the_kernels_cannot_serve(setup_py, tools):
    folder, nvcc = tools
    fake_tool(folder, "nvidia-smi", "13.0\\n7.5\\n")  # newer than nvcc knows; older than sm_80
    archs, note = setup_py.cuda_plan(None, nvcc)
    assert archs == [120]
    assert "sm_75 is older than the kernels need (sm_80)" in note
    assert "nvcc does not know sm_130: compiling sm_120 and its PTX" in note
    fake_tool(folder, "nvidia-smi", "7.0\\n")
    archs, note = setup_py.cuda_plan(None, nvcc)
    assert archs == [] and note.startswith("no visible GPU can run the kernels")


def test_gpuscan_cuda_archs_decides(setup_py, tools):
    folder, nvcc = tools
    fake_tool(folder, "nvidia-smi", "9.0\\n")
    assert setup_py.cuda_plan("none", nvcc) == ([], "GPUSCAN_CUDA_ARCHS=none")
    assert setup_py.cuda_plan("NONE", None) == ([], "GPUSCAN_CUDA_ARCHS=none")
    assert setup_py.cuda_plan("90;80", nvcc) == ([80, 90], "GPUSCAN_CUDA_ARCHS=90;80")
    archs, note = setup_py.cuda_plan("80;90", None)
    assert archs == [] and note.startswith("nvcc was not found")
    for bad in ("sm_90", "75", "90;x"):
        with pytest.raises(SystemExit, match="GPUSCAN_CUDA_ARCHS must be 'none' or SM numbers"):
            setup_py.cuda_plan(bad, nvcc)
