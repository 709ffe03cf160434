"""Adagrad: steps divided by the root of each coordinate's sum of squared gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..creation import full_like
from ..tensor import Tensor
from .options import ParamGroup, check_options
from .per_parameter import PerParameterOptimizer, decayed_gradient
from .state import Layout, Slot


class Adagrad(PerParameterOptimizer):
    """Adagrad (Duchi et al., 2011) with PyTorch's rule. At step ``t``, with gradient ``g``::

        g = g + weight_decay * p                  (L2 penalty)
        s = s + g * g                             (sum, starting at initial_accumulator_value)
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)

    As in PyTorch, every parameter's state exists from construction on, and its ``sum`` starts at the
    constructor's ``initial_accumulator_value`` whatever a parameter group says.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for param in group["params"]:
                self.state[param].update(step=0, **self._new_state(param, group))

    def _check_options(self, group: ParamGroup) -> None:
        numbers = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")
        check_options(type(self).__name__, group, numbers, ("maximize",))

    def _state_layout(self, group: ParamGroup) -> Layout:
        return {"step": Slot.STEP, "sum": Slot.TENSOR}

    def _new_state(self, param: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return {"sum": full_like(param, self.defaults["initial_accumulator_value"])}

    def _update_parameter(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        p = param.array
        grad = decayed_gradient(p, grad, group)
        step_lr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state_sum = state["sum"].array
        state_sum += grad * grad
        std = param._backend.sqrt(state_sum)
        std += group["eps"]
        p -= step_lr * (grad / std)
