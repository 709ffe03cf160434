"""The inverse trigonometric functions (asin, acos, atan, atan2), the hyperbolic functions and their
inverses (sinh, cosh, asinh, acosh, atanh), hypot, and deg2rad/rad2deg.

The one-argument functions are :class:`~.pointwise.Pointwise` ops (f and f' from the saved input);
atan2 and hypot are two-argument ops whose gradients share one denominator. Integers compute in the
default float dtype, as in PyTorch. PyTorch's names ``arcsin``, ``arccos``, ... are aliases.
"""
from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from ..autograd.function import Context, Function
from ..tensor import Tensor
from . import arithmetic
from .elementwise import _floating
from .pointwise import Pointwise, _float_function, require_tensors
from .promotion import promote


class Asin(Pointwise):
    backward_name = "AsinBackward0"
    compute = staticmethod(lambda xp, x: xp.arcsin(x))
    derivative = staticmethod(lambda xp, x: 1 / xp.sqrt(1 - x * x))


class Acos(Pointwise):
    backward_name = "AcosBackward0"
    compute = staticmethod(lambda xp, x: xp.arccos(x))
    derivative = staticmethod(lambda xp, x: -1 / xp.sqrt(1 - x * x))


class Atan(Pointwise):
    backward_name = "AtanBackward0"
    compute = staticmethod(lambda xp, x: xp.arctan(x))
    derivative = staticmethod(lambda xp, x: 1 / (1 + x * x))


class Sinh(Pointwise):
    backward_name = "SinhBackward0"
    compute = staticmethod(lambda xp, x: xp.sinh(x))
    derivative = staticmethod(lambda xp, x: xp.cosh(x))


class Cosh(Pointwise):
    backward_name = "CoshBackward0"
    compute = staticmethod(lambda xp, x: xp.cosh(x))
    derivative = staticmethod(lambda xp, x: xp.sinh(x))


class Asinh(Pointwise):
    backward_name = "AsinhBackward0"
    compute = staticmethod(lambda xp, x: xp.arcsinh(x))
    derivative = staticmethod(lambda xp, x: 1 / xp.sqrt(x * x + 1))


class Acosh(Pointwise):
    backward_name = "AcoshBackward0"
    compute = staticmethod(lambda xp, x: xp.arccosh(x))
    derivative = staticmethod(lambda xp, x: 1 / xp.sqrt((x - 1) * (x + 1)))


class Atanh(Pointwise):
    backward_name = "AtanhBackward0"
    compute = staticmethod(lambda xp, x: xp.arctanh(x))
    derivative = staticmethod(lambda xp, x: 1 / (1 - x * x))


asin = arcsin = _float_function(Asin)
acos = arccos = _float_function(Acos)
atan = arctan = _float_function(Atan)
sinh = _float_function(Sinh)
cosh = _float_function(Cosh)
asinh = arcsinh = _float_function(Asinh)
acosh = arccosh = _float_function(Acosh)
atanh = arctanh = _float_function(Atanh)


class Atan2(Function):
    """The angle of the point ``(other, input)``: ``d/dy = x / r²``, ``d/dx = -y / r²``."""

    backward_name = "Atan2Backward0"

    @staticmethod
    def forward(ctx: Context, y: Any, x: Any) -> Any:
        ctx.save_for_backward(y, x)
        return ctx.xp.arctan2(y, x)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        y, x = ctx.saved_tensors
        scale = grad / (x * x + y * y)
        return scale * x, -scale * y


class Hypot(Function):
    """``sqrt(a² + b²)`` without overflow: ``d/da = a / r``, ``d/db = b / r``."""

    backward_name = "HypotBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        result = ctx.xp.hypot(a, b)
        ctx.save_for_backward(a, b, result)
        return result

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b, result = ctx.saved_tensors
        scale = grad / result
        return scale * a, scale * b


def atan2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002  (PyTorch's argument names)
    """The angle in radians of the point ``(other, input)``, in ``[-pi, pi]``, elementwise and broadcast
    (integers give the default float dtype)."""
    require_tensors("atan2", input, other)
    return Atan2.apply(*promote(input, other, floating=True))


arctan2 = atan2


def hypot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``sqrt(input² + other²)`` elementwise and broadcast, for float tensors (as PyTorch)."""
    require_tensors("hypot", input, other)
    input, other = promote(input, other)
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"hypot_cpu" not implemented for \'{dtypes.type_name(input.dtype)}\'')
    return Hypot.apply(input, other)


def deg2rad(input: Tensor) -> Tensor:  # noqa: A002
    """Degrees to radians (integers give the default float dtype)."""
    return arithmetic.mul(_floating(input), math.pi / 180)


def rad2deg(input: Tensor) -> Tensor:  # noqa: A002
    """Radians to degrees (integers give the default float dtype)."""
    return arithmetic.mul(_floating(input), 180 / math.pi)
