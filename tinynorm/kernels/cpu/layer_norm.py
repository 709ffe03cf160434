"""LayerNorm on the CPU: each row of a 2-D array is normalized over its columns.

The caller flattens the leading dims into rows and the normalized dims into columns. One row at a
time is in cache, so the statistics take two cheap passes over it and the output a third; only the
first pass reads the row from memory. The same math in plain numpy, for reading:
:func:`tinynorm.kernels.reference.layer_norm_forward` and ``layer_norm_backward``.
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
    mean_var,
    mean_var_from_total,
    num_chunks,
    out_of_range,
    output,
    param_or_fill,
    partials,
    rescaled_mean_var,
    rescaled_rstd,
    total,
    use_parallel,
    variance_floor,
)


@njit(**IEEE_JIT_OPTIONS)
def _forward_rows(x, weight, bias, eps, floor, y, mean, rstd, start, stop):
    """Rows [start, stop): the whole serial kernel, or one thread's share of the parallel one.
    Returns how many rows had a variance out of the dtype's range (:func:`_forward_rescaled` redoes them).

    Software-pipelined: the loop that writes row ``r`` also sums row ``r + 1``, so reading the next
    row from memory overlaps writing this one, and each row comes from memory once. RMSNorm's
    single statistics loop gained less from it.
    """
    out_of_range_rows = 0
    row_total = total(x[start])
    for r in range(start, stop):
        row, out = x[r], y[r]
        m, var = mean_var_from_total(row, row_total)
        out_of_range_rows += out_of_range(var, floor)
        s = x.dtype.type(1) / np.sqrt(var + eps)
        following = x[min(r + 1, stop - 1)]  # the last row sums itself again; that sum is unused
        row_total = x.dtype.type(0)
        for j in range(row.size):
            out[j] = (row[j] - m) * s * weight[j] + bias[j]
            row_total += following[j]
        mean[r] = m
        rstd[r] = s
    return out_of_range_rows


@njit(parallel=True, **JIT_OPTIONS)
def _forward_parallel(x, weight, bias, eps, floor, y, mean, rstd, chunks):
    out_of_range_rows = 0
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        out_of_range_rows += _forward_rows(x, weight, bias, eps, floor, y, mean, rstd, start, stop)
    return out_of_range_rows


@njit(**IEEE_JIT_OPTIONS)
def _forward_rescaled(x, weight, bias, eps, floor, y, mean, rstd):
    """Redo each row whose variance is out of the dtype's range from float64 statistics of the row
    scaled by a power of two (:func:`rescaled_mean_var`): right for every finite input."""
    for r in range(x.shape[0]):
        row, out = x[r], y[r]
        if not out_of_range(mean_var(row)[1], floor):
            continue
        e, mean_s, var_s = rescaled_mean_var(row)
        if not np.isfinite(var_s):  # inf or NaN in the row: the IEEE result stands, as in PyTorch
            continue
        rstd_s = rescaled_rstd(e, var_s, eps)
        for j in range(row.size):
            out[j] = (math.ldexp(float(row[j]), -e) - mean_s) * rstd_s * weight[j] + bias[j]
        mean[r] = math.ldexp(mean_s, e)
        rstd[r] = math.ldexp(rstd_s, -e)


def layer_norm_forward(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                       out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalize each row of ``x`` (rows, cols): ``y = (x - mean) * rstd * weight + bias``.

    ``mean`` and ``rstd = 1 / sqrt(var + eps)`` (biased variance) are per row, returned for the
    backward pass. ``weight``/``bias`` are ``(cols,)`` or None (meaning 1 and 0). Returns
    ``(y, mean, rstd)``; ``y`` is written into ``out`` when given.

    Reference: :func:`tinynorm.kernels.reference.layer_norm_forward`.
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    weight = param_or_fill("weight", weight, cols, x.dtype, 1.0)
    bias = param_or_fill("bias", bias, cols, x.dtype, 0.0)
    eps = check_eps(eps, x.dtype)
    floor = variance_floor(x.dtype, eps)
    y = output(out, x.shape, x.dtype)
    mean = np.empty(rows, x.dtype)
    rstd = np.empty(rows, x.dtype)
    if x.size == 0:  # rows without columns have no statistics
        mean[:], rstd[:] = np.nan, np.nan
        return y, mean, rstd
    if use_parallel(x.size):
        out_of_range_rows = _forward_parallel(x, weight, bias, eps, floor, y, mean, rstd, num_chunks(rows))
    else:
        out_of_range_rows = _forward_rows(x, weight, bias, eps, floor, y, mean, rstd, 0, rows)
    if out_of_range_rows:
        _forward_rescaled(x, weight, bias, eps, floor, y, mean, rstd)
    return y, mean, rstd


@njit(**JIT_OPTIONS)
def _backward_rows(dy, x, mean, rstd, weight, dx, dweight, dbias, start, stop):
    """Rows [start, stop); their dweight/dbias contributions are added to this chunk's partial rows."""
    n = x.dtype.type(x.shape[1])
    for r in range(start, stop):
        row, grad, out = x[r], dy[r], dx[r]
        m, s = mean[r], rstd[r]
        sum_g = x.dtype.type(0)
        sum_g_xhat = x.dtype.type(0)
        for j in range(row.size):
            g = grad[j] * weight[j]
            sum_g += g
            sum_g_xhat += g * (row[j] - m) * s
        mean_g, mean_g_xhat = sum_g / n, sum_g_xhat / n
        for j in range(row.size):
            xhat = (row[j] - m) * s
            out[j] = s * (grad[j] * weight[j] - mean_g - xhat * mean_g_xhat)
            dweight[j] += grad[j] * xhat
            dbias[j] += grad[j]


@njit(parallel=True, **JIT_OPTIONS)
def _backward_parallel(dy, x, mean, rstd, weight, dx, dweight_parts, dbias_parts):
    chunks = dweight_parts.shape[0]
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, x.shape[0])
        _backward_rows(dy, x, mean, rstd, weight, dx, dweight_parts[chunk], dbias_parts[chunk], start, stop)


def layer_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`layer_norm_forward` given the upstream gradient ``dy``.

    With ``xhat = (x - mean) * rstd`` and ``g = dy * weight``:
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`` (means over each row),
    ``dweight = sum_rows(dy * xhat)``, ``dbias = sum_rows(dy)``. Returns ``(dx, dweight, dbias)``;
    ``dweight``/``dbias`` are always computed, the caller drops what it does not need.

    Reference: :func:`tinynorm.kernels.reference.layer_norm_backward`.
    """
    x = check_input("x", x, 2, "(rows, cols)")
    rows, cols = x.shape
    dy = check_like("dy", dy, x.shape, x.dtype)
    mean = check_like("mean", mean, (rows,), x.dtype)
    rstd = check_like("rstd", rstd, (rows,), x.dtype)
    weight = param_or_fill("weight", weight, cols, x.dtype, 1.0)
    dx = np.empty_like(x)
    chunks = num_chunks(rows) if use_parallel(x.size) else 1
    dweight_parts = partials(chunks, cols, x.dtype)
    dbias_parts = partials(chunks, cols, x.dtype)
    if chunks > 1:
        _backward_parallel(dy, x, mean, rstd, weight, dx, dweight_parts, dbias_parts)
    elif x.size:
        _backward_rows(dy, x, mean, rstd, weight, dx, dweight_parts[0], dbias_parts[0], 0, rows)
    return dx, dweight_parts[:, :cols].sum(axis=0), dbias_parts[:, :cols].sum(axis=0)
