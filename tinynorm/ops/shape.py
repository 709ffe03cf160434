"""Ops that move values without changing them: reshape, permute, expand, indexing, cat/stack,
dtype casts and device moves. Their backward moves the gradient back the same way.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..autograd.function import Context, Function
from ..backends import get_backend
from ..tensor import Tensor, on_device, tensor
from .reductions import normalize_dims


def _dim(dim: int, ndim: int, op: str) -> int:
    (d,) = normalize_dims(dim, ndim, op)
    return d


class Reshape(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        try:
            return ctx.xp.reshape(x, shape)
        except ValueError:
            raise ValueError(
                f"reshape: cannot reshape a tensor of shape {tuple(x.shape)} ({x.size} elements) "
                f"into shape {tuple(shape)}"
            ) from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.reshape(grad, ctx.shape)


class Permute(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, dims: tuple) -> Any:
        ctx.dims = dims
        return ctx.xp.transpose(x, dims)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return ctx.xp.transpose(grad, inverse)


class Expand(Function):
    """Broadcast to a larger shape; the engine sums the gradient back (``unbroadcast``)."""

    @staticmethod
    def forward(ctx: Context, x: Any, shape: tuple) -> Any:
        try:
            return ctx.xp.broadcast_to(x, shape)
        except ValueError:
            raise ValueError(f"expand: cannot expand shape {tuple(x.shape)} to {tuple(shape)}") from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad


class GetItem(Function):
    """``x[index]`` for basic (ints, slices) and integer-array indexing; gradient by scatter-add."""

    @staticmethod
    def forward(ctx: Context, x: Any, index: Any) -> Any:
        ctx.shape, ctx.index = x.shape, index
        try:
            return x[index]
        except IndexError as error:
            raise IndexError(f"index {index!r} is invalid for a tensor of shape {tuple(x.shape)}: {error}") from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        # The forward read x[index], so every index is in range: no need to check (and on CUDA wait) again.
        return ctx.xp.index_add(ctx.shape, ctx.index, grad, checked=True)


class TakeRows(Function):
    """``x[indices]`` along dim 0 for integer indices already checked to lie in ``[0, len(x))``
    (embedding lookups): unlike ``x[indices]``, nothing is read back from the device to check them."""

    @staticmethod
    def forward(ctx: Context, x: Any, indices: Any) -> Any:
        ctx.shape, ctx.indices = x.shape, indices
        return ctx.xp.take(x, indices, axis=0, mode="clip")  # clipping leaves checked indices unchanged

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.index_add(ctx.shape, ctx.indices, grad, checked=True), None


class Cat(Function):
    @staticmethod
    def forward(ctx: Context, *arrays: Any, dim: int) -> Any:
        ctx.dim = dim
        ctx.sizes = [a.shape[dim] for a in arrays]
        try:
            return ctx.xp.concatenate(arrays, axis=dim)
        except ValueError:
            shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
            raise ValueError(f"cat: shapes {shapes} must match except in dim {dim}") from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        pieces, start = [], 0
        for size in ctx.sizes:
            index = [slice(None)] * grad.ndim
            index[ctx.dim] = slice(start, start + size)
            pieces.append(grad[tuple(index)])
            start += size
        return tuple(pieces)


class Cast(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, dtype: Any) -> Any:
        ctx.dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad.astype(ctx.dtype)


class Clone(Function):
    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        return ctx.xp.copy(x)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad


class ToDevice(Function):
    """Copy to another device (through host memory); the gradient is copied back to the source device."""

    @staticmethod
    def forward(ctx: Context, x: Any, device: str) -> Any:
        ctx.target, ctx.device = get_backend(device), device
        return ctx.target.from_numpy(ctx.xp.to_numpy(x))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.from_numpy(ctx.target.to_numpy(grad))


def to_device(x: Tensor, device: str) -> Tensor:
    return ToDevice.apply(x, device)


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    return Reshape.apply(x, tuple(shape))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if x.ndim == 0:
        return reshape(x, (1,))
    start, end = _dim(start_dim, x.ndim, "flatten"), _dim(end_dim, x.ndim, "flatten")
    shape = x.shape
    return reshape(x, shape[:start] + (-1,) + shape[end + 1:])


def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    dims = tuple(dims)
    if sorted(d % max(x.ndim, 1) for d in dims) != list(range(x.ndim)):
        raise ValueError(f"permute: dims {dims} are not a permutation of the {x.ndim} dims of shape {x.shape}")
    return Permute.apply(x, tuple(d % x.ndim for d in dims))


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    dims = list(range(x.ndim))
    a, b = _dim(dim0, x.ndim, "transpose"), _dim(dim1, x.ndim, "transpose")
    dims[a], dims[b] = dims[b], dims[a]
    return Permute.apply(x, tuple(dims))


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    d = dim % (x.ndim + 1)
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def squeeze(x: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        return reshape(x, tuple(n for n in x.shape if n != 1))
    d = _dim(dim, x.ndim, "squeeze")
    return x if x.shape[d] != 1 else reshape(x, x.shape[:d] + x.shape[d + 1:])


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Broadcast ``x`` to ``shape``; -1 keeps a dimension's size, as in PyTorch."""
    shape = tuple(shape)
    offset = len(shape) - x.ndim
    if offset < 0:
        raise ValueError(f"expand: target shape {shape} has fewer dims than the tensor's {x.shape}")
    shape = tuple(x.shape[i - offset] if n == -1 else n for i, n in enumerate(shape))
    return Expand.apply(x, shape)


def getitem(x: Tensor, index: Any) -> Tensor:
    return GetItem.apply(x, _raw_index(index, x))


def _raw_index(index: Any, x: Tensor) -> Any:
    """``index`` with its index arrays as arrays on ``x``'s device (index tensors carry no gradient)."""
    if isinstance(index, tuple):
        return tuple(_raw_index_item(item, x) for item in index)
    return _raw_index_item(index, x)


def _raw_index_item(item: Any, x: Tensor) -> Any:
    """One entry of an index: tensors become their arrays, lists (and arrays of another device's
    kind, such as numpy arrays indexing a CUDA tensor) become arrays on ``x``'s device."""
    if isinstance(item, Tensor):
        return on_device(item, x.device, "indexing", "the index tensor is", "the indexed tensor is").array
    if isinstance(item, list) or (getattr(item, "ndim", 0) and not isinstance(item, x._backend.ndarray)):
        return tensor(item, device=x.device).array
    return item


def take_rows(x: Tensor, indices: Tensor) -> Tensor:
    """``x[indices]`` along dim 0 for integer ``indices`` on ``x``'s device that the caller has checked
    with :func:`check_indices` (an unchecked index would be clipped into range, not reported)."""
    return TakeRows.apply(x, indices)


def check_indices(xp: Any, indices: Any, upper: int, op: str, name: str = "indices",
                  ignore_index: int | None = None) -> int:
    """Raise ``IndexError`` unless every entry of the integer array ``indices`` (an array of backend
    ``xp``; ``name`` in the message) is in ``[0, upper)``, entries equal to ``ignore_index`` excepted;
    return how many entries are not ``ignore_index`` (what a loss's 'mean' divides by).

    The counting runs on the device and brings two numbers back: out-of-range indices would otherwise
    make a kernel read outside its array. The offending values are gathered on the host only to report
    them.
    """
    outside, ignored = xp.count_indices(indices, upper, ignore_index)
    if outside:
        values = xp.to_numpy(indices)
        bad = get_backend("cpu").indices_out_of_range(values, upper, ignore_index)
        raise IndexError(
            f"{op}: {name} must be in [0, {upper - 1}]"
            + ("" if ignore_index is None else f" (or {ignore_index}, ignored)")
            + f", got {values[bad][:5].tolist()} (the first of {outside} out of range)"
        )
    return indices.size - ignored


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    return Cat.apply(*tensors, dim=_dim(dim, tensors[0].ndim, "cat"))


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack: all tensors must have the same shape, got {sorted(shapes)}")
    d = dim % (tensors[0].ndim + 1)
    return cat([unsqueeze(t, d) for t in tensors], dim=d)


def cast(x: Tensor, dtype: Any) -> Tensor:
    if dtype.kind != "f" and x.requires_grad:
        return Tensor._from_array(x.array.astype(dtype), x.device)
    return Cast.apply(x, dtype)


def clone(x: Tensor) -> Tensor:
    return Clone.apply(x)
