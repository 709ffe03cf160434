"""Functional forms of the layers, as ``torch.nn.functional``: ``import tinynorm.nn.functional as F``.

The functions live in ``tinynorm.ops`` by family; this module gathers them under PyTorch's names and
signatures, adding the ``inplace=`` options of the elementwise basics and the ``dtype=`` of softmax.
"""
from __future__ import annotations

from typing import Any

from .. import dtypes
from ..ops.dropout import dropout as _dropout
from ..ops import elementwise as _elementwise
from ..ops.softmax import log_softmax as _log_softmax
from ..ops.softmax import softmax as _softmax
from ..ops.activation import (  # noqa: F401  (re-exported)
    celu, elu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, implicit_softmax_dim, leaky_relu, logsigmoid, mish,
    prelu, relu6, rrelu, selu, silu, softplus, softshrink, softsign, tanhshrink, threshold,
)
from ..ops.alpha_dropout import alpha_dropout, feature_alpha_dropout  # noqa: F401
from ..ops.attention import scaled_dot_product_attention  # noqa: F401
from ..ops.conv import conv1d, conv2d  # noqa: F401
from ..ops.conv_transpose import conv_transpose1d, conv_transpose2d  # noqa: F401
from ..ops.distance import cosine_similarity, normalize, pairwise_distance, pdist  # noqa: F401
from ..ops.embedding_bag import embedding_bag  # noqa: F401
from ..ops.embedding_losses import (  # noqa: F401
    cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, margin_ranking_loss, multilabel_soft_margin_loss,
    poisson_nll_loss, soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)
from ..ops.feature_dropout import dropout1d, dropout2d, dropout3d  # noqa: F401
from ..ops.fold import fold, unfold  # noqa: F401
from ..ops.grid_sample import affine_grid, grid_sample  # noqa: F401
from ..ops.gumbel import gumbel_softmax  # noqa: F401
from ..ops.inplace import modify
from ..ops.interpolation import interpolate, upsample, upsample_bilinear, upsample_nearest  # noqa: F401
from ..ops.linalg import bilinear, linear  # noqa: F401
from ..ops.losses import cross_entropy, nll_loss  # noqa: F401
from ..ops.lookup import embedding, one_hot  # noqa: F401
from ..ops.normalization import batch_norm, group_norm, instance_norm, layer_norm, rms_norm  # noqa: F401
from ..ops.padding import pad  # noqa: F401
from ..ops.local_pooling import local_response_norm, lp_pool1d, lp_pool2d  # noqa: F401
from ..ops.pixel_shuffle import channel_shuffle, pixel_shuffle, pixel_unshuffle  # noqa: F401
from ..ops.pointwise_losses import (  # noqa: F401
    binary_cross_entropy, binary_cross_entropy_with_logits, huber_loss, kl_div, l1_loss, mse_loss, smooth_l1_loss,
)
from ..ops.pooling import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
    adaptive_max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d,
)
from ..tensor import Tensor

sigmoid = _elementwise.sigmoid
tanh = _elementwise.tanh


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else _elementwise.relu(input)


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _elementwise.gelu(input, approximate)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    if not inplace or not training or p == 0:
        return _dropout(input, p, training)
    return modify(input, _dropout, p, training)


def _softmax_input(input: Tensor, dim: int | None, dtype: Any, name: str) -> tuple[Tensor, int]:
    if dim is None:
        dim = implicit_softmax_dim(input.ndim, name)
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))
    return input, dim


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed in ``dtype`` when given)."""
    input, dim = _softmax_input(input, dim, dtype, "softmax")
    return _softmax(input, dim)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    input, dim = _softmax_input(input, dim, dtype, "log_softmax")
    return _log_softmax(input, dim)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(-x)."""
    input, dim = _softmax_input(input, dim, dtype, "softmin")
    return _softmax(-input, dim)
