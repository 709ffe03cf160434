"""softmax and log_softmax along one dim, and logsumexp over dims, computed after subtracting the max
(no overflow).

With s = softmax(x): ds/dx applied to g is s * (g - sum(g * s)); for log_softmax it is
g - s * sum(g). The backend's fused kernels work over the last axis; another dim is moved there
and back (a copy, in the kernel, for the rare dim that is not last).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import dtypes
from .._checks import check_tensor
from ..autograd.function import Context, Function
from ..tensor import Tensor
from .dims import normalize_dim, normalize_dims
from .elementwise import _floating
from .reductions import numpy_aliases
from .shape import cast


def _along(xp: Any, kernel: Callable[..., Any], dim: int, *arrays: Any) -> Any:
    """Apply a last-axis ``kernel`` to ``arrays`` along ``dim`` instead."""
    if dim >= arrays[0].ndim - 1:  # already the last axis (or a 0-d array)
        return kernel(*arrays)
    moved = [xp.moveaxis(a, dim, -1) for a in arrays]
    return xp.moveaxis(kernel(*moved), -1, dim)


def log_softmax_array(xp: Any, x: Any, dim: int) -> Any:
    """log_softmax on a raw array (shared with the cross-entropy loss)."""
    return _along(xp, xp.log_softmax_forward, dim, x)


class Softmax(Function):
    backward_name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        out = _along(ctx.xp, ctx.xp.softmax_forward, dim, x)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return _along(ctx.xp, ctx.xp.softmax_backward, ctx.dim, grad, out)


class LogSoftmax(Function):
    backward_name = "LogSoftmaxBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        out = log_softmax_array(ctx.xp, x, dim)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return _along(ctx.xp, ctx.xp.log_softmax_backward, ctx.dim, grad, out)


def _in_dtype(input: Tensor, dtype: Any, op: str) -> Tensor:  # noqa: A002
    """``input`` cast to ``dtype`` when given; integer input needs one (NotImplementedError, as in PyTorch)."""
    check_tensor(op, "input", input)
    if dtype is not None:
        return cast(input, dtypes.as_dtype(dtype))
    if input.array.dtype.kind != "f":
        raise NotImplementedError(f"{op}(): not implemented for dtype {dtypes.type_name(input.dtype)}; pass "
                                  f"dtype= or convert with .float()")
    return input


def _in_float32_for_half(op: type[Function], x: Tensor, dim: int, name: str) -> Tensor:
    """``op`` along ``dim``; float16 in float32 (the kernels' dtypes) and back, as PyTorch accumulates it."""
    d = normalize_dim(dim, x.ndim, name)
    if x.array.dtype != dtypes.float16:
        return op.apply(x, d)
    return cast(op.apply(cast(x, dtypes.float32), d), dtypes.float16)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:  # noqa: A002  (PyTorch's argument name)
    """``exp(input) / sum(exp(input))`` along ``dim``, computed in ``dtype`` when given (``torch.softmax``)."""
    return _in_float32_for_half(Softmax, _in_dtype(input, dtype, "softmax"), dim, "softmax")


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:  # noqa: A002
    """``log(softmax(input, dim))``, computed stably, in ``dtype`` when given."""
    return _in_float32_for_half(LogSoftmax, _in_dtype(input, dtype, "log_softmax"), dim, "log_softmax")


class Logsumexp(Function):
    """log(sum(exp(x))) over dims, after subtracting the max (no overflow; a row of -inf gives -inf);
    its gradient is the softmax of ``x`` over those dims."""

    backward_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dims: tuple[int, ...], keepdim: bool) -> Any:
        xp = ctx.xp
        shift = xp.amax(x, axis=dims, keepdims=True)
        shift = xp.where(xp.isinf(shift), 0, shift)  # all -inf (or an inf): exp(x - shift) stays defined
        total = xp.sum(xp.exp(x - shift), axis=dims, keepdims=True)
        empty = total == 0  # every x is -inf: log(0) = -inf, written out (Numba's simulator raises on log(0))
        kept = xp.where(empty, -math.inf, xp.log(xp.where(empty, 1, total))) + shift
        ctx.save_for_backward(x, kept)
        return kept if keepdim else xp.reshape(kept, tuple(n for d, n in enumerate(kept.shape) if d not in dims))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        x, kept = ctx.saved_tensors
        return ctx.xp.reshape(grad, kept.shape) * ctx.xp.exp(x - kept)


def logsumexp(input: Tensor, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:  # noqa: A002
    """``log(sum(exp(input), dim))``, computed stably; integers give the default float dtype."""
    dim, keepdim = numpy_aliases(dim, keepdim, numpy_names, "logsumexp")
    if dim is None:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    x = _floating(input)
    dims = normalize_dims(dim, x.ndim, "logsumexp")
    return Logsumexp.apply(x, tuple(range(x.ndim)) if dims is None or x.ndim == 0 else dims, keepdim)
