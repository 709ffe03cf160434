"""More elementwise math: sin, cos, tan, log1p, expm1, log2, exp2, erf, the rounding functions (floor, ceil,
round, trunc, frac, sign), reciprocal, square, lerp, float_power, nan_to_num, the NaN/inf tests,
clamp_min/clamp_max, addcmul/addcdiv, logaddexp and xlogy.

A new primitive is a :class:`Pointwise` op: ``compute`` gives f(x) and ``derivative`` f'(x) from the
saved input, and backward multiplies the upstream gradient by it. The rounding functions are
piecewise constant: their gradient is zero, as PyTorch's. Functions of floats applied to integer
tensors compute in the default float dtype; the rounding functions return integer tensors unchanged
(copied). The rest are compositions of differentiable ops.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import Context, Function
from ..tensor import Tensor, tensor
from . import arithmetic, elementwise
from .promotion import promote
from .shape import cast

_floating = elementwise._floating  # integers to the default float dtype, as PyTorch's float functions


class Pointwise(Function):
    """y = f(x) elementwise; backward is ``grad * f'(x)``. Subclasses give ``compute(xp, x)`` and
    ``derivative(xp, x)``."""

    @classmethod
    def forward(cls, ctx: Context, x: Any) -> Any:
        ctx.save_for_backward(x)
        return cls.compute(ctx.xp, x)

    @classmethod
    def backward(cls, ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return grad * cls.derivative(ctx.xp, x)


class Sin(Pointwise):
    backward_name = "SinBackward0"
    compute = staticmethod(lambda xp, x: xp.sin(x))
    derivative = staticmethod(lambda xp, x: xp.cos(x))


class Cos(Pointwise):
    backward_name = "CosBackward0"
    compute = staticmethod(lambda xp, x: xp.cos(x))
    derivative = staticmethod(lambda xp, x: -xp.sin(x))


class Tan(Pointwise):
    backward_name = "TanBackward0"
    compute = staticmethod(lambda xp, x: xp.tan(x))
    derivative = staticmethod(lambda xp, x: 1 + xp.square(xp.tan(x)))


class Log1p(Pointwise):
    backward_name = "Log1PBackward0"
    compute = staticmethod(lambda xp, x: xp.log1p(x))
    derivative = staticmethod(lambda xp, x: 1 / (x + 1))


class Expm1(Pointwise):
    backward_name = "Expm1Backward0"
    compute = staticmethod(lambda xp, x: xp.expm1(x))
    derivative = staticmethod(lambda xp, x: xp.exp(x))


class Log2(Pointwise):
    backward_name = "Log2Backward0"
    compute = staticmethod(lambda xp, x: xp.log2(x))
    derivative = staticmethod(lambda xp, x: 1 / (x * math.log(2)))


class Exp2(Pointwise):
    backward_name = "Exp2Backward0"
    compute = staticmethod(lambda xp, x: xp.exp2(x))
    derivative = staticmethod(lambda xp, x: xp.exp2(x) * math.log(2))


class Erf(Pointwise):
    backward_name = "ErfBackward0"
    compute = staticmethod(lambda xp, x: xp.erf(x))
    derivative = staticmethod(lambda xp, x: (2 / math.sqrt(math.pi)) * xp.exp(-x * x))


class Constant(Function):
    """A piecewise constant function (floor, ceil, ...): ``compute(xp, x)``, and a zero gradient."""

    @classmethod
    def forward(cls, ctx: Context, x: Any) -> Any:
        return cls.compute(ctx.xp, x)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.zeros_like(grad)


class Floor(Constant):
    backward_name = "FloorBackward0"
    compute = staticmethod(lambda xp, x: xp.floor(x))


class Ceil(Constant):
    backward_name = "CeilBackward0"
    compute = staticmethod(lambda xp, x: xp.ceil(x))


class Trunc(Constant):
    backward_name = "TruncBackward0"
    compute = staticmethod(lambda xp, x: xp.trunc(x))


class Round(Constant):
    """Round half to even, as PyTorch (``round(2.5) == 2``)."""

    backward_name = "RoundBackward0"
    compute = staticmethod(lambda xp, x: xp.rint(x))


class RoundDecimals(Round):
    """Rounding of a scaled tensor (``round(x, decimals=n)``), as PyTorch names it apart."""

    backward_name = "RoundBackward1"


class Sign(Constant):
    """-1, 0 or 1; NaN gives 0, as in PyTorch."""

    backward_name = "SignBackward0"
    compute = staticmethod(lambda xp, x: xp.where(xp.isnan(x), x.dtype.type(0), xp.sign(x)) if x.dtype.kind == "f"
                           else xp.sign(x))


def _float_function(function: type[Function]) -> Any:
    """The op ``function(x)`` of a tensor, integers computed in the default float dtype."""
    def op(input: Tensor) -> Tensor:  # noqa: A002  (PyTorch's argument name)
        return function.apply(_floating(input))

    op.__name__ = op.__qualname__ = function.__name__.lower()
    op.__doc__ = f"``{op.__name__}`` of each element (integers give the default float dtype)."
    return op


sin = _float_function(Sin)
cos = _float_function(Cos)
tan = _float_function(Tan)
log1p = _float_function(Log1p)
expm1 = _float_function(Expm1)
log2 = _float_function(Log2)
exp2 = _float_function(Exp2)
erf = _float_function(Erf)


def _unchanged_for_integers(function: type[Constant], input: Tensor) -> Tensor:  # noqa: A002
    if input.dtype.kind != "f":
        return Tensor._from_array(input._backend.copy(input.array), input.device)
    return function.apply(input)


def floor(input: Tensor) -> Tensor:  # noqa: A002
    """The largest integer not above each element (integer tensors are returned as a copy)."""
    return _unchanged_for_integers(Floor, input)


def ceil(input: Tensor) -> Tensor:  # noqa: A002
    """The smallest integer not below each element."""
    return _unchanged_for_integers(Ceil, input)


def trunc(input: Tensor) -> Tensor:  # noqa: A002
    """Each element rounded toward zero."""
    return _unchanged_for_integers(Trunc, input)


fix = trunc


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001, A002
    """Each element rounded to ``decimals`` decimal places, half to even (as PyTorch: scale, round,
    unscale, in the tensor's dtype)."""
    if decimals == 0:
        return _unchanged_for_integers(Round, input)
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"round_cpu" not implemented for \'{dtypes.type_name(input.dtype)}\'')
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return arithmetic.div(RoundDecimals.apply(arithmetic.mul(input, scale)), scale)
    return arithmetic.mul(RoundDecimals.apply(arithmetic.div(input, scale)), scale)


def sign(input: Tensor) -> Tensor:  # noqa: A002
    """-1, 0 or 1 by the sign of each element (bool tensors are returned as a copy)."""
    return _unchanged_for_integers(Sign, input) if input.dtype.kind == "b" else Sign.apply(input)


def frac(input: Tensor) -> Tensor:  # noqa: A002
    """The fractional part of each element, ``x - trunc(x)`` (with its sign)."""
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"frac_cpu" not implemented for \'{dtypes.type_name(input.dtype)}\'')
    return arithmetic.sub(input, trunc(input))


def reciprocal(input: Tensor) -> Tensor:  # noqa: A002
    """``1 / x`` (integers give the default float dtype)."""
    return arithmetic.div(1, input)


def square(input: Tensor) -> Tensor:  # noqa: A002
    """``x ** 2`` (in the tensor's dtype)."""
    return arithmetic.pow(input, 2)


def float_power(input: Any, exponent: Any) -> Tensor:  # noqa: A002
    """``input ** exponent`` computed in float64, as PyTorch."""
    def double(value: Any) -> Any:
        return cast(value, dtypes.float64) if isinstance(value, Tensor) and value.dtype != dtypes.float64 else value
    if not isinstance(input, Tensor):
        return arithmetic.pow(float(input), double(exponent))
    return arithmetic.pow(double(input), double(exponent) if isinstance(exponent, Tensor) else float(exponent))


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:  # noqa: A002
    """``input + weight * (end - input)``, computed as PyTorch does for accuracy at both ends:
    from ``input`` where ``|weight| < 0.5``, from ``end`` (``end - (end - input) * (1 - weight)``) elsewhere."""
    for name, value in (("input", input), ("end", end)) + ((("weight", weight),) if isinstance(weight, Tensor) else ()):
        if value.dtype.kind != "f":
            raise NotImplementedError(f'"lerp_kernel" not implemented for \'{dtypes.type_name(value.dtype)}\' ({name})')
    if end.dtype != input.dtype or (isinstance(weight, Tensor) and weight.dtype != input.dtype):
        other = end.dtype if end.dtype != input.dtype else weight.dtype
        raise RuntimeError(f"lerp: expected dtype {input.dtype} for `end` and `weight` but got dtype {other}")
    difference = arithmetic.sub(end, input)
    if not isinstance(weight, Tensor):
        if abs(weight) < 0.5:
            return arithmetic.add(input, arithmetic.mul(difference, weight))
        return arithmetic.sub(end, arithmetic.mul(difference, 1 - weight))
    from_start = arithmetic.add(input, arithmetic.mul(difference, weight))
    from_end = arithmetic.sub(end, arithmetic.mul(difference, arithmetic.sub(1, weight)))
    xp = weight._backend
    near_start = Tensor._from_array(xp.as_array(xp.less(xp.abs(weight.array), 0.5)), weight.device)
    return elementwise.where(near_start, from_start, from_end)


def _test(input: Tensor, name: str) -> Tensor:  # noqa: A002
    return Tensor._from_array(input._backend.as_array(getattr(input._backend, name)(input.array)), input.device)


def isnan(input: Tensor) -> Tensor:  # noqa: A002
    """Where each element is NaN (a bool tensor)."""
    return _test(input, "isnan")


def isinf(input: Tensor) -> Tensor:  # noqa: A002
    """Where each element is +inf or -inf."""
    return _test(input, "isinf")


def isfinite(input: Tensor) -> Tensor:  # noqa: A002
    """Where each element is neither infinite nor NaN."""
    return _test(input, "isfinite")


def isposinf(input: Tensor) -> Tensor:  # noqa: A002
    xp = input._backend
    return Tensor._from_array(xp.as_array(xp.isinf(input.array) & (input.array > 0)), input.device)


def isneginf(input: Tensor) -> Tensor:  # noqa: A002
    xp = input._backend
    return Tensor._from_array(xp.as_array(xp.isinf(input.array) & (input.array < 0)), input.device)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None) -> Tensor:
    """NaN replaced by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (by default the dtype's
    largest and lowest finite values); integer tensors are returned as a copy. The gradient passes
    where the value was kept."""
    if input.dtype.kind != "f":
        return Tensor._from_array(input._backend.copy(input.array), input.device)
    info = input._backend.finfo(input.dtype)
    replacements = ((isnan(input), nan), (isposinf(input), info.max if posinf is None else posinf),
                    (isneginf(input), info.min if neginf is None else neginf))
    result = input
    for where, value in replacements:
        result = elementwise.where(where, input.dtype.type(value), result)
    return result


sgn = sign  # the sign of a real number (PyTorch's sgn differs from sign only for complex tensors)


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    """``clamp(input, min=min)``."""
    return elementwise.clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)``."""
    return elementwise.clamp(input, max=max)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 * tensor2``, broadcast (for integer tensors ``value`` is truncated to an
    integer, as PyTorch does)."""
    if dtypes.result_type(input, tensor1, tensor2).kind != "f":
        value = int(value)
    return arithmetic.add(input, arithmetic.mul(arithmetic.mul(tensor1, tensor2), value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 / tensor2``, broadcast; integer ``tensor1`` and ``tensor2`` are refused,
    as in PyTorch."""
    if tensor1.dtype.kind != "f" and tensor2.dtype.kind != "f":
        raise RuntimeError("Integer division with addcdiv is no longer supported; compute "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs")
    return arithmetic.add(input, arithmetic.mul(arithmetic.div(tensor1, tensor2), value))


def require_tensors(op: str, input: Any, other: Any) -> None:  # noqa: A002
    """PyTorch's TypeError for the two-tensor functions (``atan2``, ``hypot``, ``logaddexp``) given a number."""
    for position, (name, value) in enumerate((("input", input), ("other", other)), start=1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


class Logaddexp(Function):
    """``log(exp(a) + exp(b))`` without overflow: ``max(a, b) + log1p(exp(-|a - b|))``; equal arguments
    (infinities too) give ``a + log(2)``. Each gradient is a logistic weight: ``1 / (1 + exp(b - a))``."""

    backward_name = "LogaddexpBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(a, b)
        with np.errstate(invalid="ignore"):  # inf - inf is NaN here, replaced at once
            gap = xp.where(a == b, 0, -xp.abs(a - b))
        return xp.maximum(a, b) + xp.log1p(xp.exp(gap))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b = ctx.saved_tensors
        xp = ctx.xp
        return grad / (1 + xp.exp(b - a)), grad / (1 + xp.exp(a - b))


def logaddexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``log(exp(input) + exp(other))``, elementwise and broadcast, for float tensors."""
    require_tensors("logaddexp", input, other)
    input, other = promote(input, other)
    if input.dtype.kind != "f":
        raise NotImplementedError(f'"logaddexp_cpu" not implemented for \'{dtypes.type_name(input.dtype)}\'')
    return Logaddexp.apply(input, other)


class Xlogy(Function):
    """``x * log(y)``, 0 where ``x == 0`` unless ``y`` is NaN (as PyTorch and scipy)."""

    backward_name = "XlogyBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, y: Any) -> Any:
        xp = ctx.xp
        zero = xp.logical_and(x == 0, xp.logical_not(xp.isnan(y)))
        ctx.save_for_backward(x, y)
        return xp.where(zero, 0, x * xp.log(xp.where(zero, 1, y)))  # no log(0) where the result is 0

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        """d/dx = log(y) (0 where x == 0 and y <= 0, and where the upstream gradient is 0: PyTorch's
        ``xlogy(grad, y)``); d/dy = x / y."""
        x, y = ctx.saved_tensors
        xp = ctx.xp
        no_gradient = xp.logical_or(xp.logical_and(x == 0, y <= 0),
                                    xp.logical_and(grad == 0, xp.logical_not(xp.isnan(y))))
        return xp.where(no_gradient, 0, grad * xp.log(xp.where(no_gradient, 1, y))), grad * x / y


def xlogy(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * log(other)`` with ``0 * log(0) = 0``, broadcast; one side may be a number (integers give
    the default float dtype)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"xlogy(): expected a tensor, got {type(input).__name__} and {type(other).__name__}")
    like = input if isinstance(input, Tensor) else other
    dtype = dtypes.result_type(input, other)
    dtype = dtype if dtype.kind == "f" else dtypes.get_default_dtype()
    input, other = (value if isinstance(value, Tensor) else tensor(value, dtype=dtype, device=like.device)
                    for value in (input, other))
    return Xlogy.apply(*promote(input, other, floating=True))
