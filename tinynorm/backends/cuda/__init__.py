"""The CUDA backend: the names of :mod:`tinynorm.backends.cpu`, for :class:`CudaArray` device arrays.

Each family lives in its own module and lists its names in ``__all__``; this package gathers them
into the one namespace ops see as ``ctx.xp``. Importing it imports ``numba.cuda`` (``import tinynorm``
never does: the backend is loaded on first use of ``device='cuda'``).
"""
from .array import CudaArray  # noqa: F401

name = "cuda"
ndarray = CudaArray
