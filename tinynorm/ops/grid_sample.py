"""``F.affine_grid`` and ``F.grid_sample`` for 2-d images, the two halves of a spatial transformer
(Jaderberg et al. 2015), with PyTorch's coordinate conventions.

A grid holds, for every output pixel, the (x, y) position to read in the input, normalized so that -1
and 1 are the input's first and last pixel centres (``align_corners=True``) or its outer edges
(``False``). ``affine_grid`` maps each output position through a 2 x 3 matrix theta; ``grid_sample``
reads the input there: bilinear (the four neighbours, by their distances) or nearest (rounding half to
even, as PyTorch's ``nearbyint``), with positions outside the input read as zeros, clamped to the
border, or reflected. Built from differentiable ops: the gradient reaches the input through the
gathers, and the grid through the bilinear weights.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._checks import check_tensor
from ..tensor import Tensor
from .elementwise import clamp, where
from .linalg import matmul

MODES = ("bilinear", "nearest")
PADDING_MODES = ("zeros", "border", "reflection")


def _base(size: int, align_corners: bool, dtype: Any) -> np.ndarray:
    """The normalized coordinates of ``size`` pixel centres."""
    if align_corners:
        return np.linspace(-1, 1, size).astype(dtype) if size > 1 else np.zeros(1, dtype)
    return ((np.arange(size) * 2 + 1) / size - 1).astype(dtype)


def _corners(align_corners: bool | None) -> bool:
    """``align_corners``, False by default with PyTorch's warning about that default."""
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """(N, H, W, 2) sampling positions theta @ (x, y, 1) for an output of ``size`` (N, C, H, W)."""
    check_tensor("affine_grid", "theta", theta)
    if theta.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D sizes, for 2D affine transformations; got {size}")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {list(size)}. Got "
                         f"{list(theta.shape)}.")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta and size to have the same batch size, got {theta.shape[0]} "
                           f"and {size[0]}")
    n, _, h, w = size
    align_corners = _corners(align_corners)
    xs, ys = np.meshgrid(_base(w, align_corners, theta.dtype), _base(h, align_corners, theta.dtype))
    base = np.stack([xs, ys, np.ones_like(xs)], -1).reshape(1, h * w, 3)
    base_t = Tensor._from_array(theta._backend.from_numpy(base), theta.device)
    return matmul(base_t, theta.transpose(1, 2)).reshape(n, h, w, 2)


def _unnormalize(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coordinate + 1) * ((size - 1) / 2)
    return ((coordinate + 1) * size - 1) / 2


def _host(t: Tensor) -> np.ndarray:
    """``t``'s values on the host: the integer pixel positions are planned there (on the CUDA device the
    host waits for the GPU, as for any data-dependent gather)."""
    return t._backend.to_numpy(t.detach().array)


def _constant(values: np.ndarray, like: Tensor) -> Tensor:
    return Tensor._from_array(like._backend.from_numpy(values), like.device)


def _reflect(coordinate: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``coordinate`` reflected into [twice_low / 2, twice_high / 2] as often as needed (PyTorch's
    reflect_coordinates)."""
    if twice_low == twice_high:
        return coordinate * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (coordinate - low).abs()
    flips = np.floor(_host(distance) / span)
    extra = distance - _constant(flips * span, coordinate)
    return where(_constant(flips % 2 == 0, coordinate), extra + low, -extra + (span + low))


def _source(coordinate: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Pixel coordinates to read, after the padding mode's reflection and clamping."""
    position = _unnormalize(coordinate, size, align_corners)
    if padding_mode == "reflection":
        position = _reflect(position, 0, 2 * (size - 1)) if align_corners else _reflect(position, -1, 2 * size - 1)
    if padding_mode != "zeros":
        position = clamp(position, 0, size - 1)
    return position


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """``input`` (N, C, H, W) read at ``grid`` (N, Ho, Wo, 2) positions: (N, C, Ho, Wo)."""
    check_tensor("grid_sample", "input", input)
    check_tensor("grid_sample", "grid", grid)
    if mode not in MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sample(): expected a 4D input (N, C, H, W) and a grid (N, H_out, W_out, 2) of "
                           f"the same batch size, got {list(input.shape)} and {list(grid.shape)}")
    align_corners = _corners(align_corners)
    n, c, h, w = input.shape
    x = _source(grid[..., 0], w, padding_mode, align_corners)
    y = _source(grid[..., 1], h, padding_mode, align_corners)
    pixels = input.permute(0, 2, 3, 1).reshape(n * h * w, c)  # one row per (sample, pixel)
    batch = (np.arange(n) * h * w).reshape(n, 1, 1)

    def read(column: np.ndarray, row: np.ndarray) -> Tensor:
        """(N, Ho, Wo, C) values at integer pixels (column, row): zeros outside the input."""
        inside = (column >= 0) & (column <= w - 1) & (row >= 0) & (row <= h - 1)
        flat = np.clip(row, 0, h - 1).astype(np.int64) * w + np.clip(column, 0, w - 1).astype(np.int64) + batch
        return where(_constant(inside[..., None], input), pixels[_constant(flat, input)], 0.0)

    if mode == "nearest":
        out = read(np.rint(_host(x)), np.rint(_host(y)))
    else:
        x0, y0 = np.floor(_host(x)), np.floor(_host(y))
        wx1, wy1 = (x - _constant(x0, x)).unsqueeze(-1), (y - _constant(y0, y)).unsqueeze(-1)
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = (read(x0, y0) * (wx0 * wy0) + read(x0 + 1, y0) * (wx1 * wy0)
               + read(x0, y0 + 1) * (wx0 * wy1) + read(x0 + 1, y0 + 1) * (wx1 * wy1))
    return out.permute(0, 3, 1, 2)

