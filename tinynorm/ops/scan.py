"""Running sums, products and extremes along a dim: ``cumsum``, ``cumprod``, ``cummax``, ``cummin``.

The gradient of a running sum is the running sum of the gradient taken from the other end. A running
product's is the same of ``grad * out``, divided by ``x``, when ``x`` has no zeros; with zeros it is
computed exactly from the products before each element and a recurrence over the elements after it
(one step per position along the dim: slower, but right where the division would give NaN).
"""
from __future__ import annotations

import math
from typing import Any

from .. import dtypes, return_types
from ..autograd.function import Context, Function
from ..tensor import Tensor
from . import selection
from .dims import normalize_dim
from .shape import cast


def _along(axis: int, index: Any) -> tuple:
    """The index selecting ``index`` along ``axis`` and everything along the dims before it."""
    return (slice(None),) * axis + (index,)


_REVERSED = slice(None, None, -1)


def reverse_cumsum(xp: Any, a: Any, axis: int) -> Any:
    """The running sums of ``a`` along ``axis`` from its last element back: ``out[i] = sum(a[i:])``."""
    return xp.cumsum(a[_along(axis, _REVERSED)], axis=axis)[_along(axis, _REVERSED)]


def prefix_products(xp: Any, x: Any, axis: int) -> Any:
    """For each element of ``x`` (not empty along ``axis``), the product of the elements before it."""
    ones = xp.ones_like(x[_along(axis, slice(0, 1))])
    return xp.concatenate([ones, xp.cumprod(x[_along(axis, slice(None, -1))], axis=axis)], axis=axis)


def exclusive_products(xp: Any, x: Any, axis: int) -> Any:
    """For each element of ``x``, the product of all the other elements along ``axis`` (exact with zeros)."""
    if x.shape[axis] == 0:
        return xp.zeros_like(x)
    ones = xp.ones_like(x[_along(axis, slice(0, 1))])
    after = xp.cumprod(x[_along(axis, slice(None, 0, -1))], axis=axis)[_along(axis, _REVERSED)]
    return prefix_products(xp, x, axis) * xp.concatenate([after, ones], axis=axis)


class Cumsum(Function):
    backward_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        ctx.dim = dim
        return ctx.xp.cumsum(x, axis=dim)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return reverse_cumsum(ctx.xp, grad, ctx.dim)


class Cumprod(Function):
    backward_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        out = ctx.xp.cumprod(x, axis=dim)
        ctx.save_for_backward(x, out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        x, out = ctx.saved_tensors
        xp, dim = ctx.xp, ctx.dim
        if not bool((x == 0).any()):
            return reverse_cumsum(xp, grad * out, dim) / x
        # d out[k] / d x[i] = prod(x[:i]) * prod(x[i+1:k+1]) for k >= i. With after[i] = sum over k >= i of
        # grad[k] * prod(x[i+1:k+1]): after[n-1] = grad[n-1], after[i] = grad[i] + x[i+1] * after[i+1].
        prefix = xp.moveaxis(prefix_products(xp, x, dim), dim, 0)
        xs, grads = xp.moveaxis(x, dim, 0), xp.moveaxis(grad, dim, 0)
        after = grads[-1]
        pieces = [prefix[-1] * after]
        for i in range(xs.shape[0] - 2, -1, -1):
            after = grads[i] + xs[i + 1] * after
            pieces.append(prefix[i] * after)
        return xp.stack(pieces[::-1], axis=dim)


def as_accumulated(x: Tensor, dtype: Any) -> Tensor:
    """``x`` in ``dtype``, or in int64 when it holds bools or integers (PyTorch's rule for sum, prod, cumsum)."""
    target = dtypes.as_dtype(dtype) if dtype is not None else (dtypes.int64 if x.dtype.kind in "biu" else x.dtype)
    return x if target == x.dtype else cast(x, target)


def _scanned(input: Tensor, dim: Any, dtype: Any, op: str) -> tuple[Tensor, int]:  # noqa: A002
    """``input`` in the result's dtype (``dtype``, else int64 for bools and integers) and the dim."""
    x = as_accumulated(input, dtype)
    if x.ndim == 0:
        normalize_dim(dim, 0, op)
        return x.reshape(1), 0
    return x, normalize_dim(dim, x.ndim, op)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002  (PyTorch's argument name)
    """The running sums along ``dim``: ``out[i] = input[0] + ... + input[i]``."""
    x, d = _scanned(input, dim, dtype, "cumsum")
    out = Cumsum.apply(x, d)
    return out if input.ndim else out.reshape(())


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """The running products along ``dim``: ``out[i] = input[0] * ... * input[i]``."""
    x, d = _scanned(input, dim, dtype, "cumprod")
    out = Cumprod.apply(x, d)
    return out if input.ndim else out.reshape(())



def _running_extreme_index(xp: Any, a: Any, axis: int, largest: bool) -> Any:
    """Where the running maximum (or minimum) of ``a`` along ``axis`` lies: for each position, the last
    index holding the extreme so far; once a NaN is met, the latest NaN (PyTorch's ``cummax`` rule).

    A doubling scan: after the step of ``span``, each position knows the winner among the ``2 * span``
    elements ending there, from its own and the one ``span`` before it (array ops only, so it runs on
    every backend in log2(n) steps)."""
    values = a.astype("float64") if a.dtype.kind != "f" else a  # integers compared exactly below 2**53
    length = a.shape[axis]
    index_shape = [1] * a.ndim
    index_shape[axis] = length
    index = xp.broadcast_to(xp.arange(length).reshape(tuple(index_shape)), a.shape) + 0  # a writable int64 copy
    span = 1
    while span < length:
        head = tuple(slice(None) if k != axis else slice(0, length - span) for k in range(a.ndim))
        pad_shape = tuple(span if k == axis else n for k, n in enumerate(a.shape))
        earlier = xp.concatenate([xp.full(pad_shape, -math.inf if largest else math.inf, dtype=values.dtype),
                                  values[head]], axis=axis)
        earlier_index = xp.concatenate([xp.zeros(pad_shape, dtype=index.dtype), index[head]], axis=axis)
        beats = xp.greater(earlier, values) if largest else xp.less(earlier, values)
        beats = xp.logical_or(beats, xp.logical_and(xp.isnan(earlier), xp.logical_not(xp.isnan(values))))
        values, index = xp.where(beats, earlier, values), xp.where(beats, earlier_index, index)
        span *= 2
    return index


def _cumulative_extreme(input: Tensor, dim: Any, largest: bool, op: str) -> Any:  # noqa: A002
    x = input if input.ndim else input.reshape(1)
    d = normalize_dim(dim, input.ndim, op)
    index = Tensor._from_array(x._backend.as_array(_running_extreme_index(x._backend, x.array, d, largest)), x.device)
    values = selection.gather(x, d, index)
    if input.ndim == 0:
        values, index = values.reshape(()), index.reshape(())
    return (return_types.cummax if largest else return_types.cummin)(values, index)


def cummax(input: Tensor, dim: int) -> Any:  # noqa: A002
    """``(values, indices)``: the running maximum along ``dim`` and where it lies (the last of equal
    values); NaN propagates. The gradient goes to those positions."""
    return _cumulative_extreme(input, dim, True, "cummax")


def cummin(input: Tensor, dim: int) -> Any:  # noqa: A002
    """``(values, indices)``: the running minimum along ``dim`` and where it lies, as :func:`cummax`."""
    return _cumulative_extreme(input, dim, False, "cummin")
