"""Convolution and pooling of NCHW :class:`CudaArray` inputs, with the names and semantics of the CPU backend.

Each function hands its arrays to :mod:`tinynorm.kernels.cuda.conv` / :mod:`tinynorm.kernels.cuda.pool`
as C-contiguous Numba device arrays (a copy only for a non-contiguous view) and wraps the results; the
kernel wrappers check dtypes, shapes and the window geometry with the CPU wrappers' messages.
"""
from __future__ import annotations

from typing import Any

from ...kernels.cpu.conv import IntPair
from ...kernels.cuda import conv as conv_kernels
from ...kernels.cuda import pool as pool_kernels
from .array import CudaArray, kernel_array

__all__ = ["avg_pool2d_backward", "avg_pool2d_forward", "conv2d_backward", "conv2d_forward",
           "max_pool2d_backward", "max_pool2d_forward"]

Shape4 = tuple[int, int, int, int]


def _wrap(device_array: Any) -> CudaArray | None:
    return None if device_array is None else CudaArray.wrap(device_array)


def conv2d_forward(x: CudaArray, weight: CudaArray, bias: CudaArray | None = None, stride: IntPair = 1,
                   padding: IntPair = 0) -> tuple[CudaArray, CudaArray]:
    """Convolution of NCHW ``x`` with ``weight`` (O, C, kh, kw) plus optional ``bias`` (O,).

    Returns ``(y, cols)``: ``y`` (N, O, OH, OW) and the im2col columns for :func:`conv2d_backward`.
    """
    bias = None if bias is None else kernel_array("bias", bias)
    y, cols = conv_kernels.conv2d_forward(kernel_array("x", x), kernel_array("weight", weight), bias, stride, padding)
    return CudaArray.wrap(y), CudaArray.wrap(cols)


def conv2d_backward(dy: CudaArray, cols: CudaArray, x_shape: Shape4, weight: CudaArray, stride: IntPair = 1,
                    padding: IntPair = 0, needs_input_grad: bool = True
                    ) -> tuple[CudaArray | None, CudaArray, CudaArray]:
    """``(dx, dweight, dbias)`` of :func:`conv2d_forward` for the upstream gradient ``dy`` (N, O, OH, OW);
    ``dx`` is None when ``needs_input_grad`` is False."""
    dx, dweight, dbias = conv_kernels.conv2d_backward(
        kernel_array("dy", dy), kernel_array("cols", cols), x_shape, kernel_array("weight", weight), stride, padding,
        needs_input_grad)
    return _wrap(dx), CudaArray.wrap(dweight), CudaArray.wrap(dbias)


def max_pool2d_forward(x: CudaArray, kernel_size: IntPair, stride: IntPair | None = None,
                       padding: IntPair = 0) -> tuple[CudaArray, CudaArray]:
    """Max over each window (padding counts as -inf; stride defaults to kernel_size).

    Returns ``(y, argmax)``; ``argmax`` (int64) holds the flat index ``h*W + w`` of each window's first
    maximum in its input plane.
    """
    y, argmax = pool_kernels.max_pool2d_forward(kernel_array("x", x), kernel_size, stride, padding)
    return CudaArray.wrap(y), CudaArray.wrap(argmax)


def max_pool2d_backward(dy: CudaArray, argmax: CudaArray, x_shape: Shape4, checked: bool = False) -> CudaArray:
    """Gradient of :func:`max_pool2d_forward`: each ``dy`` element goes to its window's ``argmax`` input
    (``checked``: ``argmax`` is the forward's own, so reading back its range check is skipped)."""
    dx = pool_kernels.max_pool2d_backward(kernel_array("dy", dy), kernel_array("argmax", argmax), x_shape, checked)
    return CudaArray.wrap(dx)


def avg_pool2d_forward(x: CudaArray, kernel_size: IntPair, stride: IntPair | None = None,
                       padding: IntPair = 0) -> CudaArray:
    """Mean over each window, padded zeros included (count_include_pad=True); stride defaults to kernel_size."""
    return CudaArray.wrap(pool_kernels.avg_pool2d_forward(kernel_array("x", x), kernel_size, stride, padding))


def avg_pool2d_backward(dy: CudaArray, x_shape: Shape4, kernel_size: IntPair, stride: IntPair | None = None,
                        padding: IntPair = 0) -> CudaArray:
    """Gradient of :func:`avg_pool2d_forward`: each window spreads ``dy / (kh*kw)`` over its inputs."""
    dx = pool_kernels.avg_pool2d_backward(kernel_array("dy", dy), x_shape, kernel_size, stride, padding)
    return CudaArray.wrap(dx)
