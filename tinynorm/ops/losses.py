"""Loss functions: cross_entropy (fused with log_softmax), nll_loss, mse_loss.

Semantics follow ``torch.nn.functional``: class dim 1 for inputs (N, C) or (N, C, d1, ...),
``reduction`` in {'mean', 'sum', 'none'}, ``ignore_index`` targets contribute nothing and are not
counted by 'mean', ``label_smoothing`` mixes the one-hot target with the uniform distribution.
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor, on_device
from .shape import check_indices

REDUCTIONS = ("mean", "sum", "none")


def _mean_divisor(kept: int) -> float:
    """What 'mean' divides the summed losses by: the ``kept`` (not ignored) rows; nan when there is none,
    so that an all-ignored batch gives nan, as in PyTorch."""
    return kept or float("nan")


def _reduce(xp: Any, losses: Any, reduction: str, kept: int) -> Any:
    if reduction == "sum":
        return xp.sum(losses)
    if reduction == "mean":
        return xp.sum(losses) / _mean_divisor(kept)
    return losses


def _row_scale(grad: Any, reduction: str, kept: int, n: int) -> Any:
    """The upstream gradient of each row's loss: a column (rows, 1), or (1, 1) when it is the same
    for all rows."""
    if reduction == "none":
        return grad.reshape(n, 1)
    return (grad / _mean_divisor(kept) if reduction == "mean" else grad).reshape(1, 1)


def _one_hot(xp: Any, target: Any, classes: int) -> Any:
    """(rows, classes) booleans, True at each row's target class."""
    return xp.arange(classes) == target.reshape(-1, 1)


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
        losses, lse = ctx.xp.cross_entropy_forward(logits, target, ignore_index, smoothing)
        ctx.save_for_backward(logits, lse, target)
        ctx.ignore_index, ctx.smoothing = ignore_index, smoothing
        ctx.grad_scale = 1 / _mean_divisor(kept) if reduction == "mean" else 1.0
        return _reduce(ctx.xp, losses, reduction, kept)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        logits, lse, target = ctx.saved_tensors
        dlogits = ctx.xp.cross_entropy_backward(grad, logits, lse, target, ctx.ignore_index, ctx.smoothing,
                                                ctx.grad_scale)
        return dlogits, None


class NllLoss(Function):
    """Negative log-likelihood of 2-D log-probabilities (rows, classes) at int targets (rows,)."""

    backward_name = "NllLossBackward0"


    @staticmethod
    def forward(ctx: Context, logp: Any, target: Any, ignore_index: int, reduction: str, kept: int) -> Any:
        xp = ctx.xp
        n = logp.shape[0]
        valid = target != ignore_index
        safe_target = xp.where(valid, target, 0)
        picked = xp.take_along_axis(logp, safe_target.reshape(n, 1), axis=1, checked=True)  # checked by nll_loss
        losses = xp.where(valid, -picked.reshape(n), 0)
        ctx.save_for_backward(safe_target, valid)
        ctx.shape, ctx.reduction, ctx.kept = logp.shape, reduction, kept
        return _reduce(xp, losses, reduction, kept)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        xp = ctx.xp
        target, valid = ctx.saved_tensors
        n, classes = ctx.shape
        picked = _one_hot(xp, target, classes) & valid.reshape(n, 1)
        return xp.where(picked, -_row_scale(grad, ctx.reduction, ctx.kept, n), 0), None


def _as_rows(input: Tensor, target: Any, op: str) -> tuple[Tensor, Any, tuple]:
    """(N, C, d1, ...) logits and (N, d1, ...) targets as (rows, C) and (rows,) (targets as an array
    on the input's device; host data is copied there)."""
    target_data = on_device(target, input.device, op, "target is", "input is").array
    if input.ndim == 1:
        input, target_data = input.reshape(1, -1), target_data.reshape(1)
    if input.ndim < 2:
        raise ValueError(f"{op}: input must have shape (N, C) or (N, C, d1, ...), got {tuple(input.shape)}")
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target_data.shape) != expected:
        raise ValueError(
            f"{op}: target has shape {tuple(target_data.shape)} but input {tuple(input.shape)} needs "
            f"targets of shape {expected}"
        )
    if target_data.dtype.kind not in "iu":
        raise TypeError(f"{op}: target must hold integer class indices, got dtype {target_data.dtype}")
    if input.ndim == 2:
        return input, target_data, expected
    classes = input.shape[1]
    rows = input.permute(0, *range(2, input.ndim), 1).reshape(-1, classes)
    return rows, target_data.reshape(-1), expected


def _check_reduction(reduction: str, op: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")


def cross_entropy(input: Tensor, target: Any, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy between logits ``input`` (N, C, ...) and class indices ``target`` (N, ...)."""
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    rows, flat_target, shape = _as_rows(input, target, "cross_entropy")
    kept = check_indices(input._backend, flat_target, rows.shape[1], "cross_entropy", "target values", ignore_index)
    loss = CrossEntropy.apply(rows, flat_target, ignore_index, reduction, float(label_smoothing), kept)
    return loss.reshape(shape) if reduction == "none" else loss


def nll_loss(input: Tensor, target: Any, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (N, C, ...) at ``target`` (N, ...)."""
    _check_reduction(reduction, "nll_loss")
    rows, flat_target, shape = _as_rows(input, target, "nll_loss")
    kept = check_indices(input._backend, flat_target, rows.shape[1], "nll_loss", "target values", ignore_index)
    loss = NllLoss.apply(rows, flat_target, ignore_index, reduction, kept)
    return loss.reshape(shape) if reduction == "none" else loss


def mse_loss(input: Tensor, target: Any, reduction: str = "mean") -> Tensor:
    """Mean squared error; shapes must match exactly (as PyTorch warns, broadcasting here is a bug)."""
    _check_reduction(reduction, "mse_loss")
    target_shape = tuple(getattr(target, "shape", ()))
    if target_shape != tuple(input.shape):
        raise ValueError(f"mse_loss: input shape {tuple(input.shape)} and target shape {target_shape} differ")
    squared = (input - target) ** 2
    if reduction == "none":
        return squared
    return squared.sum() if reduction == "sum" else squared.mean()
