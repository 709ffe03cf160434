"""The base of optimizers whose rule is plain array math on one parameter at a time.

RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam are written this way: each rule is a few lines
of in-place arithmetic on the backend's arrays (numpy arrays on the CPU, ``CudaArray`` on CUDA, which
have the same operators), in the order of PyTorch's single-tensor implementation, so their
trajectories match PyTorch's to rounding. (SGD and Adam, the optimizers most training runs use, have
fused multi-tensor kernels instead; see :mod:`tinynorm.optim.sgd`.)
"""
from __future__ import annotations

from typing import Any

from ..creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer
from .options import ParamGroup


class PerParameterOptimizer(Optimizer):
    """Subclasses define ``_new_state`` (a parameter's state before its first step, without ``'step'``)
    and ``_update_parameter`` (one step of one parameter's array, in place)."""

    def _update(self, params: list[Tensor], grads: list[Any], states: list[dict[str, Any]],
                group: ParamGroup) -> None:
        for param, grad, state in zip(params, grads, states):
            if not state:
                state["step"] = 0
                state.update(self._new_state(param, group))
            state["step"] += 1
            self._update_parameter(param, grad, state, group)

    def _new_state(self, param: Tensor, group: ParamGroup) -> dict[str, Tensor]:
        raise NotImplementedError

    def _update_parameter(self, param: Tensor, grad: Any, state: dict[str, Any], group: ParamGroup) -> None:
        """Update ``param.array`` in place, and the tensors of ``state``, from the array ``grad``
        (never modified); ``state['step']`` already counts this step."""
        raise NotImplementedError


def zero_buffers(param: Tensor, *names: str) -> dict[str, Tensor]:
    """A zero tensor like ``param`` for each name: the usual initial state."""
    return {name: zeros_like(param) for name in names}


def buffer(state: dict[str, Any], name: str, param: Tensor) -> Any:
    """The array of ``state[name]``, which starts as zeros like ``param`` the first time it is needed
    (a buffer that only some options use, such as RMSprop's momentum)."""
    if name not in state:
        state[name] = zeros_like(param)
    return state[name].array


def decayed_gradient(param: Any, grad: Any, group: ParamGroup) -> Any:
    """The gradient a rule uses: ``-grad`` under ``maximize``, plus the L2 penalty ``weight_decay *
    param``; or, with ``decoupled_weight_decay`` (AdamW's rule), the gradient as is and the parameter
    shrunk in place by ``1 - lr * weight_decay``. ``grad`` itself is never modified."""
    if group["maximize"]:
        grad = -grad
    decay = group["weight_decay"]
    if decay:
        if group.get("decoupled_weight_decay", False):
            param *= 1 - group["lr"] * decay
        else:
            grad = grad + decay * param
    return grad


def moving_average(average: Any, value: Any, weight: float) -> None:
    """``average += weight * (value - average)`` in place: PyTorch's ``lerp_``, the moving average of
    the first moments (``weight = 1 - beta``)."""
    average += weight * (value - average)


def moving_average_of_squares(average: Any, value: Any, decay: float) -> None:
    """``average = decay * average + (1 - decay) * value**2`` in place (second moments)."""
    average *= decay
    average += (1 - decay) * value * value
