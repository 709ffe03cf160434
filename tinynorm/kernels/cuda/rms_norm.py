"""RMSNorm on the GPU, with the signatures of :mod:`tinynorm.kernels.cpu.rms_norm`.

RMSNorm is LayerNorm without the mean: the same kernels (:mod:`._row_norm`) run with ``mean=None``
and ``bias=None``, which Numba compiles into separate, smaller kernels.
"""
from __future__ import annotations

from ..._checks import check_eps
from . import _row_norm
from ._shared import (
    PARAM_DTYPE,
    check_input,
    check_like,
    check_param,
    check_stat,
    empty,
    output,
)


def rms_norm_forward(x, weight, eps: float, out=None) -> tuple:
    """Normalize each row of ``x`` (rows, cols) by its root mean square: ``y = x * rstd * weight``.

    ``rstd = 1 / sqrt(mean(x²) + eps)`` per row (float32) is returned for the backward pass.
    ``weight`` is float32 ``(cols,)`` or None. Returns ``(y, rstd)``; ``y`` is written into ``out``.
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    weight = check_param("weight", weight, (cols,))
    eps = check_eps(eps, PARAM_DTYPE)
    y = output(out, x.shape, x.dtype)
    rstd = empty(rows, PARAM_DTYPE)
    _row_norm.forward(x, weight, None, eps, y, None, rstd)
    return y, rstd


def rms_norm_backward(dy, x, rstd, weight) -> tuple:
    """Gradients of :func:`rms_norm_forward` given the upstream gradient ``dy``.

    With ``xhat = x * rstd`` and ``g = dy * weight``: ``dx = rstd * (g - xhat * mean(g * xhat))``
    (mean over each row) and ``dweight = sum_rows(dy * xhat)``. Returns ``(dx, dweight)``.
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    dy = check_like("dy", dy, x.shape, x.dtype)
    rstd = check_stat("rstd", rstd, (rows,))
    weight = check_param("weight", weight, (cols,))
    dx = empty(x.shape, x.dtype)
    (dweight,) = _row_norm.backward(dy, x, None, rstd, weight, dx).rows()
    return dx, dweight
