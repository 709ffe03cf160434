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
