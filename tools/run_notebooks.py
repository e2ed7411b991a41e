"""Execute the teaching notebooks top to bottom and save them with their outputs.

Used on the GPU machine to commit notebooks whose outputs show real GPU figures:
    python3 tools/run_notebooks.py                 # every notebooks/*.ipynb, in place
    python3 tools/run_notebooks.py notebooks/01_prefix_sum.ipynb --timeout 300
Each notebook runs in a fresh kernel from the notebooks/ folder, on whichever backend gpuscan
picks there (GPUSCAN_BACKEND chooses).  Exits 1 if any cell raises (that notebook is not
saved), after running the others.  Needs nbclient, nbformat and ipykernel (the `test` extra).
"""
import argparse
import glob
import os
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(path, timeout, save):
    """Execute one notebook; returns the executed notebook (raises CellExecutionError)."""
    nb = nbformat.read(path, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    # The kernel imports gpuscan from the repository root, as the tests do.
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + env_path if env_path else "")
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": os.path.dirname(path)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    if save:
        nbformat.write(nb, path)
    return nb


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*",
                        default=sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb"))))
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument("--no-save", action="store_true", help="execute only")
    args = parser.parse_args()
    failed = []
    for path in args.notebooks:
        try:
            run(os.path.abspath(path), args.timeout, not args.no_save)
            print(f"ok     {path}", flush=True)
        except CellExecutionError as exc:
            failed.append(path)
            print(f"FAILED {path}\n{exc}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
