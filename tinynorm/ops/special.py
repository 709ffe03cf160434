"""``erfinv``, the inverse of the error function (``erfinv(erf(x)) == x``), which PyTorch's
``nn.init.trunc_normal_`` and inverse-CDF samplers use.

Neither numpy nor the CUDA backend has it, so it is computed from functions both have: a closed-form
first guess (Winitzki's approximation, relative error below 2e-3) refined by Newton's method on
``erf(y) = x``, which doubles the correct digits per step, in float64, then rounded to the input's
dtype. ``erfinv(+-1)`` is ``+-inf`` and beyond [-1, 1] it is NaN, as in PyTorch. Its derivative is
``sqrt(pi) / 2 * exp(erfinv(x)^2)``.
"""
from __future__ import annotations

import math
from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor
from .elementwise import _floating

_A = 0.147  # Winitzki's constant
_NEWTON_STEPS = 3  # 2e-3 -> 4e-6 -> 2e-11 -> float64 rounding


def _erfinv(xp: Any, x: Any) -> Any:
    """erfinv of a float array (any float dtype), elementwise, in that dtype."""
    wide = x.astype("float64")
    inside = xp.less(xp.abs(wide), 1.0)
    t = xp.where(inside, wide, 0.0)  # no log(0) at +-1 and beyond
    log_term = xp.log(1.0 - t * t)
    first = 2.0 / (math.pi * _A) + log_term / 2.0
    y = xp.sign(t) * xp.sqrt(xp.sqrt(first * first - log_term / _A) - first)
    for _ in range(_NEWTON_STEPS):
        y = y - (xp.erf(y) - t) / (2.0 / math.sqrt(math.pi) * xp.exp(-y * y))
    infinity = xp.where(xp.greater(wide, 0.0), math.inf, -math.inf)
    edge = xp.where(xp.equal(xp.abs(wide), 1.0), infinity, math.nan)  # +-inf at +-1, NaN beyond (and for NaN)
    return xp.where(inside, y, edge).astype(x.dtype)


class Erfinv(Function):
    backward_name = "ErfinvBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        result = _erfinv(ctx.xp, x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (result,) = ctx.saved_tensors
        return grad * (math.sqrt(math.pi) / 2) * ctx.xp.exp(result * result)


def erfinv(input: Tensor) -> Tensor:  # noqa: A002
    """The ``y`` with ``erf(y) == input``, elementwise (integers give the default float dtype)."""
    return Erfinv.apply(_floating(input))
