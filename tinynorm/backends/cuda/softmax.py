"""softmax and log_softmax over the last axis of a :class:`CudaArray`, forward and backward.

The names and semantics of :mod:`tinynorm.kernels.cpu.softmax` (float32 or float64, any shape, the
result in the input's dtype and shape); the work is done by :mod:`tinynorm.kernels.cuda.softmax`, on
the array seen as ``(rows, last axis)`` (a copy first when it is not C-contiguous).
"""
from __future__ import annotations

import math

from ...kernels.cpu.softmax import causal_queries
from ...kernels.cuda import softmax as kernels
from .array import CudaArray, check_array

__all__ = ["log_softmax_backward", "log_softmax_forward", "softmax_backward", "softmax_forward"]


def _rows(name: str, a: object):
    """``a`` as a C-contiguous 2-D (rows, last axis) CudaArray, after checking its type."""
    check_array(name, a)
    if a.dtype not in kernels.FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float64, got {a.dtype}")
    width = a.shape[-1] if a.ndim else 1  # a 0-d array is one row of one element
    return a.contiguous().subarray(0, (math.prod(a.shape[:-1]), width))


def _empty_like_rows(a: CudaArray, rows) -> tuple[CudaArray, object]:
    """A new C-contiguous array of ``a``'s shape and dtype, and its storage seen as ``rows``' shape."""
    out = CudaArray.empty(a.shape, a.dtype)
    return out, out.subarray(0, rows.shape)


def _forward(x: CudaArray, kernel, *args) -> CudaArray:
    """``kernel(rows, out_rows, *args)`` on ``x`` seen as rows, into a new array of its shape."""
    rows = _rows("x", x)
    out, out_rows = _empty_like_rows(x, rows)
    kernel(rows, out_rows, *args)
    return out


def _backward(grad: CudaArray, out: CudaArray, log: bool, scale: float = 1.0, causal: bool = False) -> CudaArray:
    out_rows = _rows("out", out)
    if not isinstance(grad, CudaArray) or grad.shape != out.shape or grad.dtype != out.dtype:
        got = f"{grad.shape} {grad.dtype}" if isinstance(grad, CudaArray) else type(grad).__name__
        raise ValueError(f"grad must be a CudaArray of out's shape {out.shape} and dtype {out.dtype}, got {got}")
    dx, dx_rows = _empty_like_rows(out, out_rows)
    if log:
        kernels.log_softmax_backward(_rows("grad", grad), out_rows, dx_rows)
    else:
        kernels.softmax_backward(_rows("grad", grad), out_rows, dx_rows, scale, causal_queries(out.shape, causal))
    return dx


def softmax_forward(x: CudaArray, scale: float = 1.0, causal: bool = False) -> CudaArray:
    """softmax of ``scale * x`` over the last axis, in x's dtype and shape; with ``causal``, key j of query
    i (the last two axes) is kept only for ``j <= i``, the others are 0."""
    return _forward(x, kernels.softmax_forward, scale, causal_queries(x.shape, causal))


def log_softmax_forward(x: CudaArray) -> CudaArray:
    """log_softmax over the last axis: ``(x - max) - log(sum(exp(x - max)))``, in x's dtype and shape."""
    return _forward(x, kernels.log_softmax_forward)


def softmax_backward(grad: CudaArray, out: CudaArray, scale: float = 1.0, causal: bool = False) -> CudaArray:
    """Gradient of :func:`softmax_forward` (same ``scale`` and ``causal``) given its result ``out``:
    ``scale * out * (grad - sum(grad * out))``, 0 where masked."""
    return _backward(grad, out, False, scale, causal)


def log_softmax_backward(grad: CudaArray, out: CudaArray) -> CudaArray:
    """Gradient of :func:`log_softmax_forward` given its result ``out``: ``grad - exp(out) * sum(grad)``."""
    return _backward(grad, out, True)

