"""Reductions of :class:`CudaArray` views with numpy's semantics: sum, mean, amax, amin, argmax,
argmin, and ``unbroadcast`` (the gradient of broadcasting).

Every reduction first lays the array out as ``(rows, cols)``: the kept axes, in order, become the
rows and the reduced axes the columns. That is only a new view (the reduced axes' shape and strides
moved to the end), copied to C order when it is not contiguous already; the kernels of
:mod:`tinynorm.kernels.cuda.reductions` then reduce each row. One common case skips that copy: a
sum or mean over the leading axes of a C-contiguous array (a bias gradient, ``(N, C) -> (C,)``) is
its memory read as ``(reduced, kept)`` and summed column by column. Results are always CudaArrays, a 0-d
one for a full reduction (never a Python scalar).

Result dtypes are numpy's: a sum of bools or signed integers is int64 (unsigned: uint64), a mean of
them float64, floats keep their dtype; float16 is accumulated in float32.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ...kernels.cuda.reductions import column_sums, row_extremes, row_sums
from .array import CudaArray

__all__ = ["amax", "amin", "argmax", "argmin", "mean", "sum", "unbroadcast"]

Axis = int | tuple[int, ...] | list[int] | None


def _normalize_axes(axis: Axis, ndim: int, name: str) -> tuple[int, ...]:
    """``axis`` as sorted non-negative axes (all of them for None); numpy's errors otherwise.

    A 0-d array accepts axis 0 or -1 and reduces nothing, as numpy does.
    """
    if axis is None:
        return tuple(range(ndim))
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = []
    for item in items:
        if not isinstance(item, (int, np.integer)) or isinstance(item, bool):
            raise TypeError(f"{name}: axis must be None, an int or a tuple of ints, got {axis!r}")
        if not -max(ndim, 1) <= item < max(ndim, 1):
            raise np.exceptions.AxisError(int(item), ndim, msg_prefix=name)
        axes.append(int(item) % max(ndim, 1))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in axis, got {axis!r}")
    return tuple(sorted(axes)) if ndim else ()


def _as_rows(a: CudaArray, axes: tuple[int, ...]) -> Any:
    """``a`` as a C-contiguous ``(rows, cols)`` array: kept axes first, reduced last.

    Moving axes only permutes the view's shape and strides; ``contiguous`` copies when the result is
    not C-contiguous (e.g. when reducing a leading axis).
    """
    kept = [d for d in range(a.ndim) if d not in axes]
    order = kept + list(axes)
    moved = CudaArray(a.storage, [a.shape[d] for d in order], [a.strides[d] for d in order], a.offset)
    rows, cols = math.prod(a.shape[d] for d in kept), math.prod(a.shape[d] for d in axes)
    return moved.contiguous().subarray(0, (rows, cols))


def _result_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def _check_array(a: Any, name: str) -> None:
    if not isinstance(a, CudaArray):
        raise TypeError(f"{name}: expected a CudaArray, got {type(a).__name__}")


def _accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype a sum into ``dtype`` adds in: float32 for float16 (numpy does the same)."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's default result dtype of a sum: bools and signed ints widen to int64, unsigned to uint64."""
    if dtype.kind in "bi":
        return np.dtype(np.int64)
    if dtype.kind == "u":
        return np.dtype(np.uint64)
    return dtype


def _mean_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's default result dtype of a mean: float64 for bools and ints, floats unchanged."""
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _leading(a: CudaArray, axes: tuple[int, ...]) -> bool:
    """Whether ``a`` is C-contiguous and ``axes`` come before every kept axis longer than 1: then its
    memory already is ``(reduced, kept)`` in C order, and the kept values are column sums."""
    kept = [d for d in range(a.ndim) if d not in axes and a.shape[d] != 1]
    return bool(axes) and bool(kept) and max(axes) < min(kept) and a.is_contiguous()


def _sums(a: CudaArray, axes: tuple[int, ...], dtype: np.dtype, mean: bool) -> Any:
    """The sums (or means) of ``a`` over ``axes`` as a flat ``dtype`` array, kept axes in C order.

    Leading axes of a C-contiguous array are summed as columns, in place (no transposing copy);
    anything else as the rows of :func:`_as_rows`. numpy's rules for nothing to add: the empty sum
    is 0, the empty mean NaN (with a warning).
    """
    count = math.prod(a.shape[d] for d in axes)
    kept = math.prod(n for d, n in enumerate(a.shape) if d not in axes)
    if count == 0:
        if mean:
            warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)
        return CudaArray.from_host(np.full(kept, np.nan if mean else 0, dtype))
    accumulator = _accumulator(dtype)
    divisor = accumulator.type(count) if mean else None
    if _leading(a, axes):
        return column_sums(a.subarray(0, (count, kept)), dtype, accumulator, divisor)
    return row_sums(_as_rows(a, axes), dtype, accumulator, divisor)


def sum(a: CudaArray, axis: Axis = None, keepdims: bool = False, dtype: Any = None) -> CudaArray:
    """numpy.sum: the sum over ``axis`` (all axes when None), added in a fixed order (deterministic).

    ``dtype`` sets the result's dtype (and the one it adds in); by default bools and ints give int64.
    """
    _check_array(a, "sum")
    axes = _normalize_axes(axis, a.ndim, "sum")
    dtype = _sum_dtype(a.dtype) if dtype is None else np.dtype(dtype)
    return _sums(a, axes, dtype, mean=False).subarray(0, _result_shape(a.shape, axes, keepdims))


def mean(a: CudaArray, axis: Axis = None, keepdims: bool = False, dtype: Any = None) -> CudaArray:
    """numpy.mean: the sum over ``axis`` divided by the number of values (NaN, with a warning, for none)."""
    _check_array(a, "mean")
    axes = _normalize_axes(axis, a.ndim, "mean")
    dtype = _mean_dtype(a.dtype) if dtype is None else np.dtype(dtype)
    return _sums(a, axes, dtype, mean=True).subarray(0, _result_shape(a.shape, axes, keepdims))


def _extreme(a: CudaArray, axis: Axis, keepdims: bool, largest: bool, name: str) -> CudaArray:
    _check_array(a, name)
    axes = _normalize_axes(axis, a.ndim, name)
    rows = _as_rows(a, axes)
    if rows.shape[1] == 0:
        operation = "maximum" if largest else "minimum"
        raise ValueError(f"{name}: zero-size array to reduction operation {operation} which has no identity "
                         f"(shape {a.shape}, axis {axis!r})")
    values, _ = row_extremes(rows, largest, values=True, indices=False)
    return values.subarray(0, _result_shape(a.shape, axes, keepdims))


def amax(a: CudaArray, axis: Axis = None, keepdims: bool = False) -> CudaArray:
    """numpy.amax: the largest value over ``axis``; NaN if any value is NaN."""
    return _extreme(a, axis, keepdims, True, "amax")


def amin(a: CudaArray, axis: Axis = None, keepdims: bool = False) -> CudaArray:
    """numpy.amin: the smallest value over ``axis``; NaN if any value is NaN."""
    return _extreme(a, axis, keepdims, False, "amin")


def _arg_extreme(a: CudaArray, axis: int | None, keepdims: bool, largest: bool, name: str) -> CudaArray:
    _check_array(a, name)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be None or an int, got {axis!r}")
    axes = _normalize_axes(axis, a.ndim, name)  # None: all axes in order, i.e. the flattened array
    rows = _as_rows(a, axes)
    if rows.shape[1] == 0:
        raise ValueError(f"{name}: attempt to get {name} of an empty sequence (shape {a.shape}, axis {axis!r})")
    _, indices = row_extremes(rows, largest, values=False, indices=True)
    if axis is None:
        shape = (1,) * a.ndim if keepdims else ()
    else:
        shape = _result_shape(a.shape, axes, keepdims)
    return indices.subarray(0, shape)


def argmax(a: CudaArray, axis: int | None = None, keepdims: bool = False) -> CudaArray:
    """numpy.argmax: the int64 index of the largest value along ``axis`` (of the flattened array
    when None); the first one on ties, the first NaN when there are NaNs."""
    return _arg_extreme(a, axis, keepdims, True, "argmax")


def argmin(a: CudaArray, axis: int | None = None, keepdims: bool = False) -> CudaArray:
    """numpy.argmin: the int64 index of the smallest value along ``axis``, with argmax's tie and NaN rules."""
    return _arg_extreme(a, axis, keepdims, False, "argmin")


def unbroadcast(grad: CudaArray, shape: tuple[int, ...]) -> CudaArray:
    """Sum ``grad`` over the axes that broadcasting added or stretched, giving it ``shape``.

    The adjoint of broadcasting, as in the CPU backend: if ``x`` of shape (3, 1) was broadcast to
    (2, 3, 4), every copy of an element contributed to the output, so its gradient is the sum over
    the copies. One reduction covers the added and the stretched axes.
    """
    _check_array(grad, "unbroadcast")
    shape = tuple(int(n) for n in shape)
    extra = grad.ndim - len(shape)
    if extra < 0 or any(n not in (1, g) for n, g in zip(shape, grad.shape[extra:])):
        raise ValueError(f"unbroadcast: grad of shape {grad.shape} cannot come from broadcasting shape {shape}")
    stretched = tuple(extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[extra + i] != 1)
    axes = tuple(range(extra)) + stretched
    if not axes:
        return grad
    return _sums(grad, axes, _sum_dtype(grad.dtype), mean=False).subarray(0, shape)
