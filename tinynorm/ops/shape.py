"""Ops that move values without changing them: reshape and view, permute, expand, indexing, cat/stack,
splitting, dtype casts and device moves. Their backward moves the gradient back the same way.

Reshape (where the strides allow), permute, expand and basic indexing are views, as in PyTorch: the
result shares its input's memory (``makes_view``), so an in-place write through either is seen by both.
Their ``view`` method makes the view of an array; an in-place write through a view replays it.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

from .. import dtypes
from .._checks import check_tensor, type_name
from ..autograd.function import Context, Function
from ..backends import get_backend, indices_out_of_range, is_basic_index
from ..tensor import Tensor, on_device, tensor
from .dims import normalize_dim, normalize_dims


class Reshape(Function):
    backward_name = "ViewBackward0"
    makes_view = True  # when the strides allow it; otherwise the backend copies

    @staticmethod
    def view(xp: Any, x: Any, shape: tuple) -> Any:
        return xp.reshape(x, shape)

    @staticmethod
    def forward(ctx: Context, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        return Reshape.view(ctx.xp, x, shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.reshape(grad, ctx.shape)


class Squeeze(Reshape):
    """``squeeze()``: every size-1 dim dropped (a reshape, named as PyTorch names it)."""

    backward_name = "SqueezeBackward0"


class SqueezeDim(Reshape):
    backward_name = "SqueezeBackward1"


class SqueezeDims(Reshape):
    backward_name = "SqueezeBackward2"


class Unsqueeze(Reshape):
    backward_name = "UnsqueezeBackward0"


class View(Reshape):
    """Reshape that must not copy: ``Tensor.view``."""

    @staticmethod
    def view(xp: Any, x: Any, shape: tuple) -> Any:
        try:
            return xp.view(x, shape)
        except ValueError:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one dimension "
                f"spans across two contiguous subspaces): a tensor of shape {tuple(x.shape)} cannot be viewed "
                f"as {tuple(shape)} without a copy. Use .reshape(...) instead."
            ) from None

    @staticmethod
    def forward(ctx: Context, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        return View.view(ctx.xp, x, shape)


class Permute(Function):
    backward_name = "PermuteBackward0"
    makes_view = True

    @staticmethod
    def view(xp: Any, x: Any, dims: tuple) -> Any:
        return xp.transpose(x, dims)

    @staticmethod
    def forward(ctx: Context, x: Any, dims: tuple) -> Any:
        ctx.dims = dims
        return Permute.view(ctx.xp, x, dims)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return ctx.xp.transpose(grad, inverse)


class Transpose(Permute):
    backward_name = "TransposeBackward0"


class T(Permute):
    backward_name = "TBackward0"


class Expand(Function):
    """Broadcast to a larger shape (a read-only view); the engine sums the gradient back (``unbroadcast``)."""

    backward_name = "ExpandBackward0"
    makes_view = True

    @staticmethod
    def view(xp: Any, x: Any, shape: tuple) -> Any:
        return xp.broadcast_to(x, shape)

    @staticmethod
    def forward(ctx: Context, x: Any, shape: tuple) -> Any:
        return Expand.view(ctx.xp, x, shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad


class GetItem(Function):
    """``x[index]`` for basic (ints, slices: a view) and advanced (integer arrays, masks: a copy) indexing;
    gradient by scatter-add."""

    backward_name = "IndexBackward0"
    makes_view = True  # basic indices only: advanced indexing copies

    @staticmethod
    def view(xp: Any, x: Any, index: Any) -> Any:
        try:
            return x[index]
        except IndexError as error:
            raise IndexError(f"index {index!r} is invalid for a tensor of shape {tuple(x.shape)}: {error}") from None

    @staticmethod
    def forward(ctx: Context, x: Any, index: Any) -> Any:
        ctx.shape, ctx.index = x.shape, index
        return GetItem.view(ctx.xp, x, index)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        # The forward read x[index], so every index is in range: no need to check (and on CUDA wait) again.
        return ctx.xp.index_add(ctx.shape, ctx.index, grad)


class Select(GetItem):
    """Basic indexing whose last step picks one position (``x[0]``, ``x[1:, 2]``), named as PyTorch names it."""

    backward_name = "SelectBackward0"


class Slice(GetItem):
    backward_name = "SliceBackward0"


class IndexUnsqueeze(GetItem):
    """Basic indexing whose last step is ``None`` (``x[:, None]``)."""

    backward_name = "UnsqueezeBackward0"


class Alias(GetItem):
    backward_name = "AliasBackward0"


def _basic_index_node(index: Any) -> type[GetItem]:
    """The node class PyTorch names a basic index after: its last step other than ``:`` and ``...``."""
    items = index if isinstance(index, tuple) else (index,)
    for item in reversed(items):
        if item is None:
            return IndexUnsqueeze
        if isinstance(item, slice):
            if item != slice(None) or not isinstance(index, tuple):
                return Slice
        elif item is not Ellipsis:
            return Select
    return Alias


class TakeRows(Function):
    """``x[indices]`` along dim 0 for integer indices already checked to lie in ``[0, len(x))``
    (embedding lookups): unlike ``x[indices]``, nothing is read back from the device to check them."""

    backward_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, indices: Any) -> Any:
        ctx.shape, ctx.indices = x.shape, indices
        return ctx.xp.take(x, indices, axis=0, mode="clip")  # clipping leaves checked indices unchanged

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.index_add(ctx.shape, ctx.indices, grad), None


class Cat(Function):
    backward_name = "CatBackward0"

    @staticmethod
    def forward(ctx: Context, *arrays: Any, dim: int) -> Any:
        ctx.dim = dim
        ctx.sizes = [a.shape[dim] for a in arrays]
        try:
            return ctx.xp.concatenate(arrays, axis=dim)
        except ValueError:
            shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
            raise RuntimeError(f"cat: shapes {shapes} must match except in dim {dim}") from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        pieces, start = [], 0
        for size in ctx.sizes:
            index = [slice(None)] * grad.ndim
            index[ctx.dim] = slice(start, start + size)
            pieces.append(grad[tuple(index)])
            start += size
        return tuple(pieces)


class Stack(Cat):
    """``stack``: a concatenation of the inputs, each given a new size-1 dim first."""

    backward_name = "StackBackward0"


class Cast(Function):
    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dtype: Any) -> Any:
        ctx.dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad.astype(ctx.dtype)


class Clone(Function):
    """A copy, in the same memory layout (``contiguous=False``, PyTorch's ``clone``) or row-major."""

    backward_name = "CloneBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, contiguous: bool = False) -> Any:
        return ctx.xp.ascontiguousarray(x) if contiguous else ctx.xp.copy(x)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad


class ToDevice(Function):
    """Copy to another device (through host memory); the gradient is copied back to the source device."""

    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, device: str) -> Any:
        ctx.target, ctx.device = get_backend(device), device
        return ctx.target.from_numpy(ctx.xp.to_numpy(x))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.from_numpy(ctx.target.to_numpy(grad))


def to_device(x: Tensor, device: str) -> Tensor:
    return ToDevice.apply(x, device)


def _target_shape(x: Tensor, shape: Sequence[int], op: str) -> tuple[int, ...]:
    """``shape`` with its one -1 filled in, checked against ``x``'s number of elements (PyTorch's errors)."""
    check_tensor(op, "input", x)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{op}(): argument 'shape' must be a tuple of ints, not {type_name(shape)}")
    try:
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{op}(): shape must be a sequence of ints, got {tuple(shape)!r}") from None
    if any(n < -1 for n in shape):
        raise RuntimeError(f"{op}(): invalid shape dimension {min(shape)} in {shape}")
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}(): only one dimension can be inferred, got shape {shape}")
    known = math.prod(n for n in shape if n != -1)
    if -1 in shape:
        if known == 0 or x.numel() % known:
            raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {x.numel()}")
        shape = tuple(x.numel() // known if n == -1 else n for n in shape)
    elif known != x.numel():
        raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {x.numel()}")
    return shape


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    return Reshape.apply(x, _target_shape(x, shape, "reshape"))


def view(x: Tensor, shape: Sequence[int]) -> Tensor:
    return View.apply(x, _target_shape(x, shape, "view"))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    check_tensor("flatten", "input", x)
    start, end = normalize_dim(start_dim, x.ndim, "flatten"), normalize_dim(end_dim, x.ndim, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = x.array.shape
    return reshape(x, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    check_tensor("permute", "input", x)
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"permute(): argument 'dims' must be a tuple of ints, not {type_name(dims)}")
    dims = tuple(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(): number of dims don't match: the tensor has {x.ndim} dims, but dims "
                           f"{dims} has {len(dims)}")
    normalized = normalize_dims(dims, x.ndim, "permute", sort=False)
    return Permute.apply(x, normalized)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    check_tensor("transpose", "input", x)
    dims = list(range(x.ndim))
    a, b = normalize_dim(dim0, x.ndim, "transpose"), normalize_dim(dim1, x.ndim, "transpose")
    if x.ndim == 0:  # dims 0 and -1 name the one "dim" of a scalar
        return Permute.apply(x, ())
    dims[a], dims[b] = dims[b], dims[a]
    return Transpose.apply(x, tuple(dims))


def t(x: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dims."""
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return x if x.ndim < 2 else T.apply(x, (1, 0))


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    check_tensor("unsqueeze", "input", x)
    d = normalize_dim(dim, x.ndim + 1, "unsqueeze")
    return Unsqueeze.apply(x, x.array.shape[:d] + (1,) + x.array.shape[d:])


def squeeze(x: Tensor, dim: Any = None) -> Tensor:
    """``x`` without its size-1 dims (all of them, or those among ``dim``: an int or a tuple)."""
    check_tensor("squeeze", "input", x)
    if dim is None:
        return Squeeze.apply(x, tuple(n for n in x.array.shape if n != 1))
    dims = normalize_dims(dim, x.ndim, "squeeze")
    node = SqueezeDims if isinstance(dim, (tuple, list)) else SqueezeDim
    return node.apply(x, tuple(n for d, n in enumerate(x.array.shape) if not (d in dims and n == 1)))


def expand(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Broadcast ``x`` to ``shape``; -1 keeps a dimension's size, as in PyTorch."""
    shape = tuple(shape)
    offset = len(shape) - x.ndim
    if offset < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({x.ndim})")
    if any(n == -1 for n in shape[:offset]):
        raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension ({shape})")
    target = tuple(x.array.shape[i - offset] if n == -1 else n for i, n in enumerate(shape))
    for i, n in enumerate(x.array.shape):
        if n != 1 and n != target[i + offset]:
            raise RuntimeError(f"The expanded size of the tensor ({target[i + offset]}) must match the existing "
                               f"size ({n}) at non-singleton dimension {i + offset}.  Target sizes: {list(shape)}.  "
                               f"Tensor sizes: {list(x.array.shape)}")
    return Expand.apply(x, target)


def getitem(x: Tensor, index: Any) -> Tensor:
    raw = raw_index(index, x)
    if not is_basic_index(raw):
        return GetItem.apply(x, raw)
    node = _basic_index_node(raw)
    # With a trailing ``...`` numpy returns a 0-d view, not a scalar copy, when every dim is indexed.
    items = raw if isinstance(raw, tuple) else (raw,)
    return node.apply(x, items if Ellipsis in items else items + (Ellipsis,))


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The view of ``length`` elements of ``x`` along ``dim``, from ``start``."""
    d = normalize_dim(dim, x.ndim, "narrow")
    size = x.array.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start ({start}) is out of range for dimension {d} of size {size}")
    start %= size if size else 1
    if length < 0 or start + length > size:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return getitem(x, (slice(None),) * d + (slice(start, start + length),))


def split(x: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces along ``dim``: of ``split_size`` each (the last may be smaller), or of
    the given list of sizes."""
    d = normalize_dim(dim, x.ndim, "split")
    size = x.array.shape[d]
    if not isinstance(split_size_or_sections, (list, tuple)):
        split_size_or_sections = _int_argument("split", "split_size_or_sections", split_size_or_sections)
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and not (step == 0 and size == 0):
            raise RuntimeError(f"split(): split_size must be positive, got {step}")
        sizes = [min(step, size - start) for start in range(0, size, step)] if size else [0]
    else:
        sizes = [operator.index(n) for n in split_size_or_sections]
        if sum(sizes) != size or any(n < 0 for n in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                               f"size at dimension {d}), but got split_sizes={sizes}")
    pieces, start = [], 0
    for n in sizes:
        pieces.append(getitem(x, (slice(None),) * d + (slice(start, start + n),)))
        start += n
    return tuple(pieces)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """At most ``chunks`` views of equal size along ``dim`` (the last may be smaller), as PyTorch."""
    chunks = _int_argument("chunk", "chunks", chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, x.ndim, "chunk")
    return split(x, max(-(-x.array.shape[d] // chunks), 1), d)


def _int_argument(op: str, name: str, value: Any) -> int:
    """``value`` as an int (a Python or numpy integer, not a bool), or PyTorch's ``TypeError``."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be an int, got {value!r} ({type_name(value)})") from None


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``dim``, each without that dim (views)."""
    d = normalize_dim(dim, x.ndim, "unbind")
    return tuple(getitem(x, (slice(None),) * d + (i,)) for i in range(x.array.shape[d]))


def raw_index(index: Any, x: Tensor) -> Any:
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
        bad = indices_out_of_range(values, upper, ignore_index)
        raise IndexError(
            f"{op}: {name} must be in [0, {upper - 1}]"
            + ("" if ignore_index is None else f" (or {ignore_index}, ignored)")
            + f", got {values[bad][:5].tolist()} (the first of {outside} out of range)"
        )
    return indices.size - ignored


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """``tensors`` joined along ``dim``, in their promoted dtype (``cat([float32, int64])`` is float32).
    As in PyTorch, 1-D empty tensors are skipped, so ``out = cat([out, batch])`` may start from ``tensor([])``."""
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    tensors = _tensor_sequence("cat", tensors)
    flat = next((position for position, t in enumerate(tensors) if t.ndim == 0), None)
    if flat is not None:
        raise RuntimeError(f"zero-dimensional tensor (at position {flat}) cannot be concatenated")
    return _concatenate([t for t in tensors if t.array.shape != (0,)] or tensors[:1], dim, Cat, tensors)


def _concatenate(kept: list[Tensor], dim: int, node: type[Function], given: list[Tensor]) -> Tensor:
    """``kept`` joined along ``dim`` by ``node`` (Cat or Stack), in the promoted dtype of all ``given``."""
    if any(t.array.dtype != given[0].array.dtype for t in given):
        common = dtypes.result_type(*given)
        kept = [t if t.array.dtype == common else cast(t, common) for t in kept]
    if any(t.ndim != kept[0].ndim for t in kept):
        raise RuntimeError(f"Tensors must have same number of dimensions: got {kept[0].ndim} and "
                           f"{next(t.ndim for t in kept if t.ndim != kept[0].ndim)}")
    return node.apply(*kept, dim=normalize_dim(dim, kept[0].ndim, "cat"))


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = _tensor_sequence("stack", tensors)
    shapes = {tuple(t.array.shape) for t in tensors}
    if len(shapes) != 1:
        raise RuntimeError(f"stack expects each tensor to be equal size, got shapes {sorted(shapes)}")
    d = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    pieces = [unsqueeze(t, d) for t in tensors]
    return _concatenate(pieces, d, Stack, pieces)


def _tensor_sequence(op: str, tensors: Any) -> list[Tensor]:
    """``tensors`` (a list or tuple of tensors, not empty) as a list; PyTorch's errors otherwise."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, not {type_name(tensors)}")
    if not tensors:
        raise RuntimeError(f"{op}(): expects a non-empty TensorList (got an empty {type(tensors).__name__})")
    for position, item in enumerate(tensors):
        if not isinstance(item, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {position} in argument 'tensors', but got "
                            f"{type_name(item)}")
    return list(tensors)


def cast(x: Tensor, dtype: Any) -> Tensor:
    dtype = dtypes.as_dtype(dtype)
    if dtype.kind != "f" and x.requires_grad:
        return Tensor._from_array(x.array.astype(dtype), x.device)
    return Cast.apply(x, dtype)


def clone(x: Tensor, contiguous: bool = False) -> Tensor:
    return Clone.apply(x, contiguous=contiguous)

