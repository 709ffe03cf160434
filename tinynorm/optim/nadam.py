"""NAdam: Adam with Nesterov momentum."""
from __future__ import annotations

from typing import Any, Iterable

from .. import dtypes
from ..tensor import Tensor
from .options import ParamGroup, check_options
from .per_parameter import (
    PerParameterOptimizer, decayed_gradient, moving_average, moving_average_of_squares, zero_buffers,
)
from .state import Layout, Slot


class NAdam(PerParameterOptimizer):
    """NAdam (Dozat, 2016) with PyTorch's rule. At step ``t``, with gradient ``g``::

        g = g + weight_decay * p                  (L2 penalty; decoupled_weight_decay: p *= 1 - lr * wd)
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))       (the momentum schedule)
        P = P * mu_t                              (mu_product, the product of mu_1 ... mu_t)
        m = beta1 * m + (1 - beta1) * g           (exp_avg)
        v = beta2 * v + (1 - beta2) * g * g       (exp_avg_sq)
        d = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P) * g / d - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / d

    ``mu_product`` is a Python float rounded, as PyTorch keeps it, to the default dtype (float32
    unless ``tinynorm.set_default_dtype(float64)``), so trajectories match PyTorch's in both dtypes.
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_options(type(self).__name__, group, ("lr", "eps", "weight_decay", "momentum_decay"),
                      ("decoupled_weight_decay", "maximize"), betas=True)

    def _state_layout(self, group: ParamGroup) -> Layout:
        return {"step": Slot.STEP, "mu_product": Slot.NUMBER, "exp_avg": Slot.TENSOR, "exp_avg_sq": Slot.TENSOR}

    def _new_state(self, param: Tensor, group: ParamGroup) -> dict[str, Any]:
        return {"mu_product": 1.0, **zero_buffers(param, "exp_avg", "exp_avg_sq")}

    def _update_parameter(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        (beta1, beta2), lr, step, p = group["betas"], group["lr"], state["step"], param.array
        grad = decayed_gradient(p, grad, group)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        scalar = dtypes.get_default_dtype().type
        mu_product = state["mu_product"] = float(scalar(state["mu_product"]) * scalar(mu))
        exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
        moving_average(exp_avg, grad, 1 - beta1)
        moving_average_of_squares(exp_avg_sq, grad, beta2)
        denom = param._backend.sqrt(exp_avg_sq / (1 - beta2**step))
        denom += group["eps"]
        p += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (grad / denom)
        p += (-lr * mu_next / (1.0 - mu_product * mu_next)) * (exp_avg / denom)
