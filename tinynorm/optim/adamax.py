"""Adamax: Adam with the running maximum of |gradient| in place of the root mean square."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor import Tensor
from .options import ParamGroup, check_options
from .per_parameter import PerParameterOptimizer, decayed_gradient, moving_average, zero_buffers
from .state import Layout, Slot


class Adamax(PerParameterOptimizer):
    """Adamax (Kingma & Ba, 2015, section 7.1) with PyTorch's rule. At step ``t``, with gradient ``g``::

        g = g + weight_decay * p                  (L2 penalty)
        m = beta1 * m + (1 - beta1) * g           (exp_avg)
        u = max(beta2 * u, |g| + eps)             (exp_inf: a decaying infinity norm)
        p = p - lr / (1 - beta1**t) * m / u
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_options(type(self).__name__, group, ("lr", "eps", "weight_decay"), ("maximize",), betas=True)

    def _state_layout(self, group: ParamGroup) -> Layout:
        return {"step": Slot.STEP, "exp_avg": Slot.TENSOR, "exp_inf": Slot.TENSOR}

    def _new_state(self, param: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return zero_buffers(param, "exp_avg", "exp_inf")

    def _update_parameter(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        (beta1, beta2), p, xp = group["betas"], param.array, param._backend
        grad = decayed_gradient(p, grad, group)
        exp_avg, exp_inf = state["exp_avg"].array, state["exp_inf"].array
        moving_average(exp_avg, grad, 1 - beta1)
        exp_inf *= beta2
        magnitude = xp.abs(grad)
        magnitude += group["eps"]
        xp.maximum(exp_inf, magnitude, out=exp_inf)
        p -= group["lr"] / (1 - beta1 ** state["step"]) * (exp_avg / exp_inf)
