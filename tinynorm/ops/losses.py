"""Classification losses over class dim 1: cross_entropy (fused with log_softmax) and nll_loss.

Semantics follow ``torch.nn.functional``: inputs (N, C), (N, C, d1, ...) or an unbatched (C,);
``reduction`` in {'mean', 'sum', 'none'} (or the legacy ``size_average``/``reduce`` flags);
``ignore_index`` targets contribute nothing and are not counted by 'mean'; a class ``weight`` scales
each target's loss, and 'mean' then divides by the summed weights of the targets; ``label_smoothing``
mixes the target with the uniform distribution; cross_entropy also takes class probabilities as the
target (a float tensor of the input's shape).

The common case (class indices, no weight) runs one fused kernel each way; the others are built from
log_softmax and nll_loss exactly as PyTorch builds them.
"""
from __future__ import annotations

import warnings
from numbers import Integral
from typing import Any

import numpy as np

from .. import dtypes
from .._checks import check_number, check_same_device, check_tensor, type_name
from ..autograd import grad_mode
from ..autograd.function import Context, Function
from ..tensor import Tensor
from .shape import check_indices
from .softmax import log_softmax

REDUCTIONS = ("mean", "sum", "none")


# ----------------------------------------------------------------------------- reductions
def reduction_of(reduction: str, size_average: bool | None = None, reduce: bool | None = None) -> str:
    """The reduction a loss applies: ``reduction``, or the one PyTorch's legacy ``size_average``/``reduce``
    flags stand for (with PyTorch's deprecation warning); ValueError for an unknown name."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      "instead.", UserWarning, stacklevel=3)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      UserWarning, stacklevel=3)
        return "mean"
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


# ----------------------------------------------------------------------------- argument checks
def loss_operands(op: str, input: Any, target: Any) -> Tensor:
    """``target`` after checking that ``input`` and ``target`` are tensors on one device: a list or a
    numpy array is PyTorch's ``mse_loss(): argument 'target' must be Tensor, not list``."""
    check_tensor(op, "input", input)
    return check_same_device(op, "target", check_tensor(op, "target", target), input.device)


def optional_tensor(op: str, name: str, value: Any, input: Tensor) -> Tensor | None:
    """A ``weight``-like argument: None, or a tensor on the input's device."""
    if value is None:
        return None
    return check_same_device(op, name, check_tensor(op, name, value), input.device)


def check_index(op: str, name: str, value: Any) -> int:
    """An integer argument such as ``ignore_index`` (a bool counts, as in PyTorch)."""
    if not isinstance(value, Integral):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type_name(value)}")
    return int(value)


def reduce_tensor(losses: Tensor, reduction: str) -> Tensor:
    """Elementwise ``losses`` summed, averaged or kept."""
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def _divide(xp: Any, total: Any, divisor: Any) -> Any:
    """``total / divisor``, nan (without a warning) when the divisor is 0, as PyTorch gives for a batch
    whose targets are all ignored."""
    with np.errstate(invalid="ignore", divide="ignore"):  # host arrays only; device arrays never warn
        return total / divisor


def constant_argument(value: Any, function: str, argument: str) -> None:
    """PyTorch's error for a weight that requires grad where its loss has no gradient for it."""
    if isinstance(value, Tensor) and value.requires_grad and grad_mode._state.enabled:
        raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument '{argument}'. "
                           "This input cannot have requires_grad True.")


def _mean_divisor(kept: int) -> float:
    """What an unweighted 'mean' divides the summed losses by: the ``kept`` (not ignored) targets."""
    return kept or float("nan")


# ----------------------------------------------------------------------------- fused functions
class CrossEntropy(Function):
    """Cross-entropy on 2-D logits (rows, classes) and int targets (rows,), one fused kernel each way.

    loss_i = -(1 - s) * logp[i, y_i] - (s / C) * sum_c logp[i, c]; the gradient w.r.t. the logits is
    softmax - target_distribution, per row, times the row's upstream gradient (0 for ignored rows).
    The kernels (``xp.cross_entropy_forward``/``backward``, in ``kernels/cpu/cross_entropy.py`` with
    the derivation) keep only each row's log-sum-exp between the passes. ``kept`` is the number of rows
    whose target is not ``ignore_index``, counted on the host by the target check.
    """

    backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx: Context, logits: Any, target: Any, ignore_index: int, reduction: str, smoothing: float,
                kept: int) -> Any:
        xp = ctx.xp
        losses, lse = xp.cross_entropy_forward(logits, target, ignore_index, smoothing)
        ctx.save_for_backward(logits, lse, target)
        ctx.ignore_index, ctx.smoothing = ignore_index, smoothing
        ctx.grad_scale = 1 / _mean_divisor(kept) if reduction == "mean" else 1.0
        if reduction == "none":
            return losses
        return xp.sum(losses) / (_mean_divisor(kept) if reduction == "mean" else 1)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        logits, lse, target = ctx.saved_tensors
        dlogits = ctx.xp.cross_entropy_backward(grad, logits, lse, target, ctx.ignore_index, ctx.smoothing,
                                                ctx.grad_scale)
        return dlogits, None


class NllLoss(Function):
    """Negative log-likelihood of 2-D log-probabilities (rows, classes) at int targets (rows,), each
    scaled by its class weight (``weight`` None: all 1); ignored targets weigh 0.

    'mean' divides by the summed weights of the targets (the ``kept`` count without a weight)."""

    backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx: Context, logp: Any, target: Any, weight: Any, ignore_index: int, reduction: str,
                kept: int) -> Any:
        xp = ctx.xp
        n = logp.shape[0]
        valid = target != ignore_index
        safe_target = xp.where(valid, target, 0)
        picked = xp.take_along_axis(logp, safe_target.reshape(n, 1), axis=1).reshape(n)
        if weight is None:
            row_weight, divisor = valid.astype(logp.dtype), _mean_divisor(kept)
        else:
            row_weight = xp.take(weight, safe_target, mode="clip") * valid  # targets are checked: clip is a no-op
            divisor = xp.sum(row_weight)
        ctx.save_for_backward(safe_target, row_weight)
        ctx.classes, ctx.reduction, ctx.divisor = logp.shape[1], reduction, divisor
        losses = -picked * row_weight
        if reduction == "none":
            return losses
        return _divide(xp, xp.sum(losses), divisor) if reduction == "mean" else xp.sum(losses)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        xp = ctx.xp
        target, row_weight = ctx.saved_tensors
        per_row = grad if ctx.reduction != "mean" else _divide(xp, grad, ctx.divisor)
        with np.errstate(invalid="ignore"):  # ignored rows (weight 0) get 0, also when the mean is nan
            scale = xp.where(row_weight == 0, 0, -row_weight * per_row)
        return xp.where(xp.arange(ctx.classes) == target.reshape(-1, 1), scale.reshape(-1, 1), 0), None, None


# ----------------------------------------------------------------------------- checks
def _class_target(input: Tensor, target: Any, op: str) -> tuple[Tensor, Any, tuple]:
    """(N, C, d1, ...) scores and (N, d1, ...) class indices as (rows, C) and (rows,) (targets as an
    array on the input's device; host data is copied there), and the shape of the unreduced loss."""
    target_data = target.array
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have shape (N, C), (N, C, d1, ...) or (C,), got a 0-d tensor")
    if target_data.dtype.kind == "f" and target_data.ndim == input.ndim:
        raise RuntimeError(f"{op}: class-probability targets must have the input's shape {list(input.shape)}, "
                           f"got {list(target_data.shape)}")
    if target_data.dtype.kind not in "iu":
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {dtypes.type_name(target_data.dtype)}")
    if input.ndim == 1:
        if target_data.ndim != 0:
            raise RuntimeError(f"0D target tensor expected for an unbatched input of shape {tuple(input.shape)}, "
                               f"got shape {tuple(target_data.shape)}")
        return input.reshape(1, -1), target_data.reshape(1), ()
    if target_data.ndim == 0 or target_data.shape[0] != input.shape[0]:
        size = target_data.shape[0] if target_data.ndim else "()"
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({size}).")
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target_data.shape) != expected:
        if input.ndim == 2:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target_data.shape)}")
    if input.ndim == 2:
        return input, target_data, expected
    rows = input.permute(0, *range(2, input.ndim), 1).reshape(-1, input.shape[1])
    return rows, target_data.reshape(-1), expected


def _class_weight(weight: Any, input: Tensor, op: str) -> Tensor | None:
    """``weight`` as a tensor on the input's device, checked to hold one value per class."""
    weight = optional_tensor(op.split()[0], "weight", weight, input)
    if weight is None:
        return None
    classes = input.shape[1] if input.ndim > 1 else input.shape[0]
    if weight.ndim != 1 or weight.shape[0] != classes:
        prefix = "cross_entropy: " if op == "cross_entropy (probabilities)" else ""
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    return weight


def _check_smoothing(label_smoothing: Any) -> float:
    value = check_number("cross_entropy", "label_smoothing", label_smoothing)
    if not 0.0 <= value <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    return value


def _check_targets(input: Tensor, rows: Tensor, flat_target: Any, op: str, ignore_index: int) -> int:
    """How many targets are not ``ignore_index``, after checking every other one indexes a class."""
    if rows.shape[1] == 0:
        outside, _ = input._backend.count_indices(flat_target, 0, ignore_index)
        if outside:
            raise IndexError(f"{op}: the input (shape {list(input.shape)}) has no classes, so every target must "
                             f"be ignore_index ({ignore_index}); got {outside} other targets")
        return 0
    return check_indices(input._backend, flat_target, rows.shape[1], op, "target values", ignore_index)


def _without_classes(rows: Tensor, shape: tuple, reduction: str) -> Tensor:
    """The loss of inputs with no classes, whose targets are all ignored: zeros, summed to 0, and a
    'mean' over no target is nan, as in PyTorch."""
    losses = rows.sum(1)  # a sum over no classes: zeros, differentiable w.r.t. the (empty) input
    if reduction == "none":
        return losses.reshape(shape)
    return losses.sum() / (float("nan") if reduction == "mean" else 1.0)


# ----------------------------------------------------------------------------- public functions
def nll_loss(input: Tensor, target: Any, weight: Any = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (N, C, ...) at class indices ``target`` (N, ...)."""
    target = loss_operands("nll_loss", input, target)
    reduction = reduction_of(reduction, size_average, reduce)
    ignore_index = check_index("nll_loss", "ignore_index", ignore_index)
    constant_argument(weight, "nll_loss_forward", "weight")
    weight = _class_weight(weight, input, "nll_loss")
    rows, flat_target, shape = _class_target(input, target, "nll_loss")
    kept = _check_targets(input, rows, flat_target, "nll_loss", ignore_index)
    if rows.shape[1] == 0:
        return _without_classes(rows, shape, reduction)
    loss = NllLoss.apply(rows, flat_target, None if weight is None else weight.array, ignore_index, reduction, kept)
    return loss.reshape(shape) if reduction == "none" else loss


def cross_entropy(input: Tensor, target: Any, weight: Any = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy between logits ``input`` (N, C, ...) and class indices ``target`` (N, ...),
    or class probabilities ``target`` of the input's shape."""
    target = loss_operands("cross_entropy", input, target)
    reduction = reduction_of(reduction, size_average, reduce)
    label_smoothing = _check_smoothing(label_smoothing)
    ignore_index = check_index("cross_entropy", "ignore_index", ignore_index)
    if target.dtype.kind == "f" and target.shape == input.shape:
        return _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing)
    constant_argument(weight, "nll_loss_forward", "weight")
    weight = _class_weight(weight, input, "cross_entropy")
    if weight is not None:
        return _weighted_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)
    rows, flat_target, shape = _class_target(input, target, "cross_entropy")
    kept = _check_targets(input, rows, flat_target, "cross_entropy", ignore_index)
    if rows.shape[1] == 0:
        return _without_classes(rows, shape, reduction)
    loss = CrossEntropy.apply(rows, flat_target, ignore_index, reduction, label_smoothing, kept)
    return loss.reshape(shape) if reduction == "none" else loss


def _weighted_cross_entropy(input: Tensor, target: Any, weight: Tensor, ignore_index: int, reduction: str,
                            smoothing: float) -> Tensor:
    """PyTorch's composition: nll_loss of log_softmax, plus the smoothing term -sum_c w_c logp_c / C,
    which 'mean' divides by the summed weights of the (not ignored) targets, as nll_loss does."""
    class_dim = 1 if input.ndim > 1 else 0
    logp = log_softmax(input, class_dim)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if smoothing == 0:
        return nll
    valid = target != ignore_index
    shape = [1] * input.ndim
    shape[class_dim] = weight.shape[0]
    smooth = (-(logp * weight.reshape(shape)).sum(class_dim)) * valid
    if reduction == "mean":
        safe = Tensor._from_array(input._backend.where(valid.array, target.array, 0), input.device)
        smooth = smooth.sum() / (weight[safe] * valid).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - smoothing) + smooth * (smoothing / weight.shape[0])


def _cross_entropy_probabilities(input: Tensor, target: Tensor, weight: Any, reduction: str,
                                 smoothing: float) -> Tensor:
    """-sum_c w_c * p_c * log_softmax(x)_c with target probabilities p (smoothed towards uniform);
    'mean' divides by the number of distributions, N * d1 * ..., as PyTorch does."""
    class_dim = 1 if input.ndim > 1 else 0
    classes = input.shape[class_dim]
    weight = _class_weight(weight, input, "cross_entropy (probabilities)")
    if smoothing > 0:
        target = target * (1 - smoothing) + smoothing / classes
    products = log_softmax(input, class_dim) * target
    if weight is not None:
        shape = [1] * input.ndim
        shape[class_dim] = classes
        products = products * weight.reshape(shape)
    if reduction == "none":
        return -products.sum(class_dim)
    total = -products.sum()
    return total / (input.numel() // classes if input.numel() else float("nan")) if reduction == "mean" else total
