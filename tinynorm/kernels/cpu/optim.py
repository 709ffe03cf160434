"""SGD and Adam steps on the CPU: the numpy forms of the rules, and compiled loops that give the same values.

The numpy forms (:func:`sgd_step_numpy`, :func:`adam_step_numpy`) are the rules as PyTorch writes them,
one array operation at a time: an Adam step makes about ten passes over a parameter and its state,
most of them through temporaries. The compiled loops read each element's parameter, gradient and state
once and write the results back, doing the numpy forms' operations in their order, so the values are
the same, bit for bit; a Transformer's Adam step takes under half the time (docs/benchmarks.md). That
takes three things:

- no ``fastmath``: it would fuse the multiplies and adds into FMAs, which round once instead of twice;
- every scalar in the parameter's dtype, as numpy casts a Python number meeting a float32 array
  (NEP 50); numpy scalars as options (an ``np.float64`` learning rate makes numpy compute in float64)
  take the numpy form instead;
- arrays that share no memory: numpy's passes and the loop would read an overlapping gradient or state
  at different times.

float32 and float64 parameters whose arrays are all C-ordered, writeable ``np.ndarray`` objects take the
loops; others (float16, strided arrays, subclasses) take the numpy forms. Each element's update is
independent of the others', so a large parameter is shared out between threads and the values do not
depend on the thread count.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from ._config import NUMPY_ROUNDING
from ._shared import FLOAT_DTYPES, chunk_bounds, num_chunks, use_parallel

# The loops compile with NUMPY_ROUNDING: no fastmath (see the module docstring); IEEE division, so eps=0
# on a zero moment gives inf or NaN as numpy does, instead of Numba's ZeroDivisionError.


# --------------------------------------------------------------------------------------- SGD
def sgd_step_numpy(param: np.ndarray, grad: np.ndarray, momentum_buffer: np.ndarray | None, *, lr: float,
                   momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
                   first_step: bool) -> None:
    """One SGD step of ``param`` (and ``momentum_buffer``, None without momentum), in place::

        g = -g if maximize
        g = g + weight_decay * p                  (if weight_decay != 0)
        b = g on the first step, then b = momentum * b + (1 - dampening) * g
        g = g + momentum * b if nesterov else b   (with a momentum buffer)
        p = p - lr * g
    """
    if maximize:
        grad = -grad
    if weight_decay:
        grad = grad + weight_decay * param
    if momentum_buffer is not None:
        if first_step:
            momentum_buffer[...] = grad
        else:
            momentum_buffer *= momentum
            momentum_buffer += (1 - dampening) * grad
        grad = grad + momentum * momentum_buffer if nesterov else momentum_buffer
    param -= lr * grad


@njit(**NUMPY_ROUNDING)
def _sgd_range(param, grad, buffer, scalars, decay, has_buffer, nesterov, maximize, first_step, start, stop):
    lr, weight_decay, momentum, one_minus_dampening = scalars[0], scalars[1], scalars[2], scalars[3]
    param, grad, buffer = param[start:stop], grad[start:stop], buffer[start:stop] if has_buffer else buffer
    for i in range(param.size):
        g = -grad[i] if maximize else grad[i]
        p = param[i]
        if decay:
            g = g + weight_decay * p
        if has_buffer:
            velocity = g if first_step else buffer[i] * momentum + one_minus_dampening * g
            buffer[i] = velocity
            g = g + momentum * velocity if nesterov else velocity
        param[i] = p - lr * g


@njit(**NUMPY_ROUNDING, parallel=True)
def _sgd_parallel(param, grad, buffer, scalars, decay, has_buffer, nesterov, maximize, first_step, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, param.size)
        _sgd_range(param, grad, buffer, scalars, decay, has_buffer, nesterov, maximize, first_step, start, stop)


@njit(**NUMPY_ROUNDING)
def _sgd(param, grad, buffer, scalars, decay, has_buffer, nesterov, maximize, first_step, chunks):
    """The step on ``chunks`` threads; False, changing nothing, when two of its arrays share memory."""
    if _share_memory(grad, (param, buffer)):
        return False
    if chunks == 1:
        _sgd_range(param, grad, buffer, scalars, decay, has_buffer, nesterov, maximize, first_step, 0, param.size)
    else:
        _sgd_parallel(param, grad, buffer, scalars, decay, has_buffer, nesterov, maximize, first_step, chunks)
    return True


def sgd_update(params: Sequence[np.ndarray], grads: Sequence[np.ndarray],
               momentum_buffers: Sequence[np.ndarray] | None, *, lr: float, momentum: float, dampening: float,
               weight_decay: float, nesterov: bool, maximize: bool, first_step: bool) -> None:
    """:func:`sgd_step_numpy` for each parameter, in one compiled pass where the arrays allow (module
    docstring); ``momentum_buffers`` is None without momentum."""
    buffers = [None] * len(params) if momentum_buffers is None else momentum_buffers
    loops = _options_allow_loop(lr, momentum, dampening, weight_decay)
    # One small array of scalars per dtype: Numba's dispatcher takes it in half the time of numpy scalars.
    scalars = functools.cache(lambda dtype: np.array([lr, weight_decay, momentum, 1 - dampening], dtype))
    decay, flags = bool(weight_decay), (bool(nesterov), bool(maximize), bool(first_step))
    for param, grad, buffer in zip(params, grads, buffers, strict=True):
        if not (loops and _arrays_allow_loop(param, grad, buffer) and _sgd(
                param.reshape(-1), grad.reshape(-1), _EMPTY[param.dtype] if buffer is None else buffer.reshape(-1),
                scalars(param.dtype), decay, buffer is not None, *flags, _chunks(param.size))):
            sgd_step_numpy(param, grad, buffer, lr=lr, momentum=momentum, dampening=dampening,
                           weight_decay=weight_decay, nesterov=nesterov, maximize=maximize, first_step=first_step)


# -------------------------------------------------------------------------------------- Adam
def adam_step_numpy(param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray,
                    max_exp_avg_sq: np.ndarray | None, *, step: int, lr: float, beta1: float, beta2: float,
                    eps: float, weight_decay: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """Adam step number ``step`` (from 1) of ``param`` and its moments, in place::

        g = -g if maximize
        p = p * (1 - lr * weight_decay)           (AdamW: decoupled_weight_decay), or
        g = g + weight_decay * p                  (Adam's L2 penalty)
        m = beta1 * m + (1 - beta1) * g           (exp_avg)
        v = beta2 * v + (1 - beta2) * g * g       (exp_avg_sq; max_exp_avg_sq keeps its running max)
        p = p - lr / (1 - beta1**step) * m / (sqrt(v) / sqrt(1 - beta2**step) + eps)

    ``max_exp_avg_sq`` is None without amsgrad; with it, the last line uses the running max of ``v``.
    """
    if maximize:
        grad = -grad
    if weight_decay:
        if decoupled_weight_decay:
            param *= 1 - lr * weight_decay
        else:
            grad = grad + weight_decay * param
    exp_avg *= beta1
    exp_avg += (1 - beta1) * grad
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    second_moment = exp_avg_sq if max_exp_avg_sq is None else np.maximum(max_exp_avg_sq, exp_avg_sq,
                                                                         out=max_exp_avg_sq)
    denom = np.sqrt(second_moment)
    denom /= math.sqrt(1 - beta2**step)
    denom += eps
    param -= lr / (1 - beta1**step) * (exp_avg / denom)


@njit(**NUMPY_ROUNDING)
def _adam_range(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalars, l2, decoupled, amsgrad, maximize, start,
                stop):
    beta1, beta2, one_minus_beta1, one_minus_beta2 = scalars[0], scalars[1], scalars[2], scalars[3]
    step_size, bias_correction2_sqrt, eps = scalars[4], scalars[5], scalars[6]
    weight_decay, decay_factor = scalars[7], scalars[8]
    param, grad = param[start:stop], grad[start:stop]
    exp_avg, exp_avg_sq = exp_avg[start:stop], exp_avg_sq[start:stop]
    max_exp_avg_sq = max_exp_avg_sq[start:stop] if amsgrad else max_exp_avg_sq
    for i in range(param.size):
        g = -grad[i] if maximize else grad[i]
        p = param[i]
        if decoupled:
            p = p * decay_factor
        if l2:
            g = g + weight_decay * p
        m = exp_avg[i] * beta1 + one_minus_beta1 * g
        v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            v_max = max_exp_avg_sq[i]
            if not (v_max > v or v_max != v_max):  # noqa: PLR0124  numpy's maximum(v_max, v): NaN wins, ties v
                v_max = v
            max_exp_avg_sq[i] = v_max
            v = v_max
        denom = np.sqrt(v) / bias_correction2_sqrt + eps
        param[i] = p - step_size * (m / denom)


@njit(**NUMPY_ROUNDING, parallel=True)
def _adam_parallel(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalars, l2, decoupled, amsgrad, maximize, chunks):
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, param.size)
        _adam_range(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalars, l2, decoupled, amsgrad, maximize,
                    start, stop)


@njit(**NUMPY_ROUNDING)
def _adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalars, l2, decoupled, amsgrad, maximize, chunks):
    """The step on ``chunks`` threads; False, changing nothing, when two of its arrays share memory."""
    if _share_memory(grad, (param, exp_avg, exp_avg_sq, max_exp_avg_sq)):
        return False
    if chunks == 1:
        _adam_range(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalars, l2, decoupled, amsgrad, maximize, 0,
                    param.size)
    else:
        _adam_parallel(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalars, l2, decoupled, amsgrad, maximize,
                       chunks)
    return True


def adam_update(params: Sequence[np.ndarray], grads: Sequence[np.ndarray], exp_avgs: Sequence[np.ndarray],
                exp_avg_sqs: Sequence[np.ndarray], max_exp_avg_sqs: Sequence[np.ndarray] | None, *, step: int,
                lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
                maximize: bool) -> None:
    """:func:`adam_step_numpy` for each parameter, in one compiled pass where the arrays allow (module
    docstring); ``max_exp_avg_sqs`` is None without amsgrad."""
    maxima = [None] * len(params) if max_exp_avg_sqs is None else max_exp_avg_sqs
    loops = _options_allow_loop(lr, beta1, beta2, eps, weight_decay)
    scalars = functools.cache(lambda dtype: np.array(
        [beta1, beta2, 1 - beta1, 1 - beta2, lr / (1 - beta1**step), math.sqrt(1 - beta2**step), eps, weight_decay,
         1 - lr * weight_decay], dtype))
    decays = bool(weight_decay)
    decay_flags = (decays and not decoupled_weight_decay, decays and bool(decoupled_weight_decay))
    maximize = bool(maximize)
    for param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq in zip(params, grads, exp_avgs, exp_avg_sqs, maxima,
                                                                 strict=True):
        if not (loops and _arrays_allow_loop(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq) and _adam(
                param.reshape(-1), grad.reshape(-1), exp_avg.reshape(-1), exp_avg_sq.reshape(-1),
                _EMPTY[param.dtype] if max_exp_avg_sq is None else max_exp_avg_sq.reshape(-1),
                scalars(param.dtype), *decay_flags, max_exp_avg_sq is not None, maximize, _chunks(param.size))):
            adam_step_numpy(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step=step, lr=lr, beta1=beta1,
                            beta2=beta2, eps=eps, weight_decay=weight_decay,
                            decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)


# ------------------------------------------------------------------------------------ dispatch
_EMPTY = {dtype: np.empty(0, dtype) for dtype in FLOAT_DTYPES}  # the array a step does not use


def _chunks(size: int) -> int:
    """How many threads share a parameter of ``size`` elements: one unless it is large."""
    return num_chunks(size) if use_parallel(size) else 1


@njit(**NUMPY_ROUNDING)
def _overlap(a, b):
    """Whether the memory of the C-ordered arrays ``a`` and ``b`` overlaps (an empty one overlaps nothing)."""
    if a.size == 0 or b.size == 0:
        return False
    a_start, b_start = a.ctypes.data, b.ctypes.data
    return a_start < b_start + b.nbytes and b_start < a_start + a.nbytes


@njit(**NUMPY_ROUNDING)
def _share_memory(grad, written):
    """Whether ``grad`` overlaps one of the ``written`` arrays, or two of those overlap each other."""
    for i in range(len(written)):
        if _overlap(grad, written[i]):
            return True
        for j in range(i):
            if _overlap(written[i], written[j]):
                return True
    return False


def _options_allow_loop(*options: object) -> bool:
    """Python numbers, which numpy casts to the parameter's dtype as the loops take them."""
    return all(type(option) in (int, float) for option in options)


def _arrays_allow_loop(param: np.ndarray, grad: np.ndarray, *state: np.ndarray | None) -> bool:
    """A float32/float64 parameter, its gradient and state (None for a state the step does not use)
    writeable C-ordered arrays of its dtype and shape, each of type ``np.ndarray`` itself (a subclass
    does its arithmetic its own way); the gradient need not be writeable. Whether two of them share
    memory the compiled step checks itself."""
    dtype, shape = param.dtype, param.shape
    if type(param) is not np.ndarray or dtype not in _EMPTY:
        return False
    for array in (grad, param, *state):
        if array is None:
            continue
        if type(array) is not np.ndarray or (array.dtype is not dtype and array.dtype != dtype) \
                or array.shape != shape or not array.flags.c_contiguous or not (array is grad or array.flags.writeable):
            return False
    return True
