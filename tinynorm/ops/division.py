"""Division that rounds: ``div(rounding_mode=)``, ``floor_divide`` (``//``), ``remainder`` (``%``) and ``fmod``.

As in PyTorch: ``//`` rounds toward minus infinity, ``%`` takes the sign of the divisor (Python's
rule), ``fmod`` the sign of the dividend (C's); integer division by zero raises ``RuntimeError:
ZeroDivisionError``, which costs a look at the divisor (on the GPU, a wait for it). The gradients are
PyTorch's: ``a % b`` passes ``grad`` to ``a`` and ``-grad * floor(a / b)`` to ``b`` (``fmod``:
``trunc``); a rounded quotient has a zero gradient; ``//`` records a node whose backward raises, as
PyTorch's ``floor_divide`` has no derivative.
"""
from __future__ import annotations

from typing import Any

from .. import dtypes
from ..autograd.function import Context, Function
from ..tensor import Tensor
from . import arithmetic
from .promotion import promote


class Remainder(Function):
    backward_name = "RemainderBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.remainder(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b = ctx.saved_tensors
        return grad, (-grad * ctx.xp.floor_divide(a, b) if ctx.needs_input_grad[1] else None)


class RemainderByTensor(Remainder):
    backward_name = "RemainderBackward1"


class RemainderOfNumber(Remainder):
    """``number % tensor``: PyTorch has no derivative for it, so its node's backward raises."""

    backward_name = "NotImplemented"

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        raise RuntimeError("derivative for aten::remainder is not implemented")


class Fmod(Function):
    backward_name = "FmodBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return ctx.xp.fmod(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b = ctx.saved_tensors
        return grad, (-grad * ctx.xp.trunc(a / b) if ctx.needs_input_grad[1] else None)


class FmodByTensor(Fmod):
    backward_name = "FmodBackward1"


class RoundedDivide(Function):
    """``a / b`` rounded toward zero (``'trunc'``) or minus infinity (``'floor'``): a zero gradient."""

    backward_name = "DivBackward2"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any, mode: str, floating: bool) -> Any:
        xp = ctx.xp
        if mode == "floor":
            return xp.floor_divide(a, b)
        if floating:
            return xp.trunc(xp.true_divide(a, b))
        quotient = xp.floor_divide(a, b)  # integers: floor, then one up where it rounded a negative quotient down
        return quotient + ((quotient < 0) & (quotient * b != a))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        zero = ctx.xp.zeros_like(grad)
        return zero, zero


class FloorDivide(RoundedDivide):
    """``a // b``: PyTorch's ``floor_divide`` has no derivative, so its node's backward raises."""

    backward_name = "NotImplemented"

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        raise RuntimeError("derivative for aten::floor_divide is not implemented")


def _operands(op: str, a: Any, b: Any) -> tuple[Any, Any, bool]:
    """``a`` and ``b`` promoted, and whether they are floats; bools refused, and integer division by
    zero (PyTorch's error)."""
    a, b = promote(a, b)
    dtype = dtypes.result_type(a, b)
    if dtype.kind == "b":
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'Bool\'')
    if dtype.kind != "f" and (bool((b.array == 0).any()) if isinstance(b, Tensor) else b == 0):
        raise RuntimeError("ZeroDivisionError")
    return a, b, dtype.kind == "f"


def remainder(input: Any, other: Any) -> Tensor:  # noqa: A002  (PyTorch's argument names)
    """Python's ``input % other``: the remainder with the sign of ``other``."""
    a, b, _ = _operands("remainder", input, other)
    if not isinstance(input, Tensor):
        return RemainderOfNumber.apply(a, b)
    return (RemainderByTensor if isinstance(b, Tensor) else Remainder).apply(a, b)


def fmod(input: Tensor, other: Any) -> Tensor:  # noqa: A002
    """C's ``fmod``: the remainder of ``input / other`` rounded toward zero, with the sign of ``input``."""
    a, b, _ = _operands("fmod", input, other)
    return (FmodByTensor if isinstance(b, Tensor) else Fmod).apply(a, b)


def floor_divide(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input // other``: the quotient rounded toward minus infinity (no derivative)."""
    a, b, floating = _operands("floor_divide", input, other)
    return FloorDivide.apply(a, b, "floor", floating)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:  # noqa: A002
    """``input / other`` (true division), or its quotient rounded ``'trunc'`` (toward zero) or ``'floor'``."""
    if rounding_mode is None:
        return arithmetic.div(input, other)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    a, b, floating = _operands("div", input, other)
    return RoundedDivide.apply(a, b, rounding_mode, floating)
