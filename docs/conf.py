"""Sphinx configuration of gpuscan's documentation.

Build (after `python3 -m pip install -e ".[docs]"`, which builds the extension the API pages
import):  sphinx-build -W -b html docs docs/_build/html

The API reference is the docstrings (numpydoc), rendered by autodoc: the functions' own text in
csrc/binding/docstrings.c, gpuscan/trace.py and gpuscan/dask.py.  The prose pages are Markdown
(MyST).  Nothing here reaches the network (no intersphinx), so a build with -W gives the same
answer on every machine.
"""
import gpuscan

project = "gpuscan"
author = "gpuscan developers"
copyright = "gpuscan developers (MIT license)"
release = version = gpuscan.__version__

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# The pages link to each other by heading labels ((label)= in MyST) and by file names.
myst_heading_anchors = 3

# autodoc: the members in source order; a C function's signature comes from its docstring's
# first line (its __text_signature__).
autodoc_member_order = "bysource"
# The parameters' types are in the docstrings (numpydoc); the annotations (numpy.typing's
# ArrayLike, spelled out) would bury the signatures.
autodoc_typehints = "none"
autodoc_default_options = {"members": False}

# numpydoc: no autosummary tables of class members (DeviceArray's attributes are listed in its
# docstring), and the docstrings' own cross-references resolved within these pages only.
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

nitpicky = False
html_theme = "alabaster"
html_title = f"gpuscan {release}"
