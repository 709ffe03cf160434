"""Random numbers for the CUDA backend: ``random_uniform``, drawn on the GPU (dropout masks).

The GPU kernel (:mod:`tinynorm.kernels.cuda.random`, Philox4x32-10) needs only a 64-bit key; that key
is drawn from the numpy generator passed in, which is tinynorm's global generator for dropout. So
``tinynorm.manual_seed`` makes CUDA runs reproducible too, and each call gets a fresh key, hence fresh
numbers. The numbers differ from the CPU backend's for the same seed (a different generator), and do
not depend on the GPU or the launch shape.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...kernels.cuda.random import RANDOM_BITS, uniform_
from .array import CudaArray

__all__ = ["random_uniform"]


def random_uniform(generator: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> CudaArray:
    """A new array of ``shape`` with independent uniform values in ``[0, 1)`` of ``dtype`` (float16,
    float32 or float64), keyed by two 32-bit ints drawn from ``generator``."""
    dtype = np.dtype(dtype)
    if dtype not in RANDOM_BITS:
        raise TypeError(f"random_uniform: dtype must be float16, float32 or float64, got {dtype}")
    out = CudaArray.empty(shape, dtype)
    key0, key1 = (int(key) for key in generator.integers(0, 2**32, size=2, dtype=np.uint64))
    uniform_(out.storage, key0, key1)
    return out
