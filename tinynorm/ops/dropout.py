"""Dropout: zero each element with probability p and scale the survivors by 1/(1-p) (inverted dropout),
so the expected value is unchanged and evaluation needs no rescaling."""
from __future__ import annotations

from typing import Any

from .._checks import check_number, check_tensor
from ..autograd.function import Context, Function
from ..random import default_generator
from ..tensor import Tensor


class Dropout(Function):
    backward_name = "NativeDropoutBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, p: float) -> Any:
        keep = ctx.xp.random_uniform(default_generator(), x.shape, x.dtype) >= p
        scale = (keep / (1 - p)).astype(x.dtype)
        ctx.save_for_backward(scale)
        return x * scale

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (scale,) = ctx.saved_tensors
        return grad * scale


def check_probability(p: float, op: str = "dropout") -> None:
    """``p`` is a number in [0, 1] (PyTorch's message otherwise): every dropout's probability check; ``op``
    names the function or layer in the error."""
    if not 0.0 <= check_number(op, "p", p) <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    check_tensor("dropout", "input", x)
    check_probability(p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    return Dropout.apply(x, p)
