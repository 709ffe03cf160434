"""Rearranging elements: ``flip``, ``roll``, ``rot90``, ``repeat``/``tile``, ``repeat_interleave``,
``movedim``, ``unflatten``, ``unfold`` (sliding windows), ``broadcast_to``, ``meshgrid``, and joining
with ``hstack``/``vstack``/``concat``.

Most are compositions of the view ops (permute, reshape, expand) and ``cat``. ``flip``, ``roll`` and
``repeat`` are ops of their own, each one copy forward and one move of the gradient back: a flip
flips it back, a roll rolls it back, and a repeat sums the copies of each element.
"""
from __future__ import annotations

import operator
import warnings
from typing import Any, Sequence

import numpy as np

from ..autograd.function import Context, Function
from ..tensor import Tensor, tensor
from .dims import normalize_dim, normalize_dims
from .selection import index_select
from .shape import cat, clone, expand, getitem, permute, reshape, transpose


def _flip_index(dims: tuple[int, ...], ndim: int) -> tuple:
    return tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(ndim))


class Flip(Function):
    backward_name = "FlipBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dims: tuple[int, ...]) -> Any:
        ctx.index = _flip_index(dims, x.ndim)
        return ctx.xp.ascontiguousarray(x[ctx.index])

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad[ctx.index]


def _rolled(xp: Any, a: Any, shifts: tuple[int, ...], dims: tuple[int, ...]) -> Any:
    """``a`` with its elements moved ``shifts[k]`` places along ``dims[k]``, wrapping around."""
    for shift, dim in zip(shifts, dims):
        size = a.shape[dim]
        if size == 0 or shift % size == 0:
            continue
        cut = size - shift % size
        head = (slice(None),) * dim + (slice(cut, None),)
        tail = (slice(None),) * dim + (slice(0, cut),)
        a = xp.concatenate([a[head], a[tail]], axis=dim)
    return a


class Roll(Function):
    backward_name = "RollBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, shifts: tuple[int, ...], dims: tuple[int, ...]) -> Any:
        ctx.shifts, ctx.dims = shifts, dims
        return ctx.xp.copy(_rolled(ctx.xp, x, shifts, dims))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return _rolled(ctx.xp, grad, tuple(-s for s in ctx.shifts), ctx.dims)


class Repeat(Function):
    """``x`` (already with as many dims as ``repeats``) copied ``repeats[d]`` times along each dim."""

    backward_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, repeats: tuple[int, ...]) -> Any:
        ctx.shape, ctx.repeats = x.shape, repeats
        interleaved = tuple(n for pair in zip(repeats, x.shape) for n in pair)  # (r0, n0, r1, n1, ...)
        spread = ctx.xp.reshape(x, tuple(n for m in x.shape for n in (1, m)))
        return ctx.xp.reshape(ctx.xp.ascontiguousarray(ctx.xp.broadcast_to(spread, interleaved)),
                              tuple(r * n for r, n in zip(repeats, x.shape)))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        interleaved = tuple(n for pair in zip(ctx.repeats, ctx.shape) for n in pair)
        copies = tuple(range(0, 2 * len(ctx.shape), 2))
        return ctx.xp.sum(ctx.xp.reshape(grad, interleaved), axis=copies)


def _dims_argument(dims: Any) -> tuple:
    """``dims`` given as ints (``x.flip(0, 1)``) or one sequence (``x.flip((0, 1))``) as a tuple."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        return tuple(dims[0])
    return tuple(dims)


def flip(input: Tensor, dims: Any) -> Tensor:  # noqa: A002  (PyTorch's argument name)
    """A copy of ``input`` with the order of the elements reversed along ``dims`` (a sequence of dims)."""
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"flip(): argument 'dims' must be tuple of ints, not {type(dims).__name__}")
    dims = normalize_dims(dims, input.ndim, "flip")
    return Flip.apply(input, dims)


def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:  # noqa: A002
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:  # noqa: A002
    """``input`` with its elements moved ``shifts`` places along ``dims`` (of the flattened tensor
    when None, then restored to its shape), wrapping around."""
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: when dims is not given, shifts must be a single number, got {shifts}")
        return reshape(Roll.apply(reshape(input, (-1,)), shifts, (0,)), input.array.shape)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    dims = tuple(normalize_dim(d, input.ndim, "roll") for d in dims)
    return Roll.apply(input, tuple(operator.index(s) for s in shifts), dims)


def repeat(input: Tensor, *sizes: Any) -> Tensor:  # noqa: A002
    """``input`` copied ``sizes[d]`` times along each dim (``Tensor.repeat``); extra leading sizes add dims."""
    sizes = tuple(operator.index(n) for n in _dims_argument(sizes))
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
    padded = reshape(input, (1,) * (len(sizes) - input.ndim) + tuple(input.array.shape))
    return Repeat.apply(padded, sizes)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002
    """``input`` repeated ``dims[d]`` times along each dim; fewer ``dims`` than dims count from the end."""
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,  # noqa: A002
                      output_size: int | None = None) -> Tensor:
    """Each element (each slice along ``dim``; of the flattened tensor when None) repeated ``repeats``
    times in place: ``[a, b] -> [a, a, b, b]``. ``repeats`` may be a tensor with one count per element;
    ``repeat_interleave(counts)`` alone repeats ``0, 1, 2, ...``."""
    if repeats is None:
        counts = input
        return repeat_interleave(tensor(list(range(counts.numel())), device=counts.device), counts, 0)
    x, d = (reshape(input, (-1,)), 0) if dim is None else (input, normalize_dim(dim, input.ndim, "repeat_interleave"))
    if x.ndim == 0:
        x = reshape(x, (1,))
    size = x.array.shape[d]
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1 or repeats.numel() not in (1, size):
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats.numel()} and input.size({d}) = {size}")
        counts = repeats.numpy().reshape(-1).tolist()
        if len(counts) == 1:
            repeats = counts[0]
        else:
            if any(n < 0 for n in counts):
                raise RuntimeError("repeats can not be negative")
            positions = [i for i, n in enumerate(counts) for _ in range(n)]
            return index_select(x, d, tensor(positions, device=x.device).reshape(-1).long())
    repeats = operator.index(repeats)
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    shape = x.array.shape
    spread = expand(reshape(x, shape[:d + 1] + (1,) + shape[d + 1:]), shape[:d + 1] + (repeats,) + shape[d + 1:])
    return reshape(spread, shape[:d] + (size * repeats,) + shape[d + 1:])


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:  # noqa: A002
    """``input`` with the dims ``source`` moved to the positions ``destination`` (the others keep their order)."""
    source = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    destination = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
                           f"contain the same number of dims as destination ({list(destination)} dims)")
    source = normalize_dims(source, input.ndim, "movedim", sort=False) or ()
    destination = normalize_dims(destination, input.ndim, "movedim", sort=False) or ()
    order = [d for d in range(input.ndim) if d not in source]
    for target, d in sorted(zip(destination, source)):
        order.insert(target, d)
    return permute(input, tuple(order))


moveaxis = movedim


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:  # noqa: A002
    """``input`` with dim ``dim`` split into dims of ``sizes`` (one of them may be -1)."""
    d = normalize_dim(dim, input.ndim, "unflatten")
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    shape = input.array.shape
    known = 1
    for n in sizes:
        known *= n if n != -1 else 1
    if -1 not in sizes and known != shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shape[d]}) in the input tensor")
    return reshape(input, shape[:d] + sizes + shape[d + 1:])


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:  # noqa: A002
    """The view of ``input`` broadcast to ``size`` (``expand``)."""
    return expand(input, tuple(size))


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids: for 1-D tensors of sizes n1, n2, ..., tensor ``k`` of the result repeats
    ``tensors[k]`` along dim ``k`` (``indexing='ij'``, the default) of an ``(n1, n2, ...)`` grid;
    ``'xy'`` swaps the first two dims (Cartesian indexing). The results are views."""
    tensors = _dims_argument(tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D")
        if t.dtype != tensors[0].dtype or t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype and device")
    swap = indexing == "xy" and len(tensors) >= 2
    ordered = [tensors[1], tensors[0], *tensors[2:]] if swap else list(tensors)
    shape = tuple(t.numel() for t in ordered)
    grids = []
    for k, t in enumerate(ordered):
        along = tuple(-1 if j == k else 1 for j in range(len(ordered)))
        grids.append(expand(reshape(t, along), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def atleast_1d(input: Tensor) -> Tensor:  # noqa: A002
    return reshape(input, (1,)) if input.ndim == 0 else input


def atleast_2d(input: Tensor) -> Tensor:  # noqa: A002
    return reshape(input, (1,) * (2 - input.ndim) + tuple(input.array.shape)) if input.ndim < 2 else input


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined column-wise: along dim 1, or dim 0 when they are 1-D."""
    pieces = [atleast_1d(t) for t in tensors]
    return cat(pieces, 0 if pieces and pieces[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined row-wise: along dim 0, 1-D tensors as rows."""
    return cat([atleast_2d(t) for t in tensors], 0)


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """``cat`` under its other name."""
    return cat(tensors, dim)


concatenate = concat
row_stack = vstack


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """The windows of ``size`` elements along ``dimension``, ``step`` apart: that dim becomes the window
    count and a new last dim of ``size`` holds each window (read with an index, so overlapping windows
    add their gradients; PyTorch's result is a view)."""
    d = normalize_dim(dimension, input.ndim, "unfold")
    x = input if input.ndim else reshape(input, (1,))
    length = x.shape[d]
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    starts = np.arange(0, length - size + 1, step)
    windows = tensor(starts[:, None] + np.arange(size), device=input.device)
    result = movedim(getitem(x, (slice(None),) * d + (windows,)), d + 1, -1)
    return reshape(result, (size,)) if input.ndim == 0 else result


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:  # noqa: A002
    """``input`` turned ``k`` quarter turns in the plane of ``dims``, from the first dim towards the second."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    first, second = (normalize_dim(d, input.ndim, "rot90") for d in dims)
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {first} and dim1 = {second}")
    turns = k % 4
    if turns == 1:
        return transpose(flip(input, (second,)), first, second)
    if turns == 2:
        return flip(input, (first, second))
    if turns == 3:
        return transpose(flip(input, (first,)), first, second)
    return clone(input)
