"""``Conv2d`` (the pooling layers are in ``nn/pooling.py``)."""
from __future__ import annotations

import math

from .. import creation
from ..ops import conv as F
from ..tensor import Tensor
from . import init
from .module import Module, Parameter

IntPair = int | tuple[int, int]


def _pair(value: IntPair, name: str, layer: str, minimum: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and v >= minimum for v in pair):
        raise ValueError(f"{layer}: {name} must be an int >= {minimum} or a pair of them, got {value!r}")
    return pair  # type: ignore[return-value]


class Conv2d(Module):
    """2-D convolution (cross-correlation) over (N, C, H, W), with PyTorch's default initialisation:
    weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_channels * kh * kw."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntPair, stride: IntPair = 1,
                 padding: IntPair = 0, bias: bool = True, *, dtype: object = None) -> None:
        super().__init__()
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Conv2d: {name} must be a positive int, got {value!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size, "kernel_size", "Conv2d", 1)
        self.stride = _pair(stride, "stride", "Conv2d", 1)
        self.padding = _pair(padding, "padding", "Conv2d", 0)
        self.weight = Parameter(creation.empty(out_channels, in_channels, *self.kernel_size, dtype=dtype))
        self.bias = Parameter(creation.empty(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_channels * self.kernel_size[0] * self.kernel_size[1])
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"Conv2d: expected input (N, {self.in_channels}, H, W) with {self.in_channels} channels "
                f"(in_channels), got shape {tuple(x.shape)}"
            )
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        return text + ("" if self.bias is not None else ", bias=False")
