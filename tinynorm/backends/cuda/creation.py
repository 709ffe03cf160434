"""Creating CUDA arrays and moving them between host and device (numpy's names and defaults).

``zeros``, ``ones``, ``full`` and ``arange`` fill the new array with a kernel on the device: nothing
crosses the bus. ``from_numpy``/``asarray`` copy host data to the device and ``to_numpy`` copies any
view (strided, broadcast) back, as a new C-contiguous numpy array.
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
from .runtime.compiler import from_dtype

from ...kernels.cuda import elementwise as kernels
from .array import CudaArray
from .shape import as_shape

__all__ = ["arange", "as_array", "asarray", "copy", "empty", "finfo", "from_numpy", "full", "ones", "ones_like",
           "to_numpy", "zeros", "zeros_like"]

finfo = np.finfo


def fill(out: CudaArray, value: Any) -> CudaArray:
    """Set every element of the view ``out`` to the scalar ``value`` (cast to ``out``'s dtype); returns ``out``."""
    kernels.map_strided(kernels.identity, out.storage, out.offset, out.strides, out.shape,
                        [out.dtype.type(value)], [from_dtype(out.dtype)])
    return out


def empty(shape: Any, dtype: Any = np.float64) -> CudaArray:
    """A new C-contiguous array of ``shape`` with unspecified values."""
    shape = as_shape(shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    return CudaArray.empty(shape, dtype)


def zeros(shape: Any, dtype: Any = np.float64) -> CudaArray:
    return fill(empty(shape, dtype), 0)


def ones(shape: Any, dtype: Any = np.float64) -> CudaArray:
    return fill(empty(shape, dtype), 1)


def full(shape: Any, fill_value: Any, dtype: Any = None) -> CudaArray:
    """A new array of ``shape`` filled with the scalar ``fill_value`` (its dtype, as numpy, when
    ``dtype`` is None)."""
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    return fill(empty(shape, dtype), fill_value)


def zeros_like(a: CudaArray, dtype: Any = None) -> CudaArray:
    return zeros(a.shape, a.dtype if dtype is None else dtype)


def ones_like(a: CudaArray, dtype: Any = None) -> CudaArray:
    return ones(a.shape, a.dtype if dtype is None else dtype)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> CudaArray:
    """``start, start + step, ...`` below ``stop`` (numpy's ``arange``: ``arange(n)`` is 0 to n-1; the
    dtype is int64 for ints, float64 when any bound is a float, unless ``dtype`` is given)."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    dtype = np.dtype(np.result_type(start, stop, step) if dtype is None else dtype)
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        length = len(range(operator.index(start), operator.index(stop), operator.index(step)))
    else:
        length = max(0, math.ceil((stop - start) / step))
    out = CudaArray.empty((length,), dtype)
    kernels.arange_into(out.storage, dtype.type(start), dtype.type(step))
    return out


def from_numpy(a: Any) -> CudaArray:
    """A device copy of the host array ``a`` (any layout; numbers and nested lists too)."""
    host = np.asarray(a)
    if host.dtype == object or host.dtype.kind in "USVMm":
        raise TypeError(f"from_numpy: cannot copy an array of dtype {host.dtype} to the device")
    return CudaArray.from_host(host)


def to_numpy(a: CudaArray) -> np.ndarray:
    """A host (numpy) copy of the device array ``a``, C-contiguous, whatever ``a``'s layout."""
    if not isinstance(a, CudaArray):
        raise TypeError(f"to_numpy: expected a CudaArray, got {type(a).__name__}")
    return a.to_numpy()


def asarray(data: Any, dtype: Any = None) -> CudaArray:
    """``data`` as a CudaArray of ``dtype``: a CudaArray as it is (or cast), host data copied to the device."""
    if isinstance(data, CudaArray):
        return data if dtype is None else data.astype(dtype, copy=False)
    return from_numpy(np.asarray(data, dtype=dtype))


def as_array(value: Any) -> CudaArray:
    """An op's result as a CudaArray (CudaArrays pass through; a host value is copied to the device)."""
    return value if isinstance(value, CudaArray) else asarray(value)


def copy(a: CudaArray) -> CudaArray:
    """A new C-contiguous array with ``a``'s values."""
    return a.copy()
