"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor import Tensor
from .optimizer import Optimizer, ParamGroup, check_non_negative


class SGD(Optimizer):
    """SGD with PyTorch's exact update rule. With gradient ``g`` of parameter ``p``::

        g = g + weight_decay * p                  (L2 penalty, if weight_decay != 0)
        b = g on the first step, then b = momentum * b + (1 - dampening) * g
        g = g + momentum * b if nesterov else b   (if momentum != 0)
        p = p - lr * g

    ``maximize=True`` negates the gradient first (gradient ascent).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False) -> None:
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_non_negative(group, "lr", "momentum", "weight_decay")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                f"nesterov momentum requires momentum > 0 and dampening == 0, got momentum={group['momentum']!r} "
                f"and dampening={group['dampening']!r}"
            )

    def _update(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param.data
        momentum = group["momentum"]
        if momentum:
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = Tensor(param._backend.copy(grad), device=param.device)
            else:
                buffer.data *= momentum
                buffer.data += (1 - group["dampening"]) * grad
            grad = grad + momentum * buffer.data if group["nesterov"] else buffer.data
        param.data -= group["lr"] * grad
