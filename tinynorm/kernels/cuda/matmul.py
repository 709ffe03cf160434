"""Batched matrix multiplication on the GPU: ``out[p] = A[p] @ B[p]``, one tiled shared-memory GEMM.

The operands are *strided*: the kernel takes each operand's flat storage and its element strides,
so a transposed view (``weight.T``: swapped strides) or a broadcast batch (stride 0) costs no copy.
Operand ``A`` has the dims ``(*batch_shape, M, K)``, ``B`` ``(*batch_shape, K, N)``; the result is a
C-contiguous ``(batches, M, N)`` array, ``batches = prod(batch_shape)``.

Each block computes a ``TILE x TILE`` tile of one product. It walks along ``K`` in steps of
``TILE_K``: its threads copy a ``TILE x TILE_K`` slice of ``A`` and a ``TILE_K x TILE`` slice of ``B``
into shared memory (converting them to the accumulator dtype), synchronize, and each of the
``SIDE x SIDE`` threads adds the products for its ``PER_THREAD x PER_THREAD`` outputs, kept in
registers. A thread owns rows ``ty, ty + SIDE, ...`` and columns ``tx, tx + SIDE, ...`` of the tile,
so neighbouring threads read neighbouring shared-memory words and write neighbouring outputs. The
copy walks each slice along the operand's unit-stride dim, so a transposed operand is read with
coalesced loads too.

Accumulation is in float32 for float16/float32 results, float64 for float64 and int64 for integer
and boolean results (numpy's results, wrapped to the result dtype). Every output is summed by one
thread in increasing ``k``: the same inputs give bit-identical results.
"""
from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, from_dtype

from ._shared import check_contiguous, check_like, grid_size, check_array, output
from ...backends.cuda.runtime.launch import jit, launch
from .strided import strided_offset

SIDE = 16                   # a block is SIDE x SIDE threads
PER_THREAD = 4              # each thread computes PER_THREAD x PER_THREAD outputs
TILE = SIDE * PER_THREAD    # a block computes a TILE x TILE tile of the output
TILE_K = 16                 # the step along K: shared memory holds A[TILE, TILE_K] and B[TILE_K, TILE]
BLOCK = SIDE * SIDE
LOADS = TILE * TILE_K // BLOCK  # elements of each operand a thread copies to shared memory per step
# Both slices are stored k-major with one spare column: when consecutive threads copy consecutive
# k, their writes then land in different shared-memory banks instead of in two of them.
SLICE_COLS = TILE + 1


@cache  # asked at every matmul, twice
def accumulator_dtype(result: np.dtype) -> np.dtype:
    """The dtype the products of a ``result``-dtype matmul are summed in (see the module docstring)."""
    result = np.dtype(result)
    if result in (np.float16, np.float32):
        return np.dtype(np.float32)
    if result == np.float64:
        return result
    if result.kind in "biu":
        return np.dtype(np.int64)
    raise TypeError(f"matmul: dtype {result} is not supported on the GPU; expected a float, integer or bool dtype")


@cuda.jit(device=True)
def _copy_slice(tile, source, base, first, count, stride, k0, inner, k_stride):
    """``tile[k, o] = X[first + o, k0 + k]`` for ``o < TILE``, ``k < TILE_K``, zero outside the
    ``count x inner`` matrix ``X`` at ``source[base + o * stride + k * k_stride]``.

    ``X`` is ``A`` (``o`` a row) or ``B`` transposed (``o`` a column). Consecutive threads take
    consecutive ``k`` when that is the unit-stride dim, else consecutive ``o``, so a warp reads
    neighbouring memory either way. Every thread of the block calls it.
    """
    k_fastest = k_stride == 1
    for step in range(LOADS):
        element = cuda.threadIdx.x + step * BLOCK
        if k_fastest:
            k, o = element % TILE_K, element // TILE_K
        else:
            k, o = element // TILE, element % TILE
        if first + o < count and k0 + k < inner:
            tile[k, o] = source[base + (first + o) * stride + (k0 + k) * k_stride]
        else:
            tile[k, o] = 0  # an integer constant: converted at compile time, no float64 math


@cache
def gemm_kernel(accumulator: np.dtype) -> Any:
    """The GEMM kernel summing in ``accumulator`` (float32, float64 or int64), compiled lazily per
    operand dtype, layout and number of batch dims.

    ``kernel(a, a_strides, b, b_strides, batch_shape, inner, bias, out)``: ``a`` and ``b`` are flat
    storages, ``a_strides`` the element strides of the dims ``(*batch_shape, M, K)`` of ``A`` (its
    first ``len(batch_shape)`` strides are the batch strides, read by ``strided_offset``),
    ``b_strides`` those of ``(*batch_shape, K, N)``, ``inner`` is ``K``, ``bias`` an ``(N,)`` array
    added to every row as the outputs are written (or None, compiled away) and ``out`` is
    ``(batches, M, N)``.
    """
    acc = from_dtype(np.dtype(accumulator))

    @jit
    def kernel(a, a_strides, b, b_strides, batch_shape, inner, bias, out):
        batches, rows, cols = out.shape
        row_tiles = (rows + TILE - 1) // TILE
        col_tiles = (cols + TILE - 1) // TILE
        a_tile = cuda.shared.array((TILE_K, SLICE_COLS), acc)  # a_tile[k, i] = A[row0 + i, k0 + k]
        b_tile = cuda.shared.array((TILE_K, SLICE_COLS), acc)  # b_tile[k, j] = B[k0 + k, col0 + j]
        sums = cuda.local.array((PER_THREAD, PER_THREAD), acc)
        a_values = cuda.local.array(PER_THREAD, acc)
        b_values = cuda.local.array(PER_THREAD, acc)
        tx = cuda.threadIdx.x % SIDE
        ty = cuda.threadIdx.x // SIDE
        # Grid-stride loop over (batch, row tile, column tile), column tiles fastest: consecutive
        # blocks share a slice of A.
        for tile in range(cuda.blockIdx.x, batches * row_tiles * col_tiles, cuda.gridDim.x):
            batch = tile // (row_tiles * col_tiles)
            row0 = tile // col_tiles % row_tiles * TILE
            col0 = tile % col_tiles * TILE
            a_base = strided_offset(batch, 0, a_strides, batch_shape)
            b_base = strided_offset(batch, 0, b_strides, batch_shape)
            for i in range(PER_THREAD):
                for j in range(PER_THREAD):
                    sums[i, j] = acc(0)
            for k0 in range(0, inner, TILE_K):
                _copy_slice(a_tile, a, a_base, row0, rows, a_strides[-2], k0, inner, a_strides[-1])
                _copy_slice(b_tile, b, b_base, col0, cols, b_strides[-1], k0, inner, b_strides[-2])
                cuda.syncthreads()
                for k in range(TILE_K):
                    for i in range(PER_THREAD):
                        a_values[i] = a_tile[k, ty + i * SIDE]
                        b_values[i] = b_tile[k, tx + i * SIDE]
                    for i in range(PER_THREAD):
                        for j in range(PER_THREAD):
                            sums[i, j] += a_values[i] * b_values[j]
                cuda.syncthreads()  # everyone is done with the slices before the next copy
            for i in range(PER_THREAD):
                row = row0 + ty + i * SIDE
                for j in range(PER_THREAD):
                    col = col0 + tx + j * SIDE
                    if row < rows and col < cols:
                        if bias is not None:
                            sums[i, j] += acc(bias[col])
                        out[batch, row, col] = sums[i, j]

    return kernel


def _last_position(shape: tuple, strides: tuple) -> int:
    """The largest storage position a view of ``shape`` and non-negative ``strides`` reads."""
    return sum((n - 1) * s for n, s in zip(shape, strides))


def _check_operand(name: str, storage: Any, shape: tuple, strides: tuple) -> None:
    if storage.ndim != 1:
        raise ValueError(f"{name} must be a flat (1-D) storage, got shape {tuple(storage.shape)}")
    if len(strides) != len(shape):
        raise ValueError(f"{name}_strides must have {len(shape)} entries (batch dims + 2), got {strides}")
    if any(s < 0 for s in strides):
        raise ValueError(f"{name}_strides must be non-negative, got {strides}")
    if math.prod(shape) and _last_position(shape, strides) >= storage.size:
        raise ValueError(f"{name}: a view of shape {shape} and strides {strides} reads past the end of "
                         f"its storage of {storage.size} elements")


def matmul_strided(a: Any, a_strides: tuple, b: Any, b_strides: tuple, batch_shape: tuple, inner: int,
                   out: Any, bias: Any = None) -> None:
    """``out[p] = A[p] @ B[p] (+ bias)`` for strided operands on flat device storages (nothing is copied).

    ``A`` is ``a`` seen with the dims ``(*batch_shape, M, K)`` and element strides ``a_strides``,
    ``B`` is ``b`` with the dims ``(*batch_shape, K, N)`` and ``b_strides`` (stride 0 broadcasts),
    ``inner`` is ``K``, and ``out`` a C-contiguous ``(prod(batch_shape), M, N)`` device array whose
    dtype receives the sums (see :func:`accumulator_dtype`). ``batch_shape`` has at least one dim.
    ``bias``, a C-contiguous ``(N,)`` array of ``out``'s dtype, is added to every row of every product
    in the accumulator dtype before the result is rounded (``F.linear``'s bias, without a second launch).
    """
    batch_shape = tuple(int(n) for n in batch_shape)
    if not batch_shape:
        raise ValueError("batch_shape must have at least one dim; use (1,) for a single product")
    if out.ndim != 3 or not out.is_contiguous():
        raise ValueError(f"out must be a C-contiguous 3-D (batches, M, N) array, got shape {tuple(out.shape)}")
    batches, rows, cols = out.shape
    if batches != math.prod(batch_shape):
        raise ValueError(f"out has {batches} products but batch_shape {batch_shape} has {math.prod(batch_shape)}")
    a_strides = tuple(int(s) for s in a_strides)
    b_strides = tuple(int(s) for s in b_strides)
    _check_operand("a", a, (*batch_shape, rows, inner), a_strides)
    _check_operand("b", b, (*batch_shape, inner, cols), b_strides)
    if bias is not None:
        bias = check_like("bias", bias, (cols,), out.dtype, of="out")
    gemm(a, a_strides, b, b_strides, batch_shape, int(inner), out, bias)


def gemm(a: Any, a_strides: tuple, b: Any, b_strides: tuple, batch_shape: tuple, inner: int, out: Any,
         bias: Any = None) -> None:
    """:func:`matmul_strided` without its checks: the launch alone, for arguments it has checked or that
    are valid by construction (the CUDA backend's matmul passes its own views' strides, tuples of ints).
    The checks take about half of ``matmul_strided``'s host time (measured: docs/benchmarks.md), and a
    training step runs dozens of products.
    """
    if not out.size:
        return
    batches, rows, cols = out.shape
    tiles = batches * -(-rows // TILE) * -(-cols // TILE)
    kernel = gemm_kernel(accumulator_dtype(out.dtype))
    launch(kernel, grid_size(tiles, 1), BLOCK, (a, a_strides, b, b_strides, batch_shape, inner, bias, out))


def _batched(name: str, array: Any) -> tuple:
    """A 2-D or 3-D C-contiguous device array as (flat storage, batch size, strides of (batch, rows,
    cols)), the batch stride 0 when there is one matrix (it is then broadcast)."""
    if array.ndim not in (2, 3):
        raise ValueError(f"{name} must be 2-D (rows, cols) or 3-D (batch, rows, cols), got shape {tuple(array.shape)}")
    check_contiguous(name, array)
    shape = (1,) * (3 - array.ndim) + tuple(array.shape)
    strides = (0 if shape[0] == 1 else shape[1] * shape[2], shape[2], 1)
    return array.subarray(0, array.size), shape[0], strides


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``a @ b`` for 2-D or 3-D device arrays: ``a`` ``(Ba, M, K)`` or ``(M, K)``, ``b`` ``(Bb, K, N)``
    or ``(K, N)``, with ``Ba`` and ``Bb`` equal or one of them 1 (broadcast).

    The result is ``(max(Ba, Bb), M, N)``, or ``(M, N)`` when both operands are 2-D, of numpy's
    result dtype; ``out`` may receive it (C-contiguous, that shape and dtype). Host numpy arrays are
    copied to the device. For transposed or broadcast views without copies, see :func:`matmul_strided`.
    """
    a, b = check_array("a", a), check_array("b", b)
    a_flat, a_batch, a_strides = _batched("a", a)
    b_flat, b_batch, b_strides = _batched("b", b)
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)  # (the simulator's shapes lack negative indexing)
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(f"matmul: a {a_shape} has {a_shape[-1]} columns but b {b_shape} "
                         f"has {b_shape[-2]} rows; they must be equal")
    if a_batch != b_batch and 1 not in (a_batch, b_batch):
        raise ValueError(f"matmul: batch sizes {a_batch} (a {a_shape}) and {b_batch} (b {b_shape}) "
                         f"must be equal or one of them 1")
    batches = max(a_batch, b_batch)
    rows, inner, cols = a_shape[-2], a_shape[-1], b_shape[-1]
    shape = (batches, rows, cols) if max(a.ndim, b.ndim) == 3 else (rows, cols)
    dtype = np.result_type(a.dtype, b.dtype)
    accumulator_dtype(dtype)  # reject unsupported dtypes before allocating
    out = output(out, shape, dtype)
    matmul_strided(a_flat, a_strides, b_flat, b_strides, (batches,), inner, out.subarray(0, (batches, rows, cols)))
    return out
