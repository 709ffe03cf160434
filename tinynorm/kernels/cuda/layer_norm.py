"""LayerNorm on the GPU, with the signatures of :mod:`tinynorm.kernels.cpu.layer_norm`.

The kernels live in :mod:`._row_norm` (shared with RMSNorm). Arrays in and out are device arrays
(host numpy inputs are copied over); statistics and parameter gradients are float32.
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


def layer_norm_forward(x, weight, bias, eps: float, out=None) -> tuple:
    """Normalize each row of ``x`` (rows, cols): ``y = (x - mean) * rstd * weight + bias``.

    ``x`` is float16 or float32; ``weight``/``bias`` are float32 ``(cols,)`` or None (meaning 1 and 0).
    Returns ``(y, mean, rstd)``: ``y`` of ``x``'s dtype (written into ``out`` when given), ``mean``
    and ``rstd = 1 / sqrt(var + eps)`` (biased variance) float32 ``(rows,)``.
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    weight = check_param("weight", weight, (cols,))
    bias = check_param("bias", bias, (cols,))
    eps = check_eps(eps, PARAM_DTYPE)
    y = output(out, x.shape, x.dtype)
    mean, rstd = empty(rows, PARAM_DTYPE), empty(rows, PARAM_DTYPE)
    _row_norm.forward(x, weight, bias, eps, y, mean, rstd)
    return y, mean, rstd


def layer_norm_backward(dy, x, mean, rstd, weight) -> tuple:
    """Gradients of :func:`layer_norm_forward` given the upstream gradient ``dy``.

    With ``xhat = (x - mean) * rstd`` and ``g = dy * weight``:
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`` (means over each row),
    ``dweight = sum_rows(dy * xhat)``, ``dbias = sum_rows(dy)``. Returns ``(dx, dweight, dbias)``,
    ``dx`` of ``x``'s dtype, the others float32 and deterministic (partials added in a fixed order).
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    dy = check_like("dy", dy, x.shape, x.dtype)
    mean = check_stat("mean", mean, (rows,))
    rstd = check_stat("rstd", rstd, (rows,))
    weight = check_param("weight", weight, (cols,))
    dx = empty(x.shape, x.dtype)
    dweight, dbias = _row_norm.backward(dy, x, mean, rstd, weight, dx).rows()
    return dx, dweight, dbias
