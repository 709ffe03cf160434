"""softmax and log_softmax along one dim, computed after subtracting the max (no overflow).

With s = softmax(x): ds/dx applied to g is s * (g - sum(g * s)); for log_softmax it is
g - s * sum(g).
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor
from .reductions import normalize_dims


def log_softmax_array(xp: Any, x: Any, dim: int) -> Any:
    """log_softmax on a raw array (shared with the cross-entropy loss)."""
    shifted = x - xp.amax(x, axis=dim, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True))


class Softmax(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        xp = ctx.xp
        e = xp.exp(x - xp.amax(x, axis=dim, keepdims=True))
        out = e / xp.sum(e, axis=dim, keepdims=True)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return out * (grad - ctx.xp.sum(grad * out, axis=ctx.dim, keepdims=True))


class LogSoftmax(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        out = log_softmax_array(ctx.xp, x, dim)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        xp = ctx.xp
        return grad - xp.exp(out) * xp.sum(grad, axis=ctx.dim, keepdims=True)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    (d,) = normalize_dims(dim, x.ndim, "softmax")
    return Softmax.apply(x, d)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    (d,) = normalize_dims(dim, x.ndim, "log_softmax")
    return LogSoftmax.apply(x, d)
