"""``+ - * / **`` and negation, with numpy broadcasting.

Each backward returns the gradient at the broadcast output shape; the engine sums it back to each
input's shape. Python numbers take part as constants (``x * 2``) and get no gradient.
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor


def _shape(a: Any) -> tuple:
    return getattr(a, "shape", ())


def _broadcast_error(op: str, a: Any, b: Any) -> ValueError:
    return ValueError(
        f"{op}: shapes {tuple(_shape(a))} and {tuple(_shape(b))} cannot be broadcast together "
        f"(trailing dimensions must be equal or 1)"
    )


class Add(Function):
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
    """``a ** b``; d/da = b * a**(b-1), d/db = a**b * log(a)."""

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        try:
            out = a**b
        except ValueError:
            raise _broadcast_error("pow", a, b) from None
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b, out = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad * b * a ** (b - 1) if need_a else None
        grad_b = grad * out * ctx.xp.log(a) if need_b else None
        return grad_a, grad_b


class Neg(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return -a

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return -grad


def add(a: Any, b: Any) -> Tensor:
    return Add.apply(a, b)


def sub(a: Any, b: Any) -> Tensor:
    return Sub.apply(a, b)


def mul(a: Any, b: Any) -> Tensor:
    return Mul.apply(a, b)


def div(a: Any, b: Any) -> Tensor:
    return Div.apply(a, b)


def pow(a: Any, b: Any) -> Tensor:  # noqa: A001
    return Pow.apply(a, b)


def neg(a: Tensor) -> Tensor:
    return Neg.apply(a)
