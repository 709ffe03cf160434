"""Host data in and out of the CUDA kernel wrappers, for the simulator tests.

The wrappers take and return ``CudaArray``s only; tests write their inputs as numpy arrays.
:func:`on_device` wraps a wrapper so that its numpy arguments are copied to the device first (a list or
tuple of them, item by item), and :func:`host` copies a result back.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tinynorm.backends.cuda.array import CudaArray


def to_device(value: Any) -> Any:
    """``value`` with every numpy array in it copied to the device (lists and tuples item by item)."""
    if isinstance(value, np.ndarray):
        return CudaArray.from_host(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map(to_device, value))
    return value


def on_device(function: Any) -> Any:
    """``function`` called with its numpy arguments copied to the device."""
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        return function(*map(to_device, args), **{key: to_device(value) for key, value in kwargs.items()})

    return call


def host(array: Any) -> np.ndarray:
    """A device result as a host array (``None`` stays ``None``)."""
    return None if array is None else array.to_numpy()


class OnDevice:
    """A module whose functions are called through :func:`on_device` (``OnDevice(conv).im2col(host_x, ...)``);
    its other attributes as they are."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        return on_device(value) if callable(value) and not isinstance(value, type) else value
