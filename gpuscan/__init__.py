"""gpuscan: GPU data-parallel primitives for NumPy, with a multi-threaded CPU backend.

``scan``, ``segmented_scan``, ``reduce``, ``reduceat``, ``segmented_reduce``,
``linear_recurrence``, ``histogram``, ``bincount``, ``split``, ``compact``, ``sort`` and
``argsort`` take NumPy arrays (or CuPy, PyTorch and Numba device arrays, used in place) and give
NumPy's results, computed by CUDA C kernels when a CUDA device is usable and by multi-threaded C
otherwise (``backend()``).
``gpuscan.trace`` runs the teaching algorithms one parallel step at a time; ``gpuscan.dask``
runs the primitives over dask arrays (``pip install "gpuscan[dask]"``; imported on first use,
so ``import gpuscan`` never imports Dask).

Each function's docstring is its reference: ``help(gpuscan.scan)``.  The manual (install and
build, device arrays, arrays larger than the GPU, Dask, teaching, architecture) renders them
with the rest of the project's ``docs/`` folder.
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING

try:
    from gpuscan._gpuscan import (
        CompileError,
        DeviceArray,
        GpuscanError,
        Operator,
        backend,
        compact,
        bincount,
        device_info,
        free_cached_memory,
        histogram,
        linear_recurrence,
        reduce,
        reduceat,
        scan,
        segmented_reduce,
        segmented_scan,
        sort,
        argsort,
        split,
        to_device,
    )
except ImportError as _exc:
    import os as _os

    raise ImportError(
        f"gpuscan's C extension (gpuscan._gpuscan) is not built or cannot be loaded from "
        f"{_os.path.dirname(_os.path.abspath(__file__))}: {_exc}\n"
        "Build it in place with `python3 -m pip install -e .` run from the repository root "
        "(an editable install puts _gpuscan*.so beside this file).  A plain `pip install .` "
        "installs into site-packages, which the source folder shadows when Python runs from "
        "the repository root."
    ) from _exc

from gpuscan import trace  # noqa: E402  (after the extension, which it needs)


if TYPE_CHECKING:
    from gpuscan import dask  # noqa: F401  (what the attribute below is, for type checkers)
else:

    def __getattr__(name):
        """``gpuscan.dask``, imported when first asked for (PEP 562): Dask is optional, and
        importing gpuscan must not import it."""
        if name == "dask":
            import importlib

            return importlib.import_module("gpuscan.dask")  # binds gpuscan.dask from now on
        raise AttributeError(f"module 'gpuscan' has no attribute {name!r}")

    def __dir__():
        """The module's names, with ``dask`` where Dask is installed (so that tab completion
        and ``inspect.getmembers`` never meet an attribute whose import fails)."""
        import importlib.util

        names = set(globals())
        if importlib.util.find_spec("dask") is not None:
            names.add("dask")
        return sorted(names)


__all__ = [
    "CompileError",
    "DeviceArray",
    "GpuscanError",
    "Operator",
    "__version__",
    "backend",
    "compact",
    "bincount",
    "device_info",
    "free_cached_memory",
    "histogram",
    "linear_recurrence",
    "reduce",
    "reduceat",
    "scan",
    "segmented_reduce",
    "segmented_scan",
    "sort",
    "argsort",
    "split",
    "to_device",
    "trace",
]
