"""setup.py's choice of CUDA targets: the GPUs visible at build time, GPUSCAN_CUDA_ARCHS, or the
CPU backend alone with the reason.  nvidia-smi and nvcc are stand-in scripts, so every branch
runs here without a GPU.  Skipped, with the reason, without the source tree's setup.py."""
import importlib.util
import os
import stat
import subprocess

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


def test_header_closure_follows_quoted_includes_and_named_agents(setup_py, tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "agent").mkdir()
    (tmp_path / "inc" / "a.h").write_text('#include "b.h"\n')
    (tmp_path / "inc" / "b.h").write_text("#include <stdint.h>\n")
    (tmp_path / "agent" / "x.cuh").write_text('#include "local.cuh"\n')
    (tmp_path / "agent" / "local.cuh").write_text("")
    (tmp_path / "unused.cuh").write_text("")
    (tmp_path / "stamp.cuh").write_text("#include GS_AGENT\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "a.h"\n#define GS_AGENT "agent/x.cuh"\n #  include "stamp.cuh"\n')
    every = sorted(str(p) for p in tmp_path.rglob("*.*h"))
    found = setup_py.header_closure(str(src), [str(tmp_path), str(tmp_path / "inc")], every)
    assert [os.path.relpath(p, tmp_path) for p in found] == sorted(
        ["inc/a.h", "inc/b.h", "agent/x.cuh", "agent/local.cuh", "stamp.cuh"])
    # A quoted header it cannot find: every header, so no dependency is missed.
    src.write_text('#include "a.h"\n#include "nowhere.cuh"\n')
    assert setup_py.header_closure(str(src), [str(tmp_path / "inc")], every) == every


def test_header_closure_holds_what_nvcc_reads(setup_py):
    """Each kernel source's key covers every project header the compiler itself reads."""
    nvcc = setup_py.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc was not found: the compiler's own dependency list cannot be taken")
    kernels, include = os.path.join(ROOT, "kernels"), os.path.join(ROOT, "include")
    every = [os.path.join(ROOT, h) for h in setup_py.tree_files("kernels", (".cuh", ".h"))
             + setup_py.tree_files("include", (".h",))]
    for name in setup_py.tree_files("kernels", (".cu",)):
        src = os.path.join(ROOT, name)
        deps = subprocess.run([nvcc, "-M", src, "-std=c++17", f"-I{kernels}", f"-I{include}",
                               "-DGS_HAVE_CUDA", "-arch=sm_90"], capture_output=True, text=True,
                              check=True).stdout.replace("\\\n", " ").split()[1:]
        ours = {os.path.realpath(p) for p in deps if os.path.realpath(p).startswith(
            (os.path.realpath(kernels) + os.sep, os.path.realpath(include) + os.sep))}
        found = {os.path.realpath(p)
                 for p in setup_py.header_closure(src, [kernels, include], every)}
        assert ours - {os.path.realpath(src)} <= found, name
