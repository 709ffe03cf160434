"""Advanced indexing of :class:`CudaArray`: ``a[index]``, ``a[index] = v``, ``take_along_axis``, ``index_add``.

Indices follow numpy: ints, slices, ``None``, ``...`` and integer arrays (``CudaArray``, numpy arrays
or lists; negative entries count from the end) that broadcast together, and boolean masks, which
stand for the integer arrays of their ``True`` positions. The dims the integer arrays index are
replaced by their broadcast shape, in place when those arrays (and ints between them) are adjacent,
first otherwise.

An index is first resolved against the array's layout (:func:`_resolve`): ints and slices only move
the offset and change strides, and the index arrays become one storage offset per broadcast entry
(``positions``). The kernels of :mod:`tinynorm.kernels.cuda.indexing` then read or write through that
layout. Reading back to the host happens only where numpy's semantics need it: one flag per call
checking that no index is out of range, and the number of True entries of a boolean mask (to size the
result). Scatters (``a[index] = v``, ``index_add``) group repeated positions on the device.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ...kernels.cuda import indexing as kernels
from ...kernels.cuda.strided import copy_strided, fill, zeros
from .. import is_basic_index
from .array import CudaArray, check_array

__all__ = ["count_indices", "index_add", "take", "take_along_axis"]  # getitem/setitem serve CudaArray[...]

Shape = tuple[int, ...]


@dataclass
class _Layout:
    """An index resolved against an array: the selection is ``shape``/``strides`` from ``base``, where
    the ``axis`` dim (stride 0) runs over ``positions``, the flattened ``index_shape`` entries. ``keys``
    (in ``[0, key_count)``) number the entries' index tuples: equal where the positions are."""

    base: int
    shape: Shape
    strides: Shape
    axis: int
    positions: Any
    keys: Any
    key_count: int
    index_shape: Shape

    @property
    def result_shape(self) -> Shape:
        """The shape of ``a[index]``: the index axis unfolded into the index arrays' broadcast shape."""
        return self.shape[:self.axis] + self.index_shape + self.shape[self.axis + 1:]


def _device_index(item: Any) -> CudaArray:
    """A numpy array or list index as a CudaArray (an empty list is an empty integer index, as in numpy)."""
    array = np.asarray(item)
    if isinstance(item, list) and array.size == 0:
        array = array.astype(np.int64)
    return CudaArray.from_host(array)


def _classify(item: Any) -> Any:
    """One index item as an int, slice, None, Ellipsis or an integer/boolean CudaArray."""
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(f"index: a boolean scalar is not a supported index, got {item!r}")
    if isinstance(item, (int, np.integer)):
        return int(item)
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, (np.ndarray, list)):
        item = _device_index(item)
    if not isinstance(item, CudaArray):
        raise TypeError(f"index: expected ints, slices, None, Ellipsis or integer/boolean arrays, "
                        f"got {type(item).__name__}")
    if item.dtype.kind not in "biu":
        raise IndexError(f"arrays used as indices must be of integer (or boolean) type, got {item.dtype}")
    if item.dtype.kind == "b" and item.ndim == 0:
        raise TypeError("index: a boolean scalar is not a supported index, got a 0-d boolean array")
    return item


def _dims_used(item: Any) -> int:
    """How many dims of the indexed array an item consumes."""
    if isinstance(item, CudaArray) and item.dtype.kind == "b":
        return item.ndim
    return 0 if item is None or item is Ellipsis else 1


def _mask_positions(mask: CudaArray, shape: Shape, first_axis: int) -> list[CudaArray]:
    """The integer arrays (one per mask dim) of a boolean mask's True positions (numpy's ``nonzero``)."""
    if mask.shape != shape:
        raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed dims "
                         f"{first_axis}..{first_axis + mask.ndim - 1} of shape {shape}")
    return list(kernels.nonzero(mask.contiguous().subarray(0, mask.size), mask.shape).rows())


def _broadcast_strides(a: CudaArray, shape: Shape) -> Shape:
    """``a``'s strides as a view broadcast to ``shape`` (0 along new and stretched dims)."""
    padded = (1,) * (len(shape) - a.ndim) + a.shape
    strides = (0,) * (len(shape) - a.ndim) + a.strides
    return tuple(0 if n == 1 and m != 1 else s for n, m, s in zip(padded, shape, strides))


def _kernel_view(shape: Shape, strides: Shape) -> tuple[Shape, Shape]:
    """Kernels index with tuples of at least one dim: a 0-d view is one element of stride 0."""
    return (shape, strides) if shape else ((1,), (0,))


def _positions(arrays: list[tuple[CudaArray, int, int, int]], mode: str) -> tuple[Any, Any, int, Shape]:
    """Storage offsets and keys (:func:`kernels.flat_positions`, checked or clipped by ``mode``) of the
    broadcast index ``arrays`` ((index, axis, size, stride) each), the number of possible keys, and the
    arrays' broadcast shape."""
    shapes = [index.shape for index, *_ in arrays]
    try:
        index_shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(s) for s in shapes)) from None
    count = math.prod(index_shape)
    stacked = CudaArray.empty((len(arrays), count), kernels.INDEX_DTYPE)
    for row, (index, *_) in zip(stacked.rows(), arrays):
        shape, strides = _kernel_view(index_shape, _broadcast_strides(index, index_shape))
        copy_strided(row, index.storage, index.offset, strides, shape)  # also casts to int64
    axes, sizes, strides = (tuple(column) for column in zip(*(entry[1:] for entry in arrays)))
    positions, keys = kernels.flat_positions(stacked, sizes, strides, axes, mode)
    return positions, keys, math.prod(sizes), index_shape


def _resolve(a: CudaArray, index: Any, mode: str = "raise") -> _Layout:
    """Resolve ``index`` against ``a``'s layout (numpy's rules; see the module docstring). Index
    arrays are checked (``mode='raise'``), clipped into range (``'clip'``) or trusted (``'checked'``)."""
    items = [_classify(item) for item in (index if isinstance(index, tuple) else (index,))]
    used = sum(_dims_used(item) for item in items)
    if used > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but {used} were indexed")
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    has_arrays = any(isinstance(item, CudaArray) for item in items)
    base, dim = a.offset, 0
    dims: list[tuple[int, int]] = []  # (size, stride) of the result's dims other than the index axis
    arrays: list[tuple[CudaArray, int, int, int]] = []  # (index, axis, size, stride)
    advanced: list[int] = []  # item numbers of the arrays (and, with arrays, the ints)
    axis = None
    for number, item in enumerate(items):
        if item is None:
            dims.append((1, 0))
        elif item is Ellipsis:
            count = a.ndim - used
            dims += list(zip(a.shape[dim:dim + count], a.strides[dim:dim + count]))
            dim += count
        elif isinstance(item, slice):
            start, stop, step = item.indices(a.shape[dim])
            dims.append((len(range(start, stop, step)), step * a.strides[dim]))
            base += start * a.strides[dim]
            dim += 1
        else:
            if isinstance(item, int):
                size = a.shape[dim]
                if not -size <= item < size:
                    raise IndexError(f"index {item} is out of bounds for axis {dim} with size {size}")
                base += (item % size) * a.strides[dim]
            elif item.dtype.kind == "b":
                for k, coords in enumerate(_mask_positions(item, a.shape[dim:dim + item.ndim], dim)):
                    arrays.append((coords, dim + k, a.shape[dim + k], a.strides[dim + k]))
            else:
                arrays.append((item, dim, a.shape[dim], a.strides[dim]))
            dim += _dims_used(item)
            if has_arrays:
                advanced.append(number)
                axis = len(dims) if axis is None else axis
    dims += list(zip(a.shape[dim:], a.strides[dim:]))
    if not arrays:  # ints and slices only: one "entry" at offset 0, key 0
        zero = zeros(1, kernels.INDEX_DTYPE)
        return _Layout(base, tuple(n for n, _ in dims) + (1,), tuple(s for _, s in dims) + (0,), len(dims),
                       zero, zero, 1, ())
    if advanced != list(range(advanced[0], advanced[-1] + 1)):  # not adjacent: the index dims go first
        axis = 0
    positions, keys, key_count, index_shape = _positions(arrays, mode)
    dims.insert(axis, (math.prod(index_shape), 0))
    return _Layout(base, tuple(n for n, _ in dims), tuple(s for _, s in dims), axis, positions, keys, key_count,
                   index_shape)


def getitem(a: CudaArray, index: Any, mode: str = "raise") -> CudaArray:
    """``a[index]`` with numpy's semantics, as a new C-contiguous array (also for basic indices); index
    arrays checked (``mode='raise'``) or clipped into range (``'clip'``)."""
    layout = _resolve(a, index, mode)
    out = CudaArray.empty(layout.result_shape, a.dtype)
    kernels.gather(out.storage, a.storage, layout.base, layout.shape, layout.strides, layout.axis, layout.positions)
    return out


def take(a: CudaArray, indices: Any, axis: int | None = None, mode: str = "raise") -> CudaArray:
    """numpy's ``take``: the entries of ``a`` (flattened when ``axis`` is None) at ``indices`` along
    ``axis``. ``mode='raise'`` checks the indices (negative ones count from the end), reading one flag
    back from the device; ``'clip'`` clips them into range and reads nothing back, so the host does not
    wait for the GPU (an embedding lookup on ids checked beforehand). numpy's ``'wrap'`` is not supported."""
    if mode not in ("raise", "clip"):
        raise ValueError(f"take: mode must be 'raise' or 'clip' on the CUDA device, got {mode!r}")
    indices = indices if isinstance(indices, CudaArray) else _device_index(indices)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"take: indices must be integers, got dtype {indices.dtype}")
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = normalize_axis_index(axis, a.ndim)
    return getitem(a, (slice(None),) * axis + (indices,), mode)


def _as_values(value: Any, shape: Shape, dtype: np.dtype) -> CudaArray:
    """``value`` (a scalar, numpy array or CudaArray) as a CudaArray that broadcasts to ``shape``."""
    if not isinstance(value, CudaArray):
        host = np.asarray(value, dtype=dtype if np.ndim(value) == 0 else None)
        value = CudaArray.from_host(host)
    extra = value.ndim - len(shape)
    if extra > 0 and all(n == 1 for n in value.shape[:extra]):  # numpy drops leading dims of size 1
        value = CudaArray(value.storage, value.shape[extra:], value.strides[extra:], value.offset)
    try:
        fits = value.ndim <= len(shape) and np.broadcast_shapes(value.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {shape}")
    return value


def _scatter(dest: CudaArray, layout: _Layout, values: CudaArray, accumulate: bool) -> None:
    """Store (or add) ``values``, broadcast to the selection, at ``layout`` in ``dest``: all on the device."""
    shape = layout.result_shape
    values_shape, values_strides = _kernel_view(shape, _broadcast_strides(values, shape))
    kernels.scatter(dest.storage, layout.base, layout.shape, layout.strides, layout.axis, layout.positions,
                    layout.keys, layout.key_count, values.storage, values.offset, values_strides, values_shape,
                    accumulate)


def setitem(a: CudaArray, index: Any, value: Any) -> None:
    """``a[index] = value``: a scalar or an array broadcast to the selection, written through ``a``'s strides.

    With repeated indices the last entry wins (what numpy does in practice), on every run.
    """
    layout = _resolve(a, index)
    values = _as_values(value, layout.result_shape, a.dtype)
    if values.storage is a.storage:  # a view of a: read a copy while writing a
        values = _copy(values)
    _scatter(a, layout, values, accumulate=False)


def _copy(a: CudaArray) -> CudaArray:
    """A C-contiguous copy of ``a`` (even when ``a`` is contiguous already)."""
    out = CudaArray.empty(a.shape, a.dtype)
    shape, strides = _kernel_view(a.shape, a.strides)
    copy_strided(out.storage, a.storage, a.offset, strides, shape)
    return out


def index_add(shape: Shape, index: Any, values: CudaArray) -> CudaArray:
    """Zeros of ``shape`` (``values``' dtype) with ``values`` added at ``index``; repeated indices add up,
    in index order (deterministic). The adjoint of ``x[index]``: the gradient of an indexing op.

    The op has checked the index (it read an array of ``shape`` in the forward pass), so it is not
    checked again (``mode='checked'``): nothing is read back, the host never waits for the GPU.
    """
    out = CudaArray.empty(shape, check_array("index_add: values", values).dtype)
    fill(out.storage, 0)
    if is_basic_index(index):  # ints and slices never select an element twice: a strided copy will do
        out[index] = values
        return out
    layout = _resolve(out, index, "checked")
    _scatter(out, layout, _as_values(values, layout.result_shape, values.dtype), accumulate=True)
    return out


def count_indices(indices: CudaArray, upper: int, ignore_index: int | None = None) -> tuple[int, int]:
    """``(outside, ignored)``: entries of the integer array ``indices`` outside ``[0, upper)`` and not
    ``ignore_index``, and entries equal to ``ignore_index`` (0 when None); one launch, two ints read back."""
    if check_array("count_indices: indices", indices).dtype.kind not in "iu":
        raise TypeError(f"count_indices: indices must be a CudaArray of integers, got {indices.dtype}")
    return kernels.count_indices(indices.contiguous().subarray(0, indices.size), upper, ignore_index)


def take_along_axis(a: CudaArray, indices: CudaArray, axis: int) -> CudaArray:
    """numpy's ``take_along_axis``: ``out[..., i, ...] = a[..., indices[..., i, ...], ...]`` along ``axis``.

    ``indices`` (integers, ``a.ndim`` dims) broadcasts against ``a`` in the other dims; negative entries
    count from the end. The op has checked them, so they are not checked again (``mode='checked'``):
    nothing is read back, the host never waits for the GPU.
    """
    if not isinstance(a, CudaArray) or not isinstance(indices, CudaArray):
        raise TypeError(f"take_along_axis: a and indices must be CudaArrays, got "
                        f"{type(a).__name__} and {type(indices).__name__}")
    if indices.dtype.kind not in "iu":
        raise IndexError(f"take_along_axis: indices must be integers, got dtype {indices.dtype}")
    if indices.ndim != a.ndim:
        raise ValueError(f"take_along_axis: indices and a must have the same number of dims, "
                         f"got {indices.ndim} and {a.ndim}")
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"take_along_axis: axis {axis} is out of range for a {a.ndim}-d array")
    axis %= a.ndim
    others = a.shape[:axis] + (1,) + a.shape[axis + 1:]
    try:
        shape = np.broadcast_shapes(others, indices.shape[:axis] + (1,) + indices.shape[axis + 1:])
    except ValueError:
        raise ValueError(f"take_along_axis: indices of shape {indices.shape} do not broadcast against "
                         f"a of shape {a.shape} outside axis {axis}") from None
    shape = shape[:axis] + (indices.shape[axis],) + shape[axis + 1:]
    strides = _broadcast_strides(CudaArray(a.storage, others, a.strides, a.offset), shape)
    strides = strides[:axis] + (0,) + strides[axis + 1:]
    out = CudaArray.empty(shape, a.dtype)
    kernels.take_along(out.storage, a.storage, a.offset, strides, a.shape[axis], a.strides[axis],
                       indices.storage, indices.offset, _broadcast_strides(indices, shape), shape)
    return out
