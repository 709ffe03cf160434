"""``+ - * / **`` and negation, with broadcasting and PyTorch's type promotion.

Each backward returns the gradient at the broadcast output shape; the engine sums it back to each
input's shape. Python numbers take part as constants (``x * 2``) and get no gradient. The operands are
first brought to the dtype PyTorch computes in (:mod:`.promotion`): ``int_tensor / 2`` is float32.
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor
from .promotion import promote


def _shape(a: Any) -> tuple:
    return getattr(a, "shape", ())


def _broadcast_error(op: str, a: Any, b: Any) -> ValueError:
    return ValueError(
        f"{op}: shapes {tuple(_shape(a))} and {tuple(_shape(b))} cannot be broadcast together "
        f"(trailing dimensions must be equal or 1)"
    )


class Add(Function):
    backward_name = "AddBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        try:
            return a + b
        except ValueError:
            raise _broadcast_error("add", a, b) from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        return grad, grad


class Sub(Function):
    backward_name = "SubBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        try:
            return a - b
        except ValueError:
            raise _broadcast_error("sub", a, b) from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        return grad, -grad if ctx.needs_input_grad[1] else None


class Mul(Function):
    backward_name = "MulBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        try:
            return a * b
        except ValueError:
            raise _broadcast_error("mul", a, b) from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (grad * b if need_a else None), (grad * a if need_b else None)


class Div(Function):
    backward_name = "DivBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        try:
            return a / b
        except ValueError:
            raise _broadcast_error("div", a, b) from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad / b if need_a else None
        grad_b = -grad * a / (b * b) if need_b else None
        return grad_a, grad_b


class Pow(Function):
    """``a ** b``; d/da = b * a**(b-1), d/db = a**b * log(a), with PyTorch's values where those formulas
    are undefined: d/da is 0 where b == 0 (also at a == 0), d/db is 0 where a == 0 and b >= 0."""

    backward_name = "PowBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        try:
            out = a**b
        except ValueError as error:
            if "negative integer powers" in str(error):
                raise RuntimeError("Integers to negative integer powers are not allowed.") from None
            raise _broadcast_error("pow", a, b) from None
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b, out = ctx.saved_tensors
        xp = ctx.xp
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad_b = None
        if need_a:
            if isinstance(b, (int, float)):  # x ** 2: no mask needed
                grad_a = grad * b * a ** (b - 1) if b != 0 else xp.zeros_like(grad)
            else:
                grad_a = xp.where(b == 0, 0, grad * b * a ** (b - 1))
        if need_b:
            grad_b = xp.where((a == 0) & (b >= 0), 0, grad * out * xp.log(a))
        return grad_a, grad_b


class Neg(Function):
    backward_name = "NegBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return -a

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return -grad


def add(a: Any, b: Any, *, alpha: Any = 1) -> Tensor:
    """``a + alpha * b``."""
    a, b = promote(a, b if alpha == 1 else b * alpha)
    return Add.apply(a, b)


def sub(a: Any, b: Any, *, alpha: Any = 1) -> Tensor:
    """``a - alpha * b``."""
    a, b = promote(a, b if alpha == 1 else b * alpha)
    return Sub.apply(a, b)


def mul(a: Any, b: Any) -> Tensor:
    return Mul.apply(*promote(a, b))


def div(a: Any, b: Any) -> Tensor:
    """True division: integers give the default float dtype, as in PyTorch."""
    return Div.apply(*promote(a, b, floating=True))


def pow(a: Any, b: Any) -> Tensor:  # noqa: A001
    return Pow.apply(*promote(a, b))


def neg(a: Tensor) -> Tensor:
    if a.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    return Neg.apply(a)
