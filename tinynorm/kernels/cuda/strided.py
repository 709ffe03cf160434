"""Reading arrays of any layout: a flat storage, an offset and per-dimension strides (in elements).

A ``CudaArray`` (``tinynorm.backends.cuda.array``) is a view: transposes, broadcasts (stride 0) and
slices change its shape, strides and offset, never its storage. Kernels that accept such views take
the storage as a 1-D array plus ``offset`` and a ``strides`` tuple, and find the element of each output
position with :func:`strided_offset`. Everything else takes C-contiguous arrays, made by
:func:`copy_strided` when a view is not contiguous already.

Shapes and strides travel as tuples of ints: Numba compiles one variant per number of dimensions.
"""
from __future__ import annotations

from numba import cuda

THREADS = 256


@cuda.jit(device=True)
def strided_offset(index, offset, strides, shape):
    """The storage position of the element at C-order position ``index`` of an array of ``shape``."""
    position = offset
    for d in range(len(shape) - 1, -1, -1):
        position += (index % shape[d]) * strides[d]
        index //= shape[d]
    return position


@cuda.jit
def _copy_kernel(out, source, offset, strides, shape):
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = source[strided_offset(i, offset, strides, shape)]


def blocks_for(size: int, threads: int = THREADS) -> int:
    """Blocks of ``threads`` to cover ``size`` elements, capped: kernels loop with a grid stride."""
    return max(1, min(-(-size // threads), 65535))


def copy_strided(out, source, offset: int, strides: tuple, shape: tuple) -> None:
    """Write the view (``source`` storage, ``offset``, ``strides``) of ``shape`` into the flat ``out``,
    in C order, converting to ``out``'s dtype on the way (a copy is also a cast)."""
    if out.size:
        _copy_kernel[blocks_for(out.size), THREADS](out, source, offset, strides, shape)
