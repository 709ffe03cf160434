"""Adam and AdamW: steps scaled by running averages of the gradient and of its square."""
from __future__ import annotations

from typing import Any, Iterable

from ..creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, batches
from .options import ParamGroup, check_betas, check_options
from .state import Layout, Slot


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) with PyTorch's exact update rule. At step ``t``, with gradient ``g``::

        g = g + weight_decay * p                  (L2 penalty; AdamW decays p directly instead)
        m = beta1 * m + (1 - beta1) * g           (exp_avg)
        v = beta2 * v + (1 - beta2) * g * g       (exp_avg_sq; amsgrad uses the running max of v)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    The two ``1 - beta**t`` factors undo the bias of ``m`` and ``v`` towards their zero start.
    ``decoupled_weight_decay=True`` is AdamW's rule (see :class:`AdamW`). The rule itself is the
    backend's ``adam_update``: one compiled pass per parameter on the CPU (the numpy form for float16
    and strided arrays); on CUDA one fused kernel launch per 12 parameters that share a dtype and a
    step count. ``foreach`` and ``fused`` are accepted and change nothing.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        if isinstance(betas, list):
            betas = tuple(betas)  # as PyTorch's Adam stores them
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _check_options(self, group: ParamGroup) -> None:
        check_options(type(self).__name__, group, ("lr", "eps", "weight_decay"),
                      ("amsgrad", "maximize", "decoupled_weight_decay"))
        check_betas(type(self).__name__, group, floats_only=True)

    def _state_layout(self, group: ParamGroup) -> Layout:
        return {"step": Slot.STEP, "exp_avg": Slot.TENSOR, "exp_avg_sq": Slot.TENSOR,
                "max_exp_avg_sq": Slot.TENSOR if group["amsgrad"] else Slot.OPTIONAL_TENSOR}

    def _update(self, params: list[Tensor], grads: list[Any], states: list[dict[str, Any]],
                group: ParamGroup) -> None:
        for param, state in zip(params, states):
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(param)
                state["exp_avg_sq"] = zeros_like(param)
            if group["amsgrad"] and "max_exp_avg_sq" not in state:  # also when amsgrad is switched on later
                state["max_exp_avg_sq"] = zeros_like(param)
            state["step"] += 1
        beta1, beta2 = group["betas"]
        same_step = batches(params, grads, states, key=lambda p, state: (p.device, p.array.dtype, state["step"]))
        for batch, batch_grads, batch_states in same_step:
            batch[0]._backend.adam_update(
                [p.array for p in batch], batch_grads, [s["exp_avg"].array for s in batch_states],
                [s["exp_avg_sq"].array for s in batch_states],
                [s["max_exp_avg_sq"].array for s in batch_states] if group["amsgrad"] else None,
                step=batch_states[0]["step"], lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                weight_decay=group["weight_decay"], decoupled_weight_decay=group["decoupled_weight_decay"],
                maximize=group["maximize"])


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): instead of adding
    ``weight_decay * p`` to the gradient, where Adam's scaling would shrink it for parameters with
    large gradients, each step first shrinks the parameter itself: ``p = p * (1 - lr * weight_decay)``.
    As in PyTorch, a loaded state dict keeps ``decoupled_weight_decay=True``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def _restore_group(self, index: int, group: ParamGroup, saved: ParamGroup) -> ParamGroup:
        return super()._restore_group(index, group, {**saved, "decoupled_weight_decay": True})
