"""Functions that make new tensors: ``zeros``, ``ones``, ``full``, ``empty``, ``arange``, ``randn``, ``rand``."""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .backends import get_backend
from .random import default_generator
from .tensor import Tensor, resolve_device

__all__ = [
    "zeros", "ones", "full", "empty", "arange", "randn", "rand",
    "zeros_like", "ones_like", "full_like", "empty_like", "randn_like", "rand_like",
]


def _shape(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if not all(isinstance(n, (int, np.integer)) and n >= 0 for n in size):
        raise ValueError(f"size must be non-negative integers, got {size}")
    return tuple(int(n) for n in size)


def _make(array: np.ndarray, requires_grad: bool, device: Any) -> Tensor:
    """A tensor on ``device`` holding host values ``array`` (copied to the device when not the CPU)."""
    device = resolve_device(device)
    result = Tensor._from_array(get_backend(device).from_numpy(array), device)
    return result.requires_grad_(True) if requires_grad else result


def _fill(name: str, size: tuple, dtype: Any, requires_grad: bool, device: Any, *fill_value: Any) -> Tensor:
    """A tensor made by the backend's ``zeros``/``ones``/``empty``/``full`` on the device itself."""
    device = resolve_device(device)
    array = getattr(get_backend(device), name)(_shape(size), *fill_value, dtype=_dtype_or_default(dtype))
    result = Tensor._from_array(array, device)
    return result.requires_grad_(True) if requires_grad else result


def _dtype_or_default(dtype: Any) -> np.dtype:
    return dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = "cpu") -> Tensor:
    return _fill("zeros", size, dtype, requires_grad, device)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = "cpu") -> Tensor:
    return _fill("ones", size, dtype, requires_grad, device)


def empty(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = "cpu") -> Tensor:
    return _fill("empty", size, dtype, requires_grad, device)


def full(size: Any, fill_value: float, dtype: Any = None, requires_grad: bool = False, device: Any = "cpu") -> Tensor:
    if dtype is None:
        dtype = dtypes.int64 if isinstance(fill_value, (int, np.integer)) and not isinstance(fill_value, bool) else None
    return _fill("full", (size,), dtype, requires_grad, device, fill_value)


def arange(start: float, end: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False, device: Any = "cpu") -> Tensor:
    """Values from ``start`` to ``end`` (exclusive); int64 when all arguments are ints, as PyTorch."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = dtypes.int64 if is_int else dtypes.get_default_dtype()
    return _make(np.arange(start, end, step, dtype=dtypes.as_dtype(dtype)), requires_grad, device)


def randn(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = "cpu",
          generator: np.random.Generator | None = None) -> Tensor:
    """Standard normal samples from the global generator (see ``tinynorm.manual_seed``)."""
    gen = generator or default_generator()
    return _make(gen.standard_normal(_shape(size)).astype(_dtype_or_default(dtype)), requires_grad, device)


def rand(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = "cpu",
         generator: np.random.Generator | None = None) -> Tensor:
    """Uniform samples in [0, 1) from the global generator."""
    gen = generator or default_generator()
    return _make(gen.random(_shape(size)).astype(_dtype_or_default(dtype)), requires_grad, device)


def _like(fn: Any, other: Tensor, dtype: Any, requires_grad: bool, **kwargs: Any) -> Tensor:
    return fn(*other.shape, dtype=dtype or other.dtype, requires_grad=requires_grad, device=other.device, **kwargs)


def zeros_like(other: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(zeros, other, dtype, requires_grad)


def ones_like(other: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(ones, other, dtype, requires_grad)


def empty_like(other: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(empty, other, dtype, requires_grad)


def randn_like(other: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(randn, other, dtype, requires_grad)


def rand_like(other: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return _like(rand, other, dtype, requires_grad)


def full_like(other: Tensor, fill_value: float, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return full(other.shape, fill_value, dtype=dtype or other.dtype, requires_grad=requires_grad, device=other.device)
