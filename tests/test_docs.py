"""The documentation says what the code does: the names it gives exist, the README stays a front
door, the environment variables it lists are the ones the code reads, and one documented install
runs every notebook.

- docs/architecture.md, section "The path of one call": every function written there as
  `name()` (inline code ending in "()") is defined somewhere under csrc/, kernels/, include/ or
  gpuscan/, every file it names exists, and each row of its table names a function defined in
  the file beside it.  A rename or a move in the C code that the page does not follow fails
  here.
- README.md: at most 200 lines, the two commands verbatim (.ci/run greps the test command too),
  every link into docs/ resolves, and every page of docs/ is in the toctree.
- docs/install.md's table of environment variables is exactly the GPUSCAN_* variables that the
  extension's C sources and setup.py read.
- The `notebooks` extra installs what every notebook imports unconditionally.

These read the source tree beside tests/ and skip, with the reason, where it is not there (the
suite run against an installed gpuscan from an unpacked sdist has it; a bare tests/ folder
does not).
"""
import importlib.metadata
import json
import os
import re
import sys

import pytest

from conftest import ROOT

DOCS = os.path.join(ROOT, "docs")
if not os.path.isfile(os.path.join(DOCS, "conf.py")):
    pytest.skip(f"no docs/ in {ROOT}: the tests run without the source tree",
                allow_module_level=True)

SOURCE_DIRS = ("csrc", "kernels", "include", "gpuscan")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".py")
README_COMMANDS = ['python3 -m pip install -e . && python3 -m gpuscan',
                   'python3 -m pip install -e ".[test]" && python3 -m pytest -ra']


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


# ---- the path of one call ---------------------------------------------------------------------

def sources():
    """{path relative to ROOT: text} of every source file under SOURCE_DIRS."""
    out = {}
    for top in SOURCE_DIRS:
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if name.endswith(SOURCE_EXT):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as f:
                        out[os.path.relpath(path, ROOT)] = f.read()
    return out


KEYWORDS = re.compile(r"\b(if|while|for|switch|return|else|sizeof|case)\b")


def defines(text, name):
    """True when `text` defines function `name`: C or CUDA (`... name(params) {`, the name
    possibly stamped as `GS_FN(name)(params) {`), a function-like macro, or a Python def."""
    if re.search(rf"^\s*def {re.escape(name)}\(", text, re.M):
        return True
    if re.search(rf"^\s*#\s*define {re.escape(name)}\(", text, re.M):
        return True
    for m in re.finditer(rf"\b{re.escape(name)}\b\)?\s*\(", text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        prefix = text[line_start:m.start()]
        if prefix.endswith("GS_FN("):
            prefix = prefix[:-len("GS_FN(")]
        if "(" in prefix or "=" in prefix or KEYWORDS.search(prefix) or "//" in prefix:
            continue  # a call, an assignment or a comment, not a definition
        depth, i = 1, m.end()
        while i < len(text) and depth:  # the parameter list
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if text[i] in ";{}":
                break
            i += 1
        if depth == 0 and re.match(r"\s*\{", text[i:]):
            return True
    return False


def path_section():
    text = read("docs", "architecture.md")
    m = re.search(r"^## The path of one call\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, "docs/architecture.md has no section '## The path of one call'"
    return m.group(1)


def named_functions(section):
    return sorted(set(re.findall(r"`([A-Za-z_]\w*)\(\)`", section)))


def named_files(section):
    return sorted(set(re.findall(r"`((?:csrc|kernels|include|gpuscan)/[\w/.]+\.\w+)`", section)))


def table_rows(section):
    """(function, file) of each row of the section's table."""
    return re.findall(r"^\|\s*\d+\s*\|\s*`(\w+)\(\)`\s*\|\s*`([\w/.]+)`\s*\|", section, re.M)


def missing_functions(names, srcs):
    return [n for n in names if not any(defines(text, n) for text in srcs.values())]


def test_the_path_of_one_call_names_functions_that_exist():
    section = path_section()
    names = named_functions(section)
    assert len(names) >= 30, names  # the section names the whole path, not a handful
    missing = missing_functions(names, sources())
    assert not missing, f"docs/architecture.md names functions defined nowhere: {missing}"


def test_the_path_of_one_call_names_files_that_exist():
    files = named_files(path_section())
    assert len(files) >= 15, files
    missing = [f for f in files if not os.path.isfile(os.path.join(ROOT, f))]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_each_step_is_in_the_file_it_names():
    rows = table_rows(path_section())
    assert len(rows) >= 25, rows
    wrong = [(fn, path) for fn, path in rows
             if not os.path.isfile(os.path.join(ROOT, path)) or not defines(read(path), fn)]
    assert not wrong, f"steps whose function is not defined in the file named: {wrong}"


def test_the_name_check_can_fail():
    srcs = sources()
    # A call, a declaration and a comment are not definitions; a made-up name is missing.
    assert missing_functions(["gs_scan_that_does_not_exist"], srcs)
    assert defines("int f(int x)\n{\n    return g(x);\n}\n", "f")
    assert not defines("int f(int x)\n{\n    return g(x);\n}\n", "g")
    assert not defines("int g(int x);\n", "g")
    assert not defines("    if (g(x)) {\n", "g")
    assert defines("static __device__ void GS_FN(h)(int a,\n    int b)\n{\n}\n", "h")
    assert defines("static T\n    GS_FN(k)(int a)\n{\n}\n", "k")
    assert defines("def plot(self):\n", "plot")
    # And the real ones are found where the page says they are.
    assert defines(read("csrc", "ops", "scan.c"), "gs_scan")


# ---- README -----------------------------------------------------------------------------------

def test_readme_is_a_front_door():
    text = read("README.md")
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the manual is docs/"
    for command in README_COMMANDS:
        assert command in lines, f"README.md lost the line: {command}"
    if os.path.isfile(os.path.join(ROOT, ".ci", "run")):  # not in the sdist
        assert f"TEST_COMMAND='{README_COMMANDS[1]}'" in read(".ci", "run")


def test_readme_links_into_docs_resolve():
    text = read("README.md")
    links = re.findall(r"\]\(((?:docs|notebooks|benchmarks|tools)/[^)#\s]*)", text)
    assert any(link.startswith("docs/") for link in links), "README.md links to no docs page"
    missing = [link for link in links if not os.path.exists(os.path.join(ROOT, link))]
    assert not missing, f"README.md links to paths that do not exist: {missing}"


def test_every_docs_page_is_in_the_toctree():
    index = read("docs", "index.md")
    toctree = re.search(r"```\{toctree\}(.*?)```", index, re.S)
    assert toctree, "docs/index.md has no toctree"
    listed = {line.strip() for line in toctree.group(1).splitlines()
              if line.strip() and not line.strip().startswith(":")}
    pages = {os.path.splitext(n)[0] for n in os.listdir(DOCS)
             if n.endswith((".md", ".rst")) and n != "index.md"}
    assert pages == listed, f"in docs/ but not the toctree: {pages - listed}; " \
                            f"in the toctree but not docs/: {listed - pages}"


# ---- environment variables ----------------------------------------------------------------

def test_documented_environment_variables_are_the_ones_read():
    read_by_code = set()
    for path, text in sources().items():
        if path.startswith("csrc"):
            read_by_code |= set(re.findall(r'getenv\("(GPUSCAN_\w+)"\)', text))
    read_by_code |= set(re.findall(r'environ\.get\("(GPUSCAN_\w+)"\)', read("setup.py")))
    table = re.findall(r"^\| `([A-Z_]+)`(?:, `([A-Z_]+)`)? \|", read("docs", "install.md"), re.M)
    documented = {name for row in table for name in row if name.startswith("GPUSCAN_")}
    assert len(read_by_code) >= 8, read_by_code
    assert documented == read_by_code, (f"read but not documented: {read_by_code - documented}; "
                                        f"documented but not read: {documented - read_by_code}")


# ---- the notebooks' install ----------------------------------------------------------------

def unconditional_imports(path):
    """Top-level modules a notebook imports outside any block (not the guarded, optional ones)."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    found = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            m = re.match(r"(?:import|from)\s+([\w.]+)", line)  # at column 0 only
            if m:
                found.add(m.group(1).split(".")[0])
    return found


def test_the_notebooks_extra_installs_what_the_notebooks_import():
    try:
        requires = importlib.metadata.requires("gpuscan") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("gpuscan is not an installed distribution (no metadata to read)")
    base = {re.match(r"[\w.-]+", r).group(0).lower() for r in requires if "extra ==" not in r}
    extra = {re.match(r"[\w.-]+", r).group(0).lower() for r in requires
             if re.search(r"""extra\s*==\s*["']notebooks["']""", r)}
    assert "jupyterlab" in extra, extra
    dists = importlib.metadata.packages_distributions()
    notebooks = sorted(n for n in os.listdir(os.path.join(ROOT, "notebooks"))
                       if n.endswith(".ipynb"))
    assert len(notebooks) >= 7, notebooks
    missing = {}
    for name in notebooks:
        for module in unconditional_imports(os.path.join(ROOT, "notebooks", name)):
            if module in sys.stdlib_module_names or module == "gpuscan":
                continue
            wanted = {d.lower() for d in dists.get(module, [module])}
            if not wanted & (base | extra):
                missing.setdefault(name, []).append(module)
    assert not missing, f"the notebooks extra lacks what these import: {missing}"
