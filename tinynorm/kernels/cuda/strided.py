"""Reading arrays of any layout: a flat storage, an offset and per-dimension strides (in elements).

A ``CudaArray`` (``tinynorm.backends.cuda.array``) is a view: transposes, broadcasts (stride 0) and
slices change its shape, strides and offset, never its storage. Kernels that accept such views take
the storage as a 1-D array plus ``offset`` and a ``strides`` tuple, and find the element of each output
position with :func:`strided_offset`. Everything else takes C-contiguous arrays, made by
:func:`copy_strided` when a view is not contiguous already.

Shapes and strides travel as tuples of ints: Numba compiles one variant per number of dimensions.
:func:`collapse_dims` merges the dimensions that all arrays of a launch step through evenly, so a
contiguous (or uniformly strided) operation runs as a 1-d one: fewer divisions per element in
:func:`strided_offset` and fewer compiled variants. :func:`fill` and :func:`zeros` set flat arrays on
the device, and :func:`error_flag` gives kernels the flag they set on bad input.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from ...backends.cuda.runtime.compiler import cuda

from ...backends.cuda.runtime.launch import jit, launch
from ...backends.cuda.array import CudaArray
from ._shared import empty

THREADS = 256
WARP = 32


@cuda.jit(device=True)
def strided_offset(index, offset, strides, shape):
    """The storage position of the element at C-order position ``index`` (< the size) of an array of
    ``shape``. What is left of ``index`` after the inner dimensions is the first one's coordinate, so a
    1-d (collapsed contiguous) array costs no integer division at all."""
    position = offset
    for d in range(len(shape) - 1, 0, -1):
        position += (index % shape[d]) * strides[d]
        index //= shape[d]
    return position + index * strides[0]


@jit
def _copy_kernel(out, source, offset, strides, shape):
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, out.size, step):
        out[i] = source[strided_offset(i, offset, strides, shape)]


def blocks_for(size: int, threads: int = THREADS) -> int:
    """Blocks of ``threads`` to cover ``size`` elements, capped: kernels loop with a grid stride."""
    return max(1, min(-(-size // threads), 65535))


def threads_for(size: int) -> int:
    """Threads per block for ``size`` elements: ``THREADS``, or fewer whole warps for a small array
    (no idle threads on the GPU for tiny launches, and far fewer simulated threads in the simulator)."""
    return min(THREADS, max(WARP, -(-size // WARP) * WARP))


def collapse_dims(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[tuple, list[tuple]]:
    """``shape`` and each array's ``strides`` with mergeable dimensions merged: the same elements in
    the same C order, in as few dimensions as possible (at least one).

    Size-1 dimensions are dropped, and dimension ``d`` merges into ``d + 1`` when every array steps
    over ``d`` exactly as far as over all of ``d + 1`` (``strides[d] == strides[d + 1] * shape[d + 1]``),
    which holds for contiguous runs and for broadcast (stride-0) runs alike.
    """
    kept = [d for d, n in enumerate(shape) if n != 1]
    if not kept:
        return (1,), [(0,) for _ in strides]
    sizes = [shape[kept[0]]]
    steps = [[s[kept[0]]] for s in strides]
    for d in kept[1:]:
        n = shape[d]
        if all(step[-1] == s[d] * n for step, s in zip(steps, strides)):
            sizes[-1] *= n
            for step, s in zip(steps, strides):
                step[-1] = s[d]
        else:
            sizes.append(n)
            for step, s in zip(steps, strides):
                step.append(s[d])
    return tuple(sizes), [tuple(step) for step in steps]


def copy_strided(out, source, offset: int, strides: tuple, shape: tuple) -> None:
    """Write the view (``source`` storage, ``offset``, ``strides``) of ``shape`` into the flat ``out``,
    in C order, converting to ``out``'s dtype on the way (a copy is also a cast)."""
    if out.size:
        shape, (strides,) = collapse_dims(shape, [strides])
        launch(_copy_kernel, blocks_for(out.size), threads_for(out.size), (out, source, offset, strides, shape))


@jit
def _fill_kernel(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


def fill(out, value) -> None:
    """Set every element of the flat device array ``out`` to ``value`` (converted to its dtype first)."""
    if out.size:
        launch(_fill_kernel, blocks_for(out.size), THREADS, (out, np.dtype(out.dtype).type(value)))


def zeros(size: int, dtype):
    """A new 1-D device array of ``size`` zeros (flags, counters), filled by a kernel: copying zeros from
    the host would make the host wait for the GPU ("for transfers from pageable host memory to device
    memory, a stream sync is performed before the copy is initiated", CUDA Runtime API, API
    synchronization behavior)."""
    out = empty(size, dtype)
    fill(out, 0)
    return out


def error_flag(dtype, read: bool = True):
    """The 1-element flag a kernel sets when it meets bad input (an index out of range). When the caller
    will read it: a new one, 0 until set. When it will not (the input was checked before): one flag per
    dtype shared by all such calls, so they allocate and fill nothing; sharing is safe because nobody
    reads it."""
    return zeros(1, dtype) if read else _unread_flag(np.dtype(dtype))


@functools.cache  # lives as long as the process, like the CUDA context
def _unread_flag(dtype: np.dtype):
    return empty(1, dtype)
