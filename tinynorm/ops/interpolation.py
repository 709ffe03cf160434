"""``interpolate`` (resizing), as ``F.interpolate``, with PyTorch's sampling positions.

Each mode is separable: the output is resized one spatial dim at a time, each output position reading
one (nearest), two (linear, bilinear, trilinear) or four (bicubic) input positions with fixed weights.
The positions and weights are computed on the host, in the input's dtype as PyTorch's kernels do (so
ties round the same way), and applied with indexing and weighted sums: differentiable ops that run on
both devices, whose gradient sends each output's gradient back to the inputs it read.

For output position ``o`` along a dim of input size ``L`` and output size ``n``, with ``scale`` the
given 1/scale_factor, or L/n:

- nearest: ``floor(o * scale)``; nearest-exact: ``floor((o + 0.5) * scale)`` (both capped at L - 1).
- linear and cubic: the source coordinate is ``(o + 0.5) * scale - 0.5`` (pixel centres), or
  ``o * (L - 1) / (n - 1)`` with ``align_corners=True`` (the corner pixels' centres line up); linear
  clamps it at 0 and blends the two neighbours, cubic blends four with Keys' kernel (a = -0.75).
- area: adaptive average pooling to the output size.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any

import numpy as np

from ..tensor import Tensor, tensor
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75
MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")


def _output_sizes(input: Tensor, size: Any, scale_factor: Any, recompute: bool | None,
                  mode: str) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """The output's spatial size, and the scale factors that set the sampling positions (None where
    the sizes' ratio does)."""
    dims = input.ndim - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * dims
        if len(sizes) != dims:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {spatial} and output size of {size}. Please provide input "
                             "tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        try:
            return tuple(operator.index(s) for s in sizes), (None,) * dims
        except TypeError:
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], "
                            f"but got size with types {[type(s) for s in sizes]}") from None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    factors = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * dims
    if len(factors) != dims:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please "
                         "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                         "format.")
    sizes = tuple(int(math.floor(n * float(f))) for n, f in zip(spatial, factors))
    if recompute or mode == "area":  # the positions follow the rounded sizes, not the factors
        return sizes, (None,) * dims
    return sizes, tuple(float(f) for f in factors)


def _scale(dtype: np.dtype, size: int, out: int, factor: float | None, align_corners: bool) -> Any:
    """PyTorch's step between sampled input coordinates, in ``dtype``."""
    if align_corners:
        return dtype.type((size - 1) / (out - 1) if out > 1 else 0)
    if factor is not None and factor > 0:
        return dtype.type(1.0 / factor)
    return dtype.type(size) / dtype.type(out)


def _nearest(size: int, out: int, factor: float | None, exact: bool) -> np.ndarray:
    """The input position each output position copies (computed in float32, as PyTorch does)."""
    o = np.arange(out)
    if not exact and out == size:
        return o
    if not exact and out == 2 * size:
        return o >> 1
    scale = _scale(np.dtype(np.float32), size, out, factor, False)
    shift = np.float32(0.5) if exact else np.float32(0)
    return np.minimum(np.floor((o.astype(np.float32) + shift) * scale).astype(np.int64), size - 1)


def _source(dtype: np.dtype, size: int, out: int, factor: float | None, align_corners: bool,
            cubic: bool) -> tuple[np.ndarray, np.ndarray]:
    """The input coordinate each output position samples, split into its integer part (capped at
    L - 1) and the fraction in [0, 1] past it."""
    scale = _scale(dtype, size, out, factor, align_corners)
    o = np.arange(out).astype(dtype)
    if align_corners:
        real = scale * o
    else:
        real = scale * (o + dtype.type(0.5)) - dtype.type(0.5)
        if not cubic:
            real = np.maximum(real, dtype.type(0))
    index = np.minimum(np.floor(real).astype(np.int64), size - 1)
    return index, np.clip(real - index.astype(dtype), 0, 1).astype(dtype)


def _linear_taps(dtype: np.dtype, size: int, out: int, factor: float | None, align_corners: bool) -> list:
    index, fraction = _source(dtype, size, out, factor, align_corners, cubic=False)
    upper = index + (index < size - 1)
    return [(index, 1 - fraction), (upper, fraction)]


def _cubic_taps(dtype: np.dtype, size: int, out: int, factor: float | None, align_corners: bool) -> list:
    """Keys' cubic convolution: weights of the four neighbours index-1 .. index+2 (clamped into the input)."""
    index, t = _source(dtype, size, out, factor, align_corners, cubic=True)
    a = dtype.type(_CUBIC_A)

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    return [(np.clip(index - 1 + j, 0, size - 1), w.astype(dtype)) for j, w in enumerate(weights)]


def _resample(x: Tensor, dim: int, taps: list) -> Tensor:
    """The weighted sum of ``x`` read at each tap's positions along ``dim``."""
    lead = (slice(None),) * dim
    shape = [1] * x.ndim
    shape[dim] = -1
    total = None
    for positions, weights in taps:
        term = x[lead + (positions,)] * tensor(weights.reshape(shape), device=x.device)
        total = term if total is None else total + term
    return total


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of ``input`` (N, C, *spatial) to ``size`` or by ``scale_factor``."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif mode not in MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    align_corners = bool(align_corners)
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by tinynorm")
    dims = input.ndim - 2
    if not 1 <= dims <= 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != dims:
        needs = _MODE_DIMS[mode] + 2
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needs}D input")
    sizes, factors = _output_sizes(input, size, scale_factor, recompute_scale_factor, mode)
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dims - 1](input, sizes)
    if input.dtype.kind != "f" and mode != "nearest":
        raise NotImplementedError(f"interpolate: mode {mode!r} needs a floating-point input, got dtype {input.dtype}")
    x = input
    for axis, (length, out, factor) in enumerate(zip(input.shape[2:], sizes, factors)):
        dim = axis + 2
        if mode in ("nearest", "nearest-exact"):
            x = x[(slice(None),) * dim + (_nearest(length, out, factor, mode == "nearest-exact"),)]
        elif mode == "bicubic":
            x = _resample(x, dim, _cubic_taps(input.dtype, length, out, factor, align_corners))
        else:
            x = _resample(x, dim, _linear_taps(input.dtype, length, out, factor, align_corners))
    return x


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate` (with PyTorch's warning)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
