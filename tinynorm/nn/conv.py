"""``Conv1d`` and ``Conv2d`` (the pooling layers are in ``nn/pooling.py``)."""
from __future__ import annotations

import math
from typing import Any

from .. import creation
from ..ops.conv import PADDING_MODES, padded_convolution
from ..tensor import Tensor
from . import init
from .module import Module, Parameter



def _ntuple(value: Any, size: int, name: str, layer: str, minimum: int) -> tuple[int, ...]:
    """An int or a ``size``-sequence of ints >= ``minimum`` as a tuple, as PyTorch's ``_pair``."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * size
    if len(items) != size or not all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in items):
        raise ValueError(f"{layer}: {name} must be an int >= {minimum} or a tuple of {size} of them, got {value!r}")
    return items


class _ConvNd(Module):
    """Shared by Conv1d and Conv2d: PyTorch's constructor checks, attributes, initialisation and repr.

    weight (out_channels, in_channels / groups, *kernel_size) and bias (out_channels,) start as PyTorch's:
    kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels / groups
    * prod(kernel_size), for both.
    """

    spatial_dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: object = None, dtype: object = None) -> None:
        super().__init__()
        name, dims = type(self).__name__, self.spatial_dims
        for label, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}: {label} must be a positive int, got {value!r}")
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.kernel_size = _ntuple(kernel_size, dims, "kernel_size", name, 1)
        self.stride = _ntuple(stride, dims, "stride", name, 1)
        self.dilation = _ntuple(dilation, dims, "dilation", name, 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of ['same', 'valid']")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding: tuple[int, ...] | str = padding
        else:
            self.padding = _ntuple(padding, dims, "padding", name, 0)
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        self.in_channels, self.out_channels, self.groups, self.padding_mode = (
            in_channels, out_channels, groups, padding_mode)
        self.transposed, self.output_padding = False, (0,) * dims
        kwargs = {"dtype": dtype, "device": "cpu" if device is None else device}
        self.weight = Parameter(creation.empty(out_channels, in_channels // groups, *self.kernel_size, **kwargs))
        self.bias = Parameter(creation.empty(out_channels, **kwargs)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        return padded_convolution(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                                    self.groups, self.padding_mode)

    def extra_repr(self) -> str:
        dims = self.spatial_dims
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D convolution (cross-correlation) over (N, C, L) or (C, L), as ``torch.nn.Conv1d``."""

    spatial_dims = 1


class Conv2d(_ConvNd):
    """2-D convolution (cross-correlation) over (N, C, H, W) or (C, H, W), as ``torch.nn.Conv2d``."""

    spatial_dims = 2
