"""Fused optimizer updates on the GPU: an SGD or Adam step for many parameters in few kernel launches.

Written with array operations, an Adam step is about ten elementwise kernels per parameter, each
reading and writing whole arrays; here each thread reads an element's parameter, gradient and state
once, applies the whole rule in registers and writes the results back. One launch updates up to
``TENSORS_PER_LAUNCH`` parameters (PyTorch's "foreach" optimizers do the same): the kernel takes
tuples of arrays and the whole grid walks one tensor after the other. Every 1-D array takes 56 bytes
of the launch's parameters, which stay under the 4 KiB every CUDA version accepts (12.1 raised the
limit to 32 KiB on newer GPUs): 12 tensors with up to 5 arrays each (Adam with amsgrad). Numba
compiles one variant per tuple length, so a model's steps use two (12 and the remainder). The rules
and the order of their operations are those of the CPU's numpy forms
(:func:`tinynorm.kernels.cpu.optim.sgd_step_numpy`, :func:`tinynorm.kernels.cpu.optim.adam_step_numpy`),
which are PyTorch's; their docstrings give the formulas.

Arithmetic is in the parameter's dtype (float16, float32 or float64): every scalar is computed on the
host in Python floats, as the CPU code does, and passed to the kernel as a value of that dtype (a
Python float would make a float32 kernel compute in float64). What a step does not use (no momentum
buffer, no amsgrad maximum, no weight decay) is passed as ``None``: Numba compiles a variant without
it, deciding ``is None`` at compile time. Booleans (``maximize``, ``nesterov``, the first step) are
ordinary arguments. Arrays are flat, C-contiguous device arrays of their parameter's size, all of one
dtype per call.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from ...backends.cuda.runtime.compiler import cuda

from ...backends.cuda.runtime.launch import jit, launch
from .strided import THREADS, blocks_for

UPDATE_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
TENSORS_PER_LAUNCH = 12  # 12 * 5 arrays * 56 bytes = 3360 of the 4096 bytes of kernel parameters


@jit
def _sgd_kernel(params, grads, momentum_buffers, lr, weight_decay, momentum, one_minus_dampening,
                nesterov, maximize, first_step):
    """SGD on each element of each tensor: decay, momentum (the buffer starts as the gradient), then the step."""
    for k in range(len(params)):
        param, grad = params[k], grads[k]
        for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
            g = -grad[i] if maximize else grad[i]
            p = param[i]
            if weight_decay is not None:
                g = g + weight_decay * p
            if momentum_buffers is not None:
                buffer = momentum_buffers[k]
                velocity = g if first_step else buffer[i] * momentum + one_minus_dampening * g
                buffer[i] = velocity
                g = g + momentum * velocity if nesterov else velocity
            param[i] = p - lr * g


@jit
def _adam_kernel(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, beta1, beta2, one_minus_beta1,
                 one_minus_beta2, step_size, bias_correction2_sqrt, eps, weight_decay, decay_factor, maximize):
    """Adam on each element of each tensor: decay, both moments (and their running maximum), then the
    scaled step."""
    for k in range(len(params)):
        param, grad, exp_avg, exp_avg_sq = params[k], grads[k], exp_avgs[k], exp_avg_sqs[k]
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
            if max_exp_avg_sqs is not None:
                max_exp_avg_sq = max_exp_avg_sqs[k]
                v_max = max_exp_avg_sq[i]
                if v_max > v or v_max != v_max:  # noqa: PLR0124  (numpy's maximum: a NaN on either side wins)
                    v = v_max
                max_exp_avg_sq[i] = v
            denom = math.sqrt(v) / bias_correction2_sqrt + eps
            param[i] = p - step_size * (m / denom)


def _check_state(params: Sequence, named_lists: dict) -> None:
    """Raise unless ``params`` is a non-empty sequence of 1-D float device arrays of one dtype and each
    named list (skipped when None) has one array of its parameter's shape and dtype per parameter."""
    if not params:
        raise ValueError("params must be a non-empty sequence of flat device arrays")
    dtype = np.dtype(params[0].dtype)
    if dtype not in UPDATE_DTYPES:
        raise TypeError(f"params must have dtype float16, float32 or float64, got {dtype}")
    for name, arrays in named_lists.items():
        if arrays is not None and len(arrays) != len(params):
            raise ValueError(f"{name} must have one array per parameter ({len(params)}), got {len(arrays)}")
    for index, param in enumerate(params):
        if param.ndim != 1 or np.dtype(param.dtype) != dtype:
            raise ValueError(f"params[{index}] must be a flat (1-D) device array of dtype {dtype} (one dtype per "
                             f"call), got shape {param.shape} and dtype {param.dtype}")
        for name, arrays in named_lists.items():
            if arrays is None:
                continue
            array = arrays[index]
            if array.shape != param.shape:
                raise ValueError(f"{name}[{index}] must have its parameter's shape {param.shape}, got {array.shape}")
            if np.dtype(array.dtype) != dtype:
                raise TypeError(f"{name}[{index}] must have its parameter's dtype {dtype}, got {array.dtype}")


def _launch_in_chunks(kernel, lists: list, scalars: tuple) -> None:
    """Launch ``kernel`` once per ``TENSORS_PER_LAUNCH`` parameters: ``lists`` (params first; None for a
    state the step does not use) are passed as tuples of that many arrays, then ``scalars``."""
    params = lists[0]
    for start in range(0, len(params), TENSORS_PER_LAUNCH):
        chunk = slice(start, start + TENSORS_PER_LAUNCH)
        largest = max(param.size for param in params[chunk])
        if largest:
            tuples = tuple(None if arrays is None else tuple(arrays[chunk]) for arrays in lists)
            launch(kernel, blocks_for(largest), THREADS, (*tuples, *scalars))


def sgd_update(params: Sequence, grads: Sequence, momentum_buffers: Sequence | None, *, lr: float, momentum: float,
               dampening: float, weight_decay: float, nesterov: bool, maximize: bool, first_step: bool) -> None:
    """One SGD step on each flat device array of ``params`` (and of ``momentum_buffers``, None without
    momentum), in place, from ``grads``; ``first_step`` sets the buffers to the gradients (PyTorch)."""
    _check_state(params, {"grads": grads, "momentum_buffers": momentum_buffers})
    scalar = np.dtype(params[0].dtype).type
    _launch_in_chunks(_sgd_kernel, [params, grads, momentum_buffers], (
        scalar(lr), scalar(weight_decay) if weight_decay else None, scalar(momentum), scalar(1 - dampening),
        bool(nesterov), bool(maximize), bool(first_step)))


def adam_update(params: Sequence, grads: Sequence, exp_avgs: Sequence, exp_avg_sqs: Sequence,
                max_exp_avg_sqs: Sequence | None, *, step: int, lr: float, beta1: float, beta2: float, eps: float,
                weight_decay: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """Adam step number ``step`` (from 1) on each flat device array of ``params``, ``exp_avgs``,
    ``exp_avg_sqs`` and ``max_exp_avg_sqs`` (None without amsgrad), in place, from ``grads``."""
    _check_state(params, {"grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs,
                          "max_exp_avg_sqs": max_exp_avg_sqs})
    if not isinstance(step, (int, np.integer)) or step < 1:
        raise ValueError(f"step must be an int >= 1 (the number of this step), got {step!r}")
    scalar = np.dtype(params[0].dtype).type
    decoupled = bool(weight_decay) and decoupled_weight_decay
    _launch_in_chunks(_adam_kernel, [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs], (
        scalar(beta1), scalar(beta2), scalar(1 - beta1), scalar(1 - beta2), scalar(lr / (1 - beta1**step)),
        scalar(math.sqrt(1 - beta2**step)), scalar(eps),
        scalar(weight_decay) if weight_decay and not decoupled else None,
        scalar(1 - lr * weight_decay) if decoupled else None, bool(maximize)))
