"""Dropout modules: elementwise (``Dropout``), channel-wise (``Dropout1d/2d/3d``) and the alpha dropouts
of self-normalizing networks (``AlphaDropout``, ``FeatureAlphaDropout``); identity in eval mode."""
from __future__ import annotations

from ..ops.dropout import check_probability
from ..tensor import Tensor
from . import functional as F
from .module import Module


class _DropoutNd(Module):
    function = staticmethod(F.dropout)

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        check_probability(p, type(self).__name__)
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self).function(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes elements with probability p in training mode (scaling the rest by 1/(1-p)); identity in eval."""

    function = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability p."""

    function = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) input with probability p."""

    function = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p."""

    function = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Alpha dropout (for SELU networks): dropped values go to SELU's saturation, mean and variance kept."""

    function = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of (N, C, ...) input."""

    function = staticmethod(F.feature_alpha_dropout)
