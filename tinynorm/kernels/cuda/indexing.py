"""Gather and scatter through integer index arrays on the GPU: the kernels of advanced indexing.

An advanced index (``a[rows, cols]``, ``a[:, ids]``) selects, for every entry ``j`` of the broadcast
index arrays, one storage position ``positions[j] = sum_k index_k[j] * stride_k`` (indices wrapped
like numpy's: ``-1`` is the last); the dimensions the index leaves alone (slices, new axes) add their
own strided offsets around it. So every kernel here sees its operand through a *layout*: ``shape``
and ``strides`` (in elements) in which one axis, of length ``len(positions)`` and stride 0, stands for
the index entries; ``inner`` is the number of elements after that axis (the product of the dims that
follow it). All functions take plain Numba device arrays; index arrays are int64.

Scattering (``a[index] = v`` and the gradient ``index_add``) must give the same result on every run
although repeated indices send several entries to one place, and it must not wait for the host. So
there are no floating-point atomics and no trip through host memory: each entry also gets a *key*,
the C-order rank of its index tuple among the indexed dims (equal keys = equal positions), and
:func:`sort_keys` orders the entries by key on the device with a stable radix sort (integer counts
and prefix sums only, so the order is the same on every run). In that order the entries of one
position are neighbours, in index order: the first of each run adds up the run (``index_add``) and
the last one is stored (assignment: numpy's "last wins" in practice).
"""
from __future__ import annotations

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, int32, int64

from ...backends.cuda.runtime.launch import jit, launch
from ...backends.cuda.array import CudaArray
from ._shared import empty
from .strided import THREADS, blocks_for, error_flag, strided_offset, threads_for

INDEX_DTYPE = np.dtype(np.int64)
MASK_CHUNK = 64  # mask entries per thread in nonzero: the host reads back one count per chunk
RADIX_BITS = 8  # key bits sorted per pass of sort_keys
RADIX = 1 << RADIX_BITS  # digit values per pass
SORT_TILE = THREADS  # most entries per block in a sort pass (one per thread)


@jit
def _positions_kernel(indices, sizes, strides, positions, keys, bad, wrap, clip):
    """``positions[j] = sum_k wrap(indices[k, j]) * strides[k]``, ``keys[j]`` the C-order rank of the
    wrapped index tuple in ``sizes``; ``bad[0] = 1`` if an index is out of range. With ``clip``, each
    index (wrapped first if ``wrap``) is clipped into ``[0, size)`` instead (see :func:`_flag`)."""
    for j in range(cuda.grid(1), indices.shape[1], cuda.gridsize(1)):
        position = 0
        key = 0
        for k in range(indices.shape[0]):
            i = indices[k, j]
            if wrap and i < 0:
                i += sizes[k]
            if clip:
                i = min(max(i, 0), sizes[k] - 1)
            elif i < 0 or i >= sizes[k]:
                bad[0] = 1  # every offender stores the same value: no race on the result
                i = 0
            position += i * strides[k]
            key = key * sizes[k] + i
        positions[j] = position
        keys[j] = key


@cuda.jit(device=True)
def _size(shape):
    size = 1
    for n in shape:
        size *= n
    return size


@jit
def _gather_kernel(out, source, base, shape, strides, positions, inner):
    """``out[i] = source[base + layout offset of i + positions[j]]``, ``j`` the index-axis coordinate of i."""
    count = positions.size
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        j = (i // inner) % count
        out[i] = source[strided_offset(i, base, strides, shape) + positions[j]]


@jit
def _scatter_kernel(dest, base, shape, strides, positions, keys, order, inner,
                    values, values_offset, values_strides, values_shape, accumulate):
    """One thread per element of ``shape``, whose index axis runs over the entries in key order (entry
    ``order[s]`` at ``s``, ``keys`` sorted): the first entry of each run of equal keys adds the values of
    the run, in index order, or the last one stores its own value; the others have nothing to do.

    ``values`` is read as a view of ``values_shape``, whose index part has all ``len(positions)`` entries.
    """
    entries = order.size
    for i in range(cuda.grid(1), _size(shape), cuda.gridsize(1)):
        s = (i // inner) % entries
        if accumulate and s > 0 and keys[s - 1] == keys[s]:
            continue  # the run's first entry adds this one
        if not accumulate and s + 1 < entries and keys[s + 1] == keys[s]:
            continue  # a later entry overwrites this one
        outer, rest = i // (inner * entries), i % inner
        target = strided_offset(i, base, strides, shape) + positions[order[s]]
        j = (outer * entries + order[s]) * inner + rest
        total = values[strided_offset(j, values_offset, values_strides, values_shape)]
        if accumulate:
            e = s + 1
            while e < entries and keys[e] == keys[s]:
                j = (outer * entries + order[e]) * inner + rest
                total += values[strided_offset(j, values_offset, values_strides, values_shape)]
                e += 1
            dest[target] += total
        else:
            dest[target] = total


@jit
def _iota_kernel(out):
    """``out[i] = i``: the entries in index order, where the sort starts."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = i


@cuda.jit(device=True)
def _load_digits(keys, shift, digits):
    """Put the digit ``(key >> shift) % RADIX`` of each entry of this block's tile into the shared
    ``digits`` (-1, which matches no digit, past the last entry); returns this thread's entry."""
    entry = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    digits[cuda.threadIdx.x] = (keys[entry] >> shift) & (RADIX - 1) if entry < keys.size else -1
    cuda.syncthreads()
    return entry


@jit
def _digit_count_kernel(keys, shift, counts):
    """``counts[d * tiles + b]``: the entries of tile ``b`` (block ``b``'s entries) whose digit is ``d``.

    Digit-major, so that the exclusive prefix sums of ``counts`` are where each (digit, tile) group
    starts in the output of the pass. Thread ``t`` counts digits ``t, t + blockDim, ...``: no atomics.
    One block per tile of at most ``SORT_TILE`` entries, as in :func:`_radix_scatter_kernel`.
    """
    digits = cuda.shared.array(SORT_TILE, int32)
    _load_digits(keys, shift, digits)
    for d in range(cuda.threadIdx.x, RADIX, cuda.blockDim.x):
        count = 0
        for e in range(cuda.blockDim.x):
            if digits[e] == d:
                count += 1
        counts[d * cuda.gridDim.x + cuda.blockIdx.x] = count


@jit
def _exclusive_scan_kernel(counts):
    """Replace ``counts`` by its exclusive prefix sums, in one block of at most ``SORT_TILE`` threads:
    thread ``t`` owns the ``t``-th contiguous chunk, adds it up, starts from the totals of the chunks
    before it, and rewrites it."""
    totals = cuda.shared.array(SORT_TILE, int64)
    t = cuda.threadIdx.x
    chunk = (counts.size + cuda.blockDim.x - 1) // cuda.blockDim.x
    first, stop = min(t * chunk, counts.size), min((t + 1) * chunk, counts.size)
    total = 0
    for i in range(first, stop):
        total += counts[i]
    totals[t] = total
    cuda.syncthreads()
    running = 0
    for u in range(t):
        running += totals[u]
    for i in range(first, stop):
        count = counts[i]
        counts[i] = running
        running += count


@jit
def _radix_scatter_kernel(keys, order, shift, starts, sorted_keys, sorted_order):
    """Move each entry of the tile to ``starts[digit * tiles + tile]`` plus the number of entries of
    its tile before it with the same digit: stable, so equal digits keep their order."""
    digits = cuda.shared.array(SORT_TILE, int32)
    entry = _load_digits(keys, shift, digits)
    if entry < keys.size:
        digit = digits[cuda.threadIdx.x]
        slot = starts[digit * cuda.gridDim.x + cuda.blockIdx.x]
        for e in range(cuda.threadIdx.x):
            if digits[e] == digit:
                slot += 1
        sorted_keys[slot] = keys[entry]
        sorted_order[slot] = order[entry]


@jit
def _take_along_kernel(out, source, offset, strides, axis_stride, axis_size,
                       indices, indices_offset, indices_strides, shape):
    """``out[i] = source[offset + layout offset of i + wrap(index) * axis_stride]``, ``index`` the entry of
    ``indices`` at i (``strides`` has 0 on the axis; both views are broadcast to ``shape``), clipped into
    ``[0, axis_size)`` after wrapping so that an unchecked index never reads outside ``source``."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        k = indices[strided_offset(i, indices_offset, indices_strides, shape)]
        if k < 0:
            k += axis_size
        k = min(max(k, 0), axis_size - 1)
        out[i] = source[strided_offset(i, offset, strides, shape) + k * axis_stride]


@jit
def _count_kernel(mask, counts):
    """``counts[c]``: the True entries of chunk ``c`` of the flat ``mask`` (one thread per chunk)."""
    for c in range(cuda.grid(1), counts.size, cuda.gridsize(1)):
        total = 0
        for i in range(c * MASK_CHUNK, min((c + 1) * MASK_CHUNK, mask.size)):
            if mask[i]:
                total += 1
        counts[c] = total


@jit
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


@jit
def _index_count_kernel(indices, upper, ignore_index, has_ignore, counts):
    """``counts[0]``: entries of the flat ``indices`` outside ``[0, upper)`` (``ignore_index`` excepted
    when ``has_ignore``); ``counts[1]``: entries equal to ``ignore_index``. One block: each thread
    counts its share, then adds it into the block's totals (integer atomics, so the order is irrelevant)."""
    totals = cuda.shared.array(2, int64)
    if cuda.threadIdx.x == 0:
        totals[0] = 0
        totals[1] = 0
    cuda.syncthreads()
    outside = 0
    ignored = 0
    for i in range(cuda.threadIdx.x, indices.size, cuda.blockDim.x):
        index = indices[i]
        if has_ignore and index == ignore_index:
            ignored += 1
        elif index < 0 or index >= upper:
            outside += 1
    cuda.atomic.add(totals, 0, outside)
    cuda.atomic.add(totals, 1, ignored)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        counts[0] = totals[0]
        counts[1] = totals[1]


def _launch(kernel, size: int, *args) -> None:
    """Launch ``kernel`` with enough threads for ``size`` elements (none for 0)."""
    if size:
        launch(kernel, blocks_for(size), THREADS, args)


def _raise_out_of_range(indices: np.ndarray, sizes: tuple, axes: tuple) -> None:
    """Raise numpy's IndexError for the first index of the rows of ``indices`` outside its size."""
    for row, size, axis in zip(indices, sizes, axes):
        wrong = row[(row < -size) | (row >= size)]
        if wrong.size:
            raise IndexError(f"index {wrong[0]} is out of bounds for axis {axis} with size {size}")


_MODES = {"raise": (True, False), "clip": (False, True), "checked": (True, True)}  # (wrap, clip) flags


def _flag(op: str, mode: str):
    """The out-of-range flag for an index kernel in ``mode``, read back only after ``'raise'``.

    ``'raise'``: negative indices count from the end, out of range ones raise IndexError. ``'clip'``
    (numpy's): each index is clipped into range, negatives become 0. ``'checked'``: for indices the
    caller has checked, as ``'raise'`` without the check (an index still out of range is clipped, so
    nothing is ever written outside the array) and without the wait for the GPU."""
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be 'raise', 'clip' or 'checked', got {mode!r}")
    return error_flag(np.int32, read=mode == "raise")


def flat_positions(indices, sizes: tuple, strides: tuple, axes: tuple, mode: str = "raise") -> tuple:
    """``(positions, keys)`` of the entries of ``indices`` (K, n), as int64 device arrays: the storage
    offsets ``sum_k wrap(indices[k]) * strides[k]``, and the C-order ranks of the wrapped index tuples
    among ``sizes`` (in ``[0, prod(sizes))``: what :func:`scatter` sorts by).

    ``indices[k]`` indexes an axis of length ``sizes[k]`` (numbered ``axes[k]`` in error messages).
    ``mode='raise'``: negative indices count from the end, and an index out of range raises IndexError,
    which costs one value read back from the device (a flag; the indices themselves only when it is
    set), so the host waits for the GPU. ``'clip'`` and ``'checked'`` read nothing back (see :func:`_flag`).
    """
    bad = _flag("flat_positions", mode)
    positions = empty(indices.shape[1], INDEX_DTYPE)
    keys = empty(indices.shape[1], INDEX_DTYPE)
    _launch(_positions_kernel, indices.shape[1], indices, sizes, strides, positions, keys, bad, *_MODES[mode])
    if mode == "raise" and bad.to_numpy()[0]:
        _raise_out_of_range(indices.to_numpy(), sizes, axes)
    return positions, keys


def _inner(shape: tuple, axis: int) -> int:
    """Elements after the index axis: the product of the dims that follow it."""
    return int(np.prod(shape[axis + 1:], dtype=np.int64))


def gather(out, source, base: int, shape: tuple, strides: tuple, axis: int, positions) -> None:
    """Fill the flat ``out`` (of ``shape``) with the elements of ``source`` that the layout selects:
    ``base`` plus the ``strides`` offsets of the other dims plus ``positions`` along ``axis``."""
    _launch(_gather_kernel, out.size, out, source, base, shape, strides, positions, _inner(shape, axis))


def sort_keys(keys, key_count: int) -> tuple:
    """``(sorted_keys, order)``: the int64 ``keys`` (each in ``[0, key_count)``) in ascending order, and
    the entry each came from; stable (equal keys keep their index order), as device arrays.

    An LSD radix sort, all on the device: one pass per ``RADIX_BITS`` bits of ``key_count - 1``; a
    pass counts each tile's digits, turns the counts into start slots (exclusive prefix sums), and
    moves every entry to its slot. Integer counts only: the same order on every run.
    """
    order = empty(keys.size, INDEX_DTYPE)
    _launch(_iota_kernel, keys.size, order)
    tile = threads_for(keys.size)
    tiles = -(-keys.size // tile)
    starts = empty(RADIX * tiles, INDEX_DTYPE)
    bits = (key_count - 1).bit_length() if keys.size else 0  # no entries: no launch of 0 blocks
    for shift in range(0, bits, RADIX_BITS):
        sorted_keys = empty(keys.size, INDEX_DTYPE)
        sorted_order = empty(keys.size, INDEX_DTYPE)
        launch(_digit_count_kernel, tiles, tile, (keys, shift, starts))
        launch(_exclusive_scan_kernel, 1, SORT_TILE, (starts,))
        launch(_radix_scatter_kernel, tiles, tile, (keys, order, shift, starts, sorted_keys, sorted_order))
        keys, order = sorted_keys, sorted_order
    return keys, order


def scatter(dest, base: int, shape: tuple, strides: tuple, axis: int, positions, keys, key_count: int,
            values, values_offset: int, values_strides: tuple, values_shape: tuple, accumulate: bool) -> None:
    """Store (or add, when ``accumulate``) ``values`` into ``dest`` at the layout's positions.

    The layout is :func:`gather`'s (``shape[axis] == len(positions)``); ``keys`` (in ``[0, key_count)``)
    are equal exactly where ``positions`` are (:func:`flat_positions`). ``values`` is a view (storage,
    offset, strides) of ``values_shape``: ``shape`` with ``axis`` unfolded into the index arrays'
    broadcast shape. Repeated positions: the last entry wins, or all entries add up in index order.
    Nothing is read back to the host.
    """
    if not positions.size:
        return
    sorted_keys, order = sort_keys(keys, key_count)
    _launch(_scatter_kernel, int(np.prod(shape, dtype=np.int64)), dest, base, shape, strides, positions,
            sorted_keys, order, _inner(shape, axis), values, values_offset, values_strides, values_shape,
            accumulate)


def take_along(out, source, offset: int, strides: tuple, axis_size: int, axis_stride: int,
               indices, indices_offset: int, indices_strides: tuple, shape: tuple) -> None:
    """numpy's ``take_along_axis`` into the flat ``out`` of ``shape``, both operands as views broadcast to
    ``shape`` (``strides`` with 0 on the axis), for indices the caller has checked (negative ones count
    from the end): nothing is read back, so the host does not wait for the GPU."""
    _launch(_take_along_kernel, out.size, out, source, offset, strides, axis_stride, axis_size,
            indices, indices_offset, indices_strides, shape)


def count_indices(indices, upper: int, ignore_index: int | None = None) -> tuple[int, int]:
    """``(outside, ignored)``: how many entries of the flat integer device array ``indices`` are outside
    ``[0, upper)`` and not ``ignore_index``, and how many equal ``ignore_index`` (0 when None).

    One launch and one read back of the two counts (the host waits for the GPU): what a check of user
    indices costs. A single block reads every index; that is a few microseconds for the row counts of
    a loss or an embedding lookup.
    """
    counts = empty(2, INDEX_DTYPE)
    launch(_index_count_kernel, 1, threads_for(indices.size),
           (indices, np.int64(upper), np.int64(0 if ignore_index is None else ignore_index),
            ignore_index is not None, counts))
    outside, ignored = counts.to_numpy()
    return int(outside), int(ignored)


def nonzero(mask, shape: tuple):
    """The coordinates of the True entries of a C-contiguous boolean ``mask`` of ``shape`` (flat here),
    as an int64 ``(len(shape), count)`` device array in C order: numpy's ``nonzero``, stacked.

    Each thread counts the entries of one chunk; the host reads those counts back (the only transfer:
    the result's size must be known to allocate it) and turns them into each chunk's first column.
    """
    chunks = -(-mask.size // MASK_CHUNK)
    counts = empty(chunks, INDEX_DTYPE)
    _launch(_count_kernel, chunks, mask, counts)
    counts = counts.to_numpy()
    coords = empty((len(shape), int(counts.sum())), INDEX_DTYPE)
    if coords.size:
        starts = np.cumsum(counts) - counts
        _launch(_nonzero_kernel, chunks, mask, CudaArray.from_host(starts), shape, coords)
    return coords
