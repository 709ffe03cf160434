"""Reductions over dimensions: sum, mean, var, std, amax/amin, max/min, argmax/argmin.

Arguments follow PyTorch (``dim``, ``keepdim``); numpy's names ``axis`` and ``keepdims`` are accepted
as aliases. Backward of a reduction broadcasts the gradient back over the reduced dimensions: it first
re-inserts them (as size 1) when ``keepdim=False`` dropped them.
"""
from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from ..autograd.function import Context, Function
from ..tensor import MinMax, Tensor
from .dims import normalize_dim, normalize_dims

Dims = tuple[int, ...] | None


def _resolve(x: Tensor, dim: Any, keepdim: bool, numpy_names: dict, op: str) -> tuple[Dims, bool]:
    """Merge PyTorch's (dim, keepdim) with numpy's (axis, keepdims) aliases."""
    unknown = set(numpy_names) - {"axis", "keepdims"}
    if unknown:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(unknown)}")
    if "axis" in numpy_names:
        dim = numpy_names["axis"]
    keepdim = numpy_names.get("keepdims", keepdim)
    return normalize_dims(dim, x.ndim, op), bool(keepdim)


def _expand_back(grad: Any, dims: Dims, keepdim: bool, xp: Any) -> Any:
    """Reshape a reduced gradient so it broadcasts against the input of ``shape``."""
    if dims is not None and not keepdim:
        grad = xp.expand_dims(grad, dims)
    return grad


def _count(shape: tuple, dims: Dims) -> int:
    count = 1
    for d in range(len(shape)) if dims is None else dims:
        count *= shape[d]
    return count


class Sum(Function):
    backward_name = "SumBackward1"

    @staticmethod
    def forward(ctx: Context, x: Any, dims: Dims, keepdim: bool) -> Any:
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return ctx.xp.sum(x, axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        grad = _expand_back(grad, ctx.dims, ctx.keepdim, ctx.xp)
        return ctx.xp.broadcast_to(grad, ctx.shape)


class Mean(Function):
    backward_name = "MeanBackward1"

    @staticmethod
    def forward(ctx: Context, x: Any, dims: Dims, keepdim: bool) -> Any:
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return ctx.xp.mean(x, axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        grad = _expand_back(grad, ctx.dims, ctx.keepdim, ctx.xp)
        return ctx.xp.broadcast_to(grad / _count(ctx.shape, ctx.dims), ctx.shape)


class SumAll(Sum):
    """The sum of every element (PyTorch names its node apart from a sum over dims)."""

    backward_name = "SumBackward0"


class MeanAll(Mean):
    backward_name = "MeanBackward0"


class Var(Function):
    """Variance with ``correction`` (1 = unbiased, PyTorch's default), computed in two passes.

    d var / dx_i = 2 (x_i - mean) / (n - correction); with no degrees of freedom left (n <= correction)
    the variance is inf or NaN, as in PyTorch.
    """

    backward_name = "VarBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dims: Dims, keepdim: bool, correction: int) -> Any:
        xp = ctx.xp
        centered = x - xp.mean(x, axis=dims, keepdims=True)
        divisor = _count(x.shape, dims) - correction
        divisor = divisor if divisor > 0 else 0
        ctx.save_for_backward(centered)
        ctx.dims, ctx.keepdim, ctx.divisor = dims, keepdim, divisor
        return xp.sum(centered * centered, axis=dims, keepdims=keepdim) / divisor

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (centered,) = ctx.saved_tensors
        grad = _expand_back(grad, ctx.dims, ctx.keepdim, ctx.xp)
        return grad * centered * (2 / ctx.divisor if ctx.divisor else math.inf)


class Std(Var):
    """sqrt(var): d std / dx = d var / dx / (2 std), and 0 where std is 0 (a constant row), as in PyTorch."""

    backward_name = "StdBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dims: Dims, keepdim: bool, correction: int) -> Any:
        out = ctx.xp.sqrt(Var.forward(ctx, x, dims, keepdim, correction))
        ctx.out = out
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        xp = ctx.xp
        zero = ctx.out == 0
        return Var.backward(ctx, xp.where(zero, 0, grad / xp.where(zero, 1, 2 * ctx.out)))


class Amax(Function):
    """The largest values: the gradient is shared evenly among the elements that attain them."""

    backward_name = "AmaxBackward0"
    largest = True

    @classmethod
    def forward(cls, ctx: Context, x: Any, dims: Dims, keepdim: bool) -> Any:
        xp = ctx.xp
        reduce = xp.amax if cls.largest else xp.amin
        kept = reduce(x, axis=dims, keepdims=True)
        ctx.save_for_backward(x, kept)
        ctx.dims, ctx.keepdim = dims, keepdim
        return kept if keepdim else reduce(x, axis=dims, keepdims=False)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        x, kept = ctx.saved_tensors
        grad = _expand_back(grad, ctx.dims, ctx.keepdim, ctx.xp)
        hits = x == kept
        return grad * hits / ctx.xp.sum(hits, axis=ctx.dims, keepdims=True)


class Amin(Amax):
    backward_name = "AminBackward0"
    largest = False


def sum(x: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:  # noqa: A001
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "sum")
    return (SumAll if dims is None else Sum).apply(x, dims, keepdim)


def mean(x: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "mean")
    if not x.dtype.kind == "f":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {dtypes.type_name(x.dtype)}; convert with .float()")
    return (MeanAll if dims is None else Mean).apply(x, dims, keepdim)


def var(x: Tensor, dim: Any = None, keepdim: bool = False, *, correction: int = 1, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "var")
    return Var.apply(x, dims, keepdim, correction)


def std(x: Tensor, dim: Any = None, keepdim: bool = False, *, correction: int = 1, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "std")
    return Std.apply(x, dims, keepdim, correction)


def amax(x: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "amax")
    return Amax.apply(x, dims, keepdim)


def amin(x: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "amin")
    return Amin.apply(x, dims, keepdim)


def max(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The largest value; with ``dim``, a ``(values, indices)`` pair as in PyTorch."""
    if dim is None:
        return amax(x)
    return MinMax(amax(x, dim, keepdim), argmax(x, dim, keepdim))


def min(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The smallest value; with ``dim``, a ``(values, indices)`` pair as in PyTorch."""
    if dim is None:
        return amin(x)
    return MinMax(amin(x, dim, keepdim), argmin(x, dim, keepdim))


def _arg_extreme(x: Tensor, dim: int | None, keepdim: bool, name: str) -> Tensor:
    xp = x._backend
    find = getattr(xp, name)
    if dim is None:
        index = find(x.array.reshape(-1))
    else:
        d = normalize_dim(dim, x.ndim, name)
        index = find(x.array, axis=d)
        if keepdim:
            index = xp.expand_dims(index, d)
    return Tensor._from_array(xp.as_array(index).astype("int64"), x.device)


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (of the flattened tensor when ``dim`` is None); not differentiable."""
    return _arg_extreme(x, dim, keepdim, "argmax")


def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value; not differentiable."""
    return _arg_extreme(x, dim, keepdim, "argmin")
