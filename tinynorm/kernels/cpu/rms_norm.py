"""RMSNorm on the CPU: each row of a 2-D array is divided by its root mean square.

Like LayerNorm without the mean: one statistics pass over the row instead of two, and no bias. The
same math in plain numpy: :func:`tinynorm.kernels.reference.rms_norm_forward` and ``rms_norm_backward``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..._checks import check_eps
from ._config import IEEE_JIT_OPTIONS, JIT_OPTIONS
from ._shared import (
    check_input,
    check_like,
    chunk_bounds,
    num_chunks,
    out_of_range,
    output,
    param_or_fill,
    partials,
    rescaled_mean_var,
    rescaled_rstd,
    use_parallel,
    variance_floor,
)


@njit(**IEEE_JIT_OPTIONS)
def _forward_rows(x, weight, eps, floor, y, rstd, start, stop):
    """Rows [start, stop): the whole serial kernel, or one thread's share of the parallel one.
    Returns how many rows had a mean square out of the dtype's range (:func:`_forward_rescaled` redoes them)."""
    n = x.dtype.type(x.shape[1])
    out_of_range_rows = 0
    for r in range(start, stop):
        row, out = x[r], y[r]
        sum_sq = x.dtype.type(0)
        for j in range(row.size):
            sum_sq += row[j] * row[j]
        out_of_range_rows += out_of_range(sum_sq / n, floor)
        s = x.dtype.type(1) / np.sqrt(sum_sq / n + eps)
        for j in range(row.size):
            out[j] = row[j] * s * weight[j]
        rstd[r] = s
    return out_of_range_rows


@njit(parallel=True, **JIT_OPTIONS)
def _forward_parallel(x, weight, eps, floor, y, rstd, chunks):
    out_of_range_rows = 0
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        out_of_range_rows += _forward_rows(x, weight, eps, floor, y, rstd, start, stop)
    return out_of_range_rows


@njit(**IEEE_JIT_OPTIONS)
def _forward_rescaled(x, weight, eps, floor, y, rstd):
    """Redo each row whose mean square is out of the dtype's range from float64 statistics of the row
    scaled by a power of two (:func:`rescaled_mean_var`): right for every finite input."""
    n = x.dtype.type(x.shape[1])
    for r in range(x.shape[0]):
        row, out = x[r], y[r]
        sum_sq = x.dtype.type(0)
        for j in range(row.size):
            sum_sq += row[j] * row[j]
        if not out_of_range(sum_sq / n, floor):
            continue
        e, mean_s, var_s = rescaled_mean_var(row)
        if not np.isfinite(var_s):  # inf or NaN in the row: the IEEE result stands, as in PyTorch
            continue
        rstd_s = rescaled_rstd(e, var_s + mean_s * mean_s, eps)  # the mean square, without cancellation
        for j in range(row.size):
            out[j] = math.ldexp(float(row[j]), -e) * rstd_s * weight[j]
        rstd[r] = math.ldexp(rstd_s, -e)


def rms_norm_forward(x: np.ndarray, weight: np.ndarray | None, eps: float,
                     out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Normalize each row of ``x`` (rows, cols) by its root mean square: ``y = x * rstd * weight``.

    ``rstd = 1 / sqrt(mean(x²) + eps)`` per row is returned for the backward pass. ``weight`` is
    ``(cols,)`` or None (meaning 1). Returns ``(y, rstd)``; ``y`` is written into ``out`` when given.

    Reference: :func:`tinynorm.kernels.reference.rms_norm_forward`.
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    weight = param_or_fill("weight", weight, cols, x.dtype, 1.0)
    eps = check_eps(eps, x.dtype)
    floor = variance_floor(x.dtype, eps)
    y = output(out, x.shape, x.dtype)
    rstd = np.empty(rows, x.dtype)
    if x.size == 0:  # rows without columns have no statistics
        rstd[:] = np.nan
        return y, rstd
    if use_parallel(x.size):
        out_of_range_rows = _forward_parallel(x, weight, eps, floor, y, rstd, num_chunks(rows))
    else:
        out_of_range_rows = _forward_rows(x, weight, eps, floor, y, rstd, 0, rows)
    if out_of_range_rows:
        _forward_rescaled(x, weight, eps, floor, y, rstd)
    return y, rstd


@njit(**JIT_OPTIONS)
def _backward_rows(dy, x, rstd, weight, dx, dweight, start, stop):
    """Rows [start, stop); their dweight contributions are added to this chunk's partial row."""
    n = x.dtype.type(x.shape[1])
    for r in range(start, stop):
        row, grad, out = x[r], dy[r], dx[r]
        s = rstd[r]
        sum_g_xhat = x.dtype.type(0)
        for j in range(row.size):
            sum_g_xhat += grad[j] * weight[j] * row[j]
        mean_g_xhat = sum_g_xhat * s / n
        for j in range(row.size):
            xhat = row[j] * s
            out[j] = s * (grad[j] * weight[j] - xhat * mean_g_xhat)
            dweight[j] += grad[j] * xhat


@njit(parallel=True, **JIT_OPTIONS)
def _backward_parallel(dy, x, rstd, weight, dx, dweight_parts):
    chunks = dweight_parts.shape[0]
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        _backward_rows(dy, x, rstd, weight, dx, dweight_parts[chunk], start, stop)


def rms_norm_backward(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray,
                      weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of :func:`rms_norm_forward` given the upstream gradient ``dy``.

    With ``xhat = x * rstd`` and ``g = dy * weight``: ``dx = rstd * (g - xhat * mean(g * xhat))``
    (mean over each row) and ``dweight = sum_rows(dy * xhat)``. Returns ``(dx, dweight)``.

    Reference: :func:`tinynorm.kernels.reference.rms_norm_backward`.
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    dy = check_like("dy", dy, x.shape, x.dtype)
    rstd = check_like("rstd", rstd, (rows,), x.dtype)
    weight = param_or_fill("weight", weight, cols, x.dtype, 1.0)
    dx = np.empty_like(x)
    chunks = num_chunks(rows) if use_parallel(x.size) else 1
    dweight_parts = partials(chunks, cols, x.dtype)
    if chunks > 1:
        _backward_parallel(dy, x, rstd, weight, dx, dweight_parts)
    elif x.size:
        _backward_rows(dy, x, rstd, weight, dx, dweight_parts[0], 0, rows)
    return dx, dweight_parts[:, :cols].sum(axis=0)
