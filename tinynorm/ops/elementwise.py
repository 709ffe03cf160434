"""Elementwise functions and their derivatives: exp, log, sqrt, rsqrt, abs, tanh, sigmoid, relu,
gelu, clamp, maximum, minimum, where.

Where the derivative is cheapest in terms of the output (exp, tanh, sigmoid, sqrt), backward uses the
saved output instead of recomputing from the input.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Context, Function
from .. import dtypes
from .._checks import check_number, check_tensor, type_name
from ..tensor import Tensor, tensor
from .promotion import convert, promote
from .shape import cast


class Exp(Function):
    backward_name = "ExpBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        out = ctx.xp.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    backward_name = "LogBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.log(x)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return grad / x


class Sqrt(Function):
    backward_name = "SqrtBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        out = ctx.xp.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad / (2 * out)


class Rsqrt(Function):
    """1/sqrt(x); derivative -0.5 * x**-1.5 = -0.5 * out**3."""

    backward_name = "RsqrtBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        out = 1 / ctx.xp.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return -0.5 * grad * out * out * out


class Abs(Function):
    backward_name = "AbsBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.abs(x)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return grad * ctx.xp.sign(x)


class Tanh(Function):
    backward_name = "TanhBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        out = ctx.xp.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad * (1 - out * out)


class Sigmoid(Function):
    backward_name = "SigmoidBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        # 1/(1+exp(-x)) overflows exp for very negative x; 0.5*(1+tanh(x/2)) is the same value, stably.
        out = 0.5 * (1 + ctx.xp.tanh(0.5 * x))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad * out * (1 - out)


class Relu(Function):
    backward_name = "ReluBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        out = ctx.xp.relu(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return ctx.xp.relu_backward(grad, out)


class Gelu(Function):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF; its derivative is Phi(x) + x * phi(x).

    ``approximate='none'`` uses Phi(x) = (1 + erf(x/sqrt 2))/2 exactly; ``'tanh'`` uses
    0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) as in GPT-2 and PyTorch. The formulas are in
    ``tinynorm/kernels/cpu/activations.py``: each direction is one backend call, because as array
    arithmetic they would be 5 and 11 kernel launches on the GPU, and there they are one each.
    """

    backward_name = "GeluBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, approximate: str = "none") -> Any:
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        return ctx.xp.gelu(x, approximate)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return ctx.xp.gelu_backward(grad, x, ctx.approximate)


class Clamp(Function):
    """Clip to [min, max]; the gradient passes where the input was inside the range (ends included).

    Tensor bounds get the rest, as in PyTorch: ``min`` where the input was below it (and ``min < max``),
    ``max`` where the input was above it or ``max < min`` (then the result is ``max`` everywhere).
    """

    backward_name = "ClampBackward1"

    @staticmethod
    def forward(ctx: Context, x: Any, low: Any, high: Any) -> Any:
        ctx.save_for_backward(x, low, high)
        return ctx.xp.clip(x, low, high)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        x, low, high = ctx.saved_tensors
        if low is None:
            inside = x <= high
        elif high is None:
            inside = x >= low
        else:
            inside = (x >= low) & (x <= high)
        _, need_low, need_high = ctx.needs_input_grad
        if not (need_low or need_high):
            return grad * inside
        grad_low = grad * ((x < low) if high is None else (x < low) & (low < high)) if need_low else None
        grad_high = grad * ((x > high) if low is None else (x > high) | (high < low)) if need_high else None
        return grad * inside, grad_low, grad_high


class ClampTensors(Clamp):
    """Clamp between tensor bounds (PyTorch names it apart from clamping between numbers)."""

    backward_name = "ClampBackward0"


class Pick(Function):
    """Elementwise maximum (``largest=True``) or minimum of two inputs.

    The gradient goes to the input that was picked; on ties it is split evenly (as PyTorch).
    """

    backward_name = "MaximumBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any, largest: bool) -> Any:
        ctx.save_for_backward(a, b)
        ctx.largest = largest
        return ctx.xp.maximum(a, b) if largest else ctx.xp.minimum(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b = ctx.saved_tensors
        share_a = ((a > b) if ctx.largest else (a < b)) + 0.5 * (a == b)
        return grad * share_a, grad * (1 - share_a)


class Where(Function):
    """``a`` where ``condition`` holds, else ``b``; the condition gets no gradient."""

    backward_name = "WhereBackward0"

    @staticmethod
    def forward(ctx: Context, condition: Any, a: Any, b: Any) -> Any:
        ctx.save_for_backward(condition)
        return ctx.xp.where(condition, a, b)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        (condition,) = ctx.saved_tensors
        zero = ctx.xp.zeros_like(grad)
        return None, ctx.xp.where(condition, grad, zero), ctx.xp.where(condition, zero, grad)


def _floating(x: Tensor) -> Tensor:
    """``x``, converted to the default float dtype if it holds integers (``sqrt`` of an int tensor is
    float32, as in PyTorch)."""
    return x if x.dtype.kind == "f" else cast(x, dtypes.get_default_dtype())


def exp(x: Tensor) -> Tensor:
    check_tensor("exp", "input", x)
    return Exp.apply(_floating(x))


def log(x: Tensor) -> Tensor:
    check_tensor("log", "input", x)
    return Log.apply(_floating(x))


def sqrt(x: Tensor) -> Tensor:
    check_tensor("sqrt", "input", x)
    return Sqrt.apply(_floating(x))


def rsqrt(x: Tensor) -> Tensor:
    check_tensor("rsqrt", "input", x)
    return Rsqrt.apply(_floating(x))


def abs(x: Tensor) -> Tensor:  # noqa: A001
    check_tensor("abs", "input", x)
    return Abs.apply(x)


def tanh(x: Tensor) -> Tensor:
    check_tensor("tanh", "input", x)
    return Tanh.apply(_floating(x))


def sigmoid(x: Tensor) -> Tensor:
    check_tensor("sigmoid", "input", x)
    return Sigmoid.apply(_floating(x))


def relu(x: Tensor) -> Tensor:
    check_tensor("relu", "input", x)
    if x.dtype == dtypes.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    return Relu.apply(x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    check_tensor("gelu", "input", x)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(_floating(x), approximate=approximate)


def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """``x`` clipped to ``[min, max]``, in the dtype promoted with the bounds (``int_tensor.clamp(0.5)`` is float)."""
    check_tensor("clamp", "input", x)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    bounds = [bound for bound in (min, max) if bound is not None]
    tensors = sum(isinstance(bound, Tensor) for bound in bounds)
    for name, bound in (("min", min), ("max", max)):
        if bound is not None and not isinstance(bound, Tensor):
            check_number("clamp()", name, bound)
    if tensors and tensors != len(bounds):
        raise TypeError(f"clamp(): min and max must be both tensors or both numbers, got "
                        f"{type(min).__name__} and {type(max).__name__}")
    if x.array.dtype.kind != "f" or tensors:
        target = dtypes.result_type(x, *bounds)
        x = convert(x, target)
        min, max = (None if bound is None else convert(bound, target) for bound in (min, max))
    return (ClampTensors if tensors else Clamp).apply(x, min, max)


def maximum(a: Any, b: Any) -> Tensor:
    _check_operands("maximum", a, b)
    return Pick.apply(*promote(a, b), True)


def minimum(a: Any, b: Any) -> Tensor:
    _check_operands("minimum", a, b)
    return Pick.apply(*promote(a, b), False)


def where(condition: Any, a: Any, b: Any) -> Tensor:
    """``a`` where ``condition`` holds, else ``b``; a condition given as host data (a numpy array) is
    copied to the tensors' device, a condition tensor must be on it already."""
    _check_condition(condition)
    _check_operands("where", a, b)
    device = next((t.device for t in (condition, a, b) if isinstance(t, Tensor)), "cpu")
    if device != "cpu" and not isinstance(condition, Tensor):
        condition = tensor(condition, device=device)
    a, b = promote(a, b)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):  # two numbers: PyTorch's dtype, not numpy's
        a = tensor(a, dtype=dtypes.result_type(a, b), device=device)
    return Where.apply(condition, a, b)


def _check_condition(condition: Any) -> None:
    """A ``where`` condition is a bool tensor (or numpy array): PyTorch refuses any other dtype."""
    if not isinstance(condition, (Tensor, np.ndarray)):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type_name(condition)}")
    if condition.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype}")


def _check_operands(op: str, a: Any, b: Any) -> None:
    """Refuse operands that are no tensor, array or number (None, a string, a list), as PyTorch does."""
    for name, value in (("input", a), ("other", b)):
        if value is None or isinstance(value, (str, bytes, list, tuple, dict, set)):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor or Number, not {type_name(value)}")
