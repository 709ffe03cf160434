"""GroupNorm on the CPU: channels are split into groups, each (sample, group) is normalized on its own.

``x`` is ``(N, C, S)`` with ``S`` the product of the spatial dims, so the ``C // G * S`` values of one
(sample, group) are contiguous: the statistics are LayerNorm's row statistics over that block, and
the affine parameters are per channel. InstanceNorm is GroupNorm with one channel per group. The
same math in plain numpy: :func:`tinynorm.kernels.reference.group_norm_forward` and
``group_norm_backward``.
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
    num_chunks,
    out_of_range,
    output,
    param_or_fill,
    rescaled_mean_var,
    rescaled_rstd,
    use_parallel,
    variance_floor,
)


@njit(**IEEE_JIT_OPTIONS)
def _forward_groups(x, num_groups, weight, bias, eps, floor, y, mean, rstd, start, stop):
    """(sample, group) units [start, stop), unit = n * num_groups + g. Returns how many had a variance
    out of the dtype's range (:func:`_forward_rescaled` redoes them)."""
    batch, channels, spatial = x.shape
    per_group = channels // num_groups
    blocks = x.reshape((batch * num_groups, per_group * spatial))
    out_of_range_units = 0
    for unit in range(start, stop):
        n, g = unit // num_groups, unit % num_groups
        m, var = mean_var(blocks[unit])
        out_of_range_units += out_of_range(var, floor)
        s = x.dtype.type(1) / np.sqrt(var + eps)
        for c in range(g * per_group, (g + 1) * per_group):
            scale, shift = s * weight[c], bias[c]
            for k in range(spatial):
                y[n, c, k] = (x[n, c, k] - m) * scale + shift
        mean[n, g] = m
        rstd[n, g] = s
    return out_of_range_units


@njit(parallel=True, **JIT_OPTIONS)
def _forward_parallel(x, num_groups, weight, bias, eps, floor, y, mean, rstd, chunks):
    units = x.shape[0] * num_groups
    out_of_range_units = 0
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, units)
        out_of_range_units += _forward_groups(x, num_groups, weight, bias, eps, floor, y, mean, rstd, start, stop)
    return out_of_range_units


@njit(**IEEE_JIT_OPTIONS)
def _forward_rescaled(x, num_groups, weight, bias, eps, floor, y, mean, rstd):
    """Redo each (sample, group) whose variance is out of the dtype's range from float64 statistics
    of the block scaled by a power of two (:func:`rescaled_mean_var`): right for every finite input."""
    batch, channels, spatial = x.shape
    per_group = channels // num_groups
    blocks = x.reshape((batch * num_groups, per_group * spatial))
    for unit in range(blocks.shape[0]):
        if not out_of_range(mean_var(blocks[unit])[1], floor):
            continue
        n, g = unit // num_groups, unit % num_groups
        e, mean_s, var_s = rescaled_mean_var(blocks[unit])
        if not np.isfinite(var_s):  # inf or NaN in the block: the IEEE result stands, as in PyTorch
            continue
        rstd_s = rescaled_rstd(e, var_s, eps)
        for c in range(g * per_group, (g + 1) * per_group):
            for k in range(spatial):
                y[n, c, k] = (math.ldexp(float(x[n, c, k]), -e) - mean_s) * rstd_s * weight[c] + bias[c]
        mean[n, g] = math.ldexp(mean_s, e)
        rstd[n, g] = math.ldexp(rstd_s, -e)


def _check_x_and_groups(x: object, num_groups: object) -> np.ndarray:
    x = check_input("x", x, 3, "(N, C, S)")
    if (not isinstance(num_groups, (int, np.integer)) or isinstance(num_groups, bool) or num_groups <= 0
            or x.shape[1] % num_groups):
        raise ValueError(f"num_groups must be a positive integer dividing C={x.shape[1]}, got {num_groups!r}")
    return x


def group_norm_forward(x: np.ndarray, num_groups: int, weight: np.ndarray | None, bias: np.ndarray | None,
                       eps: float, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group-normalize ``x`` (N, C, S): ``y = (x - mean[n, g]) * rstd[n, g] * weight[c] + bias[c]``.

    Channel ``c`` belongs to group ``g = c // (C // num_groups)``; ``mean``/``rstd`` (biased variance,
    ``rstd = 1 / sqrt(var + eps)``) are ``(N, num_groups)``. ``weight``/``bias`` are ``(C,)`` or None.
    Returns ``(y, mean, rstd)``; ``y`` is written into ``out`` when given.

    Reference: :func:`tinynorm.kernels.reference.group_norm_forward`.
    """
    x = _check_x_and_groups(x, num_groups)
    batch, channels, _ = x.shape
    weight = param_or_fill("weight", weight, channels, x.dtype, 1.0)
    bias = param_or_fill("bias", bias, channels, x.dtype, 0.0)
    eps = check_eps(eps, x.dtype)
    floor = variance_floor(x.dtype, eps)
    y = output(out, x.shape, x.dtype)
    mean = np.empty((batch, num_groups), x.dtype)
    rstd = np.empty((batch, num_groups), x.dtype)
    units = batch * num_groups
    if x.size == 0:  # groups without values have no statistics
        mean[:], rstd[:] = np.nan, np.nan
        return y, mean, rstd
    if use_parallel(x.size):
        out_of_range_units = _forward_parallel(x, num_groups, weight, bias, eps, floor, y, mean, rstd,
                                               num_chunks(units))
    else:
        out_of_range_units = _forward_groups(x, num_groups, weight, bias, eps, floor, y, mean, rstd, 0, units)
    if out_of_range_units:
        _forward_rescaled(x, num_groups, weight, bias, eps, floor, y, mean, rstd)
    return y, mean, rstd


@njit(**JIT_OPTIONS)
def _backward_groups(dy, x, mean, rstd, num_groups, weight, dx, dweight_parts, dbias_parts, start, stop):
    """(sample, group) units [start, stop); each writes its channels' sums into row n of the parts."""
    _, channels, spatial = x.shape
    per_group = channels // num_groups
    count = x.dtype.type(per_group * spatial)
    for unit in range(start, stop):
        n, g = unit // num_groups, unit % num_groups
        m, s = mean[n, g], rstd[n, g]
        # Per-channel sums first: they are this sample's share of dweight/dbias, and weighted by
        # weight[c] they give the group's sums of g = dy * weight and of g * xhat.
        sum_g = x.dtype.type(0)
        sum_g_xhat = x.dtype.type(0)
        for c in range(g * per_group, (g + 1) * per_group):
            sum_dy = x.dtype.type(0)
            sum_dy_xmu = x.dtype.type(0)
            for k in range(spatial):
                sum_dy += dy[n, c, k]
                sum_dy_xmu += dy[n, c, k] * (x[n, c, k] - m)
            dweight_parts[n, c] = sum_dy_xmu * s
            dbias_parts[n, c] = sum_dy
            sum_g += weight[c] * sum_dy
            sum_g_xhat += weight[c] * sum_dy_xmu * s
        mean_g, mean_g_xhat = sum_g / count, sum_g_xhat / count
        for c in range(g * per_group, (g + 1) * per_group):
            for k in range(spatial):
                xhat = (x[n, c, k] - m) * s
                dx[n, c, k] = s * (dy[n, c, k] * weight[c] - mean_g - xhat * mean_g_xhat)


@njit(parallel=True, **JIT_OPTIONS)
def _backward_parallel(dy, x, mean, rstd, num_groups, weight, dx, dweight_parts, dbias_parts, chunks):
    units = x.shape[0] * num_groups
    for chunk in prange(chunks):
        start, stop = chunk_bounds(chunk, chunks, units)
        _backward_groups(dy, x, mean, rstd, num_groups, weight, dx, dweight_parts, dbias_parts, start, stop)


def group_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, num_groups: int,
                        weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`group_norm_forward` given the upstream gradient ``dy``.

    With ``xhat = (x - mean) * rstd`` and ``g = dy * weight[c]``, per (sample, group):
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``; per channel:
    ``dweight = sum_{n,s}(dy * xhat)``, ``dbias = sum_{n,s}(dy)``. Returns ``(dx, dweight, dbias)``.

    Reference: :func:`tinynorm.kernels.reference.group_norm_backward`.
    """
    x = _check_x_and_groups(x, num_groups)
    batch, channels, _ = x.shape
    dy = check_like("dy", dy, x.shape, x.dtype)
    mean = check_like("mean", mean, (batch, num_groups), x.dtype)
    rstd = check_like("rstd", rstd, (batch, num_groups), x.dtype)
    weight = param_or_fill("weight", weight, channels, x.dtype, 1.0)
    dx = np.empty_like(x)
    # Each (sample, group) writes only its own entries: the result is the same however the work is split.
    dweight_parts = np.zeros((batch, channels), x.dtype)
    dbias_parts = np.zeros((batch, channels), x.dtype)
    units = batch * num_groups
    if use_parallel(x.size):
        _backward_parallel(dy, x, mean, rstd, num_groups, weight, dx, dweight_parts, dbias_parts,
                           num_chunks(units))
    elif x.size:
        _backward_groups(dy, x, mean, rstd, num_groups, weight, dx, dweight_parts, dbias_parts, 0, units)
    return dx, dweight_parts.sum(axis=0), dbias_parts.sum(axis=0)
