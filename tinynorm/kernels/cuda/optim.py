"""Fused optimizer updates on the GPU: one kernel launch per parameter for an SGD or Adam step.

Written with array operations, an Adam step is about ten elementwise kernels per parameter, each
reading and writing whole arrays; here each thread reads an element's parameter, gradient and state
once, applies the whole rule in registers and writes the results back. The rules and the order of
their operations are those of the CPU backend (:func:`tinynorm.backends.cpu.sgd_update`,
:func:`tinynorm.backends.cpu.adam_update`), which are PyTorch's; the CPU comments give the formulas.

Arithmetic is in the parameter's dtype (float16, float32 or float64): every scalar is computed on the
host in Python floats, as the CPU code does, and passed to the kernel as a value of that dtype (a
Python float would make a float32 kernel compute in float64). What a step does not use (no momentum
buffer, no amsgrad maximum, no weight decay) is passed as ``None``: Numba compiles a variant without
it, deciding ``is None`` at compile time. Booleans (``maximize``, ``nesterov``, the first step) are
ordinary arguments. Arrays are flat, C-contiguous device arrays of the parameter's size.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .launch import jit, launch
from .strided import THREADS, blocks_for

UPDATE_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@jit
def _sgd_kernel(param, grad, momentum_buffer, lr, weight_decay, momentum, one_minus_dampening,
                nesterov, maximize, first_step):
    """SGD on each element: decay, momentum (the buffer starts as the gradient), then the step."""
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        g = -grad[i] if maximize else grad[i]
        p = param[i]
        if weight_decay is not None:
            g = g + weight_decay * p
        if momentum_buffer is not None:
            velocity = g if first_step else momentum_buffer[i] * momentum + one_minus_dampening * g
            momentum_buffer[i] = velocity
            g = g + momentum * velocity if nesterov else velocity
        param[i] = p - lr * g


@jit
def _adam_kernel(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, beta1, beta2, one_minus_beta1,
                 one_minus_beta2, step_size, bias_correction2_sqrt, eps, weight_decay, decay_factor, maximize):
    """Adam on each element: decay, both moments (and their running maximum), then the scaled step."""
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        g = -grad[i] if maximize else grad[i]
        p = param[i]
        if decay_factor is not None:  # AdamW
            p = p * decay_factor
        if weight_decay is not None:  # Adam's L2 penalty
            g = g + weight_decay * p
        m = exp_avg[i] * beta1 + one_minus_beta1 * g
        v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if max_exp_avg_sq is not None:
            v_max = max_exp_avg_sq[i]
            if v_max > v or v_max != v_max:  # noqa: PLR0124  (numpy's maximum: a NaN on either side wins)
                v = v_max
            max_exp_avg_sq[i] = v
        denom = math.sqrt(v) / bias_correction2_sqrt + eps
        param[i] = p - step_size * (m / denom)


def _check_state(param, named_arrays: dict) -> None:
    """Raise unless ``param`` is a 1-D float device array and each array has its shape and dtype
    (``None`` entries are skipped)."""
    dtype = np.dtype(param.dtype)
    if dtype not in UPDATE_DTYPES:
        raise TypeError(f"param must have dtype float16, float32 or float64, got {dtype}")
    if param.ndim != 1:
        raise ValueError(f"param must be a flat (1-D) device array, got shape {param.shape}")
    for name, array in named_arrays.items():
        if array is None:
            continue
        if array.shape != param.shape:
            raise ValueError(f"{name} must have param's shape {param.shape}, got {array.shape}")
        if np.dtype(array.dtype) != dtype:
            raise TypeError(f"{name} must have param's dtype {dtype}, got {array.dtype}")


def sgd_update(param, grad, momentum_buffer, *, lr: float, momentum: float, dampening: float,
               weight_decay: float, nesterov: bool, maximize: bool, first_step: bool) -> None:
    """One SGD step on the flat device arrays ``param`` (and ``momentum_buffer``, None without
    momentum), in place, from ``grad``; ``first_step`` sets the buffer to the gradient (PyTorch)."""
    _check_state(param, {"grad": grad, "momentum_buffer": momentum_buffer})
    if param.size == 0:
        return
    scalar = np.dtype(param.dtype).type
    launch(_sgd_kernel, blocks_for(param.size), THREADS, (
        param, grad, momentum_buffer, scalar(lr), scalar(weight_decay) if weight_decay else None,
        scalar(momentum), scalar(1 - dampening), bool(nesterov), bool(maximize), bool(first_step)))


def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, step: int, lr: float, beta1: float,
                beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
                maximize: bool) -> None:
    """Adam step number ``step`` (from 1) on the flat device arrays ``param``, ``exp_avg``,
    ``exp_avg_sq`` and ``max_exp_avg_sq`` (None without amsgrad), in place, from ``grad``."""
    _check_state(param, {"grad": grad, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq,
                         "max_exp_avg_sq": max_exp_avg_sq})
    if not isinstance(step, (int, np.integer)) or step < 1:
        raise ValueError(f"step must be an int >= 1 (the number of this step), got {step!r}")
    if param.size == 0:
        return
    scalar = np.dtype(param.dtype).type
    decoupled = bool(weight_decay) and decoupled_weight_decay
    launch(_adam_kernel, blocks_for(param.size), THREADS, (
        param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalar(beta1), scalar(beta2), scalar(1 - beta1),
        scalar(1 - beta2), scalar(lr / (1 - beta1**step)), scalar(math.sqrt(1 - beta2**step)), scalar(eps),
        scalar(weight_decay) if weight_decay and not decoupled else None,
        scalar(1 - lr * weight_decay) if decoupled else None, bool(maximize)))
