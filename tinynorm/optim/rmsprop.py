"""RMSprop: steps divided by a running root mean square of the gradient."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor import Tensor
from .options import ParamGroup, check_options
from .per_parameter import (
    PerParameterOptimizer, buffer, decayed_gradient, moving_average, moving_average_of_squares, zero_buffers,
)
from .state import Layout, Slot


class RMSprop(PerParameterOptimizer):
    """RMSprop (Hinton's lecture notes; centered: Graves, 2013) with PyTorch's rule. With gradient ``g``::

        g = g + weight_decay * p                        (L2 penalty)
        v = alpha * v + (1 - alpha) * g * g             (square_avg)
        centered: a = alpha * a + (1 - alpha) * g,      (grad_avg)
                  denom = sqrt(v - a * a) + eps         (an estimate of the gradient's std)
        else:     denom = sqrt(v) + eps
        momentum > 0: b = momentum * b + g / denom, p = p - lr * b
        else:         p = p - lr * g / denom

    eps is added after the square root (TensorFlow adds it inside). ``maximize`` negates ``g`` first.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_options(type(self).__name__, group, ("lr", "eps", "momentum", "weight_decay", "alpha"),
                      ("centered", "maximize"))

    def _state_layout(self, group: ParamGroup) -> Layout:
        # The optional buffers start at the first step that needs them.
        return {"step": Slot.STEP, "square_avg": Slot.TENSOR, "momentum_buffer": Slot.OPTIONAL_TENSOR,
                "grad_avg": Slot.OPTIONAL_TENSOR}

    def _new_state(self, param: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        return zero_buffers(param, "square_avg")

    def _update_parameter(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        alpha, momentum, p = group["alpha"], group["momentum"], param.array
        grad = decayed_gradient(p, grad, group)
        square_avg = state["square_avg"].array
        moving_average_of_squares(square_avg, grad, alpha)
        if group["centered"]:
            grad_avg = buffer(state, "grad_avg", param)
            moving_average(grad_avg, grad, 1 - alpha)
            denom = param._backend.sqrt(square_avg - grad_avg * grad_avg)
        else:
            denom = param._backend.sqrt(square_avg)
        denom += group["eps"]
        if momentum > 0:
            momentum_buffer = buffer(state, "momentum_buffer", param)
            momentum_buffer *= momentum
            momentum_buffer += grad / denom
            p -= group["lr"] * momentum_buffer
        else:
            p -= group["lr"] * (grad / denom)
