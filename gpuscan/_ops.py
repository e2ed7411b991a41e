"""The contract's operators for the package's Python layer: each name and its NumPy ufunc.

Level: Python package (private).  The extension's own table is GS_OPS in
include/gpuscan/types.h, which parses the names and ufuncs; this one serves the Python code that
combines values itself (gpuscan.dask's carries) or names an op (gpuscan.trace's labels).
"""
import numpy as np

# name -> ufunc, in GS_OPS's order.
UFUNCS = {
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}
_BY_UFUNC_NAME = {u.__name__: name for name, u in UFUNCS.items()}


def op_name(op):
    """The contract's name of an op given as a name, a ufunc's name or a ufunc ("mul" for
    np.multiply and "multiply"); anything else as str."""
    if isinstance(op, str):
        return _BY_UFUNC_NAME.get(op, op)
    return _BY_UFUNC_NAME.get(getattr(op, "__name__", ""), str(op))
