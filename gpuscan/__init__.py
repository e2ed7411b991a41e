"""gpuscan: GPU data-parallel primitives for NumPy, with a multi-threaded CPU backend.

The work is done by a C extension (``gpuscan._gpuscan``) that calls CUDA C kernels when a CUDA
device is usable and runs multi-threaded C on the host otherwise; this package only re-exports
and documents it.  NumPy arrays (any strides, any byte order) and array-likes go in and NumPy
arrays come out; device arrays from CuPy, PyTorch or Numba (``__cuda_array_interface__`` or
``__dlpack__``) are used in place and give a ``DeviceArray``.

Functions
---------
scan(a, op="add", *, exclusive=False, axis=None, dtype=None, out=None, algorithm="auto")
    Inclusive or exclusive prefix scan: ``scan(a)`` is ``np.cumsum(a)``, ``scan(a, "mul")`` is
    ``np.cumprod(a)``; ops ``"add" "mul" "min" "max" "and" "or" "xor"`` or the matching ufuncs.
segmented_scan(a, flags, op="add", *, exclusive=False, dtype=None, out=None, algorithm="auto")
    A scan that restarts at every nonzero flag (``flags`` has ``a``'s shape, any dtype): each
    segment of ``a``, read in C order, is scanned on its own; the result has ``a``'s shape.
reduce(a, op="add", *, axis=None, dtype=None, keepdims=False)
    ``np.add.reduce(a)`` and friends for the same ops: ``axis`` None, an int or a tuple; a
    NumPy scalar for a full reduction; min/max of nothing is a ``ValueError`` as in NumPy.
reduceat(a, indices, op="add", *, axis=0, dtype=None, out=None)
    ``np.<ufunc>.reduceat``: the reduction of each slice indices[i]:indices[i+1] along ``axis``
    (an index not smaller than the next gives the one value at it; IndexError out of range).
segmented_reduce(a, flags, op="add", *, dtype=None)
    One reduction per segment of the flattened ``a`` (a nonzero flag starts a segment, element
    0 always does): ``reduceat(a.ravel(), <positions of the heads>)``.
linear_recurrence(a, b, *, axis=-1, h0=None, reverse=False, out=None)
    ``h[t] = a[t] * h[t-1] + b[t]`` along ``axis`` (float32, float64), ``h[-1] = h0``; one
    scan of pairs, deterministic, within 4 (log2 n + 2) eps of the magnitudes involved.
split(a, flags)
    Stable partition: ``(out, count)``, the elements of ``a`` whose flag is nonzero first, then
    the others, each group in order (``a`` and ``flags`` the same shape, flattened in C order;
    values moved bit for bit); ``count`` (a Python int) is the number flagged.
compact(a, flags)
    The flagged elements in order: ``a[flags != 0]`` flattened.
trace.scan(a, algorithm="blelloch", op="add", *, exclusive=False), trace.segmented_scan(a,
flags, op="add", *, exclusive=False, algorithm="blelloch"), trace.split(a, flags)
    The teaching algorithms (Hillis-Steele, Blelloch, flagged Blelloch, split) one parallel step
    at a time on the active backend: a ``Trace`` with ``.steps``, ``.result``, ``.work``
    (operator applications, counted), ``.span`` (steps) and ``.plot()`` (matplotlib).  The same
    algorithms at full size: ``scan(..., algorithm="hillis_steele" | "blelloch")`` and
    ``segmented_scan(..., algorithm="blelloch")``.
histogram(a, bins=10, range=None, density=None, weights=None, *, method="auto")
    ``np.histogram``: the same counts (int64, equal to NumPy's to the count, values on or one
    ulp beside an edge included), edges (always NumPy), errors, weights and density;
    ``method`` ``"auto" "global" "shared"`` picks how CUDA counts.  A device input gives a
    ``DeviceArray`` of counts.
bincount(x, weights=None, minlength=0)
    ``np.bincount``: counts of non-negative integers (float64 sums with weights), the length
    and the negative check found on the device for a device input.
backend()
    ``"cuda"`` or ``"cpu"``: the backend calls run on.
device_info()
    A dict describing the device (name, compute capability, memory, ...) or the CPU threads.
free_cached_memory()
    Give back what gpuscan's caches hold unused: the device memory pool, and the page-locked
    host blocks that large NumPy results are made in on CUDA (``GPUSCAN_PINNED_BYTES`` bounds
    those; 0 turns them off).
to_device(a)
    Copy an array to the GPU as a ``DeviceArray`` (``.shape``, ``.dtype``, ``.size``,
    ``.get()``, ``__cuda_array_interface__``, ``__dlpack__``).
GpuscanError
    Raised when a CUDA call fails (a ``RuntimeError``); the message names the call.

gpuscan.dask (``import gpuscan.dask``, needs ``pip install "gpuscan[dask]"``)
    The same primitives over dask arrays, lazily, each chunk run by gpuscan on its worker
    (CuPy chunks stay on their GPU): ``scan``, ``segmented_scan``, ``reduce``, ``histogram``,
    ``bincount``, ``compact``, ``split``, and ``gpu_cluster()`` (one worker per GPU).
    ``import gpuscan`` never imports Dask.

Backends
--------
``GPUSCAN_BACKEND=cuda|cpu`` forces one (default: CUDA when a device is usable);
``GPUSCAN_NUM_THREADS`` sets the CPU backend's threads (default: the online cores);
``GPUSCAN_DEBUG_SYNC=1`` synchronizes after every kernel launch so errors surface where they
happen.  ``python -m gpuscan`` prints the backend and checks every primitive against NumPy.

The contract, including dtype rules and error bounds, is in the repository's README.md.
"""

__version__ = "0.1.0"

try:
    from gpuscan._gpuscan import (
        DeviceArray,
        GpuscanError,
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

__all__ = [
    "DeviceArray",
    "GpuscanError",
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
    "split",
    "to_device",
    "trace",
]
