"""Shape functions of the CUDA backend (numpy's semantics), and basic indexing.

Reshaping a contiguous array, transposing, moving axes, adding axes, broadcasting (stride 0) and
basic indexing (ints, slices, ``None``, ``...``) only make a new view of the same storage: no kernel
runs. Reshaping a non-contiguous view copies it first; ``concatenate`` and ``stack`` copy each input
into its slice of a new array.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from .array import CudaArray

__all__ = ["ascontiguousarray", "broadcast_to", "concatenate", "expand_dims", "is_contiguous", "moveaxis", "reshape", "shares_storage", "stack",
           "storage_of", "swapaxes", "transpose", "view"]

Shape = tuple[int, ...]


def as_shape(shape: Any, name: str = "shape") -> Shape:
    """An int or a sequence of ints (a shape, axes) as a tuple of ints; TypeError naming ``name`` otherwise."""
    if type(shape) is tuple and all(type(n) is int for n in shape):  # the usual case, checked first: it is cheap
        return shape
    try:
        return (operator.index(shape),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{name} must be an int or a sequence of ints, got {shape!r}") from None


def reshape(a: CudaArray, shape: Any) -> CudaArray:
    """``a`` with ``shape`` (one entry may be -1): a view when ``a`` is contiguous, else a copy."""
    shape = as_shape(shape)
    if shape == a.shape:  # views never change, so the array itself serves
        return a
    if -1 in shape:
        shape = _fill_unknown(shape, a.size)
    if math.prod(shape) != a.size or min(shape, default=0) < 0:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}")
    source = a.contiguous()
    return CudaArray(source.storage, shape, None, source.offset)


def view(a: CudaArray, shape: Any) -> CudaArray:
    """``a`` in ``shape`` without copying; ValueError when ``a`` is not contiguous (then a copy is needed)."""
    if not a.is_contiguous():
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    return reshape(a, shape)


def storage_of(a: Any) -> Any:
    """The device memory behind ``a`` (shared by all its views); any other value is its own."""
    return a.storage if isinstance(a, CudaArray) else a


def shares_storage(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are views of the same memory."""
    return storage_of(a) is storage_of(b)


def is_contiguous(a: CudaArray) -> bool:
    return a.is_contiguous()


def ascontiguousarray(a: CudaArray) -> CudaArray:
    """``a`` if it is C-contiguous, else a C-contiguous copy."""
    return a.contiguous()


def _fill_unknown(shape: Shape, size: int) -> Shape:
    """``shape`` with its one -1 replaced by what makes ``size`` elements (numpy's rule)."""
    unknown = shape.index(-1)
    known = math.prod(n for n in shape if n != -1)
    if shape.count(-1) > 1 or known <= 0 or size % known:
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    return shape[:unknown] + (size // known,) + shape[unknown + 1:]


def transpose(a: CudaArray, axes: Sequence[int] | None = None) -> CudaArray:
    """The view of ``a`` with its axes permuted (reversed when ``axes`` is None)."""
    if axes is None:  # every array's own .T: no axes to check
        return CudaArray(a.storage, a.shape[::-1], a.strides[::-1], a.offset)
    axes = as_shape(axes, "axes")
    if len(axes) != a.ndim:
        raise ValueError(f"axes don't match array: got {len(axes)} axes {axes} for an array of {a.ndim} dims")
    axes = normalize_axis_tuple(axes, a.ndim, "axes")
    return CudaArray(a.storage, tuple(a.shape[d] for d in axes), tuple(a.strides[d] for d in axes), a.offset)


def swapaxes(a: CudaArray, axis1: int, axis2: int) -> CudaArray:
    """The view of ``a`` with axes ``axis1`` and ``axis2`` exchanged."""
    axes = list(range(a.ndim))
    i, j = normalize_axis_index(axis1, a.ndim), normalize_axis_index(axis2, a.ndim)
    axes[i], axes[j] = axes[j], axes[i]
    return transpose(a, axes)


def moveaxis(a: CudaArray, source: Any, destination: Any) -> CudaArray:
    """The view of ``a`` with the axes ``source`` moved to positions ``destination``, the others
    keeping their order (numpy's ``moveaxis``)."""
    source = normalize_axis_tuple(source, a.ndim, "source")
    destination = normalize_axis_tuple(destination, a.ndim, "destination")
    if len(source) != len(destination):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have the same number of axes")
    order = [d for d in range(a.ndim) if d not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(a, order)


def expand_dims(a: CudaArray, axis: Any) -> CudaArray:
    """The view of ``a`` with size-1 axes inserted at the positions ``axis`` (an int or a tuple) of the
    result."""
    axes = normalize_axis_tuple(axis, a.ndim + len(as_shape(axis, "axis")), "axis")
    sizes, steps = iter(a.shape), iter(a.strides)
    shape = tuple(1 if d in axes else next(sizes) for d in range(a.ndim + len(axes)))
    strides = tuple(0 if d in axes else next(steps) for d in range(len(shape)))
    return CudaArray(a.storage, shape, strides, a.offset)


def broadcast_to(a: CudaArray, shape: Any) -> CudaArray:
    """The read-only-in-spirit view of ``a`` repeated to ``shape``: stretched and new leading axes get
    stride 0 (nothing is copied). ValueError when ``a``'s shape does not broadcast to ``shape``."""
    shape = as_shape(shape)
    if shape == a.shape:
        return a
    extra = len(shape) - a.ndim
    if extra < 0 or any(n != m and n != 1 for n, m in zip(a.shape, shape[extra:])) or any(n < 0 for n in shape):
        raise ValueError(f"cannot broadcast an array of shape {a.shape} to shape {shape} (each dimension "
                         f"must be equal or 1, and the target must have at least as many dimensions)")
    strides = (0,) * extra + tuple(0 if n != m else s for n, m, s in zip(a.shape, shape[extra:], a.strides))
    return CudaArray(a.storage, shape, strides, a.offset)


def concatenate(arrays: Sequence[CudaArray], axis: int = 0) -> CudaArray:
    """A new array holding ``arrays`` one after the other along ``axis`` (numpy's dtype promotion)."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis_index(axis, first.ndim)
    for k, a in enumerate(arrays):
        if not isinstance(a, CudaArray):
            raise TypeError(f"concatenate: array {k} is a {type(a).__name__}, expected a CudaArray")
        if a.ndim != first.ndim or any(n != m for d, (n, m) in enumerate(zip(a.shape, first.shape)) if d != axis):
            raise ValueError(f"concatenate: array {k} has shape {a.shape}, which must match the shape {first.shape} "
                             f"of array 0 except along axis {axis}")
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = CudaArray.empty(tuple(shape), np.result_type(*(a.dtype for a in arrays)))
    index = [slice(None)] * out.ndim
    start = 0
    for a in arrays:
        index[axis] = slice(start, start + a.shape[axis])
        out[tuple(index)] = a
        start += a.shape[axis]
    return out


def stack(arrays: Sequence[CudaArray], axis: int = 0) -> CudaArray:
    """A new array with ``arrays`` (all of one shape) along a new axis ``axis``."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    axis = normalize_axis_index(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis)


# ------------------------------------------------------------------------------ basic indexing
def basic_view(a: CudaArray, index: Any) -> CudaArray:
    """The view ``a[index]`` for a basic ``index`` (see :func:`tinynorm.backends.is_basic_index`)."""
    items = list(index) if isinstance(index, tuple) else [index]
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but {consumed} were indexed")
    ellipses = [k for k, i in enumerate(items) if i is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    fill = [slice(None)] * (a.ndim - consumed)
    items = items[:ellipses[0]] + fill + items[ellipses[0] + 1:] if ellipses else items + fill
    shape, strides, offset, d = [], [], a.offset, 0
    for item in items:
        if item is None:
            shape.append(1)
            strides.append(0)
            continue
        n, step = a.shape[d], a.strides[d]
        if isinstance(item, slice):
            start, stop, stride = item.indices(n)
            shape.append(len(range(start, stop, stride)))
            strides.append(step * stride)
            offset += start * step if shape[-1] else 0
        else:
            position = operator.index(item)
            if not -n <= position < n:
                raise IndexError(f"index {position} is out of bounds for axis {d} with size {n}")
            offset += (position % n) * step
        d += 1
    return CudaArray(a.storage, tuple(shape), tuple(strides), offset)
