"""Channel-wise ("feature") dropout, as ``F.dropout1d/2d/3d``: each (sample, channel) map is kept whole,
scaled by 1/(1-p), or zeroed whole, with probability p.

Neighbouring pixels of a feature map are strongly correlated, so dropping single pixels (``dropout``)
barely regularizes a convolution; dropping whole channels does (Tompson et al. 2015). The mask is one
number per (sample, channel), broadcast over the map: the product records an ordinary ``MulBackward0``.
"""
from __future__ import annotations

import warnings

from ..random import default_generator
from ..tensor import Tensor
from .dropout import check_probability
from .inplace import modify


def _masked(x: Tensor, p: float) -> Tensor:
    """``x`` times a mask of shape (N, C, 1, ...): 0 with probability p, else 1/(1-p)."""
    if p == 1.0:
        return x * 0.0
    if x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
    keep = x._backend.random_uniform(default_generator(), shape, x.dtype) >= p
    return x * Tensor._from_array((keep / (1 - p)).astype(x.dtype), x.device)


def feature_dropout(x: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Channel-wise dropout of ``x`` (N, C, ...); identity outside training."""
    if not training or p == 0.0 or x.numel() == 0:
        return x
    return modify(x, _masked, p) if inplace else _masked(x, p)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or unbatched (C, L) input."""
    check_probability(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 3:
        return feature_dropout(input, p, training, inplace)
    if inplace:
        feature_dropout(input.unsqueeze(0), p, training, True)  # the view writes into input
        return input
    return feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)


def _feature_dropout_nd(input: Tensor, p: float, training: bool, inplace: bool, spatial: int) -> Tensor:
    """``dropout2d``/``dropout3d``: PyTorch warns about inputs of other ranks; dropout2d treats every
    input as batched (dim 1 the channels, even for 3-d input), dropout3d every input but a 5-d one as
    unbatched."""
    check_probability(p)
    name = f"dropout{spatial}d"
    if input.ndim not in (spatial + 1, spatial + 2):
        warnings.warn(f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated and will result in "
                      f"an error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
                      f"{spatial} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3)
    if spatial == 2 and input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=3)
    if spatial == 3 and input.ndim != 5:
        if inplace:
            feature_dropout(input.unsqueeze(0), p, training, True)
            return input
        return feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)
    return feature_dropout(input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) input."""
    return _feature_dropout_nd(input, p, training, inplace, 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    return _feature_dropout_nd(input, p, training, inplace, 3)
