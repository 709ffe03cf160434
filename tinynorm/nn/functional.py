"""Functional forms of the layers, as ``torch.nn.functional``: ``import tinynorm.nn.functional as F``."""
from ..ops import (  # noqa: F401  (re-exported)
    cross_entropy,
    dropout,
    gelu,
    linear,
    log_softmax,
    mse_loss,
    nll_loss,
    relu,
    sigmoid,
    softmax,
    tanh,
)
from .embedding import embedding  # noqa: F401
from ..ops.normalization import batch_norm, group_norm, instance_norm, layer_norm, rms_norm  # noqa: F401
from ..ops.conv import adaptive_avg_pool2d, avg_pool2d, conv1d, conv2d, max_pool2d  # noqa: F401
