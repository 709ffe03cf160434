"""softmax and log_softmax along one dim, computed after subtracting the max (no overflow).

With s = softmax(x): ds/dx applied to g is s * (g - sum(g * s)); for log_softmax it is
g - s * sum(g). The backend's fused kernels work over the last axis; another dim is moved there
and back (a copy, in the kernel, for the rare dim that is not last).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor
from .dims import normalize_dim


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


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    d = normalize_dim(dim, x.ndim, "softmax")
    return Softmax.apply(x, d)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    d = normalize_dim(dim, x.ndim, "log_softmax")
    return LogSoftmax.apply(x, d)
