"""The normalizations in plain numpy, in float64: the formulas the fused kernels compute, written to be read.

Each function takes and returns what the kernel of the same name in :mod:`tinynorm.kernels.cpu` (and
:mod:`tinynorm.kernels.cuda`) does, over the same layout, so a kernel can be read next to its
reference; the tests hold every kernel to these. The derivations are in docs/normalization.md
(sections 3 to 5). Arguments may be of any float dtype; results are float64. ``weight=None`` means
1 and ``bias=None`` means 0.

Notation: a normalization set (a row, a (sample, group), a channel) has ``mean`` and the biased
variance ``var``; ``rstd = 1 / sqrt(var + eps)``; ``xhat = (x - mean) * rstd``; ``y = xhat * weight + bias``.
Backward, with ``g = dy * weight``, every norm that subtracts a mean has

    dx = rstd * (g - mean(g) - xhat * mean(g * xhat))        (means over the normalization set)

and ``dweight = sum(dy * xhat)``, ``dbias = sum(dy)`` over everything that shares a parameter.
"""
from __future__ import annotations

import numpy as np


def _param(param: np.ndarray | None, size: int, fill: float) -> np.ndarray:
    """An affine parameter in float64; None becomes ``fill`` (1 for weight, 0 for bias)."""
    return np.full(size, fill) if param is None else np.asarray(param, np.float64)


def standardize_backward(g: np.ndarray, xhat: np.ndarray, rstd: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The input gradient of ``xhat`` given ``g = dL/dxhat``, the sets being ``axes``:
    ``rstd * (g - mean(g) - xhat * mean(g * xhat))``."""
    return rstd * (g - g.mean(axis=axes, keepdims=True) - xhat * (g * xhat).mean(axis=axes, keepdims=True))


# ------------------------------------------------------------------------------------ LayerNorm
def layer_norm_forward(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
                       eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row of ``x`` (rows, cols) normalized over its columns: ``(y, mean, rstd)``, stats ``(rows,)``."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + eps)
    xhat = (x - mean[:, None]) * rstd[:, None]
    return xhat * _param(weight, x.shape[1], 1) + _param(bias, x.shape[1], 0), mean, rstd


def layer_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dx, dweight, dbias)`` of :func:`layer_norm_forward`, from its saved ``mean`` and ``rstd``."""
    dy, x = np.asarray(dy, np.float64), np.asarray(x, np.float64)
    rstd = np.asarray(rstd, np.float64)[:, None]
    xhat = (x - np.asarray(mean, np.float64)[:, None]) * rstd
    dx = standardize_backward(dy * _param(weight, x.shape[1], 1), xhat, rstd, (1,))
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


# -------------------------------------------------------------------------------------- RMSNorm
def rms_norm_forward(x: np.ndarray, weight: np.ndarray | None, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row of ``x`` (rows, cols) divided by its root mean square: ``(y, rstd)``,
    ``rstd = 1 / sqrt(mean(x²) + eps)``. No mean is subtracted, and there is no bias."""
    x = np.asarray(x, np.float64)
    rstd = 1 / np.sqrt((x * x).mean(axis=1) + eps)
    return x * rstd[:, None] * _param(weight, x.shape[1], 1), rstd


def rms_norm_backward(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray,
                      weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(dx, dweight)`` of :func:`rms_norm_forward`: ``dx = rstd * (g - xhat * mean(g * xhat))``, one
    correction term only, as there is no mean."""
    dy, x = np.asarray(dy, np.float64), np.asarray(x, np.float64)
    rstd = np.asarray(rstd, np.float64)[:, None]
    xhat = x * rstd
    g = dy * _param(weight, x.shape[1], 1)
    dx = rstd * (g - xhat * (g * xhat).mean(axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0)


# ------------------------------------------------------------------------ GroupNorm, InstanceNorm
def group_norm_forward(x: np.ndarray, num_groups: int, weight: np.ndarray | None, bias: np.ndarray | None,
                       eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` (N, C, S) with each sample's channels split into ``num_groups`` groups of consecutive
    channels, each (sample, group) normalized over its channels and positions; per-channel affine
    parameters. Returns ``(y, mean, rstd)``, stats ``(N, num_groups)``."""
    x = np.asarray(x, np.float64)
    batch, channels, _ = x.shape
    groups = x.reshape(batch, num_groups, -1)
    mean = groups.mean(axis=2)
    rstd = 1 / np.sqrt(groups.var(axis=2) + eps)
    xhat = ((groups - mean[..., None]) * rstd[..., None]).reshape(x.shape)
    return xhat * _param(weight, channels, 1)[:, None] + _param(bias, channels, 0)[:, None], mean, rstd


def group_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, num_groups: int,
                        weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dx, dweight, dbias)`` of :func:`group_norm_forward`: LayerNorm's ``dx`` over each (sample,
    group); the parameter gradients sum over samples and positions."""
    dy, x = np.asarray(dy, np.float64), np.asarray(x, np.float64)
    batch, channels, _ = x.shape
    rstd = np.asarray(rstd, np.float64)[..., None]
    xhat = (x.reshape(batch, num_groups, -1) - np.asarray(mean, np.float64)[..., None]) * rstd
    g = (dy * _param(weight, channels, 1)[:, None]).reshape(xhat.shape)
    dx = standardize_backward(g, xhat, rstd, (2,)).reshape(x.shape)
    return dx, (dy * xhat.reshape(x.shape)).sum(axis=(0, 2)), dy.sum(axis=(0, 2))


def instance_norm_forward(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
                          eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each (sample, channel) of ``x`` (N, C, S) normalized over its S positions: GroupNorm with one
    channel per group. Returns ``(y, mean, rstd)``, stats ``(N, C)``."""
    return group_norm_forward(x, x.shape[1], weight, bias, eps)


def instance_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                           weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dx, dweight, dbias)`` of :func:`instance_norm_forward`."""
    return group_norm_backward(dy, x, mean, rstd, x.shape[1], weight)


# ------------------------------------------------------------------------------------ BatchNorm
def batch_norm_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each channel's mean and biased variance over the N * S values of ``x`` (N, C, S)."""
    x = np.asarray(x, np.float64)
    return x.mean(axis=(0, 2)), x.var(axis=(0, 2))


def batch_norm_forward(x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, weight: np.ndarray | None,
                       bias: np.ndarray | None) -> np.ndarray:
    """``y = (x - mean[c]) * rstd[c] * weight[c] + bias[c]`` over ``x`` (N, C, S): the batch's own
    statistics in training, the running ones in evaluation (then ``rstd = 1 / sqrt(running_var + eps)``)."""
    x = np.asarray(x, np.float64)
    channels = x.shape[1]
    scale = np.asarray(rstd, np.float64) * _param(weight, channels, 1)
    return (x - np.asarray(mean, np.float64)[:, None]) * scale[:, None] + _param(bias, channels, 0)[:, None]


def batch_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray,
                        weight: np.ndarray | None, training: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dx, dweight, dbias)`` of :func:`batch_norm_forward`. In training the statistics depend on
    ``x``, and ``dx`` is LayerNorm's formula over each channel's N * S values; in evaluation they are
    constants, and ``dx = dy * weight * rstd``."""
    dy, x = np.asarray(dy, np.float64), np.asarray(x, np.float64)
    rstd = np.asarray(rstd, np.float64)[:, None]
    xhat = (x - np.asarray(mean, np.float64)[:, None]) * rstd
    g = dy * _param(weight, x.shape[1], 1)[:, None]
    dx = standardize_backward(g, xhat, rstd, (0, 2)) if training else g * rstd
    return dx, (dy * xhat).sum(axis=(0, 2)), dy.sum(axis=(0, 2))


def batch_norm_update_running(running_mean: np.ndarray, running_var: np.ndarray, mean: np.ndarray,
                              var: np.ndarray, count: int, momentum: float) -> tuple[np.ndarray, np.ndarray]:
    """The running statistics after a training batch whose ``count`` values per channel have ``mean``
    and biased ``var``: ``running = (1 - momentum) * running + momentum * batch``, where the variance
    is the unbiased one, ``var * count / (count - 1)``. Returns the new ``(running_mean, running_var)``
    (the kernel updates its arguments in place)."""
    unbiased_var = np.asarray(var, np.float64) * count / (count - 1)
    return ((1 - momentum) * np.asarray(running_mean, np.float64) + momentum * np.asarray(mean, np.float64),
            (1 - momentum) * np.asarray(running_var, np.float64) + momentum * unbiased_var)
