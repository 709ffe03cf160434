"""2-D convolution and pooling over NCHW tensors.

Convolution is im2col + one GEMM: every kernel-sized patch of the input becomes a column, so the
convolution is ``weight (O, C*kh*kw) @ cols (C*kh*kw, OH*OW)`` per sample. Its backward is two more
GEMMs: dweight = dy @ cols^T, and dcols = weight^T @ dy folded back onto the input by col2im (the
adjoint of im2col, which adds overlapping patches). The kernels are in tinynorm/kernels/cpu/conv.py
and pool.py.
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor

IntPair = int | tuple[int, int]


class Conv2d(Function):
    backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, stride: IntPair, padding: IntPair) -> Any:
        y, cols = ctx.xp.conv2d_forward(x, weight, bias, stride, padding)
        ctx.save_for_backward(cols, weight)
        ctx.x_shape, ctx.stride, ctx.padding = x.shape, stride, padding
        return y

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        cols, weight = ctx.saved_tensors
        need_x, _, need_bias = ctx.needs_input_grad[:3]
        dx, dweight, dbias = ctx.xp.conv2d_backward(grad, cols, ctx.x_shape, weight, ctx.stride, ctx.padding, need_x)
        return dx, dweight, (dbias if need_bias else None)


class MaxPool2d(Function):
    backward_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, kernel_size: IntPair, stride: IntPair, padding: IntPair) -> Any:
        y, argmax = ctx.xp.max_pool2d_forward(x, kernel_size, stride, padding)
        ctx.save_for_backward(argmax)
        ctx.x_shape = x.shape
        return y

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (argmax,) = ctx.saved_tensors
        return ctx.xp.max_pool2d_backward(grad, argmax, ctx.x_shape, checked=True)  # the forward's own argmax


class AvgPool2d(Function):
    backward_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, kernel_size: IntPair, stride: IntPair, padding: IntPair) -> Any:
        ctx.x_shape, ctx.geometry = x.shape, (kernel_size, stride, padding)
        return ctx.xp.avg_pool2d_forward(x, kernel_size, stride, padding)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return ctx.xp.avg_pool2d_backward(grad, ctx.x_shape, *ctx.geometry)


def _check_4d(op: str, x: Tensor) -> None:
    if x.ndim != 4:
        raise ValueError(f"{op}: expected a 4-D input (N, C, H, W), got shape {tuple(x.shape)}")


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntPair = 1, padding: IntPair = 0) -> Tensor:
    """Cross-correlation of ``x`` (N, C, H, W) with ``weight`` (O, C, kh, kw), as ``F.conv2d``."""
    _check_4d("conv2d", x)
    if weight.ndim != 4 or weight.shape[1] != x.shape[1]:
        raise ValueError(
            f"conv2d: input has {x.shape[1]} channels (shape {tuple(x.shape)}) but the weight "
            f"{tuple(weight.shape)} expects {weight.shape[1] if weight.ndim == 4 else '?'}"
        )
    return Conv2d.apply(x, weight, bias, stride, padding)


def max_pool2d(x: Tensor, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0) -> Tensor:
    """Max over windows (stride defaults to ``kernel_size``); the first maximum gets the gradient."""
    _check_4d("max_pool2d", x)
    return MaxPool2d.apply(x, kernel_size, stride, padding)


def avg_pool2d(x: Tensor, kernel_size: IntPair, stride: IntPair | None = None, padding: IntPair = 0) -> Tensor:
    """Mean over windows, padded zeros counted (PyTorch's ``count_include_pad=True``)."""
    _check_4d("avg_pool2d", x)
    return AvgPool2d.apply(x, kernel_size, stride, padding)


def adaptive_avg_pool2d(x: Tensor, output_size: IntPair) -> Tensor:
    """Average pooling to ``output_size``; only (1, 1), global average pooling, is supported."""
    _check_4d("adaptive_avg_pool2d", x)
    if output_size not in (1, (1, 1)):
        raise ValueError(f"adaptive_avg_pool2d: only output_size (1, 1) is supported, got {output_size!r}")
    return x.mean(dim=(2, 3), keepdim=True)
