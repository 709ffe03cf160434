"""Helpers shared by the CUDA kernel wrappers: argument checks, new arrays and grid sizes.

The wrappers take and return :class:`~tinynorm.backends.cuda.array.CudaArray` and check their arrays
before launching, so a bad argument gives the same clear ``TypeError``/``ValueError`` as the CPU
wrappers instead of a Numba typing error. As on the CPU, an input that is not C-contiguous is copied
(``contiguous()``); an array written in place (``out``, running statistics) must be C-contiguous.
The CUDA backend's names are these wrappers themselves, so an array is checked once on its way from
an op to a kernel; why the wrappers check at all (they are public, and a GPU kernel given mismatched
shapes reads and writes out of bounds) is in :mod:`tinynorm.kernels.cpu._shared`.

Data (``x``, ``dy``, outputs) of the norms is float16 or float32; everything computed from it
(statistics, affine parameters, their gradients) is float32, and all arithmetic is float32.
"""
from __future__ import annotations

from functools import cache

import numpy as np
from ...backends.cuda.runtime.compiler import cuda

from ...backends.cuda.array import CudaArray

DATA_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))
PARAM_DTYPE = np.dtype(np.float32)

# Resident blocks per SM a persistent grid aims for, and the SM count assumed where the simulator
# cannot say (an H200 has 132).
BLOCKS_PER_SM = 8
DEFAULT_SM_COUNT = 132

empty = CudaArray.empty


def check_array(name: str, array: object) -> CudaArray:
    """``array``, C-contiguous (a copy when it is a strided view), after checking it is a CudaArray."""
    if not isinstance(array, CudaArray):
        raise TypeError(f"{name} must be a CudaArray, got {type(array).__name__} (copy host data to the device "
                        f"first)")
    return array.contiguous()


def check_contiguous(name: str, array: CudaArray) -> None:
    """Raise a ``ValueError`` naming ``array`` unless it is C-contiguous (for arrays written in place)."""
    if not array.is_contiguous():
        raise ValueError(f"{name} must be C-contiguous, got strides {array.strides} for shape {array.shape}")


def check_input(name: str, array: object, ndim: int, axes: str) -> CudaArray:
    """``array`` as a C-contiguous float16/float32 ``ndim``-D CudaArray, after checking it is one."""
    array = check_array(name, array)
    if array.dtype not in DATA_DTYPES:
        raise TypeError(f"{name} has dtype {array.dtype}, but the CUDA norm kernels take float16 or float32 "
                        f"data (statistics and arithmetic in float32): {name} must have dtype float16 or "
                        f"float32, got {array.dtype}; convert it with .float(), or normalize float64 on the CPU")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {axes}, got shape {array.shape}")
    return array


def check_like(name: str, array: object, shape: tuple[int, ...], dtype: np.dtype, of: str = "x") -> CudaArray:
    """``array`` as a C-contiguous CudaArray, after checking it has this exact shape and dtype."""
    array = check_array(name, array)
    if array.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype} (the dtype of {of}), got {array.dtype}")
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    return array


def check_param(name: str, array: object | None, shape: tuple[int, ...]) -> CudaArray | None:
    """A float32 parameter or statistic of this shape; ``None`` stays ``None``.

    The kernels test ``weight is None`` at compile time, so a missing affine parameter costs neither
    an array of ones nor a memory read.
    """
    if array is None:
        return None
    return check_like(name, array, shape, PARAM_DTYPE, of="the parameters and statistics: float32")


def check_stat(name: str, array: object, shape: tuple[int, ...]) -> CudaArray:
    """A float32 statistic (mean, rstd, ...) of this shape; unlike a parameter, required."""
    if array is None:
        raise TypeError(f"{name} must be a float32 array of shape {shape}, got None")
    return check_param(name, array, shape)


def output(out: object | None, shape: tuple[int, ...], dtype: np.dtype) -> CudaArray:
    """``out`` after checking it can receive the result, or a new array when it is None."""
    if out is None:
        return empty(shape, dtype)
    if not isinstance(out, CudaArray):
        raise TypeError(f"out must be a CudaArray (a host array would receive nothing), got {type(out).__name__}")
    if out.shape != shape or out.dtype != dtype:
        raise ValueError(f"out must be an array of shape {shape} and dtype {dtype}, got {out.shape} {out.dtype}")
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
