"""Adadelta: steps whose size is a running RMS of past steps over a running RMS of gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor import Tensor
from .options import ParamGroup, check_number, check_options
from .per_parameter import PerParameterOptimizer, decayed_gradient, moving_average_of_squares, zero_buffers
from .state import Layout, Slot


class Adadelta(PerParameterOptimizer):
    """Adadelta (Zeiler, 2012) with PyTorch's rule. With gradient ``g``::

        g = g + weight_decay * p                          (L2 penalty)
        v = rho * v + (1 - rho) * g * g                   (square_avg)
        delta = sqrt(u + eps) / sqrt(v + eps) * g         (u: acc_delta, the steps' squares so far)
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    The update has the units of the parameter, so ``lr=1.0`` (the default) is the paper's rule.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_options(type(self).__name__, group, ("lr", "eps", "weight_decay"), ("maximize",))
        check_number(type(self).__name__, group, "rho", high=1.0)

    def _state_layout(self, group: ParamGroup) -> Layout:
        return {"step": Slot.STEP, "square_avg": Slot.TENSOR, "acc_delta": Slot.TENSOR}

    def _new_state(self, param: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return zero_buffers(param, "square_avg", "acc_delta")

    def _update_parameter(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        rho, eps, p, sqrt = group["rho"], group["eps"], param.array, param._backend.sqrt
        grad = decayed_gradient(p, grad, group)
        square_avg, acc_delta = state["square_avg"].array, state["acc_delta"].array
        moving_average_of_squares(square_avg, grad, rho)
        delta = sqrt(acc_delta + eps)
        delta /= sqrt(square_avg + eps)
        delta *= grad
        moving_average_of_squares(acc_delta, delta, rho)
        p -= group["lr"] * delta
