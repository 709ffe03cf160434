"""Shuffles: ``pixel_shuffle`` and its inverse ``pixel_unshuffle`` (Shi et al. 2016, sub-pixel
convolution): (*, C r^2, H, W) <-> (*, C, H r, W r), channel c r^2 + i r + j going to pixel
(h r + i, w r + j); ``channel_shuffle`` (ShuffleNet, Zhang et al. 2018): the channels of g groups
interleaved. Reshapes and permutations, so the gradient is autograd's (PyTorch's node names differ:
docs/differences.md)."""
from __future__ import annotations

from .._checks import check_tensor
from ..tensor import Tensor


def _check(input: Tensor, factor: int, op: str, name: str) -> None:
    check_tensor(op, "input", input)
    if not isinstance(factor, int) or factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor!r}")
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.ndim} "
                           "dimension(s)")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r), r = ``upscale_factor``."""
    _check(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    r = upscale_factor
    *lead, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, channels // (r * r), r, r, height, width)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)  # (*, C, H, r, W, r)
    return x.reshape(*lead, channels // (r * r), height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W), r = ``downscale_factor``."""
    _check(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    r = downscale_factor
    *lead, channels, height, width = input.shape
    for size, name, dim in ((height, "height", -2), (width, "width", -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={size} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, channels, height // r, r, width // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)  # (*, C, r, r, H / r, W / r)
    return x.reshape(*lead, channels * r * r, height // r, width // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, g k, *) -> (N, k g, *): channel i k + j of group i goes to position j g + i."""
    check_tensor("channel_shuffle", "input", input)
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    batch, channels, *spatial = input.shape
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} "
                           "groups.")
    x = input.reshape(batch, groups, channels // groups, *spatial).transpose(1, 2)
    return x.reshape(batch, channels, *spatial)
