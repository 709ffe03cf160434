"""Reductions of a C-contiguous ``(rows, cols)`` device array: row sums and extremes, column sums.

The CUDA backend (``tinynorm.backends.cuda.reductions``) lays any reduction out as ``(rows, cols)``:
usually the reduced axes last, every row becoming one value; but a reduction over the leading axes
of a C-contiguous array is already ``(reduced, kept)``, and every column becomes one value.

* :func:`row_sums` adds each row (sum, or mean when given a divisor) in an accumulator dtype:
  float32 for float16/float32 data, float64 for float64, int64/uint64 for integers and bools.
* :func:`row_extremes` finds each row's largest or smallest value and/or its column, numpy's way:
  the first occurrence wins a tie, and a NaN beats every number (so the first NaN is the answer).
* :func:`column_sums` adds each *column* instead (sum or mean), for reductions over the leading
  axes of a C-contiguous array (a bias gradient: ``(N, C) -> (C,)``), which would otherwise need a
  transposing copy. Thread ``i`` owns column ``i % cols`` of row chunk ``i // cols`` (neighbouring
  threads read neighbouring columns: coalesced) and adds its chunk's rows in order. When there are
  too few columns to fill the GPU the rows are split into chunks; the ``(chunks, cols)`` partials
  are then column-summed again, until one chunk is left.

Row reductions have two kernel shapes, chosen by row width:

* narrow rows (``cols <= THREAD_ROW_MAX_COLS``): one thread per row, columns in order.
* wider rows: one block per *segment*, a row or (when there are too few rows to fill the GPU) a
  ``span`` of a row. Thread ``t`` scans columns ``t, t + threads, ...`` of its segment, then the block
  combines the threads' results with a shared-memory tree (thread ``t`` takes ``t + step`` for
  ``step = threads/2, ..., 1``). A row split into segments leaves one partial per segment, and the
  partials are reduced again as rows of their own (a second launch).

Every choice above depends only on the shape, and no step uses atomics, so the same input always
gives bit-identical results. Kernels are built per accumulator (or comparison) dtype and block size,
because the shared-memory slots need a compile-time dtype and length; Numba's lazy dispatch then
compiles them per input dtype.
"""
from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, from_dtype, int64

from ._reduce import WARP_SIZE
from ._shared import empty, grid_size
from ...backends.cuda.runtime.launch import jit, launch
from .strided import THREADS, blocks_for

THREAD_ROW_MAX_COLS = 32  # rows up to this wide are reduced one thread per row
BLOCK_THREADS = 256  # threads per block of the block-per-segment kernels (a power of two)
# Rows are split into segments only while the grid has fewer than TARGET_BLOCKS segments, and never
# into segments under MIN_SEGMENT_COLS columns. Fixed numbers (not the SM count) keep the result
# the same on every GPU.
TARGET_BLOCKS = 1024
MIN_SEGMENT_COLS = 4096
# Column sums split the rows into chunks only while fewer than COLUMN_TARGET_THREADS threads would
# run, and never into chunks under MIN_CHUNK_ROWS rows (fixed numbers, for the same reason).
COLUMN_TARGET_THREADS = 65536
MIN_CHUNK_ROWS = 64


# ----------------------------------------------------------------------------------------- sums
@cuda.jit(device=True)
def _finish(total, divisor):
    """``total``, divided by ``divisor`` for a mean (``None``: a sum; decided at compile time)."""
    if divisor is not None:
        return total / divisor
    return total


@cache
def _sum_thread_kernel(accumulator: np.dtype):
    """One thread per row: ``out[row] = sum(x[row, :]) (/ divisor)``, each value converted to the
    ``accumulator`` dtype before it is added (as numpy does)."""
    accumulate = from_dtype(accumulator)

    @jit
    def kernel(x, divisor, out):
        rows, cols = x.shape
        for row in range(cuda.grid(1), rows, cuda.gridsize(1)):
            total = accumulate(0)
            for col in range(cols):
                total += accumulate(x[row, col])
            out[row] = _finish(total, divisor)

    return kernel


@cache
def _sum_block_kernel(accumulator: np.dtype, threads: int):
    """One block per segment of ``span`` columns: ``out[segment]`` = the segment's sum (/ divisor)."""
    accumulate = from_dtype(accumulator)

    @jit
    def kernel(x, divisor, span, parts, out):
        rows, cols = x.shape
        t = cuda.threadIdx.x
        slots = cuda.shared.array(threads, accumulate)
        for segment in range(cuda.blockIdx.x, rows * parts, cuda.gridDim.x):  # block-uniform loop
            row = segment // parts
            start = (segment - row * parts) * span
            total = accumulate(0)
            for col in range(start + t, min(start + span, cols), threads):
                total += accumulate(x[row, col])
            slots[t] = total
            cuda.syncthreads()
            step = threads // 2
            while step > 0:
                if t < step:
                    slots[t] += slots[t + step]
                cuda.syncthreads()
                step //= 2
            if t == 0:
                out[segment] = _finish(slots[0], divisor)
            cuda.syncthreads()  # slot 0 is read before the next segment overwrites it

    return kernel


def row_sums(x: Any, dtype: np.dtype, accumulator: np.dtype, divisor: Any = None) -> Any:
    """The sum of each row of the C-contiguous ``(rows, cols)`` device array ``x`` (``cols >= 1``),
    as a ``(rows,)`` device array of ``dtype``: each value is converted to the ``accumulator`` dtype
    and added in it, in a fixed order.

    With ``divisor`` (a scalar of the accumulator dtype) each sum is divided by it: a mean.
    """
    rows, cols = x.shape
    out = empty(rows, dtype=dtype)
    if rows == 0:
        return out
    if cols <= THREAD_ROW_MAX_COLS:
        launch(_sum_thread_kernel(accumulator), *_thread_grid(rows), (x, divisor, out))
        return out
    parts, span = _segments(rows, cols)
    kernel = _sum_block_kernel(accumulator, BLOCK_THREADS)
    if parts == 1:
        launch(kernel, grid_size(rows, 1), BLOCK_THREADS, (x, divisor, span, 1, out))
        return out
    partials = empty((rows, parts), dtype=accumulator)
    launch(kernel, grid_size(rows * parts, 1), BLOCK_THREADS,
           (x, None, span, parts, partials.subarray(0, rows * parts)))
    return row_sums(partials, dtype, accumulator, divisor)


@cache
def _column_sum_kernel(accumulator: np.dtype):
    """One thread per (row chunk, column): ``out[chunk, col]`` = the sum of ``x[row, col]`` over the
    chunk's ``span`` rows, in row order (/ divisor), each value converted to ``accumulator`` first."""
    accumulate = from_dtype(accumulator)

    @jit
    def kernel(x, divisor, span, out):
        rows, cols = x.shape
        chunks = out.shape[0]
        for i in range(cuda.grid(1), chunks * cols, cuda.gridsize(1)):
            chunk = i // cols
            col = i - chunk * cols
            total = accumulate(0)
            for row in range(chunk * span, min(chunk * span + span, rows)):
                total += accumulate(x[row, col])
            out[chunk, col] = _finish(total, divisor)

    return kernel


def column_sums(x: Any, dtype: np.dtype, accumulator: np.dtype, divisor: Any = None) -> Any:
    """The sum of each column of the C-contiguous ``(rows, cols)`` device array ``x`` (``rows >= 1``),
    as a ``(cols,)`` device array of ``dtype``: each value is converted to the ``accumulator`` dtype
    and added in it, in a fixed order. No copy of ``x`` is made.

    With ``divisor`` (a scalar of the accumulator dtype) each sum is divided by it: a mean.
    """
    rows, cols = x.shape
    out = empty(cols, dtype=dtype)
    if cols == 0:
        return out
    chunks, span = _row_chunks(rows, cols)
    kernel = _column_sum_kernel(accumulator)
    if chunks == 1:
        launch(kernel, *_thread_grid(cols), (x, divisor, span, out.subarray(0, (1, cols))))
        return out
    partials = empty((chunks, cols), dtype=accumulator)
    launch(kernel, *_thread_grid(chunks * cols), (x, None, span, partials))
    return column_sums(partials, dtype, accumulator, divisor)


def _row_chunks(rows: int, cols: int) -> tuple[int, int]:
    """``(chunks, span)``: the columns are summed over ``chunks`` chunks of ``span`` rows (none empty)."""
    return _split(rows, min(-(-COLUMN_TARGET_THREADS // cols), rows // MIN_CHUNK_ROWS))


def _thread_grid(items: int) -> tuple[int, int]:
    """``(blocks, threads)`` for one thread per item (a row, or a column of a chunk): whole warps,
    no more than the items need."""
    threads = min(THREADS, -(-items // WARP_SIZE) * WARP_SIZE)
    return blocks_for(items, threads), threads


def _segments(rows: int, cols: int) -> tuple[int, int]:
    """``(parts, span)``: each row is reduced by ``parts`` blocks of ``span`` columns (none empty)."""
    return _split(cols, min(-(-TARGET_BLOCKS // rows), cols // MIN_SEGMENT_COLS))


def _split(length: int, wanted: int) -> tuple[int, int]:
    """``(parts, span)``: ``length`` items cut into at most ``wanted`` runs of ``span`` items, none empty."""
    if wanted <= 1:
        return 1, length
    span = -(-length // wanted)
    return -(-length // span), span


# ------------------------------------------------------------------------------------- extremes
def comparison_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype extremes are compared in: float16 as float32, bools and small ints as int64 (exact)."""
    if dtype.kind == "f":
        return np.dtype(np.float32) if dtype.itemsize <= 4 else np.dtype(np.float64)
    if dtype.kind == "u" and dtype.itemsize == 8:
        return dtype
    return np.dtype(np.int64)


@cache
def _extreme_functions(largest: bool, compared: np.dtype):
    """Device functions of one direction and comparison dtype: ``better`` and ``scan``."""
    value_type = from_dtype(compared)

    @cuda.jit(device=True)
    def better(value, index, best, best_index):
        """Whether (``value``, ``index``) replaces (``best``, ``best_index``): NaN beats numbers, the
        smaller index wins a tie (and between NaNs)."""
        if math.isnan(best):  # a NaN is only beaten by an earlier NaN
            return math.isnan(value) and index < best_index
        if math.isnan(value):
            return True
        if largest:
            return value > best or (value == best and index < best_index)
        return value < best or (value == best and index < best_index)

    @cuda.jit(device=True)
    def column_index(indices, row, col):
        """The index a column stands for: itself, or the index a previous pass found there."""
        if indices is not None:
            return indices[row, col]
        return col

    @cuda.jit(device=True)
    def scan(x, indices, row, first, stop, step):
        """The best (value, index) among columns ``first, first + step, ... < stop`` (first < stop)."""
        best = value_type(x[row, first])
        best_index = column_index(indices, row, first)
        for col in range(first + step, stop, step):
            value = value_type(x[row, col])
            index = column_index(indices, row, col)
            if better(value, index, best, best_index):
                best, best_index = value, index
        return best, best_index

    return better, scan


@cuda.jit(device=True)
def _store(values_out, indices_out, position, value, index):
    """Write the outputs that were asked for (a ``None`` output is dropped at compile time)."""
    if values_out is not None:
        values_out[position] = value
    if indices_out is not None:
        indices_out[position] = index


@cache
def _extreme_thread_kernel(largest: bool, compared: np.dtype):
    """One thread per row: the row's best value and/or its index."""
    _, scan = _extreme_functions(largest, compared)

    @jit
    def kernel(x, indices, values_out, indices_out):
        rows, cols = x.shape
        for row in range(cuda.grid(1), rows, cuda.gridsize(1)):
            best, best_index = scan(x, indices, row, 0, cols, 1)
            _store(values_out, indices_out, row, best, best_index)

    return kernel


@cache
def _extreme_block_kernel(largest: bool, compared: np.dtype, threads: int):
    """One block per segment of ``span`` columns: the segment's best value and/or its index.

    Only threads that own a column take part in the tree (a prefix ``t < filled`` of the block), so
    no identity value (like -inf, which integers lack) is needed.
    """
    better, scan = _extreme_functions(largest, compared)
    value_type = from_dtype(compared)

    @jit
    def kernel(x, indices, span, parts, values_out, indices_out):
        rows, cols = x.shape
        t = cuda.threadIdx.x
        values = cuda.shared.array(threads, value_type)
        positions = cuda.shared.array(threads, int64)
        for segment in range(cuda.blockIdx.x, rows * parts, cuda.gridDim.x):  # block-uniform loop
            row = segment // parts
            start = (segment - row * parts) * span
            stop = min(start + span, cols)
            filled = min(threads, stop - start)
            if t < filled:
                values[t], positions[t] = scan(x, indices, row, start + t, stop, threads)
            cuda.syncthreads()
            step = threads // 2
            while step > 0:
                if t < step and t + step < filled and better(values[t + step], positions[t + step],
                                                             values[t], positions[t]):
                    values[t] = values[t + step]
                    positions[t] = positions[t + step]
                cuda.syncthreads()
                step //= 2
            if t == 0:
                _store(values_out, indices_out, segment, values[0], positions[0])
            cuda.syncthreads()  # slot 0 is read before the next segment overwrites it

    return kernel


def row_extremes(x: Any, largest: bool, values: bool = True, indices: bool = True) -> tuple[Any, Any]:
    """``(values, indices)``: the largest (or smallest) value of each row of the C-contiguous
    ``(rows, cols)`` device array ``x`` (``cols >= 1``) and its column, as ``(rows,)`` device arrays
    of ``x``'s dtype and int64; an output not asked for is ``None``.

    Ties go to the first column; any NaN beats every number, the first NaN of a row winning.
    """
    return _row_extremes(x, None, largest, values, indices)


def _row_extremes(x: Any, indices_of: Any, largest: bool, values: bool, indices: bool) -> tuple[Any, Any]:
    """:func:`row_extremes`, where column ``j`` of row ``i`` stands for index ``indices_of[i, j]``
    (a pass over partials), or for ``j`` when ``indices_of`` is None."""
    rows, cols = x.shape
    values_out = empty(rows, dtype=x.dtype) if values else None
    indices_out = empty(rows, dtype=np.int64) if indices else None
    if rows == 0:
        return values_out, indices_out
    compared = comparison_dtype(np.dtype(x.dtype))
    if cols <= THREAD_ROW_MAX_COLS:
        kernel = _extreme_thread_kernel(largest, compared)
        launch(kernel, *_thread_grid(rows), (x, indices_of, values_out, indices_out))
        return values_out, indices_out
    parts, span = _segments(rows, cols)
    kernel = _extreme_block_kernel(largest, compared, BLOCK_THREADS)
    if parts == 1:
        launch(kernel, grid_size(rows, 1), BLOCK_THREADS, (x, indices_of, span, 1, values_out, indices_out))
        return values_out, indices_out
    # Partial values always (they decide the next pass); partial indices only when indices are wanted.
    partial_values = empty((rows, parts), dtype=x.dtype)
    partial_indices = empty((rows, parts), dtype=np.int64) if indices else None
    launch(kernel, grid_size(rows * parts, 1), BLOCK_THREADS, (
        x, indices_of, span, parts, partial_values.subarray(0, rows * parts),
        None if partial_indices is None else partial_indices.subarray(0, rows * parts)))
    return _row_extremes(partial_values, partial_indices, largest, values, indices)
