"""Reductions over dimensions: sum, mean, var, std, var_mean, std_mean, prod, amax/amin, max/min, argmax/argmin, any/all,
count_nonzero.

Arguments follow PyTorch (``dim``, ``keepdim``); numpy's names ``axis`` and ``keepdims`` are accepted
as aliases by every one. Backward of a reduction broadcasts the gradient back over the reduced dimensions: it first
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
from .. import return_types
from ..tensor import Tensor
from .dims import normalize_dim, normalize_dims
from .scan import as_accumulated, exclusive_products
from .shape import cast

Dims = tuple[int, ...] | None


def numpy_aliases(dim: Any, keepdim: bool, numpy_names: dict, op: str) -> tuple[Any, bool]:
    """PyTorch's (dim, keepdim) merged with numpy's aliases (axis, keepdims), which PyTorch accepts too."""
    if numpy_names:
        unknown = set(numpy_names) - {"axis", "keepdims"}
        if unknown:
            raise TypeError(f"{op}() got unexpected keyword arguments {sorted(unknown)}")
        if "axis" in numpy_names:
            dim = numpy_names["axis"]
        keepdim = numpy_names.get("keepdims", keepdim)
    return dim, check_bool(f"{op}()", "keepdim", keepdim)


def _resolve(x: Tensor, dim: Any, keepdim: bool, numpy_names: dict, op: str) -> tuple[Dims, bool]:
    """The reduced dims (None: all) and keepdim, from PyTorch's or numpy's argument names."""
    check_tensor(op, "input", x)
    dim, keepdim = numpy_aliases(dim, keepdim, numpy_names, op)
    dims = normalize_dims(dim, x.ndim, op)
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


class Prod(Function):
    """The product over one dim; each input's gradient is the product of the others, from the running
    products before and after it (right with zeros in the input, where ``out / x`` is not)."""

    backward_name = "ProdBackward1"

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int | None, keepdim: bool) -> Any:
        ctx.save_for_backward(x)
        ctx.dim, ctx.keepdim = dim, keepdim
        return ctx.xp.prod(x, axis=dim, keepdims=keepdim)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        xp = ctx.xp
        if ctx.dim is None:
            return grad * exclusive_products(xp, x.reshape(-1), 0).reshape(x.shape)
        grad = _expand_back(grad, (ctx.dim,), ctx.keepdim, xp)
        return grad * exclusive_products(xp, x, ctx.dim)


class ProdAll(Prod):
    backward_name = "ProdBackward0"


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


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,  # noqa: A001, A002
        **numpy_names: Any) -> Tensor:
    """The sum over ``dim`` (all dims by default), in ``dtype`` if given; bools and integers sum in int64."""
    dims, keepdim = _resolve(input, dim, keepdim, numpy_names, "sum")
    if dtype is not None or input.array.dtype.kind in "biu":
        input = as_accumulated(input, dtype)
    result = (SumAll if dims is None else Sum).apply(input, dims, keepdim)
    # numpy sums small integers in int64; an explicit dtype=int32 keeps int32 (wrapping as PyTorch's does).
    return result if result.array.dtype == input.array.dtype else cast(result, input.dtype)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,  # noqa: A002
         **numpy_names: Any) -> Tensor:
    """The mean over ``dim`` (all dims by default), computed in ``dtype`` if given; floating only, as in PyTorch."""
    dims, keepdim = _resolve(input, dim, keepdim, numpy_names, "mean")
    if dtype is not None:
        input = as_accumulated(input, dtype)
    if input.array.dtype.kind != "f":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {dtypes.type_name(input.dtype)}; convert with .float()")
    return (MeanAll if dims is None else Mean).apply(input, dims, keepdim)


def _correction(dim: Any, unbiased: Any, correction: Any, op: str) -> tuple[Any, float]:
    """The dims and the correction of ``var``/``std``: ``unbiased`` (True: 1, False: 0) or
    ``correction``, not both; ``var(x, False)`` is ``unbiased=False``, as in PyTorch."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"{op}(): unbiased given twice (as dim={dim} and unbiased={unbiased})")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): received both unbiased={unbiased} and correction={correction}; give one of them")
    if correction is not None:
        return dim, correction
    return dim, 0 if unbiased is False else 1


def _spread(function: type[Var], input: Tensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any,  # noqa: A002
            numpy_names: dict, op: str) -> Tensor:
    dim, correction = _correction(dim, unbiased, correction, op)
    dims, keepdim = _resolve(input, dim, keepdim, numpy_names, op)
    if input.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return function.apply(input, dims, keepdim, _check_correction(op, correction, input, dims))


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
        correction: float | None = None, **numpy_names: Any) -> Tensor:
    """The variance over ``dim`` (all dims by default), dividing by ``n - correction`` (by default
    ``n - 1``, ``unbiased``); floating tensors only, as PyTorch."""
    return _spread(Var, input, dim, unbiased, keepdim, correction, numpy_names, "var")


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
        correction: float | None = None, **numpy_names: Any) -> Tensor:
    """The standard deviation, ``sqrt(var(...))`` with the same arguments."""
    return _spread(Std, input, dim, unbiased, keepdim, correction, numpy_names, "std")


def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
             correction: float | None = None, **numpy_names: Any) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over the same dims, with :func:`var`'s arguments (``torch.var_mean``)."""
    spread = var(input, dim, unbiased, keepdim, correction=correction, **numpy_names)
    return spread, mean(input, _correction(dim, unbiased, correction, "var_mean")[0], keepdim, **numpy_names)


def std_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
             correction: float | None = None, **numpy_names: Any) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over the same dims, with :func:`std`'s arguments (``torch.std_mean``)."""
    spread = std(input, dim, unbiased, keepdim, correction=correction, **numpy_names)
    return spread, mean(input, _correction(dim, unbiased, correction, "std_mean")[0], keepdim, **numpy_names)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None,  # noqa: A002
         **numpy_names: Any) -> Tensor:
    """The product of all elements, or over the one dim ``dim``; bools and integers give int64."""
    dim, keepdim = numpy_aliases(dim, keepdim, numpy_names, "prod")
    x = as_accumulated(input, dtype)
    if dim is None:
        return ProdAll.apply(x, None, False)
    return Prod.apply(x, normalize_dim(dim, x.ndim, "prod"), keepdim)


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


class MaxAll(Amax):
    """``max(x)`` of all elements (PyTorch names it apart from ``amax``)."""

    backward_name = "MaxBackward1"


class MinAll(Amin):
    backward_name = "MinBackward1"


class MaxDim(Amax):
    """The values of ``max(x, dim)``."""

    backward_name = "MaxBackward0"


class MinDim(Amin):
    backward_name = "MinBackward0"


def _extreme(x: Tensor, dim: Any, keepdim: bool, numpy_names: dict, largest: bool) -> Any:
    """``max``/``min``: of all elements, ``(values, indices)`` along ``dim``, or elementwise against a
    tensor given as ``dim`` or ``other`` (``torch.max(a, b)``)."""
    op = "max" if largest else "min"
    if "other" in numpy_names and dim is None:
        dim = numpy_names.pop("other")
    dim, keepdim = numpy_aliases(dim, keepdim, numpy_names, op)
    if isinstance(dim, Tensor):
        from .elementwise import maximum, minimum
        return (maximum if largest else minimum)(x, dim)
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               f"the reduction dim with the 'dim' argument.")
        return (MaxAll if largest else MinAll).apply(x, None, False)
    d = normalize_dim(dim, x.ndim, op)
    values = (MaxDim if largest else MinDim).apply(x, (d,) if x.ndim else (), keepdim)
    pair = return_types.max if largest else return_types.min
    return pair(values, _arg_extreme(x, d, keepdim, "argmax" if largest else "argmin"))


def max(input: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Any:  # noqa: A001, A002
    """The largest value; along ``dim``, the pair ``(values, indices)``; with a tensor ``other`` (in
    place of ``dim``, or by name), the elementwise maximum (``torch.max(a, b)``)."""
    return _extreme(input, dim, keepdim, numpy_names, True)


def min(input: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Any:  # noqa: A001, A002
    """The smallest value; along ``dim``, ``(values, indices)``; against a tensor, the elementwise minimum."""
    return _extreme(input, dim, keepdim, numpy_names, False)


def _arg_extreme(x: Tensor, dim: int | None, keepdim: bool, name: str) -> Tensor:
    check_tensor(name, "input", x)
    check_bool(f"{name}()", "keepdim", keepdim)
    xp = x._backend
    find = getattr(xp, name)
    if dim is None:
        _check_reducible(x, None, name)
        index = find(x.array.reshape(-1))
        if keepdim:
            index = xp.reshape(xp.as_array(index), (1,) * x.ndim)
    else:
        d = normalize_dim(dim, x.ndim, name)
        _check_reducible(x, (d,) if x.ndim else None, name)
        index = find(x.array, axis=d) if x.ndim else xp.as_array(find(x.array.reshape(-1)))
        if keepdim and x.ndim:
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


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:  # noqa: A002
    """Index of the largest value (of the flattened tensor when ``dim`` is None); not differentiable."""
    dim, keepdim = numpy_aliases(dim, keepdim, numpy_names, "argmax")
    return _arg_extreme(input, dim, keepdim, "argmax")


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:  # noqa: A002
    """Index of the smallest value; not differentiable."""
    dim, keepdim = numpy_aliases(dim, keepdim, numpy_names, "argmin")
    return _arg_extreme(input, dim, keepdim, "argmin")


def _truth_reduction(x: Tensor, dim: Any, keepdim: bool, numpy_names: dict, op: str) -> Tensor:
    """``any``/``all`` over ``dim``: bool (uint8 for uint8 input, as PyTorch)."""
    dims, keepdim = _resolve(x, dim, keepdim, numpy_names, op)
    xp = x._backend
    flags = x.array if x.dtype.kind == "b" else x.array != 0
    result = getattr(xp, "amax" if op == "any" else "amin")(flags, axis=dims, keepdims=keepdim) if flags.size else \
        xp.full(_reduced_shape(x.shape, dims, keepdim), op == "all", dtype=dtypes.bool_)
    result = xp.as_array(result)
    return Tensor._from_array(result.astype(dtypes.uint8) if x.dtype == dtypes.uint8 else result, x.device)


def _reduced_shape(shape: tuple, dims: Dims, keepdim: bool) -> tuple:
    axes = range(len(shape)) if dims is None else dims
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdim or d not in axes)


def any(input: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:  # noqa: A001, A002
    """Whether any element (over ``dim``) is nonzero."""
    return _truth_reduction(input, dim, keepdim, numpy_names, "any")


def all(input: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:  # noqa: A001, A002
    """Whether every element (over ``dim``) is nonzero."""
    return _truth_reduction(input, dim, keepdim, numpy_names, "all")


def count_nonzero(input: Tensor, dim: Any = None, **numpy_names: Any) -> Tensor:  # noqa: A002
    """How many elements (over ``dim``: an int or a tuple) are nonzero, as int64."""
    dims, _ = _resolve(input, dim, False, numpy_names, "count_nonzero")
    xp = input._backend
    counts = xp.sum((input.array != 0).astype(dtypes.int64), axis=dims)
    return Tensor._from_array(xp.as_array(counts), input.device)
