"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from typing import Any, Iterable

from ..creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, batches
from .options import ParamGroup, check_options, check_real
from .state import Layout, Slot


class SGD(Optimizer):
    """SGD with PyTorch's exact update rule. With gradient ``g`` of parameter ``p``::

        g = g + weight_decay * p                  (L2 penalty, if weight_decay != 0)
        b = g on the first step, then b = momentum * b + (1 - dampening) * g
        g = g + momentum * b if nesterov else b   (if momentum != 0)
        p = p - lr * g

    ``maximize=True`` negates the gradient first (gradient ascent). The rule itself is the backend's
    ``sgd_update``: one compiled pass per parameter on the CPU (the numpy form for float16 and strided
    arrays); on CUDA one fused kernel launch per 12 parameters of one dtype. ``foreach`` and ``fused``
    are accepted and change nothing (that is tinynorm's one implementation).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_options(type(self).__name__, group, ("lr", "momentum", "weight_decay"), ("nesterov", "maximize"))
        check_real(type(self).__name__, group, "dampening")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _state_layout(self, group: ParamGroup) -> Layout:
        # The buffer starts at the first step with momentum, and stays if momentum is later set to 0.
        return {"momentum_buffer": Slot.OPTIONAL_TENSOR}

    def _update(self, params: list[Tensor], grads: list[Any], states: list[dict[str, Any]],
                group: ParamGroup) -> None:
        uses_momentum = bool(group["momentum"])
        first_step = set()  # ids of the parameters whose momentum buffer starts now
        for param, state in zip(params, states):
            if uses_momentum and "momentum_buffer" not in state:
                state["momentum_buffer"] = zeros_like(param)
                first_step.add(id(param))
        same_step = batches(params, grads, states, key=lambda p, _: (p.device, p.array.dtype, id(p) in first_step))
        for batch, batch_grads, batch_states in same_step:
            batch[0]._backend.sgd_update(
                [p.array for p in batch], batch_grads,
                [s["momentum_buffer"].array for s in batch_states] if uses_momentum else None, lr=group["lr"],
                momentum=group["momentum"], dampening=group["dampening"], weight_decay=group["weight_decay"],
                nesterov=group["nesterov"], maximize=group["maximize"], first_step=id(batch[0]) in first_step)
