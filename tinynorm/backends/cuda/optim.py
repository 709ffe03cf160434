"""Fused optimizer steps for the CUDA backend: ``sgd_update`` and ``adam_update``.

Same signatures and semantics as in :mod:`tinynorm.backends.cpu` (in-place updates of lists of
parameters and their state arrays, all of one dtype). Each call is one kernel launch per 12 parameters
(:mod:`tinynorm.kernels.cuda.optim`) that writes straight into the parameters' and the state's
storage, so these must be C-contiguous, as parameters and optimizer state are; a gradient may be any
view (it is read only) and of another float dtype (it is then converted to its parameter's, as
numpy's in-place ops do on the CPU).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...kernels.cuda import optim as kernels
from ...kernels.cuda.strided import copy_strided
from .array import CudaArray, check_array

__all__ = ["adam_update", "sgd_update"]


def _flat(array: CudaArray) -> Any:
    """``array`` as a flat array: its own memory when it is C-contiguous, else a copy."""
    return array.contiguous().subarray(0, array.size)


def _updated(name: str, array: CudaArray) -> Any:
    """``array``'s memory as a flat array the kernel may write into."""
    if not check_array(name, array).is_contiguous():
        raise ValueError(f"{name} must be C-contiguous to be updated in place, got shape {array.shape} "
                         f"with strides {array.strides}")
    return _flat(array)


def _gradient(grad: CudaArray, param: CudaArray) -> Any:
    """``grad`` as a flat contiguous Numba device array of ``param``'s dtype (a copy if it is not one)."""
    if check_array("grad", grad).shape != param.shape:
        raise ValueError(f"grad must have the parameter's shape {param.shape}, got {grad.shape}")
    if grad.dtype == param.dtype:
        return _flat(grad)
    converted = CudaArray.empty(grad.shape, param.dtype)
    copy_strided(converted.storage, grad.storage, grad.offset, grad.strides, grad.shape)
    return _flat(converted)


def _gradients(grads: Sequence[CudaArray], params: Sequence[CudaArray]) -> list:
    if len(grads) != len(params):
        raise ValueError(f"grads must have one array per parameter ({len(params)}), got {len(grads)}")
    return [_gradient(grad, param) for grad, param in zip(grads, params)]


def _updated_list(name: str, arrays: Sequence[CudaArray] | None) -> list | None:
    """The flat Numba views of ``arrays`` (updated in place; None stays None)."""
    return None if arrays is None else [_updated(f"{name}[{k}]", a) for k, a in enumerate(arrays)]


def sgd_update(params: Sequence[CudaArray], grads: Sequence[CudaArray], momentum_buffers: Sequence[CudaArray] | None,
               *, lr: float, momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
               first_step: bool) -> None:
    """One SGD step for each parameter, in place (:func:`tinynorm.kernels.cpu.optim.sgd_step_numpy`)."""
    kernels.sgd_update(_updated_list("params", params), _gradients(grads, params),
                       _updated_list("momentum_buffers", momentum_buffers), lr=lr, momentum=momentum,
                       dampening=dampening, weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                       first_step=first_step)


def adam_update(params: Sequence[CudaArray], grads: Sequence[CudaArray], exp_avgs: Sequence[CudaArray],
                exp_avg_sqs: Sequence[CudaArray], max_exp_avg_sqs: Sequence[CudaArray] | None, *, step: int,
                lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
                maximize: bool) -> None:
    """One Adam/AdamW step for each parameter, in place (:func:`tinynorm.kernels.cpu.optim.adam_step_numpy`)."""
    kernels.adam_update(_updated_list("params", params), _gradients(grads, params),
                        _updated_list("exp_avgs", exp_avgs), _updated_list("exp_avg_sqs", exp_avg_sqs),
                        _updated_list("max_exp_avg_sqs", max_exp_avg_sqs), step=step, lr=lr, beta1=beta1,
                        beta2=beta2, eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
