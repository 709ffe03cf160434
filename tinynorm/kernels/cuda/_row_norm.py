"""LayerNorm and RMSNorm kernels on the GPU: each row of ``x`` (rows, cols) is normalized over its columns.

RMSNorm is LayerNorm without centring, so both share these kernels: RMSNorm passes ``mean=None`` (and
``bias=None``). Numba compiles a separate version for ``None`` arguments and removes the branches
``if mean is not None`` at compile time, so neither norm pays for the other.

Two kernel shapes, chosen by row width (see docs/cuda.md):

* narrow rows (``cols <= NARROW_MAX_COLS``): one warp per row, the row held in registers. Each lane
  keeps ``per_lane`` values (columns ``lane, lane + 32, ...``, so loads are coalesced); registers need
  a compile-time count, hence one kernel per ``per_lane`` in 1, 2, 4, ..., 32, built by a factory.
* wide rows: one block per row, the row cached in (dynamic) shared memory as float32. A thread only
  ever reads back the entries it wrote itself, so the cache needs no barrier; columns beyond what
  fits (``cached``) are read again from global memory.

Both loop over rows with a grid-stride loop (a persistent grid), keep mean and variance exact with
two passes over the cached row, and compute in float32 whatever the input dtype (float16 or float32).
The backward pass reads ``x`` and ``dy`` once: it writes ``dx`` and accumulates this warp's (narrow)
or block's (wide) share of ``dweight``/``dbias`` into its own row of ``part[K, P, cols]``, which
:func:`._reduce.sum_partials` then adds in a fixed order: the same inputs give bit-identical results.
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np
from ...backends.cuda.runtime.compiler import cuda, float32

from ._reduce import WARP_SIZE, block_sum, lane_index, sum_partials, warp_sum
from ._shared import PARAM_DTYPE, empty, grid_size
from ...backends.cuda.runtime.launch import jit, launch

NARROW_MAX_COLS = 1024
ROWS_PER_BLOCK = 4  # narrow kernels: warps per block, each on its own row
# Wide kernels: shared memory for the row cache (the 48 KiB a block may use without opting in,
# less room for the reductions' static arrays).
CACHE_BYTES = 40 * 1024
# Wide backward: at most this many blocks per SM, because each block has its own row of partials.
WIDE_BACKWARD_BLOCKS_PER_SM = 2
# Wide kernels run up to 1024 threads per block, which an SM's 65536 registers allow at 64 per thread:
# capped at compile time, so a kernel that grows spills (and fails its PTX test) instead of failing to
# launch (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
WIDE_MAX_REGISTERS = 64


@cuda.jit(device=True)
def _scaled(value, weight, index):
    """``value * weight[index]``, or ``value`` when there is no weight (decided at compile time)."""
    if weight is not None:
        return value * weight[index]
    return value


@cuda.jit(device=True)
def _affine(value, weight, bias, index):
    """``value * weight[index] + bias[index]``, each part skipped at compile time when None."""
    value = _scaled(value, weight, index)
    if bias is not None:
        value += bias[index]
    return value


@cuda.jit(device=True)
def _cached(cache, offset, cached, array, row, column):
    """``array[row, column]`` as float32, from ``cache[offset + column]`` when it holds that column."""
    if column < cached:
        return cache[offset + column]
    return float32(array[row, column])


@cache
def narrow_forward(per_lane: int):
    """Forward kernel for rows of at most ``32 * per_lane`` columns: one warp per row."""

    @jit
    def kernel(x, weight, bias, eps, y, mean, rstd):
        rows, cols = x.shape
        lane = lane_index()
        count = float32(cols)
        values = cuda.local.array(per_lane, float32)
        # Block-uniform loop: a warp past the last row still joins the reductions (with zeros).
        for first in range(cuda.blockIdx.x * ROWS_PER_BLOCK, rows, cuda.gridDim.x * ROWS_PER_BLOCK):
            row = first + cuda.threadIdx.x // WARP_SIZE
            active = row < rows
            total = float32(0)
            for k in range(per_lane):
                j = lane + k * WARP_SIZE
                values[k] = float32(x[row, j]) if active and j < cols else float32(0)
                total += values[k]
            mu = float32(0)
            if mean is not None:
                mu = warp_sum(total) / count
            squares = float32(0)
            for k in range(per_lane):
                if lane + k * WARP_SIZE < cols:
                    d = values[k] - mu
                    squares += d * d
            # A sum of squares of deviations: never negative, no clamp needed.
            s = float32(1) / math.sqrt(warp_sum(squares) / count + eps)
            if active:
                for k in range(per_lane):
                    j = lane + k * WARP_SIZE
                    if j < cols:
                        y[row, j] = _affine((values[k] - mu) * s, weight, bias, j)
                if lane == 0:
                    rstd[row] = s
                    if mean is not None:
                        mean[row] = mu

    return kernel


@cache
def narrow_backward(per_lane: int):
    """Backward kernel for rows of at most ``32 * per_lane`` columns: one warp per row.

    Each warp keeps its dweight/dbias sums in registers over all its rows and writes them once, to
    ``part[:, warp index in the grid, :]``.
    """

    @jit
    def kernel(dy, x, mean, rstd, weight, dx, part):
        rows, cols = x.shape
        lane = lane_index()
        warp = cuda.threadIdx.x // WARP_SIZE
        count = float32(cols)
        xhat = cuda.local.array(per_lane, float32)
        grad = cuda.local.array(per_lane, float32)  # dy * weight
        dweight = cuda.local.array(per_lane, float32)
        dbias = cuda.local.array(per_lane, float32)
        for k in range(per_lane):
            dweight[k] = float32(0)
            dbias[k] = float32(0)
        for first in range(cuda.blockIdx.x * ROWS_PER_BLOCK, rows, cuda.gridDim.x * ROWS_PER_BLOCK):
            row = first + warp
            active = row < rows
            mu = float32(0)
            s = float32(0)
            if active:
                s = rstd[row]
                if mean is not None:
                    mu = mean[row]
            sum_g = float32(0)
            sum_g_xhat = float32(0)
            for k in range(per_lane):
                j = lane + k * WARP_SIZE
                h = float32(0)
                g = float32(0)
                if active and j < cols:
                    d = float32(dy[row, j])
                    h = (float32(x[row, j]) - mu) * s
                    g = _scaled(d, weight, j)
                    dweight[k] += d * h
                    dbias[k] += d
                xhat[k] = h
                grad[k] = g
                sum_g += g
                sum_g_xhat += g * h
            mean_g = float32(0)
            if mean is not None:
                mean_g = warp_sum(sum_g) / count
            mean_g_xhat = warp_sum(sum_g_xhat) / count
            if active:
                for k in range(per_lane):
                    j = lane + k * WARP_SIZE
                    if j < cols:
                        dx[row, j] = s * (grad[k] - mean_g - xhat[k] * mean_g_xhat)
        p = cuda.blockIdx.x * ROWS_PER_BLOCK + warp
        for k in range(per_lane):
            j = lane + k * WARP_SIZE
            if j < cols:
                part[0, p, j] = dweight[k]
                if mean is not None:
                    part[1, p, j] = dbias[k]

    return kernel


@jit(max_registers=WIDE_MAX_REGISTERS)
def wide_forward(x, weight, bias, eps, y, mean, rstd, cached):
    """Forward for wide rows: one block per row, columns ``[0, cached)`` kept in shared memory."""
    rows, cols = x.shape
    cache = cuda.shared.array(0, float32)
    count = float32(cols)
    for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        total = float32(0)
        for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
            v = float32(x[row, j])
            if j < cached:
                cache[j] = v
            total += v
        mu = float32(0)
        if mean is not None:
            mu = block_sum(total) / count
        squares = float32(0)
        for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
            d = _cached(cache, 0, cached, x, row, j) - mu
            squares += d * d
        s = float32(1) / math.sqrt(block_sum(squares) / count + eps)
        for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
            y[row, j] = _affine((_cached(cache, 0, cached, x, row, j) - mu) * s, weight, bias, j)
        if cuda.threadIdx.x == 0:
            rstd[row] = s
            if mean is not None:
                mean[row] = mu


@jit(max_registers=WIDE_MAX_REGISTERS)
def wide_backward(dy, x, mean, rstd, weight, dx, part, cached):
    """Backward for wide rows: one block per row; ``xhat`` and ``dy * weight`` of columns
    ``[0, cached)`` are kept in shared memory (``cache[:cached]`` and ``cache[cached:2 * cached]``).

    Each block accumulates its dweight/dbias sums in ``part[:, block, :]``: these rows stay in L2, and
    each entry is only touched by the thread that owns that column.
    """
    rows, cols = x.shape
    cache = cuda.shared.array(0, float32)
    count = float32(cols)
    p = cuda.blockIdx.x
    for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
        part[0, p, j] = float32(0)
        if mean is not None:
            part[1, p, j] = float32(0)
    for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        s = rstd[row]
        mu = float32(0)
        if mean is not None:
            mu = mean[row]
        sum_g = float32(0)
        sum_g_xhat = float32(0)
        for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
            d = float32(dy[row, j])
            h = (float32(x[row, j]) - mu) * s
            g = _scaled(d, weight, j)
            part[0, p, j] += d * h
            if mean is not None:
                part[1, p, j] += d
            if j < cached:
                cache[j] = h
                cache[cached + j] = g
            sum_g += g
            sum_g_xhat += g * h
        mean_g = float32(0)
        if mean is not None:
            mean_g = block_sum(sum_g) / count
        mean_g_xhat = block_sum(sum_g_xhat) / count
        for j in range(cuda.threadIdx.x, cols, cuda.blockDim.x):
            if j < cached:
                h = cache[j]
                g = cache[cached + j]
            else:
                h = (float32(x[row, j]) - mu) * s
                g = _scaled(float32(dy[row, j]), weight, j)
            dx[row, j] = s * (g - mean_g - h * mean_g_xhat)


def _per_lane(cols: int) -> int:
    """Values per lane for a narrow row: the smallest power of two with ``32 * per_lane >= cols``."""
    per_lane = 1
    while per_lane * WARP_SIZE < cols:
        per_lane *= 2
    return per_lane


def _wide_threads(cols: int) -> int:
    """Threads per block for a wide row: about 8 columns per thread, 128 to 1024 threads."""
    return min(1024, max(128, -(-cols // 8 // WARP_SIZE) * WARP_SIZE))


def forward(x, weight, bias, eps: np.float32, y, mean, rstd) -> None:
    """Launch the forward kernel that fits ``x``'s row width (``mean=None`` for RMSNorm)."""
    rows, cols = x.shape
    if x.size == 0:
        return
    if cols <= NARROW_MAX_COLS:
        grid = grid_size(rows, ROWS_PER_BLOCK)
        launch(narrow_forward(_per_lane(cols)), grid, ROWS_PER_BLOCK * WARP_SIZE, (x, weight, bias, eps, y, mean, rstd))
    else:
        cached = min(cols, CACHE_BYTES // 4)
        launch(wide_forward, grid_size(rows, 1), _wide_threads(cols), (x, weight, bias, eps, y, mean, rstd, cached),
               shared_bytes=cached * 4)


def backward(dy, x, mean, rstd, weight, dx):
    """Launch the backward kernel for ``x``'s row width, then sum the partials.

    Returns ``(K, cols)`` float32 sums: ``dweight`` (and ``dbias`` when ``mean`` is given, K = 2).
    """
    rows, cols = x.shape
    sums = 1 if mean is None else 2
    if x.size == 0:
        return sum_partials(empty((sums, 0, cols), PARAM_DTYPE))
    if cols <= NARROW_MAX_COLS:
        grid = grid_size(rows, ROWS_PER_BLOCK)
        part = empty((sums, grid * ROWS_PER_BLOCK, cols), PARAM_DTYPE)
        launch(narrow_backward(_per_lane(cols)), grid, ROWS_PER_BLOCK * WARP_SIZE,
               (dy, x, mean, rstd, weight, dx, part))
    else:
        grid = grid_size(rows, 1, per_sm=WIDE_BACKWARD_BLOCKS_PER_SM)
        cached = min(cols, CACHE_BYTES // 8)
        part = empty((sums, grid, cols), PARAM_DTYPE)
        launch(wide_backward, grid, _wide_threads(cols), (dy, x, mean, rstd, weight, dx, part, cached),
               shared_bytes=cached * 8)
    return sum_partials(part)
