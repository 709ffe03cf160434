"""Adam and AdamW: steps scaled by running averages of the gradient and of its square."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ..creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, ParamGroup, check_non_negative


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) with PyTorch's exact update rule. At step ``t``, with gradient ``g``::

        g = g + weight_decay * p                  (L2 penalty; AdamW decays p directly instead)
        m = beta1 * m + (1 - beta1) * g           (exp_avg)
        v = beta2 * v + (1 - beta2) * g * g       (exp_avg_sq; amsgrad uses the running max of v)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    The two ``1 - beta**t`` factors undo the bias of ``m`` and ``v`` towards their zero start.
    ``decoupled_weight_decay=True`` is AdamW's rule (see :class:`AdamW`).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_non_negative(group, "lr", "eps", "weight_decay")
        betas = group["betas"]
        if not (isinstance(betas, (tuple, list)) and len(betas) == 2 and all(0 <= b < 1 for b in betas)):
            raise ValueError(f"invalid betas: {betas!r} (expected two numbers in [0, 1))")

    def _update(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        lr, weight_decay, (beta1, beta2) = group["lr"], group["weight_decay"], group["betas"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        step = state["step"]
        if group["maximize"]:
            grad = -grad
        if weight_decay:
            if group["decoupled_weight_decay"]:
                param.data *= 1 - lr * weight_decay
            else:
                grad = grad + weight_decay * param.data
        exp_avg, exp_avg_sq = state["exp_avg"].data, state["exp_avg_sq"].data
        exp_avg *= beta1
        exp_avg += (1 - beta1) * grad
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        if group["amsgrad"]:
            xp = param._backend
            second_moment = xp.maximum(state["max_exp_avg_sq"].data, exp_avg_sq, out=state["max_exp_avg_sq"].data)
        else:
            second_moment = exp_avg_sq
        step_size = lr / (1 - beta1**step)
        denom = param._backend.sqrt(second_moment)
        denom /= math.sqrt(1 - beta2**step)
        denom += group["eps"]
        param.data -= step_size * (exp_avg / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): instead of adding
    ``weight_decay * p`` to the gradient, where Adam's scaling would shrink it for parameters with
    large gradients, each step first shrinks the parameter itself: ``p = p * (1 - lr * weight_decay)``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
