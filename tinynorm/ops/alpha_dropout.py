"""Alpha dropout, as ``F.alpha_dropout``/``F.feature_alpha_dropout``: dropout for self-normalizing (SELU)
networks (Klambauer et al. 2017). A dropped value becomes SELU's negative saturation -alpha' rather
than 0, and an affine map a x + b restores zero mean and unit variance:

    y = a (x m + (-alpha') (1 - m)) + alpha' a p,    a = ((1 - p) (1 + p alpha'^2))^(-1/2),

with m ~ Bernoulli(1 - p) per element (or per (sample, channel) for the feature variant).
"""
from __future__ import annotations

import math

from ..random import default_generator
from ..tensor import Tensor
from .dropout import check_probability
from .inplace import modify

SELU_SATURATION = 1.7580993408473766  # alpha' = SELU's scale * alpha: SELU(x) -> -alpha' as x -> -inf


def _alpha_dropped(x: Tensor, p: float, feature: bool) -> Tensor:
    if p == 1.0:
        return x * 0.0
    if feature and x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if feature else tuple(x.shape)
    keep = Tensor._from_array((x._backend.random_uniform(default_generator(), shape, x.dtype) >= p).astype(x.dtype),
                              x.device)
    a = 1 / math.sqrt((SELU_SATURATION ** 2 * p + 1) * (1 - p))
    return x * (keep * a) + ((keep - 1) * (SELU_SATURATION * a) + SELU_SATURATION * a * p)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool) -> Tensor:
    check_probability(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    return modify(input, _alpha_dropped, p, feature) if inplace else _alpha_dropped(input, p, feature)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of each element (identity unless ``training``, PyTorch's default False here)."""
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole (sample, channel) maps of (N, C, ...) input."""
    return _alpha_dropout(input, p, training, inplace, feature=True)
