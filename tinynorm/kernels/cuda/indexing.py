"""Gather and scatter through integer index arrays on the GPU: the kernels of advanced indexing.

An advanced index (``a[rows, cols]``, ``a[:, ids]``) selects, for every entry ``j`` of the broadcast
index arrays, one storage position ``positions[j] = sum_k index_k[j] * stride_k`` (indices wrapped
like numpy's: ``-1`` is the last); the dimensions the index leaves alone (slices, new axes) add their
own strided offsets around it. So every kernel here sees its operand through a *layout*: ``shape``
and ``strides`` (in elements) in which one axis, of length ``len(positions)`` and stride 0, stands for
the index entries; ``inner`` is the number of elements after that axis (the product of the dims that
follow it). All functions take plain Numba device arrays; index arrays are int64.

Scattering (``a[index] = v`` and the gradient ``index_add``) must give the same result on every run
although repeated indices send several entries to one place. There are no atomics: the positions are
grouped with a stable sort (on the host: :func:`group_positions`), and one thread owns each distinct
position, adding its entries in index order (``index_add``) or storing the last one (assignment, as
numpy does in practice).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .strided import THREADS, blocks_for, strided_offset

INDEX_DTYPE = np.dtype(np.int64)
MASK_CHUNK = 64  # mask entries per thread in nonzero: the host reads back one count per chunk


@cuda.jit(cache=True)
def _positions_kernel(indices, sizes, strides, positions, bad):
    """``positions[j] = sum_k wrap(indices[k, j]) * strides[k]``; ``bad[0] = 1`` if an index is out of range."""
    for j in range(cuda.grid(1), indices.shape[1], cuda.gridsize(1)):
        position = 0
        for k in range(indices.shape[0]):
            i = indices[k, j]
            if i < 0:
                i += sizes[k]
            if i < 0 or i >= sizes[k]:
                bad[0] = 1  # every offender stores the same value: no race on the result
                i = 0
            position += i * strides[k]
        positions[j] = position


@cuda.jit(device=True)
def _size(shape):
    size = 1
    for n in shape:
        size *= n
    return size


@cuda.jit(cache=True)
def _gather_kernel(out, source, base, shape, strides, positions, inner):
    """``out[i] = source[base + layout offset of i + positions[j]]``, ``j`` the index-axis coordinate of i."""
    count = positions.size
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        j = (i // inner) % count
        out[i] = source[strided_offset(i, base, strides, shape) + positions[j]]


@cuda.jit(cache=True)
def _scatter_kernel(dest, base, shape, strides, positions, order, starts, inner,
                    values, values_offset, values_strides, values_shape, accumulate):
    """One thread per element of ``shape``, whose index axis counts the distinct positions ``u``: store
    the value of the last index entry at ``u``, or add the values of all of them in index order.

    ``values`` is read as a view of ``values_shape``, whose index part has all ``len(positions)`` entries.
    """
    groups = starts.size - 1
    entries = positions.size
    for i in range(cuda.grid(1), _size(shape), cuda.gridsize(1)):
        u = (i // inner) % groups
        outer, rest = i // (inner * groups), i % inner
        target = strided_offset(i, base, strides, shape) + positions[order[starts[u]]]
        if accumulate:
            j = (outer * entries + order[starts[u]]) * inner + rest
            total = values[strided_offset(j, values_offset, values_strides, values_shape)]
            for e in range(starts[u] + 1, starts[u + 1]):
                j = (outer * entries + order[e]) * inner + rest
                total += values[strided_offset(j, values_offset, values_strides, values_shape)]
            dest[target] += total
        else:
            j = (outer * entries + order[starts[u + 1] - 1]) * inner + rest
            dest[target] = values[strided_offset(j, values_offset, values_strides, values_shape)]


@cuda.jit(cache=True)
def _take_along_kernel(out, source, offset, strides, axis_stride, axis_size,
                       indices, indices_offset, indices_strides, shape, bad):
    """``out[i] = source[offset + layout offset of i + wrap(index) * axis_stride]``, ``index`` the entry of
    ``indices`` at i (``strides`` has 0 on the axis; both views are broadcast to ``shape``)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        k = indices[strided_offset(i, indices_offset, indices_strides, shape)]
        if k < 0:
            k += axis_size
        if k < 0 or k >= axis_size:
            bad[0] = 1
            k = 0
        out[i] = source[strided_offset(i, offset, strides, shape) + k * axis_stride]


@cuda.jit(cache=True)
def _count_kernel(mask, counts):
    """``counts[c]``: the True entries of chunk ``c`` of the flat ``mask`` (one thread per chunk)."""
    for c in range(cuda.grid(1), counts.size, cuda.gridsize(1)):
        total = 0
        for i in range(c * MASK_CHUNK, min((c + 1) * MASK_CHUNK, mask.size)):
            if mask[i]:
                total += 1
        counts[c] = total


@cuda.jit(cache=True)
def _nonzero_kernel(mask, starts, shape, coords):
    """Write the coordinates (in ``shape``) of the True entries of chunk ``c`` of the flat ``mask`` into
    the columns of ``coords`` from ``starts[c]`` on, in order (one thread per chunk)."""
    for c in range(cuda.grid(1), starts.size, cuda.gridsize(1)):
        column = starts[c]
        for i in range(c * MASK_CHUNK, min((c + 1) * MASK_CHUNK, mask.size)):
            if mask[i]:
                rest = i
                for d in range(len(shape) - 1, -1, -1):
                    coords[d, column] = rest % shape[d]
                    rest //= shape[d]
                column += 1


@cuda.jit(cache=True)
def _fill_kernel(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


def _launch(kernel, size: int, *args) -> None:
    if size:
        kernel[blocks_for(size), THREADS](*args)


def _raise_out_of_range(indices: np.ndarray, sizes: tuple, axes: tuple) -> None:
    """Raise numpy's IndexError for the first index of the rows of ``indices`` outside its size."""
    for row, size, axis in zip(indices, sizes, axes):
        wrong = row[(row < -size) | (row >= size)]
        if wrong.size:
            raise IndexError(f"index {wrong[0]} is out of bounds for axis {axis} with size {size}")


def flat_positions(indices, sizes: tuple, strides: tuple, axes: tuple):
    """The storage offsets ``sum_k wrap(indices[k]) * strides[k]`` of the entries of ``indices`` (K, n).

    ``indices[k]`` indexes an axis of length ``sizes[k]`` (numbered ``axes[k]`` in error messages);
    negative indices count from the end. Raises IndexError, after reading a flag back from the
    device, when an index is out of range.
    """
    positions = cuda.device_array(indices.shape[1], INDEX_DTYPE)
    bad = cuda.to_device(np.zeros(1, np.int32))
    _launch(_positions_kernel, indices.shape[1], indices, sizes, strides, positions, bad)
    if bad.copy_to_host()[0]:
        _raise_out_of_range(indices.copy_to_host(), sizes, axes)
    return positions


def _inner(shape: tuple, axis: int) -> int:
    """Elements after the index axis: the product of the dims that follow it."""
    return int(np.prod(shape[axis + 1:], dtype=np.int64))


def gather(out, source, base: int, shape: tuple, strides: tuple, axis: int, positions) -> None:
    """Fill the flat ``out`` (of ``shape``) with the elements of ``source`` that the layout selects:
    ``base`` plus the ``strides`` offsets of the other dims plus ``positions`` along ``axis``."""
    _launch(_gather_kernel, out.size, out, source, base, shape, strides, positions, _inner(shape, axis))


def group_positions(positions) -> tuple:
    """``(order, starts)``: the entries sorted by position (stable), and where each distinct position's
    run begins (``starts[-1] == len(positions)``), as device arrays.

    The sort runs on the host (a copy of the positions there and back): index arrays are small next to
    the data they select, and a stable sort keeps repeated indices in index order.
    """
    host = positions.copy_to_host()
    order = np.argsort(host, kind="stable")
    ordered = host[order]
    starts = np.concatenate([[0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1, [host.size]])
    return cuda.to_device(order.astype(INDEX_DTYPE)), cuda.to_device(starts.astype(INDEX_DTYPE))


def scatter(dest, base: int, shape: tuple, strides: tuple, axis: int, positions,
            values, values_offset: int, values_strides: tuple, values_shape: tuple, accumulate: bool) -> None:
    """Store (or add, when ``accumulate``) ``values`` into ``dest`` at the layout's positions.

    The layout is :func:`gather`'s (``shape[axis] == len(positions)``); ``values`` is a view (storage,
    offset, strides) of ``values_shape``: ``shape`` with ``axis`` unfolded into the index arrays'
    broadcast shape. Repeated positions: the last entry wins, or all entries add up in index order.
    """
    if not positions.size:
        return
    order, starts = group_positions(positions)
    grouped = shape[:axis] + (starts.size - 1,) + shape[axis + 1:]
    _launch(_scatter_kernel, int(np.prod(grouped, dtype=np.int64)), dest, base, grouped, strides, positions,
            order, starts, _inner(shape, axis), values, values_offset, values_strides, values_shape, accumulate)


def take_along(out, source, offset: int, strides: tuple, axis: int, axis_size: int, axis_stride: int,
               indices, indices_offset: int, indices_strides: tuple, shape: tuple) -> None:
    """numpy's ``take_along_axis`` into the flat ``out`` of ``shape``, both operands as views broadcast to
    ``shape`` (``strides`` with 0 on ``axis``); IndexError (after a flag read back) for an index out of range."""
    bad = cuda.to_device(np.zeros(1, np.int32))
    _launch(_take_along_kernel, out.size, out, source, offset, strides, axis_stride, axis_size,
            indices, indices_offset, indices_strides, shape, bad)
    if bad.copy_to_host()[0]:
        host = indices.copy_to_host()[indices_offset:]
        byte_strides = tuple(s * host.itemsize for s in indices_strides)
        selected = np.lib.stride_tricks.as_strided(host, shape, byte_strides).reshape(1, -1)
        _raise_out_of_range(selected, (axis_size,), (axis,))


def nonzero(mask, shape: tuple):
    """The coordinates of the True entries of a C-contiguous boolean ``mask`` of ``shape`` (flat here),
    as an int64 ``(len(shape), count)`` device array in C order: numpy's ``nonzero``, stacked.

    Each thread counts the entries of one chunk; the host reads those counts back (the only transfer:
    the result's size must be known to allocate it) and turns them into each chunk's first column.
    """
    chunks = -(-mask.size // MASK_CHUNK)
    counts = cuda.device_array(chunks, INDEX_DTYPE)
    _launch(_count_kernel, chunks, mask, counts)
    counts = counts.copy_to_host()
    coords = cuda.device_array((len(shape), int(counts.sum())), INDEX_DTYPE)
    if coords.size:
        starts = np.cumsum(counts) - counts
        _launch(_nonzero_kernel, chunks, mask, cuda.to_device(starts), shape, coords)
    return coords


def fill(out, value) -> None:
    """Set every element of the flat ``out`` to ``value`` (converted to ``out``'s dtype first)."""
    _launch(_fill_kernel, out.size, out, np.dtype(out.dtype).type(value))
