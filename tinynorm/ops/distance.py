"""Vector norms along a dim, as the nn functions use them: normalize, cosine_similarity, pairwise_distance
and pdist.

``max(||x||_p, eps)`` is computed as ``max(sum |x|^p, eps^p)^(1/p)`` (for the 2-norm
``sqrt(max(sum x^2, eps^2))``): the same value, but its gradient is finite (0) at a zero vector, where
the gradient of the root itself is 0/0, and the clamp stops it exactly where PyTorch's
``clamp_min(eps)`` does.
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor
from .dims import normalize_dim
from .elementwise import where
from .pointwise_losses import broadcast_shape


def clamped_norm(x: Tensor, p: float, dim: int, eps: float) -> Tensor:
    """``max(||x||_p, eps)`` along ``dim`` (kept as a size-1 dim)."""
    if p == 2:
        return (x * x).sum(dim, keepdim=True).clamp(min=eps * eps).sqrt()
    if p == math.inf:
        return x.abs().amax(dim, keepdim=True).clamp(min=eps)
    if p == 1:
        return x.abs().sum(dim, keepdim=True).clamp(min=eps)
    return (x.abs() ** p).sum(dim, keepdim=True).clamp(min=eps**p).pow(1.0 / p)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``: unit vectors (zero vectors stay zero)."""
    d = normalize_dim(dim, input.ndim, "normalize")
    result = input / clamped_norm(input, p, d, eps)
    return result if out is None else out.copy_(result)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along ``dim`` (inputs broadcast together)."""
    shape = broadcast_shape(x1.shape, x2.shape)
    d = normalize_dim(dim, len(shape), "cosine_similarity")
    x1, x2 = x1.expand(shape), x2.expand(shape)
    return ((x1 / clamped_norm(x1, 2, d, eps)) * (x2 / clamped_norm(x2, 2, d, eps))).sum(d)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim."""
    difference = x1 - x2 + eps
    d = difference.ndim - 1 if difference.ndim else 0
    norm = clamped_norm(difference, p, d, 0.0) if difference.ndim else difference.abs()
    return norm if keepdim or not difference.ndim else norm.squeeze(d)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between every pair of rows i < j of ``input`` (N, M), in row-major order
    (N (N - 1) / 2 values); the gradient at a zero distance is 0, as PyTorch's."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = np.triu_indices(input.shape[0], 1)
    xp = input._backend
    difference = (input[xp.from_numpy(first)] - input[xp.from_numpy(second)]).abs()
    if p == 0:  # the count of differing coordinates, whose gradient is 0 (PyTorch gives the zeros too)
        return (difference != 0).sum(1).to(input.dtype) + (difference * 0).sum(1)
    if p == math.inf:
        return difference.amax(1) if difference.shape[1] else difference.sum(1)
    return _safe_power(_safe_power(difference, p).sum(1), 1.0 / p)


def _safe_power(x: Tensor, exponent: float) -> Tensor:
    """x^exponent for x >= 0, with gradient 0 (not 0 * inf) where x is 0, as PyTorch's pdist."""
    positive = x > 0
    return where(positive, where(positive, x, 1.0) ** exponent, 0.0)
