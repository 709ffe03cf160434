"""Margin, ranking, embedding and likelihood losses, as ``torch.nn.functional`` computes them:
margin_ranking_loss, hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss,
cosine_embedding_loss, triplet_margin_loss (and its form with any distance), gaussian_nll_loss and
poisson_nll_loss. Each is a composition of differentiable ops, written as PyTorch's implementation
writes it (the same epsilons, clamps and masks), so values and gradients are PyTorch's.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from .._checks import check_number, check_same_device, check_tensor
from ..autograd import grad_mode
from ..creation import full_like
from ..tensor import Tensor
from .activation import Softplus, logsigmoid
from .distance import pairwise_distance
from .elementwise import clamp, minimum, where
from .losses import constant_argument, loss_operands, optional_tensor, reduce_tensor, reduction_of
from .pointwise_losses import _size

_COSINE_EPSILON = 1e-12  # PyTorch's, added to each squared magnitude


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin): x1 should rank above x2 where y = 1, below where y = -1."""
    reduction = reduction_of(reduction, size_average, reduce)
    input2 = loss_operands("margin_ranking_loss", input1, input2)
    target = loss_operands("margin_ranking_loss", input1, target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {_size(input1)}, input2: {_size(input2)}, target: {_size(target)} ")
    margin = check_number("margin_ranking_loss", "margin", margin)
    return reduce_tensor(clamp(-target * (input1 - input2) + margin, min=0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """x where y = 1, max(0, margin - x) where y = -1 (``input`` usually a distance)."""
    reduction = reduction_of(reduction, size_average, reduce)
    target = loss_operands("hinge_embedding_loss", input, target)
    margin = check_number("hinge_embedding_loss", "margin", margin)
    below_margin = where(target != 1, clamp(margin - input, min=0), 0.0)
    return reduce_tensor(below_margin + where(target != -1, input, 0.0), reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x)), the logistic loss of labels y in {-1, 1}."""
    reduction = reduction_of(reduction, size_average, reduce)
    target = loss_operands("soft_margin_loss", input, target)
    constant_argument(target, "soft_margin_loss", "target")
    return reduce_tensor(Softplus.apply(-input * target, 1.0, math.inf), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of sigmoid(x) against 0/1 labels, averaged over the classes (last dim)."""
    reduction = reduction_of(reduction, size_average, reduce)
    target = loss_operands("multilabel_soft_margin_loss", input, target)
    weight = optional_tensor("multilabel_soft_margin_loss", "weight", weight, input)
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * weight
    class_dim = input.ndim - 1
    return reduce_tensor(losses.sum(class_dim) / input.shape[class_dim], reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1; rows of (N, D) or one (D,)."""
    reduction = reduction_of(reduction, size_average, reduce)
    input2 = loss_operands("cosine_embedding_loss", input1, input2)
    target = loss_operands("cosine_embedding_loss", input1, target)
    if target.ndim > 1:
        raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported, got {target.ndim}D target")
    if input1.ndim != input2.ndim or input1.ndim != target.ndim + 1:
        raise RuntimeError(f"cosine_embedding_loss: expected {target.ndim + 1}D inputs for a {target.ndim}D target, "
                           f"got {input1.ndim}D and {input2.ndim}D inputs")
    dim = input1.ndim - 1
    products = (input1 * input2).sum(dim)
    magnitudes = ((input1 * input1).sum(dim) + _COSINE_EPSILON) * ((input2 * input2).sum(dim) + _COSINE_EPSILON)
    cosine = products / magnitudes.sqrt()
    margin = check_number("cosine_embedding_loss", "margin", margin)
    losses = where(target == 1, 1 - cosine, 0.0) + where(target == -1, clamp(cosine - margin, min=0), 0.0)
    return reduce_tensor(losses, reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) for a distance d (pairwise_distance by default); ``swap``
    takes d(p, n) for d(a, n) where it is smaller (Balntas et al. 2016)."""
    reduction = reduction_of(reduction)
    positive = loss_operands("triplet_margin_loss", anchor, positive)
    negative = loss_operands("triplet_margin_loss", anchor, negative)
    margin = check_number("triplet_margin_loss", "margin", margin)
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    return _triplet(anchor, positive, negative, pairwise_distance if distance_function is None else distance_function,
                    margin, swap, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The triplet loss with the p-norm distance ||a - b + eps||_p."""
    reduction = reduction_of(reduction, size_average, reduce)
    positive = loss_operands("triplet_margin_loss", anchor, positive)
    negative = loss_operands("triplet_margin_loss", anchor, negative)
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1 or dims[0] not in (1, 2):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions (1 or 2), but got: anchor {dims[0]}D, positive {dims[1]}D, and negative "
                           f"{dims[2]}D inputs")
    margin = check_number("triplet_margin_loss", "margin", margin)
    p, eps = check_number("triplet_margin_loss", "p", p), check_number("triplet_margin_loss", "eps", eps)

    return _triplet(anchor, positive, negative, lambda a, b: pairwise_distance(a, b, p, eps), margin, swap, reduction)


def _triplet(anchor: Tensor, positive: Tensor, negative: Tensor, distance: Callable[[Tensor, Tensor], Tensor],
             margin: float, swap: bool, reduction: str) -> Tensor:
    to_positive, to_negative = distance(anchor, positive), distance(anchor, negative)
    if swap:
        to_negative = minimum(to_negative, distance(positive, negative))
    return reduce_tensor(clamp(margin + to_positive - to_negative, min=0), reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log v + (x - y)^2 / v) (+ 0.5 log 2 pi with ``full``): the negative log-likelihood of y under
    N(x, v). ``var`` has the input's shape, or one dim less, or size 1 in one dim, or is a float; it is
    clamped at ``eps`` in the value only, so its gradient passes unclamped, as in PyTorch (which clamps
    a copy without recording it)."""
    target = loss_operands("gaussian_nll_loss", input, target)
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input.detach(), var)
    else:
        var = check_same_device("gaussian_nll_loss", "var", check_tensor("gaussian_nll_loss", "var", var),
                                input.device)
        if bool((var.detach() < 0).any()):
            raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)  # one variance per row of the last dim
        elif var.ndim != input.ndim or sum(v for x, v in zip(input.shape, var.shape) if x != v) != 1:
            raise ValueError("var is of incorrect size")  # else one dim of size 1, broadcast
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    eps = check_number("gaussian_nll_loss", "eps", eps)
    with grad_mode.no_grad():
        lifted = clamp(var, min=eps) - var
    var = var + lifted
    losses = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return reduce_tensor(losses, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of counts y under Poisson(rate): exp(x) - y x for a log-rate x
    (``log_input``), x - y log(x + eps) for a rate x; ``full`` adds Stirling's y log y - y + 0.5 log(2 pi y)
    for y > 1."""
    reduction = reduction_of(reduction, size_average, reduce)
    target = loss_operands("poisson_nll_loss", input, target)
    if log_input:
        losses = input.exp() - target * input
    else:
        losses = input - target * (input + check_number("poisson_nll_loss", "eps", eps)).log()
    if full:
        safe = where(target > 1, target, 1.0)  # Stirling's term is 0 where y <= 1, and finite there
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        losses = losses + where(target > 1, stirling, 0.0)
    return reduce_tensor(losses, reduction)

