"""Types of gpuscan's C extension (csrc/).  tests/test_typing.py checks them against the built
module with mypy's stubtest: a parameter added in C and not here fails the tests."""

from typing import Any, Literal, SupportsIndex, TypeVar, final, overload

import numpy as np
import numpy.typing as npt

# An operator: its name or the matching NumPy ufunc (np.add, np.multiply, np.minimum,
# np.maximum, np.bitwise_and, np.bitwise_or, np.bitwise_xor).
_Op = (
    Literal["add", "mul", "min", "max", "and", "or", "xor", "multiply", "minimum", "maximum",
            "bitwise_and", "bitwise_or", "bitwise_xor"]
    | np.ufunc
)
_ScanAlgorithm = Literal["auto", "hillis_steele", "blelloch"]
_SegmentedAlgorithm = Literal["auto", "blelloch"]
_HistogramMethod = Literal["auto", "global", "shared"]
_Axes = SupportsIndex | tuple[SupportsIndex, ...] | None
_Out = TypeVar("_Out", bound=np.ndarray[Any, Any] | DeviceArray)

MAX_NDIM: int

class GpuscanError(RuntimeError): ...
class CompileError(ValueError): ...

@final
class Operator:
    """An associative operator written in C (help(gpuscan.Operator))."""

    def __init__(
        self, combine: str, *, dtype: npt.DTypeLike, identity: Any, name: str | None = None
    ) -> None: ...
    @property
    def combine(self) -> str: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def identity(self) -> Any: ...
    @property
    def name(self) -> str | None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

# An Operator's input: an array, or (a structured dtype) a tuple of arrays, one per field; its
# result comes back in the same form.
_UserIn = npt.ArrayLike | tuple[npt.ArrayLike, ...]

@final
class DeviceArray:
    """A C-contiguous array in CUDA device memory, made by gpuscan."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def size(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def device(self) -> int: ...
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...
    def get(self) -> npt.NDArray[Any]: ...
    def __array__(
        self, dtype: npt.DTypeLike | None = None, copy: bool | None = None
    ) -> npt.NDArray[Any]: ...
    def __dlpack__(
        self,
        *,
        stream: int | Any | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __len__(self) -> int: ...

# ---- the primitives: a DeviceArray in gives a DeviceArray out, NumPy in gives NumPy out ----

@overload
def scan(
    a: _UserIn,
    op: Operator,
    *,
    exclusive: bool = False,
    axis: SupportsIndex | None = None,
    dtype: None = None,
    out: Any = None,
    algorithm: Literal["auto"] = "auto",
) -> Any: ...
@overload
def scan(
    a: DeviceArray,
    op: _Op = "add",
    *,
    exclusive: bool = False,
    axis: SupportsIndex | None = None,
    dtype: npt.DTypeLike | None = None,
    out: DeviceArray | None = None,
    algorithm: _ScanAlgorithm = "auto",
) -> DeviceArray: ...
@overload
def scan(
    a: npt.ArrayLike,
    op: _Op = "add",
    *,
    exclusive: bool = False,
    axis: SupportsIndex | None = None,
    dtype: npt.DTypeLike | None = None,
    out: None = None,
    algorithm: _ScanAlgorithm = "auto",
) -> npt.NDArray[Any]: ...
@overload
def scan(
    a: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    exclusive: bool = False,
    axis: SupportsIndex | None = None,
    dtype: npt.DTypeLike | None = None,
    out: _Out,
    algorithm: _ScanAlgorithm = "auto",
) -> _Out: ...
@overload
def segmented_scan(
    a: _UserIn,
    flags: npt.ArrayLike,
    op: Operator,
    *,
    exclusive: bool = False,
    dtype: None = None,
    out: Any = None,
    algorithm: Literal["auto"] = "auto",
) -> Any: ...
@overload
def segmented_scan(
    a: DeviceArray,
    flags: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    exclusive: bool = False,
    dtype: npt.DTypeLike | None = None,
    out: DeviceArray | None = None,
    algorithm: _SegmentedAlgorithm = "auto",
) -> DeviceArray: ...
@overload
def segmented_scan(
    a: npt.ArrayLike,
    flags: npt.ArrayLike,
    op: _Op = "add",
    *,
    exclusive: bool = False,
    dtype: npt.DTypeLike | None = None,
    out: None = None,
    algorithm: _SegmentedAlgorithm = "auto",
) -> npt.NDArray[Any]: ...
@overload
def segmented_scan(
    a: npt.ArrayLike | DeviceArray,
    flags: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    exclusive: bool = False,
    dtype: npt.DTypeLike | None = None,
    out: _Out,
    algorithm: _SegmentedAlgorithm = "auto",
) -> _Out: ...
@overload
def reduce(
    a: _UserIn,
    op: Operator,
    *,
    axis: _Axes = None,
    dtype: None = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Literal[True] = True,
) -> Any: ...
@overload
def reduce(
    a: DeviceArray,
    op: _Op = "add",
    *,
    axis: _Axes = None,
    dtype: npt.DTypeLike | None = None,
    out: DeviceArray | None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = True,
) -> DeviceArray: ...
@overload
def reduce(
    a: npt.ArrayLike,
    op: _Op = "add",
    *,
    axis: _Axes = None,
    dtype: npt.DTypeLike | None = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = True,
) -> Any: ...  # a NumPy scalar (every axis reduced) or an array, as np.add.reduce
@overload
def reduce(
    a: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    axis: _Axes = None,
    dtype: npt.DTypeLike | None = None,
    out: _Out,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = True,
) -> _Out: ...
@overload
def split(a: DeviceArray, flags: npt.ArrayLike | DeviceArray) -> tuple[DeviceArray, int]: ...
@overload
def split(a: npt.ArrayLike, flags: npt.ArrayLike) -> tuple[npt.NDArray[Any], int]: ...
@overload
def compact(a: DeviceArray, flags: npt.ArrayLike | DeviceArray) -> DeviceArray: ...
@overload
def compact(a: npt.ArrayLike, flags: npt.ArrayLike) -> npt.NDArray[Any]: ...
@overload
def histogram(
    a: DeviceArray,
    bins: int | npt.ArrayLike | str = 10,
    range: tuple[float, float] | None = None,
    density: bool | None = None,
    weights: DeviceArray | None = None,
    *,
    method: _HistogramMethod = "auto",
) -> tuple[DeviceArray, npt.NDArray[Any]]: ...
@overload
def histogram(
    a: npt.ArrayLike,
    bins: int | npt.ArrayLike | str = 10,
    range: tuple[float, float] | None = None,
    density: bool | None = None,
    weights: npt.ArrayLike | None = None,
    *,
    method: _HistogramMethod = "auto",
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]: ...
@overload
def bincount(
    x: DeviceArray, /, weights: DeviceArray | None = None, minlength: SupportsIndex = 0
) -> DeviceArray: ...
@overload
def bincount(
    x: npt.ArrayLike, /, weights: npt.ArrayLike | None = None, minlength: SupportsIndex = 0
) -> npt.NDArray[Any]: ...

@overload
def reduceat(
    a: _UserIn,
    indices: npt.ArrayLike,
    op: Operator,
    *,
    axis: SupportsIndex = 0,
    dtype: None = None,
    out: Any = None,
) -> Any: ...
@overload
def reduceat(
    a: DeviceArray,
    indices: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    axis: SupportsIndex = 0,
    dtype: npt.DTypeLike | None = None,
    out: DeviceArray | None = None,
) -> DeviceArray: ...
@overload
def reduceat(
    a: npt.ArrayLike,
    indices: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    axis: SupportsIndex = 0,
    dtype: npt.DTypeLike | None = None,
    out: None = None,
) -> npt.NDArray[Any]: ...
@overload
def reduceat(
    a: npt.ArrayLike | DeviceArray,
    indices: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    axis: SupportsIndex = 0,
    dtype: npt.DTypeLike | None = None,
    out: _Out,
) -> _Out: ...
@overload
def segmented_reduce(
    a: _UserIn,
    flags: npt.ArrayLike,
    op: Operator,
    *,
    dtype: None = None,
) -> Any: ...
@overload
def segmented_reduce(
    a: DeviceArray,
    flags: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    dtype: npt.DTypeLike | None = None,
) -> DeviceArray: ...
@overload
def segmented_reduce(
    a: npt.ArrayLike,
    flags: npt.ArrayLike | DeviceArray,
    op: _Op = "add",
    *,
    dtype: npt.DTypeLike | None = None,
) -> npt.NDArray[Any]: ...
@overload
def linear_recurrence(
    a: DeviceArray,
    b: npt.ArrayLike | DeviceArray,
    *,
    axis: SupportsIndex = -1,
    h0: float | npt.ArrayLike | DeviceArray | None = None,
    reverse: bool = False,
    out: DeviceArray | None = None,
) -> DeviceArray: ...
@overload
def linear_recurrence(
    a: npt.ArrayLike,
    b: npt.ArrayLike | DeviceArray,
    *,
    axis: SupportsIndex = -1,
    h0: float | npt.ArrayLike | DeviceArray | None = None,
    reverse: bool = False,
    out: None = None,
) -> npt.NDArray[Any]: ...
@overload
def linear_recurrence(
    a: npt.ArrayLike | DeviceArray,
    b: npt.ArrayLike | DeviceArray,
    *,
    axis: SupportsIndex = -1,
    h0: float | npt.ArrayLike | DeviceArray | None = None,
    reverse: bool = False,
    out: _Out,
) -> _Out: ...

@overload
def sort(
    a: DeviceArray,
    axis: SupportsIndex | None = -1,
    kind: str | None = None,
    *,
    stable: bool | None = None,
    descending: bool = False,
) -> DeviceArray: ...
@overload
def sort(
    a: npt.ArrayLike,
    axis: SupportsIndex | None = -1,
    kind: str | None = None,
    *,
    stable: bool | None = None,
    descending: bool = False,
) -> npt.NDArray[Any]: ...
@overload
def argsort(
    a: DeviceArray,
    axis: SupportsIndex | None = -1,
    kind: str | None = None,
    *,
    stable: bool | None = None,
    descending: bool = False,
) -> DeviceArray: ...
@overload
def argsort(
    a: npt.ArrayLike,
    axis: SupportsIndex | None = -1,
    kind: str | None = None,
    *,
    stable: bool | None = None,
    descending: bool = False,
) -> npt.NDArray[np.int64]: ...

# ---- the backend ----

def backend() -> Literal["cuda", "cpu"]: ...
def device_info() -> dict[str, Any]: ...
def free_cached_memory() -> dict[str, int]: ...
def to_device(a: npt.ArrayLike | DeviceArray) -> DeviceArray: ...

# ---- private: for gpuscan.trace, the demo and the tests ----

def _trace(
    algorithm: str,
    a: npt.ArrayLike,
    flags: npt.ArrayLike | None = None,
    op: _Op = "add",
    exclusive: bool = False,
) -> tuple[
    list[tuple[str, int, npt.NDArray[Any], npt.NDArray[Any] | None, int]],
    npt.NDArray[Any],
    int,
    int,
]: ...
def _backend_reason() -> str | None: ...
def _config() -> dict[str, bool | str | int]: ...
def _scan_scratch_bytes(n: int) -> int: ...
def _split_scratch_bytes(n: int) -> int: ...
def _reduce_chunk_items(row_len: int) -> int: ...
def _reduce_scratch_bytes(rows: int, row_len: int) -> int: ...
def _hist_last_launch() -> dict[str, int] | None: ...
def _hist_plan(nbins: int, acc_bytes: int, budget: int) -> tuple[int, int, int]: ...
def _teach_scratch_bytes(
    algorithm: str,
    n: int,
    row_len: int,
    out_itemsize: int,
    segmented: bool,
    in_place: bool,
) -> int: ...
def _teach_set_unpadded(flag: bool) -> bool: ...
def _segreduce_scratch_bytes(n: int, nseg: int, sorted: bool) -> int: ...
def _linrec_scratch_bytes(n: int) -> int: ...
def _pipeline_chunk_bytes(n: int | None = None, /) -> int: ...
def _pipeline_prefault(on: bool | None = None, /) -> bool: ...
def _pinned_limit(n: int | None = None, /) -> int: ...
