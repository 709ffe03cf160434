"""Losses that compare input and target element by element: mse_loss, l1_loss, smooth_l1_loss,
huber_loss, binary_cross_entropy (with logits) and kl_div, with ``torch.nn.functional``'s semantics.

As in PyTorch, a target of another shape than the input is broadcast against it with a warning (it is
usually a bug, e.g. (N,) targets against (N, 1) predictions), except for the binary cross-entropies,
which require equal shapes. Most are compositions of differentiable ops; binary_cross_entropy is one
Function because its PyTorch gradient, (x - t) / max(x (1 - x), 1e-12), stays finite where the
logarithms of a composition would give 0 * inf = nan (a sigmoid output that rounded to exactly 1).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .._checks import check_bool, check_number
from ..autograd.function import Context, Function
from ..tensor import Tensor
from .activation import Softplus
from .elementwise import where
from .losses import constant_argument, loss_operands, optional_tensor, reduce_tensor, reduction_of

_LOG_FLOOR = -100.0  # PyTorch clamps BCE's logarithms here, so log(0) gives a finite loss
_EPSILON = float(np.float32(1e-12))  # PyTorch clamps x (1 - x) at 1e-12 rounded to float32


def _broadcast_target(input: Tensor, target: Any, op: str) -> tuple[Tensor, Tensor]:
    """``input`` and ``target`` (tensors on one device) broadcast to one shape, with PyTorch's warning
    when the shapes differ and its error when they do not broadcast."""
    target = loss_operands(op, input, target)
    if target.shape == input.shape:
        return input, target
    warnings.warn(f"Using a target size ({_size(target)}) that is different to the input size ({_size(input)}). "
                  "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                  "same size.", UserWarning, stacklevel=3)
    shape = broadcast_shape(input.shape, target.shape)
    return input.expand(shape), target.expand(shape)


def broadcast_shape(a: tuple, b: tuple) -> tuple:
    """The broadcast shape of ``a`` and ``b``, or PyTorch's RuntimeError naming the first mismatch."""
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        for dim in range(-1, -min(len(a), len(b)) - 1, -1):
            if a[dim] != b[dim] and 1 not in (a[dim], b[dim]):
                raise RuntimeError(f"The size of tensor a ({a[dim]}) must match the size of tensor b ({b[dim]}) at "
                                   f"non-singleton dimension {max(len(a), len(b)) + dim}") from None
        raise


def _size(t: Tensor) -> str:
    return f"torch.Size({list(t.shape)})"


def _weighted(losses: Tensor, weight: Any, input: Tensor, reduction: str, mean_by_weight: bool, op: str) -> Tensor:
    """Elementwise ``losses`` times ``weight`` (of the input's shape), reduced; PyTorch's weighted 'mean'
    divides by the summed weights for mse and l1 (``mean_by_weight``) and by the count for huber."""
    weight = optional_tensor(op, "weight", weight, input)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    losses = losses * weight
    if reduction == "mean" and mean_by_weight:
        return losses.sum() / weight.sum()
    return reduce_tensor(losses, reduction)


def mse_loss(input: Tensor, target: Any, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Any = None) -> Tensor:
    """Mean squared error (x - y)^2."""
    reduction = reduction_of(reduction, size_average, reduce)
    input, target = _broadcast_target(input, target, "mse_loss")
    squared = (input - target) ** 2
    return reduce_tensor(squared, reduction) if weight is None else _weighted(squared, weight, input, reduction, True,
                                                                                "mse_loss")


def l1_loss(input: Tensor, target: Any, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Any = None) -> Tensor:
    """Mean absolute error |x - y|."""
    reduction = reduction_of(reduction, size_average, reduce)
    input, target = _broadcast_target(input, target, "l1_loss")
    absolute = (input - target).abs()
    return reduce_tensor(absolute, reduction) if weight is None else _weighted(absolute, weight, input, reduction, True,
                                                                                 "l1_loss")


def smooth_l1_loss(input: Tensor, target: Any, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (beta = 0: the L1 loss)."""
    beta = check_number("smooth_l1_loss", "beta", beta)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    reduction = reduction_of(reduction, size_average, reduce)
    input, target = _broadcast_target(input, target, "smooth_l1_loss")
    difference = input - target
    absolute = difference.abs()
    if beta == 0:
        return reduce_tensor(absolute, reduction)
    quadratic = difference * difference * (0.5 / beta)
    return reduce_tensor(where(absolute < beta, quadratic, absolute - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Any, reduction: str = "mean", delta: float = 1.0,
               weight: Any = None) -> Tensor:
    """0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere: smooth_l1_loss times delta."""
    delta = check_number("huber_loss", "delta", delta)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    reduction = reduction_of(reduction)
    input, target = _broadcast_target(input, target, "huber_loss")
    difference = input - target
    absolute = difference.abs()
    losses = where(absolute < delta, difference * difference * 0.5, (absolute - 0.5 * delta) * delta)
    return reduce_tensor(losses, reduction) if weight is None else _weighted(losses, weight, input, reduction, False,
                                                                               "huber_loss")


class BinaryCrossEntropy(Function):
    """-w (t log x + (1 - t) log(1 - x)), logarithms floored at -100; reduced inside, so its node is
    PyTorch's. Gradients: w (x - t) / max(x (1 - x), 1e-12) for x, w (log(1 - x) - log x) for t."""

    backward_name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, t: Any, weight: Any, reduction: str) -> Any:
        xp = ctx.xp
        with np.errstate(divide="ignore"):  # log(0) is -inf, then floored (host arrays only warn)
            log_x, log_1mx = xp.maximum(xp.log(x), _LOG_FLOOR), xp.maximum(xp.log(1 - x), _LOG_FLOOR)
        losses = -(t * log_x + (1 - t) * log_1mx)
        if weight is not None:
            losses = losses * weight
        ctx.save_for_backward(x, t, weight)
        ctx.reduction, ctx.count = reduction, x.size
        if reduction == "none":
            return losses
        return xp.sum(losses) / (x.size if reduction == "mean" else 1)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x, t, weight = ctx.saved_tensors
        xp = ctx.xp
        if ctx.reduction == "mean":
            grad = grad / ctx.count
        if weight is not None:
            grad = grad * weight
        grad_x = grad * (x - t) / xp.maximum((1 - x) * x, _EPSILON) if ctx.needs_input_grad[0] else None
        grad_t = None
        if ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore"):
                grad_t = grad * (xp.maximum(xp.log(1 - x), _LOG_FLOOR) - xp.maximum(xp.log(x), _LOG_FLOOR))
        return grad_x, grad_t, None


def _check_unit_interval(t: Tensor, what: str) -> None:
    """RuntimeError unless every element of ``t`` lies in [0, 1] (NaN does not); reads one number back."""
    inside = (t.array >= 0) & (t.array <= 1)
    if int(t._backend.to_numpy(t._backend.sum(inside))) != t.numel():
        raise RuntimeError(f"all elements of {what} should be between 0 and 1")


def binary_cross_entropy(input: Tensor, target: Any, weight: Any = None, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of probabilities ``input`` against targets in [0, 1] of the same shape."""
    reduction = reduction_of(reduction, size_average, reduce)
    target = loss_operands("binary_cross_entropy", input, target)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({_size(target)}) that is different to the input size "
                         f"({_size(input)}) is deprecated. Please ensure they have the same size.")
    constant_argument(weight, "binary_cross_entropy", "weight")
    _check_unit_interval(input, "input")
    _check_unit_interval(target, "target")
    weight = optional_tensor("binary_cross_entropy", "weight", weight, input)
    if weight is not None:
        weight = weight.expand(broadcast_shape(target.shape, weight.shape))
    return BinaryCrossEntropy.apply(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Any, weight: Any = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Tensor:
    """Binary cross-entropy of sigmoid(input), computed from the logits without overflow:
    (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x); ``pos_weight`` weighs the positive targets
    (broadcast along the last dim, one per class)."""
    reduction = reduction_of(reduction, size_average, reduce)
    op = "binary_cross_entropy_with_logits"
    target = loss_operands(op, input, target)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({_size(target)}) must be the same as input size ({_size(input)})")
    constant_argument(weight, op, "weight")
    constant_argument(pos_weight, op, "pos_weight")
    weight, pos_weight = optional_tensor(op, "weight", weight, input), optional_tensor(op, "pos_weight", pos_weight,
                                                                                       input)
    softplus = Softplus.apply(-input, 1.0, math.inf)  # log(1 + exp(-x)), stable for every x
    if pos_weight is not None:
        softplus = softplus * ((pos_weight - 1) * target + 1)
    losses = (1 - target) * input + softplus
    if weight is not None:
        losses = losses * weight
    return reduce_tensor(losses, reduction)


def kl_div(input: Tensor, target: Any, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) pointwise: t (log t - x), with 0 where t = 0 (``log_target``: target
    holds log t). 'batchmean' divides the sum by the batch size, the KL divergence of the math; 'mean'
    divides by every element, with PyTorch's warning."""
    target = loss_operands("kl_div", input, target)
    if size_average is not None or reduce is not None:
        reduction = reduction_of(reduction, size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if reduction != "batchmean":
        reduction = reduction_of(reduction)
    if check_bool("kl_div", "log_target", log_target):
        losses = target.exp() * (target - input)
    else:
        positive = target > 0
        safe = where(positive, target, 1.0)  # log(1) = 0 where t = 0: t log t is 0 there, and finite
        losses = target * safe.log() - target * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input.shape[0] if input.ndim else total
    return reduce_tensor(losses, reduction)
