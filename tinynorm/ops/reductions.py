"""Reductions over dimensions: sum, mean, var, std, amax/amin, max/min, argmax/argmin.

Arguments follow PyTorch (``dim``, ``keepdim``); numpy's names ``axis`` and ``keepdims`` are accepted
as aliases. Backward of a reduction broadcasts the gradient back over the reduced dimensions: it first
re-inserts them (as size 1) when ``keepdim=False`` dropped them.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import dtypes
from .._checks import check_bool, check_tensor
from ..autograd.function import Context, Function
from ..tensor import MinMax, Tensor
from .dims import normalize_dim, normalize_dims

Dims = tuple[int, ...] | None


def _resolve(x: Tensor, dim: Any, keepdim: bool, numpy_names: dict, op: str) -> tuple[Dims, bool]:
    """Merge PyTorch's (dim, keepdim) with numpy's (axis, keepdims) aliases."""
    check_tensor(op, "input", x)
    unknown = set(numpy_names) - {"axis", "keepdims"}
    if unknown:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(unknown)}")
    if "axis" in numpy_names:
        dim = numpy_names["axis"]
    keepdim = numpy_names.get("keepdims", keepdim)
    dims = normalize_dims(dim, x.ndim, op)
    keepdim = check_bool(f"{op}()", "keepdim", keepdim)
    return (() if dims is not None and x.ndim == 0 else dims), keepdim  # a scalar's dim 0 is no axis


def _expand_back(grad: Any, dims: Dims, keepdim: bool, xp: Any) -> Any:
    """Reshape a reduced gradient so it broadcasts against the input of ``shape``."""
    if dims is not None and not keepdim:
        grad = xp.expand_dims(grad, dims)
    return grad


def _mean(xp: Any, x: Any, dims: Dims, keepdims: bool) -> Any:
    """The mean over ``dims``; NaN over no elements, without numpy's "Mean of empty slice" warning."""
    if x.size == 0:
        return xp.sum(x, axis=dims, keepdims=keepdims) * math.nan
    return xp.mean(x, axis=dims, keepdims=keepdims)


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
        return _mean(ctx.xp, x, dims, keepdim)

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
        centered = x - _mean(xp, x, dims, True)
        divisor = _count(x.shape, dims) - correction
        divisor = divisor if divisor > 0 else 0
        ctx.save_for_backward(centered)
        ctx.dims, ctx.keepdim, ctx.divisor = dims, keepdim, divisor
        squares = xp.sum(centered * centered, axis=dims, keepdims=keepdim)
        if divisor:
            return squares / divisor
        with np.errstate(divide="ignore", invalid="ignore"):  # inf or NaN, as PyTorch (var() warned)
            return squares / divisor

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
    return Var.apply(x, dims, keepdim, _check_correction("var", correction, x, dims))


def std(x: Tensor, dim: Any = None, keepdim: bool = False, *, correction: int = 1, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "std")
    return Std.apply(x, dims, keepdim, _check_correction("std", correction, x, dims))


def _check_correction(op: str, correction: Any, x: Tensor, dims: Dims) -> int | float:
    """``correction`` (the degrees of freedom subtracted from the count) after checking it is a number;
    PyTorch's warning when it leaves no degrees of freedom (the result is then inf or NaN)."""
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}(): argument 'correction' must be a number, got {correction!r} "
                        f"({type(correction).__name__})")
    if _count(x.shape, dims) - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return correction


def amax(x: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "amax")
    _check_reducible(x, dims, "amax")
    return Amax.apply(x, dims, keepdim)


def amin(x: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, "amin")
    _check_reducible(x, dims, "amin")
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
    check_tensor(name, "input", x)
    check_bool(f"{name}()", "keepdim", keepdim)
    xp = x._backend
    find = getattr(xp, name)
    if dim is None:
        _check_reducible(x, None, name)
        index = find(x.array.reshape(-1))
    else:
        d = normalize_dim(dim, x.ndim, name)
        if x.ndim == 0:
            return Tensor._from_array(xp.as_array(find(x.array.reshape(-1))).astype("int64"), x.device)
        _check_reducible(x, (d,), name)
        index = find(x.array, axis=d)
        if keepdim:
            index = xp.expand_dims(index, d)
    return Tensor._from_array(xp.as_array(index).astype("int64"), x.device)


def _check_reducible(x: Tensor, dims: Dims, op: str) -> None:
    """A max, min or arg-extreme has no value over no elements: PyTorch's errors (a ``RuntimeError`` from
    amax/amin over all dims, else an ``IndexError``)."""
    if dims is None:
        if x.numel() == 0:
            error = IndexError if op.startswith("arg") else RuntimeError
            raise error(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                        "reduction dim with the 'dim' argument.")
        return
    empty = next((d for d in dims if x.shape[d] == 0), None)
    if empty is not None:
        raise IndexError(f"{op}(): Expected reduction dim {empty} to have non-zero size.")


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (of the flattened tensor when ``dim`` is None); not differentiable."""
    return _arg_extreme(x, dim, keepdim, "argmax")


def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value; not differentiable."""
    return _arg_extreme(x, dim, keepdim, "argmin")
