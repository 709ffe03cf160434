"""Ordering and counting: ``sort``, ``argsort``, ``topk``, ``unique``, ``bincount``, ``searchsorted``,
``bucketize``.

The backend gives one thing, the stable ascending order along a dim (``argsort``; NaN last, as
PyTorch). A descending order is that of the reversed dim, read back to front: equal values then keep
their original order, and NaN comes first. The sorted values are the input gathered at those
indices, so their gradient is gather's: it goes back to where each value came from. ``unique`` and
``bincount`` have no gradient.
"""
from __future__ import annotations

from typing import Any

from .. import dtypes, return_types
from ..tensor import Tensor, tensor
from . import comparison, reductions
from .dims import normalize_dim
from .selection import Gather, positions, take_along_dim
from .shape import unsqueeze


class Sort(Gather):
    backward_name = "SortBackward0"


class StableSort(Gather):
    backward_name = "SortBackward1"


class Topk(Gather):
    backward_name = "TopkBackward0"


def _order(x: Tensor, dim: int, descending: bool) -> Tensor:
    """The int64 indices that sort ``x`` (at least 1-d) along ``dim``, stably."""
    xp = x._backend
    if not descending:
        return Tensor._from_array(xp.argsort(x.array, axis=dim), x.device)
    flip = (slice(None),) * dim + (slice(None, None, -1),)
    reversed_order = xp.argsort(x.array[flip], axis=dim)[flip]
    return Tensor._from_array(xp.as_array((x.array.shape[dim] - 1) - reversed_order), x.device)


def _values(x: Tensor, dim: int, order: Tensor, node: type[Gather]) -> Tensor:
    return node.apply(x, positions(order, dim))


def _at_least_1d(input: Tensor, dim: int, op: str) -> tuple[Tensor, int]:  # noqa: A002
    d = normalize_dim(dim, input.ndim, op)
    return (input.reshape(1), 0) if input.ndim == 0 else (input, d)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool | None = None) -> Any:  # noqa: A002
    """``(values, indices)``: ``input`` sorted along ``dim`` (ascending unless ``descending``), and where
    each value came from. The sort is always stable (equal values keep their order)."""
    x, d = _at_least_1d(input, dim, "sort")
    order = _order(x, d, descending)
    values = _values(x, d, order, Sort if stable is None else StableSort)
    if input.ndim == 0:
        values, order = values.reshape(()), order.reshape(())
    return return_types.sort(values, order)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:  # noqa: A002
    """The indices that sort ``input`` along ``dim`` (stably)."""
    x, d = _at_least_1d(input, dim, "argsort")
    order = _order(x, d, descending)
    return order.reshape(()) if input.ndim == 0 else order


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements along ``dim``,
    in order; with ``sorted=False`` too (an order is as good as any)."""
    x, d = _at_least_1d(input, dim, "topk")
    size = x.array.shape[d]
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    order = _order(x, d, largest)
    order = Tensor._from_array(order.array[(slice(None),) * d + (slice(0, k),)], x.device)
    values = _values(x, d, order, Topk)
    if input.ndim == 0:
        values, order = values.reshape(()), order.reshape(())
    return return_types.topk(values, order)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct values of ``input`` (rows along ``dim``), sorted; with ``return_inverse`` also where
    each element went (``input``'s shape, or ``(size of dim,)``), with ``return_counts`` how often each
    occurs. No gradient flows through it."""
    xp = input._backend
    axis = None if dim is None else normalize_dim(dim, input.ndim, "unique")
    results = xp.unique(input.array, return_inverse=return_inverse, return_counts=return_counts, axis=axis)
    results = results if isinstance(results, tuple) else (results,)
    tensors = [Tensor._from_array(xp.as_array(results[0]), input.device)]
    rest = iter(results[1:])
    if return_inverse:
        inverse = xp.as_array(next(rest)).astype(dtypes.int64)
        shape = input.array.shape if axis is None else (input.array.shape[axis],)
        tensors.append(Tensor._from_array(xp.reshape(inverse, shape), input.device))
    if return_counts:
        tensors.append(Tensor._from_array(xp.as_array(next(rest)).astype(dtypes.int64), input.device))
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """How often each value ``0, 1, ..., max`` occurs in the 1-D non-negative integer ``input`` (at least
    ``minlength`` counts); with ``weights``, the sum of the weights of its occurrences instead."""
    if input.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{dtypes.type_name(input.dtype)}\'')
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    xp = input._backend
    if input.ndim != 1 or (input.numel() and int(xp.amin(input.array)) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.array.shape != input.array.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = max(int(xp.amax(input.array)) + 1 if input.numel() else 0, minlength)
    if weights is None:
        values = xp.ones(input.array.shape, dtype=dtypes.int64)
    else:
        dtype = dtypes.float32 if weights.dtype == dtypes.float32 else dtypes.float64
        values = weights.array.astype(dtype)
    if input.numel() == 0:
        return Tensor._from_array(xp.zeros((length,), dtype=values.dtype), input.device)
    return Tensor._from_array(xp.index_add((length,), (input.array,), values), input.device)


def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False, right: bool = False,  # noqa: A002
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value of ``input`` would go in the ascending ``sorted_sequence`` (its last dim; the
    other dims match ``input``'s leading ones) to keep it sorted: the count of elements below it, or
    not above it with ``right=True``/``side='right'``. Computed by comparing every value with every
    element (memory of ``input.numel() * sorted_sequence.shape[-1]`` bools), on either device."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if sorter is not None:
        sorted_sequence = take_along_dim(sorted_sequence, sorter, -1)
    scalar = not isinstance(input, Tensor)
    values = tensor(input, device=sorted_sequence.device) if scalar else input
    if sorted_sequence.ndim > 1 and tuple(sorted_sequence.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor "
                           f"{list(values.shape)}")
    boundaries = sorted_sequence if sorted_sequence.ndim == 1 else unsqueeze(sorted_sequence, -2)
    below = (comparison.le if right else comparison.lt)(boundaries, unsqueeze(values, -1))
    return reductions.sum(below, -1, dtype=dtypes.int32 if out_int32 else dtypes.int64)


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:  # noqa: A002
    """The bucket of each value among the ascending 1-D ``boundaries``: ``i`` such that
    ``boundaries[i - 1] < x <= boundaries[i]`` (``<=`` then ``<`` with ``right=True``)."""
    if not isinstance(boundaries, Tensor) or boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim if isinstance(boundaries, Tensor) else 0})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
