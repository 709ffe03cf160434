"""CPU kernels (Numba ``@njit``): plain functions on numpy arrays, usable without the rest of tinynorm.

    import numpy as np
    from tinynorm.kernels.cpu import layer_norm_forward
    y, mean, rstd = layer_norm_forward(np.random.randn(8, 64).astype(np.float32), None, None, 1e-5)

Each function's docstring gives the formula it implements and names its plain-numpy reference in
:mod:`tinynorm.kernels.reference`; docs/normalization.md derives them.
"""
from .batch_norm import (
    batch_norm_backward,
    batch_norm_backward_elemt,
    batch_norm_backward_reduce,
    batch_norm_forward,
    batch_norm_rstd,
    batch_norm_stats,
    batch_norm_training_forward,
    batch_norm_update_running,
)
from .conv import col2im, conv2d_backward, conv2d_forward, conv2d_output_size, im2col
from .group_norm import group_norm_backward, group_norm_forward
from .layer_norm import layer_norm_backward, layer_norm_forward
from .pool import avg_pool2d_backward, avg_pool2d_forward, max_pool2d_backward, max_pool2d_forward
from .rms_norm import rms_norm_backward, rms_norm_forward
from .softmax import log_softmax_backward, log_softmax_forward, softmax_backward, softmax_forward

__all__ = [
    "batch_norm_backward", "batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_forward",
    "batch_norm_rstd", "batch_norm_stats", "batch_norm_training_forward", "batch_norm_update_running", "col2im",
    "conv2d_backward", "conv2d_forward", "conv2d_output_size", "im2col",
    "group_norm_backward", "group_norm_forward", "layer_norm_backward", "layer_norm_forward",
    "avg_pool2d_backward", "avg_pool2d_forward", "max_pool2d_backward", "max_pool2d_forward",
    "rms_norm_backward", "rms_norm_forward", "log_softmax_backward", "log_softmax_forward", "softmax_backward",
    "softmax_forward",
]
