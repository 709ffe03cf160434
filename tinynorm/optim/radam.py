"""RAdam: Adam whose adaptive step is switched on gradually, as the variance estimate becomes reliable."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ..tensor import Tensor
from .options import ParamGroup, check_options
from .per_parameter import (
    PerParameterOptimizer, decayed_gradient, moving_average, moving_average_of_squares, zero_buffers,
)
from .state import Layout, Slot


class RAdam(PerParameterOptimizer):
    """RAdam (Liu et al., 2020) with PyTorch's rule. At step ``t``, with gradient ``g``::

        g = g + weight_decay * p                  (L2 penalty; decoupled_weight_decay: p *= 1 - lr * wd)
        m = beta1 * m + (1 - beta1) * g,  v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1,    rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        rho_t > 5:  p = p - lr * m / (1 - beta1**t) * r_t * sqrt(1 - beta2**t) / (sqrt(v) + eps),
                    r_t = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t))
        else:       p = p - lr * m / (1 - beta1**t)          (SGD with momentum, while v is unreliable)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_options(type(self).__name__, group, ("lr", "eps", "weight_decay"), ("decoupled_weight_decay", "maximize"),
                      betas=True)

    def _state_layout(self, group: ParamGroup) -> Layout:
        return {"step": Slot.STEP, "exp_avg": Slot.TENSOR, "exp_avg_sq": Slot.TENSOR}

    def _new_state(self, param: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return zero_buffers(param, "exp_avg", "exp_avg_sq")

    def _update_parameter(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        (beta1, beta2), lr, step, p = group["betas"], group["lr"], state["step"], param.array
        grad = decayed_gradient(p, grad, group)
        exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
        moving_average(exp_avg, grad, 1 - beta1)
        moving_average_of_squares(exp_avg_sq, grad, beta2)
        bias_correction1, bias_correction2 = 1 - beta1**step, 1 - beta2**step
        corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rectification = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            denom = param._backend.sqrt(exp_avg_sq)
            denom += group["eps"]
            p -= corrected_exp_avg * lr * (bias_correction2**0.5 / denom) * rectification
        else:
            p -= corrected_exp_avg * lr
