"""Execute the teaching notebooks top to bottom, and with --save keep their outputs.

    python3 tools/run_notebooks.py                  # run every notebooks/*.ipynb; write nothing
    python3 tools/run_notebooks.py --save           # ... and save each with its outputs, in place
    python3 tools/run_notebooks.py notebooks/01_prefix_sum.ipynb --timeout 300
The committed notebooks carry outputs from a GPU run: --save on the GPU machine replaces them, and
without --save a run elsewhere (the CPU backend) leaves them as they are.  Each notebook runs in a
fresh kernel from the notebooks/ folder, importing the gpuscan this interpreter imports (the
repository's in-place build when none is installed), on whichever backend gpuscan picks there
(GPUSCAN_BACKEND chooses).  Exits 1 if any cell raises (that notebook is not saved), after
running the others.  Needs nbclient, nbformat and ipykernel (the `test` and `notebooks` extras).
"""
import argparse
import glob
import importlib.util
import os
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_parent():
    """The folder the kernel must import gpuscan from: the one holding the gpuscan this
    interpreter imports (installed, editable or not), else the repository root (an in-place
    build with nothing installed)."""
    spec = importlib.util.find_spec("gpuscan")
    if spec is None or not spec.submodule_search_locations:
        return ROOT
    return os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))


def run(path, timeout, save):
    """Execute one notebook; returns the executed notebook (raises CellExecutionError)."""
    nb = nbformat.read(path, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = package_parent() + (os.pathsep + env_path if env_path else "")
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": os.path.dirname(path)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    if save:
        nbformat.write(nb, path)
    return nb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*",
                        default=sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb"))))
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument("--save", action="store_true",
                        help="write each notebook back with its new outputs (replacing the "
                             "committed ones: on the GPU machine)")
    args = parser.parse_args(argv)
    failed = []
    for path in args.notebooks:
        try:
            run(os.path.abspath(path), args.timeout, args.save)
            print(f"ok     {path}", flush=True)
        except CellExecutionError as exc:
            failed.append(path)
            print(f"FAILED {path}\n{exc}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
