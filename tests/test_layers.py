"""The extension's levels, read from its sources: every #include points down (module -> ops ->
binding -> core -> the backends -> host -> include/gpuscan; kernels: dispatch -> agent -> device
-> block -> warp -> thread), the two backends never include each other, and neither they nor
host/ know Python.  A call can only reach a function through a header it includes (no .c file
declares a function of another file itself), so the includes are the dependency graph."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Rank of each folder: a file may include headers of its own folder or of a lower rank.  cpu/ and
# cuda/ share a rank and may not include each other.
CSRC_RANK = {"module": 6, "ops": 5, "binding": 4, "core": 3, "cuda": 2, "cpu": 2, "host": 1,
             "gpuscan": 0}
KERNEL_RANK = {"dispatch": 7, "": 6, "agent": 5, "device": 4, "block": 3, "warp": 2,
               "thread": 1, "gpuscan": 0}


def sources(folder, suffixes):
    return sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in suffixes)


def folder_of(header):
    """The folder a quoted include names: "ops/ops.h" -> ops, "stamp.cuh" -> ''."""
    parts = header.split("/")
    return parts[0] if len(parts) > 1 else ""


def edges(folder, suffixes):
    for path in sources(folder, suffixes):
        rel = path.relative_to(ROOT / folder)
        own = rel.parts[0] if len(rel.parts) > 1 else ""
        for header in INCLUDE.findall(path.read_text()):
            yield path.relative_to(ROOT), own, header


@pytest.mark.parametrize("path,own,header",
                         list(edges("csrc", {".c", ".h"})) + list(edges("include", {".h"})),
                         ids=lambda x: str(x))
def test_csrc_includes_point_down(path, own, header):
    own = "gpuscan" if str(path).startswith("include") else own
    to = folder_of(header)
    assert to in CSRC_RANK, f"{path} includes {header}, outside the extension's levels"
    if to == own:
        return
    assert CSRC_RANK[to] < CSRC_RANK[own], f"{path} ({own}) includes {header} ({to}): upward"


@pytest.mark.parametrize("path,own,header", list(edges("kernels", {".cu", ".cuh", ".h"})),
                         ids=lambda x: str(x))
def test_kernel_includes_point_down(path, own, header):
    to = folder_of(header)
    assert to in KERNEL_RANK, f"{path} includes {header}, outside the kernels' levels"
    if to == own or (own == "dispatch" and to == "dispatch"):
        return
    assert KERNEL_RANK[to] < KERNEL_RANK[own], f"{path} ({own}) includes {header} ({to}): upward"


@pytest.mark.parametrize("folder", ["csrc/cuda", "csrc/cpu", "csrc/host"])
def test_backends_know_no_python(folder):
    for path in sources(folder, {".c", ".h"}):
        text = path.read_text()
        assert not re.search(r"Python\.h|PyObject|Py_BEGIN|PyErr_", text), path


def test_no_file_declares_anothers_functions():
    # An `extern` function prototype in a .c file would be a call the includes do not show.
    for path in sources("csrc", {".c"}):
        for line in path.read_text().splitlines():
            assert not re.match(r"\s*extern\s+[\w\s\*]+\(", line), f"{path}: {line}"


def test_the_levels_are_the_folders():
    # Every folder of csrc/ and kernels/ has a rank above: a new folder must be placed.
    assert {p.name for p in (ROOT / "csrc").iterdir() if p.is_dir()} == set(CSRC_RANK) - {"gpuscan"}
    kernel_dirs = {p.name for p in (ROOT / "kernels").iterdir() if p.is_dir()}
    assert kernel_dirs == set(KERNEL_RANK) - {"", "gpuscan"}
