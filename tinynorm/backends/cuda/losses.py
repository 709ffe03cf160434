"""Softmax cross-entropy over the rows of a 2-D :class:`CudaArray` of logits, forward and backward.

The names and semantics of :mod:`tinynorm.kernels.cpu.cross_entropy`; the work is done by
:mod:`tinynorm.kernels.cuda.cross_entropy`, one kernel each way (a view that is not C-contiguous is
copied first).
"""
from __future__ import annotations

from ...kernels.cuda import cross_entropy as kernels
from .array import CudaArray, check_array, kernel_array

__all__ = ["cross_entropy_backward", "cross_entropy_forward"]


def cross_entropy_forward(logits: CudaArray, target: CudaArray, ignore_index: int = -100,
                          label_smoothing: float = 0.0) -> tuple[CudaArray, CudaArray]:
    """Each row's loss (rows,) and log-sum-exp (rows,), in logits' dtype; ignored rows have loss 0."""
    losses, lse = kernels.cross_entropy_forward(kernel_array("logits", logits), kernel_array("target", target),
                                                ignore_index, label_smoothing)
    return CudaArray.wrap(losses), CudaArray.wrap(lse)


def cross_entropy_backward(grad: CudaArray, logits: CudaArray, lse: CudaArray, target: CudaArray,
                           ignore_index: int = -100, label_smoothing: float = 0.0,
                           grad_scale: float = 1.0) -> CudaArray:
    """The gradient w.r.t. logits given the upstream gradient of each row's loss (``grad``: (rows,), or
    a single value for every row), times ``grad_scale``; zeros for ignored rows."""
    flat_grad = check_array("grad", grad).as_numba((grad.size,))  # a 0-d gradient becomes one value
    return CudaArray.wrap(kernels.cross_entropy_backward(
        flat_grad, kernel_array("logits", logits), kernel_array("lse", lse), kernel_array("target", target),
        ignore_index, label_smoothing, grad_scale))
