"""Choosing elements by position or condition: ``gather``, ``take_along_dim``, ``index_select``, ``scatter``,
``scatter_add``, ``masked_fill``, ``masked_select``, ``nonzero``/``argwhere``, ``where`` (with its
one-argument form), and ``index_add``/``index_copy``/``index_fill``, which are scatters through an
index repeated over the other dims.

``gather(x, dim, index)`` reads ``x[i0, .., index[i0, .., ik, ..], ..]``: the advanced index whose entry
along ``dim`` is ``index`` and along every other dim the position itself (an ``arange`` shaped to
broadcast). So it is indexing, and its gradient is indexing's: the upstream gradient added back at
those positions. ``scatter`` writes through the same index (its gradient passes everywhere else, and
to the source from the written positions); ``scatter_add`` adds instead. Indices are checked against
the sizes first, as PyTorch does (on the GPU that waits for one flag).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Context, Function
from ..tensor import Tensor, on_device
from .dims import normalize_dim
from .elementwise import where as elementwise_where
from .inplace import IndexPut, masked_fill_
from . import arithmetic
from .shape import GetItem, cast, clone, expand, getitem, reshape


class Gather(GetItem):
    """``x[index]`` for the advanced index of :func:`positions` (no view: advanced indexing copies)."""

    backward_name = "GatherBackward0"


class IndexSelect(GetItem):
    backward_name = "IndexSelectBackward0"


class Scatter(IndexPut):
    backward_name = "ScatterBackward0"


class ScatterValue(IndexPut):
    backward_name = "ScatterBackward1"


class ScatterAdd(Function):
    """``x`` plus ``src`` added at ``index`` (repeated positions add up); ``src``'s gradient is read from there."""

    backward_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, src: Any, index: tuple) -> Any:
        ctx.index = index
        return x + ctx.xp.index_add(x.shape, index, src.astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        return grad, grad[ctx.index]


def _check_index(index: Any, op: str, message: str = "Expected dtype int32/int64 for index") -> Tensor:
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): index must be a Tensor, got {type(index).__name__}")
    if index.dtype.kind not in "iu" or index.dtype.itemsize < 4:
        raise RuntimeError(f"{op}(): {message}")
    return index


def _check_range(index: Tensor, size: int, dim: int, op: str) -> None:
    """RuntimeError unless every entry of ``index`` is in ``[0, size)`` (PyTorch's message)."""
    outside, _ = index._backend.count_indices(index.array, size)
    if outside:
        values = index.numpy().reshape(-1)
        bad = values[(values < 0) | (values >= size)][0]
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def positions(index: Tensor, dim: int) -> tuple:
    """The advanced index (backend arrays) reading entry ``index[i]`` along ``dim`` and ``i``'s own
    position along every other dim."""
    xp, shape = index._backend, index.array.shape
    items = []
    for d, n in enumerate(shape):
        if d == dim:
            items.append(index.array)
        else:
            items.append(xp.arange(n).reshape(tuple(n if k == d else 1 for k in range(len(shape)))))
    return tuple(items)


def _check_sizes(input: Tensor, dim: int, index: Tensor, op: str, src: Tensor | None = None) -> None:  # noqa: A002
    if index.ndim != input.ndim:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor")
    for d, (n, limit) in enumerate(zip(index.array.shape, input.array.shape)):
        too_big = (d != dim and n > limit) or (src is not None and n > src.array.shape[d])
        if too_big:
            raise RuntimeError(f"{op}(): Size does not match at dimension {d}: expected index "
                               f"{list(index.array.shape)} to be no larger than self {list(input.array.shape)} apart "
                               f"from dimension {dim}" + ("" if src is None else
                                                          f" and to be no larger than src {list(src.array.shape)}"))
    _check_range(index, input.array.shape[dim] if input.ndim else 1, dim, op)


def _as_matrix_of_one(x: Tensor) -> Tensor:
    return x.reshape(1) if x.ndim == 0 else x


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:  # noqa: A002
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and so on): ``index`` has ``input``'s number
    of dims and is no larger than it outside ``dim``; the result has ``index``'s shape."""
    index = on_device(_check_index(index, "gather"), input.device, "gather", "the index is", "the input is")
    d = normalize_dim(dim, input.ndim, "gather")
    _check_sizes(input, d, index, "gather")
    result = Gather.apply(_as_matrix_of_one(input), positions(_as_matrix_of_one(index), d))
    return result.reshape(()) if index.ndim == 0 else result


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """``gather`` with broadcasting: ``indices`` and ``input`` broadcast outside ``dim``; without a dim,
    both are flattened."""
    _check_index(indices, "take_along_dim", "torch.take_along_dim(): dtype of indices should be Long but got "
                 + str(indices.dtype))
    if dim is None:
        return take_along_dim(input.reshape(-1), indices.reshape(-1), 0)
    if indices.ndim != input.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = normalize_dim(dim, input.ndim, "take_along_dim")
    indices = on_device(indices, input.device, "take_along_dim", "the indices are", "the input is")
    shape = list(_broadcast(input.array.shape, indices.array.shape, d))
    target = [n if k != d else input.array.shape[d] for k, n in enumerate(shape)]
    shape[d] = indices.array.shape[d]
    return gather(input.expand(target), d, indices.expand(shape))


def _broadcast(a: tuple, b: tuple, dim: int) -> tuple:
    """The broadcast of shapes ``a`` and ``b`` outside ``dim`` (PyTorch's error when they do not)."""
    shape = []
    for d, (n, m) in enumerate(zip(a, b)):
        if d != dim and n != m and 1 not in (n, m):
            raise RuntimeError(f"The size of tensor a ({n}) must match the size of tensor b ({m}) at non-singleton "
                               f"dimension {d}")
        shape.append(n if d == dim else max(n, m))
    return tuple(shape)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """The slices of ``input`` along ``dim`` at the positions in the 1-D ``index`` (in its order, repeats allowed)."""
    index = _check_index(index, "index_select", "Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    index = on_device(index, input.device, "index_select", "the index is", "the input is").reshape(-1)
    d = normalize_dim(dim, input.ndim, "index_select")
    size = input.array.shape[d] if input.ndim else 1
    outside, _ = index._backend.count_indices(index.array, size)
    if outside:
        values = index.numpy()
        bad = values[(values < 0) | (values >= size)][0]
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
    if input.ndim == 0:
        return IndexSelect.apply(input.reshape(1), (index.array,)).reshape(())
    return IndexSelect.apply(input, (slice(None),) * d + (index.array,))


def _source(op: str, input: Tensor, src: Any) -> Tensor | Any:  # noqa: A002
    """A scatter's source: a tensor of ``input``'s dtype and device, or a number."""
    if isinstance(src, Tensor):
        if src.dtype != input.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
        return on_device(src, input.device, op, "the source is", "the input is")
    if isinstance(src, (bool, int, float, np.generic)):
        return src
    raise TypeError(f"{op}(): src must be a tensor or a number, got {type(src).__name__}")


def _narrowed(src: Tensor, shape: tuple) -> Tensor:
    """The leading ``shape`` block of ``src``: the values a scatter through an index of ``shape`` uses."""
    if tuple(src.array.shape) == tuple(shape):
        return src
    return getitem(src, tuple(slice(0, n) for n in shape))


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,  # noqa: A002
            reduce: str | None = None) -> Tensor:
    """A copy of ``input`` with ``src[i][j]`` (or the number ``value``) written at ``[index[i][j]][j]``
    for ``dim=0`` (and so on). ``reduce='add'`` adds instead (``'multiply'`` is not supported)."""
    if (src is None) == (value is None):
        raise TypeError("scatter() needs exactly one of src (a tensor, or a number in its position) and value")
    source = _source("scatter", input, src if value is None else value)
    if reduce is not None:
        if reduce != "add":
            raise NotImplementedError(f"scatter(reduce={reduce!r}) is not supported (only 'add'); PyTorch deprecates "
                                      "the reduce argument of scatter")
        if not isinstance(source, Tensor):
            source = Tensor._from_array(input._backend.full(index.array.shape, source, dtype=input.dtype), input.device)
        return scatter_add(input, dim, index, source)
    index = on_device(_check_index(index, "scatter"), input.device, "scatter", "the index is", "the input is")
    d = normalize_dim(dim, input.ndim, "scatter")
    _check_sizes(input, d, index, "scatter", source if isinstance(source, Tensor) else None)
    where = positions(_as_matrix_of_one(index), d)
    x = _as_matrix_of_one(input)
    if isinstance(source, Tensor):
        result = Scatter.apply(x, _narrowed(_as_matrix_of_one(source), index.array.shape or (1,)), where)
    else:
        result = ScatterValue.apply(x, input.dtype.type(source), where)
    return result.reshape(()) if input.ndim == 0 else result


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src[i][j]`` added at ``[index[i][j]][j]`` for ``dim=0`` (and so on);
    repeated positions add up."""
    index = on_device(_check_index(index, "scatter_add"), input.device, "scatter_add", "the index is",
                      "the input is")
    source = _source("scatter_add", input, src)
    if not isinstance(source, Tensor):
        raise TypeError(f"scatter_add(): src must be a tensor, got {type(src).__name__}")
    d = normalize_dim(dim, input.ndim, "scatter_add")
    _check_sizes(input, d, index, "scatter_add", source)
    where = positions(_as_matrix_of_one(index), d)
    result = ScatterAdd.apply(_as_matrix_of_one(input),
                              _narrowed(_as_matrix_of_one(source), index.array.shape or (1,)), where)
    return result.reshape(()) if input.ndim == 0 else result


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``value`` (a number or a 0-d tensor) where the bool ``mask`` (broadcast) is True."""
    return masked_fill_(clone(input), mask, value)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:  # noqa: A002
    """The positions of the nonzero elements: an int64 ``(count, ndim)`` tensor, or with ``as_tuple``
    one 1-D tensor per dim (what ``x[nonzero(x, as_tuple=True)]`` indexes with)."""
    xp = input._backend
    flat = input.array if input.ndim else input.array.reshape(1)
    coordinates = xp.nonzero(flat)
    if as_tuple:
        return tuple(Tensor._from_array(c, input.device) for c in coordinates[:max(input.ndim, 1)])
    if input.ndim == 0:
        return Tensor._from_array(xp.zeros((coordinates[0].shape[0], 0), dtype=coordinates[0].dtype), input.device)
    return Tensor._from_array(xp.stack(coordinates, axis=1), input.device)


def where(condition: Any, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """``input`` where ``condition`` holds, else ``other`` (differentiable in both); with the condition
    alone, the positions where it holds (``nonzero(condition, as_tuple=True)``)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() needs both input and other, or neither (the one-argument form)")
    return elementwise_where(condition, input, other)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """The elements of ``input`` where the bool ``mask`` holds (both broadcast), as a 1-D tensor."""
    if not isinstance(mask, Tensor) or mask.dtype.kind != "b":
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    mask = on_device(mask, input.device, "masked_select", "the mask is", "the input is")
    shape = np.broadcast_shapes(input.array.shape, mask.array.shape)
    return getitem(expand(input, shape), expand(mask, shape))


def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """The positions of the nonzero elements, one row each (``nonzero(input)``)."""
    return nonzero(input)


def _along(index: Tensor, dim: int, shape: tuple) -> Tensor:
    """The 1-D ``index`` set along ``dim`` and repeated over the other dims of ``shape``: the index
    ``scatter`` takes for the same writes as ``index_add``/``index_copy``/``index_fill``."""
    if index.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    length = index.array.size
    placed = reshape(index, tuple(length if k == dim else 1 for k in range(len(shape))))
    return expand(placed, tuple(length if k == dim else n for k, n in enumerate(shape)))


def _index_write(op: str, input: Tensor, dim: int, index: Tensor, source: Tensor) -> tuple:  # noqa: A002
    """``(dim, scatter index)`` for writing ``source`` into ``input`` at ``index`` along ``dim``, checked."""
    index = on_device(_check_index(index, op), input.device, op, "the index is", "the input is")
    d = normalize_dim(dim, input.ndim, op)
    if source.ndim and source.array.shape[d] != index.array.size:
        error = IndexError if op == "index_copy" else RuntimeError  # PyTorch's classes differ here
        raise error(f"{op}_(): Number of indices ({index.array.size}) should be equal to source.size(dim): "
                    f"({source.array.shape[d]}), for dim: {d}")
    expected = tuple(index.array.size if k == d else n for k, n in enumerate(input.array.shape))
    if tuple(source.array.shape) != expected and (source.ndim or input.ndim):
        raise RuntimeError(f"{op}(): source tensor shape {tuple(source.array.shape)} must match self tensor shape "
                           f"{tuple(input.array.shape)}, excluding the specified dimension (expected {expected})")
    return d, _along(index, d, tuple(input.array.shape))


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``alpha * source`` added along ``dim`` at the positions ``index`` lists
    (``out[index[i]] += alpha * source[i]`` for ``dim=0``; repeated positions add up)."""
    d, where = _index_write("index_add", input, dim, index, source)
    return scatter_add(input, d, where, source if alpha == 1 else arithmetic.mul(source, alpha))


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``source`` written along ``dim`` at the positions ``index`` lists."""
    d, where = _index_write("index_copy", input, dim, index, source)
    return scatter(input, d, where, source)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``value`` (a number or a 0-d tensor) along ``dim`` at the positions
    ``index`` lists."""
    index = on_device(_check_index(index, "index_fill"), input.device, "index_fill", "the index is", "the input is")
    d = normalize_dim(dim, input.ndim, "index_fill")
    where = _along(index, d, tuple(input.array.shape))
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        return scatter(input, d, where, expand(cast(value, input.dtype), tuple(where.array.shape)))
    return scatter(input, d, where, value=value)
