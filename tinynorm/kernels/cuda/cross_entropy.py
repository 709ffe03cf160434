"""Softmax cross-entropy over the rows of a 2-D device array of logits, one kernel each way, on the GPU.

The math, the arguments and the results of :mod:`tinynorm.kernels.cpu.cross_entropy` (its docstring
derives the formulas): the forward writes each row's loss and log-sum-exp, the backward the gradient
w.r.t. the logits from them. As array arithmetic (a log_softmax, a gather, masks, a one-hot) the two
directions took 28 launches, the target check included; here they take one each (and one for the check).

Forward: one block per row (a grid-stride loop over rows), the block's threads walk the classes and
combine their maximum and sums with the fixed-order tree of :mod:`softmax`'s block reductions
(bit-identical from run to run); thread 0 writes the row's two numbers. Backward: one thread per logit. Arithmetic is
in the logits' dtype: the smoothing constants and the gradient scale are passed as scalars of that
dtype, so float32 logits never touch float64. A target outside ``[0, C)`` that is not ``ignore_index``
(``ops.losses`` rejects those first) is treated as ignored here, never read out of bounds.
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, from_dtype

from ..cpu.cross_entropy import check_arguments, check_row_values
from ._shared import check_array, check_contiguous, empty, grid_size
from ...backends.cuda.runtime.launch import jit, launch
from .softmax import MAX_THREADS, block_reduce, row_max, threads_for
from .strided import THREADS, blocks_for


@cache
def forward_kernel(dtype: np.dtype):
    """``kernel(logits, target, ignore_index, keep, smooth, losses, lse)`` for ``dtype`` logits, with
    ``keep = 1 - s`` and ``smooth = s / C`` scalars of ``dtype``."""
    numba_type = from_dtype(dtype)
    zero, one = dtype.type(0), dtype.type(1)

    @jit
    def kernel(logits, target, ignore_index, keep, smooth, losses, lse):
        buffer = cuda.shared.array(MAX_THREADS, numba_type)
        rows, classes = logits.shape
        for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            largest = row_max(buffer, logits, row, one, classes)
            total = zero
            shifted_sum = zero  # sum(z), for the smoothing term
            for j in range(cuda.threadIdx.x, classes, cuda.blockDim.x):
                z = logits[row, j] - largest
                total += math.exp(z)
                shifted_sum += z
            total = block_reduce(buffer, total, False)
            if smooth != zero:  # the same for the whole block: every thread calls the reduction or none does
                shifted_sum = block_reduce(buffer, shifted_sum, False)
            if cuda.threadIdx.x == 0:
                log_total = math.log(total)
                lse[row] = largest + log_total
                y = target[row]
                loss = zero
                if y != ignore_index and 0 <= y < classes:
                    loss = log_total - keep * (logits[row, y] - largest)
                    if smooth != zero:  # skipped at s = 0: 0 * sum(z) would be NaN for a row with a -inf logit
                        loss -= smooth * shifted_sum
                losses[row] = loss

    return kernel


@cache
def backward_kernel(dtype: np.dtype):
    """``kernel(grad, logits, lse, target, ignore_index, keep, smooth, grad_scale, dlogits)`` for ``dtype``
    logits: ``dlogits[r, c] = (exp(logits[r, c] - lse[r]) - keep * (c == y_r) - smooth) * grad[r] *
    grad_scale``, 0 for ignored rows; ``grad`` has one value per row, or one for all (size 1)."""
    zero = dtype.type(0)

    @jit
    def kernel(grad, logits, lse, target, ignore_index, keep, smooth, grad_scale, dlogits):
        rows, classes = logits.shape
        per_row = grad.size != 1
        for i in range(cuda.grid(1), rows * classes, cuda.gridsize(1)):
            row = i // classes
            c = i - row * classes
            y = target[row]
            value = zero
            if y != ignore_index and 0 <= y < classes:
                value = math.exp(logits[row, c] - lse[row]) - smooth
                if c == y:
                    value -= keep
                value *= grad[row if per_row else 0] * grad_scale
            dlogits[row, c] = value

    return kernel


def _inputs(logits, target, label_smoothing: float):
    """logits and target on the device after the shared checks (logits C-contiguous)."""
    logits, target = check_array("logits", logits), check_array("target", target)
    check_arguments(logits, target, label_smoothing)
    check_contiguous("logits", logits)
    return logits, target


def _smoothing_constants(dtype: np.dtype, classes: int, label_smoothing: float) -> tuple:
    """``1 - s`` and ``s / C`` as scalars of the logits' dtype."""
    return dtype.type(1 - label_smoothing), dtype.type(label_smoothing / classes)


def cross_entropy_forward(logits, target, ignore_index: int = -100, label_smoothing: float = 0.0) -> tuple:
    """Each row's loss (rows,) and log-sum-exp (rows,) as new device arrays of logits' dtype; ignored
    rows have loss 0. See :func:`tinynorm.kernels.cpu.cross_entropy.cross_entropy_forward`."""
    logits, target = _inputs(logits, target, label_smoothing)
    dtype = np.dtype(logits.dtype)
    rows, classes = logits.shape
    losses, lse = empty(rows, dtype), empty(rows, dtype)
    if rows:
        keep, smooth = _smoothing_constants(dtype, classes, label_smoothing)
        launch(forward_kernel(dtype), grid_size(rows, 1), threads_for(classes),
               (logits, target, np.int64(ignore_index), keep, smooth, losses, lse))
    return losses, lse


def cross_entropy_backward(grad, logits, lse, target, ignore_index: int = -100, label_smoothing: float = 0.0,
                           grad_scale: float = 1.0):
    """The gradient w.r.t. logits (a new device array), given the upstream gradient of each row's loss
    (``grad``: (rows,), or one value for every row) times ``grad_scale``. See
    :func:`tinynorm.kernels.cpu.cross_entropy.cross_entropy_backward`."""
    logits, target = _inputs(logits, target, label_smoothing)
    lse, grad = check_array("lse", lse), check_array("grad", grad)
    check_row_values("lse", lse, logits)
    check_row_values("grad", grad, logits, single=True)
    if grad.ndim != 1:
        grad = grad.reshape(grad.size)  # one value, as an array of one
    dtype = np.dtype(logits.dtype)
    dlogits = empty(logits.shape, dtype)
    if logits.size:
        keep, smooth = _smoothing_constants(dtype, logits.shape[1], label_smoothing)
        launch(backward_kernel(dtype), blocks_for(logits.size), THREADS,
               (grad, logits, lse, target, np.int64(ignore_index), keep, smooth,
                dtype.type(grad_scale), dlogits))
    return dlogits
