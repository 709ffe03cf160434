"""2-D convolution over NCHW tensors (pooling is in ``ops/pooling.py``).

Convolution is im2col + one GEMM: every kernel-sized patch of the input becomes a column, so the
convolution is ``weight (O, C*kh*kw) @ cols (C*kh*kw, OH*OW)`` per sample. Its backward is two more
GEMMs: dweight = dy @ cols^T, and dcols = weight^T @ dy folded back onto the input by col2im (the
adjoint of im2col, which adds overlapping patches). The kernels are in tinynorm/kernels/cpu/conv.py.
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
