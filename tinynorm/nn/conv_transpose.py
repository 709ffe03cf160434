"""``ConvTranspose1d``/``ConvTranspose2d``: learned transposed convolutions (``F.conv_transpose1d/2d``),
with PyTorch's parameters, initialisation, ``output_size`` argument and repr."""
from __future__ import annotations

import math
from typing import Any

from .. import creation
from ..ops.conv_transpose import conv_transpose1d, conv_transpose2d
from ..tensor import Tensor
from . import init
from .module import Module, Parameter


def _tuple(value: Any, dims: int) -> tuple[int, ...]:
    return (value,) * dims if isinstance(value, int) else tuple(value)


class _ConvTransposeNd(Module):
    dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", *, dtype: Any = None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by "
                             f"groups ({groups})")
        n = self.dims
        self.in_channels, self.out_channels, self.groups, self.padding_mode = in_channels, out_channels, groups, "zeros"
        self.kernel_size, self.stride, self.padding = _tuple(kernel_size, n), _tuple(stride, n), _tuple(padding, n)
        self.dilation, self.output_padding = _tuple(dilation, n), _tuple(output_padding, n)
        self.transposed = True
        self.weight = Parameter(creation.empty(in_channels, out_channels // groups, *self.kernel_size, dtype=dtype))
        self.bias = Parameter(creation.empty(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's: kaiming_uniform_(a=sqrt(5)) over the weight's fan-in (Cout / groups times the kernel)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output_padding that gives ``output_size`` (the last dims of it), as PyTorch computes it."""
        if output_size is None:
            return self.output_padding
        wanted = tuple(output_size)[-self.dims:]
        spatial = tuple(input.shape[-self.dims:])
        smallest = tuple((n - 1) * s - 2 * p + d * (k - 1) + 1 for n, s, p, d, k in
                         zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size))
        for want, low, s in zip(wanted, smallest, self.stride):
            if not low <= want < low + s:
                raise ValueError(f"requested an output size of {list(wanted)}, but valid sizes range from "
                                 f"{list(smallest)} to {[lo + s - 1 for lo, s in zip(smallest, self.stride)]} "
                                 f"(for an input of {list(spatial)})")
        return tuple(w - low for w, low in zip(wanted, smallest))

    def extra_repr(self) -> str:
        n = self.dims
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class ConvTranspose2d(_ConvTransposeNd):
    dims = 2

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    dims = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                self._output_padding(input, output_size), self.groups, self.dilation)
