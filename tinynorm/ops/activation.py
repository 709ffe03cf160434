"""Activation functions beyond the elementwise basics: leaky_relu, elu/selu/celu, softplus, silu, mish,
hardswish, hardsigmoid, hardtanh/relu6, prelu, logsigmoid, threshold, glu.

Each is one Function (PyTorch's node name, its derivative written next to its forward) built from the
elementwise array functions both backends have, so it runs on the CPU and on CUDA alike. ``inplace=True``
writes the result into the input through :func:`tinynorm.ops.inplace.modify`, which keeps autograd right.

Two helpers give log(1 + u) and exp(x) - 1 accurately near 0, where computing them as written loses
every digit (exp(-40) is 4e-18, but 1 + exp(-40) is 1 in float32 and float64 alike): Kahan's trick
multiplies the rounded log(1 + u) by u / ((1 + u) - 1), which cancels the rounding of 1 + u.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import Context, Function
from ..random import default_generator
from ..tensor import Tensor
from .dims import normalize_dim
from .inplace import modify

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_ONE_SIXTH = float(np.float32(1 / 6))  # PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32


# ----------------------------------------------------------------------------- array helpers
def log1p(xp: Any, u: Any) -> Any:
    """log(1 + u) for u >= 0, accurate when u is tiny (Kahan's correction of the rounded 1 + u)."""
    w = 1 + u
    rounded = w - 1  # what 1 + u really added to 1
    exact = rounded == 0
    return xp.where(exact, u, xp.log(w) * (u / xp.where(exact, 1, rounded)))


def expm1(xp: Any, x: Any) -> Any:
    """exp(x) - 1 for x <= 0, accurate when x is near 0 (the same correction, through log(exp(x)))."""
    u = xp.exp(x)
    rounded = u - 1
    exact = (u == 1) | (rounded == -1)  # u rounded to 1 (x tiny), or exp(x) negligible (x very negative)
    log_u = xp.log(xp.where(exact, 2, u))
    return xp.where(exact, xp.where(u == 1, x, rounded), rounded * (x / log_u))


def softplus_array(xp: Any, x: Any) -> Any:
    """log(1 + exp(x)) without overflow or underflow: max(x, 0) + log1p(exp(-|x|))."""
    return xp.maximum(x, 0) + log1p(xp, xp.exp(-xp.abs(x)))


def sigmoid_array(xp: Any, x: Any) -> Any:
    """1 / (1 + exp(-x)) without overflow, and accurate in both tails: with e = exp(-|x|) <= 1, it is
    1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1, e) / (1 + e)


# ----------------------------------------------------------------------------- functions
class LeakyRelu(Function):
    """x for x > 0, negative_slope * x otherwise."""

    backward_name = "LeakyReluBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, slope: float) -> Any:
        ctx.save_for_backward(x)
        ctx.slope = slope
        return ctx.xp.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return ctx.xp.where(x > 0, grad, grad * ctx.slope)


class Elu(Function):
    """scale * x for x > 0, scale * alpha * (exp(input_scale * x) - 1) otherwise (ELU, SELU and CELU)."""

    backward_name = "EluBackward0"

    @staticmethod
    def _slope_scale(ctx: Context) -> float:
        return ctx.input_scale

    @staticmethod
    def forward(ctx: Context, x: Any, alpha: float, scale: float, input_scale: float) -> Any:
        xp = ctx.xp
        negative = (scale * alpha) * expm1(xp, xp.minimum(x, 0) * input_scale)
        ctx.save_for_backward(x)
        ctx.alpha, ctx.scale, ctx.input_scale = alpha, scale, input_scale
        return xp.where(x > 0, x * scale, negative)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        xp = ctx.xp
        input_scale = ctx.function._slope_scale(ctx)
        slope = (input_scale * ctx.scale * ctx.alpha) * xp.exp(xp.minimum(x, 0) * input_scale)
        return grad * xp.where(x > 0, ctx.scale, slope)


class Celu(Elu):
    backward_name = "CeluBackward0"

    @staticmethod
    def _slope_scale(ctx: Context) -> float:
        """PyTorch's CELU backward takes 1/alpha with alpha rounded to float32 (its forward does not)."""
        return 1.0 / float(np.float32(ctx.alpha))


class Softplus(Function):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (PyTorch's linear cut-off)."""

    backward_name = "SoftplusBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, beta: float, threshold: float) -> Any:
        xp = ctx.xp
        scaled = x * beta
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        return xp.where(scaled > threshold, x, softplus_array(xp, scaled) / beta)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        scaled = x * ctx.beta
        return ctx.xp.where(scaled > ctx.threshold, grad, grad * sigmoid_array(ctx.xp, scaled))


class Silu(Function):
    """x * sigmoid(x); derivative s * (1 + x * (1 - s))."""

    backward_name = "SiluBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * sigmoid_array(ctx.xp, x)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        s = sigmoid_array(ctx.xp, x)
        return grad * (s * (1 + x * (1 - s)))


class Mish(Function):
    """x * tanh(softplus(x)); derivative t + x * sigmoid(x) * (1 - t^2), t = tanh(softplus(x))."""

    backward_name = "MishBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * ctx.xp.tanh(softplus_array(ctx.xp, x))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        xp = ctx.xp
        t = xp.tanh(softplus_array(xp, x))
        return grad * (t + x * sigmoid_array(xp, x) * (1 - t * t))


class Hardswish(Function):
    """x * relu6(x + 3) / 6; derivative 0 up to -3, x/3 + 1/2 strictly between -3 and 3, 1 from 3 on
    (PyTorch's values at the two kinks)."""

    backward_name = "HardswishBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        ctx.save_for_backward(x)
        return x * ctx.xp.clip(x + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        xp = ctx.xp
        return xp.where(x <= -3, 0, xp.where(x < 3, grad * (x / 3 + 0.5), grad))


class Hardsigmoid(Function):
    """relu6(x + 3) / 6; derivative 1/6 strictly between -3 and 3, 0 elsewhere."""

    backward_name = "HardsigmoidBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        ctx.save_for_backward(x)
        return ctx.xp.clip(x + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return ctx.xp.where((x > -3) & (x < 3), grad * _ONE_SIXTH, 0)


class Hardtanh(Function):
    """x clipped to [min_val, max_val] as ``clamp`` does, but the gradient is 0 at the two ends as well."""

    backward_name = "HardtanhBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, low: float, high: float) -> Any:
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return ctx.xp.clip(x, low, high)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return ctx.xp.where((x > ctx.low) & (x < ctx.high), grad, 0)


class Prelu(Function):
    """x for x > 0, weight * x otherwise; ``weight`` arrives broadcastable to x (one value per channel)."""

    backward_name = "PreluKernelBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any) -> Any:
        ctx.save_for_backward(x, weight)
        return ctx.xp.where(x > 0, x, x * weight)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x, weight = ctx.saved_tensors
        xp = ctx.xp
        positive = x > 0
        return xp.where(positive, grad, grad * weight), xp.where(positive, 0, grad * x)  # the engine sums dw


class LogSigmoid(Function):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)); derivative sigmoid(-x)."""

    backward_name = "LogSigmoidBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any) -> Any:
        xp = ctx.xp
        ctx.save_for_backward(x)
        return xp.minimum(x, 0) - log1p(xp, xp.exp(-xp.abs(x)))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return grad * sigmoid_array(ctx.xp, -x)


class Threshold(Function):
    """x where x > threshold, else ``value``; the gradient passes where x > threshold."""

    backward_name = "ThresholdBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, threshold: float, value: float) -> Any:
        ctx.save_for_backward(x)
        ctx.threshold = threshold
        return ctx.xp.where(x > threshold, x, value)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return ctx.xp.where(x > ctx.threshold, grad, 0)


class Hardshrink(Function):
    """x where |x| > lambd, else 0; the gradient passes where |x| > lambd (0 at |x| = lambd, as PyTorch)."""

    backward_name = "HardshrinkBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, lambd: float) -> Any:
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        return ctx.xp.where(ctx.xp.abs(x) > lambd, x, 0).astype(x.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return ctx.xp.where(ctx.xp.abs(x) > ctx.lambd, grad, 0).astype(grad.dtype)


class Softshrink(Hardshrink):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0; Hardshrink's gradient."""

    backward_name = "SoftshrinkBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, lambd: float) -> Any:
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        xp = ctx.xp
        return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, 0)).astype(x.dtype)


class Rrelu(Function):
    """x where x >= 0, a x elsewhere, with a slope a ~ U(lower, upper) drawn per element (Xu et al. 2015);
    the gradient is the same slope."""

    backward_name = "RreluWithNoiseBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, lower: float, upper: float) -> Any:
        xp = ctx.xp
        slope = xp.random_uniform(default_generator(), x.shape, x.dtype) * (upper - lower) + lower
        noise = xp.where(x >= 0, 1, slope).astype(x.dtype)
        ctx.save_for_backward(noise)
        return x * noise

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (noise,) = ctx.saved_tensors
        return grad * noise


class Glu(Function):
    """a * sigmoid(b) for the two halves a, b of x along ``dim``; gradients (s * g, a * s * (1 - s) * g)."""

    backward_name = "GluBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        half = x.shape[dim] // 2
        a, b = _halves(x, dim, half)
        s = sigmoid_array(ctx.xp, b)
        ctx.save_for_backward(a, s)
        ctx.dim = dim
        return a * s

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        a, s = ctx.saved_tensors
        return ctx.xp.concatenate([grad * s, grad * a * s * (1 - s)], axis=ctx.dim)


def _halves(x: Any, dim: int, half: int) -> tuple[Any, Any]:
    before = (slice(None),) * dim
    return x[before + (slice(0, half),)], x[before + (slice(half, None),)]


# ----------------------------------------------------------------------------- the public functions
def _floating_input(x: Tensor, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"{name}" not implemented for \'{dtypes.type_name(x.dtype)}\'')


class LeakyReluInplace(LeakyRelu):
    """The in-place form, which PyTorch names apart (its backward reads the output)."""

    backward_name = "LeakyReluBackward1"


class EluInplace(Elu):
    backward_name = "EluBackward1"


class CeluInplace(Celu):
    backward_name = "CeluBackward1"


class ThresholdInplace(Threshold):
    backward_name = "ThresholdBackward1"


INPLACE_NODES = {LeakyRelu: LeakyReluInplace, Elu: EluInplace, Celu: CeluInplace, Threshold: ThresholdInplace}


def _run(x: Tensor, name: str, inplace: bool, function: type[Function], *args: Any) -> Tensor:
    """``function`` applied to ``x`` (a float tensor), or written into ``x`` when ``inplace``."""
    _floating_input(x, name)
    if inplace:
        return modify(x, INPLACE_NODES.get(function, function).apply, *args)
    return function.apply(x, *args)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _run(input, "leaky_relu", inplace, LeakyRelu, float(negative_slope))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _run(input, "elu", inplace, Elu, float(alpha), 1.0, 1.0)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """ELU with the self-normalizing constants of Klambauer et al. (2017)."""
    return _run(input, "selu", inplace, Elu, SELU_ALPHA, SELU_SCALE, 1.0)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _run(input, "celu", inplace, Celu, float(alpha), 1.0, 1.0 / alpha)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _run(input, "softplus", False, Softplus, float(beta), float(threshold))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _run(input, "silu", inplace, Silu)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _run(input, "mish", inplace, Mish)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return _run(input, "hardswish", inplace, Hardswish)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return _run(input, "hardsigmoid", inplace, Hardsigmoid)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _run(input, "hardtanh", inplace, Hardtanh, min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): ``hardtanh(x, 0, 6)``, as in PyTorch."""
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    return _run(input, "log_sigmoid", False, LogSigmoid)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    return _run(input, "threshold", inplace, Threshold, threshold, value)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """leaky_relu with a learned slope per channel (dim 1; a single slope for inputs of fewer dims)."""
    _floating_input(input, "prelu")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() not in (1, channels):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.numel()} and channel size = {channels}.")
    shape = [1] * input.ndim
    if input.ndim >= 2:
        shape[1] = weight.numel()
    return Prelu.apply(input, weight.reshape(shape) if input.ndim else weight.reshape(()))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    _floating_input(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = normalize_dim(dim, input.ndim, "glu")
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    return Glu.apply(input, d)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return _run(input, "hardshrink", False, Hardshrink, float(lambd))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    _floating_input(input, "softshrink")
    largest = float(np.finfo(input.dtype).max)
    if not 0 <= lambd <= largest:
        raise RuntimeError(f"lambda must be in range [0, {largest:g}] for input dtype "
                           f"{dtypes.type_name(input.dtype)}, but found {lambd:g}")
    return _run(input, "softshrink", False, Softshrink, float(lambd))


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: random slopes in [lower, upper] in training, their mean otherwise."""
    if not training:
        return _run(input, "rrelu", inplace, LeakyRelu, (lower + upper) / 2)
    return _run(input, "rrelu", inplace, Rrelu, float(lower), float(upper))


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def implicit_softmax_dim(ndim: int, name: str) -> int:
    """The dim PyTorch's softmax family picks when called without one (0 for 0-, 1- and 3-d inputs,
    else 1), with its deprecation warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1
