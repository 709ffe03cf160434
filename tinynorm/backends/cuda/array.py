"""``CudaArray``: the array type of the CUDA backend, a view on GPU memory.

A CUDA array is a flat Numba device array (its *storage*) seen through a ``shape``, per-dimension
``strides`` and an ``offset``, both counted in elements. Transposing, broadcasting (stride 0),
basic slicing and reshaping a contiguous array only make a new view; kernels that need C-contiguous
inputs get them from :meth:`CudaArray.as_numba`, which copies only when the view is not contiguous.

It offers the part of numpy's ndarray interface that tinynorm's ops use, so an op's forward and
backward are the same code on both devices.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda

from ...kernels.cuda.strided import copy_strided

Shape = tuple[int, ...]


def contiguous_strides(shape: Shape) -> Shape:
    """The element strides of a C-contiguous array of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class CudaArray:
    """An n-d view (``shape``, ``strides``, ``offset`` in elements) on a flat device ``storage``."""

    __slots__ = ("storage", "shape", "strides", "offset", "dtype")

    def __init__(self, storage: Any, shape: Shape, strides: Shape | None = None, offset: int = 0) -> None:
        self.storage = storage
        self.shape = tuple(int(n) for n in shape)
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(int(s) for s in strides)
        self.offset = int(offset)
        self.dtype = np.dtype(storage.dtype)

    # --------------------------------------------------------------------------- construction
    @classmethod
    def empty(cls, shape: Shape, dtype: Any) -> "CudaArray":
        """A new uninitialised C-contiguous array."""
        shape = tuple(int(n) for n in shape)
        return cls(cuda.device_array(math.prod(shape), dtype=np.dtype(dtype)), shape)

    @classmethod
    def wrap(cls, device_array: Any) -> "CudaArray":
        """A C-contiguous Numba device array (a kernel's result) as a CudaArray, sharing its memory."""
        if not device_array.is_c_contiguous():
            raise ValueError(f"wrap: expected a C-contiguous device array, got strides {device_array.strides}")
        return cls(device_array.reshape(device_array.size), device_array.shape)

    # ------------------------------------------------------------------------------ attributes
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def is_contiguous(self) -> bool:
        """C-contiguous: the elements lie in C order, back to back (size-1 dims may have any stride)."""
        step = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != step:
                return False
            step *= n
        return True

    # ------------------------------------------------------------------------ kernel arguments
    def contiguous(self) -> "CudaArray":
        """This array if it is C-contiguous, else a C-contiguous copy."""
        if self.is_contiguous():
            return self
        out = CudaArray.empty(self.shape, self.dtype)
        copy_strided(out.storage, self.storage, self.offset, self.strides, self.shape)
        return out

    def as_numba(self) -> Any:
        """A C-contiguous Numba device array with these values, to hand to a kernel (a view when
        this array is contiguous already, else a copy)."""
        array = self.contiguous()
        flat = array.storage[array.offset:array.offset + array.size]
        return flat.reshape(array.shape)

    def flat_storage(self) -> Any:
        """The storage from this view's offset on, for kernels that index with ``strided_offset``
        (then pass ``offset=0`` and this array's ``strides``)."""
        return self.storage[self.offset:]
