"""Helpers shared by the CUDA wrappers: argument checks, device arrays and grid sizes.

The wrappers check everything before launching, so a bad argument gives the same clear
``TypeError``/``ValueError`` as the CPU wrappers instead of a Numba typing error. Inputs may be Numba
device arrays, any object with ``__cuda_array_interface__`` (a PyTorch CUDA tensor, detached), or host
numpy arrays, which are copied to the device (convenient for tests, slow for real work).

Data (``x``, ``dy``, outputs) is float16 or float32; everything computed from it (statistics, affine
parameters, their gradients) is float32, and all arithmetic is float32.
"""
from __future__ import annotations

from functools import cache

import numpy as np
from numba import cuda

from ..cpu._shared import check_eps as _check_eps
from . import memory

DATA_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))
PARAM_DTYPE = np.dtype(np.float32)

# Resident blocks per SM a persistent grid aims for, and the SM count assumed where the simulator
# cannot say (an H200 has 132).
BLOCKS_PER_SM = 8
DEFAULT_SM_COUNT = 132


def on_device(name: str, array: object):
    """``array`` as a Numba device array; host numpy arrays are copied to the device."""
    if hasattr(array, "copy_to_host"):  # already a Numba device array (or the simulator's stand-in)
        return array
    if hasattr(array, "__cuda_array_interface__"):
        return cuda.as_cuda_array(array)
    if isinstance(array, np.ndarray):
        return memory.to_device(array)
    raise TypeError(f"{name} must be a numpy.ndarray or a CUDA device array, got {type(array).__name__}")


def check_contiguous(name: str, array) -> None:
    """Raise a ``ValueError`` naming ``array`` unless it is C-contiguous."""
    if not array.is_c_contiguous():
        raise ValueError(f"{name} must be C-contiguous, got strides {array.strides} for shape {array.shape}")


def check_input(name: str, array: object, ndim: int, axes: str):
    """``array`` on the device after checking it is a float16/float32 ``ndim``-D C-contiguous array."""
    array = on_device(name, array)
    if array.dtype not in DATA_DTYPES:
        raise TypeError(f"{name} must have dtype float16 or float32, got {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {axes}, got shape {array.shape}")
    check_contiguous(name, array)
    return array


def check_like(name: str, array: object, shape: tuple[int, ...], dtype: np.dtype, of: str = "x"):
    """``array`` on the device after checking it has this exact shape and dtype and is C-contiguous."""
    array = on_device(name, array)
    if array.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype} (the dtype of {of}), got {array.dtype}")
    if tuple(array.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(array.shape)}")
    check_contiguous(name, array)
    return array


def check_param(name: str, array: object | None, shape: tuple[int, ...]):
    """A float32 parameter or statistic of this shape on the device; ``None`` stays ``None``.

    The kernels test ``weight is None`` at compile time, so a missing affine parameter costs neither
    an array of ones nor a memory read.
    """
    if array is None:
        return None
    return check_like(name, array, shape, PARAM_DTYPE, of="the parameters and statistics: float32")


def check_stat(name: str, array: object, shape: tuple[int, ...]):
    """A float32 statistic (mean, rstd, ...) of this shape on the device; unlike a parameter, required."""
    if array is None:
        raise TypeError(f"{name} must be a float32 array of shape {shape}, got None")
    return check_param(name, array, shape)


def check_eps(eps: float) -> np.float32:
    """``eps`` as a float32 scalar: a Python float would make the kernels compute in float64."""
    return _check_eps(eps, PARAM_DTYPE)


def output(out: object | None, shape: tuple[int, ...], dtype: np.dtype):
    """``out`` after checking it can receive the result, or a new device array when it is None."""
    if out is None:
        return memory.empty(shape, dtype=dtype)
    if isinstance(out, np.ndarray):
        raise TypeError("out must be a CUDA device array (a host array would receive nothing), got numpy.ndarray")
    out = on_device("out", out)
    if tuple(out.shape) != shape or out.dtype != dtype:
        raise ValueError(f"out must be a device array of shape {shape} and dtype {dtype}, "
                         f"got {tuple(out.shape)} {out.dtype}")
    check_contiguous("out", out)
    return out


@cache
def sm_count() -> int:
    """Streaming multiprocessors on the current device (an H200's count in the simulator)."""
    return getattr(cuda.get_current_device(), "MULTIPROCESSOR_COUNT", None) or DEFAULT_SM_COUNT


def grid_size(units: int, per_block: int, per_sm: int = BLOCKS_PER_SM) -> int:
    """Blocks for ``units`` of work, ``per_block`` per block: a persistent grid of at most
    ``per_sm`` blocks per SM, each looping over its share (at least one block)."""
    return max(1, min(-(-units // per_block), per_sm * sm_count()))
