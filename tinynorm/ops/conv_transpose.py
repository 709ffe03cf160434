"""``F.conv_transpose1d``/``conv_transpose2d``: the adjoint (gradient w.r.t. the input) of a convolution,
the "deconvolution" that upsamples in DCGAN generators and decoders.

Each input pixel scatters a weighted kernel into the output: with x (N, Cin, H, W) and weight
(Cin, Cout / groups, kh, kw), per group

    columns = weight^T x      (N, Cout kh kw, H W), one matrix product
    y = fold(columns)          each column summed into its kh x kw block of the output,

where fold (col2im, ``ops/fold.py``) uses the convolution's stride and dilation on the plane the
blocks reach, (H - 1) stride + dilation (k - 1) + 1, which is then cropped by ``padding`` at both
ends; ``output_padding`` keeps that many more rows/columns at the end. Built from
differentiable ops, so the gradients are autograd's.
"""
from __future__ import annotations

from typing import Any

from .._checks import check_tensor
from ..tensor import Tensor
from .fold import _pair, fold
from .linalg import matmul
from .padding import pad
from .shape import cat


def _output_sizes(size: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                  output_padding: tuple) -> tuple[int, int]:
    for extra, s, d in zip(output_padding, stride, dilation):
        if extra >= max(s, d):
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    out = tuple((n - 1) * s - 2 * p + d * (k - 1) + e + 1
                for n, k, s, p, d, e in zip(size, kernel, stride, padding, dilation, output_padding))
    if min(out) < 1:
        raise RuntimeError(f"Given input size per channel: {list(size)}. Calculated output size per channel: "
                           f"{list(out)}. Output size is too small")
    return out


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed convolution of ``input`` (N, Cin, H, W) or (Cin, H, W) with ``weight``
    (Cin, Cout / groups, kh, kw)."""
    check_tensor("conv_transpose2d", "input", input)
    check_tensor("conv_transpose2d", "weight", weight)
    if input.ndim == 3:
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                                dilation).squeeze(0)
    if input.ndim != 4 or weight.ndim != 4:
        raise RuntimeError(f"conv_transpose2d: expected a 3D or 4D input and a 4D weight, got input of shape "
                           f"{list(input.shape)} and weight of shape {list(weight.shape)}")
    stride, padding, dilation = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    output_padding = _pair(output_padding, "output_padding")
    batch, channels, height, width = input.shape
    if channels != weight.shape[0] or channels % groups:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[0]} channels, but got {channels} channels "
                           "instead")
    kernel = tuple(weight.shape[2:])
    size = _output_sizes((height, width), kernel, stride, padding, dilation, output_padding)
    reached = tuple((n - 1) * s + d * (k - 1) + 1 for n, s, d, k in zip((height, width), stride, dilation, kernel))
    per_group_in, per_group_out = channels // groups, weight.shape[1]
    outputs = []
    for g in range(groups):
        x = input[:, g * per_group_in:(g + 1) * per_group_in].reshape(batch, per_group_in, height * width)
        w = weight[g * per_group_in:(g + 1) * per_group_in].reshape(per_group_in, -1)  # (Cin/g, Cout/g kh kw)
        columns = matmul(w.transpose(0, 1), x)  # (N, Cout/g kh kw, H W)
        outputs.append(fold(columns, reached, kernel, dilation, 0, stride))
    y = outputs[0] if groups == 1 else cat(outputs, 1)
    # The output is the plane every block reaches, cropped by padding at both ends; output_padding
    # keeps that many more at the end, zeros where no block reaches.
    y = y[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]
    missing = [n - m for n, m in zip(size, y.shape[2:])]
    if any(missing):
        y = pad(y, (0, missing[1], 0, missing[0]))
    return y if bias is None else y + bias.reshape(1, groups * per_group_out, 1, 1)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """The transposed convolution of ``input`` (N, Cin, L) or (Cin, L) with ``weight`` (Cin, Cout / groups, k):
    the 2-d one on a plane of height 1."""
    check_tensor("conv_transpose1d", "input", input)
    check_tensor("conv_transpose1d", "weight", weight)

    def single(value: Any, name: str) -> int:
        value = value if isinstance(value, int) else tuple(value)
        if isinstance(value, tuple):
            if len(value) != 1:
                raise TypeError(f"{name} must be an int or a 1-tuple, got {value!r}")
            value = value[0]
        return value

    stride, padding, dilation = single(stride, "stride"), single(padding, "padding"), single(dilation, "dilation")
    extra = single(output_padding, "output_padding")
    y = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, stride), (0, padding), (0, extra),
                         groups, (1, dilation))
    return y.squeeze(-2)
