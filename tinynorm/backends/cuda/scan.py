"""Running sums and products of :class:`CudaArray` views along an axis (numpy's ``cumsum``, ``cumprod``),
and the product over an axis or all of them (``prod``).

The scanned axis is moved last (a new view) and the array laid out as C-contiguous ``(rows, cols)``
(copied when it is not already), so each row is one run of the kernel of
:mod:`tinynorm.kernels.cuda.scan`; the result is moved back and made C-contiguous. A product is the
last column of the running products. Dtypes follow numpy: bools and signed integers give int64,
unsigned ones uint64, floats keep theirs (float16 accumulated in float32).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ...kernels.cuda import scan as kernels
from . import creation
from .array import CudaArray, check_array

__all__ = ["cumprod", "cumsum", "prod"]


def _result_dtype(dtype: np.dtype, requested: Any) -> np.dtype:
    if requested is not None:
        return np.dtype(requested)
    if dtype.kind in "bi":
        return np.dtype(np.int64)
    return np.dtype(np.uint64) if dtype.kind == "u" else dtype


def _scan(a: CudaArray, axis: int | None, dtype: Any, multiply: bool, name: str) -> CudaArray:
    check_array(f"{name}: a", a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = normalize_axis_index(axis, a.ndim)
    order = [d for d in range(a.ndim) if d != axis] + [axis]
    moved = CudaArray(a.storage, [a.shape[d] for d in order], [a.strides[d] for d in order], a.offset)
    result = _result_dtype(a.dtype, dtype)
    cols = a.shape[axis]
    rows = math.prod(moved.shape[:-1])
    source = moved.astype(result) if moved.dtype != result else moved
    out = CudaArray.empty(moved.shape, result)
    kernels.scan_rows(source.contiguous().reshape(rows, cols), out.reshape(rows, cols), multiply)
    inverse = [0] * a.ndim
    for position, d in enumerate(order):
        inverse[d] = position
    return out.transpose(inverse).contiguous()


def cumsum(a: CudaArray, axis: int | None = None, dtype: Any = None) -> CudaArray:
    """The running sums of ``a`` along ``axis`` (of the flattened array when None)."""
    return _scan(a, axis, dtype, False, "cumsum")


def cumprod(a: CudaArray, axis: int | None = None, dtype: Any = None) -> CudaArray:
    """The running products of ``a`` along ``axis`` (of the flattened array when None)."""
    return _scan(a, axis, dtype, True, "cumprod")


def prod(a: CudaArray, axis: int | None = None, keepdims: bool = False, dtype: Any = None) -> CudaArray:
    """The product of the elements of ``a`` along one ``axis`` (all of them when None); 1 for none."""
    check_array("prod: a", a)
    if axis is None:
        shape = (1,) * a.ndim if keepdims else ()
        flat = a.reshape(1, -1)
        return _last(_scan(flat, 1, dtype, True, "prod"), flat, (1, 1), dtype).reshape(shape)
    axis = normalize_axis_index(axis, a.ndim)
    kept = a.shape[:axis] + (1,) + a.shape[axis + 1:]
    result = _last(_scan(a, axis, dtype, True, "prod"), a, kept, dtype, axis)
    return result if keepdims else result.reshape(a.shape[:axis] + a.shape[axis + 1:])


def _last(products: CudaArray, a: CudaArray, kept: tuple, dtype: Any, axis: int = 1) -> CudaArray:
    """The last running product along ``axis`` (shape ``kept``), or ones when the axis is empty."""
    if a.shape[axis] == 0:
        return creation.ones(kept, _result_dtype(a.dtype, dtype))
    index = (slice(None),) * axis + (slice(-1, None),)
    return products[index].contiguous()
