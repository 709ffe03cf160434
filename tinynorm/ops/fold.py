"""``F.unfold`` (im2col) and its adjoint ``F.fold`` (col2im), as PyTorch defines them for 2-d planes.

unfold: (N, C, H, W) -> (N, C kh kw, L), column l holding the kh x kw block at the l-th position of a
sliding window (``dilation``, ``padding`` with zeros, ``stride``), L = the number of positions.
fold: (N, C kh kw, L) -> (N, C, H, W) sums every block back into its place, so overlapping blocks add
up: fold is the adjoint of unfold (their gradients are each other). Both read one host-made plan of
positions into the zero-padded plane; unbatched (C, H, W) and (C kh kw, L) inputs are accepted.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._checks import check_tensor
from ..autograd.function import Context, Function
from ..tensor import Tensor
from .padding import pad


def _pair(value: Any, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise TypeError(f"{name} must be an int or a pair of ints, got {value!r}")
    return pair


@functools.lru_cache(maxsize=128)
def _plan(size: tuple, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple, op: str
          ) -> tuple[np.ndarray, tuple[int, int], tuple[int, int]]:
    """(kh kw, L) flat positions into the zero-padded plane read by each block, the number of blocks
    along each dim, and the padded plane's size; PyTorch's errors for impossible geometries."""
    if min(kernel) <= 0 or min(dilation) <= 0 or min(stride) <= 0 or min(padding) < 0:
        raise RuntimeError(f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, "
                           f"got kernel_size={kernel}, dilation={dilation}, padding={padding}, stride={stride}")
    padded = tuple(s + 2 * p for s, p in zip(size, padding))
    blocks = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, d, s in zip(padded, kernel, dilation, stride))
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, calculated shape of the array of sliding blocks as {blocks}, but "
                           "its components must be at least one.")
    rows = np.arange(kernel[0])[:, None] * dilation[0] + np.arange(blocks[0])[None, :] * stride[0]
    cols = np.arange(kernel[1])[:, None] * dilation[1] + np.arange(blocks[1])[None, :] * stride[1]
    flat = rows[:, None, :, None] * padded[1] + cols[None, :, None, :]  # (kh, kw, OH, OW)
    return flat.reshape(kernel[0] * kernel[1], blocks[0] * blocks[1]), blocks, padded


class Col2Im(Function):
    """(N, C, K, L) blocks summed into a zero (N, C, P) plane at the plan's positions (K, L)."""

    backward_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx: Context, blocks: Any, index: Any, plane: int) -> Any:
        ctx.index = index
        n, c = blocks.shape[:2]
        return ctx.xp.index_add((n, c, plane), (slice(None), slice(None), index), blocks)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        return grad[:, :, ctx.index], None, None


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """The sliding kh x kw blocks of ``input`` (N, C, H, W) as columns (N, C kh kw, L)."""
    check_tensor("unfold", "input", input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor for input, but got: {list(input.shape)}")
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    kernel, dilation, padding, stride = (_pair(v, name) for v, name in ((kernel_size, "kernel_size"),
                                         (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    index, _, _ = _plan(tuple(input.shape[2:]), kernel, dilation, padding, stride, "unfold")
    n, c = input.shape[:2]
    plane = pad(input, (padding[1], padding[1], padding[0], padding[0])).flatten(2)
    return plane[:, :, input._backend.from_numpy(index)].reshape(n, c * index.shape[0], index.shape[1])


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Columns (N, C kh kw, L) summed back into an (N, C, H, W) plane, H x W = ``output_size``."""
    check_tensor("fold", "input", input)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input, but got: {list(input.shape)}")
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding, stride).squeeze(0)
    size, kernel, dilation, padding, stride = (_pair(v, name) for v, name in (
        (output_size, "output_size"), (kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"),
        (stride, "stride")))
    index, blocks, padded = _plan(size, kernel, dilation, padding, stride, "fold")
    n, rows, length = input.shape
    if rows % index.shape[0]:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={rows} and kernel_size={kernel}")
    if length != index.shape[1]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {index.shape[1]}, but "
                           f"got input.size(2)={length}.")
    channels = rows // index.shape[0]
    columns = input.reshape(n, channels, index.shape[0], length)
    plane = Col2Im.apply(columns, input._backend.from_numpy(index), padded[0] * padded[1]).reshape(n, channels, *padded)
    return plane[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]
