"""Compositions over average pooling, written as ``torch.nn.functional`` writes them:

* ``lp_pool1d/2d``: the p-norm of each window, (sum x^p)^(1/p) = (k * avg_pool(x^p))^(1/p);
* ``local_response_norm`` (AlexNet's LRN): x / (k + alpha * mean over ``size`` neighbouring channels
  of x^2)^beta.
"""
from __future__ import annotations

import math
from typing import Any

from .._checks import check_tensor
from ..tensor import Tensor
from .elementwise import relu, where
from .padding import pad
from .pooling import avg_pool1d, avg_pool2d, avg_pool3d


def _lp_pool(input: Tensor, norm_type: float, kernel: tuple, pooled: Tensor) -> Tensor:
    """(k * pooled)^(1/p), through PyTorch's sign(pooled) * relu(|pooled|) (pooled itself, whose
    gradient is 0 where it is 0)."""
    sign = where(pooled > 0, 1.0, 0.0) - where(pooled < 0, 1.0, 0.0)
    return (sign * relu(pooled.abs()) * math.prod(kernel)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """The ``norm_type``-norm of each window of (N, C, L) or (C, L) input."""
    check_tensor("lp_pool1d", "input", input)
    kernel = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
    pooled = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp_pool(input, norm_type, kernel, pooled)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """The ``norm_type``-norm of each window of (N, C, H, W) or (C, H, W) input."""
    check_tensor("lp_pool2d", "input", input)
    kernel = (kernel_size,) * 2 if isinstance(kernel_size, int) else tuple(kernel_size)
    pooled = avg_pool2d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp_pool(input, norm_type, kernel, pooled)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` channels around each)^beta, for (N, C, *) input."""
    check_tensor("local_response_norm", "input", input)
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    squares = input * input
    if input.ndim == 3:
        window = pad(squares.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        mean = avg_pool2d(window, (size, 1), stride=1).squeeze(1)
    else:
        shape = tuple(input.shape)
        window = pad(squares.reshape(shape[0], 1, shape[1], shape[2], -1), (0, 0, 0, 0, size // 2, (size - 1) // 2))
        mean = avg_pool3d(window, (size, 1, 1), stride=1).squeeze(1).reshape(shape)
    return input / (mean * alpha + k) ** beta
