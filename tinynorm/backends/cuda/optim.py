"""Fused optimizer steps for the CUDA backend: ``sgd_update`` and ``adam_update``.

Same signatures and semantics as in :mod:`tinynorm.backends.cpu` (in-place updates of the parameter
and its state arrays). Each call is one kernel launch (:mod:`tinynorm.kernels.cuda.optim`) that
writes straight into the parameter's and the state's storage, so these must be C-contiguous, as
parameters and optimizer state are; the gradient may be any view (it is read only) and of another
float dtype (it is then converted to the parameter's, as numpy's in-place ops do on the CPU).
"""
from __future__ import annotations

from typing import Any

from ...kernels.cuda import optim as kernels
from ...kernels.cuda.strided import copy_strided
from .array import CudaArray

__all__ = ["adam_update", "sgd_update"]


def _flat(array: CudaArray) -> Any:
    """``array`` as a flat Numba device array: its own memory when it is C-contiguous, else a copy."""
    return array.as_numba((array.size,))


def _updated(name: str, array: CudaArray | None) -> Any:
    """``array``'s memory as a flat Numba device array the kernel may write into (None stays None)."""
    if array is None:
        return None
    if not isinstance(array, CudaArray):
        raise TypeError(f"{name} must be a CudaArray, got {type(array).__name__}")
    if not array.is_contiguous():
        raise ValueError(f"{name} must be C-contiguous to be updated in place, got shape {array.shape} "
                         f"with strides {array.strides}")
    return _flat(array)


def _gradient(grad: CudaArray, param: CudaArray) -> Any:
    """``grad`` as a flat contiguous Numba device array of ``param``'s dtype (a copy if it is not one)."""
    if not isinstance(grad, CudaArray):
        raise TypeError(f"grad must be a CudaArray, got {type(grad).__name__}")
    if grad.shape != param.shape:
        raise ValueError(f"grad must have the parameter's shape {param.shape}, got {grad.shape}")
    if grad.dtype == param.dtype:
        return _flat(grad)
    converted = CudaArray.empty(grad.shape, param.dtype)
    copy_strided(converted.storage, grad.storage, grad.offset, grad.strides, grad.shape)
    return _flat(converted)


def sgd_update(param: CudaArray, grad: CudaArray, momentum_buffer: CudaArray | None, *, lr: float,
               momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
               first_step: bool) -> None:
    """One SGD step, in place; see :func:`tinynorm.backends.cpu.sgd_update`."""
    kernels.sgd_update(_updated("param", param), _gradient(grad, param), _updated("momentum_buffer", momentum_buffer),
                       lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                       nesterov=nesterov, maximize=maximize, first_step=first_step)


def adam_update(param: CudaArray, grad: CudaArray, exp_avg: CudaArray, exp_avg_sq: CudaArray,
                max_exp_avg_sq: CudaArray | None, *, step: int, lr: float, beta1: float, beta2: float, eps: float,
                weight_decay: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """One Adam/AdamW step, in place; see :func:`tinynorm.backends.cpu.adam_update`."""
    kernels.adam_update(_updated("param", param), _gradient(grad, param), _updated("exp_avg", exp_avg),
                        _updated("exp_avg_sq", exp_avg_sq), _updated("max_exp_avg_sq", max_exp_avg_sq),
                        step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
