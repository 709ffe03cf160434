"""Convolution and pooling of NCHW :class:`CudaArray` inputs, with the names and semantics of the CPU backend.

The names are the kernel wrappers of :mod:`tinynorm.kernels.cuda.conv` and
:mod:`tinynorm.kernels.cuda.pool` themselves: they check dtypes, shapes and the window geometry with
the CPU wrappers' messages, copy a strided input to C order, and return new CudaArrays.
"""
from __future__ import annotations

from ...kernels.cuda.conv import conv2d_backward, conv2d_forward
from ...kernels.cuda.pool import avg_pool2d_backward, avg_pool2d_forward, max_pool2d_backward, max_pool2d_forward

__all__ = ["avg_pool2d_backward", "avg_pool2d_forward", "conv2d_backward", "conv2d_forward",
           "max_pool2d_backward", "max_pool2d_forward"]
